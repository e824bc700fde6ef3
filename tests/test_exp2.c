/* SPDX-License-Identifier: BSD-3-Clause */
/* The vectorized exp2 of each SIMD kernel table, measured against exp2 in long double.
 *
 * Documented accuracy (src/kernels/kernels.h and the tables' headers): relative error <= 2e-7
 * for f32 and <= 4e-16 for f64 over the arguments the softmax feeds it (x <= 0 down to where
 * the result underflows); exp2(-inf) is exactly 0 (a masked score), exp2(0) is exactly 1 (the
 * row maximum), NaN stays NaN. White-box: the tables' exp2 entry points are internal. */
#include <criterion/criterion.h>

#if defined(__x86_64__) /* the SIMD tables exist on x86-64 builds only */
#include <math.h>
#include <stdlib.h>

#include "kernels/avx2/avx2.h"
#include "kernels/avx512/avx512.h"

typedef void (*exp2_f32_fn)(const float *, float *, int64_t);
typedef void (*exp2_f64_fn)(const double *, double *, int64_t);

static int cpu_has(const char *isa)
{
    __builtin_cpu_init();
    if (isa[3] == '5') return __builtin_cpu_supports("avx512f");
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

enum { N = 1 << 18 }; /* a multiple of every vector width */

/* The oracle and the edge expectations are the same for both widths; only the arguments, the
 * vector type and the bound differ, so the two checks below share these. f64 selects the element
 * type (float or double) of x and y; reading either into long double or double is exact, so nothing
 * is measured differently than with a loop per type. */

/* Expects the largest relative error of y = exp2(x) against exp2l, over N arguments, to be <= tol;
 * logs it for `range`. */
static void expect_accurate(const char *isa, int f64, const void *x, const void *y, double tol,
                            const char *range)
{
    double worst = 0, at = 0;
    for (int i = 0; i < N; i++) {
        long double xi = f64 ? ((const double *)x)[i] : ((const float *)x)[i];
        long double yi = f64 ? ((const double *)y)[i] : ((const float *)y)[i];
        long double want = exp2l(xi);
        double rel = (double)(fabsl(yi - want) / want);
        if (rel > worst) worst = rel, at = (double)xi;
    }
    const char *type = f64 ? "f64" : "f32";
    cr_expect(worst <= tol, "%s %s exp2: relative error %.3g at x = %.*g", isa, type, worst, f64 ? 17 : 9,
              at);
    cr_log_info("%s %s exp2 on %s: worst relative error %.3g", isa, type, range, worst);
}

/* out: exp2 of -inf, NaN, 0, two arguments far below underflow, 1 and 10, as double (which keeps a
 * float's value, sign and NaN-ness). */
static void expect_edges(const char *isa, int f64, const double out[7])
{
    const char *type = f64 ? "f64" : "f32";
    cr_expect(out[0] == 0.0 && !signbit(out[0]), "%s %s exp2(-inf) = %g, not +0", isa, type, out[0]);
    cr_expect(isnan(out[1]), "%s %s exp2(NaN) = %g", isa, type, out[1]);
    cr_expect(out[2] == 1.0, "%s %s exp2(0) = %.*g", isa, type, f64 ? 17 : 9, out[2]);
    cr_expect(out[3] == 0.0 && out[4] == 0.0, "%s %s exp2 far below underflow: %g %g", isa, type, out[3],
              out[4]);
    cr_expect(out[5] == 2.0 && out[6] == 1024.0, "%s %s exp2 at small integers: %g %g", isa, type, out[5],
              out[6]);
}

static void check_f32(const char *isa, exp2_f32_fn fn)
{
    if (!cpu_has(isa)) {
        cr_log_info("%s: not on this CPU, its exp2 is exercised on machines that have it", isa);
        return;
    }
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    /* [-1, 1] densely (the polynomial's whole reduced range, twice), then [-126, 0] (normal results) */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < N; i++) x[i] = pass == 0 ? -1.0f + 2.0f * (float)i / N : -126.0f * (float)i / N;
        fn(x, y, N);
        expect_accurate(isa, 0, x, y, 2e-7, pass ? "[-126,0]" : "[-1,1]");
    }
    float special[16] = {-INFINITY, NAN, 0.0f, -200.0f, -1e30f, 1.0f, 10.0f, -149.5f};
    float out[16];
    fn(special, out, 16);
    double edges[7];
    for (int i = 0; i < 7; i++) edges[i] = out[i];
    expect_edges(isa, 0, edges);
    free(x);
    free(y);
}

static void check_f64(const char *isa, exp2_f64_fn fn)
{
    if (!cpu_has(isa)) {
        cr_log_info("%s: not on this CPU, its exp2 is exercised on machines that have it", isa);
        return;
    }
    double *x = malloc(sizeof(double) * N), *y = malloc(sizeof(double) * N);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < N; i++) x[i] = pass == 0 ? -1.0 + 2.0 * i / N : -1022.0 * i / N;
        fn(x, y, N);
        expect_accurate(isa, 1, x, y, 4e-16, pass ? "[-1022,0]" : "[-1,1]");
    }
    double special[8] = {-INFINITY, NAN, 0.0, -1100.0, -1e300, 1.0, 10.0, -1074.5};
    double out[8];
    fn(special, out, 8);
    expect_edges(isa, 1, out);
    free(x);
    free(y);
}

Test(exp2, avx512_f32_within_2e_7_and_exact_at_the_edges) { check_f32("avx512", fa_avx512_exp2_f32); }
Test(exp2, avx512_f64_within_4e_16_and_exact_at_the_edges) { check_f64("avx512", fa_avx512_exp2_f64); }
Test(exp2, avx2_f32_within_2e_7_and_exact_at_the_edges) { check_f32("avx2", fa_avx2_exp2_f32); }
Test(exp2, avx2_f64_within_4e_16_and_exact_at_the_edges) { check_f64("avx2", fa_avx2_exp2_f64); }

#endif
