/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradients through the score modifiers are the derivatives of the library's own forward:
 * central finite differences of L = sum(dout ∘ out), out = fa_forward(q, k, v, p), against dq, dk,
 * dv and dsinks from fa_backward, on small f64 problems, through softcap (its 1 - tanh², capped
 * hard at 1 and 1.5), ALiBi, bias (constants: they change the probabilities, not the chain rule),
 * windows and sinks (dsinks = dL/dsinks[h], a float rounded once).
 *
 * Same stencil and tolerance as test_backward_finite_diff.c: the fourth-order central difference
 *     g ≈ [8·(L(x+h) - L(x-h)) - (L(x+2h) - L(x-2h))] / (12h),  h = 2^-10 · 2^ceil(log2 max(1, |x|)),
 * each ΔL summed from elementwise differences of out (so untouched outputs cancel exactly), and
 * |g - analytic| <= 1e-7 · max(|analytic|, floor), floor = max(1e-3 · max|analytic of that tensor|,
 * 1e-4). A sink logit is a float: the sinks are multiples of 2^-8 below 4 in magnitude (tm_mods), so
 * x ± 2h is exact in float too, and dsinks' rounding to float (at most 2^-24 relative) stays
 * inside the 1e-7. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "modifiers.h"
#include "util.h"
#include "util_backward.h"

#define SAMPLES_PER_TENSOR 10

/* batch, q heads, kv heads, Nq, Nk, D, Dv: Nq < Nk and Nq > Nk, grouped and multi-query heads */
static const tu_shape shapes[] = {
    {FA_F64, 1, 2, 1, 9, 14, 6, 5, TU_BHSD},
    {FA_F64, 2, 2, 2, 13, 7, 4, 3, TU_BHSD},
    {FA_F64, 1, 3, 1, 17, 21, 8, 8, TU_BHSD},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static const struct {
    const char *name;
    tm_spec spec;
} configs[] = {
    {"softcap 1.5 + ALiBi", {FA_CAUSAL_NONE, -1, -1, 1.5, 1, TM_BIAS_OFF, 0}},
    {"sinks + ALiBi + window 4/1, bottom-right", {FA_CAUSAL_BOTTOM_RIGHT, 4, 1, 0.0, 1, TM_BIAS_OFF, 1}},
    {"softcap 1 + sinks + key padding, top-left",
     {FA_CAUSAL_TOP_LEFT, -1, -1, 1.0, 0, TM_BIAS_KEY_PADDING, 1}},
    {"all: softcap 2, ALiBi, full bias, sinks, window 5/-1",
     {FA_CAUSAL_NONE, 5, -1, 2.0, 1, TM_BIAS_FULL, 1}},
};
#define N_CONFIGS ((int)(sizeof configs / sizeof configs[0]))

/* ΔL = sum(dout ∘ (out(a) - out(b))), element by element. */
static double loss_diff(const double *dout, const double *a, const double *b, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += dout[i] * (a[i] - b[i]);
    return s;
}

/* out (as [rows][Dv] doubles) of a forward with *x set to value (then restored). */
static double *out_with_f64(fa_context *ctx, const fa_params *p, tub_problem *bp, double *x, double value)
{
    double saved = *x;
    *x = value;
    fa_status st = tub_forward(ctx, p, bp);
    *x = saved;
    cr_assert_eq(st, FA_OK, "forward status %d", st);
    return tu_out_copy(&bp->fw);
}

static double *out_with_f32(fa_context *ctx, const fa_params *p, tub_problem *bp, float *x, double value)
{
    float saved = *x;
    *x = (float)value;
    cr_assert_eq((double)*x, value, "a sink of %.17g is not a float", value);
    fa_status st = tub_forward(ctx, p, bp);
    *x = saved;
    cr_assert_eq(st, FA_OK, "forward status %d", st);
    return tu_out_copy(&bp->fw);
}

typedef struct {
    fa_context *ctx;
    tub_problem *bp;
    const fa_params *p;
    const double *dout;
    int64_t n_out;
    const char *desc;
    uint64_t seed;
    int checked;
} fd_run;

static double step_for(double x)
{
    return ldexp(1.0, -10 + (fabs(x) > 1.0 ? (int)ceil(log2(fabs(x))) : 0));
}

static void expect_close(fd_run *r, const char *what, int64_t index, double fd, double an, double floor_abs)
{
    double tol = 1e-7 * (fabs(an) > floor_abs ? fabs(an) : floor_abs);
    cr_expect(fabs(fd - an) <= tol,
              "%s, seed %llu: dL/d%s at flat index %lld: finite difference %.15g, fa_backward %.15g, |diff| "
              "%.3e > %.3e",
              r->desc, (unsigned long long)r->seed, what, (long long)index, fd, an, fabs(fd - an), tol);
    r->checked++;
}

static double tensor_floor(const double *g, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(g[i]) > m) m = fabs(g[i]);
    return 1e-3 * m > 1e-4 ? 1e-3 * m : 1e-4;
}

/* dq, dk, dv at a sample of entries: all of a small tensor, else its ends and random ones. */
static void check_inputs(fd_run *r, tu_rng *rng)
{
    const fa_tensor *inputs[3] = {&r->bp->fw.q, &r->bp->fw.k, &r->bp->fw.v};
    static const char *names[3] = {"q", "k", "v"};
    for (int g = 0; g < 3; g++) {
        const fa_tensor *t = inputs[g];
        double *analytic = tub_view_copy(&r->bp->grad[g]);
        int64_t n = tub_numel(t);
        double floor_abs = tensor_floor(analytic, n);
        for (int e = 0; e < SAMPLES_PER_TENSOR && e < n; e++) {
            int64_t flat = e == 0 ? 0 : e == 1 ? n - 1 : tu_rng_below(rng, n);
            int64_t d = flat % t->dim, s = (flat / t->dim) % t->seq,
                    h = (flat / (t->dim * t->seq)) % t->heads, b = flat / (t->dim * t->seq * t->heads);
            double *x = (double *)t->data + b * t->stride_batch + h * t->stride_head + s * t->stride_seq + d;
            double x0 = *x, step = step_for(x0);
            double *p1 = out_with_f64(r->ctx, r->p, r->bp, x, x0 + step),
                   *m1 = out_with_f64(r->ctx, r->p, r->bp, x, x0 - step);
            double *p2 = out_with_f64(r->ctx, r->p, r->bp, x, x0 + 2 * step),
                   *m2 = out_with_f64(r->ctx, r->p, r->bp, x, x0 - 2 * step);
            double fd = (8.0 * loss_diff(r->dout, p1, m1, r->n_out) - loss_diff(r->dout, p2, m2, r->n_out)) /
                        (12.0 * step);
            expect_close(r, names[g], flat, fd, analytic[flat], floor_abs);
            free(p1);
            free(m1);
            free(p2);
            free(m2);
        }
        free(analytic);
    }
}

/* dsinks[h] for every head. */
static void check_sinks(fd_run *r, tm_mods *m, int64_t heads)
{
    double *analytic = malloc(sizeof(double) * (size_t)heads);
    for (int64_t h = 0; h < heads; h++) analytic[h] = (double)m->p.dsinks[h];
    double floor_abs = tensor_floor(analytic, heads);
    for (int64_t h = 0; h < heads; h++) {
        float *x = &m->sinks[h];
        double x0 = (double)*x, step = step_for(x0);
        double *p1 = out_with_f32(r->ctx, r->p, r->bp, x, x0 + step),
               *m1 = out_with_f32(r->ctx, r->p, r->bp, x, x0 - step);
        double *p2 = out_with_f32(r->ctx, r->p, r->bp, x, x0 + 2 * step),
               *m2 = out_with_f32(r->ctx, r->p, r->bp, x, x0 - 2 * step);
        double fd = (8.0 * loss_diff(r->dout, p1, m1, r->n_out) - loss_diff(r->dout, p2, m2, r->n_out)) /
                    (12.0 * step);
        expect_close(r, "sinks", h, fd, analytic[h], floor_abs);
        free(p1);
        free(m1);
        free(p2);
        free(m2);
    }
    free(analytic);
}

static void check_problem(fa_context *ctx, const tu_shape *s, const tm_spec *spec, const char *name,
                          uint64_t seed, int *checked)
{
    tu_rng rng = tu_rng_make(seed);
    tub_problem bp;
    tub_make(&bp, s, &rng, 1.5);
    tm_mods m;
    tm_mods_make(&m, spec, s, 0.0, &rng);
    if (spec->sinks) tm_mods_want_dsinks(&m);
    char desc[600], shape[512];
    tm_desc(s, &m, shape, sizeof shape);
    snprintf(desc, sizeof desc, "%s (%s)", name, shape);
    cr_assert_eq(tub_forward(ctx, &m.p, &bp), FA_OK, "%s", desc);
    cr_assert_eq(tub_backward(ctx, &m.p, &bp), FA_OK, "%s", desc);
    fa_params p_forward = m.p; /* the probing forwards need no dsinks */
    p_forward.dsinks = NULL;
    fd_run r = {ctx,  &bp,  &p_forward, tub_view_copy(&bp.dout), tu_problem_rows(&bp.fw) * s->dim_v,
                desc, seed, 0};
    check_inputs(&r, &rng);
    if (spec->sinks) check_sinks(&r, &m, s->q_heads);
    *checked += r.checked;
    free((double *)r.dout);
    tm_mods_free(&m);
    tub_free(&bp);
}

Test(backward_modifiers_finite_diff, gradients_and_dsinks_match_central_differences_through_every_modifier)
{
    uint64_t seed = tu_test_seed();
    /* hundreds of tiny forwards: no team to wake */
    /* several tiles each way, windows skipping some */
    fa_context *ctx = tu_context(1, 5, 4);
    int checked = 0;
    for (int c = 0; c < N_CONFIGS; c++)
        for (int x = 0; x < N_SHAPES; x++)
            check_problem(ctx, &shapes[x], &configs[c].spec, configs[c].name, seed + (uint64_t)(10 * c + x),
                          &checked);
    cr_assert_gt(checked, 0);
    fa_context_destroy(ctx);
}
