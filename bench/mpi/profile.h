/* SPDX-License-Identifier: BSD-3-Clause */
/* Where a rank's time goes inside fa_mpi_forward / fa_mpi_backward, and which messages it sends,
 * measured from outside the library: profile.c defines the MPI calls the library makes (the MPI standard's
 * profiling
 * interface: each wrapper times its PMPI_ counterpart) and fa_forward, fa_backward and fa_merge
 * (which it reaches in libflashattn through dlsym(RTLD_NEXT)). fa-bench-mpi exports them
 * (ENABLE_EXPORTS), so libflashattn_mpi's calls, which go through its PLT, land here. They count only
 * between bm_profile_start and bm_profile_stop, on the thread that called start; the library makes
 * its MPI and fa_ calls from the calling thread. */
#ifndef FA_BENCH_MPI_PROFILE_H
#define FA_BENCH_MPI_PROFILE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

enum {
    BM_BLOCKS,      /* fa_forward, fa_backward */
    BM_MERGE,       /* fa_merge */
    BM_WAIT,        /* MPI_Waitall */
    BM_PROGRESS,    /* MPI_Testall */
    BM_POST,        /* MPI_Isend, MPI_Irecv */
    BM_COLLECTIVES, /* MPI_Allgather, MPI_Allreduce, MPI_Bcast */
    BM_PARTS
};

typedef struct {
    double seconds[BM_PARTS];
    int64_t calls[BM_PARTS];
} bm_profile;

/* The point-to-point messages of one profiled call, in the order the library posted and waited
 * for them: what replay.h sends again with nothing computed. A request that MPI_Testall completed
 * is waited for at the next MPI_Waitall (at the end of the call if none follows). */
enum { BM_EVENT_SEND, BM_EVENT_RECV, BM_EVENT_WAIT };

typedef struct {
    int kind;
    int peer, tag;    /* SEND, RECV: the rank (in the library's communicator) and the tag */
    int slot;         /* SEND, RECV: the request's index in the call, 0, 1, ... */
    size_t bytes;     /* SEND, RECV */
    int first, count; /* WAIT: the slots waited for are waited[first .. first + count) */
} bm_event;

typedef struct {
    bm_event *events;
    int n_events, cap_events;
    int *waited;
    int n_waited, cap_waited;
    int slots;         /* requests posted */
    double send_bytes; /* the bytes of every SEND */
    size_t widest_send, widest_recv;
    int broken; /* memory ran out, or a request was waited for that the call did not post */
} bm_trace;

/* Copies the trace of the last profiled call into *out (freeing what out held); 0, or -1 when
 * memory ran out (out is then empty and broken). */
int bm_profile_copy_trace(bm_trace *out);
void bm_trace_free(bm_trace *t);

/* Finds the library's fa_forward, fa_backward and fa_merge. 0, or -1 when they cannot be found
 * (a static link: then the wrappers would be the only definitions). */
int bm_profile_init(void);

/* Zeroes the counters and starts counting. */
void bm_profile_start(void);

/* Stops counting and returns what was counted since start. */
bm_profile bm_profile_stop(void);

/* "blocks", "merge", ... */
const char *bm_profile_part_name(int part);

#endif
