/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradients are the derivatives of the library's own forward: central finite differences of
 * the scalar loss L = sum(dout ∘ out), out = fa_forward(q, k, v), with a fixed random dout,
 * against dq, dk, dv from fa_backward, on small f64 problems (N from 1 to 33, D from 1 to 16,
 * grouped heads, Dv != D) under each causal mode, and with dropout (its mask depends on the indices
 * alone, so every perturbed forward drops the same probabilities and L stays differentiable), at a
 * sample of q, k and v entries.
 *
 * The stencil, its error and the tolerance: finite_diff.h. */
#include <criterion/criterion.h>

#include "finite_diff.h"

typedef struct {
    int64_t batch, q_heads, kv_heads, q_len, kv_len, dim, dim_v;
} fd_shape;

/* N from 1 to 33, D from 1 to 16; Nq > Nk and Nq < Nk; grouped and multi-query heads. */
static const fd_shape shapes[] = {
    {1, 1, 1, 1, 1, 1, 1},   {1, 1, 1, 2, 3, 3, 2},     {2, 2, 1, 5, 7, 4, 4},   {1, 1, 1, 9, 6, 16, 5},
    {1, 2, 1, 17, 13, 8, 8}, {1, 1, 1, 33, 33, 16, 16}, {1, 3, 3, 12, 33, 2, 3}, {1, 2, 2, 33, 1, 5, 7},
};
#define N_SHAPES           ((int)(sizeof shapes / sizeof shapes[0]))
#define SAMPLES_PER_TENSOR 14

static void check_problem(fa_context *ctx, const fd_shape *fs, fa_causal causal, double dropout,
                          uint64_t seed, int *checked)
{
    tu_shape s = {FA_F64,     fs->batch, fs->q_heads, fs->kv_heads, fs->q_len,
                  fs->kv_len, fs->dim,   fs->dim_v,   TU_BHSD};
    fa_params p = FA_PARAMS_INIT;
    p.causal = causal;
    p.dropout_p = dropout; /* the mask is a function of the indices: the same in every forward here */
    p.dropout_seed = seed;
    tu_rng rng = tu_rng_make(seed);
    tub_problem bp;
    tub_make(&bp, &s, &rng, 1.5);
    char desc[256];
    tu_shape_str(&s, &p, desc, sizeof desc);
    cr_assert_eq(tub_forward(ctx, &p, &bp), FA_OK, "%s", desc);
    cr_assert_eq(tub_backward(ctx, &p, &bp), FA_OK, "%s", desc);
    fd_run r = fd_run_make(ctx, &bp, &p, desc, seed);
    fd_check_inputs(&r, &rng, SAMPLES_PER_TENSOR);
    *checked += r.checked;
    fd_run_free(&r);
    tub_free(&bp);
}

static void run_finite_diff(fa_causal causal, double dropout)
{
    uint64_t seed = tu_test_seed();
    /* hundreds of tiny forwards: no team to wake */
    fa_context *ctx = tu_context(1, 0, 0);
    int checked = 0;
    for (int c = 0; c < N_SHAPES; c++)
        check_problem(ctx, &shapes[c], causal, dropout, seed + (uint64_t)c, &checked);
    cr_assert_gt(checked, 0);
    fa_context_destroy(ctx);
}

Test(backward_finite_diff, gradients_match_central_differences_of_the_loss_without_mask)
{
    run_finite_diff(FA_CAUSAL_NONE, 0.0);
}

Test(backward_finite_diff, gradients_match_central_differences_of_the_loss_top_left_causal)
{
    run_finite_diff(FA_CAUSAL_TOP_LEFT, 0.0);
}

Test(backward_finite_diff, gradients_match_central_differences_of_the_loss_bottom_right_causal)
{
    run_finite_diff(FA_CAUSAL_BOTTOM_RIGHT, 0.0);
}

Test(backward_finite_diff, gradients_match_central_differences_of_the_loss_with_dropout)
{
    run_finite_diff(FA_CAUSAL_BOTTOM_RIGHT, 0.3);
}
