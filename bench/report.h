/* SPDX-License-Identifier: BSD-3-Clause */
/* The human-readable report on stdout: a header naming the problem, one table row per thread count. */
#ifndef FA_BENCH_REPORT_H
#define FA_BENCH_REPORT_H

#include <stdio.h>

#include "results.h"

/* Shape, dtype, causal, layout, library version, FLOP model and measurement settings. */
void bench_report_header(FILE *f, const bench_run_info *info);

/* The column titles, the rows, and a closing line on bitwise reproducibility. */
void bench_report_table(FILE *f, const bench_run_info *info, const bench_row *rows, int n);

/* After the last case: the decode batches side by side (bench_ragged_report_decode_summary), then each
 * case that has a reference, with its GFLOP/s over the reference's at every thread count, one line
 * each. Nothing when there are neither. */
void bench_report_summary(FILE *f, const bench_case_result *cases, int n);

#endif
