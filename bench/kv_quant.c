/* SPDX-License-Identifier: BSD-3-Clause */
// Quantizing an f32 KV cache row by row: int8 and OCP FP8 encoders (the decoders are the library's,
// src/kernels/quant.h, so the oracle reads what the library reads).
#include "kv_quant.h"

#include <math.h>

#include "kernels/quant.h"

double bench_kv_code_max(fa_dtype t)
{
    switch (t) {
    case FA_F8_E4M3: return 448.0;   // S.1111.110: 1.75 * 2^8 (S.1111.111 is NaN)
    case FA_F8_E5M2: return 57344.0; // S.11110.11: 1.75 * 2^15 (exponent 11111 is inf and NaN)
    default: return 127.0;           // symmetric: -128 is never produced
    }
}

// An OCP FP8 code with `mant` mantissa bits and exponent bias `bias`: normal values are
// 1.m * 2^(field - bias) for fields 1.., subnormals m * 2^(1 - bias - mant). rint rounds to nearest
// even in the default mode, the mode fa-bench runs in.
static uint8_t encode_fp8(double x, int mant, int bias, unsigned max_code, double max_value)
{
    unsigned sign = signbit(x) ? 0x80u : 0u;
    double a = fabs(x);
    if (isnan(x)) return (uint8_t)(sign | 0x7fu); // a NaN in both formats
    if (a >= max_value) return (uint8_t)(sign | max_code);
    if (a == 0.0) return (uint8_t)sign;
    int e2;
    frexp(a, &e2); // a = f * 2^e2, f in [0.5, 1): the leading bit is 2^(e2 - 1)
    int exponent = e2 - 1, min_exponent = 1 - bias;
    if (exponent < min_exponent) {
        // a subnormal step count; 2^mant (a rounding up to the smallest normal) is that normal's code
        double steps = rint(ldexp(a, mant - min_exponent));
        return (uint8_t)(sign | (unsigned)steps);
    }
    double m = rint(ldexp(a, mant - exponent)); // 2^mant .. 2^(mant+1)
    if (m == ldexp(1.0, mant + 1)) {
        m = ldexp(1.0, mant);
        exponent++;
    }
    unsigned code = ((unsigned)(exponent + bias) << mant) | ((unsigned)m - (1u << mant));
    return (uint8_t)(sign | (code > max_code ? max_code : code)); // rounded past the largest: saturate
}

uint8_t bench_kv_encode(fa_dtype t, double x)
{
    switch (t) {
    case FA_F8_E4M3: return encode_fp8(x, 3, 7, 0x7eu, 448.0);
    case FA_F8_E5M2: return encode_fp8(x, 2, 15, 0x7bu, 57344.0);
    default: {
        if (isnan(x)) return 0;
        double r = rint(x);
        r = r > 127.0 ? 127.0 : r < -127.0 ? -127.0 : r;
        return (uint8_t)(int8_t)r;
    }
    }
}

float bench_kv_quantize_row(fa_dtype t, const float *x, int64_t n, uint8_t *codes)
{
    double amax = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (fabs((double)x[i]) > amax) amax = fabs((double)x[i]);
    float scale = amax > 0.0 ? (float)(amax / bench_kv_code_max(t)) : 1.0f;
    for (int64_t i = 0; i < n; i++) codes[i] = bench_kv_encode(t, (double)x[i] / (double)scale);
    return scale;
}

float bench_kv_value(fa_dtype t, const void *codes, int64_t x, float scale)
{
    return fa_stored_value(t, codes, x, &scale);
}
