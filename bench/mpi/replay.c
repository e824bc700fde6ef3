/* SPDX-License-Identifier: BSD-3-Clause */
// Sending a call's messages again, alone.
#include "replay.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h" /* bench/: bench_now() */

int bm_replayer_init(bm_replayer *r, MPI_Comm comm)
{
    memset(r, 0, sizeof *r);
    r->comm = MPI_COMM_NULL;
    r->mib = MPI_DATATYPE_NULL;
    if (MPI_Comm_dup(comm, &r->comm) != MPI_SUCCESS) return -1;
    if (MPI_Type_contiguous(1 << 20, MPI_BYTE, &r->mib) != MPI_SUCCESS ||
        MPI_Type_commit(&r->mib) != MPI_SUCCESS)
        return -1;
    return 0;
}

void bm_replayer_free(bm_replayer *r)
{
    if (r->comm != MPI_COMM_NULL) MPI_Comm_free(&r->comm);
    if (r->mib != MPI_DATATYPE_NULL) MPI_Type_free(&r->mib);
    free(r->send);
    for (int x = 0; x < r->pool_n; x++) free(r->pool[x]);
    free(r->pool);
    free(r->free_list);
    free(r->reqs), free(r->batch), free(r->buffer_of), free(r->is_recv);
    memset(r, 0, sizeof *r);
}

// Whether every message has a size MPI can be given (an int count of bytes or of MiB).
static int representable(size_t bytes)
{
    return bytes <= INT_MAX || (bytes % ((size_t)1 << 20) == 0 && (bytes >> 20) <= INT_MAX);
}

// Buffers for the whole trace before anything is sent, so that no rank stops halfway (its peers
// would wait forever): the send buffer, and one receive buffer per receive pending at once. All
// touched. 0, or -1 when memory ran out or a size cannot be posted.
static int prepare(bm_replayer *r, const bm_trace *t, const int *is_recv)
{
    int pending = 0, most = 0;
    for (int x = 0; x < t->n_events; x++) {
        const bm_event *e = &t->events[x];
        if (e->kind != BM_EVENT_WAIT && !representable(e->bytes)) return -1;
        if (e->kind == BM_EVENT_RECV && ++pending > most) most = pending;
        if (e->kind == BM_EVENT_WAIT)
            for (int y = 0; y < e->count; y++) pending -= is_recv[t->waited[e->first + y]];
    }
    if (t->widest_send > r->send_bytes) {
        free(r->send);
        r->send = malloc(t->widest_send);
        r->send_bytes = r->send ? t->widest_send : 0;
        if (!r->send) return -1;
        memset(r->send, 1, t->widest_send);
    }
    if (t->widest_recv > r->pool_bytes) { // every receive buffer is as wide as the widest
        for (int x = 0; x < r->pool_n; x++) free(r->pool[x]);
        r->pool_n = 0;
        r->pool_bytes = t->widest_recv;
    }
    if (most > r->pool_n) {
        char **pool = realloc(r->pool, (size_t)most * sizeof *pool);
        if (!pool) return -1;
        r->pool = pool;
        int *free_list = realloc(r->free_list, (size_t)most * sizeof *free_list);
        if (!free_list) return -1;
        r->free_list = free_list;
        while (r->pool_n < most) {
            char *b = malloc(r->pool_bytes ? r->pool_bytes : 1);
            if (!b) return -1;
            memset(b, 0, r->pool_bytes);
            r->pool[r->pool_n++] = b;
        }
    }
    r->n_free = 0;
    for (int x = 0; x < r->pool_n; x++) r->free_list[r->n_free++] = x;
    return 0;
}

static void post(bm_replayer *r, const bm_event *e, char *buf, MPI_Request *req)
{
    int count = (int)e->bytes;
    MPI_Datatype type = MPI_BYTE;
    if (e->bytes > INT_MAX) count = (int)(e->bytes >> 20), type = r->mib; // representable(): whole MiB
    if (e->kind == BM_EVENT_SEND)
        MPI_Isend(buf, count, type, e->peer, e->tag, r->comm, req);
    else
        MPI_Irecv(buf, count, type, e->peer, e->tag, r->comm, req);
}

int bm_replay_prepare(bm_replayer *r, const bm_trace *t)
{
    if (t->broken) return -1;
    size_t n = (size_t)(t->slots ? t->slots : 1);
    if ((size_t)t->slots > r->slots_cap) {
        free(r->reqs), free(r->batch), free(r->buffer_of), free(r->is_recv);
        r->reqs = malloc(n * sizeof *r->reqs);
        r->batch = malloc(n * sizeof *r->batch);
        r->buffer_of = malloc(n * sizeof *r->buffer_of);
        r->is_recv = malloc(n * sizeof *r->is_recv);
        r->slots_cap = r->reqs && r->batch && r->buffer_of && r->is_recv ? n : 0;
        if (!r->slots_cap) return -1;
    }
    for (int s = 0; s < t->slots; s++) r->reqs[s] = MPI_REQUEST_NULL, r->buffer_of[s] = -1, r->is_recv[s] = 0;
    for (int x = 0; x < t->n_events; x++)
        if (t->events[x].kind == BM_EVENT_RECV) r->is_recv[t->events[x].slot] = 1;
    return prepare(r, t, r->is_recv);
}

double bm_replay_run(bm_replayer *r, const bm_trace *t)
{
    // Only an MPI error can stop a rank here, and MPI errors end the job.
    double started = bench_now();
    for (int x = 0; x < t->n_events; x++) {
        const bm_event *e = &t->events[x];
        if (e->kind == BM_EVENT_SEND) {
            post(r, e, r->send, &r->reqs[e->slot]);
        } else if (e->kind == BM_EVENT_RECV) {
            int b = r->free_list[--r->n_free];
            post(r, e, r->pool[b], &r->reqs[e->slot]);
            r->buffer_of[e->slot] = b;
        } else {
            for (int y = 0; y < e->count; y++) r->batch[y] = r->reqs[t->waited[e->first + y]];
            MPI_Waitall(e->count, r->batch, MPI_STATUSES_IGNORE);
            for (int y = 0; y < e->count; y++) {
                int s = t->waited[e->first + y];
                r->reqs[s] = MPI_REQUEST_NULL;
                if (r->buffer_of[s] >= 0) r->free_list[r->n_free++] = r->buffer_of[s], r->buffer_of[s] = -1;
            }
        }
    }
    return bench_now() - started;
}
