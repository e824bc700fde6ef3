/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * flashattn_mpi: sequence-parallel (ring) attention over MPI, forward and backward.
 *
 * One self-attention sequence of N positions is split across the P ranks of a communicator. Every
 * rank passes its local shard of q, k and v (the same batch, heads and head dims on every rank);
 * the key/value shards travel around the ring of ranks while each rank attends its queries to them,
 * and the partial results merge through their log-sum-exp (fa_merge's arithmetic). Link with
 * libflashattn_mpi and libflashattn and an MPI-3 library: CMake `flashattn::mpi`, pkg-config
 * `flashattn-mpi`.
 *
 * Layouts (positions of the local rows):
 * - FA_MPI_CONTIGUOUS: rank r holds a contiguous run of positions, the runs in rank order; the
 *   lengths may differ between ranks (0 included).
 * - FA_MPI_ZIGZAG: for causal load balance the sequence is cut into 2P chunks of N/(2P) positions
 *   and rank r holds chunks r and 2P-1-r, in that order (every rank's shard length must be the
 *   same even number, 2·N/(2P); otherwise FA_ERR_SHAPE on every rank).
 *
 * Semantics: those of one fa_forward / fa_backward over the whole sequence (q, k, v of N rows):
 * causal masks (both alignments coincide, Nq = Nk), windows, ALiBi and p->diagonal_shift on the
 * global positions; a bias (p->bias) holds the rows of the rank's own queries against the global
 * key axis, [B][Hq][local Nq][N] (or broadcast over batch, heads or rows: seq 1); sinks and GQA as
 * in fa_forward; dropout (p->dropout_p) drops what one fa_forward over the whole sequence drops: each
 * block's call indexes the mask by the global rows and keys (p->dropout_row0 and dropout_key0, if
 * set, move the whole sequence). p (NULL: every default) is read by flashattn.h's rule (its ABI
 * section), on each rank against the fa_params this library was built with: a struct_size out of
 * range is FA_ERR_ARG, a field this library does not know set is FA_ERR_UNSUPPORTED, agreed over the
 * ranks as any other refusal. p->seqs is not supported (FA_ERR_UNSUPPORTED). A key shard travels round the
 * ring only as far as the last rank that can see one of its keys (under a causal mask or a window;
 * the ranks on the way pass it on), so it is never sent beyond that rank, and blocks that no local
 * query can see are neither computed nor merged.
 *
 * Precision: one dtype throughout, f64, f32, bf16 or f16 (fa_mpi_forward's out may also be FA_F32
 * under bf16 or f16, as fa_forward's). The K/V shards travel in that dtype (2
 * bytes an element for bf16 and f16); the blocks' results, their merge, the dK/dV sums (which travel
 * too) and dq are of the accumulation type (double for f64, float otherwise), and a half-precision
 * out, dq, dk, dv is rounded once at the end, as fa_forward and fa_backward round. Each block is
 * one fa_forward (fa_backward) with half q, k, v (out, dout) and an f32 out (f32 dq, dk, dv), so it
 * runs on the kernels a one-process call of the same dtype runs on (bf16 dot-product units
 * included: fa_forward's and fa_backward's "dtype").
 *
 * Collective: every rank of comm must call with the same layout and params (the same values, dropout's
 * p, seed, offset and origins included; the pointers are each rank's own), and every rank returns the
 * same status. The ranks agree on
 * validity before any data moves: if one rank's arguments are bad, all return an error (the
 * worst status over the ranks), no rank writes an output, and none hangs; fa_mpi_last_error() on
 * every rank then names the rank at fault and its reason. Outputs are written only after all ranks
 * finished their computation (a rank that runs out of memory makes every rank return FA_ERR_NOMEM
 * with nothing written). comm = MPI_COMM_NULL, or MPI not initialized, is refused on the calling
 * rank alone (FA_ERR_ARG, FA_ERR_RUNTIME): there is no communicator to agree over. The calls
 * communicate over a duplicate of comm (made on the first call and cached with the buffers), so
 * their messages never meet the caller's, and MPI errors there return FA_ERR_RUNTIME.
 *
 * Deterministic: for a given P and layout, every output's bytes are the same on every run and at
 * every thread count: partial results merge in ring order (shard r, r-1, ..., r+1 mod P at rank r),
 * a fixed function of the rank, never in arrival order; gradient contributions are summed in the
 * same fixed order.
 *
 * Communication: non-blocking sends and receives of the next shard while the current one is
 * computed, double-buffered. The buffers are cached on the communicator (an MPI attribute), grown
 * only when a call needs more, and freed with the communicator (MPI_Comm_free); those of
 * MPI_COMM_WORLD and MPI_COMM_SELF last until MPI_Finalize, or the end of the process where the
 * MPI library does not delete their attributes. A call is not thread-safe with another call on the
 * same communicator (as with any MPI collective).
 *
 * Memory per rank, beyond the context's (see flashattn.h), with n_max the longest shard and n_g
 * the rank's query segments (one, or two for ZIGZAG), in elements (of the caller's dtype for the K/V
 * shards, of the accumulation type for everything else): the forward keeps the K/V
 * shards double-buffered, 2·B·Hkv·n_max·(D + Dv), and for each segment two running results and
 * one block's, 3·B·Hq·n_g·(Dv + 1); the backward keeps the K/V shards and the travelling dK/dV
 * accumulators double-buffered and one step's dK/dV, 5·B·Hkv·n_max·(D + Dv), one block's dK and
 * dV, B·Hkv·n_max·(D + Dv), and for each segment dq, one block's dq and its lse rows,
 * B·Hq·n_g·(2·D + 1), and (P + 1)·Hq doubles for the sinks' gradient; bf16 and f16 add float copies
 * of the rank's q (forward), or of its q, out and dout and of one shard (backward); each piece
 * rounded up to 64 bytes.
 */
#ifndef FLASHATTN_MPI_H
#define FLASHATTN_MPI_H

#include <mpi.h>

#include "flashattn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    FA_MPI_CONTIGUOUS = 0, /**< rank r holds a contiguous run of positions, the runs in rank order */
    FA_MPI_ZIGZAG = 1      /**< rank r holds chunks r and 2P-1-r of 2P equal chunks (causal load balance) */
} fa_mpi_layout;

/**
 * Forward over the global sequence: out and lse (NULL allowed) receive the rows of the local
 * queries, exactly as the rows of one fa_forward over the whole sequence up to rounding (the merge
 * of P partial results). q is [B][Hq][n_r][D], k [B][Hkv][n_r][D], v [B][Hkv][n_r][Dv], out
 * [B][Hq][n_r][Dv], lse [B][Hq][n_r] of the accumulation type, on rank r; refusals as fa_forward's
 * (checked on each rank's shard), plus: an invalid comm or layout (FA_ERR_ARG), batch, heads, head
 * dims or dtype differing between ranks (FA_ERR_SHAPE / FA_ERR_DTYPE), a ZIGZAG shard length that
 * is not the same even number on every rank or a local Nq != Nk (FA_ERR_SHAPE), a bias whose key
 * axis is not N (FA_ERR_SHAPE), |p->diagonal_shift| + N beyond FA_MAX_DIAGONAL_SHIFT (FA_ERR_ARG),
 * p->seqs, a quantized k and v or f32 queries over a half-precision k and v (FA_ERR_UNSUPPORTED),
 * p->dropout_row0 or dropout_key0 negative (FA_ERR_ARG), the global rows or keys past dropout's
 * counter (FA_ERR_UNSUPPORTED), an MPI error (FA_ERR_RUNTIME).
 */
FA_API fa_status fa_mpi_forward(MPI_Comm comm, fa_mpi_layout layout, fa_context *ctx, const fa_params *p,
                                const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                                const fa_tensor *out, void *lse);

/**
 * Backward over the global sequence: dq, dk and dv receive the gradients of the local shard, out
 * and lse being fa_mpi_forward's (lse required). The K/V shards travel the ring again with their
 * dK/dV accumulators, which end on their own rank; every gradient is summed in the fixed ring
 * order. With p->dsinks, every rank receives the sinks' gradient over the whole sequence (the
 * ranks' sums added in rank order). Refusals as fa_backward's and fa_mpi_forward's, plus p->dbias
 * (FA_ERR_UNSUPPORTED on every rank: the bias's gradient is not computed across ranks in this version).
 */
FA_API fa_status fa_mpi_backward(MPI_Comm comm, fa_mpi_layout layout, fa_context *ctx, const fa_params *p,
                                 const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                                 const fa_tensor *out, const fa_tensor *dout, const void *lse,
                                 const fa_tensor *dq, const fa_tensor *dk, const fa_tensor *dv);

/**
 * The message of the last fa_mpi_* call of the calling thread: "" after a success; otherwise the
 * call, the rank at fault and its reason, e.g. "fa_mpi_forward: rank 2 of 4: fa_forward_check:
 * k.dim = 15 but q.dim = 16" (the same line on every rank). Never NULL; valid until the thread's
 * next fa_mpi_* call.
 */
FA_API const char *fa_mpi_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* FLASHATTN_MPI_H */
