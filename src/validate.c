/* SPDX-License-Identifier: BSD-3-Clause */
/* Argument validation for the public calls.
 *
 * Every check reads only the user's structs. Offsets and byte extents are computed in int64 with
 * overflow checks before anything is dereferenced, so a hostile shape cannot make the library
 * touch memory outside the views it was given. */
#include "validate.h"

#include "diagnostic.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

/* A tensor argument and the name the diagnostics give it ("q", "dout", ...). */
typedef struct {
    const fa_tensor *t;
    const char *name;
} named_view;

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

static const char *dtype_name(fa_dtype t)
{
    switch (t) {
    case FA_F32: return "FA_F32";
    case FA_F64: return "FA_F64";
    case FA_BF16: return "FA_BF16";
    case FA_F16: return "FA_F16";
    }
    return "unknown";
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
    const char *name;
} byte_range;

static const char *const size_name[4] = {"batch", "heads", "seq", "dim"};

static int64_t size_of(const fa_tensor *t, int axis)
{
    return axis == 0 ? t->batch : axis == 1 ? t->heads : axis == 2 ? t->seq : t->dim;
}
static const char *const stride_name[3] = {"stride_batch", "stride_head", "stride_seq"};

/* The byte range a non-empty view spans. On an int64 or address overflow, names the culprit: the
 * axis whose (size - 1)·stride term overflows the element offset or, when only the byte count
 * does, the largest term; the data pointer when only the address wraps. */
static fa_status view_extent(const char *call, named_view nv, byte_range *r)
{
    const fa_tensor *t = nv.t;
    r->begin = r->end = 0;
    r->view = t;
    r->name = nv.name;
    if (is_empty(t)) return FA_OK;
    const int64_t size[3] = {t->batch, t->heads, t->seq};
    const int64_t stride[3] = {t->stride_batch, t->stride_head, t->stride_seq};
    int64_t last = t->dim - 1, term, largest = 0;
    int largest_axis = 0;
    for (int i = 0; i < 3; i++) {
        if (__builtin_mul_overflow(size[i] - 1, stride[i], &term) || __builtin_add_overflow(last, term, &last))
            return fa_diag_fail(FA_ERR_STRIDE, call,
                                "%s.%s = %lld with %s.%s = %lld: the last element's offset overflows int64",
                                nv.name, stride_name[i], (long long)stride[i], nv.name, size_name[i],
                                (long long)size[i]);
        if (term > largest) largest = term, largest_axis = i;
    }
    int64_t bytes;
    if (__builtin_add_overflow(last, 1, &bytes) || __builtin_mul_overflow(bytes, (int64_t)dtype_size(t->dtype), &bytes))
        return fa_diag_fail(FA_ERR_STRIDE, call,
                            "%s.%s = %lld with %s.%s = %lld: the view's byte count overflows int64", nv.name,
                            stride_name[largest_axis], (long long)stride[largest_axis], nv.name,
                            size_name[largest_axis], (long long)size[largest_axis]);
    uintptr_t begin = (uintptr_t)t->data, end;
    if (__builtin_add_overflow(begin, (uintptr_t)bytes, &end))
        return fa_diag_fail(FA_ERR_STRIDE, call, "%s.data = %p: the view's %lld bytes wrap around the address space",
                            nv.name, t->data, (long long)bytes);
    r->begin = begin;
    r->end = end;
    return FA_OK;
}

/* An output must give every element its own address. Sufficient test (and exact for the layouts
 * people use): ordering the axes of size > 1 by stride, each stride clears everything the
 * smaller axes span. Interleavings that pass a finer test are refused too. Returns the axis
 * (0 batch, 1 heads, 2 seq) whose stride fails, or -1. */
static int overlaps_itself(const fa_tensor *t)
{
    if (is_empty(t)) return -1;
    int64_t size[3] = {t->batch, t->heads, t->seq};
    int64_t stride[3] = {t->stride_batch, t->stride_head, t->stride_seq};
    int axis[3] = {0, 1, 2};
    for (int i = 0; i < 3; i++) /* sort the three axes by stride (insertion sort) */
        for (int j = i; j > 0 && stride[j] < stride[j - 1]; j--) {
            int64_t s = stride[j], n = size[j];
            int a = axis[j];
            stride[j] = stride[j - 1];
            size[j] = size[j - 1];
            axis[j] = axis[j - 1];
            stride[j - 1] = s;
            size[j - 1] = n;
            axis[j - 1] = a;
        }
    int64_t span = t->dim; /* elements covered by everything below the current axis */
    for (int i = 0; i < 3; i++) {
        if (size[i] <= 1) continue;
        if (stride[i] < span) return axis[i];
        span = stride[i] * (size[i] - 1) + span; /* cannot overflow: view_extent passed */
    }
    return -1;
}

static int ranges_overlap(byte_range a, byte_range b)
{
    return a.begin < a.end && b.begin < b.end && a.begin < b.end && b.begin < a.end;
}

/* q_dtype: the scale must be finite in the type the scores accumulate in (double only for FA_F64),
 * or every score would be inf and every output NaN. */
static fa_status check_params(const char *call, const fa_params *p, fa_dtype q_dtype)
{
    if (!isfinite(p->scale)) return fa_diag_fail(FA_ERR_ARG, call, "p.scale = %g: must be finite", p->scale);
    if (q_dtype != FA_F64 && fabs(p->scale) > FLT_MAX)
        return fa_diag_fail(FA_ERR_ARG, call,
                            "p.scale = %g: beyond float's range, in which the scores of %s tensors accumulate",
                            p->scale, dtype_name(q_dtype));
    if (p->causal != FA_CAUSAL_NONE && p->causal != FA_CAUSAL_TOP_LEFT && p->causal != FA_CAUSAL_BOTTOM_RIGHT)
        return fa_diag_fail(FA_ERR_ARG, call,
                            "p.causal = %d: expected FA_CAUSAL_NONE, FA_CAUSAL_TOP_LEFT or FA_CAUSAL_BOTTOM_RIGHT",
                            (int)p->causal);
    if (p->window_left < -1)
        return fa_diag_fail(FA_ERR_ARG, call, "p.window_left = %lld: expected -1 (unbounded) or >= 0",
                            (long long)p->window_left);
    if (p->window_right < -1)
        return fa_diag_fail(FA_ERR_ARG, call, "p.window_right = %lld: expected -1 (unbounded) or >= 0",
                            (long long)p->window_right);
    if (!(p->softcap >= 0.0) || !isfinite(p->softcap))
        return fa_diag_fail(FA_ERR_ARG, call, "p.softcap = %g: expected 0 (off) or a finite positive value",
                            p->softcap);
    if (q_dtype != FA_F64 && p->softcap != 0.0 && (p->softcap < FLT_MIN || p->softcap > FLT_MAX))
        return fa_diag_fail(FA_ERR_ARG, call,
                            "p.softcap = %g: outside float's normal range, in which the scores of %s tensors are capped",
                            p->softcap, dtype_name(q_dtype));
    return FA_OK;
}

/* One size of two views that must agree. */
static fa_status check_same(const char *call, named_view a, named_view b, int axis)
{
    int64_t sa = size_of(a.t, axis), sb = size_of(b.t, axis);
    if (sa == sb) return FA_OK;
    return fa_diag_fail(FA_ERR_SHAPE, call, "%s.%s = %lld but %s.%s = %lld", a.name, size_name[axis], (long long)sa,
                        b.name, size_name[axis], (long long)sb);
}

static fa_status check_dim_range(const char *call, named_view nv)
{
    if (nv.t->dim >= 1 && nv.t->dim <= FA_MAX_HEAD_DIM) return FA_OK;
    return fa_diag_fail(FA_ERR_SHAPE, call, "%s.dim = %lld: head dims must be in 1..%d (FA_MAX_HEAD_DIM)", nv.name,
                        (long long)nv.t->dim, FA_MAX_HEAD_DIM);
}

/* The sizes fa_forward's four views share (fa_backward's others must equal these, check_same). */
static fa_status check_shapes(const char *call, named_view q, named_view k, named_view v, named_view out)
{
    const named_view all[4] = {q, k, v, out};
    for (int i = 0; i < 4; i++)
        for (int axis = 0; axis < 4; axis++) {
            int64_t x = size_of(all[i].t, axis);
            if (x < 0)
                return fa_diag_fail(FA_ERR_SHAPE, call, "%s.%s = %lld: sizes must be >= 0", all[i].name,
                                    size_name[axis], (long long)x);
        }
    /* {view, the view it must agree with, axis} in the documented order */
    static const int pairs[][3] = {{1, 0, 0}, {2, 0, 0}, {3, 0, 0}, {3, 0, 1}, {2, 1, 1},
                                   {3, 0, 2}, {2, 1, 2}, {1, 0, 3}, {3, 2, 3}};
    fa_status st;
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
        if ((st = check_same(call, all[pairs[i][0]], all[pairs[i][1]], pairs[i][2])) != FA_OK) return st;
    if ((st = check_dim_range(call, q)) != FA_OK || (st = check_dim_range(call, v)) != FA_OK) return st;
    const fa_tensor *tq = q.t, *tk = k.t;
    if (tq->heads > 0 && tk->heads == 0)
        return fa_diag_fail(FA_ERR_SHAPE, call, "%s.heads = 0 but %s.heads = %lld: no kv head to read", k.name,
                            q.name, (long long)tq->heads);
    if (tq->heads > 0 && tq->heads % tk->heads != 0)
        return fa_diag_fail(FA_ERR_SHAPE, call, "%s.heads = %lld is not a multiple of %s.heads = %lld", q.name,
                            (long long)tq->heads, k.name, (long long)tk->heads);
    int64_t rows; /* the lse holds batch·heads·seq values: that count must be representable in bytes */
    if (__builtin_mul_overflow(tq->batch, tq->heads, &rows) || __builtin_mul_overflow(rows, tq->seq, &rows) ||
        __builtin_mul_overflow(rows, (int64_t)8, &rows))
        return fa_diag_fail(FA_ERR_SHAPE, call,
                            "%s.batch = %lld, %s.heads = %lld, %s.seq = %lld: the lse's byte count overflows int64",
                            q.name, (long long)tq->batch, q.name, (long long)tq->heads, q.name,
                            (long long)tq->seq);
    return FA_OK;
}

/* ---- shared steps; each call composes them in the documented order ---- */

static fa_status check_null(const char *call, const named_view *t, int n)
{
    for (int i = 0; i < n; i++)
        if (!t[i].t) return fa_diag_fail(FA_ERR_NULL, call, "%s is NULL", t[i].name);
    for (int i = 0; i < n; i++)
        if (null_data(t[i].t))
            return fa_diag_fail(FA_ERR_NULL, call, "%s.data is NULL but the view has %lld x %lld x %lld x %lld elements",
                                t[i].name, (long long)t[i].t->batch, (long long)t[i].t->heads,
                                (long long)t[i].t->seq, (long long)t[i].t->dim);
    return FA_OK;
}

static fa_status check_dtypes(const char *call, const named_view *t, int n)
{
    for (int i = 0; i < n; i++)
        if (!dtype_known(t[i].t->dtype))
            return fa_diag_fail(FA_ERR_DTYPE, call, "%s.dtype = %d: expected FA_F32, FA_F64, FA_BF16 or FA_F16",
                                t[i].name, (int)t[i].t->dtype);
    for (int i = 1; i < n; i++)
        if (t[i].t->dtype != t[0].t->dtype)
            return fa_diag_fail(FA_ERR_DTYPE, call, "%s.dtype = %s but %s.dtype = %s: one call has one dtype",
                                t[i].name, dtype_name(t[i].t->dtype), t[0].name, dtype_name(t[0].t->dtype));
    return FA_OK;
}

/* Strides of every view, then the byte range each spans; outputs must not overlap themselves. */
static fa_status check_strides(const char *call, const named_view *in, int n_in, const named_view *out, int n_out,
                               byte_range *in_range, byte_range *out_range)
{
    fa_status st;
    for (int i = 0; i < n_in + n_out; i++) {
        named_view nv = i < n_in ? in[i] : out[i - n_in];
        const fa_tensor *t = nv.t;
        byte_range *r = i < n_in ? &in_range[i] : &out_range[i - n_in];
        const int64_t stride[3] = {t->stride_batch, t->stride_head, t->stride_seq};
        for (int axis = 0; axis < 3; axis++)
            if (stride[axis] < 0)
                return fa_diag_fail(FA_ERR_STRIDE, call, "%s.%s = %lld: strides must be >= 0", nv.name,
                                    stride_name[axis], (long long)stride[axis]);
        /* element addresses must be whole elements: a misaligned float is undefined behaviour in C */
        if (!is_empty(t) && (uintptr_t)t->data % dtype_size(t->dtype) != 0)
            return fa_diag_fail(FA_ERR_STRIDE, call, "%s.data = %p: not aligned to its %zu-byte elements", nv.name,
                                t->data, dtype_size(t->dtype));
        if ((st = view_extent(call, nv, r)) != FA_OK) return st;
    }
    for (int i = 0; i < n_out; i++) {
        int axis = overlaps_itself(out[i].t);
        if (axis >= 0) {
            const int64_t stride[3] = {out[i].t->stride_batch, out[i].t->stride_head, out[i].t->stride_seq};
            return fa_diag_fail(FA_ERR_STRIDE, call,
                                "%s.%s = %lld: the output overlaps itself (the stride does not clear what the "
                                "smaller-strided axes span)",
                                out[i].name, stride_name[axis], (long long)stride[axis]);
        }
    }
    return FA_OK;
}

/* The lse's range: contiguous [B][Hq][Nq] values of the accumulation type. */
static fa_status lse_extent(const char *call, const void *lse, const fa_tensor *q, byte_range *r)
{
    r->begin = r->end = 0;
    r->view = NULL;
    r->name = "lse";
    if (!lse || is_empty(q)) return FA_OK;
    size_t elem = q->dtype == FA_F64 ? 8u : 4u, bytes = (size_t)(q->batch * q->heads * q->seq) * elem;
    if ((uintptr_t)lse % elem != 0)
        return fa_diag_fail(FA_ERR_STRIDE, call, "lse = %p: not aligned to its %zu-byte elements", lse, elem);
    r->begin = (uintptr_t)lse;
    if (__builtin_add_overflow(r->begin, (uintptr_t)bytes, &r->end))
        return fa_diag_fail(FA_ERR_STRIDE, call, "lse = %p: its %zu bytes wrap around the address space", lse, bytes);
    return FA_OK;
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

static fa_status alias_error(const char *call, byte_range a, byte_range b)
{
    return fa_diag_fail(FA_ERR_ALIAS, call, "%s overlaps %s (bytes %p..%p and %p..%p)", a.name, b.name,
                        (void *)a.begin, (void *)a.end, (void *)b.begin, (void *)b.end);
}

/* Every output against every input and every other output. */
static fa_status check_alias(const char *call, const byte_range *in, int n_in, const byte_range *out, int n_out)
{
    for (int o = 0; o < n_out; o++) {
        for (int i = 0; i < n_in; i++)
            if (may_share_bytes(out[o], in[i])) return alias_error(call, out[o], in[i]);
        for (int j = o + 1; j < n_out; j++)
            if (may_share_bytes(out[o], out[j])) return alias_error(call, out[o], out[j]);
    }
    return FA_OK;
}

/* Valid requests this version does not compute: half-precision tensors, on every CPU (the kernel
 * tables a CPU lacks are fa_context_create's to report). */
static fa_status check_supported(const char *call, named_view q)
{
    if (q.t->dtype == FA_F32 || q.t->dtype == FA_F64) return FA_OK;
    return fa_diag_fail(FA_ERR_UNSUPPORTED, call,
                        "%s.dtype = %s: not supported by this version of the library (on any CPU); "
                        "it computes FA_F32 and FA_F64",
                        q.name, dtype_name(q.t->dtype));
}

/* ---- the score modifiers' arguments (fa_params) ---- */

/* The bias is an input view like q, with its own shape rule: each of batch, heads and seq is the
 * problem's or 1 (broadcast), dim is Nk. */
static fa_status check_bias_shape(const char *call, named_view bias, const fa_tensor *q, const fa_tensor *k)
{
    const fa_tensor *b = bias.t;
    for (int axis = 0; axis < 4; axis++)
        if (size_of(b, axis) < 0)
            return fa_diag_fail(FA_ERR_SHAPE, call, "%s.%s = %lld: sizes must be >= 0", bias.name, size_name[axis],
                                (long long)size_of(b, axis));
    const char *const of[3] = {"q.batch", "q.heads", "q.seq"};
    for (int axis = 0; axis < 3; axis++) {
        int64_t want = size_of(q, axis), have = size_of(b, axis);
        if (have != want && have != 1)
            return fa_diag_fail(FA_ERR_SHAPE, call, "%s.%s = %lld: expected %s = %lld or 1 (broadcast)", bias.name,
                                size_name[axis], (long long)have, of[axis], (long long)want);
    }
    if (b->dim != k->seq)
        return fa_diag_fail(FA_ERR_SHAPE, call, "%s.dim = %lld but k.seq = %lld: the bias has one column per key",
                            bias.name, (long long)b->dim, (long long)k->seq);
    return FA_OK;
}

/* The byte range of n floats of a per-head array (alibi_slopes, sinks, dsinks); NULL spans nothing. */
static fa_status float_array_range(const char *call, const float *a, int64_t n, const char *name, byte_range *r)
{
    r->begin = r->end = 0;
    r->view = NULL;
    r->name = name;
    if (!a || n == 0) return FA_OK;
    if ((uintptr_t)a % sizeof(float) != 0)
        return fa_diag_fail(FA_ERR_STRIDE, call, "%s = %p: not aligned to its 4-byte elements", name, (const void *)a);
    r->begin = (uintptr_t)a;
    if (__builtin_add_overflow(r->begin, (uintptr_t)n * sizeof(float), &r->end))
        return fa_diag_fail(FA_ERR_STRIDE, call, "%s = %p: its %lld floats wrap around the address space", name,
                            (const void *)a, (long long)n);
    return FA_OK;
}

/* The ranges of the per-head inputs (alibi_slopes, sinks), appended to in[*n]. */
static fa_status per_head_input_ranges(const char *call, const fa_params *p, int64_t heads, byte_range *in, int *n)
{
    fa_status st;
    if ((st = float_array_range(call, p->alibi_slopes, heads, "p.alibi_slopes", &in[(*n)++])) != FA_OK) return st;
    return float_array_range(call, p->sinks, heads, "p.sinks", &in[(*n)++]);
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
    prob->diag_offset = params->causal == FA_CAUSAL_TOP_LEFT ? 0 : k->seq - q->seq;
    prob->window_left = params->window_left;
    prob->window_right = params->window_right;
    prob->softcap = params->softcap;
    prob->alibi_slopes = params->alibi_slopes;
    prob->sinks = params->sinks;
    prob->dsinks = NULL;
    prob->bias = view_of(params->bias);
    if (params->bias && prob->bias.data) { /* a broadcast axis reads element 0, whatever its stride */
        if (params->bias->batch == 1) prob->bias.stride_batch = 0;
        if (params->bias->heads == 1) prob->bias.stride_head = 0;
        if (params->bias->seq == 1) prob->bias.stride_seq = 0;
    }
}

/* The steps both calls share, in the documented order, after their NULL checks: params, dtypes and
 * shapes of q, k, v, out and the bias. */
static fa_status check_common(const char *call, const fa_params *params, named_view nq, named_view nk, named_view nv,
                              named_view nout, const named_view *all, int n_all)
{
    fa_status st;
    if ((st = check_params(call, params, nq.t->dtype)) != FA_OK) return st;
    if ((st = check_dtypes(call, all, n_all)) != FA_OK) return st;
    if ((st = check_shapes(call, nq, nk, nv, nout)) != FA_OK) return st;
    if (params->bias) return check_bias_shape(call, (named_view){params->bias, "p.bias"}, nq.t, nk.t);
    return FA_OK;
}

/* all[] with the bias appended when there is one (for the NULL, dtype and stride steps). */
static int with_bias(named_view *all, int n, const fa_params *p)
{
    if (p->bias) all[n++] = (named_view){p->bias, "p.bias"};
    return n;
}

fa_status fa_validate_forward(const char *call, const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                              const fa_tensor *v, const fa_tensor *out, const void *lse, fa_problem *prob)
{
    const named_view nq = {q, "q"}, nk = {k, "k"}, nv = {v, "v"}, nout = {out, "out"};
    named_view in[4] = {nq, nk, nv}, all[5] = {nq, nk, nv, nout};
    fa_params params = p ? *p : fa_params_default();
    int n_all = with_bias(all, 4, &params), n_in = with_bias(in, 3, &params);
    fa_status st = check_null(call, all, n_all);
    if (st != FA_OK) return st;
    if ((st = check_common(call, &params, nq, nk, nv, nout, all, n_all)) != FA_OK) return st;
    byte_range in_range[6], out_range[2];
    if ((st = check_strides(call, in, n_in, &nout, 1, in_range, out_range)) != FA_OK) return st;
    if ((st = lse_extent(call, lse, q, &out_range[1])) != FA_OK) return st;
    if ((st = per_head_input_ranges(call, &params, q->heads, in_range, &n_in)) != FA_OK) return st;
    if ((st = check_alias(call, in_range, n_in, out_range, 2)) != FA_OK) return st;
    if ((st = check_supported(call, nq)) != FA_OK) return st;
    fill_problem(prob, &params, q, k, v, out, lse);
    return FA_OK;
}

fa_status fa_validate_backward(const char *call, const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                               const fa_tensor *v, const fa_tensor *out, const fa_tensor *dout, const void *lse,
                               const fa_tensor *dq, const fa_tensor *dk, const fa_tensor *dv, fa_problem *prob)
{
    const named_view nq = {q, "q"}, nk = {k, "k"}, nv = {v, "v"}, nout = {out, "out"}, ndout = {dout, "dout"};
    const named_view ndq = {dq, "dq"}, ndk = {dk, "dk"}, ndv = {dv, "dv"};
    named_view in[6] = {nq, nk, nv, nout, ndout}, all[9] = {nq, nk, nv, nout, ndout, ndq, ndk, ndv};
    const named_view grads[3] = {ndq, ndk, ndv};
    fa_params params = p ? *p : fa_params_default();
    int n_all = with_bias(all, 8, &params), n_in = with_bias(in, 5, &params);
    fa_status st = check_null(call, all, n_all);
    if (st != FA_OK) return st;
    if (!lse) return fa_diag_fail(FA_ERR_NULL, call, "lse is NULL: the backward needs the forward's log-sum-exp");
    if (params.dsinks && !params.sinks)
        return fa_diag_fail(FA_ERR_NULL, call, "p.sinks is NULL but p.dsinks asks for its gradient");
    if ((st = check_common(call, &params, nq, nk, nv, nout, all, n_all)) != FA_OK) return st;
    /* each gradient (and dout) has the shape of the tensor it belongs to */
    const named_view shaped_like[4][2] = {{ndout, nout}, {ndq, nq}, {ndk, nk}, {ndv, nv}};
    for (int i = 0; i < 4; i++)
        for (int axis = 0; axis < 4; axis++)
            if ((st = check_same(call, shaped_like[i][0], shaped_like[i][1], axis)) != FA_OK) return st;
    byte_range in_range[9], out_range[4];
    if ((st = check_strides(call, in, n_in, grads, 3, in_range, out_range)) != FA_OK) return st;
    if ((st = lse_extent(call, lse, q, &in_range[n_in++])) != FA_OK) return st;
    if ((st = per_head_input_ranges(call, &params, q->heads, in_range, &n_in)) != FA_OK) return st;
    if ((st = float_array_range(call, params.dsinks, q->heads, "p.dsinks", &out_range[3])) != FA_OK) return st;
    if ((st = check_alias(call, in_range, n_in, out_range, 4)) != FA_OK) return st;
    if ((st = check_supported(call, nq)) != FA_OK) return st;
    fill_problem(prob, &params, q, k, v, out, lse);
    prob->dsinks = params.dsinks;
    prob->dout = view_of(dout);
    prob->dq = view_of(dq);
    prob->dk = view_of(dk);
    prob->dv = view_of(dv);
    return FA_OK;
}
