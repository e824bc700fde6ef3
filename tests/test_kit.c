/* SPDX-License-Identifier: BSD-3-Clause */
/* The test kit's element types (tests/kit/dtype.h) against the library's (src/kernels/half.h,
 * quant.h): two implementations written apart, one from the formats' definitions, must agree bit
 * for bit, or an oracle reading the kit's values would judge the library on other inputs than it
 * was given. Every bf16, f16, int8, E4M3 and E5M2 pattern is widened both ways; narrowing is
 * compared on every float whose low bits sit on or next to a rounding boundary of the type (all
 * exponents and kept mantissas, each with the dropped bits 0, 1, half an ulp minus 1, half, half
 * plus 1, all ones), NaNs and infinities included. The kit's own helpers are held to their
 * definitions: uniform fills to their draw order, keyed integer draws to their floor and spread,
 * visible pairs to a count of every (i, j) by the
 * header's mask rule, ALiBi's slopes to BLOOM's powers of two. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "dtype.h"
#include "fill.h"
#include "rng.h"
#include "score_mods.h"
#include "kernels/half.h"
#include "kernels/quant.h"

Test(kit, half_widening_equals_the_library_on_every_pattern)
{
    for (uint32_t h = 0; h < 65536; h++) {
        uint16_t x = (uint16_t)h;
        cr_assert_eq(kit_float_bits(kit_bf16_to_f32(x)), kit_float_bits(fa_bf16_to_f32(x)), "bf16 0x%04x",
                     (unsigned)h);
        cr_assert_eq(kit_float_bits(kit_f16_to_f32(x)), kit_float_bits(fa_f16_to_f32(x)), "f16 0x%04x",
                     (unsigned)h);
    }
}

Test(kit, quantized_codes_equal_the_library_on_every_code)
{
    const fa_dtype types[3] = {FA_I8, FA_F8_E4M3, FA_F8_E5M2};
    for (int t = 0; t < 3; t++)
        for (unsigned c = 0; c < 256; c++) {
            uint8_t code[2] = {(uint8_t)c, 0}; /* two bytes: the library's switch also reads halves */
            float scale = 0x1.8p-3f;
            cr_assert_eq(kit_float_bits(kit_code_to_f32(types[t], code[0])),
                         kit_float_bits(fa_stored_to_f32(types[t], code, 0)), "type %d code 0x%02x",
                         (int)types[t], c);
            cr_assert_eq(kit_float_bits(kit_quant_value(types[t], code, 0, scale)),
                         kit_float_bits(fa_stored_value(types[t], code, 0, &scale)),
                         "type %d code 0x%02x scaled", (int)types[t], c);
        }
}

/* Every float with the kept bits `top` (shifted by `drop`) and each boundary pattern below them. */
static void check_narrowing(int drop, uint16_t (*kit)(float), uint16_t (*lib)(float), const char *name)
{
    const uint32_t half = 1u << (drop - 1), all = (1u << drop) - 1u;
    const uint32_t low[6] = {0, 1, half - 1, half, half + 1, all};
    for (uint32_t top = 0; top < (1u << (32 - drop)); top++)
        for (int l = 0; l < 6; l++) {
            uint32_t u = (top << drop) | low[l];
            float f = kit_bits_float(u);
            cr_assert_eq(kit(f), lib(f), "%s of 0x%08x: kit 0x%04x, library 0x%04x", name, u, kit(f), lib(f));
        }
}

Test(kit, bf16_narrowing_equals_the_library_at_every_rounding_boundary)
{
    check_narrowing(16, kit_bf16_from_f32, fa_bf16_from_f32, "bf16");
}

/* f16 keeps 10 of float's 23 mantissa bits for normals; a subnormal result keeps fewer, so the
 * range below 2^-14 is also swept every 256th float (which holds each of its midpoints). */
Test(kit, f16_narrowing_equals_the_library_at_every_rounding_boundary)
{
    check_narrowing(13, kit_f16_from_f32, fa_f16_from_f32, "f16");
    for (uint32_t u = 0x33000000u; u <= 0x38800000u; u += 0x100u) { /* |f| in [2^-25, 2^-14]: subnormals */
        for (uint32_t s = 0; s < 2; s++) {
            float f = kit_bits_float(u | (s << 31));
            cr_assert_eq(kit_f16_from_f32(f), fa_f16_from_f32(f), "f16 of 0x%08x", u | (s << 31));
        }
    }
}

/* kit_fill_uniform draws one value per element in (b, h, s, d) order whatever the strides: a bhsd
 * and a bshd view filled from one state hold the same value at every (b, h, s, d), each in
 * [lo, hi) and rounded to the view's dtype, and the state has advanced by exactly one draw each. */
Test(kit, fill_uniform_walks_b_h_s_d_whatever_the_strides)
{
    enum { B = 2, H = 3, S = 5, D = 4, N = B * H * S * D };
    static const fa_dtype types[] = {FA_F64, FA_F32, FA_BF16, FA_F16};
    static const char *names[] = {"f64", "f32", "bf16", "f16"};
    for (int ti = 0; ti < 4; ti++) {
        const fa_dtype t = types[ti];
        double *a = calloc(N, sizeof(double)), *b = calloc(N, sizeof(double)); /* room for any type */
        cr_assert(a && b);
        fa_tensor bhsd = fa_tensor_bhsd(a, t, B, H, S, D), bshd = fa_tensor_bshd(b, t, B, S, H, D);
        uint64_t s1 = 42, s2 = 42, after = 42;
        kit_fill_uniform(&bhsd, &s1, -3.0, 2.0);
        kit_fill_uniform(&bshd, &s2, -3.0, 2.0);
        for (int n = 0; n < N; n++) kit_splitmix64(&after);
        cr_expect(s1 == after && s2 == after, "%s: the state did not advance by one draw an element",
                  names[ti]);
        uint64_t replay = 42;
        for (int64_t x = 0; x < B; x++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t y = 0; y < S; y++)
                    for (int64_t d = 0; d < D; d++) {
                        double want = kit_round(t, -3.0 + 5.0 * kit_unit_from_bits(kit_splitmix64(&replay)));
                        double u = kit_tensor_load(&bhsd, x, h, y, d), v = kit_tensor_load(&bshd, x, h, y, d);
                        cr_expect(u == want && v == want,
                                  "%s (%lld, %lld, %lld, %lld): bhsd %g, bshd %g, the draw rounded %g",
                                  names[ti], (long long)x, (long long)h, (long long)y, (long long)d, u, v,
                                  want);
                        cr_expect(want >= kit_round(t, -3.0) && want <= kit_round(t, 2.0), "out of range");
                    }
        free(a), free(b);
    }
}

/* flashattn.h's rule for one pair, with the window bounds as written there (small sizes only). */
static int pair_visible(fa_causal causal, int64_t nq, int64_t nk, int64_t wl, int64_t wr, int64_t i,
                        int64_t j)
{
    int64_t diag = i + (causal == FA_CAUSAL_TOP_LEFT ? 0 : nk - nq);
    if (causal != FA_CAUSAL_NONE && j > diag) return 0;
    if (wl >= 0 && j < diag - wl) return 0;
    if (wr >= 0 && j > diag + wr) return 0;
    return 1;
}

Test(kit, visible_pairs_and_keys_follow_the_rule_pair_by_pair)
{
    const fa_causal causal[3] = {FA_CAUSAL_NONE, FA_CAUSAL_TOP_LEFT, FA_CAUSAL_BOTTOM_RIGHT};
    const int64_t windows[5] = {-1, 0, 1, 3, 40};
    for (int c = 0; c < 3; c++)
        for (int64_t nq = 0; nq <= 9; nq++)
            for (int64_t nk = 0; nk <= 9; nk++)
                for (int l = 0; l < 5; l++)
                    for (int r = 0; r < 5; r++) {
                        int64_t count = 0, wl = windows[l], wr = windows[r];
                        for (int64_t i = 0; i < nq; i++) {
                            int64_t first, end;
                            kit_visible_keys(causal[c], nq, nk, wl, wr, i, &first, &end);
                            cr_assert(first <= end, "row %lld: [%lld, %lld)", (long long)i, (long long)first,
                                      (long long)end);
                            for (int64_t j = 0; j < nk; j++) {
                                int visible = pair_visible(causal[c], nq, nk, wl, wr, i, j);
                                cr_assert_eq(
                                    visible, j >= first && j < end,
                                    "causal %d nq %lld nk %lld window %lld,%lld: key %lld of row %lld",
                                    (int)causal[c], (long long)nq, (long long)nk, (long long)wl,
                                    (long long)wr, (long long)j, (long long)i);
                                count += visible;
                            }
                        }
                        cr_assert_eq(kit_visible_pairs(causal[c], nq, nk, wl, wr), count,
                                     "causal %d nq %lld nk %lld window %lld,%lld", (int)causal[c],
                                     (long long)nq, (long long)nk, (long long)wl, (long long)wr);
                    }
    /* Windows of INT64_MAX are unbounded, not an overflow. */
    cr_assert_eq(kit_visible_pairs(FA_CAUSAL_NONE, 5, 7, INT64_MAX, INT64_MAX), 35);
}

Test(kit, alibi_slopes_are_the_geometric_sequence_ending_at_two_to_the_minus_eight)
{
    float s[16];
    kit_alibi_slopes(s, 8); /* a power of two: BLOOM's exact 2^-1, ..., 2^-8 */
    for (int h = 0; h < 8; h++)
        cr_assert_eq(s[h], ldexpf(1.0f, -(h + 1)), "head %d of 8: %a", h, (double)s[h]);
    kit_alibi_slopes(s, 12);
    cr_assert_eq(s[11], 0x1p-8f);
    for (int h = 1; h < 12; h++) cr_assert(s[h] < s[h - 1], "head %d of 12 does not decrease", h);
}

/* fa-bench's lengths and page orders, fa-schedule's and the ggml peer's: every draw is floor(u·n) of
 * its keyed uniform u, inside 0..n-1, and over many draws every value comes up as often as a
 * uniform draw would (within 5 sigma of count/n). */
Test(kit, keyed_below_is_the_floor_of_its_uniform_and_covers_every_value)
{
    enum { DRAWS = 70000 };
    static const int64_t ns[] = {1, 2, 7, 1000};
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
        const int64_t n = ns[c];
        int64_t *hits = calloc((size_t)n, sizeof *hits);
        cr_assert(hits != NULL);
        for (uint64_t i = 0; i < DRAWS; i++) {
            int64_t k = kit_keyed_below(42, 7, i, n);
            double u = kit_unit_uniform(kit_stream_key(42, 7), i);
            cr_assert(k >= 0 && k < n, "n %lld, draw %llu: %lld", (long long)n, (unsigned long long)i,
                      (long long)k);
            cr_assert_eq(k, (int64_t)floor(u * (double)n), "n %lld, draw %llu", (long long)n,
                         (unsigned long long)i);
            hits[k]++;
        }
        const double mean = (double)DRAWS / (double)n, sigma = sqrt(mean * (1.0 - 1.0 / (double)n));
        for (int64_t v = 0; v < n; v++)
            cr_expect(fabs((double)hits[v] - mean) <= 5.0 * sigma + 1e-9,
                      "n %lld: value %lld drawn %lld times", (long long)n, (long long)v, (long long)hits[v]);
        free(hits);
    }
}
