/* SPDX-License-Identifier: BSD-3-Clause */
/* Determinism, forward and backward (include/flashattn.h, "Determinism"; fa_backward: "dq, dk and
 * dv are bitwise identical for every thread count, binding mode and repetition"): out and lse, and
 * dq, dk and dv from the same out, lse and dout, are the same bytes for contexts with 1, 2, 3, 4 and
 * 7 threads under each binding mode (NONE, CORE, SPREAD, AUTO), automatic and fixed odd blocks, f32
 * and f64, with and without a causal mask; and for every repetition. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context_matrix.h"
#include "util.h"
#include "util_backward.h"

typedef struct {
    tub_direction dir;
    tu_shape shape;
    fa_causal causal;
} inv_case;

/* Forward: square-ish, with more items than threads; grouped heads; a partially masked causal case;
 * and a decode shape (few queries, many keys) where a split over keys would be tempting.
 * Backward: more items than threads; grouped and multi-query heads (dk/dv sum over the group); a
 * masked causal case with fully masked rows; one long single sequence (B = H = 1), where the work
 * can only be spread over key and query blocks. */
static const inv_case cases[] = {
    {TUB_FORWARD, {FA_F32, 2, 4, 2, 150, 170, 40, 24, TU_BHSD}, FA_CAUSAL_NONE},
    {TUB_FORWARD, {FA_F64, 2, 4, 2, 150, 170, 40, 24, TU_BSHD}, FA_CAUSAL_NONE},
    {TUB_FORWARD, {FA_F32, 2, 4, 1, 150, 170, 40, 24, TU_PACKED}, FA_CAUSAL_TOP_LEFT},
    {TUB_FORWARD, {FA_F64, 2, 4, 2, 170, 150, 40, 24, TU_BHSD}, FA_CAUSAL_BOTTOM_RIGHT},
    {TUB_FORWARD, {FA_F32, 1, 4, 1, 1, 3000, 64, 64, TU_BHSD}, FA_CAUSAL_NONE},
    {TUB_FORWARD, {FA_F64, 1, 2, 2, 3, 2000, 32, 48, TU_BSHD}, FA_CAUSAL_BOTTOM_RIGHT},
    {TUB_BACKWARD, {FA_F32, 2, 4, 2, 100, 110, 32, 24, TU_BHSD}, FA_CAUSAL_NONE},
    {TUB_BACKWARD, {FA_F64, 2, 4, 2, 100, 110, 32, 24, TU_BSHD}, FA_CAUSAL_NONE},
    {TUB_BACKWARD, {FA_F32, 2, 4, 1, 110, 100, 32, 24, TU_PACKED}, FA_CAUSAL_TOP_LEFT},
    {TUB_BACKWARD, {FA_F64, 1, 4, 1, 120, 90, 32, 24, TU_BHSD}, FA_CAUSAL_BOTTOM_RIGHT},
    {TUB_BACKWARD, {FA_F32, 1, 1, 1, 600, 600, 16, 16, TU_BHSD}, FA_CAUSAL_TOP_LEFT},
};
#define N_CASES         ((int)(sizeof cases / sizeof cases[0]))
#define N_FORWARD_CASES 6

/* A second problem with the same inputs, out, lse and dout as `first` (its own gradient storage). */
static void make_twin(tub_problem *twin, const tub_problem *first, uint64_t seed)
{
    tu_rng rng = tu_rng_make(seed);
    tub_make(twin, &first->fw.shape, &rng, 2.5);
    memcpy(twin->fw.out_buf.base, first->fw.out_buf.base, first->fw.out_buf.bytes + 2 * KIT_GUARD);
    memcpy(twin->fw.lse_buf.base, first->fw.lse_buf.base, first->fw.lse_buf.bytes + 2 * KIT_GUARD);
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

/* Forward: out and lse of every context of the matrix against ctx[0]'s. */
static void forward_across_contexts(fa_context *ctx[CM_CONTEXTS], const inv_case *ic, uint64_t seed,
                                    int block_q, int block_k)
{
    tu_rng rng = tu_rng_make(seed);
    tu_problem first, pr;
    tu_problem_make(&first, &ic->shape, &rng, 2.5);
    rng = tu_rng_make(seed);
    tu_problem_make(&pr, &ic->shape, &rng, 2.5); /* same inputs, own outputs */
    fa_params p = FA_PARAMS_INIT;
    p.causal = ic->causal;
    char desc[256];
    tu_shape_str(&ic->shape, &p, desc, sizeof desc);
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

/* Backward: dq, dk, dv of every context of the matrix, from ctx[0]'s out and lse, against ctx[0]'s. */
static void backward_across_contexts(fa_context *ctx[CM_CONTEXTS], const inv_case *ic, uint64_t seed,
                                     int block_q, int block_k)
{
    tu_rng rng = tu_rng_make(seed);
    tub_problem first, pr;
    tub_make(&first, &ic->shape, &rng, 2.5);
    fa_params p = FA_PARAMS_INIT;
    p.causal = ic->causal;
    char desc[320];
    tub_desc(&first, &p, block_q, block_k, desc, sizeof desc);
    cr_assert_eq(tub_forward(ctx[0], &p, &first), FA_OK, "%s", desc);
    cr_assert_eq(tub_backward(ctx[0], &p, &first), FA_OK, "%s", desc);
    make_twin(&pr, &first, seed);
    for (int x = 1; x < CM_CONTEXTS; x++) {
        tub_fill_grad_canary(&pr);
        fa_status st = tub_backward(ctx[x], &p, &pr);
        cr_assert_eq(st, FA_OK, "%s: status %d", desc, st);
        char what[64];
        snprintf(what, sizeof what, "%d threads, bind %d", cm_threads(x), (int)cm_bind(x));
        expect_same_grads(&first, &pr, what, desc, seed);
    }
    tub_free(&first);
    tub_free(&pr);
}

/* Every case of one direction over the context matrix with the given blocks (0: automatic). */
static void run_invariance(tub_direction dir, int block_q, int block_k)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx[CM_CONTEXTS];
    cm_create(ctx, block_q, block_k);
    for (int c = 0; c < N_CASES; c++) {
        if (cases[c].dir != dir) continue;
        if (dir == TUB_FORWARD)
            forward_across_contexts(ctx, &cases[c], seed + (uint64_t)c, block_q, block_k);
        else
            backward_across_contexts(ctx, &cases[c], seed + (uint64_t)c, block_q, block_k);
    }
    cm_destroy(ctx);
}

/* One test per direction and block choice, so that a run can pick one (the emulated aarch64 stage
 * of scripts/test.sh runs one of them per table). */
Test(invariance, out_and_lse_bitwise_equal_across_thread_counts_and_bindings)
{
    run_invariance(TUB_FORWARD, 0, 0);
}

Test(invariance, out_and_lse_bitwise_equal_across_thread_counts_and_bindings_with_fixed_odd_blocks)
{
    run_invariance(TUB_FORWARD, 13, 24);
}

Test(invariance, gradients_bitwise_equal_across_thread_counts_and_bindings)
{
    run_invariance(TUB_BACKWARD, 0, 0);
}

Test(invariance, gradients_bitwise_equal_across_thread_counts_and_bindings_with_fixed_odd_blocks)
{
    run_invariance(TUB_BACKWARD, 13, 24);
}

/* The same context called again, a fresh context, and the default (NULL) context: same bytes. */
Test(invariance, repeated_calls_give_identical_bytes)
{
    uint64_t seed = tu_test_seed();
    for (int c = 0; c < N_FORWARD_CASES; c++) {
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

/* 20 repetitions of one call, alternating a 4-thread and a 7-thread context, on the causal grouped
 * shape (the one with the most cross-item structure): the same bytes every time. */
Test(invariance, twenty_backward_repetitions_give_identical_gradient_bytes)
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
        const inv_case *c = &cases[N_FORWARD_CASES + 2 + t]; /* f32 TOP_LEFT MQA, f64 BOTTOM_RIGHT */
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
