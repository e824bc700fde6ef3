/* SPDX-License-Identifier: BSD-3-Clause */
/* Bounded scratch memory, forward and backward: scratch_peak equals the documented formula of the
 * pass (scratch_formula.h; the backward's with and without the softcap's extra tile) and does not
 * depend on Nq or Nk; split-KV partials stay within 16 MiB. fa_stats.scratch_peak is the largest
 * high-water mark over the threads since create or reset: after a forward and a backward without a
 * reset it is the larger of the two formulas, and so is scratch_capacity (one arena serves both
 * passes and keeps the larger size). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/context.h" /* white-box: the row buffer that holds the split-KV partials */
#include "scratch_formula.h"
#include "util.h"
#include "util_backward.h"

/* One context configuration and problem per row. threads 0: the default. Backward, either side of
 * the max wins somewhere: bq·D above bk·(D + Dv) in the 128/1 and 64/3 rows; the softcap's
 * derivative tile in f32 and f64 configurations. A forward with more than 64 rows per block runs
 * as 64-row blocks. */
static const struct {
    tub_direction dir;
    fa_dtype t;
    int threads, bq, bk;
    int64_t d, dv;
    fa_causal c;
    double softcap;
} cfg[] = {
    {TUB_FORWARD, FA_F32, 0, 64, 64, 32, 32, FA_CAUSAL_NONE, 0.0},
    {TUB_FORWARD, FA_F64, 0, 17, 33, 59, 24, FA_CAUSAL_TOP_LEFT, 0.0},
    {TUB_FORWARD, FA_F32, 0, 1, 1, 8, 8, FA_CAUSAL_NONE, 0.0},
    {TUB_FORWARD, FA_F64, 0, 128, 16, 128, 256, FA_CAUSAL_BOTTOM_RIGHT, 0.0},
    {TUB_FORWARD, FA_F32, 0, 5, 128, 3, 7, FA_CAUSAL_NONE, 0.0},
    {TUB_FORWARD, FA_F64, 0, 3, 2, 1, 512, FA_CAUSAL_NONE, 0.0},
    {TUB_FORWARD, FA_F32, 0, 48, 80, 64, 100, FA_CAUSAL_TOP_LEFT, 0.0},
    {TUB_FORWARD, FA_F32, 0, 256, 64, 64, 64, FA_CAUSAL_TOP_LEFT, 0.0},
    {TUB_FORWARD, FA_F32, 0, 100, 48, 40, 24, FA_CAUSAL_NONE, 0.0},
    {TUB_BACKWARD, FA_F32, 1, 64, 64, 32, 32, FA_CAUSAL_NONE, 0.0},
    {TUB_BACKWARD, FA_F64, 3, 17, 33, 59, 24, FA_CAUSAL_TOP_LEFT, 0.0},
    {TUB_BACKWARD, FA_F32, 2, 1, 1, 8, 8, FA_CAUSAL_NONE, 5.0},
    {TUB_BACKWARD, FA_F64, 2, 128, 16, 128, 256, FA_CAUSAL_BOTTOM_RIGHT, 5.0},
    {TUB_BACKWARD, FA_F32, 1, 5, 128, 3, 7, FA_CAUSAL_NONE, 0.0},
    {TUB_BACKWARD, FA_F64, 4, 128, 1, 64, 16, FA_CAUSAL_NONE, 0.0},
    {TUB_BACKWARD, FA_F32, 2, 64, 3, 100, 9, FA_CAUSAL_TOP_LEFT, 5.0},
    {TUB_BACKWARD, FA_F64, 1, 3, 2, 1, 512, FA_CAUSAL_NONE, 5.0},
};
#define N_CFG ((int)(sizeof cfg / sizeof cfg[0]))

/* Forward on a fresh context: no peak before a call, the formula after it, none after a reset. */
static void forward_peak(fa_context *ctx, const fa_context_opts *o, const fa_params *p, tub_problem *bp,
                         const char *desc, uint64_t seed)
{
    const tu_shape *s = &bp->fw.shape;
    tu_problem *pr = &bp->fw;
    fa_stats st = FA_STATS_INIT;
    cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
    cr_expect_eq(st.scratch_peak, 0, "%s: scratch_peak %zu before any call", desc, st.scratch_peak);
    cr_assert_eq(fa_forward(ctx, p, &pr->q, &pr->k, &pr->v, &pr->out, pr->lse), FA_OK, "%s", desc);
    cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
    size_t want = forward_scratch(s->dtype, o->block_q, o->block_k, s->dim, s->dim_v);
    cr_expect_eq(st.block_q, o->block_q, "%s: block_q used %d, configured %d", desc, st.block_q, o->block_q);
    cr_expect_eq(st.block_k, o->block_k, "%s: block_k used %d, configured %d", desc, st.block_k, o->block_k);
    cr_expect_eq(st.scratch_peak, want, "%s, seed %llu: scratch_peak %zu, formula says %zu", desc,
                 (unsigned long long)seed, st.scratch_peak, want);
    cr_expect_geq(st.scratch_capacity, st.scratch_peak, "%s: capacity %zu < peak %zu", desc,
                  st.scratch_capacity, st.scratch_peak);
    fa_context_reset_stats(ctx);
    cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
    cr_expect_eq(st.scratch_peak, 0, "%s: scratch_peak %zu after reset", desc, st.scratch_peak);
}

/* Forward + backward without a reset: the larger formula, for the peak and the capacity; then the
 * backward alone after a reset: its own formula. */
static void backward_peak(fa_context *ctx, const fa_context_opts *o, const fa_params *p, tub_problem *bp,
                          const char *desc, uint64_t seed)
{
    const tu_shape *s = &bp->fw.shape;
    size_t fwd = forward_scratch(s->dtype, o->block_q, o->block_k, s->dim, s->dim_v);
    size_t bwd = backward_scratch(s->dtype, o->block_q, o->block_k, s->dim, s->dim_v, p->softcap > 0);
    fa_stats st = FA_STATS_INIT;
    cr_assert_eq(tub_forward(ctx, p, bp), FA_OK, "%s", desc);
    cr_assert_eq(tub_backward(ctx, p, bp), FA_OK, "%s", desc);
    cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
    size_t both = fwd > bwd ? fwd : bwd;
    cr_expect_eq(
        st.scratch_peak, both,
        "%s, seed %llu: scratch_peak %zu after forward + backward; max(forward %zu, backward %zu) = %zu",
        desc, (unsigned long long)seed, st.scratch_peak, fwd, bwd, both);
    cr_expect(st.block_q == o->block_q && st.block_k == o->block_k, "%s: fa_stats reports blocks %d/%d", desc,
              st.block_q, st.block_k);
    /* README "Memory": one arena serves both passes and keeps the larger size. */
    cr_expect_eq(st.scratch_capacity, both,
                 "%s: scratch_capacity %zu after forward + backward, larger formula %zu", desc,
                 st.scratch_capacity, both);
    fa_context_reset_stats(ctx);
    cr_assert_eq(tub_backward(ctx, p, bp), FA_OK, "%s", desc);
    cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
    cr_expect_eq(st.scratch_peak, bwd,
                 "%s, seed %llu: scratch_peak %zu after a backward alone, formula says %zu", desc,
                 (unsigned long long)seed, st.scratch_peak, bwd);
    cr_expect_geq(st.scratch_capacity, st.scratch_peak, "%s: capacity %zu < peak %zu", desc,
                  st.scratch_capacity, st.scratch_peak);
}

Test(scratch, peak_equals_documented_formula_forward_and_backward)
{
    uint64_t seed = tu_test_seed();
    for (int c = 0; c < N_CFG; c++) {
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.num_threads = cfg[c].threads;
        o.block_q = cfg[c].bq;
        o.block_k = cfg[c].bk;
        fa_context *ctx;
        cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
        /* At least two blocks of each kind and a ragged tail; grouped heads. */
        tu_shape s = {cfg[c].t, 1, 2, 1, 2 * cfg[c].bq + 3, 2 * cfg[c].bk + 5, cfg[c].d, cfg[c].dv, TU_BHSD};
        fa_params p = FA_PARAMS_INIT;
        p.causal = cfg[c].c;
        p.softcap = cfg[c].softcap;
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tub_problem bp;
        tub_make(&bp, &s, &rng, 2.0);
        char desc[320], what[352];
        tub_desc(&bp, &p, o.block_q, o.block_k, desc, sizeof desc);
        snprintf(what, sizeof what, "%s, %s", tub_direction_name(cfg[c].dir), desc);
        if (cfg[c].dir == TUB_FORWARD)
            forward_peak(ctx, &o, &p, &bp, what, seed);
        else
            backward_peak(ctx, &o, &p, &bp, what, seed);
        tub_free(&bp);
        fa_context_destroy(ctx);
    }
}

/* Forward: 64/64 blocks, the result itself checked on a sample of rows. Backward: B = H = 1,
 * D = Dv = 4, causal (half the tiles skipped), f32, large tiles: about 1.3e8 visible (query, key)
 * pairs, each recomputed once by a dK/dV item and once by a dQ item; a few seconds, about 5x that
 * under ASan + UBSan; every gradient finite. */
Test(scratch, peak_is_identical_for_1024_and_16384_tokens_forward_and_backward, .timeout = 600)
{
    uint64_t seed = tu_test_seed();
    enum { D = 4 };
    static const int blocks[TUB_DIRECTIONS] = {64, 128};
    static const int64_t lens[2] = {1024, 16384};
    for (int d = 0; d < TUB_DIRECTIONS; d++) {
        const char *dn = tub_direction_name((tub_direction)d);
        fa_context *ctx = tu_context(0, blocks[d], blocks[d]);
        fa_params p = FA_PARAMS_INIT;
        p.causal = FA_CAUSAL_TOP_LEFT; /* halves the work of the long run */
        size_t peak[2], capacity[2];
        for (int x = 0; x < 2; x++) {
            tu_shape s = {FA_F32, 1, 1, 1, lens[x], lens[x], D, D, TU_BHSD};
            tu_rng rng = tu_rng_make(seed + (uint64_t)(2 * d + x));
            tub_problem bp;
            tub_make(&bp, &s, &rng, 2.0);
            tu_problem *pr = &bp.fw;
            char desc[320], msg[512];
            tub_desc(&bp, &p, blocks[d], blocks[d], desc, sizeof desc);
            if (d == TUB_FORWARD) {
                fa_context_reset_stats(ctx);
                cr_assert_eq(fa_forward(ctx, &p, &pr->q, &pr->k, &pr->v, &pr->out, pr->lse), FA_OK, "%s",
                             desc);
            } else {
                cr_assert_eq(tub_forward(ctx, &p, &bp), FA_OK, "%s", desc);
                fa_context_reset_stats(ctx);
                cr_assert_eq(tub_backward(ctx, &p, &bp), FA_OK, "%s", desc);
            }
            fa_stats st = FA_STATS_INIT;
            cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
            peak[x] = st.scratch_peak;
            capacity[x] = st.scratch_capacity;
            if (d == TUB_FORWARD) {
                /* The result itself, on a sample of rows. */
                cr_expect(tu_check_picked_accuracy(pr, &p, 1200000, 1e-12, msg, sizeof msg),
                          "%s, seed %llu: %s", desc, (unsigned long long)seed, msg);
            } else {
                int64_t first, bad = 0;
                for (int g = 0; g < 3; g++) bad += tub_count_nonfinite(&bp.grad[g], &first);
                cr_expect_eq(bad, 0, "%s, seed %llu: %lld non-finite gradient values", desc,
                             (unsigned long long)seed, (long long)bad);
            }
            tub_free(&bp);
        }
        size_t want = d == TUB_FORWARD ? forward_scratch(FA_F32, blocks[d], blocks[d], D, D)
                                       : backward_scratch(FA_F32, blocks[d], blocks[d], D, D, 0);
        cr_expect_eq(peak[0], peak[1], "%s scratch_peak %zu at N = 1024 but %zu at N = 16384", dn, peak[0],
                     peak[1]);
        cr_expect_eq(peak[1], want, "%s scratch_peak %zu at N = 16384, formula says %zu", dn, peak[1], want);
        cr_expect_eq(capacity[0], capacity[1], "%s scratch_capacity grew from %zu to %zu", dn, capacity[0],
                     capacity[1]);
        fa_context_destroy(ctx);
    }
}

/* The split-KV partials stay within 16 MiB in all (include/flashattn.h, fa_forward). Near that cap
 * the split count rests on a query row's share of a partial, which is fractional when block_q is
 * no multiple of the padding unit: here 114 query items of 44 rows (padded to 48) and two chunks
 * of two 16-key tiles. With Dv = 400 two chunks fit; with Dv = 401 they would take 16780800 bytes,
 * so that problem must not split. The partials live in the context's row buffer (white-box:
 * ctx->rows_bytes, which a forward grows only for them). */
Test(scratch, split_kv_partials_stay_within_16_mib)
{
    uint64_t seed = tu_test_seed();
    static const int64_t dims_v[2] = {400, 401};
    for (int x = 0; x < 2; x++) {
        fa_context *ctx = tu_context(0, 64, 16);
        tu_shape s = {FA_F32, 1, 114, 1, 44, 64, 16, dims_v[x], TU_BHSD};
        fa_params p = FA_PARAMS_INIT;
        tu_rng rng = tu_rng_make(seed + (uint64_t)x);
        tu_problem pr;
        tu_problem_make(&pr, &s, &rng, 2.0);
        char desc[256], msg[512];
        tu_shape_str(&s, &p, desc, sizeof desc);
        cr_assert_eq(fa_forward(ctx, &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_OK, "%s", desc);
        cr_expect_leq(ctx->rows_bytes, (size_t)16 << 20, "%s: %zu bytes of split-KV partials", desc,
                      ctx->rows_bytes);
        if (x == 0)
            cr_expect_gt(ctx->rows_bytes, 0, "%s: no split-KV, so the cap is not tested near its edge", desc);
        cr_expect(tu_check_picked_accuracy(&pr, &p, 2000000, 1e-12, msg, sizeof msg), "%s, seed %llu: %s",
                  desc, (unsigned long long)seed, msg);
        tu_problem_free(&pr);
        fa_context_destroy(ctx);
    }
}
