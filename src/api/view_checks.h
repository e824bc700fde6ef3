/* SPDX-License-Identifier: BSD-3-Clause */
/* Checks of fa_tensor views and plain arrays that every public call shares: NULL data, dtypes,
 * strides and the byte range each view spans, and whether outputs overlap inputs or each other.
 * Each refusal names the call and the argument in the thread's diagnostic (diagnostic.h); the
 * calls compose these in the documented order (validate.c). */
#ifndef FA_VIEW_CHECKS_H
#define FA_VIEW_CHECKS_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"

/* A tensor argument and the name the diagnostics give it ("q", "dout", ...). */
typedef struct {
    const fa_tensor *t;
    const char *name;
} named_view;

/* The byte range [begin, end) a view spans; an empty view spans nothing. */
typedef struct {
    uintptr_t begin, end;
    const fa_tensor *view; /* the view spanning it, or NULL for a plain contiguous range (lse) */
    const char *name;
} byte_range;

/* "batch", "heads", "seq", "dim": axis names for the diagnostics, in fa_tensor's order. */
extern const char *const fa_size_names[4];

size_t fa_dtype_size(fa_dtype t);                 /* bytes per element; 2 for the half types, 1 quantized */
int fa_dtype_is_quantized(fa_dtype t);            /* FA_I8, FA_F8_E4M3, FA_F8_E5M2: KV-cache storage only */
const char *fa_dtype_name(fa_dtype t);            /* "FA_F32", ..., or "unknown" */
int fa_is_empty(const fa_tensor *t);              /* a size of 0: no element */
int64_t fa_size_of(const fa_tensor *t, int axis); /* axis 0..3: batch, heads, seq, dim */

/* The byte range a non-empty view spans; FA_ERR_STRIDE naming the culprit on any overflow. */
fa_status fa_view_extent(const char *call, named_view nv, byte_range *r);

/* FA_ERR_NULL for a NULL view, then for NULL data of a non-empty one. */
fa_status fa_check_null(const char *call, const named_view *t, int n);

/* FA_ERR_DTYPE for an unknown dtype, then for one that differs from the first view's. */
fa_status fa_check_dtypes(const char *call, const named_view *t, int n);

/* The dtypes of a forward or backward call, t[0] = q and t[1] = k, FA_ERR_DTYPE naming the first
 * that breaks the contract (flashattn.h, fa_forward): every dtype known; (q, k) one type, or f32 q
 * over bf16/f16 k; then each t[i], i >= 2, in order: the dtype of t[leader[i]] (0: q's group,
 * 1: k's), or, for FA_LEADER_ACCUM (the bias), the accumulation type (FA_F64 for FA_F64 q, else FA_F32),
 * or, for FA_LEADER_Q_OR_ACCUM (the forward's out, the backward's dq), either q's dtype or the
 * accumulation type, or, for FA_LEADER_K_OR_PARTIAL (the backward's dk and dv), k's dtype, or the
 * dtype of the first FA_LEADER_Q_OR_ACCUM view when q is FA_BF16 or FA_F16 and that view is FA_F32
 * (f32 partial gradients come all three together). */
enum { FA_LEADER_ACCUM = -1, FA_LEADER_Q_OR_ACCUM = -2, FA_LEADER_K_OR_PARTIAL = -3 };
fa_status fa_check_call_dtypes(const char *call, const named_view *t, const int *leader, int n);

/* Strides of every view (>= 0, element-aligned data, no overflow), filling the byte ranges; then
 * FA_ERR_STRIDE for an output that overlaps itself. */
fa_status fa_check_strides(const char *call, const named_view *in, int n_in, const named_view *out, int n_out,
                           byte_range *in_range, byte_range *out_range);

/* The range of an lse (named `name`): contiguous [B][Hq][Nq] values of the accumulation type of q's dtype. */
fa_status fa_lse_extent(const char *call, const void *lse, const fa_tensor *q, const char *name,
                        byte_range *r);

/* The range of n elements of elem bytes of a plain array (per-head floats, offsets, page tables);
 * NULL spans nothing. FA_ERR_STRIDE when misaligned or wrapping. */
fa_status fa_array_range(const char *call, const void *a, int64_t n, size_t elem, const char *name,
                         byte_range *r);

/* FA_ERR_ALIAS when an output may share a byte with an input or another output (row-interleaved
 * views whose columns are disjoint modulo the row width share none). */
fa_status fa_check_alias(const char *call, const byte_range *in, int n_in, const byte_range *out, int n_out);

#endif
