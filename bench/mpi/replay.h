/* SPDX-License-Identifier: BSD-3-Clause */
/* The messages of a profiled call (profile.h's trace) sent again with nothing computed: the same
 * sizes, peers, tags and order, posted and waited for as the library did, on a communicator of
 * their own. What the transfers take alone, against which the call's wait is compared. */
#ifndef FA_BENCH_MPI_REPLAY_H
#define FA_BENCH_MPI_REPLAY_H

#include <mpi.h>
#include <stddef.h>

#include "profile.h"

typedef struct {
    MPI_Comm comm;    /* a duplicate of the job's */
    MPI_Datatype mib; /* 1 MiB of bytes: messages over 2 GiB */
    char *send;       /* every send reads this buffer (MPI-3 allows concurrent sends from one) */
    size_t send_bytes;
    char **pool; /* receive buffers, one per receive pending at once */
    int pool_n, *free_list, n_free;
    size_t pool_bytes;
    MPI_Request *reqs, *batch; /* per slot of the trace, and one MPI_Waitall's */
    int *buffer_of, *is_recv;  /* per slot: its receive buffer (-1 none); whether it is a receive */
    size_t slots_cap;
} bm_replayer;

/* Collective. 0, or -1 when MPI refused the duplicate or the type. */
int bm_replayer_init(bm_replayer *r, MPI_Comm comm);
void bm_replayer_free(bm_replayer *r);

/* Allocates (and touches) the buffers and arrays the trace needs, keeping them for later replays;
 * sends nothing. 0, or -1 when the trace is broken, a size cannot be posted or memory ran out. The
 * ranks must agree that every one of them is ready before any replays: a rank that sends nothing
 * would leave its peers waiting. */
int bm_replay_prepare(bm_replayer *r, const bm_trace *t);

/* Sends the trace's messages once, after bm_replay_prepare of the same trace (every rank its own
 * trace, at the same time); returns the seconds it took on this rank. */
double bm_replay_run(bm_replayer *r, const bm_trace *t);

#endif
