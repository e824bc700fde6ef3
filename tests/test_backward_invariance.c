/* SPDX-License-Identifier: BSD-3-Clause */
/* Determinism of the backward (include/flashattn.h, fa_backward: "dq, dk and dv are bitwise
 * identical for every thread count, binding mode and repetition"): the same out, lse and dout fed
 * to contexts with 1, 2, 3, 4 and 7 threads under each binding mode (NONE, CORE, SPREAD, AUTO)
 * give the same bytes in dq, dk and dv (memcmp per element), f32 and f64, with and without a
 * causal mask; and 20 repetitions on one shape give the same bytes every time. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context_matrix.h"
#include "util.h"
#include "util_backward.h"

typedef struct {
    tu_shape shape;
    fa_causal causal;
} inv_case;

/* More items than threads; grouped and multi-query heads (dk/dv sum over the group); a masked
 * causal case with fully masked rows; one long single sequence (B = H = 1), where the work can
 * only be spread over key and query blocks. */
static const inv_case cases[] = {
    {{FA_F32, 2, 4, 2, 100, 110, 32, 24, TU_BHSD}, FA_CAUSAL_NONE},
    {{FA_F64, 2, 4, 2, 100, 110, 32, 24, TU_BSHD}, FA_CAUSAL_NONE},
    {{FA_F32, 2, 4, 1, 110, 100, 32, 24, TU_PACKED}, FA_CAUSAL_TOP_LEFT},
    {{FA_F64, 1, 4, 1, 120, 90, 32, 24, TU_BHSD}, FA_CAUSAL_BOTTOM_RIGHT},
    {{FA_F32, 1, 1, 1, 600, 600, 16, 16, TU_BHSD}, FA_CAUSAL_TOP_LEFT},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

/* A second problem with the same inputs, out, lse and dout as `first` (its own gradient storage). */
static void make_twin(tub_problem *twin, const tub_problem *first, uint64_t seed)
{
    tu_rng rng = tu_rng_make(seed);
    tub_make(twin, &first->fw.shape, &rng, 2.5);
    memcpy(twin->fw.out_buf.base, first->fw.out_buf.base, first->fw.out_buf.bytes + 2 * TU_GUARD);
    memcpy(twin->fw.lse_buf.base, first->fw.lse_buf.base, first->fw.lse_buf.bytes + 2 * TU_GUARD);
}

static void expect_same_grads(const tub_problem *a, const tub_problem *b, const char *what, const char *desc,
                              uint64_t seed)
{
    static const char *names[3] = {"dq", "dk", "dv"};
    for (int g = 0; g < 3; g++) {
        int64_t where;
        cr_expect(tub_views_bitwise_equal(&a->grad[g], &b->grad[g], &where),
                  "%s, seed %llu: %s differs from 1 thread / bind NONE in %s at flat index %lld", desc,
                  (unsigned long long)seed, what, names[g], (long long)where);
    }
    cr_expect(tub_grads_only_defined_written(b), "%s, seed %llu: %s wrote outside dq/dk/dv", desc,
              (unsigned long long)seed, what);
}

static void run_invariance(int block_q, int block_k)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx[CM_CONTEXTS];
    cm_create(ctx, block_q, block_k);
    for (int c = 0; c < N_CASES; c++) {
        uint64_t case_seed = seed + (uint64_t)c;
        tu_rng rng = tu_rng_make(case_seed);
        tub_problem first, pr;
        tub_make(&first, &cases[c].shape, &rng, 2.5);
        fa_params p = FA_PARAMS_INIT;
        p.causal = cases[c].causal;
        char desc[320];
        tub_desc(&first, &p, block_q, block_k, desc, sizeof desc);
        cr_assert_eq(tub_forward(ctx[0], &p, &first), FA_OK, "%s", desc);
        cr_assert_eq(tub_backward(ctx[0], &p, &first), FA_OK, "%s", desc);
        make_twin(&pr, &first, case_seed);
        for (int x = 1; x < CM_CONTEXTS; x++) {
            tub_fill_grad_canary(&pr);
            fa_status st = tub_backward(ctx[x], &p, &pr);
            cr_assert_eq(st, FA_OK, "%s: status %d", desc, st);
            char what[64];
            snprintf(what, sizeof what, "%d threads, bind %d", cm_threads(x), (int)cm_bind(x));
            expect_same_grads(&first, &pr, what, desc, case_seed);
        }
        tub_free(&first);
        tub_free(&pr);
    }
    cm_destroy(ctx);
}

Test(backward_invariance, gradients_bitwise_equal_across_thread_counts_and_bindings)
{
    run_invariance(0, 0);
}

Test(backward_invariance, gradients_bitwise_equal_across_thread_counts_and_bindings_with_fixed_odd_blocks)
{
    run_invariance(13, 24);
}

/* 20 repetitions of one call, alternating a 4-thread and a 7-thread context, on the causal grouped
 * shape (the one with the most cross-item structure): the same bytes every time. */
Test(backward_invariance, twenty_repetitions_give_identical_bytes)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx[3];
    static const int threads[3] = {1, 4, 7};
    for (int x = 0; x < 3; x++) {
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.num_threads = threads[x];
        cr_assert_eq(fa_context_create(&ctx[x], &o), FA_OK);
    }
    for (int t = 0; t < 2; t++) {
        const inv_case *c = &cases[2 + t]; /* f32 TOP_LEFT MQA, f64 BOTTOM_RIGHT */
        uint64_t case_seed = seed + (uint64_t)t;
        tu_rng rng = tu_rng_make(case_seed);
        tub_problem first, pr;
        tub_make(&first, &c->shape, &rng, 2.5);
        fa_params p = FA_PARAMS_INIT;
        p.causal = c->causal;
        char desc[320];
        tub_desc(&first, &p, 0, 0, desc, sizeof desc);
        cr_assert_eq(tub_forward(ctx[0], &p, &first), FA_OK, "%s", desc);
        cr_assert_eq(tub_backward(ctx[0], &p, &first), FA_OK, "%s", desc);
        make_twin(&pr, &first, case_seed);
        for (int rep = 0; rep < 20; rep++) {
            tub_fill_grad_canary(&pr);
            cr_assert_eq(tub_backward(ctx[1 + rep % 2], &p, &pr), FA_OK, "%s, repetition %d", desc, rep);
            char what[64];
            snprintf(what, sizeof what, "repetition %d (%d threads)", rep, threads[1 + rep % 2]);
            expect_same_grads(&first, &pr, what, desc, case_seed);
        }
        tub_free(&first);
        tub_free(&pr);
    }
    for (int x = 0; x < 3; x++) fa_context_destroy(ctx[x]);
}
