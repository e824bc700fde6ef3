/* SPDX-License-Identifier: BSD-3-Clause */
/* Gradients against central finite differences; see finite_diff.h. */
#include "finite_diff.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

fd_run fd_run_make(fa_context *ctx, tub_problem *bp, const fa_params *p, const char *desc, uint64_t seed)
{
    fd_run r = {ctx,  bp,   p, tub_view_copy(&bp->dout), tu_problem_rows(&bp->fw) * bp->fw.out.dim,
                desc, seed, 0};
    return r;
}

void fd_run_free(fd_run *r)
{
    free(r->dout);
    r->dout = NULL;
}

double fd_floor(const double *g, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(g[i]) > m) m = fabs(g[i]);
    return 1e-3 * m > 1e-4 ? 1e-3 * m : 1e-4;
}

static double step_for(double x)
{
    return ldexp(1.0, -10 + (fabs(x) > 1.0 ? (int)ceil(log2(fabs(x))) : 0));
}

/* ΔL = sum(dout ∘ (out(a) - out(b))), element by element. */
static double loss_diff(const fd_run *r, const double *a, const double *b)
{
    double s = 0.0;
    for (int64_t i = 0; i < r->n_out; i++) s += r->dout[i] * (a[i] - b[i]);
    return s;
}

/* The entry at x, an f64 or (!is_double) a float, as a double; and set to value (exact for a float
 * only where value is one: out_with checks). */
static double entry_get(const void *x, int is_double)
{
    return is_double ? *(const double *)x : (double)*(const float *)x;
}

static void entry_set(void *x, int is_double, double value)
{
    if (is_double)
        *(double *)x = value;
    else
        *(float *)x = (float)value;
}

/* out (as tu_out_copy gives it) of a forward with the entry at x set to value, then restored. */
static double *out_with(fd_run *r, void *x, int is_double, double value)
{
    const double saved = entry_get(x, is_double);
    entry_set(x, is_double, value);
    cr_assert_eq(entry_get(x, is_double), value, "%s: %.17g is not a float", r->desc, value);
    fa_status st = tub_forward(r->ctx, r->p, r->bp);
    entry_set(x, is_double, saved);
    cr_assert_eq(st, FA_OK, "%s: forward status %d", r->desc, st);
    return tu_out_copy(&r->bp->fw);
}

static void check_entry(fd_run *r, const char *what, int64_t index, void *x, int is_double, double analytic,
                        double floor_abs)
{
    const double x0 = entry_get(x, is_double), h = step_for(x0);
    double *p1 = out_with(r, x, is_double, x0 + h), *m1 = out_with(r, x, is_double, x0 - h);
    double *p2 = out_with(r, x, is_double, x0 + 2 * h), *m2 = out_with(r, x, is_double, x0 - 2 * h);
    const double fd = (8.0 * loss_diff(r, p1, m1) - loss_diff(r, p2, m2)) / (12.0 * h);
    const double tol = 1e-7 * (fabs(analytic) > floor_abs ? fabs(analytic) : floor_abs);
    cr_expect(fabs(fd - analytic) <= tol,
              "%s, seed %llu: dL/d%s at flat index %lld: finite difference %.15g, fa_backward %.15g, |diff| "
              "%.3e > %.3e",
              r->desc, (unsigned long long)r->seed, what, (long long)index, fd, analytic, fabs(fd - analytic),
              tol);
    r->checked++;
    free(p1);
    free(m1);
    free(p2);
    free(m2);
}

/* The entries to probe: all of a small tensor; else its first and last entries, the first and last
 * entries of the last row, and random ones. */
static int64_t pick_entries(const fa_tensor *t, tu_rng *rng, int samples, int64_t *idx)
{
    const int64_t n = tub_numel(t);
    if (n <= samples) {
        for (int64_t i = 0; i < n; i++) idx[i] = i;
        return n;
    }
    int64_t m = 0;
    idx[m++] = 0;
    idx[m++] = n - 1;
    idx[m++] = n - t->dim;
    idx[m++] = t->dim - 1;
    while (m < samples) idx[m++] = tu_rng_below(rng, n);
    return m;
}

void fd_check_inputs(fd_run *r, tu_rng *rng, int samples)
{
    const fa_tensor *inputs[3] = {&r->bp->fw.q, &r->bp->fw.k, &r->bp->fw.v};
    static const char *const names[3] = {"q", "k", "v"};
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)samples);
    for (int g = 0; g < 3; g++) {
        const fa_tensor *t = inputs[g];
        double *analytic = tub_view_copy(&r->bp->grad[g]);
        const double floor_abs = fd_floor(analytic, tub_numel(t));
        const int64_t m = pick_entries(t, rng, samples, idx);
        for (int64_t e = 0; e < m; e++) {
            const int64_t flat = idx[e], d = flat % t->dim, s = (flat / t->dim) % t->seq,
                          h = (flat / (t->dim * t->seq)) % t->heads, b = flat / (t->dim * t->seq * t->heads);
            double *x = (double *)t->data + b * t->stride_batch + h * t->stride_head + s * t->stride_seq + d;
            check_entry(r, names[g], flat, x, 1, analytic[flat], floor_abs);
        }
        free(analytic);
    }
    free(idx);
}

void fd_check_float(fd_run *r, const char *what, int64_t index, float *x, double analytic, double floor_abs)
{
    check_entry(r, what, index, x, 0, analytic, floor_abs);
}
