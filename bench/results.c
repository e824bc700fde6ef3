/* SPDX-License-Identifier: BSD-3-Clause */
// Derived figures that relate the rows of one case to each other.
#include "results.h"

#include <math.h>

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

void bench_row_clear_extras(bench_row *row)
{
    row->peak_isa[0] = '\0';
    row->peak_gflops = row->pct_peak = NAN;
    row->read_gbps = row->kv_gbps = row->pct_read_bw = NAN;
    row->bias_gbps = row->pct_bias_bw = NAN;
    row->reference_gflops = row->pct_of_reference = NAN;
    row->blas_mode = BENCH_BLAS_BEST;
    for (int m = 0; m < 3; m++) row->blas_mode_min_s[m] = NAN;
    row->blas_timing = (bench_timing){0, NAN, NAN, NAN};
    row->blas_gflops = row->speedup_vs_blas = row->blas_err = NAN;
    bench_timing none = {0, NAN, NAN, NAN};
    row->ragged = (bench_ragged_row){none, none, NAN, NAN, NAN, NAN, none, NAN, NAN, NAN, 0, 0, 0, NAN};
}
