/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_convert: every element of one view written into another of another dtype, with the rounding
 * the library's outputs get (kernels/half.h), for callers that hold no kernels of their own: the
 * MPI ring, users with bf16 activations, the tests. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "api/diagnostic.h"
#include "api/view_checks.h"
#include "flashattn.h"
#include "kernels/half.h"
#include "kernels/quant.h"

/* Elements converted per step through a float buffer on the stack. */
enum { CHUNK = 256 };

/* d rounded to float toward zero, its last bit set when that was inexact (rounding to odd). Float
 * keeps at least 13 bits more than bf16 or f16, so rounding this float to either once more gives
 * d rounded once to nearest even (Boldo and Melquiond, "When double rounding is odd"), where
 * (float)d would round twice. NaN and ±inf pass as (float)d makes them. */
static float to_float_odd(double d)
{
    float f = (float)d;
    if (!(fabs(d) <= DBL_MAX) || (double)f == d) return f;
    uint32_t u = fa_half_float_bits(f);
    if (fabs((double)f) > fabs(d)) u -= 1; /* rounded away from zero: one step back (inf: FLT_MAX) */
    return fa_half_bits_float(u | 1u);
}

/* n elements of a row of type t as floats (exact for every type but f64; f64 as to_float_odd when
 * `odd`, else rounded to nearest even). */
static void load_floats(float *to, const void *row, fa_dtype t, int64_t n, int odd)
{
    if (t == FA_F32) {
        memcpy(to, row, (size_t)n * sizeof *to);
    } else if (t == FA_F64) {
        const double *x = row;
        for (int64_t i = 0; i < n; i++) to[i] = odd ? to_float_odd(x[i]) : (float)x[i];
    } else {
        for (int64_t i = 0; i < n; i++) to[i] = fa_stored_to_f32(t, row, i);
    }
}

/* n floats into a row of type t (FA_F32, FA_BF16 or FA_F16), each rounded once. */
static void store_floats(void *row, fa_dtype t, const float *from, int64_t n)
{
    uint16_t *h = row;
    if (t == FA_F32)
        memcpy(row, from, (size_t)n * sizeof *from);
    else if (t == FA_BF16)
        for (int64_t i = 0; i < n; i++) h[i] = fa_bf16_from_f32(from[i]);
    else
        for (int64_t i = 0; i < n; i++) h[i] = fa_f16_from_f32(from[i]);
}

static void convert_row(void *to, fa_dtype tt, const void *from, fa_dtype ft, int64_t n)
{
    const size_t te = fa_dtype_size(tt), fe = fa_dtype_size(ft);
    if (tt == ft) { /* the bits as they are: NaN payloads, signalling NaNs and all */
        memcpy(to, from, (size_t)n * te);
        return;
    }
    float buf[CHUNK];
    for (int64_t at = 0; at < n; at += CHUNK) {
        int64_t len = n - at < CHUNK ? n - at : CHUNK;
        const char *src = (const char *)from + (size_t)at * fe;
        char *dst = (char *)to + (size_t)at * te;
        load_floats(buf, src, ft, len, tt != FA_F32);
        if (tt == FA_F64)
            for (int64_t i = 0; i < len; i++) ((double *)(void *)dst)[i] = (double)buf[i];
        else
            store_floats(dst, tt, buf, len);
    }
}

/* Every refusal of the header's list, in its order; nothing is written before all have passed. */
static fa_status check(const char *call, const fa_tensor *dst, const fa_tensor *src)
{
    const named_view nd = {dst, "dst"}, ns = {src, "src"}, both[2] = {nd, ns};
    fa_status st = fa_check_null(call, both, 2);
    if (st != FA_OK) return st;
    for (int x = 0; x < 2; x++) {
        fa_dtype t = both[x].t->dtype;
        if (t != FA_F32 && t != FA_F64 && t != FA_BF16 && t != FA_F16 && !fa_dtype_is_quantized(t))
            return fa_diag_fail(
                FA_ERR_DTYPE, call,
                "%s.dtype = %d: expected FA_F32, FA_F64, FA_BF16, FA_F16, FA_I8, FA_F8_E4M3 or "
                "FA_F8_E5M2",
                both[x].name, (int)t);
    }
    if (fa_dtype_is_quantized(dst->dtype))
        return fa_diag_fail(FA_ERR_DTYPE, call,
                            "dst.dtype = %s: quantized types are a source only (quantizing needs scales, "
                            "which fa_convert does not choose)",
                            fa_dtype_name(dst->dtype));
    for (int x = 0; x < 2; x++)
        for (int axis = 0; axis < 4; axis++)
            if (fa_size_of(both[x].t, axis) < 0)
                return fa_diag_fail(FA_ERR_SHAPE, call, "%s.%s = %lld: sizes must be >= 0", both[x].name,
                                    fa_size_names[axis], (long long)fa_size_of(both[x].t, axis));
    for (int axis = 0; axis < 4; axis++)
        if (fa_size_of(dst, axis) != fa_size_of(src, axis))
            return fa_diag_fail(FA_ERR_SHAPE, call, "dst.%s = %lld but src.%s = %lld: one shape",
                                fa_size_names[axis], (long long)fa_size_of(dst, axis), fa_size_names[axis],
                                (long long)fa_size_of(src, axis));
    byte_range in, out;
    if ((st = fa_check_strides(call, &ns, 1, &nd, 1, &in, &out)) != FA_OK) return st;
    return fa_check_alias(call, &in, 1, &out, 1);
}

fa_status fa_convert(const fa_tensor *dst, const fa_tensor *src)
{
    static const char call[] = "fa_convert";
    fa_diag_clear();
    fa_status st = check(call, dst, src);
    if (st != FA_OK || fa_is_empty(src)) return fa_diag_finish(st, call);
    const int64_t te = (int64_t)fa_dtype_size(dst->dtype), fe = (int64_t)fa_dtype_size(src->dtype);
    /* offsets in int64: fa_check_strides bounded every one by the views' byte counts */
    for (int64_t b = 0; b < src->batch; b++)
        for (int64_t h = 0; h < src->heads; h++)
            for (int64_t s = 0; s < src->seq; s++) {
                char *to = (char *)dst->data +
                           (b * dst->stride_batch + h * dst->stride_head + s * dst->stride_seq) * te;
                const char *from = (const char *)src->data +
                                   (b * src->stride_batch + h * src->stride_head + s * src->stride_seq) * fe;
                convert_row(to, dst->dtype, from, src->dtype, src->dim);
            }
    return fa_diag_finish(FA_OK, call);
}
