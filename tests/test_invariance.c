/* SPDX-License-Identifier: BSD-3-Clause */
/* Determinism: out and lse are the same bytes for every thread count, every binding mode and
 * every repetition (include/flashattn.h, "Determinism"). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "context_matrix.h"
#include "util.h"

typedef struct {
    tu_shape shape;
    fa_causal causal;
} inv_case;

/* Square-ish, with more items than threads; grouped heads; a partially masked causal case; and a
 * decode shape (few queries, many keys) where a split over keys would be tempting. */
static const inv_case cases[] = {
    {{FA_F32, 2, 4, 2, 150, 170, 40, 24, TU_BHSD}, FA_CAUSAL_NONE},
    {{FA_F64, 2, 4, 2, 150, 170, 40, 24, TU_BSHD}, FA_CAUSAL_NONE},
    {{FA_F32, 2, 4, 1, 150, 170, 40, 24, TU_PACKED}, FA_CAUSAL_TOP_LEFT},
    {{FA_F64, 2, 4, 2, 170, 150, 40, 24, TU_BHSD}, FA_CAUSAL_BOTTOM_RIGHT},
    {{FA_F32, 1, 4, 1, 1, 3000, 64, 64, TU_BHSD}, FA_CAUSAL_NONE},
    {{FA_F64, 1, 2, 2, 3, 2000, 32, 48, TU_BSHD}, FA_CAUSAL_BOTTOM_RIGHT},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static void run_invariance(int block_q, int block_k)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx[CM_CONTEXTS];
    cm_create(ctx, block_q, block_k);
    for (int c = 0; c < N_CASES; c++) {
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tu_problem first, pr;
        tu_problem_make(&first, &cases[c].shape, &rng, 2.5);
        rng = tu_rng_make(seed + (uint64_t)c);
        tu_problem_make(&pr, &cases[c].shape, &rng, 2.5); /* same inputs, own outputs */
        fa_params p = FA_PARAMS_INIT;
        p.causal = cases[c].causal;
        char desc[256];
        tu_shape_str(&cases[c].shape, &p, desc, sizeof desc);
        fa_status st = fa_forward(ctx[0], &p, &first.q, &first.k, &first.v, &first.out, first.lse);
        cr_assert_eq(st, FA_OK, "%s, seed %llu: status %d", desc, (unsigned long long)seed, st);
        for (int x = 1; x < CM_CONTEXTS; x++) {
            tu_problem_fill_canary(&pr);
            st = fa_forward(ctx[x], &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
            cr_assert_eq(st, FA_OK, "%s, seed %llu: status %d", desc, (unsigned long long)seed, st);
            int64_t where = 0;
            cr_expect(
                tu_outputs_bitwise_equal(&first, &pr, &where),
                "%s, blocks %d/%d, seed %llu: %d threads bind %d differs from 1 thread bind NONE at %s %lld",
                desc, block_q, block_k, (unsigned long long)seed, cm_threads(x), (int)cm_bind(x),
                where < 0 ? "lse" : "out row", (long long)where);
        }
        tu_problem_free(&first);
        tu_problem_free(&pr);
    }
    cm_destroy(ctx);
}

Test(invariance, out_and_lse_bitwise_equal_across_thread_counts_and_bindings)
{
    run_invariance(0, 0);
}

Test(invariance, out_and_lse_bitwise_equal_across_thread_counts_and_bindings_with_fixed_odd_blocks)
{
    run_invariance(13, 24);
}

/* The same context called again, a fresh context, and the default (NULL) context: same bytes. */
Test(invariance, repeated_calls_give_identical_bytes)
{
    uint64_t seed = tu_test_seed();
    for (int c = 0; c < N_CASES; c++) {
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tu_problem first, pr;
        tu_problem_make(&first, &cases[c].shape, &rng, 2.5);
        rng = tu_rng_make(seed + (uint64_t)c);
        tu_problem_make(&pr, &cases[c].shape, &rng, 2.5);
        fa_params p = FA_PARAMS_INIT;
        p.causal = cases[c].causal;
        char desc[256];
        tu_shape_str(&cases[c].shape, &p, desc, sizeof desc);
        fa_context *ctx;
        cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
        cr_assert_eq(fa_forward(ctx, &p, &first.q, &first.k, &first.v, &first.out, first.lse), FA_OK);
        for (int rep = 0; rep < 5; rep++) {
            fa_context *use = ctx, *fresh = NULL;
            if (rep == 3) {
                cr_assert_eq(fa_context_create(&fresh, NULL), FA_OK);
                use = fresh;
            }
            if (rep == 4) use = NULL;
            tu_problem_fill_canary(&pr);
            fa_status st = fa_forward(use, &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
            cr_assert_eq(st, FA_OK, "%s, seed %llu: status %d", desc, (unsigned long long)seed, st);
            int64_t where = 0;
            cr_expect(tu_outputs_bitwise_equal(&first, &pr, &where),
                      "%s, seed %llu: repetition %d (%s) differs at %s %lld", desc, (unsigned long long)seed,
                      rep,
                      rep == 3   ? "fresh context"
                      : rep == 4 ? "NULL context"
                                 : "same context",
                      where < 0 ? "lse" : "out row", (long long)where);
            fa_context_destroy(fresh);
        }
        fa_context_destroy(ctx);
        tu_problem_free(&first);
        tu_problem_free(&pr);
    }
}
