/* SPDX-License-Identifier: BSD-3-Clause */
/* Everything one fa-bench-mpi run works on: the options, where the ranks run, the contexts, this
 * rank's shard, and on rank 0 the whole sequence (the reference's inputs and outputs, and the MPI
 * outputs gathered for the check). Allocated and filled once. */
#ifndef FA_BENCH_MPI_JOB_H
#define FA_BENCH_MPI_JOB_H

#include <mpi.h>

#include "cpusets.h"
#include "global.h"
#include "options.h"
#include "replay.h"

/* The outputs of one side, in the order the checks name them. */
enum { BM_OUT, BM_LSE, BM_DQ, BM_DK, BM_DV, BM_OUTPUTS };

typedef struct {
    bm_options o;
    MPI_Comm comm;
    int rank, ranks;
    bm_shard shard;
    bm_cpusets where;
    fa_bind rank_bind; /* the ranks' contexts' policy (AUTO becomes NONE where ranks share CPUs) */
    int ref_threads;
    fa_context *ctx;     /* this rank's, o.threads threads */
    fa_context *ref_ctx; /* rank 0: the reference's, ref_threads threads on where.reference */
    fa_params params;
    bm_replayer replayer; /* the messages of a call sent again alone (measure.h) */
    /* this rank's shard: q k v out dout, lse [B][Hq][rows] as a [B][Hq][rows][1] tensor; mine[] the
     * outputs (out lse dq dk dv) */
    fa_tensor q, k, v, dout, mine[BM_OUTPUTS];
    /* rank 0: the whole sequence, and the MPI outputs gathered (data NULL elsewhere) */
    fa_tensor gq, gk, gv, gdout, ref[BM_OUTPUTS], gathered[BM_OUTPUTS];
    /* after the run, on rank 0: every rank's context's policy in force and threads pinned in its last
     * call (fa_stats), and the reference context's */
    int *rank_bound, *rank_bind_used;
    fa_stats ref_stats;
    /* the verified outputs, for the bitwise check after timing (NULL where not computed) */
    void *golden_mine[BM_OUTPUTS], *golden_ref[BM_OUTPUTS];
} bm_job;

/* Collective: the shard, the tensors (filled), the contexts. 0, or -1 after rank 0 (or the rank at
 * fault) printed why; every rank returns the same. */
int bm_job_init(bm_job *j, const bm_options *o, MPI_Comm comm);
void bm_job_free(bm_job *j);

/* Which outputs a pass writes: out and lse (forward), dq dk dv (backward). */
int bm_first_output(int pass);
int bm_last_output(int pass);

/* Collective: fills rank_bound, rank_bind_used and ref_stats on rank 0 (the arrays stay NULL if
 * memory ran out). */
void bm_job_gather_stats(bm_job *j);

/* Collective: 1 on every rank when ok is nonzero on every rank. */
int bm_all(MPI_Comm comm, int ok);

#endif
