/* SPDX-License-Identifier: BSD-3-Clause */
/* Score modifiers at the ends of their ranges (include/flashattn.h, fa_params):
 *   - windows of Nq + Nk and of INT64_MAX keys hide nothing: out, lse, dq, dk and dv are the same
 *     bytes as with unbounded windows (-1), and no index arithmetic overflows;
 *   - sinks far above and far below every score (±100, whose exponentials overflow float, 1e20
 *     and -1e30), ALiBi slopes that are negative, zero or large, softcaps of 1e-3 and 1e30, and finite
 *     bias entries of ±1e30 (one key that dominates its row, or one as good as masked): the
 *     results match the oracles at the rules of test_modifiers.c, forward and backward
 *     (dsinks too), with no overflow to inf or NaN. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modifiers.h"
#include "util.h"
#include "util_backward.h"

static const tu_shape shapes[2] = {
    {FA_F32, 2, 4, 2, 41, 57, 12, 9, TU_BHSD},
    {FA_F32, 1, 2, 1, 60, 35, 7, 16, TU_BSHD},
};
static const int blocks[2][2] = {{0, 0}, {8, 8}};

Test(modifier_extremes, windows_of_nq_plus_nk_and_int64_max_give_the_bytes_of_unbounded_ones)
{
    static const char *names[3] = {"dq", "dk", "dv"};
    uint64_t seed = tu_test_seed();
    for (int bl = 0; bl < 2; bl++) {
        fa_context *ctx = tu_context(0, blocks[bl][0], blocks[bl][1]);
        for (int c = 0; c < 6; c++) {
            tu_shape s = shapes[c % 2];
            s.dtype = c % 4 < 2 ? FA_F32 : FA_F64;
            fa_causal causal = (fa_causal)(c % 3);
            int64_t wide[2] = {s.q_len + s.kv_len, INT64_MAX};
            for (int w = 0; w < 2; w++) {
                uint64_t case_seed = seed + (uint64_t)(100 * bl + 10 * c + w);
                tm_spec spec = {causal, -1, -1, 2.0, 1, TM_BIAS_KEY_PADDING, 0};
                tu_rng rng = tu_rng_make(case_seed);
                tub_problem a, b;
                tub_make(&a, &s, &rng, 2.0);
                tm_mods m;
                tm_mods_make(&m, &spec, &s, 0.0, &rng);
                rng = tu_rng_make(case_seed);
                tub_make(&b, &s, &rng, 2.0);
                char desc[600];
                tm_desc(&s, &m, desc, sizeof desc);
                cr_assert_eq(tub_forward(ctx, &m.p, &a), FA_OK, "%s", desc);
                cr_assert_eq(tub_backward(ctx, &m.p, &a), FA_OK, "%s", desc);
                fa_params p = m.p;
                p.window_left = p.window_right = wide[w];
                cr_assert_eq(tub_forward(ctx, &p, &b), FA_OK, "%s, windows %lld", desc, (long long)wide[w]);
                cr_assert_eq(tub_backward(ctx, &p, &b), FA_OK, "%s, windows %lld", desc, (long long)wide[w]);
                int64_t where = 0;
                cr_expect(
                    tu_outputs_bitwise_equal(&a.fw, &b.fw, &where),
                    "%s, blocks %d/%d, seed %llu: windows of %lld differ from unbounded ones at %s %lld",
                    desc, blocks[bl][0], blocks[bl][1], (unsigned long long)case_seed, (long long)wide[w],
                    where < 0 ? "lse" : "out row", (long long)where);
                for (int g = 0; g < 3; g++)
                    cr_expect(tub_views_bitwise_equal(&a.grad[g], &b.grad[g], &where),
                              "%s, blocks %d/%d, seed %llu: %s with windows of %lld differs from unbounded "
                              "ones at %lld",
                              desc, blocks[bl][0], blocks[bl][1], (unsigned long long)case_seed, names[g],
                              (long long)wide[w], (long long)where);
                tm_mods_free(&m);
                tub_free(&a);
                tub_free(&b);
            }
        }
        fa_context_destroy(ctx);
    }
}

/* Forward and backward (with dsinks when there are sinks) against the oracles; every value finite. */
static void check_against_oracles(fa_context *ctx, tub_problem *bp, tm_mods *m, const char *desc)
{
    char msg[512];
    m->p.dsinks = NULL;
    cr_assert_eq(tub_forward(ctx, &m->p, bp), FA_OK, "%s", desc);
    int64_t *rows, first;
    int64_t n = tu_pick_rows(&bp->fw, &m->p, INT64_MAX, &rows);
    cr_expect(tu_check_accuracy(&bp->fw, &m->p, rows, n, 1e-12, msg, sizeof msg), "%s: %s", desc, msg);
    free(rows);
    cr_expect_eq(tub_count_nonfinite(&bp->fw.out, &first), 0, "%s: out not finite at %lld", desc,
                 (long long)first);
    if (m->spec.sinks) tm_mods_want_dsinks(m);
    cr_assert_eq(tub_backward(ctx, &m->p, bp), FA_OK, "%s", desc);
    int f32 = bp->fw.shape.dtype == FA_F32;
    tub_ref oracle, naive;
    tub_ref_compute(&oracle, bp, &m->p);
    if (f32) tub_ref_compute_naive_f32(&naive, bp, &m->p);
    cr_expect(tub_check_accuracy(bp, &m->p, &oracle, f32 ? &naive : NULL, 1e-11, msg, sizeof msg), "%s: %s",
              desc, msg);
    for (int g = 0; g < 3; g++)
        cr_expect_eq(tub_count_nonfinite(&bp->grad[g], &first), 0, "%s: gradient %d not finite at %lld", desc,
                     g, (long long)first);
    if (m->spec.sinks) cr_expect(tm_check_dsinks(bp, m, msg, sizeof msg), "%s: %s", desc, msg);
    tub_ref_free(&oracle);
    if (f32) tub_ref_free(&naive);
}

Test(modifier_extremes, extreme_sinks_slopes_softcaps_and_finite_bias_match_oracles_without_overflow)
{
    /* 1e20, not 1e30: a sink equal to a row's dominating score would make P = 1/2 for both, and
     * the backward's P = e^(s - lse) cannot see that 1/2 when lse (1e30 + log 2) rounds to s */
    static const float sink_values[4] = {100.0f, -100.0f, 1e20f, -1e30f};
    static const float slope_values[4] = {-0.25f, 0.0f, 40.0f, 1e-6f};
    static const double softcaps[3] = {0.0, 1e-3, 1e30};
    uint64_t seed = tu_test_seed();
    for (int bl = 0; bl < 2; bl++) {
        fa_context *ctx = tu_context(0, blocks[bl][0], blocks[bl][1]);
        for (int t = 0; t < 2; t++)
            for (int c = 0; c < 3; c++) {
                tu_shape s = shapes[c % 2];
                s.dtype = t ? FA_F64 : FA_F32;
                uint64_t case_seed = seed + (uint64_t)(100 * bl + 10 * t + c);
                tm_spec spec = {(fa_causal)c, c == 2 ? 6 : -1, -1, softcaps[c], 1, TM_BIAS_FULL, 1};
                tu_rng rng = tu_rng_make(case_seed);
                tub_problem bp;
                tub_make(&bp, &s, &rng, 2.0);
                tm_mods m;
                tm_mods_make(&m, &spec, &s, 0.0, &rng);
                for (int64_t h = 0; h < s.q_heads; h++) {
                    m.sinks[h] = sink_values[(h + c) % 4];
                    m.slopes[h] = slope_values[(h + 2 * c) % 4];
                }
                /* a few keys each row must attend to alone, and a few as good as masked */
                for (int64_t b = 0; b < s.batch; b++)
                    for (int64_t h = 0; h < s.q_heads; h++)
                        for (int64_t i = 0; i < s.q_len; i += 3)
                            kit_tensor_store(&m.bias, b, h, i, (i * 7 + h) % s.kv_len,
                                             (i / 3) % 2 ? 1e30 : -1e30);
                char desc[600], what[700];
                tm_desc(&s, &m, desc, sizeof desc);
                snprintf(what, sizeof what,
                         "%s (sinks ±100, 1e20, -1e30, slopes -0.25, 0, 40, 1e-6, bias ±1e30), blocks %d/%d, "
                         "seed %llu",
                         desc, blocks[bl][0], blocks[bl][1], (unsigned long long)case_seed);
                check_against_oracles(ctx, &bp, &m, what);
                tm_mods_free(&m);
                tub_free(&bp);
            }
        fa_context_destroy(ctx);
    }
}
