/* SPDX-License-Identifier: BSD-3-Clause */
// Interposed MPI and fa_ calls that time themselves while a profile is running (profile.h).
#include "profile.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h" /* bench/: bench_now() */

#include "flashattn.h"
#include "flashattn_mpi.h"

static int counting;
static bm_profile counted;

// The timing around one call: a statement that assigns rc from `call`.
#define TIMED(part, call)                                \
    do {                                                 \
        if (!counting) {                                 \
            call;                                        \
            break;                                       \
        }                                                \
        double started_ = bench_now();                   \
        call;                                            \
        counted.seconds[part] += bench_now() - started_; \
        counted.calls[part]++;                           \
    } while (0)

/* ---- the trace of the call's messages (profile.h) ---- */

static bm_trace trace;         // the call being profiled; its arrays are kept from call to call
static MPI_Request *handles;   // per slot: the request MPI returned
static unsigned char *pending; // per slot: not yet completed
static int cap_slots;
static int *tested, n_tested, cap_tested; // slots MPI_Testall completed, not yet put in a WAIT

// The array, grown if needed to hold used + 1 elements; NULL when memory ran out (the trace is then
// broken and the array still the caller's).
static void *grown(void *array, int *cap, int used, size_t size)
{
    if (used < *cap) return array;
    int more = *cap ? 2 * *cap : 64;
    void *p = realloc(array, (size_t)more * size);
    if (!p) {
        trace.broken = 1;
        return NULL;
    }
    *cap = more;
    return p;
}

static void record_post(int kind, int count, MPI_Datatype type, int peer, int tag, MPI_Request req)
{
    int size = 0, slot = trace.slots;
    if (trace.broken || PMPI_Type_size(type, &size) != MPI_SUCCESS) {
        trace.broken = 1;
        return;
    }
    if (slot == cap_slots) {
        int cap = cap_slots ? 2 * cap_slots : 64;
        MPI_Request *h = realloc(handles, (size_t)cap * sizeof *h);
        if (h) handles = h;
        unsigned char *p = h ? realloc(pending, (size_t)cap) : NULL;
        if (p) pending = p;
        if (!h || !p) {
            trace.broken = 1;
            return;
        }
        cap_slots = cap;
    }
    bm_event *events = grown(trace.events, &trace.cap_events, trace.n_events, sizeof *events);
    if (!events) return;
    trace.events = events;
    handles[slot] = req;
    pending[slot] = 1;
    trace.slots++;
    size_t bytes = (size_t)count * (size_t)size;
    trace.events[trace.n_events++] = (bm_event){kind, peer, tag, slot, bytes, 0, 0};
    if (kind == BM_EVENT_SEND) {
        trace.send_bytes += (double)bytes;
        if (bytes > trace.widest_send) trace.widest_send = bytes;
    } else if (bytes > trace.widest_recv) {
        trace.widest_recv = bytes;
    }
}

// The pending slot of a request handle (handles are reused once completed: the latest wins), or -1.
static int slot_of(MPI_Request req)
{
    for (int s = trace.slots - 1; s >= 0; s--)
        if (pending[s] && handles[s] == req) return s;
    return -1;
}

static void add_waited(int slot)
{
    int *waited = grown(trace.waited, &trace.cap_waited, trace.n_waited, sizeof *waited);
    if (!waited) return;
    trace.waited = waited;
    trace.waited[trace.n_waited++] = slot;
}

// A WAIT of the slots added to trace.waited since `first`, after the ones MPI_Testall completed.
static void record_wait(int first)
{
    if (trace.broken) return;
    bm_event *events = grown(trace.events, &trace.cap_events, trace.n_events, sizeof *events);
    if (!events) return;
    trace.events = events;
    trace.events[trace.n_events++] = (bm_event){BM_EVENT_WAIT, 0, 0, 0, 0, first, trace.n_waited - first};
}

static void take_tested(void)
{
    for (int x = 0; x < n_tested; x++) add_waited(tested[x]);
    n_tested = 0;
}

void bm_profile_start(void)
{
    memset(&counted, 0, sizeof counted);
    trace.n_events = trace.n_waited = trace.slots = 0;
    trace.send_bytes = 0.0;
    trace.widest_send = trace.widest_recv = 0;
    trace.broken = 0;
    n_tested = 0;
    counting = 1;
}

bm_profile bm_profile_stop(void)
{
    counting = 0;
    int first = trace.n_waited;
    take_tested();
    for (int s = 0; s < trace.slots; s++)
        if (pending[s]) add_waited(s), pending[s] = 0; // never waited for: the library leaves none
    if (trace.n_waited > first) record_wait(first);
    return counted;
}

int bm_profile_copy_trace(bm_trace *out)
{
    bm_trace_free(out);
    *out = trace;
    out->events = malloc((size_t)(trace.n_events ? trace.n_events : 1) * sizeof *out->events);
    out->waited = malloc((size_t)(trace.n_waited ? trace.n_waited : 1) * sizeof *out->waited);
    out->cap_events = trace.n_events;
    out->cap_waited = trace.n_waited;
    if (!out->events || !out->waited) {
        bm_trace_free(out);
        out->broken = 1;
        return -1;
    }
    memcpy(out->events, trace.events, (size_t)trace.n_events * sizeof *out->events);
    memcpy(out->waited, trace.waited, (size_t)trace.n_waited * sizeof *out->waited);
    return 0;
}

void bm_trace_free(bm_trace *t)
{
    free(t->events);
    free(t->waited);
    memset(t, 0, sizeof *t);
}

const char *bm_profile_part_name(int part)
{
    static const char *const names[BM_PARTS] = {"blocks", "merge", "wait", "progress", "post", "collectives"};
    return part >= 0 && part < BM_PARTS ? names[part] : "?";
}

/* ---- libflashattn's calls, found behind these definitions ---- */

typedef fa_status (*forward_fn)(fa_context *, const fa_params *, const fa_tensor *, const fa_tensor *,
                                const fa_tensor *, const fa_tensor *, void *);
typedef fa_status (*backward_fn)(fa_context *, const fa_params *, const fa_tensor *, const fa_tensor *,
                                 const fa_tensor *, const fa_tensor *, const fa_tensor *, const void *,
                                 const fa_tensor *, const fa_tensor *, const fa_tensor *);
typedef fa_status (*merge_fn)(fa_context *, int, const fa_tensor *, const void *const *, const fa_tensor *,
                              void *);

static forward_fn real_forward;
static backward_fn real_backward;
static merge_fn real_merge;

int bm_profile_init(void)
{
    // POSIX's way to turn dlsym's object pointer into a function pointer.
    *(void **)&real_forward = dlsym(RTLD_NEXT, "fa_forward");
    *(void **)&real_backward = dlsym(RTLD_NEXT, "fa_backward");
    *(void **)&real_merge = dlsym(RTLD_NEXT, "fa_merge");
    return real_forward && real_backward && real_merge ? 0 : -1;
}

fa_status fa_forward(fa_context *ctx, const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                     const fa_tensor *v, const fa_tensor *out, void *lse)
{
    fa_status st;
    TIMED(BM_BLOCKS, st = real_forward(ctx, p, q, k, v, out, lse));
    return st;
}

fa_status fa_backward(fa_context *ctx, const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                      const fa_tensor *v, const fa_tensor *out, const fa_tensor *dout, const void *lse,
                      const fa_tensor *dq, const fa_tensor *dk, const fa_tensor *dv)
{
    fa_status st;
    TIMED(BM_BLOCKS, st = real_backward(ctx, p, q, k, v, out, dout, lse, dq, dk, dv));
    return st;
}

fa_status fa_merge(fa_context *ctx, int n, const fa_tensor *outs, const void *const *lses,
                   const fa_tensor *out, void *lse)
{
    fa_status st;
    TIMED(BM_MERGE, st = real_merge(ctx, n, outs, lses, out, lse));
    return st;
}

/* ---- the MPI calls libflashattn_mpi makes (src/mpi/ring.c), through PMPI ---- */

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status *array_of_statuses)
{
    if (counting && !trace.broken) { // the slots, while the handles still name them
        int first = trace.n_waited;
        take_tested();
        for (int x = 0; x < count; x++) {
            if (array_of_requests[x] == MPI_REQUEST_NULL) continue;
            int s = slot_of(array_of_requests[x]);
            if (s < 0) {
                trace.broken = 1;
                break;
            }
            add_waited(s);
            pending[s] = 0;
        }
        record_wait(first);
    }
    int rc;
    TIMED(BM_WAIT, rc = PMPI_Waitall(count, array_of_requests, array_of_statuses));
    return rc;
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[])
{
    // The slots before the call (it sets completed handles to MPI_REQUEST_NULL); at most the two
    // requests of one of the library's transfers are tested at once.
    int slots[8], n = 0;
    for (int x = 0; counting && !trace.broken && x < count; x++) {
        if (array_of_requests[x] == MPI_REQUEST_NULL) continue;
        int s = slot_of(array_of_requests[x]);
        if (s < 0 || n == 8) {
            trace.broken = 1;
            break;
        }
        slots[n++] = s;
    }
    int rc;
    TIMED(BM_PROGRESS, rc = PMPI_Testall(count, array_of_requests, flag, array_of_statuses));
    if (counting && rc == MPI_SUCCESS && *flag)
        for (int x = 0; x < n; x++) {
            pending[slots[x]] = 0;
            int *more = grown(tested, &cap_tested, n_tested, sizeof *more);
            if (more) tested = more, tested[n_tested++] = slots[x];
        }
    return rc;
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    int rc;
    TIMED(BM_POST, rc = PMPI_Isend(buf, count, datatype, dest, tag, comm, request));
    if (counting && rc == MPI_SUCCESS) record_post(BM_EVENT_SEND, count, datatype, dest, tag, *request);
    return rc;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    int rc;
    TIMED(BM_POST, rc = PMPI_Irecv(buf, count, datatype, source, tag, comm, request));
    if (counting && rc == MPI_SUCCESS) record_post(BM_EVENT_RECV, count, datatype, source, tag, *request);
    return rc;
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm)
{
    int rc;
    TIMED(BM_COLLECTIVES,
          rc = PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
    return rc;
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm)
{
    int rc;
    TIMED(BM_COLLECTIVES, rc = PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm));
    return rc;
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    int rc;
    TIMED(BM_COLLECTIVES, rc = PMPI_Bcast(buffer, count, datatype, root, comm));
    return rc;
}
