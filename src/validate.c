/* SPDX-License-Identifier: BSD-3-Clause */
/* Argument validation for the public calls.
 *
 * Every check reads only the user's structs. Offsets and byte extents are computed in int64 with
 * overflow checks before anything is dereferenced, so a hostile shape cannot make the library
 * touch memory outside the views it was given. */
#include "validate.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

static size_t dtype_size(fa_dtype t)
{
    switch (t) {
    case FA_F64: return 8;
    case FA_F32: return 4;
    default: return 2;
    }
}

static int dtype_known(fa_dtype t)
{
    return t == FA_F32 || t == FA_F64 || t == FA_BF16 || t == FA_F16;
}

static int is_empty(const fa_tensor *t)
{
    return t->batch == 0 || t->heads == 0 || t->seq == 0 || t->dim == 0;
}

static int null_data(const fa_tensor *t)
{
    return t->data == NULL && t->batch > 0 && t->heads > 0 && t->seq > 0 && t->dim > 0;
}

/* The byte range [begin, end) a view spans; an empty view spans nothing. */
typedef struct {
    uintptr_t begin, end;
    const fa_tensor *view; /* the view spanning it, or NULL for a plain contiguous range (lse) */
} byte_range;

/* Largest element offset of a non-empty view, in elements, and the byte range it spans.
 * Returns 0 on success, -1 on any int64 or address overflow. */
static int view_extent(const fa_tensor *t, byte_range *r)
{
    r->begin = r->end = 0;
    r->view = t;
    if (is_empty(t)) return 0;
    const int64_t size[3] = {t->batch, t->heads, t->seq};
    const int64_t stride[3] = {t->stride_batch, t->stride_head, t->stride_seq};
    int64_t last = t->dim - 1, term;
    for (int i = 0; i < 3; i++) {
        if (__builtin_mul_overflow(size[i] - 1, stride[i], &term) || __builtin_add_overflow(last, term, &last))
            return -1;
    }
    int64_t bytes;
    if (__builtin_add_overflow(last, 1, &bytes) || __builtin_mul_overflow(bytes, (int64_t)dtype_size(t->dtype), &bytes))
        return -1;
    uintptr_t begin = (uintptr_t)t->data, end;
    if (__builtin_add_overflow(begin, (uintptr_t)bytes, &end)) return -1;
    r->begin = begin;
    r->end = end;
    return 0;
}

/* An output must give every element its own address. Sufficient test (and exact for the layouts
 * people use): ordering the axes of size > 1 by stride, each stride clears everything the
 * smaller axes span. Interleavings that pass a finer test are refused too. */
static int overlaps_itself(const fa_tensor *t)
{
    if (is_empty(t)) return 0;
    int64_t size[3] = {t->batch, t->heads, t->seq};
    int64_t stride[3] = {t->stride_batch, t->stride_head, t->stride_seq};
    for (int i = 0; i < 3; i++) /* sort the three axes by stride (insertion sort) */
        for (int j = i; j > 0 && stride[j] < stride[j - 1]; j--) {
            int64_t s = stride[j], n = size[j];
            stride[j] = stride[j - 1];
            size[j] = size[j - 1];
            stride[j - 1] = s;
            size[j - 1] = n;
        }
    int64_t span = t->dim; /* elements covered by everything below the current axis */
    for (int i = 0; i < 3; i++) {
        if (size[i] <= 1) continue;
        if (stride[i] < span) return 1;
        span = stride[i] * (size[i] - 1) + span; /* cannot overflow: view_extent passed */
    }
    return 0;
}

static int ranges_overlap(byte_range a, byte_range b)
{
    return a.begin < a.end && b.begin < b.end && a.begin < b.end && b.begin < a.end;
}

/* q_dtype: the scale must be finite in the type the scores accumulate in (double only for FA_F64),
 * or every score would be inf and every output NaN. */
static fa_status check_params(const fa_params *p, fa_dtype q_dtype)
{
    if (!isfinite(p->scale)) return FA_ERR_ARG;
    if (q_dtype != FA_F64 && fabs(p->scale) > FLT_MAX) return FA_ERR_ARG;
    if (p->causal != FA_CAUSAL_NONE && p->causal != FA_CAUSAL_TOP_LEFT && p->causal != FA_CAUSAL_BOTTOM_RIGHT)
        return FA_ERR_ARG;
    if (p->window_left < -1 || p->window_right < -1) return FA_ERR_ARG;
    if (!(p->softcap >= 0.0) || !isfinite(p->softcap)) return FA_ERR_ARG;
    return FA_OK;
}

static fa_status check_shapes(const fa_tensor *q, const fa_tensor *k, const fa_tensor *v, const fa_tensor *out)
{
    const fa_tensor *all[4] = {q, k, v, out};
    for (int i = 0; i < 4; i++)
        if (all[i]->batch < 0 || all[i]->heads < 0 || all[i]->seq < 0 || all[i]->dim < 0) return FA_ERR_SHAPE;
    if (k->batch != q->batch || v->batch != q->batch || out->batch != q->batch) return FA_ERR_SHAPE;
    if (out->heads != q->heads || v->heads != k->heads) return FA_ERR_SHAPE;
    if (out->seq != q->seq || v->seq != k->seq) return FA_ERR_SHAPE;
    if (k->dim != q->dim || out->dim != v->dim) return FA_ERR_SHAPE;
    if (q->dim < 1 || q->dim > FA_MAX_HEAD_DIM || v->dim < 1 || v->dim > FA_MAX_HEAD_DIM) return FA_ERR_SHAPE;
    if (q->heads > 0 && (k->heads == 0 || q->heads % k->heads != 0)) return FA_ERR_SHAPE;
    int64_t rows; /* the lse holds batch·heads·seq values: that count must be representable in bytes */
    if (__builtin_mul_overflow(q->batch, q->heads, &rows) || __builtin_mul_overflow(rows, q->seq, &rows) ||
        __builtin_mul_overflow(rows, (int64_t)8, &rows))
        return FA_ERR_SHAPE;
    return FA_OK;
}

/* ---- shared steps; each call composes them in the documented order ---- */

static fa_status check_null(const fa_tensor *const *t, int n)
{
    for (int i = 0; i < n; i++)
        if (!t[i]) return FA_ERR_NULL;
    for (int i = 0; i < n; i++)
        if (null_data(t[i])) return FA_ERR_NULL;
    return FA_OK;
}

static fa_status check_dtypes(const fa_tensor *const *t, int n)
{
    for (int i = 0; i < n; i++)
        if (!dtype_known(t[i]->dtype)) return FA_ERR_DTYPE;
    for (int i = 1; i < n; i++)
        if (t[i]->dtype != t[0]->dtype) return FA_ERR_DTYPE;
    return FA_OK;
}

static int same_shape(const fa_tensor *a, const fa_tensor *b)
{
    return a->batch == b->batch && a->heads == b->heads && a->seq == b->seq && a->dim == b->dim;
}

/* Strides of every view, then the byte range each spans; outputs must not overlap themselves. */
static fa_status check_strides(const fa_tensor *const *in, int n_in, const fa_tensor *const *out, int n_out,
                               byte_range *in_range, byte_range *out_range)
{
    for (int i = 0; i < n_in + n_out; i++) {
        const fa_tensor *t = i < n_in ? in[i] : out[i - n_in];
        byte_range *r = i < n_in ? &in_range[i] : &out_range[i - n_in];
        if (t->stride_batch < 0 || t->stride_head < 0 || t->stride_seq < 0) return FA_ERR_STRIDE;
        /* element addresses must be whole elements: a misaligned float is undefined behaviour in C */
        if (!is_empty(t) && (uintptr_t)t->data % dtype_size(t->dtype) != 0) return FA_ERR_STRIDE;
        if (view_extent(t, r) != 0) return FA_ERR_STRIDE;
    }
    for (int i = 0; i < n_out; i++)
        if (overlaps_itself(out[i])) return FA_ERR_STRIDE;
    return FA_OK;
}

/* The lse's range: contiguous [B][Hq][Nq] values of the accumulation type. */
static fa_status lse_extent(const void *lse, const fa_tensor *q, byte_range *r)
{
    r->begin = r->end = 0;
    r->view = NULL;
    if (!lse || is_empty(q)) return FA_OK;
    size_t elem = q->dtype == FA_F64 ? 8u : 4u, bytes = (size_t)(q->batch * q->heads * q->seq) * elem;
    if ((uintptr_t)lse % elem != 0) return FA_ERR_STRIDE;
    r->begin = (uintptr_t)lse;
    return __builtin_add_overflow(r->begin, (uintptr_t)bytes, &r->end) ? FA_ERR_STRIDE : FA_OK;
}

/* Columns [begin, begin + n) of a row of width w, begin in [0, w). */
typedef struct {
    int64_t begin, n;
} row_span;

static int64_t mod_floor(int64_t x, int64_t w)
{
    int64_t m = x % w;
    return m < 0 ? m + w : m;
}

static int spans_meet(row_span a, row_span b, int64_t w)
{
    return mod_floor(b.begin - a.begin, w) < a.n || mod_floor(a.begin - b.begin, w) < b.n;
}

/* Whether a view is "row-interleaved" with row width w: every batch starts on a row boundary and
 * every head's columns fit in one row, so each element sits at (row, column) with the column in
 * {h·stride_head + x}. Fused QKV projections and their gradients are laid out like this. */
static int row_interleaved(const fa_tensor *t, int64_t w)
{
    if (t->batch > 1 && t->stride_batch % w != 0) return 0;
    return (t->heads - 1) * t->stride_head + t->dim <= w;
}

/* Whether two views whose address ranges meet may still share no element: both row-interleaved
 * with the same row width w and element size, their bases a whole number of elements apart, and
 * their column sets disjoint modulo w (an element of one at column c and of the other at c' can
 * only coincide when c = c' mod w). This admits dq, dk, dv as slices of one packed dQKV buffer. */
static int interleaved_disjoint(const fa_tensor *a, const fa_tensor *b)
{
    int64_t w = a->stride_seq;
    if (a->dtype != b->dtype || w <= 0 || b->stride_seq != w) return 0;
    if (!row_interleaved(a, w) || !row_interleaved(b, w)) return 0;
    if (a->heads * b->heads > (1 << 16)) return 0; /* a pairwise check too long to be worth it */
    int64_t e = (int64_t)dtype_size(a->dtype);
    intptr_t gap = (intptr_t)((uintptr_t)b->data - (uintptr_t)a->data); /* no overflow: ranges meet */
    if (gap % e != 0) return 0;
    int64_t shift = mod_floor((int64_t)(gap / e), w);
    for (int64_t h = 0; h < a->heads; h++)
        for (int64_t g = 0; g < b->heads; g++) {
            row_span sa = {h * a->stride_head, a->dim};
            row_span sb = {mod_floor(shift + g * b->stride_head, w), b->dim};
            if (spans_meet(sa, sb, w)) return 0;
        }
    return 1;
}

static int may_share_bytes(byte_range a, byte_range b)
{
    if (!ranges_overlap(a, b)) return 0;
    return !(a.view && b.view && interleaved_disjoint(a.view, b.view));
}

/* Every output against every input and every other output. */
static fa_status check_alias(const byte_range *in, int n_in, const byte_range *out, int n_out)
{
    for (int o = 0; o < n_out; o++) {
        for (int i = 0; i < n_in; i++)
            if (may_share_bytes(out[o], in[i])) return FA_ERR_ALIAS;
        for (int j = o + 1; j < n_out; j++)
            if (may_share_bytes(out[o], out[j])) return FA_ERR_ALIAS;
    }
    return FA_OK;
}

static fa_status check_supported(const fa_tensor *q, const fa_params *params)
{
    if (q->dtype != FA_F32 && q->dtype != FA_F64) return FA_ERR_UNSUPPORTED;
    if (params->window_left != -1 || params->window_right != -1) return FA_ERR_UNSUPPORTED;
    if (params->softcap != 0.0 || params->alibi_slopes || params->bias) return FA_ERR_UNSUPPORTED;
    return FA_OK;
}

/* The internal view of a validated tensor. An empty tensor (a size of 0) has no element, so its
 * strides were never checked and may be anything: its view is NULL data with zero strides, so that
 * no offset is ever computed from them (fa_view_at gives NULL). */
static fa_view view_of(const fa_tensor *t)
{
    fa_view v = {NULL, 0, 0, 0};
    if (t && !is_empty(t)) v = (fa_view){t->data, t->stride_batch, t->stride_head, t->stride_seq};
    return v;
}

static void fill_problem(fa_problem *prob, const fa_params *params, const fa_tensor *q, const fa_tensor *k,
                         const fa_tensor *v, const fa_tensor *out, const void *lse)
{
    prob->dtype = q->dtype;
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
}

fa_status fa_validate_forward(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                              const fa_tensor *out, const void *lse, fa_problem *prob)
{
    const fa_tensor *in[3] = {q, k, v}, *all[4] = {q, k, v, out};
    fa_status st = check_null(all, 4);
    if (st != FA_OK) return st;
    fa_params params = p ? *p : fa_params_default();
    if ((st = check_params(&params, q->dtype)) != FA_OK) return st;
    if ((st = check_dtypes(all, 4)) != FA_OK) return st;
    if ((st = check_shapes(q, k, v, out)) != FA_OK) return st;
    byte_range in_range[3], out_range[2];
    if ((st = check_strides(in, 3, &out, 1, in_range, out_range)) != FA_OK) return st;
    if ((st = lse_extent(lse, q, &out_range[1])) != FA_OK) return st;
    if ((st = check_alias(in_range, 3, out_range, 2)) != FA_OK) return st;
    if ((st = check_supported(q, &params)) != FA_OK) return st;
    fill_problem(prob, &params, q, k, v, out, lse);
    return FA_OK;
}

fa_status fa_validate_backward(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                               const fa_tensor *out, const fa_tensor *dout, const void *lse, const fa_tensor *dq,
                               const fa_tensor *dk, const fa_tensor *dv, fa_problem *prob)
{
    const fa_tensor *in[5] = {q, k, v, out, dout}, *grads[3] = {dq, dk, dv};
    const fa_tensor *all[8] = {q, k, v, out, dout, dq, dk, dv};
    fa_status st = check_null(all, 8);
    if (st != FA_OK) return st;
    if (!lse) return FA_ERR_NULL;
    fa_params params = p ? *p : fa_params_default();
    if ((st = check_params(&params, q->dtype)) != FA_OK) return st;
    if ((st = check_dtypes(all, 8)) != FA_OK) return st;
    if ((st = check_shapes(q, k, v, out)) != FA_OK) return st;
    if (!same_shape(dout, out) || !same_shape(dq, q) || !same_shape(dk, k) || !same_shape(dv, v))
        return FA_ERR_SHAPE;
    byte_range in_range[6], out_range[3];
    if ((st = check_strides(in, 5, grads, 3, in_range, out_range)) != FA_OK) return st;
    if ((st = lse_extent(lse, q, &in_range[5])) != FA_OK) return st;
    if ((st = check_alias(in_range, 6, out_range, 3)) != FA_OK) return st;
    if ((st = check_supported(q, &params)) != FA_OK) return st;
    fill_problem(prob, &params, q, k, v, out, lse);
    prob->dout = view_of(dout);
    prob->dq = view_of(dq);
    prob->dk = view_of(dk);
    prob->dv = view_of(dv);
    return FA_OK;
}
