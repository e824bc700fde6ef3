/* SPDX-License-Identifier: BSD-3-Clause */
/* The bf16/f16 conversions (src/kernels/half.h) and the rounding of half outputs.
 *
 * Unit tests, against definitions computed independently of half.h:
 * - widening is exact: every one of the 65536 bit patterns of both types decodes to
 *   (-1)^s · 2^(e - bias) · 1.m (ldexp on the fields), subnormals to m · 2^(emin), ±0 keeps its sign,
 *   infinities stay infinities, NaNs stay NaNs with their sign and payload (f16's made quiet, as
 *   half.h documents and vcvtph2ps does);
 * - narrowing rounds to nearest, ties to even: over every boundary (each half value, its float
 *   neighbours, each midpoint between adjacent half values and its neighbours), random bit patterns,
 *   float subnormals and the values around the largest finite halves, the result r of f satisfies
 *   |f - widen(r)| <= |f - widen(r ± 1 ulp)|, on a tie r's last mantissa bit is 0, and sign(r) =
 *   sign(f); |f| >= the overflow threshold (65520 for f16, (2 - 2^-8)·2^127 for bf16: the midpoints
 *   between the largest finite value, whose mantissa is odd, and 2^16 / 2^128) gives ±inf and
 *   nothing below it does; a NaN gives a quiet NaN with f's sign.
 * End to end through fa_forward and fa_backward, with q = 0 so every score is exactly 0 and the
 * probabilities are exact (exp2(0) = 1 exactly, tests/test_exp2.c; 1/2 and 1 are exact): an output
 * that is exactly halfway between two half values rounds to even (normal and subnormal values, up
 * and down, an underflow to 0), an f16 gradient that sums past 65504 becomes ±inf exactly at the
 * threshold, and a NaN in an input reaches exactly the outputs that the oracle's NaN reaches
 * (include/flashattn.h: "NaN or Inf inside q, k, v ... reaches exactly the rows that see it"). */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half_util.h"
#include "kernels/half.h"
#include "reference.h"
#include "reference_backward.h"

/* ---- the two formats, described by their fields ------------------------------------------ */

typedef struct {
    const char *name;
    fa_dtype dtype;
    int mant_bits;        /* stored mantissa bits: 7 (bf16), 10 (f16) */
    int exp_bits;         /* 8, 5 */
    int bias;             /* 127, 15 */
    double overflow_at;   /* the smallest |f| that becomes inf: max finite + half an ulp */
    int widen_quiets_nan; /* half.h: an f16 NaN is widened quiet (as vcvtph2ps), a bf16 NaN keeps its bits */
    float (*widen)(uint16_t);
    uint16_t (*narrow)(float);
} fmt;

static const fmt formats[2] = {
    /* bf16: max finite (2 - 2^-7)·2^127; the midpoint to 2^128 is (2 - 2^-8)·2^127 = 511·2^119 */
    {"bf16", FA_BF16, 7, 8, 127, 0x1ff * 0x1p119, 0, fa_bf16_to_f32, fa_bf16_from_f32},
    /* f16: max finite 65504 = (2 - 2^-10)·2^15; the midpoint to 2^16 is 65520 */
    {"f16", FA_F16, 10, 5, 15, 65520.0, 1, fa_f16_to_f32, fa_f16_from_f32},
};

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int h_sign(const fmt *F, uint16_t h)
{
    return (h >> (F->mant_bits + F->exp_bits)) & 1;
}

static int h_exp(const fmt *F, uint16_t h)
{
    return (h >> F->mant_bits) & ((1 << F->exp_bits) - 1);
}

static int h_mant(const fmt *F, uint16_t h)
{
    return h & ((1 << F->mant_bits) - 1);
}

static int h_is_inf(const fmt *F, uint16_t h)
{
    return h_exp(F, h) == (1 << F->exp_bits) - 1 && h_mant(F, h) == 0;
}

static int h_is_nan(const fmt *F, uint16_t h)
{
    return h_exp(F, h) == (1 << F->exp_bits) - 1 && h_mant(F, h) != 0;
}

/* The value of a finite pattern, from its fields alone. */
static double h_value(const fmt *F, uint16_t h)
{
    int e = h_exp(F, h), m = h_mant(F, h);
    double mag = e == 0 ? ldexp((double)m, 1 - F->bias - F->mant_bits)
                        : ldexp((double)((1 << F->mant_bits) + m), e - F->bias - F->mant_bits);
    return h_sign(F, h) ? -mag : mag;
}

/* ---- widening ------------------------------------------------------------------------------ */

static void check_widening(const fmt *F)
{
    int64_t bad = 0;
    for (uint32_t x = 0; x <= 0xffffu; x++) {
        uint16_t h = (uint16_t)x;
        float w = F->widen(h);
        uint32_t wb = float_bits(w);
        int ok;
        if (h_is_nan(F, h)) {
            /* NaN, same sign, payload in the top mantissa bits of the float, the rest zero (and the
             * quiet bit set where half.h says the widening quiets) */
            uint32_t payload = (uint32_t)h_mant(F, h) << (23 - F->mant_bits);
            if (F->widen_quiets_nan) payload |= 0x400000u;
            ok = isnan(w) && (int)(wb >> 31) == h_sign(F, h) && (wb & 0x7fffffu) == payload;
        } else if (h_is_inf(F, h)) {
            ok = isinf(w) && (int)(wb >> 31) == h_sign(F, h);
        } else {
            ok = (double)w == h_value(F, h) && (int)(wb >> 31) == h_sign(F, h);
        }
        if (!ok && bad++ < 5)
            cr_expect(0, "%s widen(0x%04x) = %a (bits 0x%08x), expected %a", F->name, (unsigned)h, (double)w,
                      (unsigned)wb, h_value(F, h));
    }
    cr_expect_eq(bad, 0, "%s: %lld of 65536 patterns widen wrongly", F->name, (long long)bad);
}

Test(half_rounding, bf16_widening_is_exact_for_all_65536_patterns)
{
    check_widening(&formats[0]);
}

Test(half_rounding, f16_widening_is_exact_for_all_65536_patterns)
{
    check_widening(&formats[1]);
}

/* ---- narrowing ----------------------------------------------------------------------------- */

typedef struct {
    int64_t checked, bad;
} tally;

/* The next pattern of larger (dir = +1) or smaller (dir = -1) magnitude with the same sign, or -1
 * when there is none (below 0) or it is not finite (above the largest finite value). */
static int32_t neighbour(const fmt *F, uint16_t r, int dir)
{
    uint16_t sign = (uint16_t)(r & (1u << (F->mant_bits + F->exp_bits)));
    uint16_t mag = (uint16_t)(r ^ sign);
    if (dir < 0 && mag == 0) return -1;
    uint16_t n = (uint16_t)(sign | (uint16_t)(mag + dir));
    if (h_is_inf(F, n) || h_is_nan(F, n)) return -1;
    return n;
}

static void check_narrow_one(const fmt *F, float f, tally *t)
{
    uint16_t r = F->narrow(f);
    char why[160] = "";
    t->checked++;
    if (isnan(f)) {
        int quiet = (h_mant(F, r) >> (F->mant_bits - 1)) & 1;
        if (!h_is_nan(F, r) || !quiet || h_sign(F, r) != (int)(float_bits(f) >> 31))
            snprintf(why, sizeof why, "a NaN must give a quiet NaN of the same sign");
    } else if (h_sign(F, r) != (int)(float_bits(f) >> 31)) {
        snprintf(why, sizeof why, "sign not kept");
    } else if (fabs((double)f) >= F->overflow_at) {
        if (!h_is_inf(F, r)) snprintf(why, sizeof why, "|f| >= %.9g must give inf", F->overflow_at);
    } else if (h_is_inf(F, r) || h_is_nan(F, r)) {
        snprintf(why, sizeof why, "|f| < %.9g must stay finite", F->overflow_at);
    } else {
        double d = fabs((double)f - h_value(F, r));
        for (int dir = -1; dir <= 1 && !why[0]; dir += 2) {
            int32_t n = neighbour(F, r, dir);
            if (n < 0) continue;
            double dn = fabs((double)f - h_value(F, (uint16_t)n));
            if (d > dn)
                snprintf(why, sizeof why, "0x%04x (%a) is nearer", (unsigned)n, h_value(F, (uint16_t)n));
            else if (d == dn && (r & 1))
                snprintf(why, sizeof why, "a tie with 0x%04x must round to the even one", (unsigned)n);
        }
    }
    if (why[0] && t->bad++ < 5)
        cr_expect(0, "%s narrow(%a, bits 0x%08x) = 0x%04x (%a): %s", F->name, (double)f,
                  (unsigned)float_bits(f), (unsigned)r, h_is_nan(F, r) ? NAN : h_value(F, r), why);
}

/* f and its float neighbours on both sides. */
static void check_around(const fmt *F, float f, tally *t)
{
    check_narrow_one(F, f, t);
    check_narrow_one(F, nextafterf(f, INFINITY), t);
    check_narrow_one(F, nextafterf(f, -INFINITY), t);
}

static void check_narrowing(const fmt *F, uint64_t seed)
{
    tally t = {0, 0};
    /* every finite half value, and every midpoint between adjacent ones (exact in float: one bit
     * more than the half's mantissa), each with its neighbours: every rounding boundary and tie */
    for (uint32_t x = 0; x <= 0xffffu; x++) {
        uint16_t h = (uint16_t)x;
        if (h_is_inf(F, h) || h_is_nan(F, h)) continue;
        check_around(F, F->widen(h), &t);
        int32_t up = neighbour(F, h, +1);
        double mid = up >= 0 ? 0.5 * (h_value(F, h) + h_value(F, (uint16_t)up))
                             : (h_sign(F, h) ? -F->overflow_at : F->overflow_at);
        cr_assert((double)(float)mid == mid, "%s: midpoint %a is not a float", F->name, mid);
        check_around(F, (float)mid, &t);
    }
    /* the overflow thresholds of both formats (the other's is one more large value), the largest
     * floats and the infinities */
    static const double big[] = {
        65504.0, 65519.0, 65520.0,         65521.0,         65535.0,
        65536.0, 1e5,     0x1ff * 0x1p119, 0x1fe * 0x1p119, 0x1p128 * (1.0 - 0x1p-24)};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        check_around(F, (float)big[i], &t);
        check_around(F, (float)-big[i], &t);
    }
    check_narrow_one(F, INFINITY, &t);
    check_narrow_one(F, -INFINITY, &t);
    check_narrow_one(F, FLT_MAX, &t);
    check_narrow_one(F, -FLT_MAX, &t);
    /* NaNs: quiet and signalling, both signs, payloads that narrowing truncates to 0 */
    static const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u,
                                    0x7fbfffffu, 0x7f802000u, 0xffffffffu, 0x7fffe000u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) check_narrow_one(F, bits_float(nans[i]), &t);
    /* random bit patterns (every exponent, NaNs and infinities included) and float subnormals */
    tu_rng rng = tu_rng_make(seed);
    for (int i = 0; i < 400000; i++) check_narrow_one(F, bits_float((uint32_t)tu_rng_next(&rng)), &t);
    for (int i = 0; i < 100000; i++) {
        uint32_t sub = (uint32_t)tu_rng_below(&rng, 0x7fffff) + 1u;
        check_narrow_one(F, bits_float(sub | ((uint32_t)(i & 1) << 31)), &t);
    }
    cr_expect_eq(t.bad, 0, "%s: %lld of %lld floats narrowed wrongly", F->name, (long long)t.bad,
                 (long long)t.checked);
}

Test(half_rounding, bf16_narrowing_rounds_to_nearest_even_and_overflows_at_the_threshold)
{
    check_narrowing(&formats[0], tu_test_seed());
}

Test(half_rounding, f16_narrowing_rounds_to_nearest_even_and_overflows_at_the_threshold)
{
    check_narrowing(&formats[1], tu_test_seed());
}

/* ---- end to end -------------------------------------------------------------------------- */

static void zero_tensor(const fa_tensor *t)
{
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t s = 0; s < t->seq; s++)
                for (int64_t d = 0; d < t->dim; d++) kit_tensor_store(t, b, h, s, d, 0.0);
}

/* Two keys, q = 0: both scores are 0, P = 1/2 each, so out = (v0 + v1) / 2 exactly in f32, and
 * the library's one rounding must give RNE of that value. Each column is a pair (v0, v1), in units
 * of one ulp u of the format at 1 (2^-7 bf16, 2^-10 f16) or of its smallest subnormal s. */
static void check_output_ties(const fmt *F)
{
    double u = ldexp(1.0, -F->mant_bits), s = ldexp(1.0, 1 - F->bias - F->mant_bits);
    const double pairs[][2] = {
        {1.0, 1.0 + u},           /* 1 + u/2: tie between 1 (even) and 1 + u: down */
        {1.0 + u, 1.0 + 2 * u},   /* 1 + 3u/2: tie between 1 + u (odd) and 1 + 2u: up */
        {-1.0, -1.0 - u},         /* negative, down in magnitude */
        {-1.0 - u, -1.0 - 2 * u}, /* negative, up in magnitude */
        {1.0, 1.0 + 2 * u},       /* 1 + u: representable, no rounding */
        {0.5 - u / 4, 0.5},       /* below 1/2, where the spacing is u/4: 1/2 - u/8, tie up to 1/2 */
        {s, 2 * s},               /* 1.5 s: tie between s (odd) and 2s: up */
        {2 * s, 3 * s},           /* 2.5 s: tie between 2s (even) and 3s: down */
        {0.0, s},                 /* s/2: tie between 0 (even) and s: underflow to 0 */
        {-0.0, -s},               /* -s/2: underflow to -0 */
        {3 * s, 3 * s},           /* a subnormal, no rounding */
        {ldexp(1.0, 1 - F->bias) - s, ldexp(1.0, 1 - F->bias)}, /* below the smallest normal: tie up to it */
    };
    enum { COLS = sizeof pairs / sizeof pairs[0] };
    /* 5 rows: where the CPU has bf16 dot-product units, the bf16 call runs on them */
    kit_shape sh = {F->dtype, F->dtype, 1, 2, 1, 5, 2, 4, COLS, 0};
    tu_rng rng = tu_rng_make(tu_test_seed());
    kit_problem pr;
    hu_make(&pr, &sh, &rng, 1.0);
    zero_tensor(&pr.t[KIT_Q]);
    for (int c = 0; c < COLS; c++)
        for (int j = 0; j < 2; j++) {
            cr_assert(hu_round(F->dtype, pairs[c][j]) == pairs[c][j], "%s column %d: v%d = %a is not a %s",
                      F->name, c, j, pairs[c][j], F->name);
            kit_tensor_store(&pr.t[KIT_V], 0, 0, j, c, pairs[c][j]);
        }
    fa_status st = hu_forward(NULL, NULL, &pr);
    cr_assert_eq(st, FA_OK, "%s: status %d (%s)", F->name, st, fa_last_error());
    /* bf16 dot-product units read subnormal inputs as zero (flashattn.h, "dtype"): there the mean is
     * that of the inputs as they read them, and the one rounding is checked on it */
    const int daz = hu_on_dot_units(NULL, sh.q_dtype, sh.kv_dtype, sh.dim, sh.q_len);
    const double normal = ldexp(1.0, 1 - F->bias);
    for (int64_t h = 0; h < sh.q_heads; h++)
        for (int64_t i = 0; i < sh.q_len; i++) {
            for (int c = 0; c < COLS; c++) {
                double v0 = pairs[c][0], v1 = pairs[c][1];
                if (daz && fabs(v0) < normal) v0 = copysign(0.0, v0);
                if (daz && fabs(v1) < normal) v1 = copysign(0.0, v1);
                /* exact; summed from +0 as every accumulator starts, so (-0, -0) is +0 */
                double mean = (0.0 + 0.5 * v0) + 0.5 * v1;
                uint16_t want = F->narrow((float)mean), got = (uint16_t)hu_bits(&pr.t[KIT_OUT], 0, h, i, c);
                cr_expect_eq(
                    got, want,
                    "%s head %lld row %lld column %d: out(%a, %a) = 0x%04x (%a), expected RNE of %a = "
                    "0x%04x (%a)",
                    F->name, (long long)h, (long long)i, c, pairs[c][0], pairs[c][1], (unsigned)got,
                    h_value(F, got), mean, (unsigned)want, h_value(F, want));
            }
        }
    kit_problem_free(&pr);
}

Test(half_rounding, bf16_output_exactly_halfway_rounds_to_even)
{
    check_output_ties(&formats[0]);
}

Test(half_rounding, f16_output_exactly_halfway_rounds_to_even)
{
    check_output_ties(&formats[1]);
}

/* One key, q = 0: every row sees it with P = 1, so dS = dP - delta = 0 (dq = dk = 0 exactly) and
 * dv = Σ_i dout_i, which the library sums in f32 (exactly: every partial sum below is a float)
 * and rounds once to f16. Columns whose sum is 65504 (the largest f16), 65512 (below the
 * threshold: 65504), 65520 (the threshold, a tie: inf, the even neighbour), 120000 and their
 * negatives. dout is of q's type: f16, or f32 in the half-KV mode. */
static void check_dv_overflow(fa_dtype qt)
{
    const double rows[][5] = {
        {32768.0, 32768.0, -32768.0, 60000.0, 32768.0},
        {32736.0, 32752.0, -32752.0, 60000.0, 16384.0},
        {0.0, 0.0, 0.0, 0.0, 16360.0},
    };
    const double sums[5] = {65504.0, 65520.0, -65520.0, 120000.0, 65512.0};
    kit_shape sh = {qt, FA_F16, 1, 2, 1, 3, 1, 8, 5, 0};
    tu_rng rng = tu_rng_make(tu_test_seed());
    kit_problem pr;
    hu_make(&pr, &sh, &rng, 1.0);
    zero_tensor(&pr.t[KIT_Q]);
    /* v in {-1, -1/2, 0, 1/2, 1}: dP_ij = dout_i·v_j and delta_i = dout_i·out_i (out_i = v_j, P = 1)
     * are exact in f32 in any order, so dP - delta is exactly 0 however the library sums them */
    for (int c = 0; c < 5; c++)
        kit_tensor_store(&pr.t[KIT_V], 0, 0, 0, c, 0.5 * (double)(tu_rng_below(&rng, 5) - 2));
    for (int64_t h = 0; h < sh.q_heads; h++)
        for (int i = 0; i < 3; i++)
            for (int c = 0; c < 5; c++)
                kit_tensor_store(&pr.t[KIT_DOUT], 0, h, i, c, h == 0 ? rows[i][c] : 0.0);
    cr_assert_eq(hu_forward(NULL, NULL, &pr), FA_OK, "%s", fa_last_error());
    fa_status st = hu_backward(NULL, NULL, &pr);
    cr_assert_eq(st, FA_OK, "status %d (%s)", st, fa_last_error());
    double *dv = hu_view_copy(&pr.t[KIT_DV]), *dq = hu_view_copy(&pr.t[KIT_DQ]),
           *dk = hu_view_copy(&pr.t[KIT_DK]);
    for (int c = 0; c < 5; c++) {
        double want = (double)fa_f16_to_f32(fa_f16_from_f32((float)sums[c]));
        cr_expect(dv[c] == want, "%s/f16: dv column %d = %g, expected the f16 rounding of %g = %g",
                  hu_dtype_name(qt), c, dv[c], sums[c], want);
    }
    cr_expect(isinf(dv[1]) && dv[1] > 0 && isinf(dv[2]) && dv[2] < 0 && dv[0] == 65504.0,
              "the threshold: 65504 stays, ±65520 becomes ±inf");
    for (int64_t x = 0; x < hu_numel(&pr.t[KIT_DQ]); x++)
        cr_expect(dq[x] == 0.0, "dq[%lld] = %g: one key, P = 1, dS = 0", (long long)x, dq[x]);
    for (int64_t x = 0; x < hu_numel(&pr.t[KIT_DK]); x++)
        cr_expect(dk[x] == 0.0, "dk[%lld] = %g: one key, P = 1, dS = 0", (long long)x, dk[x]);
    free(dv), free(dq), free(dk);
    kit_problem_free(&pr);
}

Test(half_rounding, f16_dv_overflows_to_inf_exactly_at_65520)
{
    check_dv_overflow(FA_F16);
}

Test(half_rounding, f16_kv_with_f32_queries_dv_overflows_to_inf_exactly_at_65520)
{
    check_dv_overflow(FA_F32);
}

/* ---- NaN --------------------------------------------------------------------------------- */

/* Where the oracle's value is NaN the library's must be NaN, and where it is finite the library's
 * must be finite (hu_compare's non-finite mismatches). */
static void expect_nan_pattern(const char *what, const fa_tensor *lib, const double *oracle, const char *desc)
{
    double *x = hu_view_copy(lib);
    hu_err e = hu_compare(x, oracle, hu_numel(lib));
    int64_t nans = 0;
    for (int64_t i = 0; i < hu_numel(lib); i++) nans += isnan(oracle[i]) != 0;
    cr_expect_eq(e.mismatches, 0,
                 "%s: %s: %lld elements whose NaN-ness differs from the oracle's, first at %lld "
                 "(lib %g, oracle %g)",
                 desc, what, (long long)e.mismatches, (long long)e.first_mismatch, e.worst_x, e.worst_ref);
    cr_expect_gt(nans, 0, "%s: %s: the oracle has no NaN, the case tests nothing", desc, what);
    free(x);
}

/* A NaN in k (all of a row's outputs and its lse), in v (one column of out), in dout (dq of that
 * row, dk of the keys it sees, one column of their dv), under a top-left causal mask so that only
 * some rows see the poisoned key. */
static void check_nan(fa_dtype qt, fa_dtype kt)
{
    enum { SRC_K, SRC_V, SRC_DOUT };
    for (int src = 0; src < 3; src++) {
        kit_shape sh = {qt, kt, 1, 4, 2, 19, 23, 12, 9, 0};
        tu_rng rng = tu_rng_make(tu_test_part_seed(src == SRC_K ? "k" : src == SRC_V ? "v" : "dout"));
        kit_problem pr;
        hu_make(&pr, &sh, &rng, 2.0);
        fa_params p = FA_PARAMS_INIT;
        p.causal = FA_CAUSAL_TOP_LEFT;
        if (src == SRC_K) kit_tensor_store(&pr.t[KIT_K], 0, 1, 7, 3, NAN);
        if (src == SRC_V) kit_tensor_store(&pr.t[KIT_V], 0, 0, 11, 4, NAN);
        if (src == SRC_DOUT) kit_tensor_store(&pr.t[KIT_DOUT], 0, 2, 13, 5, NAN);
        char desc[200];
        snprintf(desc, sizeof desc, "%s/%s, NaN in %s", hu_dtype_name(qt), hu_dtype_name(kt),
                 src == SRC_K   ? "k"
                 : src == SRC_V ? "v"
                                : "dout");
        cr_assert_eq(hu_forward(NULL, &p, &pr), FA_OK, "%s: %s", desc, fa_last_error());
        int64_t rows = sh.batch * sh.q_heads * sh.q_len;
        double *out_o = malloc(sizeof(double) * (size_t)(rows * sh.dim_v)),
               *lse_o = malloc(sizeof(double) * (size_t)rows);
        if (!out_o || !lse_o) abort();
        ref_forward(&p, &pr.t[KIT_Q], &pr.t[KIT_K], &pr.t[KIT_V], out_o, lse_o);
        if (src != SRC_DOUT) expect_nan_pattern("out", &pr.t[KIT_OUT], out_o, desc);
        if (src == SRC_K) {
            fa_tensor lse_view = fa_tensor_bhsd(pr.lse, FA_F32, sh.batch, sh.q_heads, sh.q_len, 1);
            expect_nan_pattern("lse", &lse_view, lse_o, desc);
        }
        if (src == SRC_DOUT) {
            cr_assert_eq(hu_backward(NULL, &p, &pr), FA_OK, "%s: %s", desc, fa_last_error());
            double *g[3];
            for (int x = 0; x < 3; x++) {
                g[x] = malloc(sizeof(double) * (size_t)(hu_numel(&pr.t[KIT_DQ + x]) + 1));
                if (!g[x]) abort();
            }
            ref_backward(&p, &pr.t[KIT_Q], &pr.t[KIT_K], &pr.t[KIT_V], &pr.t[KIT_DOUT], g[0], g[1], g[2]);
            expect_nan_pattern("dq", &pr.t[KIT_DQ], g[0], desc);
            expect_nan_pattern("dk", &pr.t[KIT_DK], g[1], desc);
            expect_nan_pattern("dv", &pr.t[KIT_DV], g[2], desc);
            for (int x = 0; x < 3; x++) free(g[x]);
        }
        free(out_o), free(lse_o);
        kit_problem_free(&pr);
    }
}

Test(half_rounding, bf16_nan_reaches_exactly_the_outputs_the_oracle_says)
{
    check_nan(FA_BF16, FA_BF16);
}

Test(half_rounding, f16_nan_reaches_exactly_the_outputs_the_oracle_says)
{
    check_nan(FA_F16, FA_F16);
}

Test(half_rounding, half_kv_with_f32_queries_nan_reaches_exactly_the_outputs_the_oracle_says)
{
    check_nan(FA_F32, FA_BF16);
    check_nan(FA_F32, FA_F16);
}

/* An item of more query rows than one block on the dot-product units (block_q 256: blocks of 128
 * and 22 rows, src/drivers/forward_dot.h) shares each key tile's packed values between its blocks. Under
 * a bottom-right mask (20 keys ahead) with one 256-key tile, the first block's rows see keys up to
 * 147, so its product reads the values of keys 148-159 too, against P's zero padding; a NaN at key
 * 150 must still reach only the rows that see it (rows 130 and later), on every table. */
Test(half_rounding, bf16_nan_in_v_of_a_wide_item_reaches_exactly_the_outputs_the_oracle_says)
{
    kit_shape sh = {FA_BF16, FA_BF16, 1, 2, 1, 150, 170, 32, 24, 0};
    tu_rng rng = tu_rng_make(tu_test_part_seed("wide v"));
    kit_problem pr;
    hu_make(&pr, &sh, &rng, 2.0);
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_BOTTOM_RIGHT;
    kit_tensor_store(&pr.t[KIT_V], 0, 0, 150, 4, NAN);
    fa_context *ctx = tu_context(0, 256, 256);
    cr_assert_eq(hu_forward(ctx, &p, &pr), FA_OK, "%s", fa_last_error());
    double *out_o = malloc(sizeof(double) * (size_t)(sh.q_heads * sh.q_len * sh.dim_v)),
           *lse_o = malloc(sizeof(double) * (size_t)(sh.q_heads * sh.q_len));
    if (!out_o || !lse_o) abort();
    ref_forward(&p, &pr.t[KIT_Q], &pr.t[KIT_K], &pr.t[KIT_V], out_o, lse_o);
    expect_nan_pattern("out", &pr.t[KIT_OUT], out_o, "bf16, blocks 256/256, NaN in v at key 150");
    free(out_o), free(lse_o);
    fa_context_destroy(ctx);
    kit_problem_free(&pr);
}
