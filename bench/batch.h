/* SPDX-License-Identifier: BSD-3-Clause */
/* What the one runner (case.h) asks of a case's batch, dense (dense_batch.c) or ragged (--varlen,
 * --decode-batch: ragged_batch.c): the calls it times, the outputs it holds bitwise across thread counts
 * and repetitions, and the checks. At each thread count the runner creates a context, runs each call
 * once (run_once), checks the outputs (check: the float64 oracles and the kind's own promises), saves or
 * compares the held outputs, times each call in turn, compares them again, and fills the row (finish). */
#ifndef FA_BENCH_BATCH_H
#define FA_BENCH_BATCH_H

#include <stddef.h>

#include "flashattn.h"
#include "machine.h"
#include "options.h"
#include "problem.h"
#include "results.h"
#include "timing.h"
#include "verify.h"

#define BENCH_BATCH_MAX_CALLS 3
#define BENCH_BATCH_MAX_HELD  2

/* One timed call: fn(arg), its timing written to the bench_timing at byte `timing` of the row. */
typedef struct {
    bench_call_fn fn;
    void *arg; /* the kind's own call struct; its first member, an fa_context *, the runner sets */
    size_t timing;
    const char *name; /* for messages: "the packed fa_forward" */
} bench_batch_call;

/* Outputs the library promises byte for byte at every thread count and repetition (same blocks). */
typedef struct {
    const bench_problem *pb;
    const char *name; /* "packed", "equal-length" (messages) */
    fa_stats stats;   /* the blocks that produced them: run_once or check fills it */
} bench_batch_held;

typedef struct bench_batch bench_batch;

typedef struct {
    /* Poisons every output, then runs each call once. Returns 0, or -1 after a message. */
    int (*run_once)(bench_batch *b, const bench_options *o, int threads);
    /* Checks what run_once wrote and fills the row's error fields (and the held outputs' stats). Returns
     * 0, or -1 after a message: no speed of the case is reported. */
    int (*check)(bench_batch *b, const bench_options *o, int threads, bench_row *row);
    /* Optional, after the timed calls and the runner's fields of the row (stats read from the context
     * then): the kind's checks again, and its own fields of the row. Returns 0, or -1 after a message. */
    int (*finish)(bench_batch *b, int threads, bench_row *row);
    /* Optional, in the last round, after the machine's probes: measurements beside the rows (the
     * BLAS baseline, a paged cache's page probe). */
    void (*measure_extras)(bench_batch *b, const bench_options *o, const bench_run_info *info,
                           bench_machine *m, bench_row *rows, int n);
    void (*free)(bench_batch *b);
} bench_batch_ops;

struct bench_batch {
    const bench_batch_ops *ops;
    bench_batch_call calls[BENCH_BATCH_MAX_CALLS]; /* timed in this order */
    int n_calls;
    bench_batch_held held[BENCH_BATCH_MAX_HELD]; /* held[0] decides the row's bitwise_identical */
    int n_held;
    void *kind; /* the kind's own data */
};

/* Build the batch of o->cases[index] and fill the kind's fields of *info (the runner has filled the
 * others: see case.c). Return 0, or -1 after a message (nothing to free). */
int bench_dense_batch_init(bench_batch *b, const bench_options *o, int index, bench_run_info *info);
int bench_ragged_batch_init(bench_batch *b, const bench_options *o, int index, bench_run_info *info);

/* Frees the decode batch that ragged_batch.c keeps for the next case of the same caches (the runner
 * calls it after the run's last case, after a failure, and before a case of another kind). */
void bench_ragged_batch_release(void);

/* "fa-bench: WHAT at threads=N failed: ..." with the library's diagnostic; returns -1. */
int bench_batch_failed(const char *what, int threads, fa_status s);
/* 0 when r passed, else -1 after "verification of WHAT FAILED" and its worst entry. */
int bench_batch_verdict(const char *what, const bench_verify_result *r, int threads, const bench_options *o,
                        const bench_shape *shape);

#endif
