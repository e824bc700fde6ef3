/* SPDX-License-Identifier: BSD-3-Clause */
/* bf16 and f16 backward accuracy against the analytic float64 oracle (ref_backward) run
 * on the same, already rounded, half inputs, for every dtype pair of the contract (bf16/bf16,
 * f16/f16, f32 queries with a bf16 or f16 KV cache) over the problems of half_cases.h. out and lse
 * come from fa_forward on the same context.
 *
 * Yardstick: the naive backward computed in f32 from the inputs fa_backward gets
 * (ref_backward_naive_f32_given_out: its own softmax from q and k, delta_i = dout_i·out_i from the
 * out it is handed, as the header defines delta), dq rounded once to q's dtype and dk, dv to k's.
 * Starting from the handed out matters: an out rounded to bf16 carries up to 2^-8 relative error
 * into delta, which no implementation can remove. Per gradient, max-wise (hu_check):
 *   max|lib - oracle| <= 3 · max|naive - oracle| + max(one ulp of its dtype at max|oracle|, 1e-5)
 * (1e-5: the f32 backward suite's floor, what remains when the gradient is f32). With sinks, dsinks
 * (floats) by the same rule. Non-finite values must be the oracle's (none here), and nothing may be
 * written outside dq, dk, dv (guards). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "half_cases.h"
#include "half_util.h"
#include "reference_backward.h"

static double *alloc_doubles(int64_t n)
{
    double *x = malloc(sizeof(double) * (size_t)(n + 1));
    if (!x) abort();
    return x;
}

static void check_case(fa_context *ctx[HC_CONTEXTS], int c, fa_dtype qt, fa_dtype kt, uint64_t seed)
{
    static const char *names[3] = {"dq", "dk", "dv"};
    const hc_case *hc = &hc_cases[c];
    hu_shape s = hc_shape(hc, qt, kt);
    tu_rng rng = tu_rng_make(seed + (uint64_t)c);
    hu_problem pr;
    hu_make(&pr, &s, &rng, 2.5);
    tm_mods m;
    hc_mods(&m, hc, &rng);
    if (hc->spec.sinks) tm_mods_want_dsinks(&m);
    char desc[400], msg[600];
    hu_desc(&s, &m.p, desc, sizeof desc);

    fa_status st = hu_forward(ctx[hc->ctx], &m.p, &pr);
    cr_assert_eq(st, FA_OK, "case %d (%s), seed %llu: forward status %d (%s)", c, desc,
                 (unsigned long long)seed, st, fa_last_error());
    st = hu_backward(ctx[hc->ctx], &m.p, &pr);
    cr_expect_eq(st, FA_OK, "case %d (%s), seed %llu: backward status %d (%s)", c, desc,
                 (unsigned long long)seed, st, fa_last_error());
    if (st == FA_OK) {
        cr_expect(hu_guards_intact(&pr), "case %d (%s), seed %llu: a byte outside a tensor was written", c,
                  desc, (unsigned long long)seed);
        const fa_tensor *q = &pr.t[HU_Q], *k = &pr.t[HU_K], *v = &pr.t[HU_V], *out = &pr.t[HU_OUT],
                        *dout = &pr.t[HU_DOUT];
        const fa_tensor *grad[3] = {&pr.t[HU_DQ], &pr.t[HU_DK], &pr.t[HU_DV]};
        int64_t n[3];
        double *oracle[3], *naive[3];
        for (int g = 0; g < 3; g++) {
            n[g] = hu_numel(grad[g]);
            oracle[g] = alloc_doubles(n[g]);
            naive[g] = alloc_doubles(n[g]);
        }
        double *ds_o = alloc_doubles(s.q_heads), *ds_n = alloc_doubles(s.q_heads),
               *ds_l = alloc_doubles(s.q_heads);
        ref_backward(&m.p, q, k, v, dout, oracle[0], oracle[1], oracle[2]);
        ref_backward_naive_f32_given_out(&m.p, q, k, v, out, dout, naive[0], naive[1], naive[2], ds_n);
        for (int g = 0; g < 3; g++) {
            for (int64_t x = 0; x < n[g]; x++) naive[g][x] = hu_round(grad[g]->dtype, naive[g][x]);
            double *lib = hu_view_copy(grad[g]);
            cr_expect(
                hu_check(names[g], grad[g]->dtype, lib, oracle[g], naive[g], n[g], 1e-5, msg, sizeof msg),
                "case %d (%s), seed %llu: %s", c, desc, (unsigned long long)seed, msg);
            free(lib);
        }
        if (hc->spec.sinks) {
            ref_backward_dsinks(&m.p, q, k, v, dout, ds_o);
            for (int64_t h = 0; h < s.q_heads; h++) ds_l[h] = (double)m.p.dsinks[h];
            cr_expect(tm_dsinks_guards_intact(&m), "case %d (%s): wrote outside dsinks", c, desc);
            cr_expect(hu_check("dsinks", FA_F32, ds_l, ds_o, ds_n, s.q_heads, 1e-5, msg, sizeof msg),
                      "case %d (%s), seed %llu: %s", c, desc, (unsigned long long)seed, msg);
        }
        for (int g = 0; g < 3; g++) free(oracle[g]), free(naive[g]);
        free(ds_o), free(ds_n), free(ds_l);
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

Test(half_backward_accuracy, bf16_gradients_within_3x_naive_f32_error_rounded_to_bf16)
{
    run_pair(0);
}

Test(half_backward_accuracy, f16_gradients_within_3x_naive_f32_error_rounded_to_f16)
{
    run_pair(1);
}

Test(half_backward_accuracy, f32_queries_with_bf16_kv_gradients_within_3x_naive_f32_error)
{
    run_pair(2);
}

Test(half_backward_accuracy, f32_queries_with_f16_kv_gradients_within_3x_naive_f32_error)
{
    run_pair(3);
}
