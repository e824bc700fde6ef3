/* SPDX-License-Identifier: BSD-3-Clause */
/* The machinery both ring calls share (include/flashattn_mpi.h): where each rank's rows sit in the
 * global sequence, the communicator's cached duplicate and buffers, the checks every rank makes
 * before anything moves, the agreement on one status, the shard transfers, and views. Only the
 * public API of libflashattn is used: this component links it like any other program. */
#ifndef FA_MPI_RING_H
#define FA_MPI_RING_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "flashattn_mpi.h"

/* A run of one rank's rows: global positions [pos, pos + len) at local rows [row, row + len). */
typedef struct {
    int64_t pos, row, len;
} fa_ring_segment;

/* A rank's rows: one run (CONTIGUOUS), or chunks r and 2P-1-r (ZIGZAG). */
typedef struct {
    int count;
    fa_ring_segment seg[2];
} fa_ring_segments;

/* What a rank tells the others before anything moves (allgathered): its shapes and the scalar
 * parameters, which every rank must share. */
typedef struct {
    int64_t present; /* q, k and v were given */
    int64_t dtype, batch, q_heads, kv_heads, dim, dim_v, rows;
    int64_t causal, window_left, window_right, diagonal_shift;
    double scale, softcap;
    int64_t alibi, sinks, bias, layout;
    double dropout_p; /* dropout's parameters: the mask is the whole sequence's only if they agree */
    int64_t dropout_seed, dropout_offset, dropout_row0, dropout_key0;
} fa_ring_shape;

/* One call's view of the ring. */
typedef struct {
    const char *call;
    MPI_Comm comm; /* the cached duplicate of the caller's communicator */
    int rank, size;
    fa_mpi_layout layout;
    const fa_ring_shape *shapes; /* every rank's, in rank order (in the cache) */
    const int64_t *starts;       /* CONTIGUOUS: rank s's first global position (in the cache) */
    int64_t total;               /* N, the global sequence length */
    fa_dtype dtype;              /* the caller's tensors' (q, k, v, out and the gradients) */
    fa_dtype acc;                /* the accumulation type: lse, the bias, every partial result and sum */
    fa_params p;                 /* the caller's parameters as this library's full copy (or the defaults) */
    fa_status p_read;            /* FA_OK, or why the caller's p cannot be read (fa_ring_check reports it) */
    char p_reason[200];
    void *cache; /* the communicator's cached buffers (ring.c) */
} fa_ring;

/* Sets up r for a call: p read by flashattn.h's rule (ABI section; the defaults for p NULL, and for a
 * p it cannot read, which fa_ring_check then refuses on this rank), the duplicate of comm and its cache
 * (made on the
 * first call, collectively), and every rank's shape. Returns FA_OK, or a status for the calling
 * rank alone (comm MPI_COMM_NULL: FA_ERR_ARG; MPI not running: FA_ERR_RUNTIME; no memory for the
 * cache: FA_ERR_NOMEM) with the message set; then no other rank can be told. */
fa_status fa_ring_open(fa_ring *r, const char *call, MPI_Comm comm, fa_mpi_layout layout, const fa_params *p,
                       const fa_tensor *q, const fa_tensor *k, const fa_tensor *v);

/* The checks of the calling rank that only the ring adds to fa_forward_check's: p's reading first,
 * then every rank's shape
 * and parameters against rank 0's, Nq = Nk locally, the ZIGZAG shard, the bias's key axis, the
 * shift's range, p->seqs. FA_OK, or a status with its reason in `reason`. */
fa_status fa_ring_check(const fa_ring *r, const fa_tensor *q, const fa_tensor *k, char *reason, size_t size);

/* FA_ERR_UNSUPPORTED, with the reason, for quantized caches (whose shards would travel without their
 * scales) and f32 queries over a half-precision cache; FA_OK for one dtype throughout (f64, f32,
 * bf16, f16). Called once a rank's own call checks out, so a bad argument keeps its own status. */
fa_status fa_ring_refuse_mixed(const fa_tensor *q, const fa_tensor *k, char *reason, size_t size);

/* The segments of rank s's rows. */
fa_ring_segments fa_ring_segments_of(const fa_ring *r, int s);

/* Collective: every rank's status; returns the worst (the largest code), the same on every rank,
 * with the message "call: rank R of P: reason" of the lowest rank that has it. `reason` is the
 * calling rank's explanation (ignored when mine is FA_OK). */
fa_status fa_ring_agree(fa_ring *r, fa_status mine, const char *reason);

/* The communicator's buffer of at least `bytes` (64-byte aligned, kept for later calls), or NULL. */
void *fa_ring_buffer(fa_ring *r, size_t bytes);

/* Sets the message of the calling thread (fa_mpi_last_error) and returns st. */
fa_status fa_ring_fail(fa_status st, const char *fmt, ...);
void fa_ring_clear_message(void);

/* A transfer of `bytes` bytes to or from `peer`, posted as up to two requests (whole 1 MiB blocks
 * and the rest, so counts fit an int); FA_OK or FA_ERR_RUNTIME. */
typedef struct {
    MPI_Request req[2];
} fa_ring_transfer;
fa_status fa_ring_post(fa_ring *r, fa_ring_transfer *t, void *buf, size_t bytes, int peer, int tag, int send);
fa_status fa_ring_wait(fa_ring_transfer *t);
/* Lets MPI progress posted transfers between computations. */
void fa_ring_progress(fa_ring_transfer *t, int count);

/* Bytes of one element of t (8, 4 or 2). */
size_t fa_ring_elem(fa_dtype t);
/* Views: rows [row, row + len) of t; a contiguous [B][H][len][D] tensor at data. */
fa_tensor fa_ring_rows(const fa_tensor *t, int64_t row, int64_t len);
fa_tensor fa_ring_compact(void *data, fa_dtype dt, int64_t b, int64_t h, int64_t len, int64_t d);
/* Element at of a contiguous array of an accumulation type t (FA_F64 or FA_F32), as a double; and
 * stored (an FA_F32 rounded once). Half-precision elements go through fa_convert, the library's own
 * rounding. */
double fa_ring_load(const void *base, int64_t at, fa_dtype t);
void fa_ring_store(void *base, int64_t at, fa_dtype t, double x);

/* Whether some query of the segment q can see some key of the segment k under p's causal mask,
 * windows and diagonal_shift on the global positions (self-attention: d0 = diagonal_shift). */
int fa_ring_block_visible(const fa_params *p, const fa_ring_segment *q, const fa_ring_segment *k);

/* How far around the ring the shard of rank src travels: the largest d in 1..P-1 for which rank
 * (src + d) mod P has a query that can see one of its keys, or 0. The ranks at distance 1..d
 * receive it (those between pass it on); no rank beyond ever does. Every rank computes the same
 * value from the shapes, so sender and receiver agree without asking. */
int fa_ring_reach(const fa_ring *r, int src);

/* p for one block: the queries at global position a, the keys at b, nq and nk of them: the same
 * mask and distances as the global call, without sinks (applied once, after the merge) and with
 * the bias's columns of the block (into *bias). */
fa_params fa_ring_block_params(const fa_ring *r, const fa_ring_segment *q, const fa_ring_segment *k,
                               fa_tensor *bias);

/* p for the rank's whole shard as one call of it alone would see it, for fa_forward_check and
 * fa_backward_check: the block of its rows against its own keys, with the sinks (and dsinks). */
fa_params fa_ring_own_params(const fa_ring *r, const fa_tensor *q, fa_tensor *bias);

/* The longest shard of any rank. */
int64_t fa_ring_widest(const fa_ring *r);

/* The bytes of `rows` keys' K and V (or dK and dV) of type t as one compact shard buffer, K first:
 * the caller's dtype for the shards that travel, the accumulation type for gradient sums. */
size_t fa_ring_shard_bytes(const fa_ring *r, int64_t rows, fa_dtype t);
/* The K and V (or dK and dV) halves of a compact shard buffer of `rows` keys of type t at base. */
void fa_ring_shard_halves(const fa_ring *r, char *base, int64_t rows, fa_dtype t, fa_tensor *k, fa_tensor *v);

/* Bytes rounded up to 64. */
size_t fa_ring_round(size_t bytes);

#endif
