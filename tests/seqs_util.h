/* SPDX-License-Identifier: BSD-3-Clause */
/* Ragged batches for the fa_seqs tests (include/flashattn.h, fa_seqs): a batch of sequences with
 * packed or dense queries and packed, dense or paged keys, built from a seed; each sequence's own
 * views, so that it can be run alone as a dense call and judged alone by the float64 oracle; and
 * the checks the suites share. Nothing here judges the library by itself: every expectation comes
 * from the oracle (tests/kit/reference*.c, through util.c's and util_backward.c's accuracy rules) or
 * from an exact invariant the header states.
 *
 * Inputs hold NaN wherever no sequence owns them (rows after the last packed sequence, keys after
 * a sequence's keys in use, the tail of its last page, pages no table entry in use names), so a read
 * of them reaches the outputs and fails the comparisons. Outputs (out, lse, dq, dk, dv) start as
 * KIT_CANARY bytes, with one spare element after each row of each head. */
#ifndef FA_TEST_SEQS_UTIL_H
#define FA_TEST_SEQS_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"
#include "util.h"
#include "util_backward.h"

enum { TS_MAX_SEQS = 16 };

typedef enum {
    TS_KEYS_DENSE = 0,  /* k is [batch][Hkv][k_len[0]][D]: every sequence has k_len[0] keys */
    TS_KEYS_PACKED = 1, /* k is [1][Hkv][total][D], sequence b owning k_len[b] rows (cu_seqlens_k) */
    TS_KEYS_PAGED = 2   /* k is a pool of pages (block_table), pages_per_seq·page_size keys each */
} ts_keys;

typedef struct {
    fa_dtype dtype;
    int64_t batch, q_heads, kv_heads, dim, dim_v;
    /* 0: every tensor in [tokens][H][D] memory (FlashAttention's and vLLM's); 1: [H][tokens][D] */
    int head_major;
    int packed_q; /* cu_seqlens_q; otherwise q is [batch][Hq][q_len[0]][D] */
    ts_keys keys;
    int seqused; /* pass seqused_k = k_used; otherwise every key of a sequence's capacity is in use */
    int64_t q_len[TS_MAX_SEQS];  /* query rows of each sequence (dense: q_len[0] for all) */
    int64_t k_len[TS_MAX_SEQS];  /* key capacity of each sequence (dense: k_len[0] for all; paged: unused) */
    int64_t k_used[TS_MAX_SEQS]; /* with seqused: the keys in use */
    int64_t spare_rows;          /* packed queries or keys: rows after the last sequence, owned by none */
    int64_t page_size, pages_per_seq, spare_pages; /* paged: rows per page, table entries per sequence,
                                                       pool pages beyond the ones in use */
} ts_spec;

enum { TS_Q, TS_K, TS_V, TS_OUT, TS_DOUT, TS_DQ, TS_DK, TS_DV, TS_TENSORS };

typedef struct {
    ts_spec s;
    int64_t q_len[TS_MAX_SEQS], used[TS_MAX_SEQS]; /* each sequence's query rows and keys in use */
    int64_t cu_q[TS_MAX_SEQS + 1], cu_k[TS_MAX_SEQS + 1], seqused_k[TS_MAX_SEQS];
    int32_t *block_table; /* paged: [batch][pages_per_seq], -1 beyond the pages in use */
    int64_t num_pages;
    fa_seqs seqs;                /* what the calls pass as p.seqs */
    fa_tensor t[TS_TENSORS];     /* the batch's tensors; paged: k and v are the pools, dk and dv unused */
    void *lse;                   /* [1][Hq][total_q] packed, [batch][Hq][Nq] dense */
    int64_t lse_rows;            /* the lse's row count per head: total_q or Nq */
    kit_buf buf[TS_TENSORS + 1]; /* storage of t[] and, last, of lse */
    /* paged: each sequence's keys in use, contiguous, packed [1][Hkv][sum of used][D]; cu_used[b] is
     * sequence b's first row there (what the oracle and the contiguous calls read) */
    fa_tensor kc, vc;
    kit_buf kc_buf, vc_buf;
    int64_t cu_used[TS_MAX_SEQS + 1];
} ts_batch;

/* Draws the lengths of s->batch sequences: q_len in 0..max_q (dense queries: one q_len in
 * 1..max_q), key capacities k_len in 0..max_k (dense keys: k_len[0] = max_k; paged: the capacity is
 * pages_per_seq·page_size) and, with s->seqused, keys in use in 0..capacity. With edges the first
 * sequences take the edge cases, as far as the layout allows: no query, one query and one key, no key
 * (or none in use), more queries than keys, keys in use a whole number of pages. */
void ts_spec_draw(ts_spec *s, tu_rng *rng, int64_t max_q, int64_t max_k, int edges);

/* Builds the batch: lengths as the spec says, q and k uniform in [-qk_amp, qk_amp), v and dout in
 * [-1, 1); paged: each sequence's pages drawn from a shuffled pool. cr_asserts a consistent spec. */
void ts_make(ts_batch *t, const ts_spec *s, tu_rng *rng, double qk_amp);
void ts_free(ts_batch *t);
/* The same sequences and values with the keys laid out otherwise (e.g. a paged batch's keys in a
 * packed cache): twin_keys and, for TS_KEYS_DENSE, the capacity of every sequence (>= each one's
 * keys in use; the keys in use are then passed as seqused_k). */
void ts_make_twin(ts_batch *twin, const ts_batch *t, ts_keys twin_keys, int64_t dense_capacity);
/* Outputs (out, lse, dq, dk, dv storage, guards included) back to KIT_CANARY. */
void ts_fill_canary(ts_batch *t);

/* fa_forward / fa_backward of the batch (p with p.seqs = &t->seqs; the backward reads t's out and lse). */
fa_status ts_forward(fa_context *ctx, const fa_params *p, ts_batch *t);
fa_status ts_backward(fa_context *ctx, const fa_params *p, ts_batch *t);

/* Sequence b's view of tensor `which`: batch 1, its query rows, or its keys in use (paged: in kc/vc;
 * TS_DK and TS_DV do not exist there). */
fa_tensor ts_seq_view(const ts_batch *t, int which, int64_t b);
/* Sequence b's lse rows for head h start here (consecutive rows are consecutive elements). */
void *ts_seq_lse(const ts_batch *t, int64_t b, int64_t h);
/* Sequence b as a problem of its own (batch 1): views into t's memory and a contiguous copy of its
 * lse rows, for util.c's and util_backward.c's oracle rules. Free with ts_seq_free. */
void ts_seq_problem(const ts_batch *t, int64_t b, tub_problem *bp);
void ts_seq_free(tub_problem *bp);

/* The accuracy rules of the forward and backward accuracy suites, sequence by sequence, against the
 * float64 oracle on that sequence alone (its own Nq and keys in use, so its own causal alignment,
 * window, ALiBi distances and sink): tu_check_accuracy (f64 1e-12, f32 2x the naive f32 error) and
 * tub_check_accuracy (f64 1e-11, f32 3x). Return 1 when they hold, else explain in msg. */
int ts_check_forward(const ts_batch *t, const fa_params *p, char *msg, size_t size);
int ts_check_backward(const ts_batch *t, const fa_params *p, char *msg, size_t size);
/* dsinks of a batch = the sum over its sequences of each one's oracle dsinks (the rule of
 * tm_check_dsinks: f64 within half a float ulp + 1e-11 max|ref|, f32 within 3x the naive f32 error
 * + 1e-5). */
int ts_check_dsinks(const ts_batch *t, const fa_params *p, const float *dsinks, char *msg, size_t size);

/* Each sequence run alone by fa_forward (fa_backward) on ctx, p without seqs, on its own views:
 * its rows of out and lse (dq, dk, dv) must be bitwise those of the batch. The backward's dense
 * calls read the batch's out and lse rows of the sequence. */
int ts_forward_equals_dense_calls(fa_context *ctx, const fa_params *p, const ts_batch *t, char *msg,
                                  size_t size);
int ts_backward_equals_dense_calls(fa_context *ctx, const fa_params *p, const ts_batch *t, char *msg,
                                   size_t size);

/* Two batches of the same sequences (any layouts): every sequence's out and lse (and with grads its
 * dq, dk, dv) hold the same bytes. */
int ts_outputs_bitwise_equal(const ts_batch *a, const ts_batch *b, int grads, char *msg, size_t size);

/* The forward on ctx[0], then on ctx[1..n-1] (outputs refilled with canaries before each): 1 when
 * every call left the same bytes of out and lse as ctx[0]'s; otherwise 0, naming the first context
 * that differs in msg. cr_asserts that every call succeeds. */
int ts_forward_same_bytes_on(fa_context *const *ctx, int n, const fa_params *p, ts_batch *t, char *msg,
                             size_t size);

/* Every byte of the output storage that is no element of some sequence's rows (out, lse; with
 * grads dq and of its keys in use dk, dv) still holds KIT_CANARY: gaps, guards, rows after the last
 * sequence, keys beyond the ones in use. */
int ts_only_sequence_rows_written(const ts_batch *t, int grads, char *msg, size_t size);

/* "f64 packed-q paged(16/4) B=3 Hq=4 Hkv=2 D=8 Dv=6 Nq=[..] Nk=[..] causal=.. window=.." */
void ts_desc(const ts_batch *t, const fa_params *p, char *buf, size_t size);

/* A mask of the test tables: a causal mode and a window (-1: unbounded). */
typedef struct {
    fa_causal causal;
    int64_t left, right;
} ts_mask_case;

/* A layout of the test tables: packed or dense queries, the keys' layout, keys in use or not,
 * token- or head-major memory, and the heads. */
typedef struct {
    int packed_q;
    ts_keys keys;
    int seqused, head_major;
    int64_t batch, q_heads, kv_heads;
} ts_layout_case;

/* The batch spec of a layout, with these head dims and 3 spare rows. */
ts_spec ts_spec_of(const ts_layout_case *l, fa_dtype dt, int64_t dim, int64_t dim_v);

/* The default parameters with the mask's causal mode and window. */
fa_params ts_mask_params(const ts_mask_case *m);

#endif
