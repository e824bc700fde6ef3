/* SPDX-License-Identifier: BSD-3-Clause */
/* The human-readable report on stdout, one for every kind of case (dense, --varlen, --decode-batch): a
 * header naming the problem and how its figures are counted, one table row per thread count, the lines
 * under it, and after the last case a summary of the run. The table shows the columns of what was
 * measured (report.c: a column whose figure no row has is left out), so a dense case's table has no
 * varlen or paged columns and a ragged case's no BLAS columns; the CSV and JSON files (export.h) always
 * carry every column, empty where a figure does not apply. */
#ifndef FA_BENCH_REPORT_H
#define FA_BENCH_REPORT_H

#include <stdio.h>

#include "results.h"

/* Shape (or the ragged batch and its lengths), dtypes, causal, layout, library version, the machine and
 * build, the calls and how their FLOP and bytes are counted, the measurement and verification settings. */
void bench_report_header(FILE *f, const bench_run_info *info);

/* The column titles, the rows, one line per disturbed row (bench_row_disturbed) saying so in words, which
 * figure shows it and why (a busy machine, or more threads than the CPUs allowed), what the columns are
 * measured against, a line on bitwise reproducibility, and for a ragged batch its targets (below). */
void bench_report_table(FILE *f, const bench_run_info *info, const bench_row *rows, int n);

/* After the last case: the decode batches side by side (two or more: one line per case, its cache type
 * and pages, at each thread count the contiguous and paged KV GB/s as % of the read probe and p/c), then
 * each case that has a reference, with its GFLOP/s over the reference's at every thread count, one line
 * each, then how many rows of the run were disturbed. Nothing when there are none of these. */
void bench_report_summary(FILE *f, const bench_case_result *cases, int n);

/* The ragged-batch targets, f32 on one node, all from one run. */
#define BENCH_TARGET_VARLEN_VS_EQUAL       0.90 /* packed GFLOP/s / one dense call over equal lengths */
#define BENCH_TARGET_VARLEN_VS_LOOP        1.5  /* packed GFLOP/s / one call per sequence, at 2 threads */
#define BENCH_TARGET_LOOP_THREADS          2
#define BENCH_TARGET_DECODE_PCT_BW         60.0 /* KV GB/s of the keys in use, % of the read probe */
#define BENCH_TARGET_PAGED_OVER_CONTIGUOUS 1.10 /* paged min time / contiguous min time */

#endif
