/* SPDX-License-Identifier: BSD-3-Clause */
/* Argument validation for the public calls: their parameters and shape rules, composed with the
 * view checks (view_checks.h) in the documented order of status classes. */
#include "api/validate.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/diagnostic.h"
#include "api/view_checks.h"

/* q_dtype: the scale must be finite in the type the scores accumulate in (double only for FA_F64),
 * or every score would be inf and every output NaN. */
static fa_status check_params(const char *call, const fa_params *p, fa_dtype q_dtype)
{
    if (!isfinite(p->scale)) return fa_diag_fail(FA_ERR_ARG, call, "p.scale = %g: must be finite", p->scale);
    if (q_dtype != FA_F64 && fabs(p->scale) > FLT_MAX)
        return fa_diag_fail(
            FA_ERR_ARG, call,
            "p.scale = %g: beyond float's range, in which the scores of %s tensors accumulate", p->scale,
            fa_dtype_name(q_dtype));
    if (p->causal != FA_CAUSAL_NONE && p->causal != FA_CAUSAL_TOP_LEFT && p->causal != FA_CAUSAL_BOTTOM_RIGHT)
        return fa_diag_fail(
            FA_ERR_ARG, call,
            "p.causal = %d: expected FA_CAUSAL_NONE, FA_CAUSAL_TOP_LEFT or FA_CAUSAL_BOTTOM_RIGHT",
            (int)p->causal);
    if (p->window_left < -1)
        return fa_diag_fail(FA_ERR_ARG, call, "p.window_left = %lld: expected -1 (unbounded) or >= 0",
                            (long long)p->window_left);
    if (p->window_right < -1)
        return fa_diag_fail(FA_ERR_ARG, call, "p.window_right = %lld: expected -1 (unbounded) or >= 0",
                            (long long)p->window_right);
    if (p->diagonal_shift < -FA_MAX_DIAGONAL_SHIFT || p->diagonal_shift > FA_MAX_DIAGONAL_SHIFT)
        return fa_diag_fail(
            FA_ERR_ARG, call,
            "p.diagonal_shift = %lld: expected |diagonal_shift| <= FA_MAX_DIAGONAL_SHIFT (2^52)",
            (long long)p->diagonal_shift);
    if (!(p->softcap >= 0.0) || !isfinite(p->softcap))
        return fa_diag_fail(FA_ERR_ARG, call, "p.softcap = %g: expected 0 (off) or a finite positive value",
                            p->softcap);
    if (!(p->dropout_p >= 0.0 && p->dropout_p < 1.0))
        return fa_diag_fail(FA_ERR_ARG, call, "p.dropout_p = %g: expected 0 (off) or a probability in (0, 1)",
                            p->dropout_p);
    if (p->dropout_row0 < 0)
        return fa_diag_fail(FA_ERR_ARG, call, "p.dropout_row0 = %lld: expected >= 0",
                            (long long)p->dropout_row0);
    if (p->dropout_key0 < 0)
        return fa_diag_fail(FA_ERR_ARG, call, "p.dropout_key0 = %lld: expected >= 0",
                            (long long)p->dropout_key0);
    if (p->seqs && p->seqs->batch < 0)
        return fa_diag_fail(FA_ERR_ARG, call, "p.seqs.batch = %lld: expected >= 0",
                            (long long)p->seqs->batch);
    if (p->seqs && p->seqs->block_table && p->seqs->pages_per_seq < 0)
        return fa_diag_fail(FA_ERR_ARG, call, "p.seqs.pages_per_seq = %lld: expected >= 0",
                            (long long)p->seqs->pages_per_seq);
    if (p->seqs && p->seqs->block_table && p->seqs->cu_seqlens_k)
        return fa_diag_fail(FA_ERR_ARG, call,
                            "p.seqs.cu_seqlens_k and p.seqs.block_table: paged keys have no packed offsets");
    if (q_dtype != FA_F64 && p->softcap != 0.0 && (p->softcap < FLT_MIN || p->softcap > FLT_MAX))
        return fa_diag_fail(
            FA_ERR_ARG, call,
            "p.softcap = %g: outside float's normal range, in which the scores of %s tensors are capped",
            p->softcap, fa_dtype_name(q_dtype));
    return FA_OK;
}

/* A quantized KV cache's scales (fa_params.k_scale, v_scale): present exactly when k is quantized (v
 * has k's dtype, or the dtype step refuses it). A missing one is FA_ERR_NULL (with the NULL class),
 * one given for a k that is not quantized FA_ERR_ARG (with the parameters): it would otherwise be
 * ignored in silence. */
static fa_status check_scales_present(const char *call, const fa_params *p, const fa_tensor *k)
{
    if (!fa_dtype_is_quantized(k->dtype)) return FA_OK;
    if (!p->k_scale)
        return fa_diag_fail(FA_ERR_NULL, call, "p.k_scale is NULL: k.dtype = %s needs a scale per key row",
                            fa_dtype_name(k->dtype));
    if (!p->v_scale)
        return fa_diag_fail(FA_ERR_NULL, call, "p.v_scale is NULL: v.dtype = %s needs a scale per value row",
                            fa_dtype_name(k->dtype));
    return FA_OK;
}

static fa_status check_scales_wanted(const char *call, const fa_params *p, const fa_tensor *k)
{
    const char *given = p->k_scale ? "p.k_scale" : p->v_scale ? "p.v_scale" : NULL;
    if (!given || fa_dtype_is_quantized(k->dtype)) return FA_OK;
    return fa_diag_fail(FA_ERR_ARG, call,
                        "%s is set but k.dtype = %s: scales belong to a quantized cache (FA_I8, FA_F8_E4M3, "
                        "FA_F8_E5M2)",
                        given, fa_dtype_name(k->dtype));
}

/* A scale view is shaped like its tensor with dim 1: each of batch, heads and seq the tensor's or 1. */
static fa_status check_scale_shape(const char *call, named_view scale, named_view of)
{
    const fa_tensor *s = scale.t;
    for (int axis = 0; axis < 4; axis++)
        if (fa_size_of(s, axis) < 0)
            return fa_diag_fail(FA_ERR_SHAPE, call, "%s.%s = %lld: sizes must be >= 0", scale.name,
                                fa_size_names[axis], (long long)fa_size_of(s, axis));
    for (int axis = 0; axis < 3; axis++) {
        int64_t want = fa_size_of(of.t, axis), have = fa_size_of(s, axis);
        if (have != want && have != 1)
            return fa_diag_fail(FA_ERR_SHAPE, call, "%s.%s = %lld: expected %s.%s = %lld or 1 (broadcast)",
                                scale.name, fa_size_names[axis], (long long)have, of.name,
                                fa_size_names[axis], (long long)want);
    }
    if (s->dim != 1)
        return fa_diag_fail(FA_ERR_SHAPE, call, "%s.dim = %lld: expected 1, one scale per row of %s",
                            scale.name, (long long)s->dim, of.name);
    return FA_OK;
}

/* One size of two views that must agree. */
static fa_status check_same(const char *call, named_view a, named_view b, int axis)
{
    int64_t sa = fa_size_of(a.t, axis), sb = fa_size_of(b.t, axis);
    if (sa == sb) return FA_OK;
    return fa_diag_fail(FA_ERR_SHAPE, call, "%s.%s = %lld but %s.%s = %lld", a.name, fa_size_names[axis],
                        (long long)sa, b.name, fa_size_names[axis], (long long)sb);
}

static fa_status check_dim_range(const char *call, named_view nv)
{
    if (nv.t->dim >= 1 && nv.t->dim <= FA_MAX_HEAD_DIM) return FA_OK;
    return fa_diag_fail(FA_ERR_SHAPE, call, "%s.dim = %lld: head dims must be in 1..%d (FA_MAX_HEAD_DIM)",
                        nv.name, (long long)nv.t->dim, FA_MAX_HEAD_DIM);
}

/* The sizes fa_forward's four views share (fa_backward's others must equal these, check_same). */
static fa_status check_shapes(const char *call, named_view q, named_view k, named_view v, named_view out,
                              int keys_own_batch)
{
    const named_view all[4] = {q, k, v, out};
    for (int i = 0; i < 4; i++)
        for (int axis = 0; axis < 4; axis++) {
            int64_t x = fa_size_of(all[i].t, axis);
            if (x < 0)
                return fa_diag_fail(FA_ERR_SHAPE, call, "%s.%s = %lld: sizes must be >= 0", all[i].name,
                                    fa_size_names[axis], (long long)x);
        }
    /* {view, the view it must agree with, axis} in the documented order */
    static const int pairs[][3] = {{1, 0, 0}, {2, 0, 0}, {3, 0, 0}, {3, 0, 1}, {2, 1, 1},
                                   {3, 0, 2}, {2, 1, 2}, {1, 0, 3}, {3, 2, 3}};
    fa_status st;
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        /* with sequences, keys are batched their own way (packed, paged or per sequence): check_seqs */
        if (keys_own_batch && pairs[i][1] == 0 && pairs[i][2] == 0 && (pairs[i][0] == 1 || pairs[i][0] == 2))
            continue;
        if ((st = check_same(call, all[pairs[i][0]], all[pairs[i][1]], pairs[i][2])) != FA_OK) return st;
    }
    if (keys_own_batch && (st = check_same(call, v, k, 0)) != FA_OK) return st;
    if ((st = check_dim_range(call, q)) != FA_OK || (st = check_dim_range(call, v)) != FA_OK) return st;
    const fa_tensor *tq = q.t, *tk = k.t;
    if (tq->heads > 0 && tk->heads == 0)
        return fa_diag_fail(FA_ERR_SHAPE, call, "%s.heads = 0 but %s.heads = %lld: no kv head to read",
                            k.name, q.name, (long long)tq->heads);
    if (tq->heads > 0 && tq->heads % tk->heads != 0)
        return fa_diag_fail(FA_ERR_SHAPE, call, "%s.heads = %lld is not a multiple of %s.heads = %lld",
                            q.name, (long long)tq->heads, k.name, (long long)tk->heads);
    int64_t rows; /* the lse holds batch·heads·seq values: that count must be representable in bytes */
    if (__builtin_mul_overflow(tq->batch, tq->heads, &rows) || __builtin_mul_overflow(rows, tq->seq, &rows) ||
        __builtin_mul_overflow(rows, (int64_t)8, &rows))
        return fa_diag_fail(
            FA_ERR_SHAPE, call,
            "%s.batch = %lld, %s.heads = %lld, %s.seq = %lld: the lse's byte count overflows int64", q.name,
            (long long)tq->batch, q.name, (long long)tq->heads, q.name, (long long)tq->seq);
    return FA_OK;
}

/* Valid requests this version does not compute, on every CPU (the kernel tables a CPU lacks are
 * fa_context_create's to report). */
static fa_status check_supported(const char *call, const fa_params *p, int backward)
{
    static const char *const later = "not supported by this version of the library (on any CPU)";
    if (p->seqs && p->bias)
        return fa_diag_fail(FA_ERR_UNSUPPORTED, call, "p.bias with p.seqs: a per-sequence bias is %s", later);
    if (backward && p->seqs && p->seqs->block_table)
        return fa_diag_fail(FA_ERR_UNSUPPORTED, call, "p.seqs.block_table: paged keys in the backward are %s",
                            later);
    /* by now p->k_scale is set exactly when k is quantized (check_scales_present, check_scales_wanted) */
    if (backward && p->k_scale)
        return fa_diag_fail(FA_ERR_UNSUPPORTED, call, "a quantized k and v: their gradients are %s", later);
    return FA_OK;
}

/* Dropout's counter holds a row index in 32 bits and a key index over 4 in 32 (flashattn.h,
 * "Dropout"): longer sequences have no mask. The origins count: a call's last row is row0 + Nq - 1.
 * Both origins are non-negative here (check_params), and q.seq and keys at most 2^62. */
static fa_status check_dropout_indices(const char *call, const fa_params *p, const fa_tensor *q,
                                       const fa_tensor *k)
{
    if (p->dropout_p == 0.0) return FA_OK;
    int64_t keys = k->seq;
    if (p->seqs && p->seqs->block_table && __builtin_mul_overflow(p->seqs->pages_per_seq, k->seq, &keys))
        keys = INT64_MAX;
    if (q->seq > ((int64_t)1 << 32) || keys > ((int64_t)1 << 34))
        return fa_diag_fail(FA_ERR_UNSUPPORTED, call,
                            "p.dropout_p = %g with q.seq = %lld and %lld keys: dropout's counter holds rows "
                            "below 2^32 and keys below 2^34",
                            p->dropout_p, (long long)q->seq, (long long)keys);
    if (p->dropout_row0 > ((int64_t)1 << 32) - q->seq)
        return fa_diag_fail(
            FA_ERR_UNSUPPORTED, call,
            "p.dropout_row0 = %lld with q.seq = %lld: dropout's counter holds rows below 2^32",
            (long long)p->dropout_row0, (long long)q->seq);
    if (p->dropout_key0 > ((int64_t)1 << 34) - keys)
        return fa_diag_fail(FA_ERR_UNSUPPORTED, call,
                            "p.dropout_key0 = %lld with %lld keys: dropout's counter holds keys below 2^34",
                            (long long)p->dropout_key0, (long long)keys);
    return FA_OK;
}

/* ---- the score modifiers' arguments (fa_params) ---- */

/* The bias is an input view like q, with its own shape rule: each of batch, heads and seq is the
 * problem's or 1 (broadcast), dim is Nk. With sequences there is no one Nk (k.seq may be a page, or
 * every sequence's keys packed) and any bias is refused (check_supported), so only its sizes' signs
 * are checked. */
static fa_status check_bias_shape(const char *call, named_view bias, const fa_tensor *q, const fa_tensor *k,
                                  int seqs)
{
    const fa_tensor *b = bias.t;
    for (int axis = 0; axis < 4; axis++)
        if (fa_size_of(b, axis) < 0)
            return fa_diag_fail(FA_ERR_SHAPE, call, "%s.%s = %lld: sizes must be >= 0", bias.name,
                                fa_size_names[axis], (long long)fa_size_of(b, axis));
    if (seqs) return FA_OK;
    const char *const of[3] = {"q.batch", "q.heads", "q.seq"};
    for (int axis = 0; axis < 3; axis++) {
        int64_t want = fa_size_of(q, axis), have = fa_size_of(b, axis);
        if (have != want && have != 1)
            return fa_diag_fail(FA_ERR_SHAPE, call, "%s.%s = %lld: expected %s = %lld or 1 (broadcast)",
                                bias.name, fa_size_names[axis], (long long)have, of[axis], (long long)want);
    }
    if (b->dim != k->seq)
        return fa_diag_fail(FA_ERR_SHAPE, call,
                            "%s.dim = %lld but k.seq = %lld: the bias has one column per key", bias.name,
                            (long long)b->dim, (long long)k->seq);
    return FA_OK;
}

/* dbias has the bias's four sizes (the bias's own shape rule has been checked by then). */
static fa_status check_dbias_shape(const char *call, const fa_tensor *dbias, const fa_tensor *bias)
{
    for (int axis = 0; axis < 4; axis++) {
        int64_t have = fa_size_of(dbias, axis), want = fa_size_of(bias, axis);
        if (have != want)
            return fa_diag_fail(FA_ERR_SHAPE, call,
                                "p.dbias.%s = %lld but p.bias.%s = %lld: dbias has the bias's shape",
                                fa_size_names[axis], (long long)have, fa_size_names[axis], (long long)want);
    }
    return FA_OK;
}

/* The view of dbias the stride and overlap checks judge: an axis the bias broadcasts over by a stride
 * of 0 (with a size above 1) is one element of dbias, which must then have a stride of 0 there too
 * (written once, with the sum; a dbias that does not broadcast there would have rows no call writes). */
static fa_status dbias_written_view(const char *call, const fa_tensor *dbias, const fa_tensor *bias,
                                    fa_tensor *written)
{
    static const char *const stride_names[3] = {"stride_batch", "stride_head", "stride_seq"};
    const int64_t bias_strides[3] = {bias->stride_batch, bias->stride_head, bias->stride_seq};
    const int64_t dbias_strides[3] = {dbias->stride_batch, dbias->stride_head, dbias->stride_seq};
    *written = *dbias;
    /* An empty dbias has no element to write: its strides may be anything, as any empty tensor's. */
    if (fa_is_empty(dbias)) return FA_OK;
    int64_t *sizes[3] = {&written->batch, &written->heads, &written->seq};
    for (int axis = 0; axis < 3; axis++) {
        if (*sizes[axis] <= 1 || bias_strides[axis] != 0) continue;
        if (dbias_strides[axis] != 0)
            return fa_diag_fail(FA_ERR_STRIDE, call,
                                "p.dbias.%s = %lld but p.bias.%s = 0: dbias broadcasts where the bias does, "
                                "to hold the one sum",
                                stride_names[axis], (long long)dbias_strides[axis], stride_names[axis]);
        *sizes[axis] = 1;
    }
    return FA_OK;
}

/* The ranges of the per-head inputs (alibi_slopes, sinks), appended to in[*n]. */
static fa_status per_head_input_ranges(const char *call, const fa_params *p, int64_t heads, byte_range *in,
                                       int *n)
{
    fa_status st;
    if ((st = fa_array_range(call, p->alibi_slopes, heads, sizeof(float), "p.alibi_slopes", &in[(*n)++])) !=
        FA_OK)
        return st;
    return fa_array_range(call, p->sinks, heads, sizeof(float), "p.sinks", &in[(*n)++]);
}

/* The internal view of a validated tensor. An empty tensor (a size of 0) has no element, so its
 * strides were never checked and may be anything: its view is NULL data with zero strides, so that
 * no offset is ever computed from them (fa_view_at gives NULL). */
static fa_view view_of(const fa_tensor *t)
{
    fa_view v = {NULL, 0, 0, 0};
    if (t && !fa_is_empty(t)) v = (fa_view){t->data, t->stride_batch, t->stride_head, t->stride_seq};
    return v;
}

/* The view of an input that may broadcast (the bias, the scales): an axis of size 1 reads element 0,
 * whatever its stride. */
static fa_view broadcast_view_of(const fa_tensor *t)
{
    fa_view v = view_of(t);
    if (t && v.data) {
        if (t->batch == 1) v.stride_batch = 0;
        if (t->heads == 1) v.stride_head = 0;
        if (t->seq == 1) v.stride_seq = 0;
    }
    return v;
}

static void fill_problem(fa_problem *prob, const fa_params *params, const fa_tensor *q, const fa_tensor *k,
                         const fa_tensor *v, const fa_tensor *out, const void *lse)
{
    prob->dtype = q->dtype == FA_F64 ? FA_F64 : FA_F32; /* half inputs accumulate in float */
    prob->q_type = q->dtype;
    prob->kv_type = k->dtype;
    prob->out_type = out->dtype;
    prob->dq_type = q->dtype; /* the backward's gradients: set again from dq and dk */
    prob->dkv_type = k->dtype;
    prob->batch = q->batch;
    prob->q_heads = q->heads;
    prob->kv_heads = k->heads;
    prob->group = k->heads > 0 ? q->heads / k->heads : 1;
    prob->q_len = q->seq;
    prob->kv_len = k->seq;
    prob->dim = q->dim;
    prob->dim_v = v->dim;
    prob->q = view_of(q);
    prob->k = view_of(k);
    prob->v = view_of(v);
    prob->out = view_of(out);
    prob->lse = (void *)(uintptr_t)lse;
    prob->dout = prob->dq = prob->dk = prob->dv = view_of(NULL);
    prob->scale = params->scale != 0.0 ? params->scale : 1.0 / sqrt((double)q->dim);
    prob->causal = params->causal;
    prob->diag_shift = params->diagonal_shift;
    prob->diag_offset = (params->causal == FA_CAUSAL_TOP_LEFT ? 0 : k->seq - q->seq) + prob->diag_shift;
    prob->window_left = params->window_left;
    prob->window_right = params->window_right;
    prob->softcap = params->softcap;
    prob->alibi_slopes = params->alibi_slopes;
    prob->sinks = params->sinks;
    prob->dsinks = NULL;
    prob->dbias = view_of(NULL);
    prob->lse_head_stride = q->seq;
    prob->lse_row_stride = 1;
    prob->row_group = 1;
    prob->q_sub_stride = prob->out_sub_stride = prob->lse_sub_stride = 0;
    prob->seqs = params->seqs;
    if (params->seqs) prob->batch = params->seqs->batch;
    prob->pages = NULL;
    prob->page_size = 0;
    prob->bias = broadcast_view_of(params->bias);
    prob->k_scale = broadcast_view_of(params->k_scale);
    prob->v_scale = broadcast_view_of(params->v_scale);
    prob->dropout_p = params->dropout_p;
    prob->dropout_seed = params->dropout_seed;
    prob->dropout_offset = params->dropout_offset;
    prob->dropout_batch0 = 0;
    prob->dropout_heads = q->heads;
    prob->dropout_row0 = params->dropout_row0;
    prob->dropout_key0 = params->dropout_key0;
}

/* Element i of the caller's arrays. Their alignment is checked later, with the strides (the class
 * order puts SHAPE first), so they are read bytewise here: a misaligned int64_t read is undefined. */
static int64_t load_i64(const int64_t *a, int64_t i)
{
    int64_t x;
    memcpy(&x, (const char *)a + i * (int64_t)sizeof x, sizeof x);
    return x;
}

static int32_t load_i32(const int32_t *a, int64_t i)
{
    int32_t x;
    memcpy(&x, (const char *)a + i * (int64_t)sizeof x, sizeof x);
    return x;
}

/* Offsets into a token axis of `total` rows: batch + 1 of them, from 0, never decreasing, within. */
static fa_status check_offsets(const char *call, const int64_t *cu, int64_t batch, int64_t total,
                               const char *name, const char *axis)
{
    if (load_i64(cu, 0) != 0)
        return fa_diag_fail(FA_ERR_SHAPE, call, "%s[0] = %lld: offsets start at 0", name,
                            (long long)load_i64(cu, 0));
    for (int64_t b = 0; b < batch; b++)
        if (load_i64(cu, b + 1) < load_i64(cu, b))
            return fa_diag_fail(FA_ERR_SHAPE, call,
                                "%s[%lld] = %lld < %s[%lld] = %lld: offsets never decrease", name,
                                (long long)(b + 1), (long long)load_i64(cu, b + 1), name, (long long)b,
                                (long long)load_i64(cu, b));
    if (load_i64(cu, batch) > total)
        return fa_diag_fail(FA_ERR_SHAPE, call, "%s[%lld] = %lld but %s = %lld: past the tensor", name,
                            (long long)batch, (long long)load_i64(cu, batch), axis, (long long)total);
    return FA_OK;
}

/* The sequences against the tensors: batch axes, offsets, keys in use within each capacity, and the
 * pages of the keys in use inside the pools. */
static fa_status check_seqs(const char *call, const fa_seqs *s, const fa_tensor *q, const fa_tensor *k)
{
    int64_t want_q = s->cu_seqlens_q ? 1 : s->batch;
    if (q->batch != want_q)
        return fa_diag_fail(FA_ERR_SHAPE, call, "q.batch = %lld but p.seqs says %lld (%s)",
                            (long long)q->batch, (long long)want_q,
                            s->cu_seqlens_q ? "packed queries" : "one per sequence");
    if (!s->block_table && k->batch != (s->cu_seqlens_k ? 1 : s->batch))
        return fa_diag_fail(FA_ERR_SHAPE, call, "k.batch = %lld but p.seqs says %lld (%s)",
                            (long long)k->batch, (long long)(s->cu_seqlens_k ? 1 : s->batch),
                            s->cu_seqlens_k ? "packed keys" : "one per sequence");
    fa_status st;
    /* The arrays are read below to check the shapes they describe; one that is misaligned or wraps
     * around the address space cannot be read, so their ranges come first (FA_ERR_STRIDE, as the
     * stride step would report them). */
    byte_range unread;
    if (s->batch == INT64_MAX && (s->cu_seqlens_q || s->cu_seqlens_k))
        return fa_diag_fail(FA_ERR_SHAPE, call, "p.seqs.batch = %lld: no offsets array has batch + 1 entries",
                            (long long)s->batch);
    if ((st = fa_array_range(call, s->cu_seqlens_q, s->batch + 1, sizeof(int64_t), "p.seqs.cu_seqlens_q",
                             &unread)) != FA_OK ||
        (st = fa_array_range(call, s->cu_seqlens_k, s->batch + 1, sizeof(int64_t), "p.seqs.cu_seqlens_k",
                             &unread)) != FA_OK ||
        (st = fa_array_range(call, s->seqused_k, s->batch, sizeof(int64_t), "p.seqs.seqused_k", &unread)) !=
            FA_OK)
        return st;
    if (s->cu_seqlens_q && (st = check_offsets(call, s->cu_seqlens_q, s->batch, q->seq, "p.seqs.cu_seqlens_q",
                                               "q.seq")) != FA_OK)
        return st;
    if (s->cu_seqlens_k && (st = check_offsets(call, s->cu_seqlens_k, s->batch, k->seq, "p.seqs.cu_seqlens_k",
                                               "k.seq")) != FA_OK)
        return st;
    int64_t paged_capacity = 0, table_entries;
    if (s->block_table && (__builtin_mul_overflow(s->pages_per_seq, k->seq, &paged_capacity) ||
                           __builtin_mul_overflow(s->pages_per_seq, s->batch, &table_entries) ||
                           __builtin_mul_overflow(table_entries, (int64_t)sizeof(int32_t), &table_entries)))
        return fa_diag_fail(
            FA_ERR_SHAPE, call,
            "p.seqs.pages_per_seq = %lld: the table (times p.seqs.batch = %lld) or a sequence's "
            "capacity (times k.seq = %lld) overflows int64",
            (long long)s->pages_per_seq, (long long)s->batch, (long long)k->seq);
    if (s->block_table && (st = fa_array_range(call, s->block_table, s->batch * s->pages_per_seq,
                                               sizeof(int32_t), "p.seqs.block_table", &unread)) != FA_OK)
        return st;
    for (int64_t b = 0; b < s->batch; b++) {
        int64_t capacity = s->cu_seqlens_k  ? load_i64(s->cu_seqlens_k, b + 1) - load_i64(s->cu_seqlens_k, b)
                           : s->block_table ? paged_capacity
                                            : k->seq;
        int64_t used = s->seqused_k ? load_i64(s->seqused_k, b) : capacity;
        if (used < 0 || used > capacity)
            return fa_diag_fail(FA_ERR_SHAPE, call,
                                "p.seqs.seqused_k[%lld] = %lld: expected 0..%lld, the keys it has",
                                (long long)b, (long long)used, (long long)capacity);
        if (!s->block_table || k->seq == 0) continue;
        int64_t pages_used = used / k->seq + (used % k->seq != 0); /* no used + k.seq - 1: it may overflow */
        for (int64_t page = 0; page < pages_used; page++) {
            int64_t at = load_i32(s->block_table, b * s->pages_per_seq + page);
            if (at < 0 || at >= k->batch)
                return fa_diag_fail(
                    FA_ERR_SHAPE, call,
                    "p.seqs.block_table[%lld][%lld] = %lld: expected a page of the pool, 0..%lld",
                    (long long)b, (long long)page, (long long)at, (long long)(k->batch - 1));
        }
    }
    return FA_OK;
}

/* The ranges of the sequences' arrays (inputs), appended to in[*n]. */
static fa_status seqs_input_ranges(const char *call, const fa_seqs *s, byte_range *in, int *n)
{
    fa_status st;
    int64_t rows = s ? s->batch : 0;
    if ((st = fa_array_range(call, s ? s->cu_seqlens_q : NULL, rows + 1, sizeof(int64_t),
                             "p.seqs.cu_seqlens_q", &in[(*n)++])) != FA_OK)
        return st;
    if ((st = fa_array_range(call, s ? s->cu_seqlens_k : NULL, rows + 1, sizeof(int64_t),
                             "p.seqs.cu_seqlens_k", &in[(*n)++])) != FA_OK)
        return st;
    if ((st = fa_array_range(call, s ? s->seqused_k : NULL, rows, sizeof(int64_t), "p.seqs.seqused_k",
                             &in[(*n)++])) != FA_OK)
        return st;
    /* rows·pages_per_seq cannot overflow with a table: check_seqs refused that */
    return fa_array_range(call, s ? s->block_table : NULL, s && s->block_table ? rows * s->pages_per_seq : 0,
                          sizeof(int32_t), "p.seqs.block_table", &in[(*n)++]);
}

/* The steps both calls share, in the documented order, after their NULL checks: params, dtypes and
 * shapes of q, k, v, out, of the n_like views that must have another's shape (the backward's dout
 * and gradients: like[i][0] shaped as like[i][1]), then the sequences and the bias. The sequences'
 * arrays come after every tensor shape: one that cannot be read (misaligned or wrapping) is
 * FA_ERR_STRIDE, which must not pre-empt a wrong shape elsewhere. */
static fa_status check_common(const char *call, const fa_params *params, named_view nq, named_view nk,
                              named_view nv, named_view nout, const named_view *all, const int *leader,
                              int n_all, const named_view (*like)[2], int n_like)
{
    fa_status st;
    if ((st = check_params(call, params, nq.t->dtype)) != FA_OK) return st;
    if ((st = check_scales_wanted(call, params, nk.t)) != FA_OK) return st;
    if ((st = fa_check_call_dtypes(call, all, leader, n_all)) != FA_OK) return st;
    if ((st = check_shapes(call, nq, nk, nv, nout, params->seqs != NULL)) != FA_OK) return st;
    for (int i = 0; i < n_like; i++)
        for (int axis = 0; axis < 4; axis++)
            if ((st = check_same(call, like[i][0], like[i][1], axis)) != FA_OK) return st;
    if (params->seqs && (st = check_seqs(call, params->seqs, nq.t, nk.t)) != FA_OK) return st;
    if (params->bias && (st = check_bias_shape(call, (named_view){params->bias, "p.bias"}, nq.t, nk.t,
                                               params->seqs != NULL)) != FA_OK)
        return st;
    if (params->k_scale &&
        (st = check_scale_shape(call, (named_view){params->k_scale, "p.k_scale"}, nk)) != FA_OK)
        return st;
    if (params->v_scale &&
        (st = check_scale_shape(call, (named_view){params->v_scale, "p.v_scale"}, nv)) != FA_OK)
        return st;
    return FA_OK;
}

/* all[] with the inputs of the accumulation type appended, those that are there (for the NULL, dtype
 * and stride steps): the bias and a quantized cache's scales. */
static int with_bias(named_view *all, int n, const fa_params *p)
{
    if (p->bias) all[n++] = (named_view){p->bias, "p.bias"};
    if (p->k_scale) all[n++] = (named_view){p->k_scale, "p.k_scale"};
    if (p->v_scale) all[n++] = (named_view){p->v_scale, "p.v_scale"};
    return n;
}

fa_status fa_validate_forward(const char *call, const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                              const fa_tensor *v, const fa_tensor *out, const void *lse, fa_problem *prob)
{
    const named_view nq = {q, "q"}, nk = {k, "k"}, nv = {v, "v"}, nout = {out, "out"};
    named_view in[6] = {nq, nk, nv}, all[7] = {nq, nk, nv, nout};
    const fa_params params = *p;
    int n_all = with_bias(all, 4, &params), n_in = with_bias(in, 3, &params);
    fa_status st = fa_check_null(call, all, n_all);
    if (st != FA_OK) return st;
    if ((st = check_scales_present(call, &params, k)) != FA_OK) return st;
    /* the group each view's dtype follows (view_checks.h): q's, k's, or the accumulation type */
    static const int leader[7] = {
        0, 1, 1, FA_LEADER_Q_OR_ACCUM, FA_LEADER_ACCUM, FA_LEADER_ACCUM, FA_LEADER_ACCUM};
    if ((st = check_common(call, &params, nq, nk, nv, nout, all, leader, n_all, NULL, 0)) != FA_OK) return st;
    byte_range in_range[12], out_range[2];
    if ((st = fa_check_strides(call, in, n_in, &nout, 1, in_range, out_range)) != FA_OK) return st;
    if ((st = fa_lse_extent(call, lse, q, "lse", &out_range[1])) != FA_OK) return st;
    if ((st = per_head_input_ranges(call, &params, q->heads, in_range, &n_in)) != FA_OK) return st;
    if ((st = seqs_input_ranges(call, params.seqs, in_range, &n_in)) != FA_OK) return st;
    if ((st = fa_check_alias(call, in_range, n_in, out_range, 2)) != FA_OK) return st;
    if ((st = check_supported(call, &params, 0)) != FA_OK) return st;
    if ((st = check_dropout_indices(call, &params, q, k)) != FA_OK) return st;
    fill_problem(prob, &params, q, k, v, out, lse);
    return FA_OK;
}

fa_status fa_validate_backward(const char *call, const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                               const fa_tensor *v, const fa_tensor *out, const fa_tensor *dout,
                               const void *lse, const fa_tensor *dq, const fa_tensor *dk, const fa_tensor *dv,
                               fa_problem *prob)
{
    const named_view nq = {q, "q"}, nk = {k, "k"}, nv = {v, "v"}, nout = {out, "out"}, ndout = {dout, "dout"};
    const named_view ndq = {dq, "dq"}, ndk = {dk, "dk"}, ndv = {dv, "dv"};
    named_view in[8] = {nq, nk, nv, nout, ndout}, all[12] = {nq, nk, nv, nout, ndout, ndq, ndk, ndv};
    fa_tensor dbias_written;
    named_view outs[4] = {ndq, ndk, ndv, {&dbias_written, "p.dbias"}};
    const fa_params params = *p;
    int n_all = with_bias(all, 8, &params), n_in = with_bias(in, 5, &params);
    if (params.dbias) all[n_all++] = (named_view){params.dbias, "p.dbias"};
    fa_status st = fa_check_null(call, all, n_all);
    if (st != FA_OK) return st;
    if (!lse)
        return fa_diag_fail(FA_ERR_NULL, call, "lse is NULL: the backward needs the forward's log-sum-exp");
    if (params.dsinks && !params.sinks)
        return fa_diag_fail(FA_ERR_NULL, call, "p.sinks is NULL but p.dsinks asks for its gradient");
    if (params.dbias && !params.bias)
        return fa_diag_fail(FA_ERR_NULL, call, "p.bias is NULL but p.dbias asks for its gradient");
    if ((st = check_scales_present(call, &params, k)) != FA_OK) return st;
    /* each gradient (and dout) has the shape of the tensor it belongs to */
    const named_view shaped_like[4][2] = {{ndout, nout}, {ndq, nq}, {ndk, nk}, {ndv, nv}};
    /* dout: q's; dq: q's or (half q) the accumulation type; dk, dv: k's, or dq's when dq is the
     * accumulation type under half q (f32 partial gradients come all three together); the bias, the
     * scales and dbias: the accumulation type */
    enum {
        QS = 0,
        KS = 1,
        DQ_RULE = FA_LEADER_Q_OR_ACCUM,
        DKV_RULE = FA_LEADER_K_OR_PARTIAL,
        ACC = FA_LEADER_ACCUM
    };
    /* in all[]'s order: q, k, v, out, dout, dq, dk, dv, then the bias, the scales and dbias */
    static const int leader[12] = {QS, KS, KS, QS, QS, DQ_RULE, DKV_RULE, DKV_RULE, ACC, ACC, ACC, ACC};
    if ((st = check_common(call, &params, nq, nk, nv, nout, all, leader, n_all, shaped_like, 4)) != FA_OK)
        return st;
    if (params.dbias && (st = check_dbias_shape(call, params.dbias, params.bias)) != FA_OK) return st;
    if (params.dbias && (st = dbias_written_view(call, params.dbias, params.bias, &dbias_written)) != FA_OK)
        return st;
    const int n_out = params.dbias ? 4 : 3;
    byte_range in_range[15], out_range[5];
    if ((st = fa_check_strides(call, in, n_in, outs, n_out, in_range, out_range)) != FA_OK) return st;
    if ((st = fa_lse_extent(call, lse, q, "lse", &in_range[n_in++])) != FA_OK) return st;
    if ((st = per_head_input_ranges(call, &params, q->heads, in_range, &n_in)) != FA_OK) return st;
    if ((st = seqs_input_ranges(call, params.seqs, in_range, &n_in)) != FA_OK) return st;
    if ((st = fa_array_range(call, params.dsinks, q->heads, sizeof(float), "p.dsinks", &out_range[n_out])) !=
        FA_OK)
        return st;
    if ((st = fa_check_alias(call, in_range, n_in, out_range, n_out + 1)) != FA_OK) return st;
    if ((st = check_supported(call, &params, 1)) != FA_OK) return st;
    if ((st = check_dropout_indices(call, &params, q, k)) != FA_OK) return st;
    fill_problem(prob, &params, q, k, v, out, lse);
    prob->dsinks = params.dsinks;
    prob->dbias = broadcast_view_of(params.dbias);
    prob->dout = view_of(dout);
    prob->dq = view_of(dq);
    prob->dk = view_of(dk);
    prob->dv = view_of(dv);
    prob->dq_type = dq->dtype;
    prob->dkv_type = dk->dtype;
    return FA_OK;
}

/* ---- fa_merge ---- */

/* Every status class of fa_merge in the documented order, one part at a time (names such as
 * "outs[3].seq" are formatted per part, and the overlap test needs only the part at hand against
 * the two outputs, so no storage grows with n). */
fa_status fa_validate_merge(const char *call, int n, const fa_tensor *outs, const void *const *lses,
                            const fa_tensor *out, const void *lse, fa_merge_problem *prob)
{
    if (!outs) return fa_diag_fail(FA_ERR_NULL, call, "outs is NULL");
    if (!lses) return fa_diag_fail(FA_ERR_NULL, call, "lses is NULL");
    const named_view nout = {out, "out"};
    fa_status st = fa_check_null(call, &nout, 1);
    if (st != FA_OK) return st;
    if (n < 1) return fa_diag_fail(FA_ERR_ARG, call, "n = %d: expected at least one part", n);
    char name[32];
    for (int k = 0; k < n; k++) {
        snprintf(name, sizeof name, "outs[%d]", k);
        named_view part = {&outs[k], name};
        if ((st = fa_check_null(call, &part, 1)) != FA_OK) return st;
        if (!lses[k] && !fa_is_empty(&outs[k]))
            return fa_diag_fail(FA_ERR_NULL, call, "lses[%d] is NULL: every part needs its log-sum-exp", k);
    }
    for (int k = 0; k <= n; k++) { /* dtypes: every part and out as outs[0] */
        snprintf(name, sizeof name, "outs[%d]", k);
        named_view pair[2] = {{&outs[0], "outs[0]"}, k < n ? (named_view){&outs[k], name} : nout};
        if ((st = fa_check_dtypes(call, pair, 2)) != FA_OK) return st;
    }
    for (int k = 0; k <= n; k++) { /* shapes: every part and out as outs[0] */
        snprintf(name, sizeof name, "outs[%d]", k);
        named_view first = {&outs[0], "outs[0]"}, part = k < n ? (named_view){&outs[k], name} : nout;
        for (int axis = 0; axis < 4; axis++)
            if (fa_size_of(part.t, axis) < 0)
                return fa_diag_fail(FA_ERR_SHAPE, call, "%s.%s = %lld: sizes must be >= 0", part.name,
                                    fa_size_names[axis], (long long)fa_size_of(part.t, axis));
        for (int axis = 0; axis < 4; axis++)
            if ((st = check_same(call, part, first, axis)) != FA_OK) return st;
    }
    if (out->dim < 1 || out->dim > FA_MAX_HEAD_DIM) /* as fa_forward's Dv; a row of it is held in scratch */
        return fa_diag_fail(FA_ERR_SHAPE, call,
                            "out.dim = %lld: head dims must be in 1..%d (FA_MAX_HEAD_DIM)",
                            (long long)out->dim, FA_MAX_HEAD_DIM);
    byte_range outputs[2], part_range[2], unused;
    if ((st = fa_check_strides(call, NULL, 0, &nout, 1, NULL, &outputs[0])) != FA_OK) return st;
    if ((st = fa_lse_extent(call, lse, out, "lse", &outputs[1])) != FA_OK) return st;
    for (int k = 0; k < n; k++) {
        snprintf(name, sizeof name, "outs[%d]", k);
        named_view part = {&outs[k], name};
        if ((st = fa_check_strides(call, &part, 1, NULL, 0, &part_range[0], &unused)) != FA_OK) return st;
        char lse_name[32];
        snprintf(lse_name, sizeof lse_name, "lses[%d]", k);
        if ((st = fa_lse_extent(call, lses[k], out, lse_name, &part_range[1])) != FA_OK) return st;
        if ((st = fa_check_alias(call, part_range, 2, outputs, 2)) != FA_OK) return st;
    }
    if ((st = fa_check_alias(call, NULL, 0, outputs, 2)) != FA_OK) return st; /* out against lse */
    prob->n = n;
    prob->outs = outs;
    prob->lses = lses;
    prob->out = out;
    prob->lse = (void *)(uintptr_t)lse;
    return FA_OK;
}
