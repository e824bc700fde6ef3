/* SPDX-License-Identifier: BSD-3-Clause */
/* Fully masked rows and empty sequences in the backward (include/flashattn.h, fa_backward: "A row
 * that was fully masked contributes nothing and gets dq = 0").
 *
 * - BOTTOM_RIGHT with Nq > Nk: query rows i < Nq - Nk see no key. Their dq is exactly 0, no value
 *   of dq, dk or dv is NaN or infinite, and the rest matches the oracle (rule of test 1).
 * - TOP_LEFT with Nq < Nk: keys j >= Nq are seen by no row, so their dk and dv are exactly 0.
 * - Nk = 0: every row is fully masked: dq is exactly 0 everywhere.
 * - Nq = 0: nothing reads any key: dk = dv = 0 exactly.
 * Each with f32 and f64, the automatic blocks on a 1-thread context and small odd blocks on 3
 * threads (query blocks that mix masked and visible rows), and only the gradient views written. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"
#include "util_backward.h"

typedef struct {
    int threads, block_q, block_k;
} ctx_cfg;

static const ctx_cfg configs[] = {{1, 0, 0}, {3, 5, 3}, {2, 8, 16}};
#define N_CONFIGS ((int)(sizeof configs / sizeof configs[0]))

static fa_context *make_ctx(const ctx_cfg *c)
{
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = c->threads;
    o.block_q = c->block_q;
    o.block_k = c->block_k;
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
    return ctx;
}

/* Elements of t in sequence positions [s0, s1) (every batch and head) that are not exactly 0;
 * the first one's position goes to *where. */
static int64_t nonzero_in_rows(const fa_tensor *t, int64_t s0, int64_t s1, int64_t *where)
{
    int64_t n = 0;
    *where = -1;
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t s = s0; s < s1; s++)
                for (int64_t d = 0; d < t->dim; d++)
                    if (!(tu_get(t, b, h, s, d) == 0.0) && n++ == 0) *where = s;
    return n;
}

/* Forward then backward on a fresh problem; checks what holds for every case (status, only the
 * gradient views written, every gradient finite, oracle agreement) and returns the problem. */
static void run_case(fa_context *ctx, const tu_shape *s, const fa_params *p, uint64_t seed, const ctx_cfg *c,
                     tub_problem *bp, char *desc, size_t desc_size)
{
    tu_rng rng = tu_rng_make(seed);
    tub_make(bp, s, &rng, 2.5);
    tub_desc(bp, p, c->block_q, c->block_k, desc, desc_size);
    cr_assert_eq(tub_forward(ctx, p, bp), FA_OK, "%s, seed %llu", desc, (unsigned long long)seed);
    fa_status st = tub_backward(ctx, p, bp);
    cr_assert_eq(st, FA_OK, "%s, seed %llu: backward status %d (%s)", desc, (unsigned long long)seed, st,
                 fa_status_str(st));
    cr_expect(tub_grads_only_defined_written(bp), "%s, seed %llu: a byte outside dq/dk/dv was written", desc,
              (unsigned long long)seed);
    static const char *names[3] = {"dq", "dk", "dv"};
    for (int g = 0; g < 3; g++) {
        int64_t first;
        int64_t bad = tub_count_nonfinite(&bp->grad[g], &first);
        cr_expect_eq(bad, 0, "%s, seed %llu: %lld non-finite values in %s, first at flat index %lld", desc,
                     (unsigned long long)seed, (long long)bad, names[g], (long long)first);
    }
    char msg[512];
    tub_ref oracle, naive;
    tub_ref_compute(&oracle, bp, p);
    if (s->dtype == FA_F32) tub_ref_compute_naive_f32(&naive, bp, p);
    cr_expect(tub_check_accuracy(bp, p, &oracle, s->dtype == FA_F32 ? &naive : NULL, 1e-11, msg, sizeof msg),
              "%s, seed %llu: %s", desc, (unsigned long long)seed, msg);
    tub_ref_free(&oracle);
    if (s->dtype == FA_F32) tub_ref_free(&naive);
}

Test(backward_masking, fully_masked_query_rows_get_exactly_zero_dq_and_finite_gradients)
{
    uint64_t seed = tu_test_seed();
    /* Nq - Nk masked rows: 31 (crossing several query blocks), and 39 with a single key. */
    static const tu_shape shapes[] = {
        {FA_F32, 2, 4, 2, 50, 19, 12, 9, TU_BHSD},
        {FA_F64, 2, 4, 2, 50, 19, 12, 9, TU_PACKED},
        {FA_F32, 1, 2, 1, 40, 1, 7, 7, TU_BSHD},
        {FA_F64, 1, 2, 1, 40, 1, 7, 7, TU_BHSD},
    };
    for (int c = 0; c < N_CONFIGS; c++) {
        fa_context *ctx = make_ctx(&configs[c]);
        for (int x = 0; x < (int)(sizeof shapes / sizeof shapes[0]); x++) {
            fa_params p = FA_PARAMS_INIT;
            p.causal = FA_CAUSAL_BOTTOM_RIGHT;
            tub_problem bp;
            char desc[320];
            uint64_t case_seed = seed + (uint64_t)(c * 16 + x);
            run_case(ctx, &shapes[x], &p, case_seed, &configs[c], &bp, desc, sizeof desc);
            int64_t masked = shapes[x].q_len - shapes[x].kv_len, where;
            /* The forward's side of the contract, which the backward relies on. */
            for (int64_t r = 0; r < tu_problem_rows(&bp.fw); r++)
                if (r % shapes[x].q_len < masked)
                    cr_assert(tu_lse_get(&bp.fw, r) == -INFINITY, "%s: lse of masked row %lld is %g", desc,
                              (long long)r, tu_lse_get(&bp.fw, r));
            int64_t n = nonzero_in_rows(&bp.grad[TUB_DQ], 0, masked, &where);
            cr_expect_eq(n, 0,
                         "%s, seed %llu: %lld dq values of fully masked rows are not 0 (first in row %lld)",
                         desc, (unsigned long long)case_seed, (long long)n, (long long)where);
            /* And the visible rows did get gradients (the case is not vacuous). */
            cr_expect_gt(nonzero_in_rows(&bp.grad[TUB_DQ], masked, shapes[x].q_len, &where) +
                             nonzero_in_rows(&bp.grad[TUB_DV], 0, shapes[x].kv_len, &where),
                         0, "%s: every gradient is 0", desc);
            tub_free(&bp);
        }
        fa_context_destroy(ctx);
    }
}

Test(backward_masking, keys_no_query_sees_get_exactly_zero_dk_and_dv)
{
    uint64_t seed = tu_test_seed();
    static const tu_shape shapes[] = {
        {FA_F32, 2, 4, 1, 19, 50, 12, 9, TU_BSHD},
        {FA_F64, 1, 4, 2, 19, 50, 12, 9, TU_BHSD},
        {FA_F64, 1, 1, 1, 1, 30, 5, 3, TU_PACKED},
    };
    for (int c = 0; c < N_CONFIGS; c++) {
        fa_context *ctx = make_ctx(&configs[c]);
        for (int x = 0; x < (int)(sizeof shapes / sizeof shapes[0]); x++) {
            fa_params p = FA_PARAMS_INIT;
            p.causal = FA_CAUSAL_TOP_LEFT;
            tub_problem bp;
            char desc[320];
            uint64_t case_seed = seed + (uint64_t)(c * 16 + x);
            run_case(ctx, &shapes[x], &p, case_seed, &configs[c], &bp, desc, sizeof desc);
            int64_t where, nq = shapes[x].q_len, nk = shapes[x].kv_len;
            for (int g = TUB_DK; g <= TUB_DV; g++) {
                int64_t n = nonzero_in_rows(&bp.grad[g], nq, nk, &where);
                cr_expect_eq(n, 0,
                             "%s, seed %llu: %lld %s values of keys no query sees are not 0 (first key %lld)",
                             desc, (unsigned long long)case_seed, (long long)n, g == TUB_DK ? "dk" : "dv",
                             (long long)where);
            }
            tub_free(&bp);
        }
        fa_context_destroy(ctx);
    }
}

/* An empty sequence, Nk = 0 (no_keys) or Nq = 0: every causal mode, f32 and f64, each layout, on
 * each context configuration; the gradients of the other side (dq without keys, dk and dv without
 * queries) must be exact zeros. */
static void check_empty_sequence(int no_keys)
{
    uint64_t seed = tu_test_seed();
    static const fa_causal causal[3] = {FA_CAUSAL_NONE, FA_CAUSAL_TOP_LEFT, FA_CAUSAL_BOTTOM_RIGHT};
    static const char *grad_name[3] = {"dq", "dk", "dv"};
    int first = no_keys ? TUB_DQ : TUB_DK, last = no_keys ? TUB_DQ : TUB_DV;
    for (int c = 0; c < N_CONFIGS; c++) {
        fa_context *ctx = make_ctx(&configs[c]);
        for (int x = 0; x < 6; x++) {
            tu_shape s = {x % 2 ? FA_F64 : FA_F32, 2, 4, 2, no_keys ? 17 : 0, no_keys ? 0 : 23, 8, 5,
                          (tu_layout)(x % 3)};
            fa_params p = FA_PARAMS_INIT;
            p.causal = causal[x / 2];
            tub_problem bp;
            char desc[320];
            uint64_t case_seed = seed + (uint64_t)(c * 16 + x);
            run_case(ctx, &s, &p, case_seed, &configs[c], &bp, desc, sizeof desc);
            for (int g = first; g <= last; g++) {
                int64_t where, n = nonzero_in_rows(&bp.grad[g], 0, g == TUB_DQ ? s.q_len : s.kv_len, &where);
                cr_expect_eq(n, 0, "%s, seed %llu: %lld %s values are not 0 with no %s (first in row %lld)",
                             desc, (unsigned long long)case_seed, (long long)n, grad_name[g],
                             no_keys ? "keys" : "queries", (long long)where);
            }
            tub_free(&bp);
        }
        fa_context_destroy(ctx);
    }
}

Test(backward_masking, no_keys_gives_exactly_zero_dq)
{
    check_empty_sequence(1);
}

Test(backward_masking, no_queries_gives_exactly_zero_dk_and_dv)
{
    check_empty_sequence(0);
}

/* B = 0 and Hq = Hkv = 0: nothing to compute; the call succeeds and writes no byte. */
Test(backward_masking, empty_batch_or_heads_succeeds_and_writes_nothing)
{
    uint64_t seed = tu_test_seed();
    static const tu_shape shapes[] = {
        {FA_F32, 0, 2, 1, 9, 11, 4, 3, TU_BHSD},
        {FA_F64, 2, 0, 0, 9, 11, 4, 3, TU_BSHD},
    };
    for (int x = 0; x < 2; x++) {
        tu_rng rng = tu_rng_make(seed + (uint64_t)x);
        tub_problem bp;
        tub_make(&bp, &shapes[x], &rng, 1.0);
        fa_params p = FA_PARAMS_INIT;
        cr_assert_eq(tub_forward(NULL, &p, &bp), FA_OK, "shape %d", x);
        fa_status st = tub_backward(NULL, &p, &bp);
        cr_expect_eq(st, FA_OK, "shape %d: status %d (%s)", x, st, fa_status_str(st));
        cr_expect(tub_grads_only_defined_written(&bp), "shape %d: a gradient byte was written", x);
        tub_free(&bp);
    }
}
