/* SPDX-License-Identifier: BSD-3-Clause */
/* The polynomial every SIMD table's exp2 uses for 2^f on |f| <= 1/2, after it has split x into an
 * integer n and f = x - n: 2^f = e^(f ln 2) = sum_k (ln 2)^k / k! · f^k, Taylor, evaluated by
 * Horner from the highest degree down (each table with its own FMA, in this order).
 *
 * Truncation on |f| <= 1/2: degree 7 leaves < 8e-9 relative (f32: the result is within 2e-7 of
 * exp2, tests/test_exp2.c), degree 13 leaves < 7e-18 (f64: within a few ulp, so the exactness mode
 * stays exact). Taylor rather than minimax because its coefficients are exact closed forms. */
#ifndef FA_KERNELS_EXP2_POLY_H
#define FA_KERNELS_EXP2_POLY_H

#define FA_EXP2_DEGREE_F32 7
static const float fa_exp2_coef_f32[FA_EXP2_DEGREE_F32 + 1] = {
    1.0f, 6.931471806e-01f, 2.402265070e-01f, 5.550410866e-02f, 9.618129108e-03f, 1.333355815e-03f,
    1.540353039e-04f, 1.525273380e-05f};

#define FA_EXP2_DEGREE_F64 13
static const double fa_exp2_coef_f64[FA_EXP2_DEGREE_F64 + 1] = {
    1.0,                   0.6931471805599453,     0.2402265069591007,    0.055504108664821576,
    0.009618129107628477,  0.0013333558146428441,  0.00015403530393381606, 1.5252733804059838e-05,
    1.3215486790144305e-06, 1.0178086009239696e-07, 7.054911620801121e-09, 4.44553827187081e-10,
    2.5678435993488196e-11, 1.3691488853904124e-12};

#endif
