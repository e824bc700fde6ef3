/* SPDX-License-Identifier: BSD-3-Clause */
/* The float tanh of the SIMD tables' softcap, measured against tanhl in long double.
 *
 * Documented accuracy (src/kernels/score_mods.h): within 1.3 ulp of tanh (1.254 over every float,
 * at x = 1.0458), never above 1 in magnitude, odd to the bit, tanh(±0) = ±0, tanh(±inf) = ±1
 * exactly (so softcap(±inf) = ±softcap), NaN stays NaN, and a subnormal x gives x itself. Checked
 * here on dense sweeps: every float of [0.5, 2] (both halves of the approximation and the switch
 * at 1 between them), an even sweep of [-12, 12] (through saturation, where tanh rounds to 1 from
 * 9.01 on), and 2^10 mantissas of every binade from 2^-30 up to 1 and from 16 to FLT_MAX. glibc's
 * tanhf (what a naive f32 implementation calls) is measured alongside, for the log only.
 * White-box: the tables' tanh entry points are internal. */
#include <criterion/criterion.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "simd_tables.h"
#include "util.h"

typedef void (*tanh_f32_fn)(const float *, float *, int64_t);

static int cpu_has(const char *isa)
{
    for (int t = 0; t < st_count; t++)
        if (strcmp(st_tables[t].name, isa) == 0) return st_runs(&st_tables[t]);
    return 0;
}

/* The error of y against tanhl(x), in units of the last place of the exact value as a float. Where
 * long double is a software binary128 (aarch64), tanh in double instead: within an ulp of double,
 * 2^-29 of a float's, it measures the same to the third decimal, and the sweep takes seconds rather
 * than minutes (six under qemu). */
#if LDBL_MANT_DIG > 64
#define tanhl(x) ((long double)tanh((double)(x)))
#endif
static double ulp_error(float x, float y)
{
    long double t = tanhl((long double)x);
    int e;
    frexpl(t, &e);
    long double ulp = ldexpl(1.0L, e - 24);
    if (ulp < 0x1p-149L) ulp = 0x1p-149L; /* subnormal results: the smallest step */
    return (double)(fabsl((long double)y - t) / ulp);
}

/* The arguments: their count is a multiple of 16 (the avx512 entry's unit). */
static float *sweep(int64_t *count)
{
    enum { EVEN = 1 << 21, PER_BINADE = 1 << 10 };
    int64_t cap = (1 << 24) + EVEN + 2 * 256 * PER_BINADE + 64, n = 0;
    float *x = malloc(sizeof(float) * (size_t)cap);
    for (float v = 0.5f; v <= 2.0f; v = tu_float_step(v, 1)) x[n++] = v; /* every float of [0.5, 2] */
    for (int64_t i = 0; i < EVEN; i++) x[n++] = -12.0f + 24.0f * (float)i / EVEN;
    for (int e = -30; e <= 127; e++) {
        if (e == 0) e = 4; /* [1, 16) is covered above */
        for (int m = 0; m < PER_BINADE; m++) x[n++] = ldexpf(1.0f + (float)m / PER_BINADE, e);
    }
    while (n % 16) x[n++] = 1.0f;
    *count = n;
    return x;
}

static void check_tanh(const char *isa, tanh_f32_fn fn)
{
    if (!cpu_has(isa)) {
        cr_log_info("%s: not on this CPU, its tanh is exercised on machines that have it", isa);
        return;
    }
    int64_t n;
    float *x = sweep(&n), *y = malloc(sizeof(float) * (size_t)n), *neg_x = malloc(sizeof(float) * (size_t)n);
    float *neg_y = malloc(sizeof(float) * (size_t)n);
    fn(x, y, n);
    for (int64_t i = 0; i < n; i++) neg_x[i] = -x[i];
    fn(neg_x, neg_y, n);
    double worst = 0, worst_libm = 0;
    float at = 0;
    int64_t above_one = 0, not_odd = 0;
    for (int64_t i = 0; i < n; i++) {
        double err = ulp_error(x[i], y[i]);
        if (err > worst) worst = err, at = x[i];
#if LDBL_MANT_DIG <= 64 /* glibc's, for the log only: not where the oracle is slow (ulp_error) */
        double libm = ulp_error(x[i], tanhf(x[i]));
        if (libm > worst_libm) worst_libm = libm;
#endif
        above_one += fabsf(y[i]) > 1.0f;
        not_odd += memcmp(&neg_y[i], &(float){-y[i]}, sizeof(float)) != 0;
    }
    cr_expect(worst <= 1.3, "%s tanh: %.3f ulp at x = %.9g (documented: within 1.3)", isa, worst, (double)at);
    cr_expect(above_one == 0, "%s tanh: %lld results above 1 in magnitude", isa, (long long)above_one);
    cr_expect(not_odd == 0, "%s tanh: tanh(-x) is not -tanh(x) to the bit for %lld arguments", isa,
              (long long)not_odd);
    cr_log_info("%s tanh: worst %.3f ulp at x = %.9g over %lld arguments; glibc tanhf: %.3f ulp", isa, worst,
                (double)at, (long long)n, worst_libm);

    /* the edges, exactly */
    float special[16] = {0.0f,     -0.0f,  INFINITY, -INFINITY, NAN,        -NAN,    FLT_MAX,
                         -FLT_MAX, 10.0f,  -10.0f,   0x1p-149f, -0x1p-149f, FLT_MIN, 0x1.fffffcp-127f,
                         1e-20f,   -1e-20f};
    float out[16];
    fn(special, out, 16);
    cr_expect(out[0] == 0 && !signbit(out[0]) && out[1] == 0 && signbit(out[1]), "%s tanh(±0) = %a, %a", isa,
              (double)out[0], (double)out[1]);
    cr_expect(out[2] == 1.0f && out[3] == -1.0f, "%s tanh(±inf) = %a, %a, not ±1", isa, (double)out[2],
              (double)out[3]);
    cr_expect(isnan(out[4]) && isnan(out[5]), "%s tanh(NaN) = %g, %g", isa, (double)out[4], (double)out[5]);
    cr_expect(out[6] == 1.0f && out[7] == -1.0f && out[8] == 1.0f && out[9] == -1.0f,
              "%s tanh saturates to ±1 exactly: %a %a %a %a", isa, (double)out[6], (double)out[7],
              (double)out[8], (double)out[9]);
    for (int i = 10; i < 16; i++)
        cr_expect(out[i] == special[i], "%s tanh(%a) = %a: below 2^-12, tanh(x) rounds to x", isa,
                  (double)special[i], (double)out[i]);
    free(x);
    free(y);
    free(neg_x);
    free(neg_y);
}

/* every SIMD table of the build (simd_tables.h) this CPU runs */
Test(tanh, every_simd_tables_f32_within_1_3_ulp_odd_and_exact_at_the_edges)
{
    for (int t = 0; t < st_count; t++) check_tanh(st_tables[t].name, st_tables[t].tanh_f32);
}
