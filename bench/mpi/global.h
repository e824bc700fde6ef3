/* SPDX-License-Identifier: BSD-3-Clause */
/* The global problem and its shards: which positions each rank holds (the layouts of
 * flashattn_mpi.h, recomputed here from the header, not from the library), the inputs as values of
 * their global position, the rows gathered back into the global order on rank 0, and the FLOP
 * count. */
#ifndef FA_BENCH_MPI_GLOBAL_H
#define FA_BENCH_MPI_GLOBAL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "options.h"

/* A run of a rank's rows: global positions [pos, pos + len) at local rows [row, row + len). */
typedef struct {
    int64_t pos, row, len;
} bm_run;

typedef struct {
    int count;
    int64_t rows; /* the rank's shard length */
    bm_run run[2];
} bm_shard;

/* Rank r of P: CONTIGUOUS, positions in rank order, the first N % P ranks one longer; ZIGZAG,
 * chunks r and 2P-1-r of N/(2P) positions (the caller checks that 2P divides N). */
bm_shard bm_shard_of(const bm_options *o, int rank, int ranks);

/* Streams of the inputs, fa-bench's (bench/problem.c): the same seed gives the same values. */
enum { BM_STREAM_Q = 1, BM_STREAM_K = 2, BM_STREAM_V = 3, BM_STREAM_DOUT = 4 };

/* Fills the compact [B][H][rows][D] tensor t, local row x holding the position the shard gives it,
 * with fa-bench's normal values of (seed, stream, ((b*H + h)*N + position)*D + d). */
void bm_fill(const fa_tensor *t, const bm_shard *sh, int64_t n, uint64_t seed, uint64_t stream);

/* A compact tensor of dtype over a new 64-byte-aligned buffer of b*h*s*d elements filled with NaN
 * (an element the library never writes fails the check); data NULL if memory ran out. Free with
 * free(t.data). */
fa_tensor bm_tensor(fa_dtype dtype, int64_t b, int64_t h, int64_t s, int64_t d);
// The accumulation type of dtype (lse's): FA_F64 for f64, FA_F32 otherwise.

size_t bm_bytes(const fa_tensor *t);

/* Collective: rank 0 receives every rank's compact local tensor (shaped like its own `local`, with
 * each rank's shard length) and places its rows at their global positions in `global` ([B][H][N][D],
 * rank 0 only; NULL elsewhere). Returns 0, or -1 if an MPI call failed. */
int bm_gather(const bm_options *o, MPI_Comm comm, const fa_tensor *local, const fa_tensor *global);

/* (query, key) pairs of one head visible in the global problem: N(N+1)/2 causal, N*N otherwise. */
double bm_visible_pairs(const bm_options *o);

/* FLOP of one call: 2*B*Hq*V*(D+Dv) forward, 2.5 x that backward (bench/problem.c's counts). */
double bm_flops(const bm_options *o, int pass);

#endif
