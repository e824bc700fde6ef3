/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_params.diagonal_shift (include/flashattn.h): an offset added to the diagonal d0 that the causal
 * mask, the windows and the ALiBi distances are measured from.
 * - forward and backward against the float64 oracle (tests/reference*.c, which adds the shift to its
 *   d0) under every causal alignment, windows and ALiBi, for shifts inside, at the edges of and far
 *   beyond the key range, with the accuracy rules of test_modifiers.c, forward and backward;
 * - the property ring attention rests on: the blocks of one causal sequence, each computed with
 *   FA_CAUSAL_TOP_LEFT and diagonal_shift = (its queries' first position) - (its keys' first
 *   position), merged with fa_merge, give one call over the whole sequence (f64, 1e-12), also with
 *   a window and ALiBi;
 * - |shift| beyond FA_MAX_DIAGONAL_SHIFT is refused (FA_ERR_ARG), named, with nothing written. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modifiers.h"
#include "util.h"
#include "util_backward.h"

static const int64_t shifts[] = {0, 3, -5, 17, -40, 120, -130, (int64_t)1 << 40};
#define N_SHIFTS ((int)(sizeof shifts / sizeof shifts[0]))

/* the masks and ALiBi, alone and together, that the shift moves */
static const tm_spec specs[] = {
    {FA_CAUSAL_TOP_LEFT, -1, -1, 0.0, 0, TM_BIAS_OFF, 0},
    {FA_CAUSAL_BOTTOM_RIGHT, -1, -1, 0.0, 0, TM_BIAS_OFF, 0},
    {FA_CAUSAL_NONE, 9, 4, 0.0, 0, TM_BIAS_OFF, 0},
    {FA_CAUSAL_TOP_LEFT, 12, -1, 0.0, 1, TM_BIAS_OFF, 0},
    {FA_CAUSAL_NONE, -1, -1, 0.0, 1, TM_BIAS_OFF, 1},
    {FA_CAUSAL_BOTTOM_RIGHT, 6, 0, 3.0, 1, TM_BIAS_OFF, 1},
};
#define N_SPECS ((int)(sizeof specs / sizeof specs[0]))

Test(diagonal_shift, forward_and_backward_match_the_oracle_for_every_shift)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx = tu_context(0, 16, 16);
    char desc[512], msg[512];
    for (int dt = 0; dt < 2; dt++)
        for (int c = 0; c < N_SPECS; c++)
            for (int x = 0; x < N_SHIFTS; x++) {
                tu_rng rng = tu_rng_make(seed + (uint64_t)((dt * N_SPECS + c) * N_SHIFTS + x));
                tu_shape s = {dt ? FA_F64 : FA_F32, 1, 4, 2, 37 + 5 * c, 53 + 7 * x, 12, 9,
                              (tu_layout)(x % 3)};
                tub_problem bp;
                tub_make(&bp, &s, &rng, 2.0);
                tm_mods m;
                tm_mods_make(&m, &specs[c], &s, 0.0, &rng);
                m.p.diagonal_shift = shifts[x];
                tm_desc(&s, &m, desc, sizeof desc);
                fa_status st = tub_forward(ctx, &m.p, &bp);
                cr_assert_eq(st, FA_OK, "%s, shift %lld: %s", desc, (long long)shifts[x], fa_last_error());
                cr_expect(tu_check_picked_accuracy(&bp.fw, &m.p, INT64_MAX, 1e-12, msg, sizeof msg),
                          "%s, shift %lld, seed %llu: forward: %s", desc, (long long)shifts[x],
                          (unsigned long long)seed, msg);
                if (specs[c].sinks) tm_mods_want_dsinks(&m);
                st = tub_backward(ctx, &m.p, &bp);
                cr_assert_eq(st, FA_OK, "%s, shift %lld: %s", desc, (long long)shifts[x], fa_last_error());
                tub_ref oracle, naive;
                int f32 = s.dtype == FA_F32;
                tub_ref_compute(&oracle, &bp, &m.p);
                if (f32) tub_ref_compute_naive_f32(&naive, &bp, &m.p);
                cr_expect(tub_check_accuracy(&bp, &m.p, &oracle, f32 ? &naive : NULL, 1e-11, msg, sizeof msg),
                          "%s, shift %lld, seed %llu: backward: %s", desc, (long long)shifts[x],
                          (unsigned long long)seed, msg);
                if (specs[c].sinks)
                    cr_expect(tm_check_dsinks(&bp, &m, msg, sizeof msg), "%s, shift %lld, seed %llu: %s",
                              desc, (long long)shifts[x], (unsigned long long)seed, msg);
                tub_ref_free(&oracle);
                if (f32) tub_ref_free(&naive);
                tm_mods_free(&m);
                tub_free(&bp);
            }
    fa_context_destroy(ctx);
}

/* The view of rows [row0, row0 + rows) of t. */
static fa_tensor rows_of(const fa_tensor *t, int64_t row0, int64_t rows)
{
    fa_tensor v = *t;
    v.data = (char *)t->data + row0 * t->stride_seq * (int64_t)tu_dtype_size(t->dtype);
    v.seq = rows;
    return v;
}

/* One causal self-attention sequence of 3 query blocks and 3 key blocks of unequal lengths: every
 * query block merges its key blocks' results, each computed as its own call with the global
 * positions given by the shift, and must give the rows of the call over the whole sequence. */
Test(diagonal_shift, blocks_of_a_sequence_merged_give_the_whole_call)
{
    uint64_t seed = tu_test_seed();
    static const int64_t cut[4] = {0, 29, 64, 101}; /* three blocks of 29, 35 and 37 positions */
    static const tm_spec masks[3] = {
        {FA_CAUSAL_TOP_LEFT, -1, -1, 0.0, 0, TM_BIAS_OFF, 0},
        {FA_CAUSAL_TOP_LEFT, 30, -1, 0.0, 0, TM_BIAS_OFF, 0}, /* a window that skips whole blocks */
        {FA_CAUSAL_TOP_LEFT, -1, -1, 0.0, 1, TM_BIAS_OFF, 0}, /* ALiBi over the global distance */
    };
    char desc[512];
    for (int mk = 0; mk < 3; mk++) {
        tu_rng rng = tu_rng_make(seed + (uint64_t)mk);
        tu_shape s = {FA_F64, 2, 4, 2, cut[3], cut[3], 16, 8, TU_BSHD};
        tu_problem whole;
        tu_problem_make(&whole, &s, &rng, 2.0);
        tm_mods m;
        tm_mods_make(&m, &masks[mk], &s, 0.0, &rng);
        tm_desc(&s, &m, desc, sizeof desc);
        cr_assert_eq(fa_forward(NULL, &m.p, &whole.q, &whole.k, &whole.v, &whole.out, whole.lse), FA_OK,
                     "%s: %s", desc, fa_last_error());
        for (int qb = 0; qb < 3; qb++) {
            int64_t a = cut[qb], nq = cut[qb + 1] - cut[qb];
            fa_tensor q = rows_of(&whole.q, a, nq);
            fa_tensor outs[3];
            double *lses[3];
            for (int kb = 0; kb < 3; kb++) {
                int64_t b = cut[kb], nk = cut[kb + 1] - cut[kb];
                fa_tensor k = rows_of(&whole.k, b, nk), v = rows_of(&whole.v, b, nk);
                outs[kb] =
                    fa_tensor_bhsd(calloc((size_t)(s.batch * s.q_heads * nq * s.dim_v), sizeof(double)),
                                   FA_F64, s.batch, s.q_heads, nq, s.dim_v);
                lses[kb] = calloc((size_t)(s.batch * s.q_heads * nq), sizeof(double));
                fa_params p = m.p;
                p.diagonal_shift = a - b;
                cr_assert_eq(fa_forward(NULL, &p, &q, &k, &v, &outs[kb], lses[kb]), FA_OK, "%s: %s", desc,
                             fa_last_error());
            }
            fa_tensor merged =
                fa_tensor_bhsd(calloc((size_t)(s.batch * s.q_heads * nq * s.dim_v), sizeof(double)), FA_F64,
                               s.batch, s.q_heads, nq, s.dim_v);
            double *lse = calloc((size_t)(s.batch * s.q_heads * nq), sizeof(double));
            const void *parts[3] = {lses[0], lses[1], lses[2]};
            cr_assert_eq(fa_merge(NULL, 3, outs, parts, &merged, lse), FA_OK, "%s: %s", desc,
                         fa_last_error());
            double worst = 0, scale = 0;
            for (int64_t bb = 0; bb < s.batch; bb++)
                for (int64_t h = 0; h < s.q_heads; h++)
                    for (int64_t i = 0; i < nq; i++) {
                        for (int64_t y = 0; y < s.dim_v; y++) {
                            double want = kit_tensor_load(&whole.out, bb, h, a + i, y),
                                   got = kit_tensor_load(&merged, bb, h, i, y);
                            if (fabs(want) > scale) scale = fabs(want);
                            if (fabs(got - want) > worst) worst = fabs(got - want);
                        }
                        double want = tu_lse_get(&whole, (bb * s.q_heads + h) * s.q_len + a + i);
                        double got = lse[(bb * s.q_heads + h) * nq + i];
                        cr_expect(
                            fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want)),
                            "%s, query block %d, seed %llu: lse of row (%lld, %lld, %lld): %.17g, whole call "
                            "%.17g",
                            desc, qb, (unsigned long long)seed, (long long)bb, (long long)h,
                            (long long)(a + i), got, want);
                    }
            cr_expect(worst <= 1e-12 * scale,
                      "%s, query block %d, seed %llu: merged blocks differ by %g (max |out| %g)", desc, qb,
                      (unsigned long long)seed, worst, scale);
            for (int kb = 0; kb < 3; kb++) free(outs[kb].data), free(lses[kb]);
            free(merged.data), free(lse);
        }
        tm_mods_free(&m);
        tu_problem_free(&whole);
    }
}

Test(diagonal_shift, a_shift_beyond_the_limit_is_refused_named_and_writes_nothing)
{
    uint64_t seed = tu_test_seed();
    tu_rng rng = tu_rng_make(seed);
    tu_shape s = {FA_F32, 1, 2, 1, 9, 11, 8, 8, TU_BHSD};
    tu_problem pr;
    tu_problem_make(&pr, &s, &rng, 1.0);
    static const int64_t bad[] = {FA_MAX_DIAGONAL_SHIFT + 1, -FA_MAX_DIAGONAL_SHIFT - 1, INT64_MAX,
                                  INT64_MIN};
    for (int x = 0; x < 4; x++) {
        fa_params p = FA_PARAMS_INIT;
        p.causal = FA_CAUSAL_TOP_LEFT;
        p.diagonal_shift = bad[x];
        tu_problem_fill_canary(&pr);
        unsigned char *before = kit_buf_snapshot(&pr.out_buf);
        cr_expect_eq(fa_forward(NULL, &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_ERR_ARG, "shift %lld",
                     (long long)bad[x]);
        cr_expect(strstr(fa_last_error(), "p.diagonal_shift") != NULL, "shift %lld: message '%s'",
                  (long long)bad[x], fa_last_error());
        cr_expect(kit_buf_equals_snapshot(&pr.out_buf, before), "shift %lld: out was written",
                  (long long)bad[x]);
        free(before);
    }
    tu_problem_free(&pr);
}
