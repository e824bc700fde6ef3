/* SPDX-License-Identifier: BSD-3-Clause */
/* The calls of a pass, checked and timed: the MPI call on every rank, the one-process reference on
 * rank 0 while the others sleep, and the ring's messages alone. */
#ifndef FA_BENCH_MPI_MEASURE_H
#define FA_BENCH_MPI_MEASURE_H

#include "job.h"
#include "profile.h"

/* The samples of one side of a pass, over every round. */
typedef struct {
    double *samples; /* seconds per timed call: MPI, the slowest rank's; reference, rank 0's */
    int count, capacity;
    double best;        /* the least sample */
    bm_profile profile; /* MPI: this rank's breakdown in the rep of the least sample */
    double own;         /* MPI: this rank's own time in that rep */
} bm_side;

typedef struct {
    int pass; /* BM_PASS_FWD or BM_PASS_BWD */
    bm_side mpi, ref, alone;
    bm_trace trace;           /* this rank's messages in the last timed MPI call */
    double bytes_per_rank;    /* what one rank sends in one call (the most of any rank) */
    double error[BM_OUTPUTS]; /* normwise, rank 0; NAN for outputs the pass does not write */
    int bitwise;              /* every rank's outputs and the reference's equal the verified ones */
} bm_pass_result;

void bm_pass_init(bm_pass_result *r, int pass);
void bm_pass_free(bm_pass_result *r);

/* Collective: one MPI call of the pass on the poisoned outputs, one reference call, the MPI outputs
 * gathered and compared on rank 0 (r->error), the verified outputs kept for the bitwise check.
 * The backward's inputs are the forward's outputs on each side, so the forward is verified first.
 * Returns 1 when the check passed on every output (every rank returns the same), 0 after rank 0
 * printed the failure, -1 after a library error (printed). */
int bm_verify_pass(bm_job *j, bm_pass_result *r);

/* Collective: warmup + reps timed MPI calls (r->mpi), or reference calls (r->ref). FA_OK, or the
 * status of a failed call (the same on every rank). */
fa_status bm_time_mpi(bm_job *j, bm_pass_result *r);
fa_status bm_time_reference(bm_job *j, bm_pass_result *r);

/* Collective: reps timings of the messages of the last timed MPI call (r->trace) sent again with
 * nothing computed (r->alone; replay.h), after an untimed one. 0, or -1 when they cannot be sent
 * (every rank returns the same). */
int bm_time_transfers(bm_job *j, bm_pass_result *r);

/* Collective: 1 when every rank's outputs of the pass, and the reference's, are bitwise the verified
 * ones. */
int bm_outputs_unchanged(bm_job *j, int pass);

/* The median of a side's samples. */
double bm_median(const bm_side *s);

#endif
