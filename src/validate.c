/* Argument validation for the public calls.
 *
 * Every check reads only the user's structs. Offsets and byte extents are computed in int64 with
 * overflow checks before anything is dereferenced, so a hostile shape cannot make the library
 * touch memory outside the views it was given. */
#include "validate.h"

#include <math.h>
#include <stdint.h>

#define MAX_HEAD_DIM 512

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
} byte_range;

/* Largest element offset of a non-empty view, in elements, and the byte range it spans.
 * Returns 0 on success, -1 on any int64 or address overflow. */
static int view_extent(const fa_tensor *t, byte_range *r)
{
    r->begin = r->end = 0;
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

static fa_status check_params(const fa_params *p)
{
    if (!isfinite(p->scale)) return FA_ERR_ARG;
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
    if (q->dim < 1 || q->dim > MAX_HEAD_DIM || v->dim < 1 || v->dim > MAX_HEAD_DIM) return FA_ERR_SHAPE;
    if (q->heads > 0 && (k->heads == 0 || q->heads % k->heads != 0)) return FA_ERR_SHAPE;
    int64_t rows; /* the lse holds batch·heads·seq values: that count must be representable in bytes */
    if (__builtin_mul_overflow(q->batch, q->heads, &rows) || __builtin_mul_overflow(rows, q->seq, &rows) ||
        __builtin_mul_overflow(rows, (int64_t)8, &rows))
        return FA_ERR_SHAPE;
    return FA_OK;
}

fa_status fa_validate_forward(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                              const fa_tensor *out, const void *lse, fa_problem *prob)
{
    if (!q || !k || !v || !out) return FA_ERR_NULL;
    if (null_data(q) || null_data(k) || null_data(v) || null_data(out)) return FA_ERR_NULL;

    fa_params params = p ? *p : fa_params_default();
    fa_status st = check_params(&params);
    if (st != FA_OK) return st;

    if (!dtype_known(q->dtype) || !dtype_known(k->dtype) || !dtype_known(v->dtype) || !dtype_known(out->dtype))
        return FA_ERR_DTYPE;
    if (k->dtype != q->dtype || v->dtype != q->dtype || out->dtype != q->dtype) return FA_ERR_DTYPE;

    if ((st = check_shapes(q, k, v, out)) != FA_OK) return st;

    const fa_tensor *all[4] = {q, k, v, out};
    byte_range range[4];
    for (int i = 0; i < 4; i++) {
        if (all[i]->stride_batch < 0 || all[i]->stride_head < 0 || all[i]->stride_seq < 0) return FA_ERR_STRIDE;
        if (view_extent(all[i], &range[i]) != 0) return FA_ERR_STRIDE;
    }
    if (overlaps_itself(out)) return FA_ERR_STRIDE;
    byte_range lse_range = {0, 0};
    if (lse && !is_empty(q)) {
        size_t lse_bytes = (size_t)(q->batch * q->heads * q->seq) * (q->dtype == FA_F64 ? 8u : 4u);
        lse_range.begin = (uintptr_t)lse;
        if (__builtin_add_overflow(lse_range.begin, (uintptr_t)lse_bytes, &lse_range.end)) return FA_ERR_STRIDE;
    }

    for (int i = 0; i < 3; i++)
        if (ranges_overlap(range[3], range[i]) || ranges_overlap(lse_range, range[i])) return FA_ERR_ALIAS;
    if (ranges_overlap(lse_range, range[3])) return FA_ERR_ALIAS;

    if (q->dtype != FA_F32 && q->dtype != FA_F64) return FA_ERR_UNSUPPORTED;
    if (params.window_left != -1 || params.window_right != -1) return FA_ERR_UNSUPPORTED;
    if (params.softcap != 0.0 || params.alibi_slopes || params.bias) return FA_ERR_UNSUPPORTED;

    prob->dtype = q->dtype;
    prob->batch = q->batch;
    prob->q_heads = q->heads;
    prob->kv_heads = k->heads;
    prob->group = k->heads > 0 ? q->heads / k->heads : 1;
    prob->q_len = q->seq;
    prob->kv_len = k->seq;
    prob->dim = q->dim;
    prob->dim_v = v->dim;
    prob->q = (fa_view){q->data, q->stride_batch, q->stride_head, q->stride_seq};
    prob->k = (fa_view){k->data, k->stride_batch, k->stride_head, k->stride_seq};
    prob->v = (fa_view){v->data, v->stride_batch, v->stride_head, v->stride_seq};
    prob->out = (fa_view){out->data, out->stride_batch, out->stride_head, out->stride_seq};
    prob->lse = (void *)(uintptr_t)lse;
    prob->scale = params.scale != 0.0 ? params.scale : 1.0 / sqrt((double)q->dim);
    prob->causal = params.causal;
    return FA_OK;
}
