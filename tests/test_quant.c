/* SPDX-License-Identifier: BSD-3-Clause */
/* The one-byte KV-cache types' conversions (src/kernels/quant.h), which ref's widen and every table's
 * tails use, against the formats' definitions written out here independently, for all 256 codes:
 * int8 is its two's-complement value; OCP FP8 E4M3 (bias 7, no infinities, S.1111.111 NaN) and E5M2
 * (bias 15, S.11111.00 infinity, S.11111.{01,10,11} NaN) are (-1)^s · 2^(e - bias) · (1 + m/2^M) for
 * e >= 1 and (-1)^s · 2^(1 - bias) · m/2^M for e = 0. Every finite value must come out exactly (it
 * is exact in float), NaN codes as quiet NaNs with their sign, infinities as ±inf. The vector
 * conversions of the x86 tables are held to these bits by test_kernel_tables.c (widen). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/quant.h"
#include "util.h"

/* The value the OCP definition gives code x of a format with `exponent_bits` and `mantissa_bits`
 * (the sign the top bit), with `ieee_specials`: whether the all-ones exponent holds infinities and
 * NaNs (E5M2) or only S.1111.111 is NaN (E4M3). */
static double ocp_value(uint8_t x, int exponent_bits, int mantissa_bits, int ieee_specials, int *nan)
{
    const int bias = (1 << (exponent_bits - 1)) - 1;
    const int sign = x >> 7, e = (x >> mantissa_bits) & ((1 << exponent_bits) - 1),
              m = x & ((1 << mantissa_bits) - 1);
    const int all_ones = e == (1 << exponent_bits) - 1;
    *nan = 0;
    if (ieee_specials && all_ones) {
        if (m) {
            *nan = 1;
            return NAN;
        }
        return sign ? -INFINITY : INFINITY;
    }
    if (!ieee_specials && all_ones && m == (1 << mantissa_bits) - 1) {
        *nan = 1;
        return NAN;
    }
    double magnitude = e ? ldexp(1.0 + m / (double)(1 << mantissa_bits), e - bias)
                         : ldexp(m / (double)(1 << mantissa_bits), 1 - bias);
    return sign ? -magnitude : magnitude;
}

static void check_format(const char *name, float (*convert)(uint8_t), int exponent_bits, int mantissa_bits,
                         int ieee_specials, double largest)
{
    tu_test_seed();
    int nans = 0, infinities = 0;
    double seen_largest = 0;
    for (int code = 0; code < 256; code++) {
        int nan;
        double want = ocp_value((uint8_t)code, exponent_bits, mantissa_bits, ieee_specials, &nan);
        float got = convert((uint8_t)code);
        if (nan) {
            uint32_t bits;
            memcpy(&bits, &got, sizeof bits);
            cr_expect(
                got != got && (bits & 0x00400000u) && (bits >> 31) == (uint32_t)(code >> 7),
                "%s 0x%02x: a NaN code gave %a (bits 0x%08x): expected a quiet NaN with the code's sign",
                name, code, (double)got, bits);
            nans++;
            continue;
        }
        cr_expect((double)got == want && !!signbit(got) == !!signbit(want),
                  "%s 0x%02x: %a, the definition says %a", name, code, (double)got, want);
        if (isinf(want))
            infinities++;
        else if (fabs(want) > seen_largest)
            seen_largest = fabs(want);
    }
    cr_expect_eq(seen_largest, largest, "%s: the largest finite magnitude is %g, not %g", name, seen_largest,
                 largest);
    cr_log_info("%s: 256 codes, %d NaN, %d infinite, largest %g", name, nans, infinities, seen_largest);
}

Test(quant, f8_e4m3_converts_every_code_exactly)
{
    check_format("E4M3", fa_f8e4m3_to_f32, 4, 3, 0, 448.0);
}

Test(quant, f8_e5m2_converts_every_code_exactly)
{
    check_format("E5M2", fa_f8e5m2_to_f32, 5, 2, 1, 57344.0);
}

Test(quant, i8_converts_every_code_exactly)
{
    tu_test_seed();
    for (int code = 0; code < 256; code++) {
        float got = fa_i8_to_f32((uint8_t)code), want = (float)(code < 128 ? code : code - 256);
        cr_expect_eq(got, want, "int8 0x%02x: %g, not %g", code, (double)got, (double)want);
    }
}

/* A stored value is its element times its row's scale, one float multiplication (kernels.h, widen). */
Test(quant, a_stored_value_is_the_element_times_its_scale_rounded_once)
{
    tu_rng rng = tu_rng_make(tu_test_seed());
    static const fa_dtype types[] = {FA_I8, FA_F8_E4M3, FA_F8_E5M2};
    for (int t = 0; t < 3; t++)
        for (int code = 0; code < 256; code++) {
            const uint8_t x[2] = {(uint8_t)code, 0}; /* two bytes: the conversion's switch has 16-bit cases */
            float scale = (float)tu_rng_uniform(&rng, -3, 3), e = fa_stored_to_f32(types[t], x, 0);
            float got = fa_stored_value(types[t], x, 0, &scale), want = scale * e;
            cr_expect(memcmp(&got, &want, sizeof got) == 0 || (got != got && want != want),
                      "dtype %d code 0x%02x scale %a: %a, not %a", (int)types[t], code, (double)scale,
                      (double)got, (double)want);
            cr_expect(memcmp(&e, &(float){fa_stored_value(types[t], x, 0, NULL)}, sizeof e) == 0 || e != e,
                      "dtype %d code 0x%02x: without a scale the value is the element", (int)types[t], code);
        }
}
