/* SPDX-License-Identifier: BSD-3-Clause */
/* Progress lines on stderr, for runs that take minutes to hours: which case (in words) and which
 * thread count is running, and the time since the run started. Always printed, terminal or log
 * file alike (a batch job's stderr is where one looks when a campaign stalls); stdout, the CSV and
 * the JSON never carry them. Steps inside one thread count (verifying, timing) are shown only on a
 * terminal. */
#ifndef FA_BENCH_PROGRESS_H
#define FA_BENCH_PROGRESS_H

#include <stddef.h>

#include "options.h"

/* Starts the run's clock; every line shows the seconds since. */
void bench_progress_start(void);

/* Seconds since bench_progress_start. */
double bench_progress_elapsed(void);

/* "fa-bench: [  12.3 s] " then the formatted text and a newline, on stderr. */
void bench_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The same, only when stderr is a terminal: the finer steps. */
void bench_progress_detail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A case in words, "forward, f32, B=1 Hq=8 Nq=Nk=4096 D=64, causal top-left, window 256,0"; Hkv, Dv
 * and the layout only where they differ from Hq, D and bhsd, the score modifiers only when on. */
void bench_case_words(const bench_case *c, char *out, size_t size);

#endif
