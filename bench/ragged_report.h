/* SPDX-License-Identifier: BSD-3-Clause */
/* The terminal report of a ragged case (--varlen, --decode-batch): a header naming the batch and how
 * its figures are counted, one row per thread count with every compared call, and the issue's
 * targets with the ratios measured against them. */
#ifndef FA_BENCH_RAGGED_REPORT_H
#define FA_BENCH_RAGGED_REPORT_H

#include <stdio.h>

#include "results.h"

void bench_ragged_report_header(FILE *f, const bench_run_info *info);
void bench_ragged_report_table(FILE *f, const bench_run_info *info, const bench_row *rows, int n);

/* After a run of two or more decode-batch cases (the decode-batch and decode-kv presets): one line per
 * case, its cache type and pages, and at each thread count the contiguous and paged KV GB/s as % of
 * the read probe and p/c, so that the types and page sizes of one run read side by side. */
void bench_ragged_report_decode_summary(FILE *f, const bench_case_result *cases, int n);

/* The ragged-batch targets, f32 on one node, all from one run. */
#define BENCH_TARGET_VARLEN_VS_EQUAL       0.90 /* packed GFLOP/s / one dense call over equal lengths */
#define BENCH_TARGET_VARLEN_VS_LOOP        1.5  /* packed GFLOP/s / one call per sequence, at 2 threads */
#define BENCH_TARGET_LOOP_THREADS          2
#define BENCH_TARGET_DECODE_PCT_BW         60.0 /* KV GB/s of the keys in use, % of the read probe */
#define BENCH_TARGET_PAGED_OVER_CONTIGUOUS 1.10 /* paged min time / contiguous min time */

#endif
