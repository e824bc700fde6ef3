/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the public API of flashattn under fuzzed arguments.
 *
 * One input (format: fuzz_input.h) describes one problem: shapes, a layout per view, where each
 * view sits in one heap block (the "pool"), parameters (a batch of sequences among them, with its
 * arrays in the pool too), a context, and which calls to make. The harness then calls fa_forward
 * and, when asked, fa_backward with the forward's out and lse, or fa_merge on parts in the pool,
 * and last, when asked, fa_convert between two of the views, and checks what include/flashattn.h
 * promises:
 *
 *   - the status is one the header allows for these arguments (fuzz_model.c), in its order;
 *   - a refused call changed no byte of the pool (every view and the lse live there);
 *   - a call that succeeded changed no byte outside its outputs' elements;
 *   - on success: a row that sees no key (by the causal mask and the window, or behind a -inf
 *     bias) has exact zeros and lse = -inf, or the sink with sinks; a row whose q, visible k and v
 *     rows, bias entries, slope and sink hold ordinary finite values has finite output, lse within
 *     rounding of the float64 log-sum-exp and output within rounding of the float64 softmax
 *     average (bf16 and f16 elements decoded exactly, their outputs within one rounding to
 *     their type more), with every score modifier computed in float64 from the header's definition; the
 *     backward gives dq = 0 on rows that see no key and dk = dv = 0 on keys no row sees, and on
 *     ordinary inputs finite gradients and dsinks within rounding of the header's formula from
 *     the forward's out and lse; a twin context (same kernel table and blocks, other thread
 *     count) gives the same bytes;
 *   - a quantized KV cache (k, v int8 or FP8 with p.k_scale, p.v_scale: fuzz_input.h, quant) is
 *     held to all of the above as the f32 cache it dequantizes to (fz_dequantized);
 *   - with sequences (fuzz_seqs.c): each sequence's rows as those of its own dense call (the
 *     checks above, per sequence, with its keys in use and its pages gathered), dsinks over every
 *     sequence, and the rows of no sequence unwritten;
 *   - fa_merge (fuzz_merge.c): the header's formula row by row in float64, -inf parts ignoring
 *     their out, rows no part saw zero with lse -inf, a NaN lse giving a NaN row;
 *   - fa_convert (fuzz_convert.c): every element of dst against the test kit's decoding of src,
 *     rounded once to dst's dtype;
 *   - fa_tensor_bhsd/bshd, fa_context_create, fa_context_stats, fa_status_str as documented.
 *
 * Memory safety: the library trusts that a valid view points at memory the caller owns. So the
 * harness passes a view that leaves the pool only when the header says the call must be refused
 * anyway (fuzz_model.c: a PRESENT class, e.g. offsets that overflow int64, an unknown dtype, a
 * shape mismatch). When a call would otherwise be valid but leave the pool (or exceed the work
 * budget that keeps one call near a millisecond), the harness "poisons" it with a second, certain
 * refusal: the lse (or dq) is pointed at q, an output overlapping an input (FA_ERR_ALIAS), else
 * sinks not aligned to float (FA_ERR_STRIDE; both checked after the stride checks run on the wild
 * views), else, with no query head, an unknown causal mode (FA_ERR_ARG); fa_merge's: its lse over
 * the first part's lse (FA_ERR_ALIAS), else n = 0 (FA_ERR_ARG). The arrays of fa_seqs are read in
 * the library's SHAPE step: a call whose arrays hold fewer entries than the library would read
 * (the model's reads_outside) is poisoned with the unknown causal mode, so it is refused before;
 * an array that wraps around the address space is passed as it is (the header refuses it with
 * FA_ERR_STRIDE). ASan then turns any access outside the pool into a crash.
 *
 * Built with -fsanitize=fuzzer,address,undefined by -DFLASHATTN_FUZZ=ON (clang); replay.c gives
 * it a main() for every other build (the corpus runs as a ctest). */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h" /* the test kit: narrowing to bf16 / f16 for the inputs the harness writes */
#include "flashattn.h"
#include "fuzz_case.h"
#include "fuzz_input.h"
#include "fuzz_model.h"
#include "rng.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- failures ---------------------------------------------------------------------------- */

static char g_case[1024]; /* the decoded case, printed with any failure */

void fz_fail(int line, const char *file, const char *cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *base = strrchr(file, '/');
    fprintf(stderr, "\n%s:%d: check failed: %s\n  ", base ? base + 1 : file, line, cond);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n  case: %s\n", g_case);
    va_end(ap);
    abort();
}

/* ---- contexts ------------------------------------------------------------------------------ */

typedef struct {
    int threads, block_q, block_k;
    const char *isa; /* FLASHATTN_ISA while it is made; NULL = the best this CPU runs */
    int twin;        /* the premade context with the same table and blocks and the other thread count */
} premade_spec;

static const premade_spec premade[8] = {
    {1, 0, 0, NULL, 1},   {2, 0, 0, NULL, 0},   {1, 16, 16, NULL, 3},   {2, 16, 16, NULL, 2},
    {1, 7, 20, "ref", 5}, {2, 7, 20, "ref", 4}, {1, 64, 32, "avx2", 7}, {2, 64, 32, "avx2", 6},
};
static fa_context *premade_ctx[8];
static int contexts_ready, verbose;

/* fa_context_create with FLASHATTN_ISA set to isa while it runs (NULL: the environment as it is,
 * which is what the default context of ctx = NULL sees too). */
static fa_status create_on(fa_context **ctx, const fa_context_opts *opts, const char *isa)
{
    if (!isa) return fa_context_create(ctx, opts);
    const char *old = getenv("FLASHATTN_ISA");
    char saved[64] = "";
    int had = old != NULL;
    if (had) snprintf(saved, sizeof saved, "%s", old);
    setenv("FLASHATTN_ISA", isa, 1);
    fa_status st = fa_context_create(ctx, opts);
    if (had)
        setenv("FLASHATTN_ISA", saved, 1);
    else
        unsetenv("FLASHATTN_ISA");
    return st;
}

static void destroy_contexts(void)
{
    for (int i = 0; i < 8; i++) {
        fa_context_destroy(premade_ctx[i]);
        premade_ctx[i] = NULL;
    }
}

static void make_contexts(void)
{
    if (contexts_ready) return;
    contexts_ready = 1;
    verbose = getenv("FA_FUZZ_VERBOSE") != NULL;
    for (int i = 0; i < 8; i++) {
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.num_threads = premade[i].threads;
        o.block_q = premade[i].block_q;
        o.block_k = premade[i].block_k;
        fa_status st = create_on(&premade_ctx[i], &o, premade[i].isa);
        if (st == FA_ERR_UNSUPPORTED) st = create_on(&premade_ctx[i], &o, NULL); /* CPU lacks the table */
        if (st != FA_OK) {
            fprintf(stderr, "fuzz_api: cannot create context %d: %s\n", i, fa_status_str(st));
            abort();
        }
    }
    atexit(destroy_contexts);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    make_contexts();
    return 0;
}

/* ---- decoding ------------------------------------------------------------------------------ */

static const fa_dtype dtype_table[8] = {FA_F32,       FA_F64,      FA_BF16,      FA_F16,
                                        (fa_dtype)-1, (fa_dtype)7, (fa_dtype)77, (fa_dtype)INT_MIN};

int64_t fz_sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    if (!__builtin_mul_overflow(a, b, &r)) return r;
    return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
}

int64_t fz_sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (!__builtin_add_overflow(a, b, &r)) return r;
    return a < 0 ? INT64_MIN : INT64_MAX;
}

double fz_uniform(uint64_t *s)
{
    return kit_unit_from_bits(kit_splitmix64(s)) * 2.0 - 1.0;
}

static const char *const layout_name[] = {"bhsd", "bshd", "pad-bhsd", "pad-bshd", "b0",
                                          "h0",   "s0",   "raw",      "packed",   "NULL"};

static int64_t sel_len(uint16_t v, int64_t small, int64_t large)
{
    return (v & 0x8000u) ? (int64_t)(v % large) : (int64_t)(v % small);
}

/* The shapes, cut until one call stays within the work and memory budgets. */
static void decode_shapes(fz_case *c)
{
    const fz_input *in = &c->in;
    c->B = in->batch % 4;
    fz_seqs_wanted(in, &c->B); /* with sequences: one batch per sequence where dense */
    c->Hkv = in->kv_heads % 5;
    c->Hq = c->Hkv * (1 + in->group % 4);
    c->Nq = sel_len(in->q_len, 80, 1024);
    c->Nk = sel_len(in->kv_len, 160, 2048);
    c->D = 1 + sel_len(in->dim, 40, FA_MAX_HEAD_DIM);
    c->Dv = 1 + sel_len(in->dim_v, 40, FA_MAX_HEAD_DIM);
    for (;;) {
        int64_t dmax = c->D > c->Dv ? c->D : c->Dv;
        double work = (double)c->B * (double)c->Hq * (double)c->Nq * (double)c->Nk * (double)(c->D + c->Dv);
        if (work <= FZ_WORK_MAX && c->B * c->Hq * c->Nq * dmax <= FZ_TENSOR_MAX &&
            c->B * c->Hkv * c->Nk * dmax <= FZ_TENSOR_MAX)
            break;
        if (c->Nk >= c->Nq && c->Nk > 1)
            c->Nk = (c->Nk + 1) / 2;
        else if (c->Nq > 1)
            c->Nq = (c->Nq + 1) / 2;
        else if (dmax > 1)
            c->D = (c->D + 1) / 2, c->Dv = (c->Dv + 1) / 2;
        else
            break;
    }
}

/* fa_tensor_bhsd / fa_tensor_bshd, held to the header's promise. */
static fa_tensor helper_view(fa_dtype t, int64_t b, int64_t h, int64_t s, int64_t d, int heads_inner)
{
    fa_tensor x = heads_inner ? fa_tensor_bshd(NULL, t, b, s, h, d) : fa_tensor_bhsd(NULL, t, b, h, s, d);
    FZ_CHECK(x.dtype == t && x.batch == b && x.heads == h && x.seq == s && x.dim == d && x.data == NULL,
             "fa_tensor_%s did not copy its arguments", heads_inner ? "bshd" : "bhsd");
    int64_t inner, whole;
    int bad = b < 0 || h < 0 || s < 0 || d < 0 || __builtin_mul_overflow(heads_inner ? h : s, d, &inner) ||
              __builtin_mul_overflow(heads_inner ? s : h, inner, &whole);
    int negative = x.stride_batch < 0 || x.stride_head < 0 || x.stride_seq < 0;
    if (bad) {
        FZ_CHECK(negative, "fa_tensor helper: sizes %lld %lld %lld %lld must give negative strides",
                 (long long)b, (long long)h, (long long)s, (long long)d);
    } else if (heads_inner) {
        FZ_CHECK(x.stride_head == d && x.stride_seq == inner && x.stride_batch == whole,
                 "fa_tensor_bshd strides");
    } else {
        FZ_CHECK(x.stride_seq == d && x.stride_head == inner && x.stride_batch == whole,
                 "fa_tensor_bhsd strides");
    }
    return x;
}

static void set_strides(fa_tensor *t, int64_t sb, int64_t sh, int64_t ss)
{
    t->stride_batch = sb;
    t->stride_head = sh;
    t->stride_seq = ss;
}

/* Strides of a view from its layout; sizes are already final. Overflowing products give -1. */
static void decode_strides_of(const fz_view_bytes *vb, fa_tensor *t, int layout)
{
    const int64_t h = t->heads, s = t->seq, d = t->dim;
    int64_t a, b2;
    switch (layout) {
    case L_BHSD: *t = helper_view(t->dtype, t->batch, h, s, d, 0); break;
    case L_BSHD: *t = helper_view(t->dtype, t->batch, h, s, d, 1); break;
    case L_PAD_BHSD:
        a = fz_sat_add(d, vb->pad_seq % 17);
        b2 = fz_sat_add(fz_sat_mul(s, a), vb->pad_head % 65);
        set_strides(t, fz_sat_add(fz_sat_mul(h, b2), vb->pad_batch % 257), b2, a);
        break;
    case L_PAD_BSHD:
        a = fz_sat_add(d, vb->pad_head % 17);
        b2 = fz_sat_add(fz_sat_mul(h, a), vb->pad_seq % 65);
        set_strides(t, fz_sat_add(fz_sat_mul(s, b2), vb->pad_batch % 257), a, b2);
        break;
    case L_BCAST_BATCH: set_strides(t, 0, fz_sat_mul(s, d), d); break;
    case L_BCAST_HEAD: set_strides(t, fz_sat_mul(s, d), 0, d); break;
    case L_BCAST_SEQ: set_strides(t, fz_sat_mul(h, d), d, 0); break;
    case L_RAW: {
        static const int64_t mult[4] = {1, (int64_t)1 << 12, (int64_t)1 << 31, (int64_t)1 << 45};
        set_strides(t, fz_sat_mul(vb->raw_batch, mult[vb->raw_scale & 3]),
                    fz_sat_mul(vb->raw_head, mult[(vb->raw_scale >> 2) & 3]),
                    fz_sat_mul(vb->raw_seq, mult[(vb->raw_scale >> 4) & 3]));
        break;
    }
    default: *t = helper_view(t->dtype, t->batch, h, s, d, 1); break; /* packed, resolved later */
    }
    if (t->stride_batch == INT64_MAX || t->stride_head == INT64_MAX || t->stride_seq == INT64_MAX) {
        if (layout != L_RAW) set_strides(t, -1, -1, -1); /* a saturated product: mirror the helpers */
    }
}

static void decode_strides(fz_case *c, int i)
{
    decode_strides_of(i == FZ_BIAS ? &c->in.bias : &c->in.view[i], &c->view[i], c->layout[i]);
}

/* Bytes a view's own region needs: its span, or a small stand-in when it is too large (the view
 * is then "wild" and only passed to calls that must be refused). */
static int64_t region_bytes(const fa_tensor *t)
{
    if (fz_view_empty(t)) return 0;
    int64_t span = fz_view_span(t);
    int64_t es = (int64_t)(fz_dtype_bytes(t->dtype) ? fz_dtype_bytes(t->dtype) : 8);
    if (span < 0 || span > FZ_REGION_MAX / es) return FZ_WILD_REGION;
    return span * es;
}

/* q, k, v (first = FZ_Q) or dq, dk, dv (first = FZ_DQ) as slices of one packed buffer, when all
 * three ask for it and the shapes allow it. Returns the group's bytes, or 0 if not packed. */
static int64_t pack_group(fz_case *c, int first)
{
    fa_tensor *q = &c->view[first], *k = &c->view[first + 1], *v = &c->view[first + 2];
    for (int i = first; i < first + 3; i++)
        if (c->layout[i] != L_PACKED) return 0;
    if (q->seq != k->seq || k->seq != v->seq || q->batch != k->batch || k->batch != v->batch) return 0;
    if (q->batch <= 0 || q->seq <= 0 || q->heads < 0 || k->heads < 0 || v->heads < 0 || q->dim < 1 ||
        v->dim < 1 || k->dim < 1)
        return 0;
    int64_t w = fz_sat_add(fz_sat_add(fz_sat_mul(q->heads, q->dim), fz_sat_mul(k->heads, k->dim)),
                           fz_sat_mul(v->heads, v->dim));
    int64_t es = (int64_t)(fz_dtype_bytes(q->dtype) ? fz_dtype_bytes(q->dtype) : 8);
    double bytes = (double)q->batch * (double)q->seq * (double)w * (double)es;
    if (w <= 0 || bytes > (double)FZ_REGION_MAX * 2) return 0;
    if (k->dtype != q->dtype || v->dtype != q->dtype) return 0;
    set_strides(q, q->seq * w, q->dim, w);
    set_strides(k, k->seq * w, k->dim, w);
    set_strides(v, v->seq * w, v->dim, w);
    return (int64_t)bytes;
}

static void decode_params(fz_case *c)
{
    const fz_input *in = &c->in;
    fa_params p = FA_PARAMS_INIT;
    if (in->scale_mode >= 0x80) {
        switch (in->scale_mode % 8) {
        case 0: p.scale = in->scale_raw / 64.0; break;
        case 1: p.scale = NAN; break;
        case 2: p.scale = INFINITY; break;
        case 3: p.scale = -INFINITY; break;
        case 4: p.scale = ldexp(1.0, in->scale_raw % 1100); break;
        case 5: p.scale = -0.0; break;
        case 6: p.scale = 5e-324; break;
        default: p.scale = in->scale_raw / 1024.0; break;
        }
    }
    if (in->causal < 0xC0)
        p.causal = (fa_causal)(in->causal % 3);
    else if (in->causal < 0xE0)
        p.causal = (fa_causal)(3 + (in->causal - 0xC0));
    else
        p.causal = (fa_causal)(int)(int8_t)(in->causal - 0x100);
    if (in->window >= 0x80) {
        p.window_left = in->window_left;
        p.window_right = in->window_right;
        if (in->window & 1) p.window_left = p.window_left >= 0 ? INT64_MAX : INT64_MIN;
        if (in->window & 2) p.window_right = p.window_right >= 0 ? INT64_MAX : INT64_MIN;
    }
    if (in->softcap >= 0x80) {
        static const double caps[14] = {0,           0,        0,       0,       -1.0,    NAN,
                                        INFINITY,    -0.0,     DBL_MIN, FLT_MIN, FLT_MAX, 2.0 * FLT_MAX,
                                        FLT_MIN / 2, -INFINITY};
        p.softcap = in->softcap % 14 < 4 ? (1.0 + in->softcap_raw) / 8.0 : caps[in->softcap % 14];
    }
    if (in->dropout.dropout >= 0xC0) {
        static const double dropout[8] = {0.1, 0.5, 0.9, 0.0, NAN, -0.25, 1.0, INFINITY};
        p.dropout_p = dropout[in->dropout.dropout % 8];
        p.dropout_seed = in->dropout.dropout_seed;
        p.dropout_offset = 3u * in->dropout.dropout_seed;
    }
    if (in->origin.origin >= 0xC0) {
        static const int64_t rows[7] = {
            0, -1, 0, ((int64_t)1 << 32) - 1, 0, INT64_MAX, ((int64_t)1 << 32) - 64};
        static const int64_t keys[7] = {0, 0, -5, 0, ((int64_t)1 << 34) - 1, 0, ((int64_t)1 << 34) - 256};
        const int which = in->origin.origin % 7;
        p.dropout_row0 = which == 0 ? in->origin.origin_row : rows[which];
        p.dropout_key0 = which == 0 ? in->origin.origin_key : keys[which];
    }
    /* the bias and the arrays point into the pool: set by decode_case */
    c->params = p;
    c->params_null = in->params_null >= 0xF0;
}

/* A quantized element's code for the value v (any code near it will do: the checks decode the
 * stored bits themselves): int8 rounded and clamped (NaN 0); FP8 truncated, NaN kept, E5M2's
 * infinities kept, values past the largest finite saturated (an infinity becomes E4M3's NaN code:
 * the type has none). */
static uint8_t quant_code(fa_dtype t, double v)
{
    if (t == FA_I8) {
        const double r = isnan(v) ? 0.0 : nearbyint(v);
        return (uint8_t)(int8_t)(r < -128.0 ? -128.0 : r > 127.0 ? 127.0 : r);
    }
    const int e4m3 = t == FA_F8_E4M3, mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
    const uint8_t sign = signbit(v) ? 0x80 : 0;
    const double a = fabs(v);
    if (isnan(v) || (e4m3 && isinf(v))) return sign | 0x7F;
    if (isinf(v)) return sign | 0x7C;
    if (a >= (e4m3 ? 448.0 : 57344.0)) return sign | (e4m3 ? 0x7E : 0x7B);
    int e;
    frexp(a, &e); /* a in [2^(e-1), 2^e) */
    if (a == 0.0 || e - 1 < 1 - bias)
        return sign | (uint8_t)(a / ldexp(1.0, 1 - bias - mbits)); /* subnormal */
    const int mant = (int)((a / ldexp(1.0, e - 1) - 1.0) * (1 << mbits));
    return sign | (uint8_t)(((e - 1 + bias) << mbits) | mant);
}

/* The magnitude of a quantized type's codes in the pool (and 1/Q that of its scales), so that a
 * dequantized element lies in [-amp, amp] as a float cache's does: int8 codes use the type's
 * range, FP8 codes are values of [-1, 1]. */
static double quant_range(fa_dtype t)
{
    return t == FA_I8 ? 127.0 : 1.0;
}

/* Stores x as one element of dtype t (f64, f32, bf16 or f16; bf16 and f16 rounded to nearest; a
 * quantized type's code for x). */
static void store_elem(unsigned char *at, fa_dtype t, double x)
{
    if (fz_dtype_quantized(t)) {
        *at = quant_code(t, x);
    } else if (t == FA_F64) {
        memcpy(at, &x, 8);
    } else if (t == FA_F32) {
        float f = (float)x;
        memcpy(at, &f, 4);
    } else {
        uint16_t h = t == FA_BF16 ? kit_bf16_from_f32((float)x) : kit_f16_from_f32((float)x);
        memcpy(at, &h, 2);
    }
}

/* bytes of [at, at + bytes) as elements of dtype t, uniform in [-amp, amp] from seed s (any
 * other dtype value: random bytes). Values of amp = 2^k stay within [-amp, amp] when rounded. */
static void fill_values(unsigned char *at, size_t bytes, fa_dtype t, double amp, uint64_t s)
{
    const size_t es = fz_dtype_bytes(t);
    if (es == 0) {
        for (size_t i = 0; i < bytes; i++) at[i] = (unsigned char)kit_splitmix64(&s);
        return;
    }
    const double mag = fz_dtype_quantized(t) ? quant_range(t) : amp; /* codes: see quant_range */
    for (size_t i = 0; i + es <= bytes; i += es) store_elem(at + i, t, fz_uniform(&s) * mag);
}

/* The pool in the call's dtype, then each view's own region whose dtype differs (k's group of a
 * half-precision KV cache, a view with a dtype of its own) in that view's dtype, so every view
 * holds ordinary values of its type. */
static void fill_pool(fz_case *c, const int64_t group_bytes[2])
{
    fill_values(c->pool, c->pool_bytes, c->dtype, c->amp, c->in.seed);
    for (int i = 0; i < FZ_ALL_VIEWS; i++) {
        const fa_tensor *t = &c->view[i];
        const int grouped =
            (i >= FZ_Q && i <= FZ_V && group_bytes[0]) || (i >= FZ_DQ && i <= FZ_DV && group_bytes[1]);
        if (!c->own[i] || t->dtype == c->dtype || !fz_dtype_bytes(t->dtype)) continue;
        if (grouped && i != FZ_Q && i != FZ_DQ) continue; /* the group's first view fills the group */
        const int64_t bytes = grouped ? group_bytes[i == FZ_Q ? 0 : 1] : region_bytes(t);
        if (c->base[i] < 0 || bytes <= 0 || c->base[i] + bytes > (int64_t)c->pool_bytes) continue;
        fill_values(c->pool + c->base[i], (size_t)bytes, t->dtype, c->amp,
                    c->in.seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)));
    }
}

static void write_specials(fz_case *c, const fz_pool *pool)
{
    const int n = c->in.specials % 5;
    for (int i = 0; i < n; i++) {
        const fz_special_bytes *sp = &c->in.special[i];
        const int v = sp->view % FZ_ALL_VIEWS;
        const fa_tensor *t = &c->view[v];
        if (c->layout[v] == L_NULL || !fz_dtype_bytes(t->dtype) || !fz_view_fits(pool, t)) continue;
        uint64_t count;
        if (__builtin_mul_overflow((uint64_t)t->batch, (uint64_t)t->heads, &count) ||
            __builtin_mul_overflow(count, (uint64_t)t->seq, &count) ||
            __builtin_mul_overflow(count, (uint64_t)t->dim, &count))
            continue;
        uint64_t e = sp->index % count;
        int64_t d = (int64_t)(e % (uint64_t)t->dim), r = (int64_t)(e / (uint64_t)t->dim);
        int64_t s = r % t->seq, h = r / t->seq % t->heads, b = r / t->seq / t->heads;
        int64_t off = b * t->stride_batch + h * t->stride_head + s * t->stride_seq + d;
        /* large: near the top of the type's range; tiny: its smallest subnormal (bf16 2^-133,
         * f16 2^-24) */
        const double large = t->dtype == FA_F64 ? 1e300 : t->dtype == FA_F16 ? 6e4 : 1e30;
        const double tiny = t->dtype == FA_F64    ? 4.9406564584124654e-324
                            : t->dtype == FA_F32  ? (double)FLT_TRUE_MIN
                            : t->dtype == FA_BF16 ? 0x1p-133
                                                  : 0x1p-24;
        double x;
        switch (sp->kind % 8) {
        case 0: x = NAN; break;
        case 1: x = INFINITY; break;
        case 2: x = -INFINITY; break;
        case 3: x = large; break;
        case 4: x = -0.0; break;
        case 5: x = tiny; break;
        case 6: x = -large; break;
        default: x = 64.0 * c->amp; break;
        }
        store_elem((unsigned char *)t->data + off * (int64_t)fz_dtype_bytes(t->dtype), t->dtype, x);
    }
}

/* Floats in the arrays' own regions (after fill_pool, which wrote the pool's dtype there). */
static void fill_arrays(fz_case *c, const int64_t own[FZ_ARRAYS])
{
    uint64_t s = c->in.seed ^ 0x5851f42d4c957f2dull;
    for (int a = 0; a < FZ_ARRAYS; a++) {
        if (own[a] < 0) continue;
        const fz_heads_bytes *hb = &c->in.array[a];
        const double mag = ldexp(1.0, (hb->scale & 7) - 3);
        for (int64_t h = 0; h < c->Hq; h++) {
            float x = (float)(fz_uniform(&s) * mag);
            if (h == 0 && hb->scale >= 0xF0) {
                static const float special[4] = {NAN, INFINITY, -INFINITY, 1e30f};
                x = special[hb->scale % 4];
            }
            memcpy(c->pool + own[a] + h * (int64_t)sizeof(float), &x, sizeof x);
        }
    }
}

/* ---- quantized caches (fuzz_input.h, quant and the scale views) ---- */

static const fa_dtype quant_types[3] = {FA_I8, FA_F8_E4M3, FA_F8_E5M2};

/* k's group of a quantized type and the input's twist on the groups; returns whether the scales are
 * given (a quantized k's, or with twist 4 whatever k is). */
static int quant_dtypes(const fz_input *in, fa_dtype call, fa_dtype group[FZ_ALL_VIEWS])
{
    const fz_quant_bytes *qb = &in->quant;
    if (qb->quant >= 0x80)
        group[FZ_K] = group[FZ_V] = group[FZ_DK] = group[FZ_DV] = quant_types[qb->quant % 3];
    const int q = qb->quant >= 0x80 ? qb->quant % 3 : 0; /* k's type, or int8 for a float k */
    switch (qb->quant_twist >= 0xC0 ? qb->quant_twist % 6 : -1) {
    case 0: group[FZ_V] = group[FZ_DV] = quant_types[(q + 1) % 3]; break;
    case 1: group[FZ_Q] = group[FZ_OUT] = group[FZ_DOUT] = group[FZ_DQ] = quant_types[q]; break;
    case 2: group[FZ_OUT] = group[FZ_DOUT] = quant_types[q]; break;
    case 3: group[FZ_V] = group[FZ_DV] = call; break;
    case 4: return 1;
    case 5: group[FZ_DK] = group[FZ_DV] = call; break;
    }
    return qb->quant >= 0x80;
}

/* k_scale and v_scale: [k's batch or 1][heads or 1][seq or 1][1] (v's for v_scale) in their layout,
 * with the input's size override and dtype (else f32); no pointer when the scales are off or the
 * layout says NULL. */
static void scale_views(fz_case *c, int scales_on)
{
    for (int s = 0; s < 2; s++) {
        const fz_view_bytes *vb = &c->in.scale[s];
        const fa_tensor *of = &c->view[s ? FZ_V : FZ_K];
        const int bc = s ? c->in.quant.v_bcast : c->in.quant.k_bcast;
        int64_t sz[4] = {bc & 1 ? 1 : of->batch, bc & 2 ? 1 : of->heads, bc & 4 ? 1 : of->seq, 1};
        if (vb->size_field >= 0xE0 && vb->size_field % 5 != 0)
            sz[vb->size_field % 5 - 1] =
                fz_sat_mul(vb->size_value, (int64_t)1 << (16 * (vb->size_scale % 4)));
        fa_tensor *t = &c->scale[s];
        t->dtype = vb->dtype_override >= 0xF0 ? dtype_table[vb->dtype_override % 8] : FA_F32;
        t->batch = sz[0], t->heads = sz[1], t->seq = sz[2], t->dim = sz[3];
        c->scale_layout[s] = !scales_on || vb->layout >= 0xF8 ? L_NULL : vb->layout % 9;
        if (c->scale_layout[s] != L_NULL) decode_strides_of(vb, t, c->scale_layout[s]);
    }
}

/* Their own regions, after every other (so an input without scales keeps its pool as it was). */
static int64_t scale_regions(fz_case *c, int64_t cursor, int64_t gap)
{
    const int64_t es = c->dtype == FA_F64 ? 8 : 4;
    for (int s = 0; s < 2; s++) {
        const fz_view_bytes *vb = &c->in.scale[s];
        const int place = vb->place < 0xC0 ? 9 : vb->place % 10;
        c->scale_own[s] = c->scale_layout[s] != L_NULL && place == 9;
        c->scale_base[s] = 0;
        if (!c->scale_own[s]) continue;
        const int64_t skew = vb->place >= 0xC0 ? 1 + (vb->shift & 3) : 0; /* misaligned */
        cursor += gap;
        c->scale_base[s] = cursor + skew;
        cursor += (region_bytes(&c->scale[s]) + skew + es - 1) / es * es;
    }
    return cursor;
}

/* A scale placed on view 0..7's region + shift elements (clamped, aligned), or with NULL data. */
static void scale_places(fz_case *c, int64_t es)
{
    for (int s = 0; s < 2; s++) {
        const fz_view_bytes *vb = &c->in.scale[s];
        const int place = vb->place < 0xC0 ? 9 : vb->place % 10;
        if (c->scale_own[s] || c->scale_layout[s] == L_NULL) continue;
        if (place == 8) {
            c->scale_base[s] = -1;
            continue;
        }
        int64_t at = fz_sat_add(c->own[place] ? c->base[place] : 0, (int64_t)vb->shift * es);
        at = at < 0 ? 0 : (at > (int64_t)c->pool_bytes ? (int64_t)c->pool_bytes / es * es : at);
        c->scale_base[s] = at - at % es;
    }
}

/* Data pointers, and the values of the scales' own regions: uniform in [-1, 1]·amp/Q for the type
 * of the tensor they scale (quant_range), so the dequantized cache lies in [-amp, amp]. */
static void fill_scales(fz_case *c)
{
    uint64_t seed = c->in.seed ^ 0x2545f4914f6cdd1dull;
    for (int s = 0; s < 2; s++) {
        fa_tensor *t = &c->scale[s];
        t->data = c->scale_base[s] < 0 ? NULL : c->pool + c->scale_base[s];
        if (!c->scale_own[s]) continue;
        const fa_dtype of = c->view[s ? FZ_V : FZ_K].dtype;
        const double mag = c->amp / (fz_dtype_quantized(of) ? quant_range(of) : 1.0);
        const int64_t bytes = region_bytes(t), room = (int64_t)c->pool_bytes - c->scale_base[s];
        fill_values(c->pool + c->scale_base[s], (size_t)(bytes < room ? bytes : room), t->dtype, mag,
                    seed + (uint64_t)s);
    }
}

/* p.dbias (fuzz_input.h, FZ_DBIAS_FIELDS): shaped as the bias is decoded (shape, before its size
 * override), of the accumulation type, with the view fields of its own. */
static void dbias_view(fz_case *c, const int64_t shape[4], fa_dtype accumulation)
{
    const fz_view_bytes *vb = &c->in.dbias_view;
    fa_tensor *t = &c->dbias;
    int64_t sz[4] = {shape[0], shape[1], shape[2], shape[3]};
    if (vb->size_field >= 0xE0 && vb->size_field % 5 != 0)
        sz[vb->size_field % 5 - 1] = fz_sat_mul(vb->size_value, (int64_t)1 << (16 * (vb->size_scale % 4)));
    t->dtype = vb->dtype_override >= 0xF0 ? dtype_table[vb->dtype_override % 8] : accumulation;
    t->batch = sz[0], t->heads = sz[1], t->seq = sz[2], t->dim = sz[3];
    c->dbias_layout = c->in.dbias.dbias < 0xC0 || vb->layout >= 0xF8 ? L_NULL : vb->layout % 9;
    if (c->dbias_layout != L_NULL) decode_strides_of(vb, t, c->dbias_layout);
}

/* Its own region, after every other (so an input without dbias keeps its pool as it was). */
static int64_t dbias_region(fz_case *c, int64_t cursor, int64_t gap)
{
    const fz_view_bytes *vb = &c->in.dbias_view;
    const int place = vb->place < 0xC0 ? 10 : vb->place % 11;
    const int64_t es = c->dtype == FA_F64 ? 8 : 4;
    c->dbias_own = c->dbias_layout != L_NULL && place == 10;
    c->dbias_base = 0;
    if (!c->dbias_own) return cursor;
    const int64_t skew = vb->place >= 0xC0 ? 1 + (vb->shift & 3) : 0; /* misaligned */
    cursor += gap;
    c->dbias_base = cursor + skew;
    return cursor + (region_bytes(&c->dbias) + skew + es - 1) / es * es;
}

/* dbias placed on the region of view 0..7 or the bias + shift elements (clamped, aligned), or with
 * NULL data; then its data pointer. */
static void dbias_place(fz_case *c, int64_t es)
{
    const fz_view_bytes *vb = &c->in.dbias_view;
    const int place = vb->place < 0xC0 ? 10 : vb->place % 11;
    if (!c->dbias_own && c->dbias_layout != L_NULL && place == 9) c->dbias_base = -1;
    if (!c->dbias_own && c->dbias_layout != L_NULL && place <= FZ_BIAS) {
        int64_t at = fz_sat_add(c->own[place] ? c->base[place] : 0, (int64_t)vb->shift * es);
        at = at < 0 ? 0 : (at > (int64_t)c->pool_bytes ? (int64_t)c->pool_bytes / es * es : at);
        c->dbias_base = at - at % es;
    }
}

static void describe_case(const fz_case *c)
{
    const fz_input *in = &c->in;
    int used = snprintf(g_case, sizeof g_case,
                        "dtype=%d/%d B=%lld Hq=%lld Hkv=%lld Nq=%lld Nk=%lld D=%lld Dv=%lld ctx=%d "
                        "calls=0x%x pool=%zu layouts",
                        (int)c->dtype, (int)c->view[FZ_K].dtype, (long long)c->B, (long long)c->Hq,
                        (long long)c->Hkv, (long long)c->Nq, (long long)c->Nk, (long long)c->D,
                        (long long)c->Dv, in->ctx % 10, in->calls, c->pool_bytes);
    for (int i = 0; i < FZ_ALL_VIEWS && used > 0 && (size_t)used < sizeof g_case; i++)
        used += snprintf(g_case + used, sizeof g_case - (size_t)used, " %s@%lld", layout_name[c->layout[i]],
                         (long long)c->base[i]);
    const fa_params *p = &c->params;
    const fa_tensor *b = &c->view[FZ_BIAS];
    if (used > 0 && (size_t)used < sizeof g_case)
        used += snprintf(g_case + used, sizeof g_case - (size_t)used,
                         " | causal=%d window=%lld/%lld softcap=%g bias=%s[%lld][%lld][%lld][%lld] "
                         "arrays@%lld/%lld/%lld%s",
                         (int)p->causal, (long long)p->window_left, (long long)p->window_right, p->softcap,
                         c->layout[FZ_BIAS] == L_NULL ? "none" : "", (long long)b->batch, (long long)b->heads,
                         (long long)b->seq, (long long)b->dim, (long long)c->array_base[0],
                         (long long)c->array_base[1], (long long)c->array_base[2],
                         c->params_null ? " p=NULL" : "");
    if (used > 0 && (size_t)used < sizeof g_case)
        used += fz_seqs_describe(c, g_case + used, sizeof g_case - (size_t)used);
    if (used > 0 && (size_t)used < sizeof g_case && (c->params.k_scale || c->params.v_scale))
        used += snprintf(g_case + used, sizeof g_case - (size_t)used,
                         " | scales %s[%lld][%lld][%lld][%lld]@%lld %s[%lld][%lld][%lld][%lld]@%lld",
                         c->params.k_scale ? layout_name[c->scale_layout[0]] : "none",
                         (long long)c->scale[0].batch, (long long)c->scale[0].heads,
                         (long long)c->scale[0].seq, (long long)c->scale[0].dim, (long long)c->scale_base[0],
                         c->params.v_scale ? layout_name[c->scale_layout[1]] : "none",
                         (long long)c->scale[1].batch, (long long)c->scale[1].heads,
                         (long long)c->scale[1].seq, (long long)c->scale[1].dim, (long long)c->scale_base[1]);
    if (used > 0 && (size_t)used < sizeof g_case && c->params.dbias)
        used +=
            snprintf(g_case + used, sizeof g_case - (size_t)used, " | dbias %s[%lld][%lld][%lld][%lld]@%lld",
                     layout_name[c->dbias_layout], (long long)c->dbias.batch, (long long)c->dbias.heads,
                     (long long)c->dbias.seq, (long long)c->dbias.dim, (long long)c->dbias_base);
    if (used > 0 && (size_t)used < sizeof g_case && c->mg.on)
        snprintf(g_case + used, sizeof g_case - (size_t)used, " | merge n=%d%s%s", c->mg.n,
                 c->mg.outs_null ? " outs=NULL" : "", c->mg.lses_null ? " lses=NULL" : "");
}

/* Builds every view in the pool. */
static void decode_case(fz_case *c, const uint8_t *data, size_t size)
{
    memset(c, 0, sizeof *c);
    fz_decode(&c->in, data, size);
    const fz_input *in = &c->in;
    c->dtype = in->dtype < 0xC0 ? ((in->dtype & 1) ? FA_F64 : FA_F32) : dtype_table[in->dtype % 8];
    static const double amps[4] = {0.5, 1.0, 2.0, 4.0};
    c->amp = amps[in->amp % 4];
    decode_shapes(c);
    decode_params(c);

    const int bias_bcast = in->extras & 7;
    const int64_t shape[FZ_ALL_VIEWS][4] = {
        {c->B, c->Hq, c->Nq, c->D},
        {c->B, c->Hkv, c->Nk, c->D},
        {c->B, c->Hkv, c->Nk, c->Dv},
        {c->B, c->Hq, c->Nq, c->Dv},
        {c->B, c->Hq, c->Nq, c->Dv},
        {c->B, c->Hq, c->Nq, c->D},
        {c->B, c->Hkv, c->Nk, c->D},
        {c->B, c->Hkv, c->Nk, c->Dv},
        {bias_bcast & 1 ? 1 : c->B, bias_bcast & 2 ? 1 : c->Hq, bias_bcast & 4 ? 1 : c->Nq, c->Nk}};
    int64_t shape_of[FZ_ALL_VIEWS][4];
    memcpy(shape_of, shape, sizeof shape);
    /* dtypes before overrides: q's group the call's, k's group kv_dtype's, the bias the
     * accumulation type (flashattn.h, fa_forward) */
    const fa_dtype kv_dt = in->dtypes.kv_dtype >= 0xC0 ? dtype_table[in->dtypes.kv_dtype % 8] : c->dtype;
    fa_dtype group_dtype[FZ_ALL_VIEWS] = {c->dtype, kv_dt,    kv_dt,
                                          c->dtype, c->dtype, c->dtype,
                                          kv_dt,    kv_dt,    c->dtype == FA_F64 ? FA_F64 : FA_F32};
    const int scales_on = quant_dtypes(in, c->dtype, group_dtype);
    if (fz_seqs_wanted(in, NULL)) fz_seqs_shapes(c, shape_of);
    if (fz_merge_wanted(in)) /* the parts: shaped like out */
        for (int i = FZ_DOUT; i <= FZ_DV; i++) memcpy(shape_of[i], shape_of[FZ_OUT], sizeof shape_of[FZ_OUT]);
    for (int i = 0; i < FZ_ALL_VIEWS; i++) {
        const fz_view_bytes *vb = i == FZ_BIAS ? &in->bias : &in->view[i];
        fa_tensor *t = &c->view[i];
        int64_t sz[4] = {shape_of[i][0], shape_of[i][1], shape_of[i][2], shape_of[i][3]};
        if (vb->size_field >= 0xE0 && vb->size_field % 5 != 0)
            sz[vb->size_field % 5 - 1] =
                fz_sat_mul(vb->size_value, (int64_t)1 << (16 * (vb->size_scale % 4)));
        t->dtype = vb->dtype_override >= 0xF0 ? dtype_table[vb->dtype_override % 8] : group_dtype[i];
        t->batch = sz[0], t->heads = sz[1], t->seq = sz[2], t->dim = sz[3];
        c->layout[i] = vb->layout >= 0xF8 || (i == FZ_BIAS && in->extras < 0xA0) ? L_NULL : vb->layout % 9;
        if (c->layout[i] != L_NULL) decode_strides(c, i);
    }

    /* Regions, one after another with `gap` elements between them. */
    const int64_t es = c->dtype == FA_F64 ? 8 : 4, gap = (in->gap % 17) * es;
    int64_t cursor = 0, group_bytes[2] = {pack_group(c, FZ_Q), pack_group(c, FZ_DQ)};
    for (int i = 0; i < FZ_ALL_VIEWS; i++) {
        const fz_view_bytes *vb = i == FZ_BIAS ? &in->bias : &in->view[i];
        int place = vb->place < 0xC0 ? 9 : vb->place % 10; /* 8: data NULL, for the bias too */
        int grouped =
            (i >= FZ_Q && i <= FZ_V && group_bytes[0]) || (i >= FZ_DQ && i <= FZ_DV && group_bytes[1]);
        c->own[i] = c->layout[i] != L_NULL && (grouped || place == 9 || (place == i && i != FZ_BIAS));
        c->base[i] = 0;
        if (!c->own[i] || (grouped && i != FZ_Q && i != FZ_DQ)) continue;
        int64_t bytes = grouped ? group_bytes[i == FZ_Q ? 0 : 1] : region_bytes(&c->view[i]);
        int64_t skew = !grouped && vb->place >= 0xC0 && place == 9 ? 1 + (vb->shift & 3) : 0;
        cursor += gap;
        c->base[i] = cursor + skew; /* skew: data not aligned to its element size */
        cursor += (bytes + skew + es - 1) / es * es;
    }
    /* The arrays' own regions: Hq floats, 1..3 bytes in when misaligned. */
    int64_t array_own[FZ_ARRAYS];
    const int64_t heads_bytes = c->Hq * (int64_t)sizeof(float);
    for (int a = 0; a < FZ_ARRAYS; a++) {
        const fz_heads_bytes *hb = &in->array[a];
        c->array_base[a] = array_own[a] = -1;
        if (hb->mode < 0x80 || hb->mode % 4 == 2) continue;
        int64_t skew = hb->mode % 4 == 3 ? 1 + (hb->shift & 0x7fff) % 3 : 0;
        cursor += gap;
        c->array_base[a] = array_own[a] = cursor + skew;
        cursor += (heads_bytes + skew + es - 1) / es * es;
    }
    for (int g = 0; g < 2; g++) { /* the other two slices of a packed group */
        int first = g == 0 ? FZ_Q : FZ_DQ;
        if (!group_bytes[g]) continue;
        int64_t e = (int64_t)fz_dtype_bytes(c->view[first].dtype);
        c->base[first + 1] = c->base[first] + c->view[first].heads * c->view[first].dim * e;
        c->base[first + 2] = c->base[first + 1] + c->view[first + 1].heads * c->view[first + 1].dim * e;
    }
    size_t lse_bytes = fz_lse_bytes(&c->view[FZ_Q]);
    if (lse_bytes > (size_t)FZ_REGION_MAX) lse_bytes = (size_t)FZ_WILD_REGION;
    c->lse_base = -1;
    if (in->lse_mode < 0xC0) {
        cursor += gap;
        c->lse_base = cursor;
        cursor += ((int64_t)lse_bytes + es - 1) / es * es;
    }
    cursor = fz_seqs_regions(c, cursor, gap);
    cursor = fz_merge_regions(c, cursor, gap);
    scale_views(c, scales_on); /* shaped like k and v as decoded above */
    cursor = scale_regions(c, cursor, gap);
    dbias_view(c, shape_of[FZ_BIAS], group_dtype[FZ_BIAS]);
    cursor = dbias_region(c, cursor, gap);
    cursor += gap;
    c->pool_bytes = (size_t)(cursor > 0 ? cursor : es);

    /* Views placed on another view's region, clamped to the pool. */
    for (int i = 0; i < FZ_ALL_VIEWS; i++) {
        const fz_view_bytes *vb = i == FZ_BIAS ? &in->bias : &in->view[i];
        int place = vb->place < 0xC0 ? 9 : vb->place % 10;
        if (c->own[i] || c->layout[i] == L_NULL) continue;
        if (place == 8) {
            c->base[i] = -1;
            continue;
        }
        int64_t at = c->own[place] ? c->base[place] : 0;
        at = fz_sat_add(at, (int64_t)vb->shift * es);
        c->base[i] = at < 0 ? 0 : (at > (int64_t)c->pool_bytes ? (int64_t)c->pool_bytes / es * es : at);
        c->base[i] -= c->base[i] % es; /* the shift is in elements: keep placed views aligned */
    }
    scale_places(c, es);
    dbias_place(c, es);
    if (in->lse_mode >= 0xC0 && in->lse_mode % 4 != 0) {
        int j = (in->lse_mode >> 2) % 8; /* lse_mode % 4 == 3: a shift in bytes, maybe misaligned */
        int64_t at =
            fz_sat_add(c->own[j] ? c->base[j] : 0, (int64_t)in->lse_shift * (in->lse_mode % 4 == 3 ? 1 : es));
        c->lse_base = at < 0 ? 0 : (at > (int64_t)c->pool_bytes ? (int64_t)c->pool_bytes / es * es : at);
    }
    /* Arrays placed on a view's region or the lse, shifted by whole floats, clamped to the pool. */
    for (int a = 0; a < FZ_ARRAYS; a++) {
        const fz_heads_bytes *hb = &in->array[a];
        if (hb->mode < 0x80 || hb->mode % 4 != 2) continue;
        int j = (hb->mode >> 2) % 10;
        int64_t at = j == 9 ? (c->lse_base >= 0 ? c->lse_base : 0) : c->own[j] ? c->base[j] : 0;
        at = fz_sat_add(at, (int64_t)hb->shift * (int64_t)sizeof(float));
        at = at < 0 ? 0 : (at > (int64_t)c->pool_bytes ? (int64_t)c->pool_bytes : at);
        c->array_base[a] = at - at % (int64_t)sizeof(float);
    }

    c->pool = malloc(c->pool_bytes);
    c->snap = malloc(c->pool_bytes);
    if (!c->pool || !c->snap) abort();
    fill_pool(c, group_bytes);
    for (int i = 0; i < FZ_ALL_VIEWS; i++) c->view[i].data = c->base[i] < 0 ? NULL : c->pool + c->base[i];
    fill_arrays(c, array_own);
    fill_scales(c);
    c->dbias.data = c->dbias_base < 0 ? NULL : c->pool + c->dbias_base;
    fz_pool pool = {c->pool, c->pool_bytes};
    write_specials(c, &pool);
    /* the score modifiers' pointers into the pool */
    float *array[FZ_ARRAYS];
    for (int a = 0; a < FZ_ARRAYS; a++)
        array[a] = c->array_base[a] < 0 ? NULL : (float *)(void *)(c->pool + c->array_base[a]);
    c->params.alibi_slopes = array[FZ_SLOPES];
    c->params.sinks = array[FZ_SINKS];
    c->params.dsinks = array[FZ_DSINKS];
    c->params.bias = c->layout[FZ_BIAS] == L_NULL ? NULL : &c->view[FZ_BIAS];
    c->params.dbias = c->dbias_layout == L_NULL ? NULL : &c->dbias;
    c->params.k_scale = c->scale_layout[0] == L_NULL ? NULL : &c->scale[0];
    c->params.v_scale = c->scale_layout[1] == L_NULL ? NULL : &c->scale[1];
    c->lse_head_stride = c->view[FZ_Q].seq;
    fz_seqs_write(c); /* after the specials: they do not land on the arrays */
    fz_merge_write(c);
    describe_case(c);
}

/* ---- the context of the call ---------------------------------------------------------------- */

static fa_context *fresh_context(fz_case *c, int threads_flip, int *threads)
{
    const fz_input *in = &c->in;
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = in->fresh_threads < 0xF0 ? 1 + (in->fresh_threads + threads_flip) % 2
                                             : (int)(int8_t)(in->fresh_threads - 0x100);
    o.block_q = in->fresh_bq < 0xF0 ? in->fresh_bq % 130 : (int)(int8_t)(in->fresh_bq - 0x100);
    o.block_k = in->fresh_bk < 0xF0 ? in->fresh_bk % 130 : (int)(int8_t)(in->fresh_bk - 0x100);
    o.bind = in->fresh_bind < 0xC0 ? (fa_bind)(in->fresh_bind % 4)
                                   : (fa_bind)(int)(int8_t)(in->fresh_bind - 0x100);
    static const char *const isas[5] = {NULL, "ref", "avx2", "avx512", "bogus"};
    const char *isa = isas[in->fresh_isa % 5];
    const int opts_null = in->fresh_isa >= 0xF0, out_null = in->fresh_bind == 0xFF;
    if (opts_null) o = (fa_context_opts)FA_CONTEXT_OPTS_INIT;

    /* opts resized as the input asks (fuzz_struct.c): read by the header's rule after ctx's NULL check */
    const fa_context_opts *given = opts_null ? NULL : &o;
    if (given && fz_abi_target(c) == FZ_ABI_OPTS) given = fz_abi_resize(in, &o, sizeof o, &c->abi);
    const fa_status read =
        given ? fz_abi_read_status(given, FA_CONTEXT_OPTS_SIZE_MIN, sizeof(fa_context_opts)) : FA_OK;

    fa_context *sentinel = (fa_context *)&c->in, *ctx = sentinel;
    fa_status st = create_on(out_null ? NULL : &ctx, given, isa);
    fa_status want_one = FA_OK;
    if (out_null)
        want_one = FA_ERR_NULL;
    else if (read != FA_OK)
        want_one = read;
    else if (o.num_threads < 0 || o.block_q < 0 || o.block_k < 0 || o.bind < FA_BIND_AUTO ||
             o.bind > FA_BIND_SPREAD)
        want_one = FA_ERR_ARG;
    else if (isa && strcmp(isa, "bogus") == 0)
        want_one = FA_ERR_ARG;
    if (want_one == FA_OK && isa) /* a table the build or the CPU lacks */
        FZ_CHECK(st == FA_OK || st == FA_ERR_UNSUPPORTED, "fa_context_create(isa %s): %s", isa,
                 fa_status_str(st));
    else
        FZ_CHECK(st == want_one, "fa_context_create: %s, expected %s", fa_status_str(st),
                 fa_status_str(want_one));
    if (st != FA_OK) {
        FZ_CHECK(ctx == sentinel, "fa_context_create wrote *ctx on failure (%s)", fa_status_str(st));
        return NULL;
    }
    fa_stats s = FA_STATS_INIT;
    FZ_CHECK(fa_context_stats(ctx, &s) == FA_OK, "stats of a new context");
    FZ_CHECK(s.num_threads == (o.num_threads > 0 ? o.num_threads : s.num_threads) && s.num_threads >= 1,
             "new context: %d threads, asked %d", s.num_threads, o.num_threads);
    FZ_CHECK(s.block_q == o.block_q && s.block_k == o.block_k, "new context: blocks %d/%d, configured %d/%d",
             s.block_q, s.block_k, o.block_q, o.block_k);
    FZ_CHECK(s.isa && (!isa || strcmp(s.isa, isa) == 0), "new context: table %s, asked %s",
             s.isa ? s.isa : "(null)", isa ? isa : "auto");
    FZ_CHECK(s.bound_threads == 0 && s.scratch_peak == 0 && s.scratch_capacity == 0,
             "new context: stats not zero");
    *threads = s.num_threads;
    c->ctx_bq = o.block_q;
    c->ctx_bk = o.block_k;
    return ctx;
}

static void choose_context(fz_case *c)
{
    const int sel = c->in.ctx % 10, twin_wanted = c->in.calls & 2;
    c->ctx_threads = 0;
    if (sel == 0) {
        c->ctx = NULL;
        c->twin = twin_wanted ? premade_ctx[0] : NULL; /* automatic blocks, best table */
    } else if (sel <= 8) {
        c->ctx = premade_ctx[sel - 1];
        c->ctx_threads = premade[sel - 1].threads;
        c->ctx_bq = premade[sel - 1].block_q;
        c->ctx_bk = premade[sel - 1].block_k;
        c->twin = twin_wanted ? premade_ctx[premade[sel - 1].twin] : NULL;
    } else {
        int threads = 0, other = 0;
        c->ctx = c->fresh[0] = fresh_context(c, 0, &threads);
        c->ctx_threads = threads;
        if (c->ctx && twin_wanted) c->twin = c->fresh[1] = fresh_context(c, 1, &other);
    }
}

/* ---- one call, checked ------------------------------------------------------------------------ */

/* An unknown causal mode: FA_ERR_ARG, before anything is looked at (the sequences' arrays, which
 * the library reads in its SHAPE step, among them). */
static void poison_arg(fz_call *call, fa_params *pcopy)
{
    *pcopy = call->p ? *call->p : (fa_params)FA_PARAMS_INIT;
    pcopy->struct_size = sizeof *pcopy; /* call->p may be larger: its bytes past ours are zero */
    pcopy->causal = (fa_causal)99;
    call->p = pcopy;
}

/* Makes a call that the model does not already refuse certain to be refused (see the top). */
static void poison(fz_call *call, fa_tensor *copy, fa_params *pcopy)
{
    if (call->convert) { /* no src: FA_ERR_NULL, before anything else */
        call->t[FZ_Q] = NULL;
        return;
    }
    if (call->merge) { /* the merged lse over the first part's: FA_ERR_ALIAS, after the strides */
        if (call->outs && call->lses && call->parts >= 1 && call->lses[0] &&
            fz_lse_bytes(call->t[FZ_OUT]) > 0)
            call->lse = call->lses[0];
        else
            call->parts = 0; /* FA_ERR_ARG */
        return;
    }
    if (!call->backward) {
        const fa_tensor *q = call->t[FZ_Q];
        if (!fz_view_empty(q) && fz_lse_bytes(q) > 0) {
            call->lse = q->data;
            return;
        }
    } else {
        for (int i = FZ_DQ; i <= FZ_DV; i++) {
            const fa_tensor *in = call->t[i - FZ_DQ];
            if (!fz_view_empty(call->t[i])) {
                copy[i] = *call->t[i];
                copy[i].data = in->data;
                call->t[i] = &copy[i];
                return;
            }
        }
    }
    const fa_tensor *q = call->t[FZ_Q];
    if (q && q->heads > 0) { /* sinks not aligned to float: FA_ERR_STRIDE, after the views' strides */
        *pcopy = call->p ? *call->p : (fa_params)FA_PARAMS_INIT;
        pcopy->struct_size = sizeof *pcopy; /* call->p may be larger: its bytes past ours are zero */
        pcopy->sinks = (const float *)(const void *)((const unsigned char *)q + 1);
        call->p = pcopy;
    } else
        poison_arg(call, pcopy);
}

static fa_status invoke_forward(fa_context *ctx, const fz_call *c)
{
    return fa_forward(ctx, c->p, c->t[FZ_Q], c->t[FZ_K], c->t[FZ_V], c->t[FZ_OUT], (void *)(uintptr_t)c->lse);
}

static fa_status invoke_backward(fa_context *ctx, const fz_call *c)
{
    return fa_backward(ctx, c->p, c->t[FZ_Q], c->t[FZ_K], c->t[FZ_V], c->t[FZ_OUT], c->t[FZ_DOUT], c->lse,
                       c->t[FZ_DQ], c->t[FZ_DK], c->t[FZ_DV]);
}

/* Runs one call with every generic check; returns its status (after poisoning, if it was). */
fa_status fz_run_call(fz_case *c, fz_call call, fz_invoke invoke, const char *name)
{
    fz_pool pool = {c->pool, c->pool_bytes};
    fa_tensor copy[FZ_VIEWS];
    fa_params pcopy;
    fz_model m;
    fz_model_call(&call, &pool, &m);
    if (m.reads_outside) { /* more sequences than the arrays hold: refused before they are read */
        fz_model_free(&m);
        poison_arg(&call, &pcopy);
        fz_model_call(&call, &pool, &m);
        FZ_CHECK(m.refused && !m.reads_outside, "%s: poisoned call not certainly refused", name);
    }
    if (!m.refused && !(m.all_fit && m.work <= FZ_WORK_MAX)) {
        fz_model_free(&m);
        poison(&call, copy, &pcopy);
        fz_model_call(&call, &pool, &m);
        FZ_CHECK(m.refused, "%s: poisoned call not certainly refused", name);
    }
    memcpy(c->snap, c->pool, c->pool_bytes);
    fa_status st = invoke(c->ctx, &call);
    char allowed[160];
    fz_model_describe(&m, allowed, sizeof allowed);
    FZ_CHECK(fz_status_allowed(&m, st), "%s returned %d (%s); allowed: %s [%s]", name, (int)st,
             fa_status_str(st), allowed, m.why);
    FZ_CHECK(fa_status_str(st) != NULL, "fa_status_str(%d) is NULL", (int)st);
    if (st != FA_OK) {
        FZ_CHECK(memcmp(c->snap, c->pool, c->pool_bytes) == 0, "%s refused (%s) but changed the pool", name,
                 fa_status_str(st));
        fz_model_free(&m);
        return st;
    }
    /* Success: only the outputs' elements may have changed. */
    FZ_CHECK(m.outputs_mapped, "%s: an output is not mapped", name);
    for (size_t u = 0; u < m.units; u++) {
        if (m.map[u] & m.out_bits) continue;
        FZ_CHECK(memcmp(c->snap + u * m.unit, c->pool + u * m.unit, m.unit) == 0,
                 "%s changed pool byte %zu, which belongs to no output", name, u * m.unit);
    }
    for (size_t b = m.units * m.unit; b < c->pool_bytes; b++)
        FZ_CHECK(c->snap[b] == c->pool[b], "%s changed tail byte %zu", name, b);
    if (c->twin) { /* same bytes from the other thread count */
        unsigned char *first = malloc(c->pool_bytes);
        if (!first) abort();
        memcpy(first, c->pool, c->pool_bytes);
        fa_status st2 = invoke(c->twin, &call);
        FZ_CHECK(st2 == FA_OK, "%s on the twin context: %s", name, fa_status_str(st2));
        FZ_CHECK(memcmp(first, c->pool, c->pool_bytes) == 0,
                 "%s: the twin context (other thread count) wrote other bytes", name);
        free(first);
    }
    fz_model_free(&m);
    return st;
}

static void check_stats(const fz_case *c, int blocks_known)
{
    if (!c->ctx) return;
    fa_stats s = FA_STATS_INIT;
    FZ_CHECK(fa_context_stats(c->ctx, &s) == FA_OK, "fa_context_stats");
    FZ_CHECK(c->ctx_threads == 0 || s.num_threads == c->ctx_threads, "stats: %d threads, context has %d",
             s.num_threads, c->ctx_threads);
    FZ_CHECK(s.isa && s.isa[0], "stats: no kernel table name");
    FZ_CHECK(s.scratch_peak <= s.scratch_capacity, "stats: peak %zu > capacity %zu", s.scratch_peak,
             s.scratch_capacity);
    FZ_CHECK(s.bound_threads >= 0 && s.bound_threads <= s.num_threads, "stats: %d bound of %d",
             s.bound_threads, s.num_threads);
    /* The last call that succeeded used the configured blocks, cut to its Nq and Nk. */
    const int64_t nq = c->view[FZ_Q].seq, nk = c->view[FZ_K].seq;
    if (blocks_known && c->ctx_bq > 0) {
        int64_t want = nq > 0 && nq < c->ctx_bq ? nq : c->ctx_bq;
        FZ_CHECK(s.block_q == want, "stats: block_q %d, configured %d, Nq %lld", s.block_q, c->ctx_bq,
                 (long long)nq);
    }
    if (blocks_known && c->ctx_bk > 0) {
        int64_t want = nk > 0 && nk < c->ctx_bk ? nk : c->ctx_bk;
        FZ_CHECK(s.block_k == want, "stats: block_k %d, configured %d, Nk %lld", s.block_k, c->ctx_bk,
                 (long long)nk);
    }
    FZ_CHECK(fa_context_stats(NULL, &s) == FA_ERR_NULL && fa_context_stats(c->ctx, NULL) == FA_ERR_NULL,
             "fa_context_stats with NULL");
    fa_context_reset_stats(c->ctx);
    fa_context_reset_stats(NULL);
    FZ_CHECK(fa_context_stats(c->ctx, &s) == FA_OK && s.scratch_peak == 0 && s.bound_threads == 0,
             "stats after reset: peak %zu, bound %d", s.scratch_peak, s.bound_threads);
}

/* The values of a successful backward of a dense batch, dsinks among them. */
static void check_backward(const fz_case *c, const fa_params *p, const void *lse)
{
    if (!fz_check_backward_values(c, p) || !p || !p->sinks || !p->dsinks || !lse) return;
    const int64_t heads = c->view[FZ_Q].heads;
    double *sum = calloc((size_t)(3 * (heads > 0 ? heads : 1)), sizeof *sum);
    if (!sum) abort();
    fz_dsinks_terms(c, p, lse, sum, sum + heads, sum + 2 * heads);
    fz_dsinks_compare(p, heads, c->view[FZ_Q].dtype, sum, sum + heads, sum + 2 * heads);
    free(sum);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    make_contexts();
    fz_case *c = calloc(1, sizeof *c);
    if (!c) abort();
    decode_case(c, data, size);
    choose_context(c);
    char version[32];
    snprintf(version, sizeof version, "%d.%d.%d", FLASHATTN_VERSION_MAJOR, FLASHATTN_VERSION_MINOR,
             FLASHATTN_VERSION_PATCH);
    FZ_CHECK(fa_version() != NULL && strcmp(fa_version(), version) == 0, "fa_version");
    FZ_CHECK(fa_status_str((fa_status)(int)c->in.seed) != NULL, "fa_status_str of any value");

    /* p as the value checks read it, and as the calls pass it: resized, or with its sequences
     * resized, as the input asks (fuzz_struct.c) */
    const fa_params *p = c->params_null ? NULL : &c->params, *p_call = p;
    fa_params with_seqs;
    if (fz_abi_target(c) == FZ_ABI_SEQS) {
        with_seqs = *p;
        with_seqs.seqs = fz_abi_resize(&c->in, p->seqs, sizeof *p->seqs, &c->abi);
        p_call = &with_seqs;
    } else if (fz_abi_target(c) == FZ_ABI_P)
        p_call = fz_abi_resize(&c->in, p, sizeof *p, &c->abi);
    const int seqs_call = p && p->seqs;
    const fa_tensor *t[FZ_VIEWS];
    for (int i = 0; i < FZ_VIEWS; i++) t[i] = c->layout[i] == L_NULL ? NULL : &c->view[i];
    void *lse = c->lse_base < 0 ? NULL : c->pool + c->lse_base;
    fa_status fwd = FA_ERR_ARG;
    int ok_calls = 0;
    const char *fwd_said = "not called", *bwd_said = "not called", *merge_said = "not called";

    if (!(c->in.calls & 8)) {
        fz_call call = {.backward = 0, .p = p_call, .n = 4, .lse = lse, .lse_out = 1};
        for (int i = 0; i < 4; i++) {
            call.t[i] = t[i];
            call.raw[i] = c->layout[i] == L_RAW;
        }
        call.is_out[FZ_OUT] = 1;
        fwd = fz_run_call(c, call, invoke_forward, "fa_forward");
        fwd_said = fa_status_str(fwd);
        if (fwd == FA_OK) {
            ok_calls++;
            /* a quantized cache is checked as the f32 cache it dequantizes to (flashattn.h) */
            void *deq = NULL;
            fz_case *wide = fz_dtype_quantized(c->view[FZ_K].dtype) ? fz_dequantized(c, p, &deq) : NULL;
            const fz_case *vc = fz_dtype_quantized(c->view[FZ_K].dtype) ? wide : c;
            if (vc && seqs_call)
                fz_seqs_check_forward(vc, p, lse);
            else if (vc)
                fz_check_forward_values(vc, p, lse);
            free(wide);
            free(deq);
        }
    }
    /* (with fa_merge the gradients' views are its parts: no backward) */
    if ((c->in.calls & 1) && (fwd == FA_OK || (c->in.calls & 12)) && !c->mg.on) {
        fz_call call = {.backward = 1, .p = p_call, .n = 8, .lse = lse, .lse_out = 0};
        for (int i = 0; i < 8; i++) {
            call.t[i] = t[i];
            call.raw[i] = c->layout[i] == L_RAW;
            call.is_out[i] = i >= FZ_DQ;
        }
        call.dbias_raw = c->dbias_layout == L_RAW;
        fa_status bwd = fz_run_call(c, call, invoke_backward, "fa_backward");
        bwd_said = fa_status_str(bwd);
        if (bwd == FA_OK) {
            ok_calls++;
            if (fwd == FA_OK && seqs_call)
                fz_seqs_check_backward(c, p, lse);
            else if (fwd == FA_OK)
                check_backward(c, p, lse);
        }
    }
    if (c->mg.on) fz_merge_run(c, &merge_said);
    const char *convert_said = "not called";
    if (c->in.convert.convert >= 0xC0) fz_convert_run(c, &convert_said);
    if (verbose)
        fprintf(stderr, "  %s\n  forward: %s, backward: %s, merge: %s, convert: %s\n", g_case, fwd_said,
                bwd_said, merge_said, convert_said);
    /* the header does not say which blocks a call with sequences, or fa_merge, reports */
    check_stats(c, ok_calls > 0 && !seqs_call && !c->mg.on);
    fa_context_destroy(c->fresh[0]);
    fa_context_destroy(c->fresh[1]);
    fz_merge_free(c);
    free(c->pool);
    free(c->snap);
    free(c);
    return 0;
}
