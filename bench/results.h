/* One measured row per thread count, and what is the same for every row of a run.
 * The terminal table (report.h) and the CSV/JSON files (export.h) are both written from these,
 * so a later column (e.g. % of the measured FMA peak) is added here once and printed by both. */
#ifndef FA_BENCH_RESULTS_H
#define FA_BENCH_RESULTS_H

#include <stdint.h>

#include "flashattn.h"
#include "options.h"
#include "timing.h"

typedef struct {
    const bench_options *opt;
    const char *version;   /* fa_version() of the library actually linked */
    double flops;          /* FLOP of one timed call of opt->pass, by the formulas in --help */
    double tolerance;      /* normwise verification bound of out and lse for this dtype */
    double grad_tolerance; /* normwise bound of dq, dk, dv; NAN for --pass fwd */
    double grad_oracle_s;  /* seconds the gradient oracle took (once per run); NAN for --pass fwd */
    int omp_max_threads;
} bench_run_info;

typedef struct {
    int threads;
    fa_stats stats; /* read after the timed calls: resolved bind, bound threads, blocks, scratch */
    char isa[32];   /* stats.isa copied: the string belongs to the context, destroyed after the row */
    bench_timing timing;
    double gflops;     /* flops / timing.min_s / 1e9 */
    double speedup;    /* 1-thread min / this min; NAN when the run has no 1-thread row */
    double efficiency; /* speedup / threads; NAN likewise */
    int64_t rows_checked;
    double err_out, err_lse;
    int64_t rows_checked_dq, rows_checked_dkdv; /* 0 for --pass fwd */
    double err_dq, err_dk, err_dv;              /* NAN for --pass fwd */
    int bitwise_identical; /* 1: out, lse (and dq, dk, dv) equal, byte for byte, to the run's first
                              verified outputs across all timed repetitions; -1: not compared (block
                              sizes differed) */
} bench_row;

/* Fills speedup and efficiency from the first 1-thread row of rows[0..n), wherever it is. */
void bench_rows_compute_scaling(bench_row *rows, int n);

#endif
