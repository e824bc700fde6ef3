/* SPDX-License-Identifier: BSD-3-Clause */
// The element types from their definitions; see dtype.h.
#include "dtype.h"

#include <math.h>
#include <string.h>

size_t kit_dtype_size(fa_dtype t)
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

int kit_dtype_is_half(fa_dtype t)
{
    return t == FA_BF16 || t == FA_F16;
}

int kit_dtype_is_quantized(fa_dtype t)
{
    return t == FA_I8 || t == FA_F8_E4M3 || t == FA_F8_E5M2;
}

fa_dtype kit_accum_dtype(fa_dtype q)
{
    return q == FA_F64 ? FA_F64 : FA_F32;
}

double kit_unit_roundoff(fa_dtype t)
{
    switch (t) {
    case FA_F64: return 0x1p-53;
    case FA_BF16: return 0x1p-8;
    case FA_F16: return 0x1p-11;
    default: return 0x1p-24;
    }
}

uint32_t kit_float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

float kit_bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

// |x| rounded to p significant bits, ties to even, with normal exponents from emin down (below
// 2^emin the quantum stays 2^(emin - p + 1): subnormals). Exact in double for every p <= 24 and x a
// float: a / q is a power-of-two scaling and rint rounds to nearest even in the default mode.
static double round_magnitude(double a, int p, int emin)
{
    int e2;
    frexp(a, &e2); // a = f · 2^e2, f in [0.5, 1): the leading bit is 2^(e2 - 1)
    int e = e2 - 1 < emin ? emin : e2 - 1;
    double q = ldexp(1.0, e - p + 1);
    return rint(a / q) * q;
}

// bfloat16 is binary32 without its low 16 mantissa bits: 8 significant bits, float's exponents.
float kit_bf16_to_f32(uint16_t h)
{
    return kit_bits_float((uint32_t)h << 16);
}

uint16_t kit_bf16_from_f32(float f)
{
    uint32_t u = kit_float_bits(f), sign = (u >> 16) & 0x8000u;
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x0040u); // quiet, sign and top payload bits kept
    double a = fabs((double)f);
    if (isinf(f) || a == 0.0) return (uint16_t)(u >> 16);
    double r = round_magnitude(a, 8, -126);
    if (r > 0x1.fep127) return (uint16_t)(sign | 0x7f80u);      // above the largest finite bf16: inf
    return (uint16_t)(sign | (kit_float_bits((float)r) >> 16)); // r is a bf16 value, so a float
}

// binary16: 1 sign, 5 exponent bits (bias 15), 10 mantissa bits; exponent 0 holds m · 2^-24.
float kit_f16_to_f32(uint16_t h)
{
    unsigned e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    float sign = (h & 0x8000u) ? -1.0f : 1.0f;
    if (e == 0x1f) {
        if (!m) return sign * INFINITY;
        return kit_bits_float(((uint32_t)(h & 0x8000u) << 16) | 0x7fc00000u | ((uint32_t)m << 13));
    }
    if (e == 0) return sign * (float)ldexp((double)m, -24);
    return sign * (float)ldexp(1.0 + (double)m / 1024.0, (int)e - 15);
}

uint16_t kit_f16_from_f32(float f)
{
    uint32_t u = kit_float_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    if (isnan(f)) return (uint16_t)(sign | 0x7e00u | ((u >> 13) & 0x3ffu));
    double a = fabs((double)f);
    if (a == 0.0) return sign;
    double r = isinf(f) ? INFINITY : round_magnitude(a, 11, -14);
    if (r > 65504.0) return (uint16_t)(sign | 0x7c00u);
    if (r < 0x1p-14) return (uint16_t)(sign | (unsigned)ldexp(r, 24)); // subnormal (or 2^-14 itself)
    int e2;
    double f2 = frexp(r, &e2); // r = f2 · 2^e2 = (2 f2) · 2^(e2 - 1)
    unsigned m = (unsigned)ldexp(2.0 * f2 - 1.0, 10);
    return (uint16_t)(sign | ((unsigned)(e2 - 1 + 15) << 10) | m);
}

// An OFP8 code with `mant` mantissa bits and exponent bias `bias`: normal values (1 + m/2^mant) ·
// 2^(field - bias) for fields 1.., subnormals m · 2^(1 - bias - mant).
static float decode_fp8(uint8_t x, int mant, int bias)
{
    unsigned field = (x & 0x7fu) >> mant, m = x & ((1u << mant) - 1u);
    double v =
        field ? ldexp(1.0 + ldexp((double)m, -mant), (int)field - bias) : ldexp((double)m, 1 - bias - mant);
    return (float)((x & 0x80u) ? -v : v);
}

float kit_code_to_f32(fa_dtype t, uint8_t code)
{
    switch (t) {
    case FA_F8_E4M3:
        if ((code & 0x7fu) == 0x7fu) // S.1111.111, its only NaN
            return kit_bits_float(((uint32_t)(code & 0x80u) << 24) | 0x7fc00000u);
        return decode_fp8(code, 3, 7);
    case FA_F8_E5M2:
        if ((code & 0x7cu) == 0x7cu) { // exponent 11111: inf (mantissa 0) or NaN
            if (code & 0x03u)
                return kit_bits_float(((uint32_t)(code & 0x80u) << 24) | 0x7fc00000u |
                                      ((uint32_t)(code & 0x03u) << 21));
            return (code & 0x80u) ? -INFINITY : INFINITY;
        }
        return decode_fp8(code, 2, 15);
    default: return (float)(int8_t)code;
    }
}

double kit_quant_code_max(fa_dtype t)
{
    switch (t) {
    case FA_F8_E4M3: return 448.0;   // S.1111.110: 1.75 · 2^8 (S.1111.111 is NaN)
    case FA_F8_E5M2: return 57344.0; // S.11110.11: 1.75 · 2^15 (exponent 11111 is inf and NaN)
    default: return 127.0;           // symmetric: -128 is never produced
    }
}

// rint rounds to nearest even in the default mode, the mode the tests and fa-bench run in.
static uint8_t encode_fp8(double x, int mant, int bias, unsigned max_code, double max_value)
{
    unsigned sign = signbit(x) ? 0x80u : 0u;
    double a = fabs(x);
    if (isnan(x)) return (uint8_t)(sign | 0x7fu); // a NaN in both formats
    if (a >= max_value) return (uint8_t)(sign | max_code);
    if (a == 0.0) return (uint8_t)sign;
    int e2;
    frexp(a, &e2); // a = f · 2^e2, f in [0.5, 1): the leading bit is 2^(e2 - 1)
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

uint8_t kit_quant_encode(fa_dtype t, double x)
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

float kit_quantize_row(fa_dtype t, const float *x, int64_t n, uint8_t *codes)
{
    double amax = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (fabs((double)x[i]) > amax) amax = fabs((double)x[i]);
    float scale = amax > 0.0 ? (float)(amax / kit_quant_code_max(t)) : 1.0f;
    for (int64_t i = 0; i < n; i++) codes[i] = kit_quant_encode(t, (double)x[i] / (double)scale);
    return scale;
}

float kit_quant_value(fa_dtype t, const void *codes, int64_t x, float scale)
{
    return scale * kit_code_to_f32(t, ((const uint8_t *)codes)[x]);
}

double kit_round(fa_dtype t, double x)
{
    switch (t) {
    case FA_F64: return x;
    case FA_BF16: return (double)kit_bf16_to_f32(kit_bf16_from_f32((float)x));
    case FA_F16: return (double)kit_f16_to_f32(kit_f16_from_f32((float)x));
    default: return (double)(float)x;
    }
}

double kit_load(fa_dtype t, const void *data, int64_t index)
{
    uint16_t h;
    switch (t) {
    case FA_F64: return ((const double *)data)[index];
    case FA_BF16: memcpy(&h, (const uint16_t *)data + index, sizeof h); return (double)kit_bf16_to_f32(h);
    case FA_F16: memcpy(&h, (const uint16_t *)data + index, sizeof h); return (double)kit_f16_to_f32(h);
    case FA_I8:
    case FA_F8_E4M3:
    case FA_F8_E5M2: return (double)kit_code_to_f32(t, ((const uint8_t *)data)[index]);
    default: return (double)((const float *)data)[index];
    }
}

void kit_store(fa_dtype t, void *data, int64_t index, double x)
{
    switch (t) {
    case FA_F64: ((double *)data)[index] = x; break;
    case FA_BF16: ((uint16_t *)data)[index] = kit_bf16_from_f32((float)x); break;
    case FA_F16: ((uint16_t *)data)[index] = kit_f16_from_f32((float)x); break;
    case FA_I8:
    case FA_F8_E4M3:
    case FA_F8_E5M2: ((uint8_t *)data)[index] = kit_quant_encode(t, x); break;
    default: ((float *)data)[index] = (float)x; break;
    }
}

double kit_tensor_load(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d)
{
    return kit_load(t->dtype, t->data, b * t->stride_batch + h * t->stride_head + s * t->stride_seq + d);
}

void kit_tensor_store(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d, double x)
{
    kit_store(t->dtype, t->data, b * t->stride_batch + h * t->stride_head + s * t->stride_seq + d, x);
}
