/* SPDX-License-Identifier: BSD-3-Clause */
/* Checks of views shared by every public call; see view_checks.h.
 *
 * Every check reads only the user's structs. Offsets and byte extents are computed in int64 with
 * overflow checks before anything is dereferenced, so a hostile shape cannot make the library
 * touch memory outside the views it was given. */
#include "api/view_checks.h"

#include "api/diagnostic.h"

size_t fa_dtype_size(fa_dtype t)
{
    switch (t) {
    case FA_F64: return 8;
    case FA_F32: return 4;
    case FA_BF16:
    case FA_F16: return 2;
    default: return 1; /* the quantized cache types (and nothing unknown ever reaches a size) */
    }
}

static int dtype_known(fa_dtype t)
{
    return t == FA_F32 || t == FA_F64 || t == FA_BF16 || t == FA_F16 || fa_dtype_is_quantized(t);
}

int fa_dtype_is_quantized(fa_dtype t)
{
    return t == FA_I8 || t == FA_F8_E4M3 || t == FA_F8_E5M2;
}

const char *fa_dtype_name(fa_dtype t)
{
    switch (t) {
    case FA_F32: return "FA_F32";
    case FA_F64: return "FA_F64";
    case FA_BF16: return "FA_BF16";
    case FA_F16: return "FA_F16";
    case FA_I8: return "FA_I8";
    case FA_F8_E4M3: return "FA_F8_E4M3";
    case FA_F8_E5M2: return "FA_F8_E5M2";
    }
    return "unknown";
}

/* What the diagnostics say a dtype must be. */
#define KNOWN_DTYPES "FA_F32, FA_F64, FA_BF16, FA_F16, FA_I8, FA_F8_E4M3 or FA_F8_E5M2"

int fa_is_empty(const fa_tensor *t)
{
    return t->batch == 0 || t->heads == 0 || t->seq == 0 || t->dim == 0;
}

static int null_data(const fa_tensor *t)
{
    return t->data == NULL && t->batch > 0 && t->heads > 0 && t->seq > 0 && t->dim > 0;
}

const char *const fa_size_names[4] = {"batch", "heads", "seq", "dim"};

int64_t fa_size_of(const fa_tensor *t, int axis)
{
    return axis == 0 ? t->batch : axis == 1 ? t->heads : axis == 2 ? t->seq : t->dim;
}
static const char *const stride_name[3] = {"stride_batch", "stride_head", "stride_seq"};

/* The byte range a non-empty view spans. On an int64 or address overflow, names the culprit: the
 * axis whose (size - 1)·stride term overflows the element offset or, when only the byte count
 * does, the largest term; the data pointer when only the address wraps. */
fa_status fa_view_extent(const char *call, named_view nv, byte_range *r)
{
    const fa_tensor *t = nv.t;
    r->begin = r->end = 0;
    r->view = t;
    r->name = nv.name;
    if (fa_is_empty(t)) return FA_OK;
    const int64_t size[3] = {t->batch, t->heads, t->seq};
    const int64_t stride[3] = {t->stride_batch, t->stride_head, t->stride_seq};
    int64_t last = t->dim - 1, term, largest = 0;
    int largest_axis = 0;
    for (int i = 0; i < 3; i++) {
        if (__builtin_mul_overflow(size[i] - 1, stride[i], &term) ||
            __builtin_add_overflow(last, term, &last))
            return fa_diag_fail(FA_ERR_STRIDE, call,
                                "%s.%s = %lld with %s.%s = %lld: the last element's offset overflows int64",
                                nv.name, stride_name[i], (long long)stride[i], nv.name, fa_size_names[i],
                                (long long)size[i]);
        if (term > largest) largest = term, largest_axis = i;
    }
    int64_t bytes;
    if (__builtin_add_overflow(last, 1, &bytes) ||
        __builtin_mul_overflow(bytes, (int64_t)fa_dtype_size(t->dtype), &bytes))
        return fa_diag_fail(FA_ERR_STRIDE, call,
                            "%s.%s = %lld with %s.%s = %lld: the view's byte count overflows int64", nv.name,
                            stride_name[largest_axis], (long long)stride[largest_axis], nv.name,
                            fa_size_names[largest_axis], (long long)size[largest_axis]);
    uintptr_t begin = (uintptr_t)t->data, end;
    if (__builtin_add_overflow(begin, (uintptr_t)bytes, &end))
        return fa_diag_fail(FA_ERR_STRIDE, call,
                            "%s.data = %p: the view's %lld bytes wrap around the address space", nv.name,
                            t->data, (long long)bytes);
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
    if (fa_is_empty(t)) return -1;
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

/* ---- shared steps; each call composes them in the documented order ---- */

fa_status fa_check_null(const char *call, const named_view *t, int n)
{
    for (int i = 0; i < n; i++)
        if (!t[i].t) return fa_diag_fail(FA_ERR_NULL, call, "%s is NULL", t[i].name);
    for (int i = 0; i < n; i++)
        if (null_data(t[i].t))
            return fa_diag_fail(FA_ERR_NULL, call,
                                "%s.data is NULL but the view has %lld x %lld x %lld x %lld elements",
                                t[i].name, (long long)t[i].t->batch, (long long)t[i].t->heads,
                                (long long)t[i].t->seq, (long long)t[i].t->dim);
    return FA_OK;
}

fa_status fa_check_dtypes(const char *call, const named_view *t, int n)
{
    for (int i = 0; i < n; i++) {
        if (!dtype_known(t[i].t->dtype))
            return fa_diag_fail(FA_ERR_DTYPE, call, "%s.dtype = %d: expected " KNOWN_DTYPES, t[i].name,
                                (int)t[i].t->dtype);
        if (fa_dtype_is_quantized(t[i].t->dtype))
            return fa_diag_fail(
                FA_ERR_DTYPE, call,
                "%s.dtype = %s: quantized types are a KV cache's storage (fa_forward's k and v)", t[i].name,
                fa_dtype_name(t[i].t->dtype));
    }
    for (int i = 1; i < n; i++)
        if (t[i].t->dtype != t[0].t->dtype)
            return fa_diag_fail(FA_ERR_DTYPE, call, "%s.dtype = %s but %s.dtype = %s: one call has one dtype",
                                t[i].name, fa_dtype_name(t[i].t->dtype), t[0].name,
                                fa_dtype_name(t[0].t->dtype));
    return FA_OK;
}

/* The pair a call's dtypes may form: one compute or half type throughout, or f32 queries over a
 * half-precision or quantized KV cache. */
static int dtype_pair_allowed(fa_dtype q, fa_dtype k)
{
    if (q == k) return !fa_dtype_is_quantized(q);
    return q == FA_F32 && (k == FA_BF16 || k == FA_F16 || fa_dtype_is_quantized(k));
}

fa_status fa_check_call_dtypes(const char *call, const named_view *t, const int *leader, int n)
{
    for (int i = 0; i < n; i++)
        if (!dtype_known(t[i].t->dtype))
            return fa_diag_fail(FA_ERR_DTYPE, call, "%s.dtype = %d: expected " KNOWN_DTYPES, t[i].name,
                                (int)t[i].t->dtype);
    const fa_dtype q = t[0].t->dtype, k = t[1].t->dtype;
    if (!dtype_pair_allowed(q, k))
        return fa_diag_fail(
            FA_ERR_DTYPE, call,
            "%s.dtype = %s but %s.dtype = %s: q and k share a dtype (not a quantized one), or q "
            "is FA_F32 over a FA_BF16, FA_F16, FA_I8, FA_F8_E4M3 or FA_F8_E5M2 k (a KV cache)",
            t[1].name, fa_dtype_name(k), t[0].name, fa_dtype_name(q));
    const fa_dtype accum = q == FA_F64 ? FA_F64 : FA_F32;
    /* the view FA_LEADER_K_OR_PARTIAL follows when it holds f32 partial results of a half q, else k */
    int partial = 1;
    for (int i = 2; i < n; i++)
        if (leader[i] == FA_LEADER_Q_OR_ACCUM) {
            if ((q == FA_BF16 || q == FA_F16) && t[i].t->dtype == FA_F32) partial = i;
            break;
        }
    for (int i = 2; i < n; i++) {
        if (leader[i] == FA_LEADER_ACCUM) {
            if (t[i].t->dtype != accum)
                return fa_diag_fail(FA_ERR_DTYPE, call,
                                    "%s.dtype = %s but %s.dtype = %s: it must be the accumulation type, %s",
                                    t[i].name, fa_dtype_name(t[i].t->dtype), t[0].name, fa_dtype_name(q),
                                    fa_dtype_name(accum));
            continue;
        }
        if (leader[i] == FA_LEADER_Q_OR_ACCUM && t[i].t->dtype == accum) continue;
        const named_view *lead = &t[leader[i] == FA_LEADER_Q_OR_ACCUM     ? 0
                                    : leader[i] == FA_LEADER_K_OR_PARTIAL ? partial
                                                                          : leader[i]];
        if (t[i].t->dtype != lead->t->dtype && leader[i] == FA_LEADER_Q_OR_ACCUM)
            return fa_diag_fail(FA_ERR_DTYPE, call,
                                "%s.dtype = %s but %s.dtype = %s: %s has the dtype of %s or the accumulation "
                                "type, %s",
                                t[i].name, fa_dtype_name(t[i].t->dtype), lead->name,
                                fa_dtype_name(lead->t->dtype), t[i].name, lead->name, fa_dtype_name(accum));
        if (t[i].t->dtype != lead->t->dtype)
            return fa_diag_fail(FA_ERR_DTYPE, call, "%s.dtype = %s but %s.dtype = %s: %s has the dtype of %s",
                                t[i].name, fa_dtype_name(t[i].t->dtype), lead->name,
                                fa_dtype_name(lead->t->dtype), t[i].name, lead->name);
    }
    return FA_OK;
}

/* Strides of every view, then the byte range each spans; outputs must not overlap themselves. */
fa_status fa_check_strides(const char *call, const named_view *in, int n_in, const named_view *out, int n_out,
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
        if (!fa_is_empty(t) && (uintptr_t)t->data % fa_dtype_size(t->dtype) != 0)
            return fa_diag_fail(FA_ERR_STRIDE, call, "%s.data = %p: not aligned to its %zu-byte elements",
                                nv.name, t->data, fa_dtype_size(t->dtype));
        if ((st = fa_view_extent(call, nv, r)) != FA_OK) return st;
    }
    for (int i = 0; i < n_out; i++) {
        int axis = overlaps_itself(out[i].t);
        if (axis >= 0) {
            const int64_t stride[3] = {out[i].t->stride_batch, out[i].t->stride_head, out[i].t->stride_seq};
            return fa_diag_fail(
                FA_ERR_STRIDE, call,
                "%s.%s = %lld: the output overlaps itself (the stride does not clear what the "
                "smaller-strided axes span)",
                out[i].name, stride_name[axis], (long long)stride[axis]);
        }
    }
    return FA_OK;
}

/* The lse's range: contiguous [B][Hq][Nq] values of the accumulation type. */
fa_status fa_lse_extent(const char *call, const void *lse, const fa_tensor *q, const char *name,
                        byte_range *r)
{
    r->begin = r->end = 0;
    r->view = NULL;
    r->name = name;
    if (!lse || fa_is_empty(q)) return FA_OK;
    size_t elem = q->dtype == FA_F64 ? 8u : 4u, bytes = (size_t)(q->batch * q->heads * q->seq) * elem;
    if ((uintptr_t)lse % elem != 0)
        return fa_diag_fail(FA_ERR_STRIDE, call, "%s = %p: not aligned to its %zu-byte elements", name, lse,
                            elem);
    r->begin = (uintptr_t)lse;
    if (__builtin_add_overflow(r->begin, (uintptr_t)bytes, &r->end))
        return fa_diag_fail(FA_ERR_STRIDE, call, "%s = %p: its %zu bytes wrap around the address space", name,
                            lse, bytes);
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
    int64_t e = (int64_t)fa_dtype_size(a->dtype);
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
fa_status fa_check_alias(const char *call, const byte_range *in, int n_in, const byte_range *out, int n_out)
{
    for (int o = 0; o < n_out; o++) {
        for (int i = 0; i < n_in; i++)
            if (may_share_bytes(out[o], in[i])) return alias_error(call, out[o], in[i]);
        for (int j = o + 1; j < n_out; j++)
            if (may_share_bytes(out[o], out[j])) return alias_error(call, out[o], out[j]);
    }
    return FA_OK;
}

/* The byte range of n floats of a per-head array (alibi_slopes, sinks, dsinks); NULL spans nothing. */
fa_status fa_array_range(const char *call, const void *a, int64_t n, size_t elem, const char *name,
                         byte_range *r)
{
    r->begin = r->end = 0;
    r->view = NULL;
    r->name = name;
    if (!a || n <= 0) return FA_OK;
    if ((uintptr_t)a % elem != 0)
        return fa_diag_fail(FA_ERR_STRIDE, call, "%s = %p: not aligned to its %zu-byte elements", name, a,
                            elem);
    r->begin = (uintptr_t)a;
    uintptr_t bytes;
    if (__builtin_mul_overflow((uintptr_t)n, (uintptr_t)elem, &bytes) ||
        __builtin_add_overflow(r->begin, bytes, &r->end))
        return fa_diag_fail(FA_ERR_STRIDE, call, "%s = %p: its %lld elements wrap around the address space",
                            name, a, (long long)n);
    return FA_OK;
}
