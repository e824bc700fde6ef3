/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * output_grid: every output byte of a fixed grid of calls, for bit-for-bit comparison of two
 * revisions of the library (scripts/compare_outputs.sh).
 *
 *   output_grid [-t THREADS] [-c CASE_SUBSTRING] OUT
 *
 * Runs every case of the grid below on one context per block-size pair, with deterministic
 * inputs (splitmix64 seeded by the case's name), and writes to OUT, case after case in a fixed
 * order, each call's status (int32) and the bytes of every output buffer (out, lse, dq, dk, dv,
 * dsinks, merged out and lse) in full: outputs are prefilled with a fixed pattern, so the rows a
 * call must leave alone are compared too. OUT.index gets one line per case: its name, byte
 * offset and length, the kernel table (fa_stats.isa), block sizes and backward plan of its calls.
 * stdout gets one summary line. The kernel table is the library's choice, or FLASHATTN_ISA's.
 *
 * Public API only, and nothing of a struct's layout beyond its field names: the same source must
 * build against every revision the comparison meets (see the bridge below).
 *
 * Exit status: 0 done; 1 a call failed (the grid is meant to hold valid calls only, so a failure
 * is a coverage hole or a behaviour change: both need a look); 2 usage or I/O; 3 the kernel table
 * asked for is not on this CPU or in this build.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashattn.h"

/* ---- Bridge to pre-0.4 headers ---------------------------------------------------------------
 * From 0.4 every growable struct starts with `size_t struct_size` and is initialised with its
 * FA_*_INIT macro. Before, fa_params and fa_context_opts came from their _default() functions and
 * fa_seqs and fa_stats were plain zeroed structs. Each macro is tested on its own, so a header in
 * between still builds. Remove this block once no revision older than 0.4 needs comparing. */
/* clang-format off */
#ifdef FA_PARAMS_INIT
#define GRID_PARAMS_INIT FA_PARAMS_INIT
#else
#define GRID_PARAMS_INIT fa_params_default()
#endif
#ifdef FA_CONTEXT_OPTS_INIT
#define GRID_CONTEXT_OPTS_INIT FA_CONTEXT_OPTS_INIT
#else
#define GRID_CONTEXT_OPTS_INIT fa_context_opts_default()
#endif
#ifdef FA_SEQS_INIT
#define GRID_SEQS_INIT FA_SEQS_INIT
#else
#define GRID_SEQS_INIT {0}
#endif
#ifdef FA_STATS_INIT
#define GRID_STATS_INIT FA_STATS_INIT
#else
#define GRID_STATS_INIT {0}
#endif
/* clang-format on */
/* ---- end of the bridge ---------------------------------------------------------------------- */

/* ===== Deterministic inputs ===== */

typedef struct {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1), 53 random bits. */
static double rng_unit(rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1p-52 - 1.0;
}

static int64_t rng_below(rng *r, int64_t n)
{
    return (int64_t)(rng_next(r) % (uint64_t)n);
}

/* Seeded by the case's name (FNV-1a), so a case's inputs do not move when cases are added. */
static rng rng_for(const char *name)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (const char *c = name; *c; c++) h = (h ^ (uint8_t)*c) * 0x100000001b3u;
    rng r = {h};
    return r;
}

/* Round to nearest even; NaN stays NaN (quiet); beyond the largest finite value, inf. */
static uint16_t bf16_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static uint16_t f16_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);  /* NaN */
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 (and inf): inf */
    if (ax < 0x38800000u) /* below 2^-14: a subnormal step is 2^-24, rounded by lrintf (nearest even) */
        return (uint16_t)(sign | (uint16_t)lrintf(fabsf(f) * 0x1p24f));
    ax += 0xfffu + ((ax >> 13) & 1u);
    return (uint16_t)(sign | ((ax - (112u << 23)) >> 13));
}

static size_t dtype_size(fa_dtype t)
{
    return t == FA_F64 ? 8 : t == FA_F32 ? 4 : 2;
}

static void store(void *base, fa_dtype t, size_t i, double v)
{
    switch (t) {
    case FA_F32: ((float *)base)[i] = (float)v; break;
    case FA_F64: ((double *)base)[i] = v; break;
    case FA_BF16: ((uint16_t *)base)[i] = bf16_from_float((float)v); break;
    default: ((uint16_t *)base)[i] = f16_from_float((float)v); break;
    }
}

/* ===== Buffers ===== */

/* A contiguous tensor the grid owns, and its size in bytes. */
typedef struct {
    fa_tensor t;
    size_t bytes;
} buf;

/* [b][h][s][d] (bshd = 0) or [b][s][h][d] (bshd = 1); zeroed. */
static buf buf_new(fa_dtype dt, int64_t b, int64_t h, int64_t s, int64_t d, int bshd)
{
    buf x;
    x.bytes = (size_t)(b * h * s * d) * dtype_size(dt);
    void *data = calloc(x.bytes ? x.bytes : 1, 1);
    if (!data) {
        fprintf(stderr, "output_grid: out of memory (%zu bytes)\n", x.bytes);
        exit(2);
    }
    x.t = bshd ? fa_tensor_bshd(data, dt, b, s, h, d) : fa_tensor_bhsd(data, dt, b, h, s, d);
    return x;
}

static void buf_random(buf *x, rng *r, double amp)
{
    size_t n = x->bytes / dtype_size(x->t.dtype);
    for (size_t i = 0; i < n; i++) store(x->t.data, x->t.dtype, i, amp * rng_unit(r));
}

/* Outputs start as this pattern: bytes a call must not write then compare as well. */
static void buf_pattern(buf *x)
{
    memset(x->t.data, 0xcd, x->bytes);
}

static void buf_free(buf *x)
{
    free(x->t.data);
    x->t.data = NULL;
}

/* ===== The output stream and its index ===== */

#define MAX_CONTEXTS 16

typedef struct {
    FILE *out, *index;
    long long offset, case_start;
    int threads, cases, failures;
    const char *only; /* -c: run only the cases whose name contains it */
    char note[512];   /* the index line's call records of the running case */
    struct {
        int block_q, block_k;
        fa_context *ctx;
    } contexts[MAX_CONTEXTS];
    int n_contexts;
    unsigned plans_seen; /* bit i: plan name i of plan_names below */
} grid;

static const char *const plan_names[] = {"fused", "wavefront", "split"};

static void emit(grid *g, const void *p, size_t bytes)
{
    if (bytes && fwrite(p, 1, bytes, g->out) != bytes) {
        fprintf(stderr, "output_grid: write failed\n");
        exit(2);
    }
    g->offset += (long long)bytes;
}

static void emit_buf(grid *g, const buf *x)
{
    emit(g, x->t.data, x->bytes);
}

static void case_begin(grid *g)
{
    g->case_start = g->offset;
    g->note[0] = '\0';
}

static void case_end(grid *g, const char *name)
{
    fprintf(g->index, "%-28s %12lld %10lld %s\n", name, g->case_start, g->offset - g->case_start, g->note);
    g->cases++;
}

static void note_plan(grid *g, const char *plan)
{
    for (unsigned i = 0; i < 3; i++)
        if (plan && strcmp(plan, plan_names[i]) == 0) g->plans_seen |= 1u << i;
}

/* Records a call: its status goes into the stream (so a refusal in one revision is a difference),
 * its table, blocks and plan into the index line. */
static void record(grid *g, fa_context *ctx, const char *call, const char *name, fa_status st)
{
    int32_t s32 = (int32_t)st;
    emit(g, &s32, sizeof s32);
    fa_stats s = GRID_STATS_INIT;
    size_t used = strlen(g->note), room = sizeof g->note - used;
    if (st != FA_OK) {
        fprintf(stderr, "output_grid: %s %s: %s (%s)\n", name, call, fa_status_str(st), fa_last_error());
        g->failures++;
        snprintf(g->note + used, room, " %s=%d", call, (int)st);
        return;
    }
    fa_context_stats(ctx, &s);
    if (strcmp(call, "merge") == 0) {
        snprintf(g->note + used, room, " merge=%s", s.isa);
    } else if (strcmp(call, "bwd") == 0) {
        note_plan(g, s.backward_plan);
        snprintf(g->note + used, room, " bwd=%s:%dx%d:%s", s.isa, s.block_q, s.block_k,
                 s.backward_plan ? s.backward_plan : "-");
    } else {
        snprintf(g->note + used, room, " %s=%s:%dx%d", call, s.isa, s.block_q, s.block_k);
    }
}

/* One context per block-size pair, made on first use and kept: the grid's calls then also run on
 * a context whose arenas and row buffer earlier cases grew, as an application's would. */
static fa_context *grid_context(grid *g, int block_q, int block_k)
{
    for (int i = 0; i < g->n_contexts; i++)
        if (g->contexts[i].block_q == block_q && g->contexts[i].block_k == block_k) return g->contexts[i].ctx;
    fa_context_opts o = GRID_CONTEXT_OPTS_INIT;
    o.num_threads = g->threads;
    o.block_q = block_q;
    o.block_k = block_k;
    fa_context *ctx = NULL;
    fa_status st = fa_context_create(&ctx, &o);
    if (st != FA_OK) {
        const char *table = getenv("FLASHATTN_ISA");
        if (st == FA_ERR_UNSUPPORTED) {
            printf("table %s: not on this CPU (%s)\n", table ? table : "auto", fa_last_error());
            exit(3);
        }
        fprintf(stderr, "output_grid: fa_context_create: %s (%s)\n", fa_status_str(st), fa_last_error());
        exit(2);
    }
    if (g->n_contexts == MAX_CONTEXTS) {
        fprintf(stderr, "output_grid: more than %d block-size pairs\n", MAX_CONTEXTS);
        exit(2);
    }
    g->contexts[g->n_contexts].block_q = block_q;
    g->contexts[g->n_contexts].block_k = block_k;
    g->contexts[g->n_contexts++].ctx = ctx;
    return ctx;
}

/* ===== Score modifiers shared by the dense and the sequence cases ===== */

enum { BIAS_NONE, BIAS_ROWS, BIAS_HEAD_ROW, BIAS_FULL };              /* bias shapes, below */
enum { STRESS_NONFINITE = 1, STRESS_PEAKY = 2, STRESS_BIG_GRAD = 4 }; /* input stresses */
/* Dense layouts: [B][H][S][D]; [B][S][H][D] (q, k, v, out and gradients); k and v of batch 0 read by
 * every batch through stride_batch = 0 (the gradients stay per batch). */
enum { LAYOUT_BHSD, LAYOUT_BSHD, LAYOUT_KV_BCAST };

typedef struct {
    fa_causal causal;
    int window; /* 1: window_left, window_right below (each -1 = unbounded) */
    int64_t wl, wr;
    double softcap, scale; /* 0 = off, 0 = 1/sqrt(D) */
    int alibi, sinks;      /* sinks: dsinks too in the backward */
    int bias;              /* BIAS_*: [1][1][Nq][Nk], [1][Hq][1][Nk], [B][Hq][Nq][Nk] */
    int64_t shift;         /* diagonal_shift */
} mods;

/* The arrays a modifier set points at. */
typedef struct {
    float *alibi, *sinks, *dsinks;
    buf bias;
} mod_arrays;

static float *floats_new(int64_t n)
{
    float *f = calloc((size_t)(n > 0 ? n : 1), sizeof *f);
    if (!f) exit(2);
    return f;
}

/* A bias of random values with -inf holes, and row 1 of each (b, h) all -inf: a row the bias alone
 * masks. */
static buf bias_new(int kind, fa_dtype acc, int64_t b, int64_t hq, int64_t nq, int64_t nk, rng *r)
{
    int64_t bb = kind == BIAS_FULL ? b : 1, bh = kind == BIAS_ROWS ? 1 : hq;
    int64_t bs = kind == BIAS_HEAD_ROW ? 1 : nq;
    buf x = buf_new(acc, bb, bh, bs, nk, 0);
    buf_random(&x, r, 2.0);
    size_t n = x.bytes / dtype_size(acc);
    for (size_t i = 0; i < n; i += 7) store(x.t.data, acc, i, -INFINITY);
    if (bs > 1)
        for (int64_t plane = 0; plane < bb * bh; plane++)
            for (int64_t j = 0; j < nk; j++)
                store(x.t.data, acc, (size_t)((plane * bs + 1) * nk + j), -INFINITY);
    return x;
}

static mod_arrays mods_new(const mods *m, fa_dtype acc, int64_t b, int64_t hq, int64_t nq, int64_t nk, rng *r)
{
    mod_arrays a;
    memset(&a, 0, sizeof a);
    if (m->alibi) {
        a.alibi = floats_new(hq);
        for (int64_t h = 0; h < hq; h++) a.alibi[h] = ldexpf(1.0f, -(int)(8 * (h + 1) / hq));
    }
    if (m->sinks) {
        a.sinks = floats_new(hq), a.dsinks = floats_new(hq);
        for (int64_t h = 0; h < hq; h++) a.sinks[h] = (float)(1.0 + 2.0 * rng_unit(r));
        memset(a.dsinks, 0xcd, (size_t)hq * sizeof(float));
    }
    if (m->bias != BIAS_NONE) a.bias = bias_new(m->bias, acc, b, hq, nq, nk, r);
    return a;
}

static void mods_free(mod_arrays *a)
{
    free(a->alibi);
    free(a->sinks);
    free(a->dsinks);
    buf_free(&a->bias);
}

static void mods_apply(fa_params *p, const mods *m, const mod_arrays *a)
{
    p->causal = m->causal;
    if (m->window) p->window_left = m->wl, p->window_right = m->wr;
    p->softcap = m->softcap;
    p->scale = m->scale;
    p->diagonal_shift = m->shift;
    p->alibi_slopes = a->alibi;
    p->sinks = a->sinks;
    if (a->bias.t.data) p->bias = &a->bias.t;
}

/* ===== Dense cases ===== */

typedef struct {
    const char *name;
    fa_dtype q, kv;
    int64_t b, hq, hkv, nq, nk, d, dv;
    int block_q, block_k; /* the context's; 0/0 automatic */
    mods m;
    int stress; /* STRESS_* */
    int layout; /* LAYOUT_* */
    int backward;
} dense_case;

typedef struct {
    buf q, k, v, out, lse, dout, dq, dk, dv;
} dense_bufs;

static fa_dtype acc_of(fa_dtype q)
{
    return q == FA_F64 ? FA_F64 : FA_F32;
}

/* NaN in a key, +inf in a value, -inf in a query, +inf in dout: each reaches the rows that see it
 * (and a non-finite operand takes the masked products' careful path on partial tiles). */
static void inject_nonfinite(dense_bufs *x)
{
    if (x->k.bytes) store(x->k.t.data, x->k.t.dtype, 5 % (x->k.bytes / dtype_size(x->k.t.dtype)), NAN);
    if (x->v.bytes) store(x->v.t.data, x->v.t.dtype, 17 % (x->v.bytes / dtype_size(x->v.t.dtype)), INFINITY);
    if (x->q.bytes)
        store(x->q.t.data, x->q.t.dtype, 3 * (size_t)x->q.t.dim % (x->q.bytes / dtype_size(x->q.t.dtype)),
              -INFINITY);
    if (x->dout.bytes)
        store(x->dout.t.data, x->dout.t.dtype, 29 % (x->dout.bytes / dtype_size(x->dout.t.dtype)), INFINITY);
}

static dense_bufs dense_new(const dense_case *c, rng *r)
{
    dense_bufs x;
    /* peaky: scores spread far beyond exp's range, so many probabilities flush to zero */
    double amp = (c->stress & STRESS_PEAKY) ? (c->q == FA_F64 ? 30.0 : 8.0) : 1.0;
    int bshd = c->layout == LAYOUT_BSHD;
    x.q = buf_new(c->q, c->b, c->hq, c->nq, c->d, bshd);
    x.k = buf_new(c->kv, c->b, c->hkv, c->nk, c->d, bshd);
    x.v = buf_new(c->kv, c->b, c->hkv, c->nk, c->dv, bshd);
    buf_random(&x.q, r, amp);
    buf_random(&x.k, r, amp);
    buf_random(&x.v, r, 1.0);
    if (c->layout == LAYOUT_KV_BCAST) x.k.t.stride_batch = x.v.t.stride_batch = 0;
    x.out = buf_new(c->q, c->b, c->hq, c->nq, c->dv, bshd);
    x.lse = buf_new(acc_of(c->q), c->b, c->hq, c->nq, 1, 0);
    buf_pattern(&x.out);
    buf_pattern(&x.lse);
    x.dout = buf_new(c->q, c->b, c->hq, c->nq, c->dv, bshd);
    buf_random(&x.dout, r, (c->stress & STRESS_BIG_GRAD) ? 3e4 : 1.0); /* big: f16 gradients overflow */
    if (c->stress & STRESS_NONFINITE) inject_nonfinite(&x);
    x.dq = buf_new(c->q, c->b, c->hq, c->nq, c->d, bshd);
    x.dk = buf_new(c->kv, c->b, c->hkv, c->nk, c->d, bshd);
    x.dv = buf_new(c->kv, c->b, c->hkv, c->nk, c->dv, bshd);
    buf_pattern(&x.dq);
    buf_pattern(&x.dk);
    buf_pattern(&x.dv);
    return x;
}

static void dense_free(dense_bufs *x)
{
    buf *all[] = {&x->q, &x->k, &x->v, &x->out, &x->lse, &x->dout, &x->dq, &x->dk, &x->dv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) buf_free(all[i]);
}

static void emit_backward(grid *g, const dense_bufs *x, const mod_arrays *a, int64_t hq)
{
    emit_buf(g, &x->dq);
    emit_buf(g, &x->dk);
    emit_buf(g, &x->dv);
    if (a->dsinks) emit(g, a->dsinks, (size_t)hq * sizeof(float));
}

/* A case's calls and their bytes: the forward, then, where asked, the backward from the out and lse
 * the forward wrote (with the sinks' gradient), each recorded under the case's name. */
static void run_calls(grid *g, const char *name, int backward, int block_q, int block_k, fa_params *p,
                      dense_bufs *x, const mod_arrays *a, int64_t hq)
{
    fa_context *ctx = grid_context(g, block_q, block_k);
    case_begin(g);
    fa_status st = fa_forward(ctx, p, &x->q.t, &x->k.t, &x->v.t, &x->out.t, x->lse.t.data);
    record(g, ctx, "fwd", name, st);
    emit_buf(g, &x->out);
    emit_buf(g, &x->lse);
    if (backward) {
        p->dsinks = a->dsinks;
        st = fa_backward(ctx, p, &x->q.t, &x->k.t, &x->v.t, &x->out.t, &x->dout.t, x->lse.t.data, &x->dq.t,
                         &x->dk.t, &x->dv.t);
        record(g, ctx, "bwd", name, st);
        emit_backward(g, x, a, hq);
    }
    case_end(g, name);
}

static void run_dense(grid *g, const dense_case *c)
{
    rng r = rng_for(c->name);
    dense_bufs x = dense_new(c, &r);
    mod_arrays a = mods_new(&c->m, acc_of(c->q), c->b, c->hq, c->nq, c->nk, &r);
    fa_params p = GRID_PARAMS_INIT;
    mods_apply(&p, &c->m, &a);
    run_calls(g, c->name, c->backward, c->block_q, c->block_k, &p, &x, &a, c->hq);
    mods_free(&a);
    dense_free(&x);
}

/* Shorthands for the tables below. */
#define F32  FA_F32
#define F64  FA_F64
#define BF16 FA_BF16
#define F16  FA_F16
#define TL   FA_CAUSAL_TOP_LEFT
#define BR   FA_CAUSAL_BOTTOM_RIGHT

/* The dense grid. Backward plans follow B·Hkv and the thread count (flashattn.h, fa_backward): at
 * B·Hkv = 1, 1 thread runs "fused", 2 threads (on 2 cores) "wavefront", 3 threads "split"; half
 * precision queries always "split". Name: dtype, shape, what the case is for. */
/* clang-format off */
static const dense_case dense_cases[] = {
    /* f32: shapes, residues, every modifier alone and together, explicit and automatic blocks */
    {"f32_mha_plain", F32, F32, 2, 2, 2, 77, 90, 64, 64, 0, 0, {0}, 0, 0, 1},
    {"f32_tiny_d1", F32, F32, 1, 1, 1, 1, 1, 1, 1, 0, 0, {0}, 0, 0, 1},
    {"f32_tiny_3x3_d3", F32, F32, 1, 2, 1, 3, 3, 3, 5, 0, 0, {.causal = TL}, 0, 0, 1},
    {"f32_nk0", F32, F32, 1, 2, 2, 5, 0, 24, 24, 0, 0, {.sinks = 1}, 0, 0, 1},
    {"f32_nq0", F32, F32, 1, 2, 2, 0, 5, 24, 24, 0, 0, {.sinks = 1}, 0, 0, 1},
    {"f32_gqa_tl_d72_dv24", F32, F32, 1, 4, 2, 90, 130, 72, 24, 16, 48, {.causal = TL}, 0, 0, 1},
    {"f32_mqa_br_nq_gt_nk", F32, F32, 1, 4, 1, 130, 77, 24, 64, 100, 48, {.causal = BR}, 0, 0, 1},
    {"f32_br_nq_lt_nk_d128", F32, F32, 1, 2, 1, 77, 600, 128, 128, 128, 512, {.causal = BR}, 0, 0, 1},
    {"f32_window_both_600", F32, F32, 1, 2, 1, 600, 600, 64, 64, 64, 64,
     {.window = 1, .wl = 100, .wr = 20}, 0, 0, 1},
    {"f32_window_left_tl", F32, F32, 1, 2, 2, 300, 600, 64, 72, 0, 0,
     {.causal = TL, .window = 1, .wl = 37, .wr = -1},
     0, 0, 1},
    {"f32_window_right", F32, F32, 2, 2, 1, 77, 90, 24, 24, 16, 48,
     {.window = 1, .wl = -1, .wr = 5}, 0, 0, 1},
    {"f32_softcap_d128", F32, F32, 1, 2, 1, 90, 130, 128, 128, 256, 64, {.softcap = 30.0}, 0, 0, 1},
    {"f32_softcap_scale", F32, F32, 1, 2, 2, 77, 130, 64, 64, 0, 0, {.softcap = 5.0, .scale = 0.3}, 0, 0, 1},
    {"f32_alibi_br", F32, F32, 1, 4, 2, 77, 600, 64, 64, 128, 512, {.causal = BR, .alibi = 1}, 0, 0, 1},
    {"f32_bias_rows", F32, F32, 2, 2, 1, 77, 90, 64, 64, 0, 0, {.bias = BIAS_ROWS}, 0, 0, 1},
    {"f32_bias_head_row", F32, F32, 2, 4, 2, 90, 130, 24, 24, 64, 64, {.bias = BIAS_HEAD_ROW}, 0, 0, 1},
    {"f32_bias_full_causal", F32, F32, 2, 2, 2, 77, 90, 72, 64, 16, 48,
     {.causal = TL, .bias = BIAS_FULL}, 0, 0, 1},
    {"f32_sinks_tl", F32, F32, 1, 4, 1, 130, 130, 64, 64, 0, 0, {.causal = TL, .sinks = 1}, 0, 0, 1},
    {"f32_shift_window", F32, F32, 1, 2, 1, 90, 130, 64, 64, 100, 48,
     {.causal = TL, .window = 1, .wl = 64, .wr = 0, .shift = 50}, 0, 0, 1},
    {"f32_shift_negative_br", F32, F32, 1, 2, 2, 77, 90, 24, 24, 0, 0, {.causal = BR, .shift = -20}, 0, 0, 1},
    {"f32_all_mods_gqa", F32, F32, 2, 4, 2, 77, 130, 64, 24, 16, 48,
     {.causal = BR, .window = 1, .wl = 50, .wr = 3, .softcap = 20.0, .alibi = 1, .sinks = 1,
      .bias = BIAS_FULL, .shift = 7},
     0, 0, 1},
    {"f32_all_mods_auto", F32, F32, 1, 4, 1, 130, 600, 72, 72, 0, 0,
     {.causal = TL, .softcap = 15.0, .alibi = 1, .sinks = 1, .bias = BIAS_ROWS, .shift = 400}, 0, 0, 1},
    {"f32_peaky", F32, F32, 1, 2, 1, 130, 130, 64, 64, 0, 0, {0}, STRESS_PEAKY, 0, 1},
    {"f32_peaky_softcap", F32, F32, 1, 2, 2, 77, 90, 64, 64, 64, 64, {.softcap = 50.0}, STRESS_PEAKY, 0, 1},
    {"f32_nonfinite", F32, F32, 1, 2, 1, 77, 90, 64, 64, 16, 48, {.causal = BR}, STRESS_NONFINITE, 0, 1},
    {"f32_nonfinite_window", F32, F32, 1, 2, 1, 77, 90, 64, 64, 16, 48,
     {.causal = BR, .window = 1, .wl = 10, .wr = 2}, STRESS_NONFINITE, 0, 1},
    {"f32_br_masked_blocks", F32, F32, 1, 2, 1, 130, 20, 64, 64, 16, 16, {.causal = BR}, 0, 0, 1},
    {"f32_bshd_gqa", F32, F32, 2, 4, 2, 77, 90, 64, 72, 0, 0, {.causal = TL}, 0, LAYOUT_BSHD, 1},
    {"f32_kv_broadcast_batch", F32, F32, 2, 2, 1, 77, 90, 64, 64, 16, 48,
     {.causal = BR}, 0, LAYOUT_KV_BCAST, 1},
    {"f32_d256_dv33", F32, F32, 1, 2, 1, 33, 70, 256, 33, 0, 0, {0}, 0, 0, 1},
    {"f32_d512", F32, F32, 1, 1, 1, 33, 77, 512, 512, 0, 0, {.causal = TL}, 0, 0, 1},
    {"f32_dv1", F32, F32, 1, 2, 2, 20, 30, 64, 1, 16, 48, {.causal = BR}, 0, 0, 1},
    {"f32_long_auto_600", F32, F32, 1, 2, 1, 600, 600, 64, 64, 0, 0, {.causal = TL}, 0, 0, 1},
    {"f32_long_bq256_600", F32, F32, 1, 2, 1, 600, 600, 64, 64, 256, 64,
     {.causal = BR, .window = 1, .wl = 300, .wr = 40, .softcap = 30.0}, 0, 0, 1},
    /* f64 */
    {"f64_mha_plain", F64, F64, 1, 2, 2, 77, 90, 64, 64, 0, 0, {0}, 0, 0, 1},
    {"f64_gqa_mods_br", F64, F64, 1, 4, 1, 90, 130, 72, 24, 100, 48,
     {.causal = BR, .softcap = 20.0, .alibi = 1, .sinks = 1}, 0, 0, 1},
    {"f64_bias_window", F64, F64, 2, 2, 1, 77, 130, 24, 64, 16, 48,
     {.window = 1, .wl = 30, .wr = 10, .bias = BIAS_FULL, .shift = -3}, 0, 0, 1},
    {"f64_peaky", F64, F64, 1, 2, 1, 77, 90, 64, 64, 0, 0, {.causal = TL}, STRESS_PEAKY, 0, 1},
    {"f64_d_odd_dv1", F64, F64, 1, 2, 1, 20, 33, 33, 1, 0, 0, {.softcap = 10.0}, 0, 0, 1},
    {"f64_nonfinite", F64, F64, 1, 2, 2, 3, 90, 24, 24, 0, 0, {0}, STRESS_NONFINITE, 0, 1},
    {"f64_nonfinite_window", F64, F64, 1, 2, 1, 77, 90, 64, 64, 16, 48,
     {.causal = TL, .window = 1, .wl = 10, .wr = 2}, STRESS_NONFINITE, 0, 1},
    {"f64_br_masked_blocks", F64, F64, 1, 2, 1, 130, 20, 24, 24, 16, 16, {.causal = BR}, 0, 0, 1},
    {"f64_blocks_256_64", F64, F64, 1, 2, 1, 600, 130, 72, 72, 256, 64, {.causal = BR, .alibi = 1}, 0, 0, 1},
    {"f64_blocks_128_512", F64, F64, 1, 2, 1, 130, 600, 128, 64, 128, 512,
     {.causal = TL, .bias = BIAS_ROWS}, 0, 0, 1},
    /* bf16, all tensors: Nq > 4 with even D takes the dot-product units on the avx512_bf16/amx tables */
    {"bf16_pairs_tl", BF16, BF16, 1, 2, 1, 90, 130, 64, 64, 0, 0, {.causal = TL}, 0, 0, 1},
    {"bf16_pairs_mods", BF16, BF16, 2, 4, 2, 77, 90, 72, 24, 100, 48,
     {.causal = BR, .softcap = 20.0, .alibi = 1, .sinks = 1, .bias = BIAS_FULL}, 0, 0, 1},
    {"bf16_pairs_d128_blocks", BF16, BF16, 1, 2, 2, 130, 600, 128, 128, 128, 512,
     {.window = 1, .wl = 200, .wr = 10},
     0, 0, 1},
    {"bf16_pairs_600_bq256", BF16, BF16, 1, 2, 1, 600, 600, 64, 64, 256, 64,
     {.causal = TL, .softcap = 30.0}, 0, 0, 1},
    {"bf16_pairs_d256", BF16, BF16, 1, 2, 1, 77, 90, 256, 128, 0, 0, {.causal = BR}, 0, 0, 1},
    {"bf16_pairs_dv_odd", BF16, BF16, 1, 2, 1, 77, 90, 64, 33, 16, 48, {.causal = TL}, 0, 0, 1},
    {"bf16_d_odd", BF16, BF16, 1, 4, 2, 77, 90, 33, 24, 0, 0, {.causal = TL, .sinks = 1}, 0, 0, 1},
    {"bf16_decode_nq1", BF16, BF16, 1, 2, 1, 1, 600, 64, 64, 0, 0, {0}, 0, 0, 1},
    {"bf16_decode_nq3_br", BF16, BF16, 2, 2, 2, 3, 90, 72, 72, 64, 64, {.causal = BR, .alibi = 1}, 0, 0, 1},
    {"bf16_decode_nq4_d_odd", BF16, BF16, 1, 4, 1, 4, 130, 33, 33, 0, 0, {.sinks = 1}, 0, 0, 1},
    {"bf16_peaky", BF16, BF16, 1, 2, 1, 90, 130, 64, 64, 0, 0, {0}, STRESS_PEAKY, 0, 1},
    {"bf16_nonfinite", BF16, BF16, 1, 2, 1, 77, 90, 64, 64, 0, 0, {.causal = TL}, STRESS_NONFINITE, 0, 1},
    {"bf16_bshd", BF16, BF16, 2, 2, 1, 77, 90, 64, 64, 0, 0, {0}, 0, LAYOUT_BSHD, 1},
    /* f16, all tensors */
    {"f16_plain", F16, F16, 1, 2, 2, 77, 90, 64, 64, 0, 0, {0}, 0, 0, 1},
    {"f16_gqa_mods_br", F16, F16, 1, 4, 1, 130, 77, 72, 24, 100, 48,
     {.causal = BR, .window = 1, .wl = 40, .wr = -1, .softcap = 10.0, .sinks = 1}, 0, 0, 1},
    {"f16_decode_nq2", F16, F16, 1, 2, 1, 2, 600, 64, 64, 0, 0, {.alibi = 1}, 0, 0, 1},
    {"f16_d_odd_bias", F16, F16, 1, 2, 1, 90, 130, 33, 33, 0, 0, {.bias = BIAS_ROWS}, 0, 0, 1},
    {"f16_big_gradients", F16, F16, 1, 2, 1, 77, 90, 24, 24, 0, 0, {0}, STRESS_BIG_GRAD | STRESS_PEAKY, 0, 1},
    /* f32 queries over a half-precision K/V cache */
    {"f32_bf16kv_plain", F32, BF16, 1, 2, 1, 77, 90, 64, 64, 0, 0, {.causal = TL}, 0, 0, 1},
    {"f32_bf16kv_gqa_mods", F32, BF16, 1, 4, 2, 90, 130, 72, 24, 16, 48,
     {.causal = BR, .alibi = 1, .sinks = 1}, 0, 0, 1},
    {"f32_bf16kv_decode_nq1", F32, BF16, 2, 2, 2, 1, 600, 64, 64, 0, 0, {0}, 0, 0, 1},
    {"f32_f16kv_plain", F32, F16, 1, 2, 2, 77, 90, 64, 64, 64, 64, {.softcap = 30.0}, 0, 0, 1},
    {"f32_f16kv_decode_nq3", F32, F16, 1, 4, 1, 3, 130, 33, 33, 0, 0, {.causal = BR}, 0, 0, 1},
    {"f32_f16kv_nonfinite", F32, F16, 1, 2, 1, 77, 90, 24, 24, 0, 0, {0}, STRESS_NONFINITE, 0, 1},
    /* decode steps that split the keys (split-KV): fewer than 128 query items, Nk >= 4·block_k */
    {"split_f32_b1_nq1_d128", F32, F32, 1, 1, 1, 1, 4100, 128, 128, 0, 0, {0}, 0, 0, 1},
    {"split_f32_gqa_h8_2", F32, F32, 1, 8, 2, 1, 4099, 64, 64, 0, 0, {0}, 0, 0, 1},
    {"split_f32_gqa_h8_2_blocks", F32, F32, 1, 8, 2, 1, 4099, 64, 64, 16, 48, {0}, 0, 0, 0},
    {"split_f32_gqa_sinks_alibi", F32, F32, 1, 8, 2, 1, 4097, 64, 64, 0, 0,
     {.sinks = 1, .alibi = 1}, 0, 0, 1},
    {"split_f32_window", F32, F32, 1, 2, 1, 1, 4100, 64, 64, 16, 48,
     {.window = 1, .wl = 1000, .wr = 0}, 0, 0, 0},
    {"split_f32_nq3_br_softcap", F32, F32, 1, 2, 2, 3, 2000, 64, 64, 64, 64,
     {.causal = BR, .softcap = 30.0}, 0, 0, 1},
    {"split_f32_bias_masked_row", F32, F32, 1, 2, 1, 3, 4100, 24, 24, 0, 0, {.bias = BIAS_FULL}, 0, 0, 0},
    {"split_f64_nq1", F64, F64, 1, 2, 1, 1, 4100, 64, 64, 0, 0, {.sinks = 1}, 0, 0, 1},
    {"split_f64_masked_row_window", F64, F64, 1, 2, 1, 3, 4100, 24, 24, 16, 48,
     {.window = 1, .wl = 1000, .wr = 0, .bias = BIAS_FULL}, 0, 0, 0},
    {"split_bf16_gqa_h8_2", BF16, BF16, 1, 8, 2, 1, 5000, 64, 64, 0, 0, {0}, 0, 0, 1},
    {"split_bf16_gqa_h8_1_pairs", BF16, BF16, 1, 8, 1, 1, 4100, 64, 64, 0, 0, {0}, 0, 0, 0},
    {"split_f16_nq1", F16, F16, 1, 2, 1, 1, 4100, 72, 72, 0, 0, {0}, 0, 0, 0},
    {"split_f32_bf16kv_gqa", F32, BF16, 1, 8, 2, 1, 4100, 64, 64, 0, 0, {0}, 0, 0, 0},
    {"split_f32_f16kv_nq1", F32, F16, 1, 2, 2, 1, 4100, 128, 64, 0, 0, {0}, 0, 0, 0},
};
/* clang-format on */

/* ===== Batches of sequences (fa_seqs) ===== */

#define MAX_SEQS 8

typedef struct {
    const char *name;
    fa_dtype q, kv;
    int64_t batch, hq, hkv, d, dv;
    int64_t nq[MAX_SEQS];   /* query rows per sequence (dense queries: nq[0] each) */
    int64_t nk[MAX_SEQS];   /* key rows per sequence (dense keys: nk[0] each; paged: the capacity) */
    int64_t used[MAX_SEQS]; /* seqused_k, when `use` */
    int packed_q, packed_k, use;
    int64_t page; /* paged K/V of this page size, 0 = not paged */
    int block_q, block_k;
    mods m;
    int backward;
} seqs_case;

typedef struct {
    int64_t cu_q[MAX_SEQS + 1], cu_k[MAX_SEQS + 1];
    int32_t *table;
    int64_t pages_per_seq, pool_pages;
    fa_seqs s;
} seqs_arrays;

static int64_t max_of(const int64_t *x, int64_t n)
{
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* A page table whose pages are shuffled through the pool, with sequence 1 sharing sequence 0's
 * first page (sequences may share pages). */
static void pages_new(const seqs_case *c, seqs_arrays *sa, rng *r)
{
    sa->pages_per_seq = (max_of(c->nk, c->batch) + c->page - 1) / c->page;
    sa->pool_pages = c->batch * sa->pages_per_seq + 3;
    int64_t n = c->batch * sa->pages_per_seq;
    sa->table = malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
    if (!sa->table) exit(2);
    for (int64_t i = 0; i < n; i++) sa->table[i] = (int32_t)(i + 3);
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
        int64_t j = rng_below(r, i + 1);
        int32_t t = sa->table[i];
        sa->table[i] = sa->table[j], sa->table[j] = t;
    }
    if (c->batch > 1) sa->table[sa->pages_per_seq] = sa->table[0];
}

static void seqs_arrays_new(const seqs_case *c, seqs_arrays *sa, rng *r)
{
    fa_seqs s = GRID_SEQS_INIT;
    sa->table = NULL;
    sa->cu_q[0] = sa->cu_k[0] = 0;
    for (int64_t b = 0; b < c->batch; b++) {
        sa->cu_q[b + 1] = sa->cu_q[b] + c->nq[b];
        sa->cu_k[b + 1] = sa->cu_k[b] + c->nk[b];
    }
    s.batch = c->batch;
    if (c->packed_q) s.cu_seqlens_q = sa->cu_q;
    if (c->packed_k) s.cu_seqlens_k = sa->cu_k;
    if (c->use) s.seqused_k = c->used;
    if (c->page) {
        pages_new(c, sa, r);
        s.block_table = sa->table;
        s.pages_per_seq = sa->pages_per_seq;
    }
    sa->s = s;
}

/* Dense-case buffers shaped for a batch of sequences: packed [1][H][total][D], per sequence
 * [batch][H][N][D], or a page pool [pages][Hkv][page][D]. */
static dense_bufs seqs_bufs_new(const seqs_case *c, const seqs_arrays *sa, rng *r)
{
    dense_bufs x;
    int64_t qb = c->packed_q ? 1 : c->batch, qn = c->packed_q ? sa->cu_q[c->batch] : c->nq[0];
    int64_t kb = c->page ? sa->pool_pages : c->packed_k ? 1 : c->batch;
    int64_t kn = c->page ? c->page : c->packed_k ? sa->cu_k[c->batch] : c->nk[0];
    x.q = buf_new(c->q, qb, c->hq, qn, c->d, 0);
    x.k = buf_new(c->kv, kb, c->hkv, kn, c->d, 0);
    x.v = buf_new(c->kv, kb, c->hkv, kn, c->dv, 0);
    buf_random(&x.q, r, 1.0);
    buf_random(&x.k, r, 1.0);
    buf_random(&x.v, r, 1.0);
    x.out = buf_new(c->q, qb, c->hq, qn, c->dv, 0);
    x.lse = buf_new(acc_of(c->q), qb, c->hq, qn, 1, 0);
    x.dout = buf_new(c->q, qb, c->hq, qn, c->dv, 0);
    buf_random(&x.dout, r, 1.0);
    x.dq = buf_new(c->q, qb, c->hq, qn, c->d, 0);
    x.dk = buf_new(c->kv, kb, c->hkv, kn, c->d, 0);
    x.dv = buf_new(c->kv, kb, c->hkv, kn, c->dv, 0);
    buf *outs[] = {&x.out, &x.lse, &x.dq, &x.dk, &x.dv};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) buf_pattern(outs[i]);
    return x;
}

static void run_seqs(grid *g, const seqs_case *c)
{
    rng r = rng_for(c->name);
    seqs_arrays sa;
    seqs_arrays_new(c, &sa, &r);
    dense_bufs x = seqs_bufs_new(c, &sa, &r);
    mod_arrays a = mods_new(&c->m, acc_of(c->q), 1, c->hq, 1, 1, &r);
    fa_params p = GRID_PARAMS_INIT;
    mods_apply(&p, &c->m, &a);
    p.seqs = &sa.s;
    run_calls(g, c->name, c->backward, c->block_q, c->block_k, &p, &x, &a, c->hq);
    mods_free(&a);
    dense_free(&x);
    free(sa.table);
}

/* Sequences of every kind: packed queries and keys (with an empty sequence), keys in use, paged
 * caches of page sizes 1, 16 and 256 (forward only: the backward refuses paged keys), decode
 * batches that split each sequence's keys, and one batch whose split partials exceed the 16 MiB
 * cap, so its sequences run in waves. */
/* clang-format off */
static const seqs_case seqs_cases[] = {
    {"seq_packed_f32_br", F32, F32, 4, 4, 2, 64, 64, {5, 0, 77, 8}, {7, 3, 130, 30}, {0}, 1, 1, 0, 0, 0, 0,
     {.causal = BR}, 1},
    {"seq_packed_f32_blocks", F32, F32, 3, 2, 2, 72, 24, {90, 1, 33}, {130, 600, 33}, {0}, 1, 1, 0, 0, 16, 48,
     {.causal = TL, .alibi = 1, .sinks = 1}, 1},
    {"seq_packed_bf16_window", BF16, BF16, 4, 4, 2, 64, 64, {5, 0, 77, 8}, {7, 3, 130, 30},
     {0}, 1, 1, 0, 0, 0, 0, {.window = 1, .wl = 20, .wr = 3, .sinks = 1}, 1},
    {"seq_packed_f16_softcap", F16, F16, 3, 2, 1, 33, 33, {77, 3, 90}, {90, 3, 77}, {0}, 1, 1, 0, 0, 0, 0,
     {.causal = BR, .softcap = 25.0}, 1},
    {"seq_packed_f32_bf16kv", F32, BF16, 3, 4, 1, 64, 64, {90, 1, 33}, {130, 90, 33}, {0}, 1, 1, 0, 0, 0, 0,
     {.causal = BR}, 1},
    {"seq_packed_f64", F64, F64, 3, 2, 2, 24, 24, {77, 1, 5}, {90, 600, 5}, {0}, 1, 1, 0, 0, 0, 0,
     {.causal = TL, .sinks = 1}, 1},
    {"seq_used_f32_dense", F32, F32, 4, 4, 2, 64, 64, {3}, {200}, {200, 30, 0, 77}, 0, 0, 1, 0, 0, 0,
     {.causal = BR, .alibi = 1}, 1},
    {"seq_used_packed_bf16", BF16, BF16, 3, 2, 1, 64, 64, {77, 5, 90}, {130, 90, 200},
     {100, 90, 7}, 1, 1, 1, 0, 0, 0, {.causal = TL}, 1},
    {"seq_paged_f32_p1", F32, F32, 3, 4, 2, 64, 64, {3}, {150}, {150, 77, 1}, 0, 0, 1, 1, 0, 0,
     {.causal = BR}, 0},
    {"seq_paged_f32_p16", F32, F32, 3, 4, 1, 64, 64, {1, 39, 1}, {320}, {320, 130, 5}, 1, 0, 1, 16, 0, 0,
     {.causal = BR, .sinks = 1}, 0},
    {"seq_paged_f32_p256_decode", F32, F32, 3, 8, 2, 64, 64, {1}, {4352},
     {4352, 3000, 600}, 0, 0, 1, 256, 0, 0, {0}, 0},
    {"seq_paged_bf16_p1", BF16, BF16, 3, 2, 1, 64, 64, {3}, {150}, {150, 77, 1}, 0, 0, 1, 1, 0, 0,
     {.causal = BR}, 0},
    {"seq_paged_bf16_p16_pairs", BF16, BF16, 3, 4, 2, 64, 64, {77, 39, 1}, {320},
     {320, 130, 5}, 1, 0, 1, 16, 0, 0, {.causal = BR, .alibi = 1}, 0},
    {"seq_paged_bf16_p256_decode", BF16, BF16, 3, 8, 2, 64, 64, {1}, {4352},
     {4352, 3000, 600}, 0, 0, 1, 256, 0, 0, {0}, 0},
    {"seq_paged_f32_bf16kv_p16", F32, BF16, 2, 2, 1, 72, 72, {3}, {600}, {600, 90}, 0, 0, 1, 16, 64, 64,
     {.softcap = 30.0}, 0},
    {"seq_decode_batch_f32", F32, F32, 6, 8, 2, 64, 64, {1}, {4200},
     {4200, 1500, 4100, 17, 0, 2500}, 0, 0, 1, 0, 0, 0, {0}, 0},
    {"seq_decode_batch_bf16_sinks", BF16, BF16, 4, 8, 2, 64, 64, {1}, {4200},
     {4200, 1500, 4100, 17}, 0, 0, 1, 0, 0, 0, {.sinks = 1}, 0},
    {"seq_paged_f64_p16", F64, F64, 3, 4, 2, 24, 24, {3}, {320}, {320, 130, 5}, 0, 0, 1, 16, 0, 0,
     {.causal = BR}, 0},
    {"seq_decode_batch_f64", F64, F64, 3, 4, 1, 24, 24, {1}, {4200}, {4200, 1500, 17}, 0, 0, 1, 0, 0, 0,
     {0}, 0},
    {"seq_waves_f32", F32, F32, 3, 1, 1, 8, 128, {256, 1, 1}, {20, 4096, 4096}, {0}, 1, 1, 0, 0, 256, 16,
     {0}, 0},
};
/* clang-format on */

/* ===== fa_merge ===== */

typedef struct {
    const char *name;
    fa_dtype t;
    int64_t b, h, nq, dv;
} merge_case;

#define MERGE_PARTS 3

/* Random lses with the special rows: one part's row never saw a key, no part saw another row, and a
 * NaN lse. */
static void merge_lses(void *lse[MERGE_PARTS], fa_dtype acc, int64_t rows, rng *r)
{
    for (int k = 0; k < MERGE_PARTS; k++)
        for (int64_t i = 0; i < rows; i++) store(lse[k], acc, (size_t)i, 4.0 * rng_unit(r));
    store(lse[1], acc, 0, -INFINITY);
    for (int k = 0; k < MERGE_PARTS; k++) store(lse[k], acc, (size_t)(2 % rows), -INFINITY);
    store(lse[2], acc, (size_t)(5 % rows), NAN);
}

/* NaN, +inf and a subnormal of the dtype in rows the lses let through (row 1 of parts 0, 1, 2):
 * they reach the merged row, through the half types' widening too. */
static void merge_specials(buf parts[MERGE_PARTS], fa_dtype t, int64_t dv)
{
    double tiny = t == FA_F16 ? 1e-6 : t == FA_F64 ? 1e-310 : 1e-40;
    store(parts[0].t.data, t, (size_t)dv, NAN);
    store(parts[1].t.data, t, (size_t)dv + 1, INFINITY);
    store(parts[2].t.data, t, (size_t)(2 * dv - 1), tiny);
}

static void run_merge(grid *g, const merge_case *c)
{
    rng r = rng_for(c->name);
    fa_dtype acc = acc_of(c->t);
    int64_t rows = c->b * c->h * c->nq;
    buf parts[MERGE_PARTS], lses[MERGE_PARTS];
    fa_tensor outs[MERGE_PARTS];
    void *lse_ptrs[MERGE_PARTS];
    for (int k = 0; k < MERGE_PARTS; k++) {
        parts[k] = buf_new(c->t, c->b, c->h, c->nq, c->dv, 0);
        buf_random(&parts[k], &r, 1.0);
        outs[k] = parts[k].t;
        lses[k] = buf_new(acc, c->b, c->h, c->nq, 1, 0);
        lse_ptrs[k] = lses[k].t.data;
    }
    merge_lses(lse_ptrs, acc, rows, &r);
    merge_specials(parts, c->t, c->dv);
    buf out = buf_new(c->t, c->b, c->h, c->nq, c->dv, 0), lse = buf_new(acc, c->b, c->h, c->nq, 1, 0);
    buf_pattern(&out);
    buf_pattern(&lse);
    fa_context *ctx = grid_context(g, 0, 0);
    case_begin(g);
    fa_status st = fa_merge(ctx, MERGE_PARTS, outs, (const void *const *)lse_ptrs, &out.t, lse.t.data);
    record(g, ctx, "merge", c->name, st);
    emit_buf(g, &out);
    emit_buf(g, &lse);
    case_end(g, c->name);
    for (int k = 0; k < MERGE_PARTS; k++) buf_free(&parts[k]), buf_free(&lses[k]);
    buf_free(&out);
    buf_free(&lse);
}

/* clang-format off */
static const merge_case merge_cases[] = {
    {"merge3_f32", F32, 2, 3, 33, 24},
    {"merge3_f32_dv128", F32, 1, 2, 77, 128},
    {"merge3_f64", F64, 2, 2, 9, 72},
    {"merge3_bf16", BF16, 2, 3, 33, 24},
    {"merge3_bf16_dv_odd", BF16, 1, 4, 90, 33},
    {"merge3_f16", F16, 1, 2, 77, 64},
};
/* clang-format on */

/* ===== Driver ===== */

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int parse_args(int argc, char **argv, grid *g, const char **path)
{
    *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-t") == 0 && i + 1 < argc)
            g->threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
            g->only = argv[++i];
        else if (argv[i][0] != '-' && !*path)
            *path = argv[i];
        else
            return -1;
    }
    return *path && g->threads >= 0 ? 0 : -1;
}

/* -c: only the cases whose name contains the string (to look at one difference more closely) */
static int selected(const grid *g, const char *name)
{
    return !g->only || strstr(name, g->only) != NULL;
}

static void run_grid(grid *g)
{
    grid_context(g, 0, 0); /* first: a table this CPU lacks ends the run before any output */
    for (size_t i = 0; i < COUNT(dense_cases); i++)
        if (selected(g, dense_cases[i].name)) run_dense(g, &dense_cases[i]);
    for (size_t i = 0; i < COUNT(seqs_cases); i++)
        if (selected(g, seqs_cases[i].name)) run_seqs(g, &seqs_cases[i]);
    for (size_t i = 0; i < COUNT(merge_cases); i++)
        if (selected(g, merge_cases[i].name)) run_merge(g, &merge_cases[i]);
}

static void print_summary(const grid *g)
{
    fa_stats s = GRID_STATS_INIT;
    fa_context_stats(g->contexts[0].ctx, &s);
    printf("table=%s threads=%d cases=%d bytes=%lld failures=%d plans=", s.isa, s.num_threads, g->cases,
           g->offset, g->failures);
    const char *sep = "";
    for (unsigned i = 0; i < 3; i++)
        if (g->plans_seen & (1u << i)) printf("%s%s", sep, plan_names[i]), sep = ",";
    printf("%s\n", *sep ? "" : "-");
}

int main(int argc, char **argv)
{
    grid g;
    const char *path;
    memset(&g, 0, sizeof g);
    if (parse_args(argc, argv, &g, &path) != 0) {
        fprintf(stderr, "usage: %s [-t THREADS] [-c CASE_SUBSTRING] OUT  (writes OUT and OUT.index)\n",
                argv[0]);
        return 2;
    }
    char index_path[4096];
    snprintf(index_path, sizeof index_path, "%s.index", path);
    g.out = fopen(path, "wb");
    g.index = fopen(index_path, "w");
    if (!g.out || !g.index) {
        fprintf(stderr, "output_grid: cannot write %s or %s\n", path, index_path);
        return 2;
    }
    run_grid(&g);
    print_summary(&g);
    for (int i = 0; i < g.n_contexts; i++) fa_context_destroy(g.contexts[i].ctx);
    if (fclose(g.out) != 0 || fclose(g.index) != 0) return 2;
    return g.failures ? 1 : 0;
}
