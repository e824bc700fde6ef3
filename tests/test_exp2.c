/* SPDX-License-Identifier: BSD-3-Clause */
/* The exp of every kernel table, measured against exp2l / expl in long double.
 *
 * Documented accuracy (src/kernels/kernels.h and the tables' headers): the SIMD tables' exp2 has
 * relative error <= 2e-7 for f32 (avx512's, split at floor(x) with a minimax polynomial: <= 1e-7,
 * kernels/exp2_poly.h) and <= 4e-16 for f64 over the arguments the softmax feeds it
 * (x <= 0); exp2(-inf) is exactly 0 (a masked score), exp2(0) is exactly 1 (the row maximum), NaN
 * stays NaN. Results below the smallest normal are flushed (include/flashattn.h, "Subnormals"):
 * exp2 of every x below -126 (f32) / -1022 (f64) is exactly +0, of every x at or above it a normal
 * number; and every table's kernels that exponentiate scores (the forward's online softmax, the
 * backward's probabilities) give +0 or a normal number, never a subnormal. White-box: the tables
 * and their exp2 entry points are internal; every SIMD table of the build (simd_tables.h: avx2 and
 * avx512, or neon and sve at each vector length compiled) that this CPU runs. */
#include <criterion/criterion.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "simd_tables.h"
#include "util.h"

typedef void (*exp2_f32_fn)(const float *, float *, int64_t);
typedef void (*exp2_f64_fn)(const double *, double *, int64_t);

static int cpu_has(const char *isa)
{
    if (strcmp(isa, "ref") == 0) return 1;
    for (int t = 0; t < st_count; t++)
        if (strcmp(st_tables[t].name, isa) == 0) return st_runs(&st_tables[t]);
    return 0;
}

enum { N = 1 << 18 }; /* a multiple of every vector width */

/* The oracle and the edge expectations are the same for both widths; only the arguments, the
 * vector type and the bound differ, so the checks below share these. f64 selects the element
 * type (float or double) of x and y; reading either into long double or double is exact, so nothing
 * is measured differently than with a loop per type. */

/* Where long double is a software binary128 (aarch64; under qemu exp2l and expl took minutes), the
 * f32 checks' oracle is libm's double exp2 and exp (within an ulp of double: 1e-16, a billionth of
 * their 1e-7 bounds). f64 keeps long double. */
#define SOFT_QUAD (LDBL_MANT_DIG > 64)
static long double elem(int f64, const void *a, int64_t i)
{
    return f64 ? ((const double *)a)[i] : ((const float *)a)[i];
}

/* Expects the largest relative error of y = exp2(x) against exp2l, over n arguments, to be <= tol,
 * and every y to be a normal number (the flush gives no subnormal above the threshold); logs the
 * error for `range`. */
static void expect_accurate(const char *isa, int f64, const void *x, const void *y, int64_t n, double tol,
                            const char *range)
{
    double worst = 0, at = 0;
    int64_t not_normal = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        long double xi = elem(f64, x, i), yi = elem(f64, y, i);
        long double want = f64 || !SOFT_QUAD ? exp2l(xi) : (long double)exp2((double)xi);
        double rel = (double)(fabsl(yi - want) / want);
        if (rel > worst) worst = rel, at = (double)xi;
        if (!(yi >= (f64 ? DBL_MIN : FLT_MIN)) && not_normal++ == 0) first = i;
    }
    const char *type = f64 ? "f64" : "f32";
    cr_expect(worst <= tol, "%s %s exp2 on %s: relative error %.3g at x = %.*g", isa, type, range, worst,
              f64 ? 17 : 9, at);
    cr_expect(not_normal == 0, "%s %s exp2 on %s: %lld results below the smallest normal, first at x = %.*g",
              isa, type, range, (long long)not_normal, f64 ? 17 : 9,
              first < 0 ? 0.0 : (double)elem(f64, x, first));
    cr_log_info("%s %s exp2 on %s: worst relative error %.3g", isa, type, range, worst);
}

/* Expects every y to be exactly +0 (the flush, and exp2(-inf)). */
static void expect_flushed(const char *isa, int f64, const void *x, const void *y, int64_t n,
                           const char *range)
{
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        long double yi = elem(f64, y, i);
        if (!(yi == 0 && !signbit(yi)) && bad++ == 0) first = i;
    }
    cr_expect(bad == 0, "%s %s exp2 on %s: %lld of %lld results are not +0, first exp2(%.*g) = %.*Lg", isa,
              f64 ? "f64" : "f32", range, (long long)bad, (long long)n, f64 ? 17 : 9,
              first < 0 ? 0.0 : (double)elem(f64, x, first), f64 ? 17 : 9,
              first < 0 ? 0.0L : elem(f64, y, first));
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

static void check_f32(const char *isa, exp2_f32_fn fn, double tol)
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
        expect_accurate(isa, 0, x, y, N, tol, pass ? "[-126,0]" : "[-1,1]");
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
        expect_accurate(isa, 1, x, y, N, 4e-16, pass ? "[-1022,0]" : "[-1,1]");
    }
    double special[8] = {-INFINITY, NAN, 0.0, -1100.0, -1e300, 1.0, 10.0, -1074.5};
    double out[8];
    fn(special, out, 8);
    expect_edges(isa, 1, out);
    free(x);
    free(y);
}

/* Each table's f32 exp2 within its documented bound (2e-7, or 1e-7 with the floor split), f64 within
 * 4e-16, both exact at the edges. */
Test(exp2, every_simd_tables_f32_within_its_bound_and_exact_at_the_edges)
{
    for (int t = 0; t < st_count; t++)
        check_f32(st_tables[t].name, st_tables[t].exp2_f32, st_tables[t].exp2_f32_tol);
}
Test(exp2, every_simd_tables_f64_within_4e_16_and_exact_at_the_edges)
{
    for (int t = 0; t < st_count; t++) check_f64(st_tables[t].name, st_tables[t].exp2_f64);
}

/* ---- the flush at the smallest normal, exactly at log2 of it ----------------------------------
 * Below the threshold: every float of [-128, -126) (all 2^18 of them) and, further down, 2^10
 * evenly spaced mantissas of every binade down to -FLT_MAX, and -inf. At and above it: every float
 * of [-126, -125], whose results are the smallest normals. For double, 2^18 consecutive doubles on
 * each side of -1022, an even sweep of [-1024, -1022) and [-1022, -1021], the binades below. */

static void check_flush_f32(const char *isa, exp2_f32_fn fn, double tol)
{
    if (!cpu_has(isa)) {
        cr_log_info("%s: not on this CPU, its exp2 is exercised on machines that have it", isa);
        return;
    }
    enum { BINADES = 254 - 134 + 1, PER_BINADE = 1 << 10, M = N + BINADES * PER_BINADE + 16 };
    float *x = malloc(sizeof(float) * M), *y = malloc(sizeof(float) * M);
    int64_t n = 0;
    /* the 2^18 floats of [-128, -126): ulp 2^-16 there, so 2 · 2^16 · 2 = 2^18 */
    for (int64_t k = 1; tu_float_step(-126.0f, k) >= -128.0f; k++) x[n++] = tu_float_step(-126.0f, k);
    cr_assert_eq(n, N, "the floats of [-128, -126) are %lld", (long long)n);
    /* biased exponents 134 (|x| in [128, 256)) to 254 (the last finite binade, up to -FLT_MAX) */
    for (uint32_t e = 134; e <= 254; e++)
        for (uint32_t m = 0; m < PER_BINADE; m++) {
            uint32_t mantissa = m == PER_BINADE - 1 ? (1u << 23) - 1 : m * ((1u << 23) / PER_BINADE);
            uint32_t b = 0x80000000u | e << 23 | mantissa;
            memcpy(&x[n++], &b, sizeof b);
        }
    while (n % 16) x[n++] = -INFINITY;
    fn(x, y, n);
    expect_flushed(isa, 0, x, y, n, "(-inf, -126)");

    /* [-126, -125]: every float, -126 and -125 included (2^17 + 1, then padded with -125) */
    n = 0;
    for (int64_t k = 0; tu_float_step(-126.0f, -k) <= -125.0f; k++) x[n++] = tu_float_step(-126.0f, -k);
    while (n % 16) x[n++] = -125.0f;
    fn(x, y, n);
    expect_accurate(isa, 0, x, y, n, tol, "[-126,-125]");
    cr_expect(y[0] == FLT_MIN, "%s f32 exp2(-126) = %a, not FLT_MIN", isa, (double)y[0]);
    free(x);
    free(y);
}

static void check_flush_f64(const char *isa, exp2_f64_fn fn)
{
    if (!cpu_has(isa)) {
        cr_log_info("%s: not on this CPU, its exp2 is exercised on machines that have it", isa);
        return;
    }
    enum { BINADES = 2046 - 1033 + 1, PER_BINADE = 1 << 8, M = 2 * N + BINADES * PER_BINADE + 8 };
    double *x = malloc(sizeof(double) * M), *y = malloc(sizeof(double) * M);
    int64_t n = 0;
    for (int64_t k = 1; k <= N; k++) x[n++] = tu_double_step(-1022.0, k);   /* just below -1022 */
    for (int64_t i = 0; i < N; i++) x[n++] = -1024.0 + 2.0 * (double)i / N; /* [-1024, -1022) */
    /* biased exponents 1033 (|x| in [1024, 2048)) to 2046 (the last finite binade, up to -DBL_MAX) */
    for (uint64_t e = 1033; e <= 2046; e++)
        for (uint64_t m = 0; m < PER_BINADE; m++) {
            uint64_t mantissa = m == PER_BINADE - 1 ? (1ull << 52) - 1 : m * ((1ull << 52) / PER_BINADE);
            uint64_t b = 0x8000000000000000ull | e << 52 | mantissa;
            memcpy(&x[n++], &b, sizeof b);
        }
    while (n % 8) x[n++] = -INFINITY;
    fn(x, y, n);
    expect_flushed(isa, 1, x, y, n, "(-inf, -1022)");

    n = 0;
    for (int64_t k = 0; k < N; k++) x[n++] = tu_double_step(-1022.0, -k); /* -1022 and just above */
    for (int64_t i = 0; i <= N; i++) x[n++] = -1022.0 + (double)i / N;    /* [-1022, -1021] */
    while (n % 8) x[n++] = -1021.0;
    fn(x, y, n);
    expect_accurate(isa, 1, x, y, n, 4e-16, "[-1022,-1021]");
    cr_expect(y[0] == DBL_MIN, "%s f64 exp2(-1022) = %a, not DBL_MIN", isa, y[0]);
    free(x);
    free(y);
}

Test(exp2, every_simd_tables_f32_is_zero_below_minus_126_and_normal_from_it)
{
    for (int t = 0; t < st_count; t++)
        check_flush_f32(st_tables[t].name, st_tables[t].exp2_f32, st_tables[t].exp2_f32_tol);
}
Test(exp2, every_simd_tables_f64_is_zero_below_minus_1022_and_normal_from_it)
{
    for (int t = 0; t < st_count; t++) check_flush_f64(st_tables[t].name, st_tables[t].exp2_f64);
}

/* ---- every table's kernels that exponentiate scores ---------------------------------------------
 * The forward's online_softmax (row max 0, so p = exp(s)) and the backward's probabilities (lse 0,
 * so p = exp(s)), on one column of scores: the 2^19 floats around ln(smallest normal) (within 2 of
 * it), or 2^18 consecutive doubles there and 2^18 more 2^-24 apart; an even sweep from below the
 * subnormal range to 0; -inf and -FLT_MAX / -DBL_MAX.
 * Every p must be +0 or normal; p = +0 where exp(s) is below the smallest normal by more than the
 * rounding of s·log2 e (the SIMD tables flush on that product, ref on expf's result), and p accurate
 * where it is above by as much: relative error <= the exp2 bound + 2·u·|s| (the product's rounding
 * and log2 e's, u the unit roundoff; ref's libm exp is within one ulp). */

typedef struct {
    const char *name;
    const fa_kernels_f32 *f32;
    const fa_kernels_f64 *f64;
} table;

/* s (n scores, n a multiple of 16) as a 64-byte aligned column; kernel 0 = online_softmax, 1 =
 * probabilities; p (n values, as long double in out) is what the table computed. */
static void run_kernel(const table *t, int f64, int kernel, const long double *s, int64_t n, long double *out)
{
    size_t es = f64 ? sizeof(double) : sizeof(float);
    size_t bytes = (size_t)n * es;
    void *tile = aligned_alloc(64, bytes), *zero = aligned_alloc(64, bytes), *sum = aligned_alloc(64, bytes);
    void *acc = aligned_alloc(64, 64);
    memset(zero, 0, bytes);
    memset(sum, 0, bytes);
    for (int64_t i = 0; i < n; i++)
        if (f64)
            ((double *)tile)[i] = (double)s[i];
        else
            ((float *)tile)[i] = (float)s[i];
    const fa_kernels_f32 *k32 = t->f32 ? t->f32 : fa_kernels_ref.f32;
    const fa_kernels_f64 *k64 = t->f64 ? t->f64 : fa_kernels_ref.f64;
    /* rows = 0: the rows are all padding as far as the accumulator goes, which is never touched */
    if (f64 && kernel == 0) k64->online_softmax(0, n, 1, tile, zero, sum, acc, 8, 8);
    if (f64 && kernel == 1) k64->probabilities(n, 1, tile, zero);
    if (!f64 && kernel == 0) k32->online_softmax(0, n, 1, tile, zero, sum, acc, 16, 16);
    if (!f64 && kernel == 1) k32->probabilities(n, 1, tile, zero);
    for (int64_t i = 0; i < n; i++) out[i] = elem(f64, tile, i);
    free(tile);
    free(zero);
    free(sum);
    free(acc);
}

static void check_table_kernels(int f64)
{
    const long double smallest = f64 ? DBL_MIN : FLT_MIN, u = f64 ? 0x1p-53L : 0x1p-24L;
    const long double exp2_tol = f64 ? 4e-16L : 2e-7L, thr = logl(smallest);
    enum { DENSE = 1 << 18, SWEEP = 1 << 16, M = 2 * DENSE + SWEEP + 32 };
    long double *s = malloc(sizeof(long double) * M), *p = malloc(sizeof(long double) * M);
    int64_t n = 0;
    /* Every score is a value of the element type, so expl sees what the kernel sees. */
    float t32 = (float)thr;
    double t64 = (double)thr;
    for (int64_t k = -DENSE; k < DENSE; k++)
        s[n++] = f64 ? (long double)(k < 0 ? tu_double_step(t64, k + DENSE / 2)
                                           : t64 + (double)(k - DENSE / 2) * 0x1p-24)
                     : (long double)tu_float_step(t32, k);
    for (int64_t i = 0; i < SWEEP; i++) { /* [1.25·thr, 0] */
        long double v = (thr * 1.25L) * (long double)i / SWEEP;
        s[n++] = f64 ? (long double)(double)v : (long double)(float)v;
    }
    s[n++] = -INFINITY;
    s[n++] = f64 ? -DBL_MAX : -FLT_MAX;
    while (n % 16) s[n++] = 0;
    for (int ti = 0; ti <= st_count; ti++) { /* ref, then the SIMD tables */
        const table tt = ti == 0
                             ? (table){"ref", NULL, NULL}
                             : (table){st_tables[ti - 1].name, st_tables[ti - 1].f32, st_tables[ti - 1].f64};
        const table *t = &tt;
        if (ti == 0 && !st_ref_wanted()) continue; /* FA_TEST_SIMD names the tables to check */
        if (!cpu_has(t->name)) {
            cr_log_info("%s: not on this CPU, its kernels are exercised on machines that have it", t->name);
            continue;
        }
        for (int kernel = 0; kernel < 2; kernel++) {
            const char *kname = kernel ? "probabilities" : "online_softmax";
            run_kernel(t, f64, kernel, s, n, p);
            int64_t subnormal = 0, not_flushed = 0, inaccurate = 0, first[3] = {-1, -1, -1};
            long double worst = 0;
            for (int64_t i = 0; i < n; i++) {
                long double want = f64 || !SOFT_QUAD ? expl(s[i]) : (long double)exp((double)s[i]);
                long double band = exp2_tol + 4 * u * fabsl(s[i]);
                long double tol = exp2_tol + 2 * u * fabsl(s[i]) + (f64 ? 0x1p-52L : 0x1p-23L);
                if (!(p[i] == 0 ? !signbit(p[i]) : p[i] >= smallest) && subnormal++ == 0) first[0] = i;
                if (want < smallest * (1 - band) && p[i] != 0 && not_flushed++ == 0) first[1] = i;
                if (want >= smallest * (1 + band)) {
                    long double rel = fabsl(p[i] - want) / want;
                    if (rel > worst) worst = rel;
                    if (!(rel <= tol) && inaccurate++ == 0) first[2] = i;
                }
            }
            const char *type = f64 ? "f64" : "f32";
            cr_expect(subnormal == 0,
                      "%s %s %s: %lld values are neither +0 nor normal, first exp(%.17Lg) = %.17Lg", t->name,
                      type, kname, (long long)subnormal, first[0] < 0 ? 0.0L : s[first[0]],
                      first[0] < 0 ? 0.0L : p[first[0]]);
            cr_expect(
                not_flushed == 0,
                "%s %s %s: %lld values below the smallest normal not flushed, first exp(%.17Lg) = %.17Lg",
                t->name, type, kname, (long long)not_flushed, first[1] < 0 ? 0.0L : s[first[1]],
                first[1] < 0 ? 0.0L : p[first[1]]);
            cr_expect(inaccurate == 0,
                      "%s %s %s: %lld values off by more than the bound, first exp(%.17Lg) = %.17Lg", t->name,
                      type, kname, (long long)inaccurate, first[2] < 0 ? 0.0L : s[first[2]],
                      first[2] < 0 ? 0.0L : p[first[2]]);
            cr_log_info("%s %s %s: worst relative error %.3Lg above the smallest normal", t->name, type,
                        kname, worst);
        }
    }
    free(s);
    free(p);
}

Test(exp2, every_tables_f32_probabilities_are_zero_below_flt_min_and_accurate_above)
{
    check_table_kernels(0);
}
Test(exp2, every_tables_f64_probabilities_are_zero_below_dbl_min_and_accurate_above)
{
    check_table_kernels(1);
}
