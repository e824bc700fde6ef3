/* SPDX-License-Identifier: BSD-3-Clause */
/* The validated, internal description of one attention problem.
 * Only api.c/validate.c build it from user structs; drivers and kernels see nothing else. */
#ifndef FA_PROBLEM_H
#define FA_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"

/* A strided [batch][heads][seq][dim] view; the dim axis is contiguous. Strides in elements. */
typedef struct {
    void *data;
    int64_t stride_batch, stride_head, stride_seq;
} fa_view;

typedef struct {
    fa_dtype dtype;    /* the accumulation type, FA_F32 or FA_F64: of scores, lse, delta, accumulators */
    fa_dtype q_type;   /* of q, out, dout and dq: dtype, or FA_BF16/FA_F16 */
    fa_dtype kv_type;  /* of k, v, dk and dv: q_type, or FA_BF16/FA_F16 under f32 queries */
    fa_dtype out_type; /* of out: q_type, or the accumulation type under half queries (the forward's
                        * partial results for fa_merge, never rounded to half precision) */
    fa_dtype dq_type;  /* of dq: q_type, or the accumulation type under half q, k and v */
    fa_dtype dkv_type; /* of dk and dv: kv_type, or as dq_type under half q, k and v (the backward's
                        * partial sums, never rounded to half precision) */
    int64_t batch, q_heads, kv_heads;
    int64_t group; /* q_heads / kv_heads: query head h reads kv head h / group */
    int64_t q_len, kv_len, dim, dim_v;
    fa_view q, k, v, out;
    void *lse; /* NULL or contiguous [batch][q_heads][q_len] of the accumulation type */
    /* backward only: the output gradient (read) and the input gradients (written) */
    fa_view dout, dq, dk, dv;
    double scale;
    fa_causal causal;
    /* Score modifiers (flashattn.h, fa_params). diag_offset is d0 (with fa_params.diagonal_shift,
     * diag_shift, added): key j is on row i's diagonal when j = i + d0. */
    int64_t diag_offset, diag_shift;
    int64_t window_left, window_right; /* -1: unbounded */
    double softcap;                    /* 0: off */
    const float *alibi_slopes;         /* NULL: off; one per query head */
    fa_view bias;       /* data NULL: off. Element (b, h, i, j) at fa_view_at(&bias, .., b, h, i) + j;
                                          broadcast axes (size 1 in the caller's view) have stride 0 here */
    const float *sinks; /* NULL: off; one logit per query head */
    /* A quantized cache's scales (kv_type FA_I8, FA_F8_*): float views of one element per row of k and
     * v, element (b, h, s) at fa_view_at(&k_scale, 4, b, h, s); data NULL otherwise. Broadcast axes
     * have stride 0. They move with k and v in the problem of one sequence (fa_problem_sequence). */
    fa_view k_scale, v_scale;
    float *dsinks; /* backward only: NULL, or one gradient per query head */
    /* backward only: data NULL, or dL/dbias, of the bias's type, element (b, h, i, j) at
     * fa_view_at(&dbias, .., b, h, i) + j like the bias. An axis the bias broadcasts over (size 1 or
     * stride 0) has stride 0 here: its (b, h, i) share one row, whose sum fa_dbias_sums says is due. */
    fa_view dbias;
    /* Dropout (flashattn.h, fa_params "Dropout"): dropout_p 0 is off. The mask of (batch b, query head
     * h, row i, key j) is drivers/dropout.h's of (seed, offset, dropout_batch0 + b, h, dropout_row0 + i,
     * dropout_key0 + j) with dropout_heads streams a batch entry: dropout_batch0 is the sequence of the
     * problem of one (fa_problem_sequence), 0 otherwise; dropout_heads the caller's Hq; the origins the
     * caller's (fa_params.dropout_row0, dropout_key0: where a block sits in a longer sequence). */
    double dropout_p;
    uint64_t dropout_seed, dropout_offset;
    int64_t dropout_batch0, dropout_heads;
    int64_t dropout_row0, dropout_key0;
    /* lse (and the backward's delta) element (b, h, i) is at (b·q_heads + h)·lse_head_stride +
     * i·lse_row_stride: lse_head_stride is q_len for a dense batch, total_q when the queries are
     * packed; lse_row_stride is 1 (but see row_group) */
    int64_t lse_head_stride, lse_row_stride;
    /* A problem of grouped rows (fa_problem_group_rows, the forward's only): row r of head g is
     * position r / row_group of the caller's query head g·row_group + r % row_group, so that the
     * heads sharing a kv head run as the rows of one. q, out and lse rows step over positions by
     * q.stride_seq, out.stride_seq and lse_row_stride and over the group's heads by the *_sub strides
     * (fa_row_offset); the masks see positions (fa_position_of). 1 in every other problem: row r is
     * position r. */
    int64_t row_group;
    int64_t q_sub_stride, out_sub_stride, lse_sub_stride;
    /* A batch of sequences (fa_seqs), or NULL. Drivers never read it: they run the dense problem of
     * one sequence at a time, from fa_problem_sequence. */
    const fa_seqs *seqs;
    /* Paged K/V, in the problem of one sequence: its page indices (k and v are page pools whose
     * batch axis is the page, seq axis the row in it), or NULL for contiguous keys. */
    const int32_t *pages;
    int64_t page_size;
} fa_problem;

/* A validated fa_merge: the caller's arrays (read during the call only). */
typedef struct {
    int n;
    const fa_tensor *outs;
    const void *const *lses;
    const fa_tensor *out;
    void *lse;
} fa_merge_problem;

/* The dense problem of sequence b of a problem with seqs: batch 1, its own query rows and keys in
 * use, views and lse moved to its first row, its diagonal offset (Nk_b - Nq_b unless top-left),
 * paged keys as pages. For a problem without seqs, the problem of batch b alone. */
void fa_problem_sequence(const fa_problem *p, int64_t b, fa_problem *one);

/* The most query rows a head may have for its heads to be grouped (a decode step, speculative
 * tokens included). */
#define FA_GROUPED_ROWS_MAX_LEN 4

/* A forward problem of at most FA_GROUPED_ROWS_MAX_LEN query rows a head with nothing that differs
 * between the heads of a group (a GQA or MLA decode step without ALiBi, bias or sinks): writes into
 * *grouped the same problem with the `group` query heads of each key/value head as the rows of one
 * head, position by position (row_group), and returns 1; otherwise 0. The choice rests on the shape
 * and parameters alone, so it never changes with the thread count. */
int fa_problem_group_rows(const fa_problem *p, fa_problem *grouped);

/* Work items over the sequences of a problem: `per_sequence[b]` items for sequence b, numbered
 * sequence after sequence. first[b] is the index of sequence b's first item; first has batch + 1
 * entries (first[batch] = the count). Returns the sequence of item `index` (binary search). */
int64_t fa_sequence_of_item(const int64_t *first, int64_t batch, int64_t index);

/* n rounded up to a multiple of m (m > 0): tile widths, padded head dims. */
static inline int64_t fa_round_up(int64_t n, int64_t m)
{
    return (n + m - 1) / m * m;
}

/* Bytes of one element of each group of views: q, out, dout, dq (q_type); k, v, dk, dv (kv_type). */
static inline size_t fa_elem_size(fa_dtype t)
{
    return t == FA_F64 ? 8 : t == FA_F32 ? 4 : t == FA_BF16 || t == FA_F16 ? 2 : 1;
}

static inline int fa_dtype_is_half(fa_dtype t)
{
    return t == FA_BF16 || t == FA_F16;
}

/* Whether the rows of q (and out, dout, dq), or of k (and v, dk, dv), are stored in another type
 * than the one the problem computes in (bf16 or f16 under f32), and so are widened as they are
 * read and rounded once as they are written. */
static inline int fa_q_widens(const fa_problem *p)
{
    return p->q_type != p->dtype;
}
/* Whether out is stored in half precision while the rows are computed in float: rounded once. */
static inline int fa_out_rounds(const fa_problem *p)
{
    return p->out_type != p->dtype;
}
static inline int fa_kv_widens(const fa_problem *p)
{
    return p->kv_type != p->dtype;
}
/* Whether the backward rounds dq (dk and dv) to half precision as it writes them, from float sums. */
static inline int fa_dq_rounds(const fa_problem *p)
{
    return p->dq_type != p->dtype;
}
static inline int fa_dkv_rounds(const fa_problem *p)
{
    return p->dkv_type != p->dtype;
}

/* Whether the problem has a value modifier, applied to every score computed (softcap, ALiBi, bias). */
static inline int fa_problem_modifies_scores(const fa_problem *p)
{
    return p->softcap > 0 || p->alibi_slopes != NULL || p->bias.data != NULL;
}

/* Whether dbias sums over the problem's batches, heads or rows: an axis it broadcasts over (stride 0)
 * whose extent is not 1. An extent of 0 sums nothing, so those dbias rows are zeros, which a summing
 * item writes (no (batch, head, row) would). */
static inline int fa_dbias_sums_batches(const fa_problem *p)
{
    return p->batch != 1 && p->dbias.stride_batch == 0;
}
static inline int fa_dbias_sums_heads(const fa_problem *p)
{
    return p->q_heads != 1 && p->dbias.stride_head == 0;
}
/* Whether some row of dbias sums the gradients of several (or no) (batch, head, row) of the problem.
 * 0: every dS is one element. */
static inline int fa_dbias_sums(const fa_problem *p)
{
    return fa_dbias_sums_batches(p) || fa_dbias_sums_heads(p) || (p->q_len != 1 && p->dbias.stride_seq == 0);
}

/* The position of row r (the masks' row index). */
static inline int64_t fa_position_of(const fa_problem *p, int64_t r)
{
    return p->row_group > 1 ? r / p->row_group : r;
}

/* The offset, in elements, of row r from row 0 of a head, for rows stepping seq_stride apart per
 * position and sub_stride per head of a group (row_group). */
static inline int64_t fa_row_offset(const fa_problem *p, int64_t r, int64_t seq_stride, int64_t sub_stride)
{
    return p->row_group > 1 ? r / p->row_group * seq_stride + r % p->row_group * sub_stride : r * seq_stride;
}

/* The stride of rows [r0, r0 + n) when they lie evenly apart (one position, or no groups), else 0:
 * such rows must be gathered one at a time. */
static inline int64_t fa_rows_stride(const fa_problem *p, int64_t r0, int64_t n, int64_t seq_stride,
                                     int64_t sub_stride)
{
    if (p->row_group <= 1) return seq_stride;
    if (n <= 1 || r0 / p->row_group == (r0 + n - 1) / p->row_group) return sub_stride;
    return 0;
}

/* Element (b, h, s, 0) of a view. An empty view has NULL data and zero strides (validate.c: its
 * strides were never checked, and an offset from them could overflow), and pointer arithmetic on
 * NULL is undefined even with a zero offset, so such a view gives NULL (never dereferenced: the
 * loops over an empty view do not run). */
static inline void *fa_view_at(const fa_view *v, size_t elem, int64_t b, int64_t h, int64_t s)
{
    if (!v->data) return NULL;
    return (char *)v->data + (b * v->stride_batch + h * v->stride_head + s * v->stride_seq) * (int64_t)elem;
}

#endif
