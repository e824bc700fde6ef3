/* SPDX-License-Identifier: BSD-3-Clause */
// Sampled comparison of out and lse against ref_forward_row (float64).
#include "verify.h"

#include <math.h>
#include <stdlib.h>

#include "dtypes.h"
#include "reference.h"

double bench_verify_tolerance(fa_dtype t)
{
    if (t == FA_F64) return 1e-12;
    return 1e-4 + (kit_dtype_is_half(t) ? kit_unit_roundoff(t) : 0.0);
}

double bench_verify_lse_tolerance(fa_dtype q)
{
    return bench_verify_tolerance(kit_accum_dtype(q));
}

static double load_lse(const bench_problem *pb, int64_t row)
{
    return kit_load(kit_accum_dtype(pb->shape.dtype), pb->lse, row);
}

void bench_row_check_fill(bench_row_check *c, const fa_tensor *out, int64_t b, int64_t h, int64_t i,
                          const double *want_row, double lse_got, double lse_want)
{
    c->out_diff = 0.0;
    c->out_ref_max = 0.0;
    c->col = 0;
    c->got = c->want = 0.0;
    for (int64_t y = 0; y < out->dim; y++) {
        double got = kit_tensor_load(out, b, h, i, y);
        double diff = kit_abs_diff(got, want_row[y]);
        if (isfinite(want_row[y]) && fabs(want_row[y]) > c->out_ref_max) c->out_ref_max = fabs(want_row[y]);
        if (y == 0 || diff > c->out_diff) {
            c->out_diff = diff;
            c->col = y;
            c->got = got;
            c->want = want_row[y];
        }
    }
    c->lse_got = lse_got;
    c->lse_want = lse_want;
}

static void check_row(const bench_problem *pb, const fa_params *p, int64_t row, double *want_row,
                      bench_row_check *c)
{
    const bench_shape *s = &pb->shape;
    c->i = row % s->nq;
    c->h = (row / s->nq) % s->hq;
    c->b = row / (s->nq * s->hq);
    double lse_want;
    ref_forward_row(p, &pb->oracle_q, &pb->oracle_k, &pb->oracle_v, c->b, c->h, c->i, want_row, &lse_want);
    bench_row_check_fill(c, &pb->out, c->b, c->h, c->i, want_row, load_lse(pb, row), lse_want);
}

int bench_verify_forward(const bench_problem *pb, const fa_params *p, int64_t check_rows,
                         bench_verify_result *r)
{
    const bench_shape *s = &pb->shape;
    int64_t total = s->b * s->hq * s->nq;
    int64_t n = kit_sample_count(check_rows, total);
    bench_row_check *checks = calloc((size_t)(n > 0 ? n : 1), sizeof *checks);
    if (!checks) return -1;
    int failed_alloc = 0;

    // The oracle costs Nk*(D+Dv) double operations per row; rows are independent, so the sample is
    // spread over the machine's threads. Each row's result lands in its own slot.
#pragma omp parallel reduction(| : failed_alloc)
    {
        double *want_row = malloc(sizeof(double) * (size_t)s->dv);
        if (!want_row) failed_alloc = 1;
#pragma omp for schedule(dynamic)
        for (int64_t k = 0; k < n; k++)
            if (want_row) check_row(pb, p, kit_sample_row(k, n, total), want_row, &checks[k]);
        free(want_row);
    }
    if (failed_alloc) {
        free(checks);
        return -1;
    }
    bench_verify_reduce(checks, n, s->dtype, r);
    free(checks);
    return 0;
}

void bench_verify_reduce(const bench_row_check *checks, int64_t n, fa_dtype dtype, bench_verify_result *r)
{
    double out_diff = 0.0, out_scale = 0.0, lse_diff = 0.0, lse_scale = 1.0;
    for (int64_t k = 0; k < n; k++) {
        const bench_row_check *c = &checks[k];
        if (c->out_diff > out_diff) out_diff = c->out_diff;
        if (c->out_ref_max > out_scale) out_scale = c->out_ref_max;
        double ld = kit_abs_diff(c->lse_got, c->lse_want);
        if (ld > lse_diff) lse_diff = ld;
        if (isfinite(c->lse_want) && fabs(c->lse_want) > lse_scale) lse_scale = fabs(c->lse_want);
    }
    if (out_scale == 0.0) out_scale = 1.0; // every checked row masked: zeros are expected exactly

    // Worst row: the largest error after the same scaling the verdict uses.
    int64_t worst = 0;
    double worst_err = -1.0;
    for (int64_t k = 0; k < n; k++) {
        double e_out = checks[k].out_diff / out_scale;
        double e_lse = kit_abs_diff(checks[k].lse_got, checks[k].lse_want) / lse_scale;
        double e = e_out > e_lse ? e_out : e_lse;
        if (e > worst_err) {
            worst_err = e;
            worst = k;
        }
    }

    r->rows_checked = n;
    r->tolerance = bench_verify_tolerance(dtype);
    r->tolerance_lse = bench_verify_lse_tolerance(dtype);
    r->err_out = out_diff / out_scale;
    r->err_lse = lse_diff / lse_scale;
    r->passed = r->err_out <= r->tolerance && r->err_lse <= r->tolerance_lse;
    if (n > 0) {
        const bench_row_check *c = &checks[worst];
        r->worst_b = c->b;
        r->worst_h = c->h;
        r->worst_i = c->i;
        r->worst_col = c->col;
        r->worst_got = c->got;
        r->worst_want = c->want;
        r->worst_lse_got = c->lse_got;
        r->worst_lse_want = c->lse_want;
    }
}

void bench_verify_print_worst(FILE *f, const bench_verify_result *r)
{
    fprintf(f,
            "  worst row: b=%lld h=%lld i=%lld\n"
            "    out[%lld] = %.17g, oracle %.17g\n"
            "    lse      = %.17g, oracle %.17g\n"
            "  normwise error: out %.3e, lse %.3e (tolerance %.3g, lse %.3g; %lld rows checked)\n",
            (long long)r->worst_b, (long long)r->worst_h, (long long)r->worst_i, (long long)r->worst_col,
            r->worst_got, r->worst_want, r->worst_lse_got, r->worst_lse_want, r->err_out, r->err_lse,
            r->tolerance, r->tolerance_lse, (long long)r->rows_checked);
}
