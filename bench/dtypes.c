/* SPDX-License-Identifier: BSD-3-Clause */
// Element sizes, loads and stores of the dtypes, half and quantized types through the library's own
// conversions (src/kernels/half.h, quant.h) so fa-bench rounds and reads exactly as the library does.
#include "dtypes.h"

#include <stdio.h>

#include "kernels/half.h"
#include "kernels/quant.h"
#include "kv_quant.h"

size_t bench_dtype_size(fa_dtype t)
{
    switch (t) {
    case FA_F64: return sizeof(double);
    case FA_BF16:
    case FA_F16: return sizeof(uint16_t);
    case FA_I8:
    case FA_F8_E4M3:
    case FA_F8_E5M2: return 1;
    default: return sizeof(float);
    }
}

int bench_dtype_is_half(fa_dtype t)
{
    return t == FA_BF16 || t == FA_F16;
}

int bench_dtype_is_quantized(fa_dtype t)
{
    return t == FA_I8 || t == FA_F8_E4M3 || t == FA_F8_E5M2;
}

double bench_kv_row_bytes(fa_dtype t, int64_t n)
{
    return (double)n * (double)bench_dtype_size(t) +
           (bench_dtype_is_quantized(t) ? (double)sizeof(float) : 0.0);
}

fa_dtype bench_accum_dtype(fa_dtype q)
{
    return q == FA_F64 ? FA_F64 : FA_F32;
}

double bench_dtype_unit_roundoff(fa_dtype t)
{
    switch (t) {
    case FA_F64: return 0x1p-53;
    case FA_BF16: return 0x1p-8;
    case FA_F16: return 0x1p-11;
    default: return 0x1p-24;
    }
}

int bench_dtype_pair_ok(fa_dtype q, fa_dtype k)
{
    if (bench_dtype_is_quantized(q)) return 0;
    return q == k || (q == FA_F32 && (bench_dtype_is_half(k) || bench_dtype_is_quantized(k)));
}

double bench_load(fa_dtype t, const void *data, int64_t index)
{
    switch (t) {
    case FA_F64: return ((const double *)data)[index];
    case FA_BF16: return (double)fa_bf16_to_f32(((const uint16_t *)data)[index]);
    case FA_F16: return (double)fa_f16_to_f32(((const uint16_t *)data)[index]);
    case FA_I8:
    case FA_F8_E4M3:
    case FA_F8_E5M2: return (double)fa_stored_to_f32(t, data, index);
    default: return (double)((const float *)data)[index];
    }
}

void bench_store(fa_dtype t, void *data, int64_t index, double x)
{
    switch (t) {
    case FA_F64: ((double *)data)[index] = x; break;
    case FA_BF16: ((uint16_t *)data)[index] = fa_bf16_from_f32((float)x); break;
    case FA_F16: ((uint16_t *)data)[index] = fa_f16_from_f32((float)x); break;
    case FA_I8:
    case FA_F8_E4M3:
    case FA_F8_E5M2: ((uint8_t *)data)[index] = bench_kv_encode(t, x); break;
    default: ((float *)data)[index] = (float)x; break;
    }
}

double bench_tensor_load(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d)
{
    return bench_load(t->dtype, t->data, b * t->stride_batch + h * t->stride_head + s * t->stride_seq + d);
}

void bench_dtypes_words(const bench_shape *s, char *out, size_t size)
{
    if (s->kv_dtype == s->dtype)
        snprintf(out, size, "%s", bench_dtype_name(s->dtype));
    else if (bench_dtype_is_quantized(s->kv_dtype))
        snprintf(out, size, "%s, k/v %s + row scales", bench_dtype_name(s->dtype),
                 bench_dtype_name(s->kv_dtype));
    else
        snprintf(out, size, "%s, k/v %s", bench_dtype_name(s->dtype), bench_dtype_name(s->kv_dtype));
}
