/* SPDX-License-Identifier: BSD-3-Clause */
// Repeated-call timing with CLOCK_MONOTONIC.
#include "timing.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *x, int n)
{
    if (n < 1) return NAN;
    qsort(x, (size_t)n, sizeof(double), compare_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

fa_status bench_time_calls(bench_call_fn fn, void *arg, int warmup, int reps, double min_time,
                           bench_timing *t)
{
    for (int i = 0; i < warmup; i++) {
        fa_status s = fn(arg);
        if (s != FA_OK) return s;
    }
    // Each call is timed on its own (not the loop as a whole) so that min and median exist:
    // min is the least disturbed run, the median shows how noisy the machine was.
    if (reps > BENCH_MAX_SAMPLES) reps = BENCH_MAX_SAMPLES; // the cap below must also bound reps
    if (reps < 1) reps = 1;                                 // min and median need one sample
    int capacity = reps, count = 0;
    double *samples = malloc(sizeof(double) * (size_t)capacity);
    if (!samples) return FA_ERR_NOMEM;
    double total = 0.0;
    while (count < reps || (total < min_time && count < BENCH_MAX_SAMPLES)) {
        if (count == capacity) {
            int grown = capacity * 2 < BENCH_MAX_SAMPLES ? capacity * 2 : BENCH_MAX_SAMPLES;
            double *bigger = realloc(samples, sizeof(double) * (size_t)grown);
            if (!bigger) {
                free(samples);
                return FA_ERR_NOMEM;
            }
            samples = bigger;
            capacity = grown;
        }
        double start = bench_now();
        fa_status s = fn(arg);
        double elapsed = bench_now() - start;
        if (s != FA_OK) {
            free(samples);
            return s;
        }
        samples[count++] = elapsed;
        total += elapsed;
    }
    t->count = count;
    t->median_s = bench_median(samples, count); // sorted
    t->min_s = samples[0];
    t->total_s = total;
    free(samples);
    return FA_OK;
}
