/* SPDX-License-Identifier: BSD-3-Clause */
/* Wall-clock timing of repeated calls: warm-up, then at least R timed calls (more when a minimum
 * timed duration is asked for), summarized by min and median. Knows nothing about attention, so the
 * backward pass, the FMA peak probe and a BLAS baseline can all be timed the same way. */
#ifndef FA_BENCH_TIMING_H
#define FA_BENCH_TIMING_H

#include "flashattn.h"

/* One call to time. Returns FA_OK or the status that stops the measurement. */
typedef fa_status (*bench_call_fn)(void *arg);

typedef struct {
    int count;       /* timed calls */
    double min_s;    /* fastest call, seconds: the figure GFLOP/s is computed from */
    double median_s; /* median call, seconds (mean of the middle two for an even count) */
    double total_s;  /* sum of all timed calls */
} bench_timing;

/* Seconds on CLOCK_MONOTONIC (immune to wall-clock adjustments). */
double bench_now(void);

/* The median of x[0..n), which it sorts (the mean of the middle two for an even n); NAN when n < 1. */
double bench_median(double *x, int n);

/* Runs fn warmup times untimed, then times calls one by one until at least reps calls and at least
 * min_time seconds of timed calls are done (capped at BENCH_MAX_SAMPLES calls).
 * Returns FA_OK, the first failing status of fn, or FA_ERR_NOMEM. *t is written only on FA_OK. */
fa_status bench_time_calls(bench_call_fn fn, void *arg, int warmup, int reps, double min_time,
                           bench_timing *t);

#define BENCH_MAX_SAMPLES 100000

#endif
