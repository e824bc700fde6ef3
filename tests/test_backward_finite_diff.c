/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradients are the derivatives of the library's own forward: central finite differences of
 * the scalar loss L = sum(dout ∘ out), out = fa_forward(q, k, v), with a fixed random dout,
 * against dq, dk, dv from fa_backward, on small f64 problems (N from 1 to 33, D from 1 to 16,
 * grouped heads, Dv != D) under each causal mode, and with dropout (its mask depends on the indices
 * alone, so every perturbed forward drops the same probabilities and L stays differentiable), at a
 * sample of q, k and v entries.
 *
 * The difference quotient is the fourth-order central stencil
 *     g ≈ [8·(L(x+h) - L(x-h)) - (L(x+2h) - L(x-2h))] / (12h)
 * with h = 2^-10 · 2^ceil(log2 max(1, |x|)) (about 1e-3 relative). Its truncation error is
 * h^4/30 · |L'''''| (h^4 ~ 1e-12) and its rounding error about 9·|error of ΔL| / (12h): each
 * ΔL = sum(dout ∘ (out(x+a) - out(x-a))) is summed from elementwise differences, so the outputs an
 * entry does not touch cancel exactly and the error is a few ulps of the outputs it does
 * (~1e-15), i.e. ~1e-12 in g. A plain two-point difference at h ~ 1e-6 would carry ~1e-9 of
 * rounding error, too close to the 1e-7 tolerance for gradient entries near 0.01.
 *
 * Tolerance per entry: |g - analytic| <= 1e-7 · max(|analytic|, floor), with
 * floor = max(1e-3 · (largest |analytic| of that tensor), 1e-4): entries that happen to be near
 * zero are judged against the tensor's scale, and a tensor that is zero in exact arithmetic (every
 * row sees one key: out = v_j whatever q and k are) allows 1e-11 of absolute noise. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"
#include "util_backward.h"

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

static double sum_weighted_diff(const double *dout, const double *a, const double *b, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += dout[i] * (a[i] - b[i]);
    return s;
}

/* out (as [rows][Dv] doubles) after a forward with the element at `addr` set to x. */
static double *out_at(fa_context *ctx, const fa_params *p, tub_problem *bp, double *addr, double x)
{
    double saved = *addr;
    *addr = x;
    fa_status st = tub_forward(ctx, p, bp);
    *addr = saved;
    cr_assert_eq(st, FA_OK, "forward status %d", st);
    return tu_out_copy(&bp->fw);
}

static double *element(const fa_tensor *t, int64_t flat)
{
    int64_t d = flat % t->dim, s = (flat / t->dim) % t->seq, h = (flat / (t->dim * t->seq)) % t->heads,
            b = flat / (t->dim * t->seq * t->heads);
    return (double *)t->data + b * t->stride_batch + h * t->stride_head + s * t->stride_seq + d;
}

/* The entries to probe: all of a small tensor; else its first and last entries, the first and last
 * entries of the last row, and random ones. */
static int64_t pick_entries(const fa_tensor *t, tu_rng *rng, int64_t *idx)
{
    int64_t n = tub_numel(t);
    if (n <= SAMPLES_PER_TENSOR) {
        for (int64_t i = 0; i < n; i++) idx[i] = i;
        return n;
    }
    int64_t m = 0;
    idx[m++] = 0;
    idx[m++] = n - 1;
    idx[m++] = n - t->dim;
    idx[m++] = t->dim - 1;
    while (m < SAMPLES_PER_TENSOR) idx[m++] = tu_rng_below(rng, n);
    return m;
}

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
    int64_t rows = tu_problem_rows(&bp.fw);
    double *dout = malloc(sizeof(double) * (size_t)(rows * s.dim_v + 1));
    double *dout_view = tub_view_copy(&bp.dout); /* [B][Hq][Nq][Dv], the order of tu_out_copy */
    for (int64_t i = 0; i < rows * s.dim_v; i++) dout[i] = dout_view[i];
    free(dout_view);

    const fa_tensor *inputs[3] = {&bp.fw.q, &bp.fw.k, &bp.fw.v};
    static const char *names[3] = {"q", "k", "v"};
    for (int g = 0; g < 3; g++) {
        double *analytic = tub_view_copy(&bp.grad[g]);
        int64_t n = tub_numel(&bp.grad[g]);
        double scale = 0.0;
        for (int64_t i = 0; i < n; i++)
            if (fabs(analytic[i]) > scale) scale = fabs(analytic[i]);
        double floor_abs = 1e-3 * scale > 1e-4 ? 1e-3 * scale : 1e-4;
        int64_t idx[SAMPLES_PER_TENSOR];
        int64_t m = pick_entries(inputs[g], &rng, idx);
        for (int64_t e = 0; e < m; e++) {
            double *addr = element(inputs[g], idx[e]);
            double x = *addr;
            double h = ldexp(1.0, -10 + (fabs(x) > 1.0 ? (int)ceil(log2(fabs(x))) : 0));
            double *p1 = out_at(ctx, &p, &bp, addr, x + h), *m1 = out_at(ctx, &p, &bp, addr, x - h);
            double *p2 = out_at(ctx, &p, &bp, addr, x + 2 * h), *m2 = out_at(ctx, &p, &bp, addr, x - 2 * h);
            double d1 = sum_weighted_diff(dout, p1, m1, rows * s.dim_v);
            double d2 = sum_weighted_diff(dout, p2, m2, rows * s.dim_v);
            double fd = (8.0 * d1 - d2) / (12.0 * h);
            double an = analytic[idx[e]];
            double tol = 1e-7 * (fabs(an) > floor_abs ? fabs(an) : floor_abs);
            cr_expect(fabs(fd - an) <= tol,
                      "%s, seed %llu: dL/d%s at flat index %lld: finite difference %.15g, fa_backward %.15g, "
                      "|diff| %.3e > %.3e",
                      desc, (unsigned long long)seed, names[g], (long long)idx[e], fd, an, fabs(fd - an),
                      tol);
            fprintf(stderr, "FD ratio %.3g diff %.3e an %.3e\n", fabs(fd - an) / tol, fabs(fd - an), an);
            (*checked)++;
            free(p1);
            free(m1);
            free(p2);
            free(m2);
        }
        free(analytic);
    }
    free(dout);
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
