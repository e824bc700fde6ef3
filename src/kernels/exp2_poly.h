/* SPDX-License-Identifier: BSD-3-Clause */
/* The polynomials the SIMD tables' exp2 uses for 2^f, after splitting x into an integer n and a
 * fraction f (simd/simd.h evaluates them by Horner from the highest degree down, with its FMA).
 *
 * Round to nearest, |f| <= 1/2 (avx2; avx512 f64): 2^f = e^(f ln 2) = sum_k (ln 2)^k / k! · f^k,
 * Taylor. Truncation on |f| <= 1/2: degree 7 leaves < 8e-9 relative (f32: the result is within
 * 2e-7 of exp2, tests/test_exp2.c), degree 13 leaves < 7e-18 (f64: within a few ulp, so the
 * exactness mode stays exact). Taylor here because its coefficients are exact closed forms.
 *
 * Round down, f = x - floor(x) in [0, 1] (avx512 f32: vreduceps, then vscalefps by floor(x)): on the
 * whole [0, 1) Taylor would need degree 9 for the same accuracy, so this one is a minimax fit of
 * degree 6 for the relative error, p(f) = 1 + f·q(f) with the constant fixed to exactly 1 (so
 * exp2(0) = 1 exactly, and p >= 1 on [0, 1]: exp2 at or above -126 stays normal). Derived with a
 * Remez exchange in 50-digit arithmetic (mpmath): minimise max |w(f)·(g(f) - q(f))| over q of
 * degree 5 on [0, 1], g(f) = (2^f - 1)/f, w(f) = f/2^f (that is the relative error of p), starting
 * from the Chebyshev extrema and iterating until the 7 alternation points settle; then each
 * coefficient rounded to the nearest float. Minimax error 2.0e-9; with the float coefficients
 * 1.3e-8 (c1's rounding dominates); evaluated in float with FMAs the result is within 1e-7 of exp2
 * (tests/test_exp2.c measures 6-7e-8: p's last rounding, half an ulp of a number in [1, 2]). */
#ifndef FA_KERNELS_EXP2_POLY_H
#define FA_KERNELS_EXP2_POLY_H

#define FA_EXP2_DEGREE_F32 7
static const float fa_exp2_coef_f32[FA_EXP2_DEGREE_F32 + 1] = {1.0f,
                                                               6.931471806e-01f,
                                                               2.402265070e-01f,
                                                               5.550410866e-02f,
                                                               9.618129108e-03f,
                                                               1.333355815e-03f,
                                                               1.540353039e-04f,
                                                               1.525273380e-05f};

#define FA_EXP2_DEGREE_F64 13
static const double fa_exp2_coef_f64[FA_EXP2_DEGREE_F64 + 1] = {1.0,
                                                                0.6931471805599453,
                                                                0.2402265069591007,
                                                                0.055504108664821576,
                                                                0.009618129107628477,
                                                                0.0013333558146428441,
                                                                0.00015403530393381606,
                                                                1.5252733804059838e-05,
                                                                1.3215486790144305e-06,
                                                                1.0178086009239696e-07,
                                                                7.054911620801121e-09,
                                                                4.44553827187081e-10,
                                                                2.5678435993488196e-11,
                                                                1.3691488853904124e-12};

/* 2^f on [0, 1], minimax (above); hexadecimal, as rounded: 0x1.62e42cp-1 = 6.931470633e-01, ... */
#define FA_EXP2_FLOOR_DEGREE_F32 6
static const float fa_exp2_floor_coef_f32[FA_EXP2_FLOOR_DEGREE_F32 + 1] = {
    1.0f, 0x1.62e42cp-1f, 0x1.ebfd58p-3f, 0x1.c68912p-5f, 0x1.3d0b92p-7f, 0x1.46d64ep-10f, 0x1.c54174p-13f};

#endif
