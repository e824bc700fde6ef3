/* SPDX-License-Identifier: BSD-3-Clause */
/* The unfused baseline: attention as a hand-written BLAS loop computes it. For a block of query
 * rows of one (batch, head): S = scale * Q * K^T with one gemm into a rows x Nk buffer, a row
 * softmax with the causal mask, O = P * V with a second gemm. Two ways to thread it:
 *
 *   gemm-threads  one block per head (all Nq rows); OpenBLAS threads each gemm
 *                 (openblas_set_num_threads), OpenMP threads the softmax rows;
 *   row-blocks    blocks of 128 rows of every head, spread over an OpenMP team; each thread calls
 *                 single-threaded gemms on its own blocks.
 *
 * gemm-threads alternates two thread pools, and each spins for a while after its phase ends, which
 * costs the other one cores (OpenMP's spin can be turned off with OMP_WAIT_POLICY=passive); row
 * blocks have no such handover but need enough blocks for the team. --blas-mode best times both
 * and keeps the faster. Compiled only when CMake finds OpenBLAS (FA_BENCH_HAVE_BLAS); forward
 * pass only. */
#ifndef FA_BENCH_BLAS_BASELINE_H
#define FA_BENCH_BLAS_BASELINE_H

#include <stddef.h>

#include "flashattn.h"
#include "options.h"
#include "problem.h"

typedef struct {
    const bench_problem *pb;
    double scale; /* the resolved score scale (1/sqrt(D) when the params say 0) */
    fa_causal causal;
    bench_blas_mode mode; /* BENCH_BLAS_GEMM_THREADS or BENCH_BLAS_ROW_BLOCKS for the next calls */
    int threads;          /* threads of the next calls */
    int max_threads;      /* row-blocks scratch is sized for this many threads */
    void *scores;         /* gemm-threads: Nq x Nk; row-blocks: max_threads x (128 x Nk); dtype's */
    void *out;            /* contiguous [B][Hq][Nq][Dv] of the dtype */
    size_t scores_bytes, out_bytes;
} bench_blas;

/* "OpenBLAS 0.3.21 (core Haswell)" (the core it runs, which OPENBLAS_CORETYPE can change). */
const char *bench_blas_describe(void);

/* A warning when OpenBLAS reports a core older than the CPU (a generic one, or one before AVX2:
 * Prescott, Core2, Nehalem, Sandybridge...) while the CPU has AVX2 and FMA or AVX-512; it names the
 * OPENBLAS_CORETYPE to set (SkylakeX, Haswell). "" when there is nothing to say. Static string. */
const char *bench_blas_core_warning(void);

/* Allocates the buffers for pb (f32 or f64) and up to max_threads threads. Returns 0, or -1 after
 * a message (a shape whose sizes or strides do not fit BLAS's int, or memory). */
int bench_blas_init(bench_blas *b, const bench_problem *pb, const fa_params *p, int max_threads);

/* Frees the buffers; a zeroed baseline is fine. */
void bench_blas_free(bench_blas *b);

/* Mode and threads of the next calls (sets OpenBLAS's thread count accordingly). */
void bench_blas_configure(bench_blas *b, bench_blas_mode mode, int threads);

/* One forward over every (b, h) into b->out; a bench_call_fn. Always FA_OK. */
fa_status bench_blas_call(void *b);

/* max|baseline - library| / max|library| over every element of out (the library's out in pb). */
double bench_blas_difference(const bench_blas *b);

#endif
