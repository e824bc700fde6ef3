/* SPDX-License-Identifier: BSD-3-Clause */
/* bf16 and f16 forward accuracy against the float64 oracle run on the same, already
 * rounded, half inputs, for every dtype pair of the contract: bf16/bf16, f16/f16 and f32 queries
 * with a bf16 or f16 KV cache (half_cases.h: edge tiles, GQA, Dv != D, the causal alignments and
 * every score modifier with an f32 bias).
 *
 * Yardstick: the naive algorithm computed in f32 from the same inputs (ref_forward_naive_f32), its
 * out rounded once to out's dtype as the library must round it (src/kernels/half.h); lse is float
 * for every half call. For out and for lse, max-wise over the tensor (hu_check):
 *   max|lib - oracle| <= 3 · max|naive - oracle| + floor,
 *   floor = max(one ulp of the output type at max|oracle|, the f32 suite's floor: 1e-6 for out,
 *               1e-6·max(1, max|lse|) for lse)
 * (half_util.h says why each term). Non-finite values (-inf lse of rows that see no key) must be
 * the oracle's, and nothing may be written outside out and lse (the guards keep their canaries). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "half_cases.h"
#include "half_util.h"
#include "reference.h"

static double max_finite_abs(const double *x, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i]) && fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

static void check_case(fa_context *ctx[HC_CONTEXTS], int c, fa_dtype qt, fa_dtype kt, uint64_t seed)
{
    const hc_case *hc = &hc_cases[c];
    hu_shape s = hc_shape(hc, qt, kt);
    tu_rng rng = tu_rng_make(seed + (uint64_t)c);
    hu_problem pr;
    hu_make(&pr, &s, &rng, 2.5);
    tm_mods m;
    hc_mods(&m, hc, &rng);
    char desc[400], msg[600];
    hu_desc(&s, &m.p, desc, sizeof desc);

    fa_status st = hu_forward(ctx[hc->ctx], &m.p, &pr);
    cr_expect_eq(st, FA_OK, "case %d (%s), seed %llu: status %d (%s)", c, desc, (unsigned long long)seed, st,
                 fa_last_error());
    if (st == FA_OK) {
        cr_expect(hu_guards_intact(&pr), "case %d (%s), seed %llu: a byte outside a tensor was written", c,
                  desc, (unsigned long long)seed);
        const fa_tensor *q = &pr.t[HU_Q], *k = &pr.t[HU_K], *v = &pr.t[HU_V];
        int64_t rows = s.batch * s.q_heads * s.q_len, n = rows * s.dim_v;
        double *out_o = malloc(sizeof(double) * (size_t)(n + 1)),
               *lse_o = malloc(sizeof(double) * (size_t)(rows + 1));
        double *out_n = malloc(sizeof(double) * (size_t)(n + 1)),
               *lse_n = malloc(sizeof(double) * (size_t)(rows + 1));
        double *lse_l = malloc(sizeof(double) * (size_t)(rows + 1));
        if (!out_o || !lse_o || !out_n || !lse_n || !lse_l) abort();
        ref_forward(&m.p, q, k, v, out_o, lse_o);
        ref_forward_naive_f32(&m.p, q, k, v, out_n, lse_n);
        for (int64_t x = 0; x < n; x++) out_n[x] = hu_round(qt, out_n[x]);
        for (int64_t r = 0; r < rows; r++) lse_l[r] = (double)pr.lse[r];
        double *out_l = hu_view_copy(&pr.t[HU_OUT]);
        double lse_floor = 1e-6 * fmax(1.0, max_finite_abs(lse_o, rows));
        cr_expect(hu_check("out", qt, out_l, out_o, out_n, n, 1e-6, msg, sizeof msg),
                  "case %d (%s), seed %llu: %s", c, desc, (unsigned long long)seed, msg);
        cr_expect(hu_check("lse", FA_F32, lse_l, lse_o, lse_n, rows, lse_floor, msg, sizeof msg),
                  "case %d (%s), seed %llu: %s", c, desc, (unsigned long long)seed, msg);
        free(out_o), free(lse_o), free(out_n), free(lse_n), free(lse_l), free(out_l);
    }
    tm_mods_free(&m);
    hu_free(&pr);
}

static void run_pair(int pair)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx[HC_CONTEXTS];
    hc_contexts_create(ctx);
    for (int c = 0; c < HC_CASES; c++)
        check_case(ctx, c, hc_dtype_pairs[pair][0], hc_dtype_pairs[pair][1], seed);
    hc_contexts_destroy(ctx);
}

Test(half_accuracy, bf16_forward_within_3x_naive_f32_error_rounded_to_bf16)
{
    run_pair(0);
}

Test(half_accuracy, f16_forward_within_3x_naive_f32_error_rounded_to_f16)
{
    run_pair(1);
}

Test(half_accuracy, f32_queries_with_bf16_kv_within_3x_naive_f32_error)
{
    run_pair(2);
}

Test(half_accuracy, f32_queries_with_f16_kv_within_3x_naive_f32_error)
{
    run_pair(3);
}
