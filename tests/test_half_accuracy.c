/* SPDX-License-Identifier: BSD-3-Clause */
/* bf16 and f16 accuracy, forward and backward, against the float64 oracles run on the same, already
 * rounded, half inputs, for every dtype pair of the contract: bf16/bf16, f16/f16 and f32 queries
 * with a bf16 or f16 KV cache (half_cases.h: edge tiles, GQA, Dv != D, the causal alignments and
 * every score modifier with an f32 bias). Each case runs the forward, checks out and lse, then runs
 * the backward from them on the same context and checks the gradients.
 *
 * Forward yardstick: the naive algorithm computed in f32 from the same inputs
 * (ref_forward_naive_f32), its out rounded once to out's dtype as the library must round it
 * (src/kernels/half.h); lse is float for every half call. For out and for lse, max-wise over the
 * tensor (hu_check):
 *   max|lib - oracle| <= 3 · max|naive - oracle| + floor,
 *   floor = max(one ulp of the output type at max|oracle|, the f32 suite's floor: 1e-6 for out,
 *               1e-6·max(1, max|lse|) for lse)
 * (half_util.h says why each term). Non-finite values (-inf lse of rows that see no key) must be
 * the oracle's.
 *
 * Backward yardstick: the naive backward computed in f32 from the inputs fa_backward gets
 * (ref_backward_naive_f32_given_out: its own softmax from q and k, delta_i = dout_i·out_i from the
 * out it is handed, as the header defines delta), dq rounded once to q's dtype and dk, dv to k's.
 * Starting from the handed out matters: an out rounded to bf16 carries up to 2^-8 relative error
 * into delta, which no implementation can remove. Per gradient, max-wise (hu_check):
 *   max|lib - oracle| <= 3 · max|naive - oracle| + max(one ulp of its dtype at max|oracle|, 1e-5)
 * (1e-5: the f32 backward suite's floor, what remains when the gradient is f32). With sinks, dsinks
 * (floats) by the same rule. Non-finite values must be the oracle's (none here).
 *
 * Nothing may be written outside a call's outputs (the guards keep their canaries). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "half_cases.h"
#include "half_util.h"
#include "reference.h"
#include "reference_backward.h"
#include "util_backward.h"

static double *alloc_doubles(int64_t n)
{
    double *x = malloc(sizeof(double) * (size_t)(n + 1));
    if (!x) abort();
    return x;
}

static double max_finite_abs(const double *x, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i]) && fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

/* out and lse of a forward that returned FA_OK, against the oracle. */
static void check_forward(const kit_problem *pr, const tm_mods *m, fa_dtype qt, const char *what)
{
    const kit_shape *s = &pr->shape;
    char msg[600];
    const fa_tensor *q = &pr->t[KIT_Q], *k = &pr->t[KIT_K], *v = &pr->t[KIT_V];
    int64_t rows = s->batch * s->q_heads * s->q_len, n = rows * s->dim_v;
    double *out_o = alloc_doubles(n), *lse_o = alloc_doubles(rows);
    double *out_n = alloc_doubles(n), *lse_n = alloc_doubles(rows);
    double *lse_l = alloc_doubles(rows);
    ref_forward(&m->p, q, k, v, out_o, lse_o);
    ref_forward_naive_f32(&m->p, q, k, v, out_n, lse_n);
    for (int64_t x = 0; x < n; x++) out_n[x] = hu_round(qt, out_n[x]);
    for (int64_t r = 0; r < rows; r++) lse_l[r] = (double)((const float *)pr->lse)[r];
    double *out_l = hu_view_copy(&pr->t[KIT_OUT]);
    double lse_floor = 1e-6 * fmax(1.0, max_finite_abs(lse_o, rows));
    cr_expect(hu_check("out", qt, out_l, out_o, out_n, n, 1e-6, msg, sizeof msg), "%s: %s", what, msg);
    cr_expect(hu_check("lse", FA_F32, lse_l, lse_o, lse_n, rows, lse_floor, msg, sizeof msg), "%s: %s", what,
              msg);
    free(out_o), free(lse_o), free(out_n), free(lse_n), free(lse_l), free(out_l);
}

/* dq, dk, dv (and dsinks) of a backward that returned FA_OK, against the oracle. */
static void check_backward(const kit_problem *pr, const tm_mods *m, const hc_case *hc, const char *what)
{
    static const char *names[3] = {"dq", "dk", "dv"};
    const kit_shape *s = &pr->shape;
    char msg[600];
    const fa_tensor *q = &pr->t[KIT_Q], *k = &pr->t[KIT_K], *v = &pr->t[KIT_V], *out = &pr->t[KIT_OUT],
                    *dout = &pr->t[KIT_DOUT];
    const fa_tensor *grad[3] = {&pr->t[KIT_DQ], &pr->t[KIT_DK], &pr->t[KIT_DV]};
    int64_t n[3];
    double *oracle[3], *naive[3];
    for (int g = 0; g < 3; g++) {
        n[g] = hu_numel(grad[g]);
        oracle[g] = alloc_doubles(n[g]);
        naive[g] = alloc_doubles(n[g]);
    }
    double *ds_o = alloc_doubles(s->q_heads), *ds_n = alloc_doubles(s->q_heads),
           *ds_l = alloc_doubles(s->q_heads);
    ref_backward(&m->p, q, k, v, dout, oracle[0], oracle[1], oracle[2]);
    ref_backward_naive_f32_given_out(&m->p, q, k, v, out, dout, naive[0], naive[1], naive[2], ds_n);
    for (int g = 0; g < 3; g++) {
        for (int64_t x = 0; x < n[g]; x++) naive[g][x] = hu_round(grad[g]->dtype, naive[g][x]);
        double *lib = hu_view_copy(grad[g]);
        cr_expect(hu_check(names[g], grad[g]->dtype, lib, oracle[g], naive[g], n[g], 1e-5, msg, sizeof msg),
                  "%s: %s", what, msg);
        free(lib);
    }
    if (hc->spec.sinks) {
        ref_backward_dsinks(&m->p, q, k, v, dout, ds_o);
        for (int64_t h = 0; h < s->q_heads; h++) ds_l[h] = (double)m->p.dsinks[h];
        cr_expect(tm_dsinks_guards_intact(m), "%s: wrote outside dsinks", what);
        cr_expect(hu_check("dsinks", FA_F32, ds_l, ds_o, ds_n, s->q_heads, 1e-5, msg, sizeof msg), "%s: %s",
                  what, msg);
    }
    for (int g = 0; g < 3; g++) free(oracle[g]), free(naive[g]);
    free(ds_o), free(ds_n), free(ds_l);
}

/* One case in both directions: the forward, then the backward from its out and lse. */
static void check_case(fa_context *ctx[HC_CONTEXTS], int c, fa_dtype qt, fa_dtype kt, uint64_t seed)
{
    const hc_case *hc = &hc_cases[c];
    kit_shape s = hc_shape(hc, qt, kt);
    tu_rng rng = tu_rng_make(seed + (uint64_t)c);
    kit_problem pr;
    hu_make(&pr, &s, &rng, 2.5);
    tm_mods m;
    hc_mods(&m, hc, &rng);
    if (hc->spec.sinks) tm_mods_want_dsinks(&m);
    char desc[400], what[480];
    hu_desc(&s, &m.p, desc, sizeof desc);
    unsigned char *fwd_out[2] = {NULL, NULL}; /* out and lse as the forward left them */
    for (int d = 0; d < TUB_DIRECTIONS; d++) {
        snprintf(what, sizeof what, "%s, case %d (%s), seed %llu", tub_direction_name((tub_direction)d), c,
                 desc, (unsigned long long)seed);
        fa_status st =
            d == TUB_FORWARD ? hu_forward(ctx[hc->ctx], &m.p, &pr) : hu_backward(ctx[hc->ctx], &m.p, &pr);
        cr_expect_eq(st, FA_OK, "%s: status %d (%s)", what, st, fa_last_error());
        if (st != FA_OK) break; /* the backward needs the forward's out and lse */
        cr_expect(kit_problem_guards_intact(&pr), "%s: a byte outside a tensor was written", what);
        if (d == TUB_FORWARD) {
            check_forward(&pr, &m, qt, what);
            fwd_out[0] = kit_buf_snapshot(&pr.buf[KIT_OUT]);
            fwd_out[1] = kit_buf_snapshot(&pr.lse_buf);
        } else {
            check_backward(&pr, &m, hc, what);
            /* out and lse are the backward's inputs: it reads them and writes none of their bytes */
            cr_expect(kit_buf_equals_snapshot(&pr.buf[KIT_OUT], fwd_out[0]) &&
                          kit_buf_equals_snapshot(&pr.lse_buf, fwd_out[1]),
                      "%s: the backward changed a byte of out or lse", what);
        }
    }
    free(fwd_out[0]), free(fwd_out[1]);
    tm_mods_free(&m);
    kit_problem_free(&pr);
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

Test(half_accuracy, bf16_forward_and_gradients_within_3x_naive_f32_error_rounded_to_bf16)
{
    run_pair(0);
}

Test(half_accuracy, f16_forward_and_gradients_within_3x_naive_f32_error_rounded_to_f16)
{
    run_pair(1);
}

Test(half_accuracy, f32_queries_with_bf16_kv_forward_and_gradients_within_3x_naive_f32_error)
{
    run_pair(2);
}

Test(half_accuracy, f32_queries_with_f16_kv_forward_and_gradients_within_3x_naive_f32_error)
{
    run_pair(3);
}
