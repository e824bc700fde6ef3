/* SPDX-License-Identifier: BSD-3-Clause */
// Derived figures that relate the rows of one case to each other.
#include "results.h"

#include <math.h>
#include <stddef.h>

void bench_rows_compute_scaling(bench_row *rows, int n)
{
    double one_thread_s = NAN;
    for (int r = 0; r < n; r++) {
        if (rows[r].threads == 1) {
            one_thread_s = rows[r].timing.min_s;
            break;
        }
    }
    for (int r = 0; r < n; r++) {
        // Same shape, same run, same binding request: only the team size differs.
        rows[r].speedup = one_thread_s / rows[r].timing.min_s;
        rows[r].efficiency = rows[r].speedup / (double)rows[r].threads;
    }
}

// A timing's median / min; NAN when it was not measured.
static double median_over_min(const bench_timing *t)
{
    return t->count > 0 && t->min_s > 0.0 ? t->median_s / t->min_s : NAN;
}

int bench_row_disturbed(const bench_row *row, double *median_over_min_out, const char **which,
                        double *probe_spread)
{
    const struct {
        const bench_timing *t;
        const char *what;
    } timings[] = {{&row->timing, ""},
                   {&row->ragged.equal, "the equal-length call"},
                   {&row->ragged.loop, "the per-sequence loop"},
                   {&row->ragged.contiguous, "the contiguous cache"},
                   {&row->blas_timing, "the BLAS baseline"}};
    double worst = NAN;
    const char *what = "";
    for (size_t i = 0; i < sizeof timings / sizeof timings[0]; i++) {
        double x = median_over_min(timings[i].t);
        if (isfinite(x) && !(x <= worst)) {
            worst = x;
            what = timings[i].what;
        }
    }
    if (median_over_min_out) *median_over_min_out = worst;
    if (which) *which = what;
    if (probe_spread) *probe_spread = row->probe_spread;
    return worst > BENCH_DISTURBED_RATIO || row->probe_spread > BENCH_DISTURBED_RATIO;
}

void bench_row_clear_extras(bench_row *row)
{
    row->peak_isa[0] = '\0';
    row->peak_gflops = row->pct_peak = NAN;
    row->read_gbps = row->kv_gbps = row->pct_read_bw = NAN;
    row->bias_gbps = row->pct_bias_bw = row->probe_spread = NAN;
    row->reference_gflops = row->pct_of_reference = NAN;
    row->pct_of_reference_lo = row->pct_of_reference_hi = row->round_gflops = NAN;
    row->blas_mode = BENCH_BLAS_BEST;
    for (int m = 0; m < 3; m++) row->blas_mode_min_s[m] = NAN;
    row->blas_timing = (bench_timing){0, NAN, NAN, NAN};
    row->blas_gflops = row->speedup_vs_blas = row->blas_err = NAN;
    row->plain_timing = (bench_timing){0, NAN, NAN, NAN};
    row->err_dq = row->err_dk = row->err_dv = row->err_dsinks = NAN; // a pass without gradients
    bench_timing none = {0, NAN, NAN, NAN};
    row->ragged =
        (bench_ragged_row){none, none, NAN, NAN, NAN, NAN, none, NAN, NAN, NAN, 0, 0, 0, NAN, NAN, NAN};
}
