/* SPDX-License-Identifier: BSD-3-Clause */
/* Bounded scratch memory of the forward: scratch_peak equals the documented formula
 * (scratch_formula.h) and does not depend on Nq or Nk; split-KV partials stay within 16 MiB. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/context.h" /* white-box: the row buffer that holds the split-KV partials */
#include "scratch_formula.h"
#include "util.h"

Test(scratch, peak_equals_documented_formula)
{
    uint64_t seed = tu_test_seed();
    /* dtype, block_q, block_k, D, Dv, causal */
    static const struct {
        fa_dtype t;
        int bq, bk;
        int64_t d, dv;
        fa_causal c;
    } cfg[] = {
        {FA_F32, 64, 64, 32, 32, FA_CAUSAL_NONE},      {FA_F64, 17, 33, 59, 24, FA_CAUSAL_TOP_LEFT},
        {FA_F32, 1, 1, 8, 8, FA_CAUSAL_NONE},          {FA_F64, 128, 16, 128, 256, FA_CAUSAL_BOTTOM_RIGHT},
        {FA_F32, 5, 128, 3, 7, FA_CAUSAL_NONE},        {FA_F64, 3, 2, 1, 512, FA_CAUSAL_NONE},
        {FA_F32, 48, 80, 64, 100, FA_CAUSAL_TOP_LEFT}, {FA_F32, 256, 64, 64, 64, FA_CAUSAL_TOP_LEFT},
        {FA_F32, 100, 48, 40, 24, FA_CAUSAL_NONE}, /* more than 64 rows: run as 64-row blocks */
    };
    for (int c = 0; c < (int)(sizeof cfg / sizeof cfg[0]); c++) {
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.block_q = cfg[c].bq;
        o.block_k = cfg[c].bk;
        fa_context *ctx;
        cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
        /* At least one full block of each kind, and a ragged tail. */
        tu_shape s = {cfg[c].t, 1, 2, 1, 2 * cfg[c].bq + 3, 2 * cfg[c].bk + 5, cfg[c].d, cfg[c].dv, TU_BHSD};
        fa_params p = FA_PARAMS_INIT;
        p.causal = cfg[c].c;
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tu_problem pr;
        tu_problem_make(&pr, &s, &rng, 2.0);
        char desc[256];
        tu_shape_str(&s, &p, desc, sizeof desc);
        fa_stats st = FA_STATS_INIT;
        cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
        cr_expect_eq(st.scratch_peak, 0, "%s: scratch_peak %zu before any call", desc, st.scratch_peak);
        cr_assert_eq(fa_forward(ctx, &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_OK, "%s", desc);
        cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
        size_t want = forward_scratch(s.dtype, o.block_q, o.block_k, s.dim, s.dim_v);
        cr_expect_eq(st.block_q, o.block_q, "%s: block_q used %d, configured %d", desc, st.block_q,
                     o.block_q);
        cr_expect_eq(st.block_k, o.block_k, "%s: block_k used %d, configured %d", desc, st.block_k,
                     o.block_k);
        cr_expect_eq(st.scratch_peak, want, "%s, blocks %d/%d, seed %llu: scratch_peak %zu, formula says %zu",
                     desc, o.block_q, o.block_k, (unsigned long long)seed, st.scratch_peak, want);
        cr_expect_geq(st.scratch_capacity, st.scratch_peak, "%s: capacity %zu < peak %zu", desc,
                      st.scratch_capacity, st.scratch_peak);
        fa_context_reset_stats(ctx);
        cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
        cr_expect_eq(st.scratch_peak, 0, "%s: scratch_peak %zu after reset", desc, st.scratch_peak);
        tu_problem_free(&pr);
        fa_context_destroy(ctx);
    }
}

Test(scratch, peak_is_identical_for_1024_and_16384_tokens)
{
    uint64_t seed = tu_test_seed();
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.block_q = 64;
    o.block_k = 64;
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_TOP_LEFT; /* halves the work of the long run */
    static const int64_t lens[2] = {1024, 16384};
    size_t peak[2], capacity[2];
    for (int x = 0; x < 2; x++) {
        tu_shape s = {FA_F32, 1, 1, 1, lens[x], lens[x], 4, 4, TU_BHSD};
        tu_rng rng = tu_rng_make(seed + (uint64_t)x);
        tu_problem pr;
        tu_problem_make(&pr, &s, &rng, 2.0);
        char desc[256], msg[512];
        tu_shape_str(&s, &p, desc, sizeof desc);
        fa_context_reset_stats(ctx);
        cr_assert_eq(fa_forward(ctx, &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_OK, "%s", desc);
        fa_stats st = FA_STATS_INIT;
        cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
        peak[x] = st.scratch_peak;
        capacity[x] = st.scratch_capacity;
        /* The result itself, on a sample of rows. */
        int64_t *rows;
        int64_t n = tu_pick_rows(&pr, &p, 1200000, &rows);
        cr_expect(tu_check_accuracy(&pr, &p, rows, n, 1e-12, msg, sizeof msg), "%s, seed %llu: %s", desc,
                  (unsigned long long)seed, msg);
        free(rows);
        tu_problem_free(&pr);
    }
    size_t want = forward_scratch(FA_F32, 64, 64, 4, 4);
    cr_expect_eq(peak[0], peak[1], "scratch_peak %zu at N = 1024 but %zu at N = 16384", peak[0], peak[1]);
    cr_expect_eq(peak[1], want, "scratch_peak %zu at N = 16384, formula says %zu", peak[1], want);
    cr_expect_eq(capacity[0], capacity[1], "scratch_capacity grew from %zu to %zu", capacity[0], capacity[1]);
    fa_context_destroy(ctx);
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
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.block_q = 64;
        o.block_k = 16;
        fa_context *ctx;
        cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
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
        int64_t *rows;
        int64_t n = tu_pick_rows(&pr, &p, 2000000, &rows);
        cr_expect(tu_check_accuracy(&pr, &p, rows, n, 1e-12, msg, sizeof msg), "%s, seed %llu: %s", desc,
                  (unsigned long long)seed, msg);
        free(rows);
        tu_problem_free(&pr);
        fa_context_destroy(ctx);
    }
}
