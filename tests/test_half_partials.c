/* SPDX-License-Identifier: BSD-3-Clause */
/* Partial results in f32 under bf16 or f16 q, k, v (include/flashattn.h, fa_forward and fa_backward,
 * "dtype"): what a sequence split over calls or MPI ranks sums or merges before one final rounding.
 * The forward's FA_F32 out holds the f32 values the half out is rounded from, so rounding them gives
 * the half call's bytes, with the same lse; the backward's FA_F32 dq, dk and dv likewise give the half
 * backward's gradients, beside the same bytes of dsinks and dbias (of the accumulation type either
 * way). On every table (the dot-product units' calls included), dense, grouped,
 * split-KV and packed, at every thread count; where the call widens (f16 always, bf16 off the dot
 * units) it is bit for bit the FA_F32 call on the widened inputs. No other mixed dtype is taken:
 * refused with FA_ERR_DTYPE naming the tensor, nothing written. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half_util.h"

enum { THREAD_COUNTS = 2 };
static const int thread_counts[THREAD_COUNTS] = {1, 3};

typedef struct {
    int64_t batch, q_heads, kv_heads, q_len, kv_len, dim, dim_v;
    fa_causal causal;
    int bshd;
} partial_case;

static const partial_case cases[] = {
    {2, 4, 2, 100, 110, 32, 24, FA_CAUSAL_NONE, 0},         /* GQA, more items than threads */
    {1, 4, 1, 110, 100, 32, 24, FA_CAUSAL_TOP_LEFT, 1},     /* MQA, token-major */
    {1, 1, 1, 300, 300, 16, 16, FA_CAUSAL_BOTTOM_RIGHT, 0}, /* one head cut by blocks */
    {1, 4, 2, 1, 2000, 64, 48, FA_CAUSAL_NONE, 0},          /* a decode step: the keys split */
    {1, 8, 1, 3, 500, 64, 64, FA_CAUSAL_BOTTOM_RIGHT, 0},   /* a grouped decode step, 24 rows */
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static fa_context *context_of(int threads)
{
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = threads;
    o.bind = FA_BIND_NONE;
    fa_context *ctx = NULL;
    cr_assert_eq(fa_context_create(&ctx, &o), FA_OK, "%d threads: %s", threads, fa_last_error());
    return ctx;
}

/* An FA_F32 view shaped like t, contiguous [B][H][S][D], in a buffer the caller frees. */
static fa_tensor f32_like(const fa_tensor *t, float **storage)
{
    *storage = malloc(sizeof(float) * (size_t)(hu_numel(t) + 1));
    cr_assert(*storage != NULL);
    memset(*storage, 0xA5, sizeof(float) * (size_t)(hu_numel(t) + 1));
    return fa_tensor_bhsd(*storage, FA_F32, t->batch, t->heads, t->seq, t->dim);
}

/* An FA_F32 copy of a half view's values (exact: every half value is a float). */
static fa_tensor widened(const fa_tensor *t, float **storage)
{
    fa_tensor w = f32_like(t, storage);
    double *vals = hu_view_copy(t);
    for (int64_t e = 0; e < hu_numel(&w); e++) (*storage)[e] = (float)vals[e];
    free(vals);
    return w;
}

/* What a check says of its problem: the shape, the pass, packed or not, threads and seed. */
static void describe(const kit_shape *s, const fa_params *p, const char *pass, int threads, uint64_t seed,
                     char *desc, size_t size)
{
    hu_desc(s, p, desc, size);
    size_t len = strlen(desc);
    snprintf(desc + len, size - len, "%s, %s, %d threads, seed %llu", p->seqs ? " packed" : "", pass, threads,
             (unsigned long long)seed);
}

/* Element (b, h, s, d) of an FA_F32 view made by f32_like. */
static float f32_at(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d)
{
    return ((const float *)t->data)[((b * t->heads + h) * t->seq + s) * t->dim + d];
}

/* 1 when every element of wide, rounded to half's dtype, has half's bytes; else the first
 * difference as "(b, h, s, d)". */
static int rounds_to(const fa_tensor *wide, const fa_tensor *half, char *where, size_t size)
{
    float *storage; /* 4 bytes an element: room for the half copy */
    f32_like(half, &storage);
    fa_tensor rounded = fa_tensor_bhsd(storage, half->dtype, half->batch, half->heads, half->seq, half->dim);
    int same = 1;
    for (int64_t b = 0; b < half->batch && same; b++)
        for (int64_t h = 0; h < half->heads && same; h++)
            for (int64_t s = 0; s < half->seq && same; s++)
                for (int64_t d = 0; d < half->dim && same; d++) {
                    kit_tensor_store(&rounded, b, h, s, d, (double)f32_at(wide, b, h, s, d));
                    if (hu_bits(&rounded, b, h, s, d) != hu_bits(half, b, h, s, d)) {
                        snprintf(where, size, "(%lld, %lld, %lld, %lld)", (long long)b, (long long)h,
                                 (long long)s, (long long)d);
                        same = 0;
                    }
                }
    free(storage);
    return same;
}

typedef struct {
    float *out, *lse;
    size_t out_bytes, lse_bytes;
} wide_result;

static void wide_free(wide_result *w)
{
    free(w->out), free(w->lse);
}

/* The f32-out call on pr's inputs (p with seqs or not), checked against pr's half call, already
 * in pr's out and lse: rounding gives its bytes, lse is the same. */
static wide_result rounds_to_half_call(fa_context *ctx, const fa_params *p, kit_problem *pr, const char *desc)
{
    wide_result w;
    fa_tensor wide = f32_like(&pr->t[KIT_OUT], &w.out);
    w.out_bytes = sizeof(float) * (size_t)hu_numel(&wide);
    w.lse_bytes = sizeof(float) * (size_t)(pr->shape.batch * pr->shape.q_heads * pr->shape.q_len);
    w.lse = malloc(w.lse_bytes + sizeof(float));
    cr_assert(w.lse != NULL);
    fa_status st = fa_forward(ctx, p, &pr->t[KIT_Q], &pr->t[KIT_K], &pr->t[KIT_V], &wide, w.lse);
    cr_assert_eq(st, FA_OK, "%s, f32 out: status %d (%s)", desc, st, fa_last_error());
    char where[128] = "";
    cr_expect(rounds_to(&wide, &pr->t[KIT_OUT], where, sizeof where),
              "%s: the f32 out rounded differs from the half call's out at %s", desc, where);
    cr_expect(memcmp(w.lse, pr->lse, w.lse_bytes) == 0, "%s: lse differs from the half call's", desc);
    return w;
}

/* The FA_F32 call on pr's inputs widened (exactly), with p: what a widening half call computes. */
static wide_result widened_f32_call(fa_context *ctx, const fa_params *p, kit_problem *pr, const char *desc)
{
    fa_tensor in[3];
    float *store[3];
    for (int x = 0; x < 3; x++) in[x] = widened(&pr->t[KIT_Q + x], &store[x]);
    wide_result w;
    fa_tensor out = f32_like(&pr->t[KIT_OUT], &w.out);
    w.out_bytes = sizeof(float) * (size_t)hu_numel(&out);
    w.lse_bytes = sizeof(float) * (size_t)(pr->shape.batch * pr->shape.q_heads * pr->shape.q_len);
    w.lse = malloc(w.lse_bytes + sizeof(float));
    cr_assert(w.lse != NULL);
    cr_assert_eq(fa_forward(ctx, p, &in[0], &in[1], &in[2], &out, w.lse), FA_OK, "%s: f32 call: %s", desc,
                 fa_last_error());
    for (int x = 0; x < 3; x++) free(store[x]);
    return w;
}

static int same_bytes(const wide_result *a, const wide_result *b)
{
    return memcmp(a->out, b->out, a->out_bytes) == 0 && memcmp(a->lse, b->lse, a->lse_bytes) == 0;
}

/* One problem at 1 and 3 threads: the f32 out rounds to the half call, is thread-invariant, and
 * where the call widens is the widened FA_F32 call. dot_rows: the query rows a head's item holds
 * (hu_on_dot_units). */
static void run_problem(const kit_shape *s, const fa_params *p, int64_t dot_rows, uint64_t seed)
{
    wide_result first = {0};
    for (int ti = 0; ti < THREAD_COUNTS; ti++) {
        fa_context *ctx = context_of(thread_counts[ti]);
        tu_rng rng = tu_rng_make(seed);
        kit_problem pr;
        hu_make(&pr, s, &rng, 2.5);
        char desc[400];
        describe(s, p, "forward", thread_counts[ti], seed, desc, sizeof desc);
        cr_assert_eq(hu_forward(ctx, p, &pr), FA_OK, "%s: half call: %s", desc, fa_last_error());
        wide_result w = rounds_to_half_call(ctx, p, &pr, desc);
        if (ti == 0) {
            first = w;
            if (!hu_on_dot_units(ctx, s->q_dtype, s->kv_dtype, s->dim, dot_rows)) {
                wide_result ref = widened_f32_call(ctx, p, &pr, desc);
                cr_expect(same_bytes(&w, &ref), "%s: differs from the FA_F32 call on the widened inputs",
                          desc);
                wide_free(&ref);
            }
        } else {
            cr_expect(same_bytes(&first, &w), "%s: differs from its 1-thread bytes", desc);
            wide_free(&w);
        }
        kit_problem_free(&pr);
        fa_context_destroy(ctx);
    }
    wide_free(&first);
}

/* f32 views shaped like dq, dk and dv, and their buffers. */
typedef struct {
    fa_tensor t[3];
    float *store[3];
} wide_grads;

static void wide_grads_free(wide_grads *g)
{
    for (int x = 0; x < 3; x++) free(g->store[x]);
}

static int same_grads(const wide_grads *a, const wide_grads *b)
{
    for (int x = 0; x < 3; x++)
        if (memcmp(a->store[x], b->store[x], sizeof(float) * (size_t)hu_numel(&a->t[x])) != 0) return 0;
    return 1;
}

/* fa_backward on q, k, v, out, dout (of any dtypes fa_backward takes) into f32 gradients. */
static wide_grads wide_backward(fa_context *ctx, const fa_params *p, const fa_tensor *in,
                                const kit_problem *pr, const char *desc)
{
    wide_grads g;
    for (int x = 0; x < 3; x++) g.t[x] = f32_like(&pr->t[KIT_DQ + x], &g.store[x]);
    fa_status st = fa_backward(ctx, p, &in[KIT_Q], &in[KIT_K], &in[KIT_V], &in[KIT_OUT], &in[KIT_DOUT],
                               pr->lse, &g.t[0], &g.t[1], &g.t[2]);
    cr_assert_eq(st, FA_OK, "%s, f32 gradients: status %d (%s)", desc, st, fa_last_error());
    return g;
}

/* The bytes of the backward's other outputs that p asks for, dsinks then dbias (a contiguous view),
 * copied into a buffer the caller frees: the next call's are compared with them. */
static unsigned char *sink_and_bias_grads(const fa_params *p, int64_t q_heads, size_t *bytes)
{
    size_t sinks = p->dsinks ? sizeof(float) * (size_t)q_heads : 0;
    size_t bias = p->dbias ? sizeof(float) * (size_t)hu_numel(p->dbias) : 0;
    unsigned char *copy = malloc(sinks + bias + 1);
    cr_assert(copy != NULL);
    if (sinks) memcpy(copy, p->dsinks, sinks);
    if (bias) memcpy(copy + sinks, p->dbias->data, bias);
    *bytes = sinks + bias;
    return copy;
}

/* Whether the backward just made wrote the dsinks and dbias bytes `want` holds. */
static int same_sink_and_bias_grads(const fa_params *p, int64_t q_heads, const unsigned char *want)
{
    size_t n;
    unsigned char *now = sink_and_bias_grads(p, q_heads, &n);
    int same = memcmp(now, want, n) == 0;
    free(now);
    return same;
}

/* The backward of one problem at 1 and 3 threads: its f32 dq, dk and dv round to the half
 * backward's, are thread-invariant, and where the backward widens are the FA_F32 backward's on the
 * widened q, k, v, out and dout. dsinks and dbias, which p may ask for, are the accumulation type's
 * whatever the gradients' dtype: the same bytes from the half and the f32-gradient calls, at every
 * thread count. */
static void run_backward_problem(const kit_shape *s, const fa_params *p, uint64_t seed)
{
    static const char *names[3] = {"dq", "dk", "dv"};
    wide_grads first = {0};
    unsigned char *first_extra = NULL;
    for (int ti = 0; ti < THREAD_COUNTS; ti++) {
        fa_context *ctx = context_of(thread_counts[ti]);
        tu_rng rng = tu_rng_make(seed);
        kit_problem pr;
        hu_make(&pr, s, &rng, 2.5);
        char desc[400];
        describe(s, p, "backward", thread_counts[ti], seed, desc, sizeof desc);
        cr_assert_eq(hu_forward(ctx, p, &pr), FA_OK, "%s: half forward: %s", desc, fa_last_error());
        cr_assert_eq(hu_backward(ctx, p, &pr), FA_OK, "%s: half backward: %s", desc, fa_last_error());
        size_t n_extra;
        unsigned char *half_extra = sink_and_bias_grads(p, s->q_heads, &n_extra);
        wide_grads g = wide_backward(ctx, p, pr.t, &pr, desc);
        cr_expect(same_sink_and_bias_grads(p, s->q_heads, half_extra),
                  "%s: dsinks or dbias of the f32-gradient call differ from the half call's", desc);
        if (ti == 0) {
            first_extra = half_extra;
        } else {
            cr_expect(same_sink_and_bias_grads(p, s->q_heads, first_extra),
                      "%s: dsinks or dbias differ from their 1-thread bytes", desc);
            free(half_extra);
        }
        for (int x = 0; x < 3; x++) {
            char where[128] = "";
            cr_expect(rounds_to(&g.t[x], &pr.t[KIT_DQ + x], where, sizeof where),
                      "%s: the f32 %s rounded differs from the half backward's at %s", desc, names[x], where);
        }
        if (ti > 0) {
            cr_expect(same_grads(&first, &g), "%s: f32 gradients differ from their 1-thread bytes", desc);
            wide_grads_free(&g);
        } else {
            first = g;
            if (!hu_backward_on_dot_units(ctx, s->q_dtype, s->kv_dtype, s->dim, s->dim_v)) {
                fa_tensor in[KIT_DQ];
                float *store[KIT_DQ];
                for (int x = 0; x < KIT_DQ; x++) in[x] = widened(&pr.t[x], &store[x]);
                wide_grads ref = wide_backward(ctx, p, in, &pr, desc);
                cr_expect(same_grads(&g, &ref), "%s: differs from the FA_F32 backward on the widened inputs",
                          desc);
                cr_expect(same_sink_and_bias_grads(p, s->q_heads, first_extra),
                          "%s: dsinks or dbias differ from the FA_F32 backward's on the widened inputs",
                          desc);
                wide_grads_free(&ref);
                for (int x = 0; x < KIT_DQ; x++) free(store[x]);
            }
        }
        kit_problem_free(&pr);
        fa_context_destroy(ctx);
    }
    wide_grads_free(&first);
    free(first_extra);
}

static const fa_dtype half_types[2] = {FA_BF16, FA_F16};

static kit_shape shape_of(fa_dtype t, const partial_case *pc)
{
    return (kit_shape){t,         t,          pc->batch, pc->q_heads, pc->kv_heads,
                       pc->q_len, pc->kv_len, pc->dim,   pc->dim_v,   pc->bshd};
}

Test(half_partials, f32_out_is_the_half_call_before_its_rounding)
{
    uint64_t seed = tu_seed("half_partials/dense");
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < N_CASES; c++) {
            const partial_case *pc = &cases[c];
            kit_shape s = shape_of(half_types[t], pc);
            fa_params p = FA_PARAMS_INIT;
            p.causal = pc->causal;
            run_problem(&s, &p, pc->q_len * (pc->q_heads / pc->kv_heads), seed + (uint64_t)c);
        }
}

/* The backward's f32 gradients, dense: the same shapes, with softcap and dropout on every other
 * case (the gradients' stores are shared by every modifier; these two change the products). */
Test(half_partials, f32_gradients_are_the_half_backward_before_its_rounding)
{
    uint64_t seed = tu_seed("half_partials/backward");
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < N_CASES; c++) {
            const partial_case *pc = &cases[c];
            kit_shape s = shape_of(half_types[t], pc);
            fa_params p = FA_PARAMS_INIT;
            p.causal = pc->causal;
            if (c % 2) p.softcap = 8.0, p.dropout_p = 0.125, p.dropout_seed = 7;
            run_backward_problem(&s, &p, seed + (uint64_t)c);
        }
}

/* The backward's f32 gradients beside the gradients of a bias (dbias, summed over its broadcast
 * batch axis) and of the sinks (dsinks): a GQA case without a mask and an MQA token-major causal one. */
Test(half_partials, f32_gradients_with_dbias_and_dsinks)
{
    uint64_t seed = tu_seed("half_partials/bias_and_sinks");
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < 2; c++) {
            const partial_case *pc = &cases[c];
            kit_shape s = shape_of(half_types[t], pc);
            tu_rng rng = tu_rng_make(seed + (uint64_t)c);
            float sinks[8], dsinks[8];
            cr_assert(pc->q_heads <= 8, "case %d: more heads than sinks", c);
            for (int h = 0; h < pc->q_heads; h++) sinks[h] = (float)tu_rng_uniform(&rng, -2.0, 2.0);
            float *bias_store, *dbias_store;
            fa_tensor bias = fa_tensor_bhsd(NULL, FA_F32, 1, pc->q_heads, pc->q_len, pc->kv_len), dbias;
            bias = f32_like(&bias, &bias_store);
            dbias = f32_like(&bias, &dbias_store);
            for (int64_t e = 0; e < hu_numel(&bias); e++)
                bias_store[e] = (float)tu_rng_uniform(&rng, -1.0, 1.0);
            fa_params p = FA_PARAMS_INIT;
            p.causal = pc->causal;
            p.bias = &bias, p.dbias = &dbias;
            run_backward_problem(&s, &p, seed + (uint64_t)c);
            p.bias = NULL, p.dbias = NULL;
            p.sinks = sinks, p.dsinks = dsinks;
            run_backward_problem(&s, &p, seed + (uint64_t)c);
            free(bias_store), free(dbias_store);
        }
}

/* Packed sequences (out and the gradients addressed per sequence), forward and backward: one
 * without keys, a decode step whose keys split, one without queries, odd lengths. */
Test(half_partials, f32_partials_of_packed_sequences)
{
    enum { SEQS = 5, HQ = 4, HKV = 2, D = 24, DV = 16 };
    static const int64_t seq_q[SEQS] = {5, 1, 40, 0, 33}, seq_k[SEQS] = {0, 300, 9, 12, 50};
    int64_t cu_q[SEQS + 1] = {0}, cu_k[SEQS + 1] = {0};
    for (int b = 0; b < SEQS; b++) cu_q[b + 1] = cu_q[b] + seq_q[b], cu_k[b + 1] = cu_k[b] + seq_k[b];
    fa_seqs seqs = FA_SEQS_INIT;
    seqs.batch = SEQS;
    seqs.cu_seqlens_q = cu_q;
    seqs.cu_seqlens_k = cu_k;
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_BOTTOM_RIGHT;
    p.seqs = &seqs;
    uint64_t seed = tu_seed("half_partials/packed");
    for (int t = 0; t < 2; t++) {
        kit_shape s = {half_types[t], half_types[t], 1, HQ, HKV, cu_q[SEQS], cu_k[SEQS], D, DV, 1};
        run_problem(&s, &p, 40, seed + (uint64_t)t);
        run_backward_problem(&s, &p, seed + (uint64_t)t);
    }
}

/* 1 when every byte of the n floats at x is still f32_like's fill. */
static int untouched(const float *x, int64_t n)
{
    const unsigned char *b = (const unsigned char *)x;
    for (size_t i = 0; i < sizeof(float) * (size_t)n; i++)
        if (b[i] != 0xA5) return 0;
    return 1;
}

/* A backward refused for one gradient's dtype: the status, the message naming it, no gradient
 * written (the half ones in pr, the f32 ones given). */
static void backward_refused(kit_problem *pr, const fa_tensor *q, const fa_tensor *dq, const fa_tensor *dk,
                             const fa_tensor *dv, const char *named)
{
    kit_problem_fill_gradients(pr, KIT_CANARY);
    unsigned char *grads[3];
    for (int x = 0; x < 3; x++) grads[x] = kit_buf_snapshot(&pr->buf[KIT_DQ + x]);
    fa_status st = fa_backward(NULL, NULL, q, &pr->t[KIT_K], &pr->t[KIT_V], &pr->t[KIT_OUT], &pr->t[KIT_DOUT],
                               pr->lse, dq, dk, dv);
    cr_expect_eq(st, FA_ERR_DTYPE, "%s: status %d", named, st);
    cr_expect(strstr(fa_last_error(), named) != NULL, "message: %s, expected to name %s", fa_last_error(),
              named);
    const fa_tensor *given[3] = {dq, dk, dv};
    for (int x = 0; x < 3; x++) {
        cr_expect(kit_buf_equals_snapshot(&pr->buf[KIT_DQ + x], grads[x]), "%s: a half gradient was written",
                  named);
        if (given[x]->dtype == FA_F32)
            cr_expect(untouched(given[x]->data, hu_numel(given[x])), "%s: an f32 gradient was written",
                      named);
        free(grads[x]);
    }
}

/* The gradients' mixed dtypes: f32 dq, dk and dv come together under half q, k, v, and under f32
 * queries over a half cache dk and dv stay in k's dtype. */
Test(half_partials, mixed_gradients_are_refused)
{
    tu_rng rng = tu_rng_make(tu_seed("half_partials/refused_gradients"));
    kit_shape s = {FA_BF16, FA_BF16, 1, 2, 1, 8, 9, 8, 8, 0};
    kit_problem pr;
    hu_make(&pr, &s, &rng, 1.0);
    cr_assert_eq(hu_forward(NULL, NULL, &pr), FA_OK, "%s", fa_last_error());
    wide_grads g;
    for (int x = 0; x < 3; x++) g.t[x] = f32_like(&pr.t[KIT_DQ + x], &g.store[x]);
    const fa_tensor *q = &pr.t[KIT_Q];
    backward_refused(&pr, q, &g.t[0], &pr.t[KIT_DK], &pr.t[KIT_DV],
                     "dk.dtype = FA_BF16 but dq.dtype = FA_F32");
    backward_refused(&pr, q, &g.t[0], &g.t[1], &pr.t[KIT_DV], "dv.dtype = FA_BF16 but dq.dtype = FA_F32");
    backward_refused(&pr, q, &pr.t[KIT_DQ], &g.t[1], &g.t[2], "dk.dtype = FA_F32 but k.dtype = FA_BF16");
    double *f64_store = malloc(sizeof(double) * (size_t)hu_numel(&pr.t[KIT_DQ]));
    cr_assert(f64_store != NULL);
    fa_tensor dq64 = fa_tensor_bhsd(f64_store, FA_F64, 1, 2, 8, 8);
    backward_refused(&pr, q, &dq64, &g.t[1], &g.t[2], "dq.dtype = FA_F64");
    /* f32 queries over the bf16 cache (and so an f32 out, dout and dq): dk and dv are k's dtype */
    float *q_store;
    fa_tensor q32 = widened(&pr.t[KIT_Q], &q_store);
    float *o_store, *do_store;
    fa_tensor out32 = f32_like(&pr.t[KIT_OUT], &o_store), dout32 = f32_like(&pr.t[KIT_DOUT], &do_store);
    fa_status st = fa_backward(NULL, NULL, &q32, &pr.t[KIT_K], &pr.t[KIT_V], &out32, &dout32, pr.lse, &g.t[0],
                               &g.t[1], &pr.t[KIT_DV]);
    cr_expect_eq(st, FA_ERR_DTYPE, "f32 q over bf16 k with an f32 dk: status %d", st);
    cr_expect(strstr(fa_last_error(), "dk.dtype = FA_F32 but k.dtype = FA_BF16") != NULL, "message: %s",
              fa_last_error());
    for (int x = 0; x < 2; x++)
        cr_expect(untouched(g.store[x], hu_numel(&g.t[x])), "f32 q over bf16 k: a gradient was written");
    free(q_store), free(o_store), free(do_store), free(f64_store);
    wide_grads_free(&g);
    kit_problem_free(&pr);
}

/* The only mixed out: half q, k, v with an f32 out in fa_forward. The backward reads out as the
 * forward wrote it in q's dtype, so an f32 out there is refused, as are an f64 out under half
 * inputs and a half out under f32 queries; the status, the name in the message, nothing written. */
Test(half_partials, other_mixed_outs_are_refused)
{
    tu_rng rng = tu_rng_make(tu_seed("half_partials/refused"));
    kit_shape s = {FA_BF16, FA_BF16, 1, 2, 1, 8, 9, 8, 8, 0};
    kit_problem pr;
    hu_make(&pr, &s, &rng, 1.0);
    float *wide_store;
    fa_tensor wide = f32_like(&pr.t[KIT_OUT], &wide_store);
    cr_assert_eq(hu_forward(NULL, NULL, &pr), FA_OK, "%s", fa_last_error());
    kit_problem_fill_gradients(&pr, KIT_CANARY);
    unsigned char *grads[3];
    for (int x = 0; x < 3; x++) grads[x] = kit_buf_snapshot(&pr.buf[KIT_DQ + x]);
    fa_status st = fa_backward(NULL, NULL, &pr.t[KIT_Q], &pr.t[KIT_K], &pr.t[KIT_V], &wide, &pr.t[KIT_DOUT],
                               pr.lse, &pr.t[KIT_DQ], &pr.t[KIT_DK], &pr.t[KIT_DV]);
    cr_expect_eq(st, FA_ERR_DTYPE, "backward with an f32 out under bf16 q: status %d", st);
    cr_expect(strstr(fa_last_error(), "out.dtype") != NULL, "message: %s", fa_last_error());
    for (int x = 0; x < 3; x++) {
        cr_expect(kit_buf_equals_snapshot(&pr.buf[KIT_DQ + x], grads[x]),
                  "the refused backward wrote a gradient");
        free(grads[x]);
    }
    /* an f64 out under bf16 inputs */
    kit_problem_fill_outputs(&pr, KIT_CANARY);
    unsigned char *out_before = kit_buf_snapshot(&pr.buf[KIT_OUT]);
    double *f64_store = calloc((size_t)hu_numel(&pr.t[KIT_OUT]) + 1, sizeof(double));
    cr_assert(f64_store != NULL);
    fa_tensor f64_out = fa_tensor_bhsd(f64_store, FA_F64, 1, 2, 8, 8);
    st = fa_forward(NULL, NULL, &pr.t[KIT_Q], &pr.t[KIT_K], &pr.t[KIT_V], &f64_out, pr.lse);
    cr_expect_eq(st, FA_ERR_DTYPE, "forward with an f64 out under bf16 q: status %d", st);
    cr_expect(strstr(fa_last_error(), "out.dtype = FA_F64") != NULL, "message: %s", fa_last_error());
    for (int64_t e = 0; e < hu_numel(&f64_out); e++)
        cr_expect(f64_store[e] == 0.0, "the refused forward wrote out");
    /* a bf16 out under f32 queries over the bf16 cache */
    float *q_store;
    fa_tensor q32 = widened(&pr.t[KIT_Q], &q_store);
    st = fa_forward(NULL, NULL, &q32, &pr.t[KIT_K], &pr.t[KIT_V], &pr.t[KIT_OUT], pr.lse);
    cr_expect_eq(st, FA_ERR_DTYPE, "forward with a bf16 out under f32 q: status %d", st);
    cr_expect(strstr(fa_last_error(), "out.dtype = FA_BF16") != NULL, "message: %s", fa_last_error());
    cr_expect(kit_buf_equals_snapshot(&pr.buf[KIT_OUT], out_before), "the refused forward wrote out");
    free(q_store), free(f64_store), free(out_before), free(wide_store);
    kit_problem_free(&pr);
}
