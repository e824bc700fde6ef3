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
        double worst = 0, at = 0;
        for (int i = 0; i < N; i++) {
            long double want = exp2l((long double)x[i]);
            double rel = (double)(fabsl((long double)y[i] - want) / want);
            if (rel > worst) worst = rel, at = x[i];
        }
        cr_expect(worst <= 2e-7, "%s f32 exp2: relative error %.3g at x = %.9g", isa, worst, at);
        cr_log_info("%s f32 exp2 on %s: worst relative error %.3g", isa, pass ? "[-126,0]" : "[-1,1]", worst);
    }
    float special[16] = {-INFINITY, NAN, 0.0f, -200.0f, -1e30f, 1.0f, 10.0f, -149.5f};
    float out[16];
    fn(special, out, 16);
    cr_expect(out[0] == 0.0f && !signbit(out[0]), "%s f32 exp2(-inf) = %g, not +0", isa, out[0]);
    cr_expect(isnan(out[1]), "%s f32 exp2(NaN) = %g", isa, out[1]);
    cr_expect(out[2] == 1.0f, "%s f32 exp2(0) = %.9g", isa, out[2]);
    cr_expect(out[3] == 0.0f && out[4] == 0.0f, "%s f32 exp2 far below underflow: %g %g", isa, out[3], out[4]);
    cr_expect(out[5] == 2.0f && out[6] == 1024.0f, "%s f32 exp2 at small integers: %g %g", isa, out[5], out[6]);
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
        double worst = 0, at = 0;
        for (int i = 0; i < N; i++) {
            long double want = exp2l((long double)x[i]);
            double rel = (double)(fabsl((long double)y[i] - want) / want);
            if (rel > worst) worst = rel, at = x[i];
        }
        cr_expect(worst <= 4e-16, "%s f64 exp2: relative error %.3g at x = %.17g", isa, worst, at);
        cr_log_info("%s f64 exp2 on %s: worst relative error %.3g", isa, pass ? "[-1022,0]" : "[-1,1]", worst);
    }
    double special[8] = {-INFINITY, NAN, 0.0, -1100.0, -1e300, 1.0, 10.0, -1074.5};
    double out[8];
    fn(special, out, 8);
    cr_expect(out[0] == 0.0 && !signbit(out[0]), "%s f64 exp2(-inf) = %g, not +0", isa, out[0]);
    cr_expect(isnan(out[1]), "%s f64 exp2(NaN) = %g", isa, out[1]);
    cr_expect(out[2] == 1.0, "%s f64 exp2(0) = %.17g", isa, out[2]);
    cr_expect(out[3] == 0.0 && out[4] == 0.0, "%s f64 exp2 far below underflow: %g %g", isa, out[3], out[4]);
    cr_expect(out[5] == 2.0 && out[6] == 1024.0, "%s f64 exp2 at small integers: %g %g", isa, out[5], out[6]);
    free(x);
    free(y);
}

Test(exp2, avx512_f32_within_2e_7_and_exact_at_the_edges) { check_f32("avx512", fa_avx512_exp2_f32); }
Test(exp2, avx512_f64_within_4e_16_and_exact_at_the_edges) { check_f64("avx512", fa_avx512_exp2_f64); }
Test(exp2, avx2_f32_within_2e_7_and_exact_at_the_edges) { check_f32("avx2", fa_avx2_exp2_f32); }
Test(exp2, avx2_f64_within_4e_16_and_exact_at_the_edges) { check_f64("avx2", fa_avx2_exp2_f64); }

#endif
