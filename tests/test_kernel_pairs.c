/* SPDX-License-Identifier: BSD-3-Clause */
/* Every table's bf16 set (kernels.h, "bf16 on dot-product units") against fa_kernels_ref_bf16, the
 * scalar oracle, on this CPU, at every residue of its tiles (16 rows, 32-wide k chunks, pairs):
 *  - the packs (queries in pairs, Vᵀ, rows in pairs) and the conversions of P and dS give ref's
 *    bytes, padding zeros included, for every bf16 pattern (NaN, Inf, subnormals: they only move
 *    bits, or round as ref does), report finiteness as ref does, and write nothing past their output;
 *  - dot is within the bound of a sum of K exact products in f32 (K·2^-24·sum|a·b|) of the double
 *    result, for both modes, writes only its M × N block of C, and reads A only within K;
 *  - online_softmax_pairs leaves the row max ref's (NaN and rows that saw no key included), the
 *    row sums and the transposed accumulator within the f32 tables' tolerance of ref, and P in pairs
 *    within a bf16 step of ref's, its padding zero, nothing written past it.
 * A set whose table the CPU cannot run is named in the log, not run. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_facts.h"
#include "kernels/half.h"
#include "kernels/kernels.h"
#include "runtime/dispatch.h"
#include "util.h"

/* The sets this build has, by table name. */
static const fa_kernels_bf16 *set_named(const char *table)
{
    const fa_kernels *t = fa_kernels_named(table);
    return t ? t->bf16 : NULL;
}

static int64_t up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

/* A buffer of n elements of `size` bytes and 64 guard bytes after it, filled with 0xA5. */
typedef struct {
    unsigned char *p;
    size_t bytes;
} guarded;

static guarded guarded_make(size_t n, size_t size)
{
    guarded g = {aligned_alloc(64, up((int64_t)(n * size + 64), 64)), n * size};
    cr_assert(g.p);
    memset(g.p, 0xA5, g.bytes + 64);
    return g;
}

static int guard_intact(const guarded *g)
{
    for (size_t i = 0; i < 64; i++)
        if (g->p[g->bytes + i] != 0xA5) return 0;
    return 1;
}

/* A bf16 pattern: mostly ordinary values, sometimes NaN, +-Inf, a subnormal or a zero. */
static uint16_t any_bf16(tu_rng *rng)
{
    int64_t kind = tu_rng_below(rng, 16);
    if (kind == 0) return (uint16_t)(0x7fc0u | (uint16_t)tu_rng_below(rng, 64));
    if (kind == 1) return 0xff80u;
    if (kind == 2) return (uint16_t)tu_rng_below(rng, 0x80); /* subnormal or zero */
    return fa_bf16_from_f32((float)tu_rng_uniform(rng, -4, 4));
}

static void check_packs(const char *name, const fa_kernels_bf16 *set, const fa_kernels_bf16 *ref, tu_rng *rng)
{
    const int64_t rows_list[] = {1, 5, 16, 17, 33}, dims[] = {1, 2, 7, 16, 31, 32, 33, 64, 100};
    for (size_t ri = 0; ri < sizeof rows_list / sizeof *rows_list; ri++)
        for (size_t di = 0; di < sizeof dims / sizeof *dims; di++) {
            int64_t rows = rows_list[ri], dim = dims[di], ld = up(rows, 16) + (di % 2) * 16, stride = dim + 3;
            uint16_t *src = malloc((size_t)(rows * stride) * 2);
            for (int64_t i = 0; i < rows * stride; i++) src[i] = any_bf16(rng);
            /* queries in pairs: up(dim, pad_k) × ld elements */
            size_t n = (size_t)(up(dim, set->pad_k) * ld);
            guarded got = guarded_make(n, 2), want = guarded_make(n, 2);
            set->pack_pairs(rows, dim, src, stride, (uint16_t *)(void *)got.p, ld);
            ref->pack_pairs(rows, dim, src, stride, (uint16_t *)(void *)want.p, ld);
            cr_expect(memcmp(got.p, want.p, got.bytes) == 0 && guard_intact(&got),
                      "%s pack_pairs rows %lld dim %lld ld %lld: not ref's bytes, or wrote past them", name,
                      (long long)rows, (long long)dim, (long long)ld);
            free(got.p), free(want.p);
            /* Vᵀ: src as `rows` keys of `dim` values, dim × ld_t elements */
            int64_t ld_t = up(rows, set->pad_k) + (ri % 2) * set->pad_k;
            n = (size_t)(dim * ld_t);
            got = guarded_make(n, 2), want = guarded_make(n, 2);
            int fin_got = set->pack_rows_t(rows, dim, src, stride, (uint16_t *)(void *)got.p, ld_t);
            int fin_want = ref->pack_rows_t(rows, dim, src, stride, (uint16_t *)(void *)want.p, ld_t);
            cr_expect(
                memcmp(got.p, want.p, got.bytes) == 0 && guard_intact(&got) && fin_got == fin_want,
                "%s pack_rows_t cols %lld dim %lld ld %lld: not ref's bytes or finiteness (%d, ref %d), or "
                "wrote past them",
                name, (long long)rows, (long long)dim, (long long)ld_t, fin_got, fin_want);
            free(got.p), free(want.p);
            /* rows in pairs: rows_pad (even) × ldd (a multiple of 16) elements */
            int64_t rows_pad = up(rows, 2) + (di % 2) * 2, ldd = up(dim, 16) + (ri % 2) * 16;
            n = (size_t)(rows_pad * ldd);
            got = guarded_make(n, 2), want = guarded_make(n, 2);
            fin_got = set->pack_rows_pairs(rows, rows_pad, dim, src, stride, (uint16_t *)(void *)got.p, ldd);
            fin_want =
                ref->pack_rows_pairs(rows, rows_pad, dim, src, stride, (uint16_t *)(void *)want.p, ldd);
            cr_expect(
                memcmp(got.p, want.p, got.bytes) == 0 && guard_intact(&got) && fin_got == fin_want,
                "%s pack_rows_pairs rows %lld/%lld dim %lld ldd %lld: not ref's bytes or finiteness (%d, ref "
                "%d), or wrote past them",
                name, (long long)rows, (long long)rows_pad, (long long)dim, (long long)ldd, fin_got,
                fin_want);
            free(got.p), free(want.p);
            /* and with every element finite: the flag says so */
            uint16_t *ok = malloc((size_t)(rows * stride) * 2);
            for (int64_t i = 0; i < rows * stride; i++)
                ok[i] = fa_bf16_from_f32((float)tu_rng_uniform(rng, -4, 4));
            got = guarded_make(n, 2);
            cr_expect(set->pack_rows_pairs(rows, rows_pad, dim, ok, stride, (uint16_t *)(void *)got.p, ldd) ==
                          1,
                      "%s pack_rows_pairs: finite rows reported non-finite", name);
            free(got.p), free(ok);
            free(src);
        }
}

static void check_pairs_of(const char *name, const fa_kernels_bf16 *set, const fa_kernels_bf16 *ref,
                           tu_rng *rng)
{
    const int64_t lds[] = {16, 48, 64}, cols_list[] = {1, 2, 3, 31, 32, 33, 64, 65};
    for (size_t li = 0; li < sizeof lds / sizeof *lds; li++)
        for (size_t ci = 0; ci < sizeof cols_list / sizeof *cols_list; ci++) {
            int64_t ld = lds[li], cols = cols_list[ci];
            float *p = aligned_alloc(64, (size_t)(ld * cols) * sizeof(float));
            for (int64_t i = 0; i < ld * cols; i++) {
                int64_t kind = tu_rng_below(rng, 8);
                /* probabilities: [0, 1], exact zeros, NaN, and bf16 ties (rounded to even) */
                float x = (float)tu_rng_uniform(rng, 0, 1);
                if (kind == 0) x = 0.0f;
                if (kind == 1) x = NAN;
                if (kind == 2)
                    x = fa_bf16_to_f32(fa_bf16_from_f32(x)) + ldexpf(1.0f, -9) * (x > 0.5f ? 2 : 1);
                p[i] = x;
            }
            size_t n = (size_t)(up(cols, set->pad_k) * ld);
            guarded got = guarded_make(n, 2), want = guarded_make(n, 2);
            set->pairs_of(ld, cols, p, (uint16_t *)(void *)got.p);
            ref->pairs_of(ld, cols, p, (uint16_t *)(void *)want.p);
            int64_t wrong = 0;
            for (size_t i = 0; i < n; i++) {
                uint16_t g = ((uint16_t *)(void *)got.p)[i], w = ((uint16_t *)(void *)want.p)[i];
                int both_nan = (g & 0x7fffu) > 0x7f80u && (w & 0x7fffu) > 0x7f80u;
                wrong += g != w && !both_nan;
            }
            cr_expect(wrong == 0 && guard_intact(&got),
                      "%s pairs_of ld %lld cols %lld: %lld elements not ref's", name, (long long)ld,
                      (long long)cols, (long long)wrong);
            free(got.p), free(want.p), free(p);
        }
}

static void check_rows_of(const char *name, const fa_kernels_bf16 *set, const fa_kernels_bf16 *ref,
                          tu_rng *rng)
{
    const int64_t ns[] = {1, 15, 16, 31, 32, 33, 64 * 48 + 7};
    for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
        int64_t n = ns[ni];
        float *x = malloc((size_t)n * sizeof(float));
        for (int64_t i = 0; i < n; i++) {
            int64_t kind = tu_rng_below(rng, 8);
            x[i] = kind == 0   ? NAN
                   : kind == 1 ? ldexpf(1.0f, -130)
                               : (float)tu_rng_uniform(rng, -3, 3); /* a subnormal */
        }
        guarded got = guarded_make((size_t)n, 2), want = guarded_make((size_t)n, 2);
        set->rows_of(n, x, (uint16_t *)(void *)got.p);
        ref->rows_of(n, x, (uint16_t *)(void *)want.p);
        int64_t wrong = 0;
        for (int64_t i = 0; i < n; i++) {
            uint16_t g = ((uint16_t *)(void *)got.p)[i], w = ((uint16_t *)(void *)want.p)[i];
            wrong += g != w && !((g & 0x7fffu) > 0x7f80u && (w & 0x7fffu) > 0x7f80u);
        }
        cr_expect(wrong == 0 && guard_intact(&got),
                  "%s rows_of n %lld: %lld elements not ref's, or wrote past them", name, (long long)n,
                  (long long)wrong);
        free(got.p), free(want.p), free(x);
    }
}

static void check_dot(const char *name, const fa_kernels_bf16 *set, tu_rng *rng)
{
    const int64_t Ms[] = {1, 5, 15, 16, 17, 31, 32, 33, 64}, Ns[] = {16, 32, 48, 64},
                  Ks[] = {2, 6, 30, 32, 34, 64, 66, 128};
    int64_t cases = 0, bad = 0;
    char first[400] = "";
    for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
        for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
            for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
                for (int accumulate = 0; accumulate < 2; accumulate++) {
                    int64_t M = Ms[mi], N = Ns[ni], K = Ks[ki], lda = K + 1 + (int64_t)(mi % 3),
                            ldb = N + 16 * (int64_t)(ki % 2), ldc = N + 5;
                    /* A: M rows of lda, with NaN past K (never read); B: up(K, pad_k) × ldb in pairs */
                    uint16_t *a = malloc((size_t)(M * lda) * 2),
                             *b = calloc((size_t)(up(K, set->pad_k) * ldb), 2);
                    for (int64_t m = 0; m < M; m++)
                        for (int64_t k = 0; k < lda; k++)
                            a[m * lda + k] =
                                k < K ? fa_bf16_from_f32((float)tu_rng_uniform(rng, -2, 2)) : 0x7fc0u;
                    for (int64_t k = 0; k < K; k++)
                        for (int64_t n = 0; n < N; n++)
                            b[(k / 2) * 2 * ldb + 2 * n + k % 2] =
                                fa_bf16_from_f32((float)tu_rng_uniform(rng, -2, 2));
                    guarded c = guarded_make((size_t)(M * ldc), sizeof(float));
                    float *cf = (float *)(void *)c.p, *c0 = malloc((size_t)(M * ldc) * sizeof(float));
                    for (int64_t i = 0; i < M * ldc; i++) cf[i] = c0[i] = (float)tu_rng_uniform(rng, -1, 1);
                    const float alpha = 0.37f;
                    set->dot(M, N, K, a, lda, b, ldb, cf, ldc, alpha, accumulate);
                    int64_t wrong = 0;
                    for (int64_t m = 0; m < M; m++)
                        for (int64_t x = 0; x < ldc; x++) {
                            if (x >= N) { /* between rows of the block: untouched */
                                wrong += cf[m * ldc + x] != c0[m * ldc + x];
                                continue;
                            }
                            double exact = 0, magnitude = 0;
                            for (int64_t k = 0; k < K; k++) {
                                double t = (double)fa_bf16_to_f32(a[m * lda + k]) *
                                           fa_bf16_to_f32(b[(k / 2) * 2 * ldb + 2 * x + k % 2]);
                                exact += t, magnitude += fabs(t);
                            }
                            double want = accumulate ? c0[m * ldc + x] + exact : alpha * exact;
                            double bound = (double)(K + 2) * ldexp(1.0, -24) *
                                           (magnitude + fabs(c0[m * ldc + x])) * (accumulate ? 1.0 : alpha);
                            double got = cf[m * ldc + x];
                            if (!(fabs(got - want) <= bound)) {
                                if (!wrong && !bad)
                                    snprintf(first, sizeof first,
                                             "M %lld N %lld K %lld accumulate %d: C[%lld][%lld] = %.9g, want "
                                             "%.9g (bound %.3g)",
                                             (long long)M, (long long)N, (long long)K, accumulate,
                                             (long long)m, (long long)x, got, want, bound);
                                wrong++;
                            }
                        }
                    bad += wrong != 0 || !guard_intact(&c);
                    cases++;
                    free(a), free(b), free(c.p), free(c0);
                }
    cr_expect(bad == 0, "%s dot: %lld of %lld cases wrong or writing past C; first: %s", name, (long long)bad,
              (long long)cases, first);
}

static void check_online_softmax_pairs(const char *name, const fa_kernels_bf16 *set,
                                       const fa_kernels_bf16 *ref, tu_rng *rng)
{
    const int64_t shapes[][3] = {
        {16, 16, 1}, {13, 16, 7}, {32, 32, 33}, {40, 48, 64}, {64, 64, 65}}; /* rows, ld, cols */
    const int64_t acc_dim = 19;
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        int64_t rows = shapes[si][0], ld = shapes[si][1], cols = shapes[si][2];
        size_t ns = (size_t)(ld * cols), na = (size_t)(acc_dim * ld),
               np = (size_t)(up(cols, set->pad_k) * ld);
        float *s[2], *m[2], *l[2], *acc[2];
        guarded pp[2];
        for (int j = 0; j < 2; j++) {
            s[j] = aligned_alloc(64, ns * sizeof(float)), acc[j] = aligned_alloc(64, na * sizeof(float));
            m[j] = aligned_alloc(64, (size_t)ld * sizeof(float)),
            l[j] = aligned_alloc(64, (size_t)ld * sizeof(float));
            pp[j] = guarded_make(np, 2);
        }
        for (int step = 0; step < 3; step++) { /* three tiles in a row: maxima rise, hold, or stay -inf */
            for (size_t i = 0; i < ns; i++) {
                int64_t r = (int64_t)i % ld;
                float x = (float)tu_rng_uniform(rng, -8, 8) + (float)step * (r % 3 == 0 ? 4.0f : 0.0f);
                if (r % 5 == 4) x = -INFINITY;                               /* a row that never sees a key */
                if (r % 7 == 6 && step == 1 && i / (size_t)ld == 0) x = NAN; /* a row that sees a NaN */
                s[0][i] = s[1][i] = x;
            }
            if (step == 0) {
                for (int64_t r = 0; r < ld; r++) m[0][r] = m[1][r] = -INFINITY, l[0][r] = l[1][r] = 0;
                for (size_t i = 0; i < na; i++) acc[0][i] = acc[1][i] = (float)tu_rng_uniform(rng, -1, 1);
            }
            const float scale =
                step == 2 ? 1.0f : 0.125f * (float)(si + 1); /* scaled raw scores, and scale 1 */
            set->online_softmax_pairs(rows, ld, cols, scale, s[0], m[0], l[0], acc[0], acc_dim,
                                      (uint16_t *)(void *)pp[0].p);
            ref->online_softmax_pairs(rows, ld, cols, scale, s[1], m[1], l[1], acc[1], acc_dim,
                                      (uint16_t *)(void *)pp[1].p);
            int64_t wrong = 0;
            for (int64_t r = 0; r < rows; r++) {
                int same_max =
                    memcmp(&m[0][r], &m[1][r], sizeof(float)) == 0 || (isnan(m[0][r]) && isnan(m[1][r]));
                wrong += !same_max;
                wrong += !(fabsf(l[0][r] - l[1][r]) <= 1e-6f * fabsf(l[1][r]) ||
                           (isnan(l[0][r]) && isnan(l[1][r])));
                for (int64_t y = 0; y < acc_dim; y++) {
                    float g = acc[0][y * ld + r], w = acc[1][y * ld + r];
                    wrong += !(fabsf(g - w) <= 1e-6f * (1 + fabsf(w)) || (isnan(g) && isnan(w)));
                }
            }
            /* P in pairs: ref's rounding of probabilities within 1e-6 of each other, so at most one
             * bf16 step apart (a tie may round either way), zero padding exact, NaN for NaN */
            const uint16_t *pg = (const uint16_t *)(void *)pp[0].p, *pw = (const uint16_t *)(void *)pp[1].p;
            for (size_t i = 0; i < np; i++) {
                int64_t r = (int64_t)(i / 2) % ld;
                if (r >= rows) continue; /* padding rows: values nobody reads */
                float g = fa_bf16_to_f32(pg[i]), w = fa_bf16_to_f32(pw[i]);
                wrong += !(fabsf(g - w) <= ldexpf(fabsf(w), -7) + 1e-30f || (isnan(g) && isnan(w)));
            }
            wrong += !guard_intact(&pp[0]);
            cr_expect(wrong == 0,
                      "%s online_softmax_pairs rows %lld ld %lld cols %lld, tile %d: %lld values off ref",
                      name, (long long)rows, (long long)ld, (long long)cols, step, (long long)wrong);
        }
        for (int j = 0; j < 2; j++) free(s[j]), free(m[j]), free(l[j]), free(acc[j]), free(pp[j].p);
    }
}

Test(kernel_pairs, every_bf16_set_matches_the_scalar_oracle_at_every_residue)
{
    const fa_kernels_bf16 *ref = &fa_kernels_ref_bf16;
    int ran = 0;
    for (int t = 0; t < CF_TABLES; t++) {
        const fa_kernels_bf16 *set = set_named(cf_tables[t]);
        if (!set) continue;
        if (!cf_table_runs(cf_tables[t])) {
            cr_log_info("%s: this CPU cannot run its bf16 set; checked on machines that can", cf_tables[t]);
            continue;
        }
        tu_rng rng = tu_rng_make(tu_test_part_seed(cf_tables[t]));
        check_packs(cf_tables[t], set, ref, &rng);
        check_pairs_of(cf_tables[t], set, ref, &rng);
        check_rows_of(cf_tables[t], set, ref, &rng);
        check_dot(cf_tables[t], set, &rng);
        set->release();
        check_online_softmax_pairs(cf_tables[t], set, ref, &rng);
        ran++;
    }
    /* and the oracle against itself on the dot's bound, so the check above is not vacuous anywhere */
    tu_rng rng = tu_rng_make(tu_test_part_seed("ref"));
    check_dot("ref", ref, &rng);
    cr_log_info("bf16 sets checked on this CPU: %d", ran);
}
