/* SPDX-License-Identifier: BSD-3-Clause */
/* The error-exit table's rows written one by one; see error_exit.h. The generated rows break one
 * field at a time; these break what a loop over fields does not reach: several arguments at once
 * (the first class in the documented order NULL, ARG, DTYPE, SHAPE, STRIDE, ALIAS, UNSUPPORTED
 * wins, and its argument is the one named), views made by fa_tensor_bhsd/bshd from bad sizes,
 * strides that overlap or overflow only together, a bias of another problem's shape (Nq != Nk),
 * a bias over a broadcast row, a bias with a batch of sequences that has no arrays, and the
 * sequences' rows that need more than one change. Each row starts from the valid call of
 * ee_valid_args (every modifier on), or from its batch of sequences. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "error_exit.h"

typedef void (*ee_fn)(const ee_world *w, ee_args *a);

static fa_dtype other_dtype(const ee_world *w)
{
    return w->dt == FA_F32 ? FA_F64 : FA_F32;
}

static unsigned char *elem(const ee_world *w, void *at, int64_t n)
{
    return (unsigned char *)at + n * (int64_t)w->e;
}

/* Every tensor in q's group (q, out, dout, dq) of type q, in k's (k, v, dk, dv) of type k; the
 * bias of the accumulation type. */
static void set_dtypes(ee_args *a, fa_dtype q, fa_dtype k)
{
    for (int i = 0; i < EE_NT; i++)
        a->t[i].dtype = i == EE_K || i == EE_V || i == EE_DK || i == EE_DV ? k : q;
    a->bias.dtype = q == FA_F64 ? FA_F64 : FA_F32;
}

static void every_dtype(ee_args *a, fa_dtype x)
{
    for (int i = 0; i < EE_NT; i++) a->t[i].dtype = x;
}

/* A batch of sequences with dense queries and keys, one per batch entry and no arrays: valid
 * alone, but the bias (on in the valid call) is not supported with sequences. */
static void bias_with_seqs(const ee_world *w, ee_args *a)
{
    (void)w;
    a->seqs = (fa_seqs)FA_SEQS_INIT;
    a->seqs.batch = EE_B;
    a->p.seqs = &a->seqs;
}

/* Nk one less than Nq, so a bias laid out [Nk][Nq] differs from [Nq][Nk]. */
static void keys_fewer(ee_args *a)
{
    const int k_like[4] = {EE_K, EE_V, EE_DK, EE_DV};
    for (int i = 0; i < 4; i++) a->t[k_like[i]].seq = EE_N - 1;
    a->bias.dim = EE_N - 1;
}

/* ---- one argument, a place or shape the generated rows do not reach ------------------------- */

/* Views from fa_tensor_bhsd/bshd with bad sizes (the header: they carry negative strides, so any
 * call refuses them), without the bias, whose sizes the new views would first disagree with. A view
 * without a negative stride is the helper's broken promise, which the runner reports. */
static void negative_strides(ee_args *a, int s)
{
    const fa_tensor *t = &a->t[s];
    if (t->stride_batch >= 0 && t->stride_head >= 0 && t->stride_seq >= 0) a->helper_broken = 1;
}

static void q_view_negative_seq(const ee_world *w, ee_args *a)
{
    a->p.bias = NULL;
    a->t[EE_Q] = fa_tensor_bhsd(a->t[EE_Q].data, w->dt, EE_B, EE_HQ, -EE_N, EE_DIM);
    negative_strides(a, EE_Q);
}
static void k_view_negative_heads(const ee_world *w, ee_args *a)
{
    a->p.bias = NULL;
    a->t[EE_K] = fa_tensor_bshd(a->t[EE_K].data, w->dt, EE_B, EE_N, -EE_HKV, EE_DIM);
    negative_strides(a, EE_K);
}
static void out_view_negative_batch(const ee_world *w, ee_args *a)
{
    a->p.bias = NULL;
    a->t[EE_OUT] = fa_tensor_bhsd(a->t[EE_OUT].data, w->dt, -EE_B, EE_HQ, EE_N, EE_DIM_V);
    negative_strides(a, EE_OUT);
}
static void q_view_overflowing(const ee_world *w, ee_args *a)
{
    a->p.bias = NULL;
    a->t[EE_Q] = fa_tensor_bshd(a->t[EE_Q].data, w->dt, EE_B, INT64_C(1) << 40, INT64_C(1) << 30, EE_DIM);
    negative_strides(a, EE_Q);
}
static void k_v_views_overflowing(const ee_world *w, ee_args *a)
{
    a->p.bias = NULL;
    a->t[EE_K] = fa_tensor_bhsd(a->t[EE_K].data, w->dt, EE_B, EE_HKV, INT64_MAX / 4, EE_DIM);
    a->t[EE_V] = fa_tensor_bhsd(a->t[EE_V].data, w->dt, EE_B, EE_HKV, INT64_MAX / 4, EE_DIM_V);
    negative_strides(a, EE_K);
    negative_strides(a, EE_V);
}
static void out_view_overflowing(const ee_world *w, ee_args *a)
{
    a->p.bias = NULL;
    a->t[EE_OUT] = fa_tensor_bhsd(a->t[EE_OUT].data, w->dt, EE_B, INT64_C(1) << 62, EE_N, EE_DIM_V);
    negative_strides(a, EE_OUT);
}
static void q_view_int64_max(const ee_world *w, ee_args *a)
{
    a->p.bias = NULL;
    a->t[EE_Q] = fa_tensor_bhsd(a->t[EE_Q].data, w->dt, INT64_MAX, INT64_MAX, INT64_MAX, 512);
    negative_strides(a, EE_Q);
}
static void out_head_last_row_is_next_first(const ee_world *w, ee_args *a)
{
    (void)w;
    a->t[EE_OUT].stride_head = (EE_N - 1) * EE_DIM_V;
}
static void out_heads_interleave_rows(const ee_world *w, ee_args *a)
{
    (void)w; /* head h row i at h·Dv + i·2Dv: head 2 row 0 is head 0 row 1 */
    a->t[EE_OUT].stride_head = EE_DIM_V;
    a->t[EE_OUT].stride_seq = 2 * EE_DIM_V;
    a->t[EE_OUT].stride_batch = (EE_N + 1) * 2 * EE_DIM_V + 2 * EE_DIM_V;
}
static void v_offset_sum_overflows(const ee_world *w, ee_args *a)
{
    (void)w; /* each product fits, their sum does not */
    a->t[EE_V].stride_batch = INT64_MAX / 2;
    a->t[EE_V].stride_head = INT64_MAX / 2;
}
static void grad_batches_into_heads(ee_args *a, int s)
{
    a->t[s].stride_batch = a->t[s].stride_head; /* batch 1 lands on head 1 */
}
static void dq_batches_into_heads(const ee_world *w, ee_args *a)
{
    (void)w;
    grad_batches_into_heads(a, EE_DQ);
}
static void dk_batches_into_heads(const ee_world *w, ee_args *a)
{
    (void)w;
    grad_batches_into_heads(a, EE_DK);
}
static void dv_batches_into_heads(const ee_world *w, ee_args *a)
{
    (void)w;
    grad_batches_into_heads(a, EE_DV);
}
static void bias_heads_of_k(const ee_world *w, ee_args *a)
{
    (void)w; /* one bias per kv head is not a broadcast the header allows */
    a->bias.heads = EE_HKV;
}
static void bias_seq_nk(const ee_world *w, ee_args *a)
{
    (void)w;
    keys_fewer(a);
    a->bias.seq = EE_N - 1;
}
static void bias_dim_nq(const ee_world *w, ee_args *a)
{
    (void)w;
    keys_fewer(a);
    a->bias.dim = EE_N;
}
static void out_on_broadcast_bias_row(const ee_world *w, ee_args *a)
{
    /* [1][1][1][Nk]: one row, still an input */
    a->bias = fa_tensor_bhsd(elem(w, a->t[EE_OUT].data, 7), w->dt, 1, 1, 1, EE_N);
}
static void every_dtype_7(const ee_world *w, ee_args *a)
{
    (void)w;
    every_dtype(a, (fa_dtype)7);
}
static void every_dtype_minus_1(const ee_world *w, ee_args *a)
{
    (void)w;
    every_dtype(a, (fa_dtype)-1);
}
static void q_dtype_i8(const ee_world *w, ee_args *a)
{
    (void)w; /* a KV cache's storage type, never q's */
    a->t[EE_Q].dtype = FA_I8;
}
static void bias_dtype_f8(const ee_world *w, ee_args *a)
{
    (void)w;
    a->bias.dtype = FA_F8_E4M3;
}
static void windows_minus_2_top_left(const ee_world *w, ee_args *a)
{
    (void)w;
    a->p.causal = FA_CAUSAL_TOP_LEFT;
    a->p.window_left = a->p.window_right = -2;
}
static void bias_with_seqs_bf16(const ee_world *w, ee_args *a)
{
    bias_with_seqs(w, a);
    set_dtypes(a, FA_BF16, FA_BF16);
}
static void bias_with_seqs_f32_over_f16(const ee_world *w, ee_args *a)
{
    bias_with_seqs(w, a);
    set_dtypes(a, FA_F32, FA_F16);
}

/* ---- several at once ---------------------------------------------------------------------- */

static void null_and_arg(const ee_world *w, ee_args *a)
{
    (void)w;
    a->t[EE_Q].data = NULL;
    a->p.scale = NAN;
}
static void arg_and_dtype(const ee_world *w, ee_args *a)
{
    (void)w;
    a->p.causal = (fa_causal)3;
    every_dtype(a, (fa_dtype)7);
}
static void dtype_and_shape(const ee_world *w, ee_args *a)
{
    a->t[EE_Q].dtype = other_dtype(w);
    a->t[EE_OUT].seq = EE_N + 1;
}
static void shape_and_stride(const ee_world *w, ee_args *a)
{
    (void)w;
    a->t[EE_V].seq = EE_N - 1;
    a->t[EE_OUT].stride_seq = EE_DIM_V - 1;
}
static void stride_and_alias(const ee_world *w, ee_args *a)
{
    a->t[EE_K].stride_head = -EE_N * EE_DIM;
    a->lse = elem(w, a->t[EE_Q].data, 4);
}
static void alias_and_unsupported(const ee_world *w, ee_args *a)
{
    bias_with_seqs(w, a);
    a->t[EE_OUT].data = a->t[EE_Q].data;
}
static void arg_and_unsupported(const ee_world *w, ee_args *a)
{
    bias_with_seqs(w, a);
    a->p.softcap = -1.0;
}
static void dtype_and_unsupported(const ee_world *w, ee_args *a)
{
    bias_with_seqs(w, a);
    a->t[EE_Q].dtype = FA_I8;
}
static void half_mix_and_unsupported(const ee_world *w, ee_args *a)
{
    bias_with_seqs(w, a);
    set_dtypes(a, FA_BF16, FA_F16);
}
static void half_mix_and_shape(const ee_world *w, ee_args *a)
{
    (void)w;
    set_dtypes(a, FA_F16, FA_F32);
    a->t[EE_V].seq = EE_N - 1;
}
static void bias_null_data_and_softcap_nan(const ee_world *w, ee_args *a)
{
    (void)w;
    a->p.softcap = NAN;
    a->bias.data = NULL;
}
static void softcap_inf_and_bias_dtype(const ee_world *w, ee_args *a)
{
    a->bias.dtype = other_dtype(w);
    a->p.softcap = INFINITY;
}
static void bias_dtype_and_bias_dim(const ee_world *w, ee_args *a)
{
    (void)w;
    a->bias.dtype = FA_F8_E4M3;
    a->bias.dim = EE_N + 1;
}
static void bias_dim_and_misaligned_sinks(const ee_world *w, ee_args *a)
{
    (void)w;
    a->p.sinks = (const float *)(const void *)((const unsigned char *)a->p.sinks + 1);
    a->bias.dim = 1;
}
static void misaligned_slopes_and_out_on_bias(const ee_world *w, ee_args *a)
{
    (void)w;
    a->t[EE_OUT].data = a->bias.data;
    a->p.alibi_slopes = (const float *)(const void *)((const unsigned char *)a->p.alibi_slopes + 3);
}
static void out_on_sinks_and_bias_with_seqs(const ee_world *w, ee_args *a)
{
    bias_with_seqs(w, a);
    a->p.sinks = (const float *)a->t[EE_OUT].data;
}

/* ---- batches of sequences ------------------------------------------------------------------- */

/* A table so long that pages_per_seq·batch or pages_per_seq·page_size overflows int64, with no page
 * in use: refused by its value, not by a page it would read. */
static void no_key_in_use(const ee_world *w, ee_args *a)
{
    (void)w;
    memset(ee_slot_first(a, EE_USED), 0, (size_t)a->seqs_len[2] * sizeof(int64_t));
}
static void pages_half_max_none_in_use(const ee_world *w, ee_args *a)
{
    no_key_in_use(w, a);
    a->seqs.pages_per_seq = INT64_MAX / 2;
}
static void pages_wrapping_none_in_use(const ee_world *w, ee_args *a)
{
    no_key_in_use(w, a);
    a->seqs.pages_per_seq = (INT64_C(1) << 62) + 1;
}
/* The documented order puts every shape (dout's and the gradients' too) before the arrays'
 * alignment. */
static void dout_dim_and_used_misaligned(const ee_world *w, ee_args *a)
{
    ee_move_array(w, a, EE_USED, 1);
    a->t[EE_DOUT].dim -= 1;
}
static void dq_heads_and_cu_q_misaligned(const ee_world *w, ee_args *a)
{
    ee_move_array(w, a, EE_CU_Q, 4);
    a->t[EE_DQ].heads -= 1;
}
/* One column per key of the paged capacity, not per key of a page (k.seq): refused for what it is,
 * a bias with sequences, never as a shape against the page size. */
static void bias_over_paged_capacity(const ee_world *w, ee_args *a)
{
    (void)w;
    a->bias.dim = a->seqs.pages_per_seq * a->t[EE_K].seq;
    a->p.bias = &a->bias;
}

enum { F = 1, B = 2, FB = 3 };

static const struct {
    int calls, layout;
    const char *param, *value;
    fa_status want;
    const char *names, *phrase; /* names: the words fa_last_error() names; phrase (or NULL) as written */
    ee_fn fn;
} rows[] = {
    /* views of fa_tensor_bhsd / fa_tensor_bshd from bad sizes (negative strides: flashattn.h) */
    {F, EE_DENSE, "q via fa_tensor_bhsd", "seq -Nq", FA_ERR_SHAPE, "q.seq", NULL, q_view_negative_seq},
    {F, EE_DENSE, "k via fa_tensor_bshd", "heads -Hkv", FA_ERR_SHAPE, "k.heads", NULL, k_view_negative_heads},
    {F, EE_DENSE, "out via fa_tensor_bhsd", "batch -B", FA_ERR_SHAPE, "out.batch", NULL,
     out_view_negative_batch},
    {F, EE_DENSE, "q via fa_tensor_bshd", "seq 2^40, heads 2^30", FA_ERR_SHAPE, "q.heads", NULL,
     q_view_overflowing},
    {F, EE_DENSE, "k, v via fa_tensor_bhsd", "seq INT64_MAX/4", FA_ERR_STRIDE, "k.stride_batch", NULL,
     k_v_views_overflowing},
    {F, EE_DENSE, "out via fa_tensor_bhsd", "heads 2^62", FA_ERR_SHAPE, "out.heads", NULL,
     out_view_overflowing},
    {F, EE_DENSE, "q via fa_tensor_bhsd", "INT64_MAX each, dim 512", FA_ERR_SHAPE, "q.batch", NULL,
     q_view_int64_max},
    /* places */
    {F, EE_DENSE, "out->stride_head", "(Nq - 1)·Dv (a head's last row is the next one's first)",
     FA_ERR_STRIDE, "out.stride_head", NULL, out_head_last_row_is_next_first},
    {F, EE_DENSE, "out strides", "head Dv, seq 2Dv (heads interleave with rows)", FA_ERR_STRIDE,
     "out.stride_seq", NULL, out_heads_interleave_rows},
    {F, EE_DENSE, "v->stride_batch, stride_head", "INT64_MAX/2 each (their sum overflows)", FA_ERR_STRIDE,
     "v.stride_head", NULL, v_offset_sum_overflows},
    {B, EE_DENSE, "dq->stride_batch", "stride_head (batch 1 on head 1)", FA_ERR_STRIDE, "dq.stride_head",
     NULL, dq_batches_into_heads},
    {B, EE_DENSE, "dk->stride_batch", "stride_head (batch 1 on head 1)", FA_ERR_STRIDE, "dk.stride_head",
     NULL, dk_batches_into_heads},
    {B, EE_DENSE, "dv->stride_batch", "stride_head (batch 1 on head 1)", FA_ERR_STRIDE, "dv.stride_head",
     NULL, dv_batches_into_heads},
    {F, EE_DENSE, "p->bias", "[1][1][1][Nk] inside out", FA_ERR_ALIAS, "out p.bias", NULL,
     out_on_broadcast_bias_row},
    /* shapes and dtypes */
    {FB, EE_DENSE, "p->bias->heads", "Hkv", FA_ERR_SHAPE, "p.bias.heads", NULL, bias_heads_of_k},
    {FB, EE_DENSE, "p->bias->seq", "Nk (Nq 6, Nk 5)", FA_ERR_SHAPE, "p.bias.seq", NULL, bias_seq_nk},
    {FB, EE_DENSE, "p->bias->dim", "Nq (Nq 6, Nk 5)", FA_ERR_SHAPE, "p.bias.dim", NULL, bias_dim_nq},
    {F, EE_DENSE, "(every tensor's dtype)", "7", FA_ERR_DTYPE, "q.dtype", NULL, every_dtype_7},
    {F, EE_DENSE, "(every tensor's dtype)", "-1", FA_ERR_DTYPE, "q.dtype", NULL, every_dtype_minus_1},
    {F, EE_DENSE, "q->dtype", "FA_I8 among the others", FA_ERR_DTYPE, "k.dtype q.dtype", NULL, q_dtype_i8},
    {F, EE_DENSE, "p->bias->dtype", "FA_F8_E4M3", FA_ERR_DTYPE, "p.bias.dtype", NULL, bias_dtype_f8},
    {F, EE_DENSE, "p->window_left, window_right", "-2 each, FA_CAUSAL_TOP_LEFT", FA_ERR_ARG, "p.window_left",
     NULL, windows_minus_2_top_left},
    {F, EE_DENSE, "p->bias", "with p->seqs of dense sequences", FA_ERR_UNSUPPORTED, "p.bias", NULL,
     bias_with_seqs},
    {F, EE_DENSE, "p->bias", "with p->seqs of dense sequences, bf16", FA_ERR_UNSUPPORTED, "p.bias", NULL,
     bias_with_seqs_bf16},
    {F, EE_DENSE, "p->bias", "with p->seqs of dense sequences, f32 over f16", FA_ERR_UNSUPPORTED, "p.bias",
     NULL, bias_with_seqs_f32_over_f16},
    /* several at once: the first class in the documented order */
    {F, EE_DENSE, "(several)", "q->data NULL, p->scale NaN", FA_ERR_NULL, "q.data", NULL, null_and_arg},
    {F, EE_DENSE, "(several)", "p->causal 3, every dtype 7", FA_ERR_ARG, "p.causal", NULL, arg_and_dtype},
    {F, EE_DENSE, "(several)", "q->dtype the other, out->seq + 1", FA_ERR_DTYPE, "k.dtype q.dtype", NULL,
     dtype_and_shape},
    {F, EE_DENSE, "(several)", "v->seq - 1, out->stride_seq Dv - 1", FA_ERR_SHAPE, "v.seq", NULL,
     shape_and_stride},
    {F, EE_DENSE, "(several)", "k->stride_head negative, lse inside q", FA_ERR_STRIDE, "k.stride_head", NULL,
     stride_and_alias},
    {F, EE_DENSE, "(several)", "out on q, a bias with p->seqs", FA_ERR_ALIAS, "out q", NULL,
     alias_and_unsupported},
    {F, EE_DENSE, "(several)", "p->softcap -1, a bias with p->seqs", FA_ERR_ARG, "p.softcap", NULL,
     arg_and_unsupported},
    {F, EE_DENSE, "(several)", "q->dtype FA_I8, a bias with p->seqs", FA_ERR_DTYPE, "k.dtype q.dtype", NULL,
     dtype_and_unsupported},
    {F, EE_DENSE, "(several)", "q bf16 over k f16, a bias with p->seqs", FA_ERR_DTYPE, "k.dtype q.dtype",
     NULL, half_mix_and_unsupported},
    {F, EE_DENSE, "(several)", "q f16 over k f32, v->seq - 1", FA_ERR_DTYPE, "k.dtype q.dtype", NULL,
     half_mix_and_shape},
    {F, EE_DENSE, "(several)", "p->softcap NaN, p->bias->data NULL", FA_ERR_NULL, "p.bias.data", NULL,
     bias_null_data_and_softcap_nan},
    {F, EE_DENSE, "(several)", "p->softcap +Inf, p->bias->dtype the other", FA_ERR_ARG, "p.softcap", NULL,
     softcap_inf_and_bias_dtype},
    {F, EE_DENSE, "(several)", "p->bias->dtype FA_F8_E4M3, p->bias->dim + 1", FA_ERR_DTYPE, "p.bias.dtype",
     NULL, bias_dtype_and_bias_dim},
    {F, EE_DENSE, "(several)", "p->bias->dim 1, p->sinks misaligned", FA_ERR_SHAPE, "p.bias.dim", NULL,
     bias_dim_and_misaligned_sinks},
    {F, EE_DENSE, "(several)", "p->alibi_slopes misaligned, out on the bias", FA_ERR_STRIDE, "p.alibi_slopes",
     NULL, misaligned_slopes_and_out_on_bias},
    {F, EE_DENSE, "(several)", "p->sinks on out, a bias with p->seqs", FA_ERR_ALIAS, "out p.sinks", NULL,
     out_on_sinks_and_bias_with_seqs},
    /* batches of sequences */
    {FB, EE_SEQ_PAGED, "p->seqs->pages_per_seq", "INT64_MAX/2, no key in use", FA_ERR_SHAPE,
     "p.seqs.pages_per_seq", NULL, pages_half_max_none_in_use},
    {FB, EE_SEQ_PAGED, "p->seqs->pages_per_seq", "2^62 + 1, no key in use", FA_ERR_SHAPE,
     "p.seqs.pages_per_seq", NULL, pages_wrapping_none_in_use},
    {B, EE_SEQ_CACHE, "(several)", "dout->dim - 1, p->seqs->seqused_k misaligned", FA_ERR_SHAPE, "dout.dim",
     NULL, dout_dim_and_used_misaligned},
    {B, EE_SEQ_PACKED, "(several)", "dq->heads - 1, p->seqs->cu_seqlens_q misaligned", FA_ERR_SHAPE,
     "dq.heads", NULL, dq_heads_and_cu_q_misaligned},
    {FB, EE_SEQ_PAGED, "p->bias", "one column per key of the paged capacity", FA_ERR_UNSUPPORTED, "p.bias",
     "p.bias with p.seqs", bias_over_paged_capacity},
};

void ee_add_composed_cases(ee_table *t)
{
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        for (int call = 0; call < 2; call++) {
            if (!(rows[i].calls & (call ? B : F))) continue;
            ee_case *c = ee_add(t, (ee_call)call, rows[i].param, rows[i].value, rows[i].want, EE_OP_FN);
            c->layout = rows[i].layout;
            c->fn = rows[i].fn;
            snprintf(c->names, sizeof c->names, "%s", rows[i].names);
            if (rows[i].phrase) snprintf(c->phrase, sizeof c->phrase, "%s", rows[i].phrase);
        }
}
