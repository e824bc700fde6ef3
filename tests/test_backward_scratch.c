/* SPDX-License-Identifier: BSD-3-Clause */
/* Bounded scratch memory in the backward: scratch_peak equals the documented backward formula
 * (scratch_formula.h), with and without the softcap's extra tile. fa_stats.scratch_peak is the largest
 * high-water mark over the threads since
 * create or reset: after a forward and a backward without a reset it is the larger of the two
 * formulas, and so is scratch_capacity (one arena serves both passes and keeps the larger size).
 * Neither depends on Nq or Nk. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "scratch_formula.h"
#include "util.h"
#include "util_backward.h"

Test(backward_scratch, peak_equals_documented_backward_formula)
{
    uint64_t seed = tu_test_seed();
    /* Either side of the max wins somewhere: bq·D above bk·(D + Dv) in the 128/1 and 64/3 rows. */
    static const struct {
        fa_dtype t;
        int threads, bq, bk;
        int64_t d, dv;
        fa_causal c;
    } cfg[] = {
        {FA_F32, 1, 64, 64, 32, 32, FA_CAUSAL_NONE},
        {FA_F64, 3, 17, 33, 59, 24, FA_CAUSAL_TOP_LEFT},
        {FA_F32, 2, 1, 1, 8, 8, FA_CAUSAL_NONE},
        {FA_F64, 2, 128, 16, 128, 256, FA_CAUSAL_BOTTOM_RIGHT},
        {FA_F32, 1, 5, 128, 3, 7, FA_CAUSAL_NONE},
        {FA_F64, 4, 128, 1, 64, 16, FA_CAUSAL_NONE},
        {FA_F32, 2, 64, 3, 100, 9, FA_CAUSAL_TOP_LEFT},
        {FA_F64, 1, 3, 2, 1, 512, FA_CAUSAL_NONE},
    };
    for (int c = 0; c < (int)(sizeof cfg / sizeof cfg[0]); c++) {
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
        p.softcap = (c / 2) % 2 ? 5.0 : 0.0; /* its derivative's tile: in f32 and f64 configurations */
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tub_problem bp;
        tub_make(&bp, &s, &rng, 2.0);
        char desc[320];
        tub_desc(&bp, &p, o.block_q, o.block_k, desc, sizeof desc);
        size_t fwd = forward_scratch(s.dtype, o.block_q, o.block_k, s.dim, s.dim_v);
        size_t bwd = backward_scratch(s.dtype, o.block_q, o.block_k, s.dim, s.dim_v, p.softcap > 0);
        fa_stats st = FA_STATS_INIT;

        /* forward and backward without a reset: the larger formula */
        cr_assert_eq(tub_forward(ctx, &p, &bp), FA_OK, "%s", desc);
        cr_assert_eq(tub_backward(ctx, &p, &bp), FA_OK, "%s", desc);
        cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
        size_t both = fwd > bwd ? fwd : bwd;
        cr_expect_eq(
            st.scratch_peak, both,
            "%s, seed %llu: scratch_peak %zu after forward + backward; max(forward %zu, backward %zu) = %zu",
            desc, (unsigned long long)seed, st.scratch_peak, fwd, bwd, both);
        cr_expect(st.block_q == o.block_q && st.block_k == o.block_k, "%s: fa_stats reports blocks %d/%d",
                  desc, st.block_q, st.block_k);
        /* README "Memory": one arena serves both passes and keeps the larger size. */
        cr_expect_eq(st.scratch_capacity, both,
                     "%s: scratch_capacity %zu after forward + backward, larger formula %zu", desc,
                     st.scratch_capacity, both);

        /* the backward alone, after a reset */
        fa_context_reset_stats(ctx);
        cr_assert_eq(tub_backward(ctx, &p, &bp), FA_OK, "%s", desc);
        cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
        cr_expect_eq(st.scratch_peak, bwd,
                     "%s, seed %llu: scratch_peak %zu after a backward alone, formula says %zu", desc,
                     (unsigned long long)seed, st.scratch_peak, bwd);
        cr_expect_geq(st.scratch_capacity, st.scratch_peak, "%s: capacity %zu < peak %zu", desc,
                      st.scratch_capacity, st.scratch_peak);
        tub_free(&bp);
        fa_context_destroy(ctx);
    }
}

/* The long run is B = H = 1, D = Dv = 4, causal (half the tiles skipped), f32, large tiles: about
 * 1.3e8 visible (query, key) pairs, each recomputed once by a dK/dV item and once by a dQ item; a
 * few seconds, about 5x that under ASan + UBSan. */
Test(backward_scratch, peak_is_identical_for_1024_and_16384_tokens, .timeout = 600)
{
    uint64_t seed = tu_test_seed();
    enum { BQ = 128, BK = 128, D = 4 };
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.block_q = BQ;
    o.block_k = BK;
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_TOP_LEFT;
    static const int64_t lens[2] = {1024, 16384};
    size_t peak[2], capacity[2];
    for (int x = 0; x < 2; x++) {
        tu_shape s = {FA_F32, 1, 1, 1, lens[x], lens[x], D, D, TU_BHSD};
        tu_rng rng = tu_rng_make(seed + (uint64_t)x);
        tub_problem bp;
        tub_make(&bp, &s, &rng, 2.0);
        char desc[320];
        tub_desc(&bp, &p, BQ, BK, desc, sizeof desc);
        cr_assert_eq(tub_forward(ctx, &p, &bp), FA_OK, "%s", desc);
        fa_context_reset_stats(ctx);
        cr_assert_eq(tub_backward(ctx, &p, &bp), FA_OK, "%s", desc);
        fa_stats st = FA_STATS_INIT;
        cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
        peak[x] = st.scratch_peak;
        capacity[x] = st.scratch_capacity;
        int64_t first, bad = 0;
        for (int g = 0; g < 3; g++) bad += tub_count_nonfinite(&bp.grad[g], &first);
        cr_expect_eq(bad, 0, "%s, seed %llu: %lld non-finite gradient values", desc, (unsigned long long)seed,
                     (long long)bad);
        tub_free(&bp);
    }
    size_t want = backward_scratch(FA_F32, BQ, BK, D, D, 0);
    cr_expect_eq(peak[0], peak[1], "backward scratch_peak %zu at N = 1024 but %zu at N = 16384", peak[0],
                 peak[1]);
    cr_expect_eq(peak[1], want, "backward scratch_peak %zu at N = 16384, formula says %zu", peak[1], want);
    cr_expect_eq(capacity[0], capacity[1], "scratch_capacity grew from %zu to %zu", capacity[0], capacity[1]);
    fa_context_destroy(ctx);
}
