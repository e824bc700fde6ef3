/* SPDX-License-Identifier: BSD-3-Clause */
/* Scratch planned once (src/plan/scratch.h): a call reserves in every thread's arena one plan, the
 * largest carve of the item kinds it runs, sized by the very code that carves it. So after any call
 * the arenas' high-water mark is that plan exactly: never more (a carve past its plan stops at the
 * library's assertion, which this suite's builds keep), and never less (a plan that reserved more
 * than any item takes would be memory promised and never used). Every kind of call, at 1 and 2
 * threads: dense forward in every dtype pairing, split-KV decode, grouped decode, the dot-product
 * units where the table has them, batches of sequences (packed, paged, decode), every backward plan,
 * and fa_merge. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "drivers/backward.h" /* white-box: fa_backward_force_plan */
#include "kernels/half.h"
#include "runtime/context.h" /* white-box: the last call's plan */
#include "seqs_util.h"
#include "util.h"

/* A contiguous [B][H][S][D] tensor of dtype t with values in [-1, 1) from rng. */
static fa_tensor filled(fa_dtype t, int64_t b, int64_t h, int64_t s, int64_t d, tu_rng *rng)
{
    int64_t n = b * h * s * d;
    void *data = calloc((size_t)(n > 0 ? n : 1), tu_dtype_size(t));
    cr_assert(data != NULL);
    for (int64_t i = 0; i < n; i++) {
        double x = tu_rng_uniform(rng, -1, 1);
        if (t == FA_F64)
            ((double *)data)[i] = x;
        else if (t == FA_F32)
            ((float *)data)[i] = (float)x;
        else
            ((uint16_t *)data)[i] = t == FA_BF16 ? fa_bf16_from_f32((float)x) : fa_f16_from_f32((float)x);
    }
    return fa_tensor_bhsd(data, t, b, h, s, d);
}

/* After one call: the peak is the plan, the plan is not zero, the arena holds it; then reset. */
static void expect_peak_is_plan(fa_context *ctx, const char *what, int threads)
{
    fa_stats st = FA_STATS_INIT;
    cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
    cr_expect_gt(ctx->last_scratch_plan, 0, "%s, %d threads: no plan recorded", what, threads);
    cr_expect_eq(st.scratch_peak, ctx->last_scratch_plan, "%s, %d threads (%s): scratch_peak %zu, plan %zu",
                 what, threads, st.isa, st.scratch_peak, ctx->last_scratch_plan);
    cr_expect_geq(st.scratch_capacity, st.scratch_peak, "%s: capacity %zu < peak %zu", what,
                  st.scratch_capacity, st.scratch_peak);
    fa_context_reset_stats(ctx);
}

/* Forward, then the backward under each of its three plans, of one dense problem. */
static void dense_case(fa_dtype qt, fa_dtype kvt, int64_t hq, int64_t hkv, int64_t nq, int64_t nk, int64_t d,
                       int64_t dv, int block_q, int block_k, int threads, tu_rng *rng)
{
    char what[160];
    snprintf(what, sizeof what, "q %d, kv %d, Hq %lld/%lld, Nq %lld, Nk %lld, D %lld/%lld, blocks %d/%d", qt,
             kvt, (long long)hq, (long long)hkv, (long long)nq, (long long)nk, (long long)d, (long long)dv,
             block_q, block_k);
    fa_context *ctx = tu_context(threads, block_q, block_k);
    fa_tensor q = filled(qt, 1, hq, nq, d, rng), k = filled(kvt, 1, hkv, nk, d, rng);
    fa_tensor v = filled(kvt, 1, hkv, nk, dv, rng), out = filled(qt, 1, hq, nq, dv, rng);
    fa_tensor dout = filled(qt, 1, hq, nq, dv, rng), dq = filled(qt, 1, hq, nq, d, rng);
    fa_tensor dk = filled(kvt, 1, hkv, nk, d, rng), dvt = filled(kvt, 1, hkv, nk, dv, rng);
    void *lse = calloc((size_t)(hq * nq), qt == FA_F64 ? sizeof(double) : sizeof(float));
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_BOTTOM_RIGHT;
    p.softcap = 20; /* the backward's extra tile */
    cr_assert_eq(fa_forward(ctx, &p, &q, &k, &v, &out, lse), FA_OK, "%s: %s", what, fa_last_error());
    expect_peak_is_plan(ctx, what, threads);
    static const fa_backward_plan plans[] = {FA_BACKWARD_PLAN_FUSED, FA_BACKWARD_PLAN_WAVEFRONT,
                                             FA_BACKWARD_PLAN_SPLIT};
    for (int i = 0; i < 3; i++) {
        fa_backward_force_plan(ctx, plans[i]);
        cr_assert_eq(fa_backward(ctx, &p, &q, &k, &v, &out, &dout, lse, &dq, &dk, &dvt), FA_OK, "%s: %s",
                     what, fa_last_error());
        char with_plan[200];
        snprintf(with_plan, sizeof with_plan, "%s, backward %s", what, fa_backward_plan_name(plans[i]));
        expect_peak_is_plan(ctx, with_plan, threads);
    }
    fa_tensor *all[] = {&q, &k, &v, &out, &dout, &dq, &dk, &dvt};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]->data);
    free(lse);
    fa_context_destroy(ctx);
}

Test(scratch_plan, dense_calls_peak_at_their_plan)
{
    tu_rng rng = tu_rng_make(tu_test_seed());
    static const struct {
        fa_dtype q, kv;
    } types[] = {{FA_F32, FA_F32}, {FA_F64, FA_F64}, {FA_BF16, FA_BF16}, {FA_F16, FA_F16}, {FA_F32, FA_BF16}};
    for (int threads = 1; threads <= 2; threads++)
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
            dense_case(types[t].q, types[t].kv, 4, 2, 150, 200, 64, 40, 0, 0, threads,
                       &rng); /* automatic blocks */
            dense_case(types[t].q, types[t].kv, 2, 1, 137, 90, 24, 72, 64, 48, threads, &rng);
            dense_case(types[t].q, types[t].kv, 2, 2, 300, 130, 32, 32, 256, 64, threads,
                       &rng); /* wide items */
            dense_case(types[t].q, types[t].kv, 8, 2, 1, 5000, 64, 64, 0, 0, threads,
                       &rng); /* grouped decode */
            dense_case(types[t].q, types[t].kv, 1, 1, 3, 6000, 128, 128, 0, 64, threads, &rng); /* split-KV */
        }
}

Test(scratch_plan, batches_of_sequences_peak_at_their_plan)
{
    tu_rng rng = tu_rng_make(tu_test_seed());
    static const fa_dtype dtypes[] = {FA_F32, FA_F64};
    static const ts_keys keys[] = {TS_KEYS_PACKED, TS_KEYS_PAGED};
    char desc[512];
    for (int threads = 1; threads <= 2; threads++)
        for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++)
            for (size_t kk = 0; kk < sizeof keys / sizeof keys[0]; kk++)
                for (int decode = 0; decode <= 1; decode++) {
                    fa_context *ctx = tu_context(threads, 0, decode ? 64 : 0);
                    ts_spec s = {0};
                    s.dtype = dtypes[t];
                    s.batch = 5, s.q_heads = 4, s.kv_heads = 2, s.dim = 64, s.dim_v = 32;
                    s.packed_q = 1, s.keys = keys[kk], s.seqused = 1, s.spare_rows = 2;
                    s.page_size = 16, s.pages_per_seq = decode ? 40 : 8, s.spare_pages = 2;
                    ts_spec_draw(&s, &rng, 40, decode ? 600 : 120, 1);
                    /* decode batches: one query row each, so every sequence splits its keys */
                    for (int64_t b = 0; b < s.batch; b++)
                        if (decode || b % 2 == 0) s.q_len[b] = 1;
                    ts_batch tb;
                    ts_make(&tb, &s, &rng, 2.0);
                    fa_params p = FA_PARAMS_INIT;
                    p.causal = FA_CAUSAL_BOTTOM_RIGHT;
                    ts_desc(&tb, &p, desc, sizeof desc);
                    cr_assert_eq(ts_forward(ctx, &p, &tb), FA_OK, "%s: %s", desc, fa_last_error());
                    expect_peak_is_plan(ctx, desc, threads);
                    if (keys[kk] != TS_KEYS_PAGED) { /* paged keys are forward only */
                        cr_assert_eq(ts_backward(ctx, &p, &tb), FA_OK, "%s: %s", desc, fa_last_error());
                        expect_peak_is_plan(ctx, desc, threads);
                    }
                    ts_free(&tb);
                    fa_context_destroy(ctx);
                }
}

/* A bf16 batch over a paged pool that mixes decode steps (which read the half cache in place) and
 * longer rows (which take the dot-product units where the table has them): both kinds of item. */
Test(scratch_plan, a_half_precision_paged_batch_peaks_at_its_plan)
{
    enum { SEQS = 3, PAGES = 12, PAGE = 16, PER_SEQ = 4, HQ = 4, HKV = 2, D = 64, DV = 32, ROWS = 11 };
    tu_rng rng = tu_rng_make(tu_test_seed());
    static const int64_t cu_q[SEQS + 1] = {0, 1, 10, 11}, used[SEQS] = {50, 64, 20};
    static const int32_t table[SEQS * PER_SEQ] = {3, 7, 1, 9, 0, 2, 4, 6, 11, 5, 8, 10};
    for (int threads = 1; threads <= 2; threads++) {
        fa_context *ctx = tu_context(threads, 0, 0);
        fa_tensor q = filled(FA_BF16, 1, HQ, ROWS, D, &rng), out = filled(FA_BF16, 1, HQ, ROWS, DV, &rng);
        fa_tensor k = filled(FA_BF16, PAGES, HKV, PAGE, D, &rng),
                  v = filled(FA_BF16, PAGES, HKV, PAGE, DV, &rng);
        float *lse = calloc(HQ * ROWS, sizeof(float));
        fa_seqs seqs = FA_SEQS_INIT;
        seqs.batch = SEQS, seqs.cu_seqlens_q = cu_q, seqs.seqused_k = used;
        seqs.block_table = table, seqs.pages_per_seq = PER_SEQ;
        fa_params p = FA_PARAMS_INIT;
        p.causal = FA_CAUSAL_BOTTOM_RIGHT;
        p.seqs = &seqs;
        cr_assert_eq(fa_forward(ctx, &p, &q, &k, &v, &out, lse), FA_OK, "%s", fa_last_error());
        expect_peak_is_plan(ctx, "bf16 paged batch of decode steps and 9-row sequences", threads);
        free(q.data), free(out.data), free(k.data), free(v.data), free(lse);
        fa_context_destroy(ctx);
    }
}

Test(scratch_plan, merges_peak_at_their_plan)
{
    tu_rng rng = tu_rng_make(tu_test_seed());
    static const fa_dtype dtypes[] = {FA_F32, FA_F64, FA_BF16, FA_F16};
    for (int threads = 1; threads <= 2; threads++)
        for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
            fa_context *ctx = tu_context(threads, 0, 0);
            const size_t acc = dtypes[t] == FA_F64 ? sizeof(double) : sizeof(float);
            fa_tensor outs[3];
            void *lses[3];
            for (int i = 0; i < 3; i++) {
                outs[i] = filled(dtypes[t], 2, 3, 70, 40, &rng);
                lses[i] = calloc(2 * 3 * 70, acc);
            }
            fa_tensor out = filled(dtypes[t], 2, 3, 70, 40, &rng);
            void *lse = calloc(2 * 3 * 70, acc);
            cr_assert_eq(fa_merge(ctx, 3, outs, (const void *const *)lses, &out, lse), FA_OK, "%s",
                         fa_last_error());
            expect_peak_is_plan(ctx, "fa_merge", threads);
            for (int i = 0; i < 3; i++) free(outs[i].data), free(lses[i]);
            free(out.data), free(lse);
            fa_context_destroy(ctx);
        }
}
