/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_convert (include/flashattn.h): every element of src into dst, with the library's rounding.
 *
 * - From bf16 and f16, every one of the 65536 codes: widened to f32 and f64 with the bits of
 *   kernels/half.h's scalar widening (test_half_rounding.c holds those to the formats' fields), and
 *   to the other half type as that float rounded once by the scalar narrowing.
 * - Round trips: each code widened and narrowed back is itself; a NaN comes back quiet, its sign
 *   and the top of its payload kept.
 * - From f32: the scalar narrowing's bits over every midpoint between adjacent half values (a tie:
 *   the even neighbour wins), its float neighbours and random bit patterns, and the value a float64
 *   reference rounds to nearest even (ldexp and nearbyint on the format's fields).
 * - From f64: rounded once, to the float64 reference, where rounding to f32 first would round twice
 *   (just above and below each midpoint); to f32 as C's (float) conversion.
 * - From the quantized types, all 256 codes: the scalar value, exactly, no scale.
 * - Views: strided and broadcast (stride 0) src, padded dst; the padding between rows is not
 *   written. One dtype: the bytes, a signalling NaN included.
 * The refusals are rows of the error-exit table (error_exit_convert.c). */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "api/view_checks.h" /* fa_dtype_name */
#include "kernels/half.h"
#include "kernels/quant.h"
#include "util.h"

enum { CODES = 65536 };

static const fa_dtype halves[2] = {FA_BF16, FA_F16};

static float widen(fa_dtype t, uint16_t c)
{
    return t == FA_BF16 ? fa_bf16_to_f32(c) : fa_f16_to_f32(c);
}

static uint16_t narrow(fa_dtype t, float f)
{
    return t == FA_BF16 ? fa_bf16_from_f32(f) : fa_f16_from_f32(f);
}

/* n elements as one contiguous [1][1][1][n] view. */
static fa_tensor row(void *data, fa_dtype t, int64_t n)
{
    return fa_tensor_bhsd(data, t, 1, 1, 1, n);
}

static void convert_ok(void *to, fa_dtype tt, const void *from, fa_dtype ft, int64_t n)
{
    fa_tensor dst = row(to, tt, n), src = row((void *)(uintptr_t)from, ft, n);
    cr_assert_eq(fa_convert(&dst, &src), FA_OK, "%s", fa_last_error());
    cr_assert_str_empty(fa_last_error());
}

static uint64_t bits64(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static int is_nan_code(fa_dtype t, uint16_t c)
{
    return t == FA_BF16 ? (c & 0x7fffu) > 0x7f80u : (c & 0x7fffu) > 0x7c00u;
}

/* The quiet bit of a half NaN code. */
static uint16_t quiet_bit(fa_dtype t)
{
    return t == FA_BF16 ? 0x0040u : 0x0200u;
}

/* x rounded to nearest, ties to even, to the binary format with `mant` stored mantissa bits, smallest
 * normal exponent emin and largest finite value max, in float64 arithmetic: the value scaled by its
 * ulp (a power of two: exact), rounded to an integer by nearbyint (the default mode, to nearest even),
 * scaled back; past max after rounding, ±inf. */
static double reference_round(double x, int mant, int emin, double max)
{
    if (isnan(x) || isinf(x) || x == 0.0) return x;
    int e = ilogb(fabs(x));
    if (e < emin) e = emin;
    double ulp = ldexp(1.0, e - mant), y = nearbyint(fabs(x) / ulp) * ulp;
    return copysign(y > max ? INFINITY : y, x);
}

static double reference_half(fa_dtype t, double x)
{
    return t == FA_BF16 ? reference_round(x, 7, -126, 0x1.fep127) : reference_round(x, 10, -14, 65504.0);
}

Test(convert, half_codes_widen_to_the_scalar_bits)
{
    static uint16_t codes[CODES], other[CODES];
    static float f[CODES];
    static double d[CODES];
    for (int c = 0; c < CODES; c++) codes[c] = (uint16_t)c;
    for (int x = 0; x < 2; x++) {
        fa_dtype t = halves[x], u = halves[1 - x];
        convert_ok(f, FA_F32, codes, t, CODES);
        convert_ok(d, FA_F64, codes, t, CODES);
        convert_ok(other, u, codes, t, CODES);
        for (int c = 0; c < CODES; c++) {
            float want = widen(t, (uint16_t)c);
            cr_assert_eq(fa_half_float_bits(f[c]), fa_half_float_bits(want),
                         "%s 0x%04x to f32: 0x%08x, want 0x%08x", fa_dtype_name(t), c,
                         fa_half_float_bits(f[c]), fa_half_float_bits(want));
            if (is_nan_code(t, (uint16_t)c)) { /* f64 NaNs: NaN, sign kept, quiet */
                cr_assert(isnan(d[c]) && !!signbit(d[c]) == !!signbit(want) && (bits64(d[c]) >> 51 & 1),
                          "%s 0x%04x to f64: 0x%016llx", fa_dtype_name(t), c,
                          (unsigned long long)bits64(d[c]));
            } else {
                cr_assert_eq(bits64(d[c]), bits64((double)want), "%s 0x%04x to f64", fa_dtype_name(t), c);
            }
            uint16_t once = narrow(u, want); /* exact in f32, so rounded once */
            cr_assert_eq(other[c], once, "%s 0x%04x to %s: 0x%04x, want 0x%04x", fa_dtype_name(t), c,
                         fa_dtype_name(u), other[c], once);
        }
    }
}

Test(convert, half_codes_round_trip_and_nans_come_back_quiet)
{
    static uint16_t codes[CODES], back[CODES];
    static float f[CODES];
    static double d[CODES];
    for (int c = 0; c < CODES; c++) codes[c] = (uint16_t)c;
    for (int x = 0; x < 2; x++) {
        fa_dtype t = halves[x];
        for (int via = 0; via < 2; via++) { /* through f32, through f64 */
            if (via == 0) {
                convert_ok(f, FA_F32, codes, t, CODES);
                convert_ok(back, t, f, FA_F32, CODES);
            } else {
                convert_ok(d, FA_F64, codes, t, CODES);
                convert_ok(back, t, d, FA_F64, CODES);
            }
            for (int c = 0; c < CODES; c++) {
                uint16_t want = is_nan_code(t, (uint16_t)c) ? (uint16_t)(c | quiet_bit(t)) : (uint16_t)c;
                cr_assert_eq(back[c], want, "%s 0x%04x through %s: 0x%04x, want 0x%04x", fa_dtype_name(t), c,
                             via ? "f64" : "f32", back[c], want);
            }
        }
    }
}

/* The value one ulp above finite code c of t: past the largest finite value, the power of two that
 * would come next (their midpoint is where rounding overflows to inf). */
static double next_up(fa_dtype t, uint16_t c)
{
    const uint16_t last = t == FA_BF16 ? 0x7f7f : 0x7bff;
    return c < last ? (double)widen(t, (uint16_t)(c + 1)) : 2.0 * widen(t, c) - widen(t, (uint16_t)(c - 1));
}

/* f32 values at every boundary of t: each midpoint between adjacent finite codes (exact in f32) and
 * its two float neighbours, then random bit patterns. Returns the count. */
static int f32_boundaries(fa_dtype t, float *v, int cap, tu_rng *rng)
{
    int n = 0;
    const uint16_t last = t == FA_BF16 ? 0x7f7f : 0x7bff; /* the largest finite code */
    for (int sign = 0; sign < 2; sign++)
        for (uint16_t c = 0; c <= last; c++) {
            double lo = widen(t, c), hi = next_up(t, c);
            float mid = (float)((lo + hi) / 2); /* exact: float has more bits than t */
            float three[3] = {nextafterf(mid, 0.0f), mid, nextafterf(mid, INFINITY)};
            for (int k = 0; k < 3 && n < cap; k++) v[n++] = sign ? -three[k] : three[k];
        }
    while (n < cap) {
        uint32_t u = (uint32_t)tu_rng_next(rng);
        memcpy(&v[n++], &u, sizeof u);
    }
    return n;
}

Test(convert, f32_rounds_to_nearest_even_with_the_scalar_bits)
{
    enum { CAP = 6 * 0x7f80 + 4096 };
    static float v[CAP];
    static uint16_t got[CAP];
    tu_rng rng = tu_rng_make(tu_test_seed());
    for (int x = 0; x < 2; x++) {
        fa_dtype t = halves[x];
        int n = f32_boundaries(t, v, CAP, &rng);
        convert_ok(got, t, v, FA_F32, n);
        for (int i = 0; i < n; i++) {
            cr_assert_eq(got[i], narrow(t, v[i]), "%s of %a (0x%08x): 0x%04x, want the scalar's 0x%04x",
                         fa_dtype_name(t), (double)v[i], fa_half_float_bits(v[i]), got[i], narrow(t, v[i]));
            double want = reference_half(t, (double)v[i]), have = (double)widen(t, got[i]);
            if (isnan(want)) {
                cr_assert(is_nan_code(t, got[i]) && (got[i] & quiet_bit(t)) &&
                              !!signbit(have) == !!signbit(v[i]),
                          "%s of a NaN (0x%08x): 0x%04x", fa_dtype_name(t), fa_half_float_bits(v[i]), got[i]);
                continue;
            }
            cr_assert(have == want && !!signbit(have) == !!signbit(want),
                      "%s of %a: %a, the reference says %a", fa_dtype_name(t), (double)v[i], have, want);
        }
    }
}

Test(convert, f64_rounds_once)
{
    enum { CAP = 4 * 0x7f80 + 4096 };
    static double v[CAP];
    static uint16_t got[CAP];
    static float f[CAP];
    tu_rng rng = tu_rng_make(tu_test_seed());
    for (int x = 0; x < 2; x++) {
        fa_dtype t = halves[x];
        const uint16_t last = t == FA_BF16 ? 0x7f7f : 0x7bff;
        int n = 0;
        /* just above and below each midpoint: (float) would round these to the midpoint itself, a
         * tie, and a second rounding would take the even neighbour, wrong half of the time */
        for (uint16_t c = 0; c <= last && n + 4 <= CAP; c++) {
            double lo = widen(t, c), hi = next_up(t, c), mid = (lo + hi) / 2;
            double off = ldexp(hi - lo, -40);
            double four[4] = {mid - off, mid + off, -(mid - off), -(mid + off)};
            for (int k = 0; k < 4; k++) v[n++] = four[k];
        }
        while (n < CAP) /* random magnitudes across both formats' ranges, both signs */
            v[n++] = ldexp(tu_rng_uniform(&rng, -1.0, 1.0), (int)tu_rng_below(&rng, 300) - 150);
        convert_ok(got, t, v, FA_F64, n);
        for (int i = 0; i < n; i++) {
            double want = reference_half(t, v[i]), have = (double)widen(t, got[i]);
            cr_assert(have == want && !!signbit(have) == !!signbit(want),
                      "%s of %a: %a, the reference says %a", fa_dtype_name(t), v[i], have, want);
        }
        if (x == 0) { /* f32: C's conversion, to nearest even */
            convert_ok(f, FA_F32, v, FA_F64, n);
            for (int i = 0; i < n; i++)
                cr_assert_eq(fa_half_float_bits(f[i]), fa_half_float_bits((float)v[i]), "f32 of %a", v[i]);
        }
    }
    /* the specials: ±inf stays, a NaN stays a quiet NaN with its sign, past the range is ±inf */
    const double special[5] = {INFINITY, -INFINITY, -NAN, 1e300, -1e-300};
    for (int x = 0; x < 2; x++) {
        convert_ok(got, halves[x], special, FA_F64, 5);
        double have[5];
        for (int i = 0; i < 5; i++) have[i] = widen(halves[x], got[i]);
        cr_assert(have[0] == INFINITY && have[1] == -INFINITY && have[3] == INFINITY);
        cr_assert(isnan(have[2]) && signbit(have[2]) && (got[2] & quiet_bit(halves[x])));
        cr_assert(have[4] == 0.0 && signbit(have[4]), "%s of -1e-300: -0", fa_dtype_name(halves[x]));
    }
}

Test(convert, quantized_codes_convert_exactly_without_a_scale)
{
    static const fa_dtype q[3] = {FA_I8, FA_F8_E4M3, FA_F8_E5M2};
    uint8_t codes[256];
    float f[256];
    double d[256];
    uint16_t h[256];
    for (int c = 0; c < 256; c++) codes[c] = (uint8_t)c;
    for (int x = 0; x < 3; x++) {
        convert_ok(f, FA_F32, codes, q[x], 256);
        convert_ok(d, FA_F64, codes, q[x], 256);
        for (int c = 0; c < 256; c++) {
            float want = fa_stored_to_f32(q[x], codes, c);
            cr_assert_eq(fa_half_float_bits(f[c]), fa_half_float_bits(want), "%s 0x%02x", fa_dtype_name(q[x]),
                         c);
            cr_assert(isnan(want) ? isnan(d[c]) : bits64(d[c]) == bits64((double)want));
        }
        for (int y = 0; y < 2; y++) { /* every such value is a bf16 and an f16 value too */
            convert_ok(h, halves[y], codes, q[x], 256);
            for (int c = 0; c < 256; c++) {
                float want = fa_stored_to_f32(q[x], codes, c), have = widen(halves[y], h[c]);
                cr_assert(isnan(want) ? isnan(have) : fa_half_float_bits(have) == fa_half_float_bits(want),
                          "%s 0x%02x to %s: %a", fa_dtype_name(q[x]), c, fa_dtype_name(halves[y]),
                          (double)have);
            }
        }
    }
}

Test(convert, one_dtype_copies_the_bytes)
{
    const uint32_t snan = 0x7f800001u, payload = 0xffc12345u;
    float in[2], out[2] = {0, 0};
    memcpy(&in[0], &snan, 4);
    memcpy(&in[1], &payload, 4);
    convert_ok(out, FA_F32, in, FA_F32, 2);
    cr_assert_eq(memcmp(in, out, sizeof in), 0, "f32 NaNs copied as bits");
    const uint16_t hsnan[2] = {0x7f81, 0xfc01}; /* a bf16 and an f16 signalling NaN */
    for (int x = 0; x < 2; x++) {
        uint16_t h = 0;
        convert_ok(&h, halves[x], &hsnan[x], halves[x], 1);
        cr_assert_eq(h, hsnan[x], "%s: 0x%04x", fa_dtype_name(halves[x]), h);
    }
}

/* Strided and broadcast views: src [2][3][4][5] f32 with k-padded rows and batch broadcast (stride 0),
 * dst bf16 with its own padding; every element is src's rounded, and the padding keeps its canary. */
Test(convert, strided_and_broadcast_views)
{
    enum { B = 2, H = 3, S = 4, D = 5, SRC_LD = 7, DST_LD = 9 };
    float src_data[H * S * SRC_LD];
    tu_rng rng = tu_rng_make(tu_test_seed());
    for (int i = 0; i < H * S * SRC_LD; i++) src_data[i] = (float)tu_rng_uniform(&rng, -4.0, 4.0);
    kit_buf buf = kit_buf_alloc((size_t)B * H * S * DST_LD * sizeof(uint16_t));
    uint16_t *dst_data = kit_buf_data(&buf);
    fa_tensor src = {src_data, FA_F32, B, H, S, D, 0, S * SRC_LD, SRC_LD};
    fa_tensor dst = {dst_data, FA_BF16, B, H, S, D, H * S * DST_LD, S * DST_LD, DST_LD};
    cr_assert_eq(fa_convert(&dst, &src), FA_OK, "%s", fa_last_error());
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < S; s++)
                for (int x = 0; x < D; x++) {
                    const int64_t at = ((int64_t)(b * H + h) * S + s) * DST_LD + x;
                    float want = src_data[(h * S + s) * SRC_LD + x];
                    cr_assert_eq(dst_data[at], fa_bf16_from_f32(want), "(%d, %d, %d, %d)", b, h, s, x);
                }
    cr_assert(kit_buf_only_view_written(&buf, &dst), "padding or a guard of dst written");
    kit_buf_free(&buf);
}

Test(convert, empty_views_convert_nothing)
{
    fa_tensor dst = fa_tensor_bhsd(NULL, FA_BF16, 2, 0, 3, 4), src = fa_tensor_bhsd(NULL, FA_F64, 2, 0, 3, 4);
    cr_assert_eq(fa_convert(&dst, &src), FA_OK, "%s", fa_last_error());
}
