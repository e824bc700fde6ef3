/* SPDX-License-Identifier: BSD-3-Clause */
/* --varlen: a batch of packed prompts (fa_seqs.cu_seqlens_q = cu_seqlens_k) and the two ways to do
 * without it that it is compared with, on the same tokens: one dense call over equal lengths with the
 * same work, and one dense call per sequence on views of the packed buffers. Their inputs, the three
 * timed calls, and the checks that the packed rows are right (the float64 oracle on each sequence
 * alone) and equal to the loop's. q and out have the shape's dtype, k and v its kv_dtype (dtypes.h);
 * lse is the accumulation type; the oracle reads the packed problem's oracle views (problem.h). */
#ifndef FA_BENCH_VARLEN_H
#define FA_BENCH_VARLEN_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"
#include "lengths.h"
#include "problem.h"
#include "verify.h"

typedef struct {
    bench_lengths lengths;
    int64_t *cu; /* count + 1 token offsets: cu_seqlens_q and cu_seqlens_k */
    fa_seqs seqs;
    /* The packed batch: a problem of B = 1 and Nq = Nk = total tokens in the case's layout (bshd is
     * [total][H][D] memory), with its modifiers; lse [1][Hq][total]. */
    bench_problem packed;
    fa_params packed_params; /* seqs set */
    fa_params dense_params;  /* the same without seqs: the loop's calls and the oracle */
    /* The loop's outputs: out in the layout of packed.out, and each sequence's lse [Hq][L_b]
     * (contiguous, as a dense call writes it) at element Hq * cu[b]. */
    fa_tensor loop_out;
    void *loop_lse;
    size_t loop_lse_bytes;
    int *loop_block_q,
        *loop_block_k; /* each sequence's blocks in its dense call (bench_varlen_call_loop_recorded) */
    /* The dense batch over equal lengths: B = count, Nq = Nk = l_eq, same heads, dims and layout. */
    int64_t l_eq;
    bench_problem equal;
    fa_params equal_params;
    double flops, equal_flops; /* FLOP of one packed (or loop) call, of one equal call */
} bench_varlen;

/* Draws the lengths and builds the three problems of shape s (s->ragged is a varlen spec). Returns
 * 0, or -1 after a message (v is then freed). */
int bench_varlen_init(bench_varlen *v, const bench_shape *s, bench_dist dist, uint64_t seed);
void bench_varlen_free(bench_varlen *v);

/* The timed calls, for bench_time_calls; arg is a bench_varlen_call. */
typedef struct {
    fa_context *ctx;
    const bench_varlen *v;
} bench_varlen_call;
fa_status bench_varlen_call_packed(void *arg);
fa_status bench_varlen_call_equal(void *arg);
fa_status bench_varlen_call_loop(void *arg);

/* The loop once, untimed, recording each dense call's block sizes (fa_stats) in loop_block_q/_k:
 * a context chooses a call's blocks from its own shape (a dense call of a short sequence may take
 * smaller query blocks than the packed call, which takes its longest sequence's). */
fa_status bench_varlen_call_loop_recorded(fa_context *ctx, bench_varlen *v);

/* The loop's outputs back to NaN (the packed and equal ones: bench_problem_poison_outputs). */
void bench_varlen_poison_loop(bench_varlen *v);

/* The packed out and lse, and the loop's, against the float64 oracle run on each sequence alone, on
 * min(check_rows, Hq * total) rows spread over the (token, head) index, token-major (so the sample
 * reaches every sequence it can), first and last included. Returns 0 (see ->passed), or -1 if memory
 * ran out. */
int bench_varlen_verify(const bench_varlen *v, int64_t check_rows, bench_verify_result *packed,
                        bench_verify_result *loop);

/* The normwise bound of the difference between the loop's out and the packed out of type t, where
 * they need not be bitwise equal: bench_verify_tolerance(t) for f32 and f64; a bf16 or f16 out is
 * rounded once on each side (each moves by at most u*max|ref|), so f32's bound plus 2u. lse (never
 * half) is held to bench_verify_lse_tolerance. */
double bench_varlen_match_tolerance(fa_dtype t);

/* How the loop's rows compared with the packed ones. */
typedef struct {
    int64_t bitwise;      /* sequences compared byte for byte (and equal, when passed) */
    int64_t other_blocks; /* sequences whose dense call took other block sizes: within the tolerance */
    int64_t may_split;    /* the others whose dense call may split its keys: within the tolerance */
    double err;           /* worst normwise difference of those (out or lse, the verify rules); 0 if none */
    int passed;
    int64_t first_bad;     /* the first sequence that failed, or -1 */
    int first_bad_bitwise; /* 1: it was compared byte for byte */
} bench_varlen_match;

/* Compares every row of the loop's out and lse with the packed ones. A sequence of L tokens whose
 * dense call took the packed call's block sizes (block_q, block_k: each capped at L, as a call caps
 * them) and cannot split its keys (Hq * ceil(L / block_q) >= 128 query items, or L < 4 * block_k;
 * fa_forward in flashattn.h) must be bitwise equal (the README's promise for a batch of sequences);
 * the others within bench_varlen_match_tolerance (lse: lse's), normwise over the sequence. Needs the
 * blocks of bench_varlen_call_loop_recorded. */
void bench_varlen_match_loop(const bench_varlen *v, int block_q, int block_k, bench_varlen_match *m);

#endif
