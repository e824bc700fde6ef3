/* SPDX-License-Identifier: BSD-3-Clause */
/* The determinism check: the run's first verified outputs, kept byte for byte. The library promises
 * identical bytes for every thread count and repetition (for the same block sizes), so every later
 * output of the run is compared with these. */
#ifndef FA_BENCH_GOLDEN_H
#define FA_BENCH_GOLDEN_H

#include "flashattn.h"
#include "problem.h"

/* out, lse, dq, dk, dv, dsinks. */
#define BENCH_GOLDEN_OUTPUTS 6

typedef struct {
    void *copies
        [BENCH_GOLDEN_OUTPUTS]; /* in that order; the gradients NULL without them, dsinks without sinks */
    int block_q, block_k;       /* the block sizes that produced them */
    int have;
} bench_golden;

/* Copies pb's outputs (and gradients, when it has them). Returns 0, or -1 after a message. */
int bench_golden_save(bench_golden *g, const bench_problem *pb, const fa_stats *st);

/* NULL when every output of pb equals the saved bytes, else the name of the first that differs. */
const char *bench_golden_first_difference(const bench_golden *g, const bench_problem *pb);

/* Frees the copies; a zeroed golden is fine. */
void bench_golden_free(bench_golden *g);

#endif
