/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-sequence view of a problem (FlashAttention's block info): every driver runs a batch of
 * sequences as the dense problems of its sequences, one at a time, so nothing below this file knows
 * about packed rows, used keys or pages beyond what the problem of one sequence says. */
#include "plan/problem.h"

/* The view moved to row `row` of batch `b` (head 0): the view of one sequence. */
static fa_view view_from(const fa_view *v, size_t elem, int64_t b, int64_t row)
{
    fa_view out = *v;
    if (v->data) out.data = fa_view_at(v, elem, b, 0, row);
    return out;
}

void fa_problem_sequence(const fa_problem *p, int64_t b, fa_problem *one)
{
    /* the accumulation type's size moves lse and bias; each view moves by its own element size */
    size_t elem = fa_elem_size(p->dtype), q_elem = fa_elem_size(p->q_type),
           out_elem = fa_elem_size(p->out_type), kv_elem = fa_elem_size(p->kv_type),
           dq_elem = fa_elem_size(p->dq_type), dkv_elem = fa_elem_size(p->dkv_type);
    *one = *p;
    one->batch = 1;
    one->seqs = NULL;
    one->dropout_batch0 = p->dropout_batch0 + b; /* dropout indexes the sequence, not its rows' batch */
    const fa_seqs *s = p->seqs;
    /* queries: packed rows of batch 0, or batch b */
    int64_t q_batch = b, q_row = 0;
    if (s && s->cu_seqlens_q) {
        q_batch = 0;
        q_row = s->cu_seqlens_q[b];
        one->q_len = s->cu_seqlens_q[b + 1] - q_row;
    }
    one->q = view_from(&p->q, q_elem, q_batch, q_row);
    one->out = view_from(&p->out, out_elem, q_batch, q_row);
    one->dout = view_from(&p->dout, q_elem, q_batch, q_row);
    one->dq = view_from(&p->dq, dq_elem, q_batch, q_row);
    if (p->lse)
        one->lse = (char *)p->lse + (q_batch * p->q_heads * p->lse_head_stride + q_row) * (int64_t)elem;
    /* keys: packed rows of batch 0, pages, or batch b */
    int64_t k_batch = b, k_row = 0;
    if (s && s->cu_seqlens_k) {
        k_batch = 0;
        k_row = s->cu_seqlens_k[b];
        one->kv_len = s->cu_seqlens_k[b + 1] - k_row;
    }
    if (s && s->block_table) {
        one->pages = s->block_table + b * s->pages_per_seq;
        one->page_size = p->kv_len; /* the pools' seq axis */
        one->kv_len = s->pages_per_seq * p->kv_len;
    } else {
        one->k = view_from(&p->k, kv_elem, k_batch, k_row);
        one->v = view_from(&p->v, kv_elem, k_batch, k_row);
        one->dk = view_from(&p->dk, dkv_elem, k_batch, k_row);
        one->dv = view_from(&p->dv, dkv_elem, k_batch, k_row);
        /* the scales follow their rows (a paged pool's are read through the pages, as k's) */
        one->k_scale = view_from(&p->k_scale, sizeof(float), k_batch, k_row);
        one->v_scale = view_from(&p->v_scale, sizeof(float), k_batch, k_row);
    }
    if (s && s->seqused_k) one->kv_len = s->seqused_k[b];
    one->diag_offset = (p->causal == FA_CAUSAL_TOP_LEFT ? 0 : one->kv_len - one->q_len) + p->diag_shift;
    /* a per-sequence bias is refused with seqs (validate.c); without seqs the bias is batch b's */
    if (!s && p->bias.data) one->bias.data = fa_view_at(&p->bias, elem, b, 0, 0);
}

int64_t fa_sequence_of_item(const int64_t *first, int64_t batch, int64_t index)
{
    int64_t lo = 0, hi = batch; /* first[lo] <= index < first[hi] */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (first[mid] <= index)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}
