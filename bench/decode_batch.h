/* SPDX-License-Identifier: BSD-3-Clause */
/* --decode-batch: one decode step (one query per sequence) over per-sequence KV caches of different
 * lengths (fa_seqs.seqused_k), held contiguously and, with a page size, in a pool of pages handed
 * out in a shuffled order (fa_seqs.block_table, as vLLM's allocator leaves them). Their inputs, the
 * two timed calls, and the checks: the contiguous rows against the float64 oracle on each sequence
 * alone, the paged rows bitwise equal to the contiguous ones (the library gathers paged keys into
 * the same tiles). q and out have the shape's dtype, the caches and pools its kv_dtype (a bf16 or f16
 * paged KV cache under f32 queries: dtypes.h; or a quantized one, each cache and pool with its f32
 * scales per token and head: tests/kit/dtype.h; separate arrays, or inline after each row's codes), lse
 * the accumulation type. */
#ifndef FA_BENCH_DECODE_BATCH_H
#define FA_BENCH_DECODE_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"
#include "lengths.h"
#include "problem.h"
#include "stream.h"
#include "verify.h"

typedef struct {
    bench_lengths used;                          /* keys in use per sequence: seqused_k */
    int64_t capacity;                            /* keys per sequence of the contiguous cache: the longest */
    int64_t page_size, pages_per_seq, num_pages; /* page_size 0: no paged cache */
    int32_t *table;                              /* [count][pages_per_seq]: the pages in use, -1 after them */
    fa_seqs contiguous_seqs, paged_seqs;
    /* q [count][Hq][1][D], out and lse of the contiguous call, and the modifiers; its own k and v
     * (one key per sequence) are not used. */
    bench_problem pb;
    fa_tensor kc, vc; /* contiguous caches [count][Hkv][capacity][D], keys beyond the used NaN */
    fa_tensor kp, vp; /* page pools [num_pages][Hkv][page_size][D]; the tail of a last page NaN */
    /* A quantized cache's scales (data NULL otherwise), f32 and contiguous in this order whatever the
     * layout: [count][Hkv][capacity][1] (NaN beyond the keys in use) and, for the pools, pools of their
     * own [num_pages][Hkv][page_size][1] read through the same block table (NaN in unused rows). */
    fa_tensor kc_scale, vc_scale, kp_scale, vp_scale;
    int inline_scales;   /* --kv-scales inline: those views point into kc, vc, kp, vp, each scale after its
                          row's codes (rows padded to 4 bytes) */
    fa_tensor paged_out; /* like pb.out */
    void *paged_lse;     /* like pb.lse */
    fa_params contiguous_params, paged_params; /* with their seqs */
    fa_params dense_params;                    /* without: the oracle's */
    /* The keys the queries see, summed over the sequences: all their keys in use, but for a window or
     * a top-left causal mask. Each is read once per call in each kv head. */
    int64_t keys_seen;
    double flops;    /* 2 * Hq * keys_seen * (D + Dv) */
    double kv_bytes; /* keys_seen * Hkv * (D + Dv) * sizeof(kv_dtype), + 2 * 4 per key and head of a
                        quantized cache's scales: the K and V bytes one call reads */
    /* What the caches were built for (all but the page size), when built is 1. */
    int built;
    bench_shape built_shape;
    bench_dist built_dist;
    uint64_t built_seed;
} bench_decode;

/* Makes d the batch of shape s (s->ragged is a decode spec; its page_size 0 builds no pool): draws the
 * cache lengths and builds the caches, unless d already holds them, built for the same shape but
 * for the page size, the same dist and seed; then the pool for s's page size. The contiguous caches
 * are gigabytes of seeded draws that take most of a case's time, so that a preset's cases of several
 * page sizes, and every round, share one build. A zeroed d holds nothing. Returns 0, or -1 after a
 * message (d is then freed). */
int bench_decode_prepare(bench_decode *d, const bench_shape *s, bench_dist dist, uint64_t seed);
/* Frees everything; d is zeroed (and holds nothing). */
void bench_decode_free(bench_decode *d);

/* The timed calls, for bench_time_calls; arg is a bench_decode_call. */
typedef struct {
    fa_context *ctx;
    const bench_decode *d;
} bench_decode_call;
fa_status bench_decode_call_contiguous(void *arg);
fa_status bench_decode_call_paged(void *arg);

/* Every output (contiguous and paged) back to NaN. */
void bench_decode_poison(bench_decode *d);

/* The contiguous out and lse against the float64 oracle on min(check_rows, count * Hq) rows spread
 * over (sequence, head); a quantized cache's rows are read as scale * code. Returns 0 (see ->passed),
 * or -1 if memory ran out. */
int bench_decode_verify(const bench_decode *d, int64_t check_rows, bench_verify_result *r);

/* What the paged call reads, where it lies, for the page probe (stream.h): each sequence's keys that
 * its query sees, page after page in block-table order, of each page K's rows, V's, then their
 * scales' (inline: each row with its scale). Their bytes are kv_bytes. *spans (free it) is NULL
 * and *n 0 without pages. Returns 0, or -1 when memory runs out. */
int bench_decode_page_spans(const bench_decode *d, bench_span **spans, size_t *n);

/* NULL when the contiguous out and lse hold no NaN (every row was written: the inputs in use are
 * finite) and, with pages, the paged out and lse equal them byte for byte; else what failed. */
const char *bench_decode_check_outputs(const bench_decode *d);

#endif
