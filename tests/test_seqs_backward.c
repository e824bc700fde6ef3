/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_backward over a batch of sequences (include/flashattn.h, fa_seqs): packed (varlen) queries and
 * keys, and dense batches with per-sequence keys in use (seqused_k). Paged keys are refused in the
 * backward by design (a row of the error-exit table, error_exit_ragged.c).
 * - a sequence's dq, dk and dv are bitwise those of a dense fa_backward of that sequence alone (same
 *   block sizes, the same out and lse), for every causal mode and windows, GQA, f32 and f64;
 * - against the analytic float64 oracle per sequence (tub_check_accuracy: f64 1e-11, f32 3x the
 *   naive f32 error), with sequences without queries, without keys, of one token and with more
 *   queries than keys, under ALiBi, sinks and softcap; dsinks is the sum over the sequences of each
 *   one's oracle dsinks;
 * - dq, dk, dv and dsinks do not depend on the thread count (1..4);
 * and the call writes only the sequences' rows of dq and their keys in use of dk and dv. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seqs_util.h"

/* Blocks of 16 queries and 16 keys, as test_seqs.c (the forward gives the out and lse the backward
 * reads; the backward itself never splits keys). */
enum { BQ = 16, BK = 16, MAX_Q = 40, MAX_K = 4 * BK - 1 };

static const ts_mask_case masks[] = {
    {FA_CAUSAL_NONE, -1, -1}, {FA_CAUSAL_TOP_LEFT, -1, -1}, {FA_CAUSAL_BOTTOM_RIGHT, -1, -1},
    {FA_CAUSAL_NONE, 6, 3},   {FA_CAUSAL_TOP_LEFT, 9, -1},  {FA_CAUSAL_BOTTOM_RIGHT, 4, 0},
};
#define N_MASKS ((int)(sizeof masks / sizeof masks[0]))

static const ts_layout_case layouts[] = {
    {1, TS_KEYS_PACKED, 0, 0, 7, 4, 2}, {1, TS_KEYS_PACKED, 1, 1, 6, 3, 1}, {1, TS_KEYS_DENSE, 1, 0, 5, 2, 2},
    {0, TS_KEYS_PACKED, 0, 1, 5, 4, 1}, {0, TS_KEYS_DENSE, 1, 0, 6, 4, 2},
};
#define N_LAYOUTS ((int)(sizeof layouts / sizeof layouts[0]))

Test(seqs_backward, packed_gradients_are_bitwise_those_of_a_dense_call_per_sequence)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx = ts_context(0, BQ, BK);
    char desc[512], msg[1024];
    for (int dt = 0; dt < 2; dt++)
        for (int l = 0; l < N_LAYOUTS; l++)
            for (int m = 0; m < N_MASKS; m++) {
                tu_rng rng = tu_rng_make(seed + (uint64_t)((dt * N_LAYOUTS + l) * N_MASKS + m));
                ts_spec s = ts_spec_of(&layouts[l], dt ? FA_F64 : FA_F32, 8 + 5 * l, 6 + 3 * m);
                ts_spec_draw(&s, &rng, MAX_Q, MAX_K, 1);
                ts_batch t;
                ts_make(&t, &s, &rng, 2.0);
                fa_params p = ts_mask_params(&masks[m]);
                ts_desc(&t, &p, desc, sizeof desc);
                cr_assert_eq(ts_forward(ctx, &p, &t), FA_OK, "%s: forward: %s", desc, fa_last_error());
                cr_assert_eq(ts_backward(ctx, &p, &t), FA_OK, "%s, seed %llu: %s", desc,
                             (unsigned long long)seed, fa_last_error());
                cr_expect(ts_only_sequence_rows_written(&t, 1, msg, sizeof msg), "%s, seed %llu: %s", desc,
                          (unsigned long long)seed, msg);
                cr_expect(ts_backward_equals_dense_calls(ctx, &p, &t, msg, sizeof msg),
                          "%s, blocks %d/%d, seed %llu: %s", desc, BQ, BK, (unsigned long long)seed, msg);
                ts_free(&t);
            }
    fa_context_destroy(ctx);
}

Test(seqs_backward, every_sequence_gradient_matches_the_oracle_and_dsinks_sums_the_sequences)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx[2] = {ts_context(0, 0, 0), ts_context(0, 5, 7)};
    float slopes[4], sinks[4], dsinks[4];
    char desc[512], msg[1024];
    for (int dt = 0; dt < 2; dt++)
        for (int l = 0; l < N_LAYOUTS; l++)
            for (int m = 0; m < N_MASKS; m++) {
                tu_rng rng = tu_rng_make(seed + (uint64_t)((dt * N_LAYOUTS + l) * N_MASKS + m));
                ts_spec s = ts_spec_of(&layouts[l], dt ? FA_F64 : FA_F32, 10, 7);
                ts_spec_draw(&s, &rng, 30, 45, 1);
                ts_batch t;
                ts_make(&t, &s, &rng, 2.0);
                fa_params p = ts_mask_params(&masks[m]);
                for (int h = 0; h < 4; h++) {
                    slopes[h] = (float)tu_rng_uniform(&rng, 0.0, 0.5);
                    sinks[h] = (float)tu_rng_uniform(&rng, -2.0, 3.0);
                }
                int mods = (l + m) % 4; /* none, ALiBi, sinks, ALiBi + sinks + softcap */
                if (mods & 1) p.alibi_slopes = slopes;
                if (mods >= 2) p.sinks = sinks, p.dsinks = dsinks;
                if (mods == 3) p.softcap = 4.0;
                ts_desc(&t, &p, desc, sizeof desc);
                for (int c = 0; c < 2; c++) {
                    ts_fill_canary(&t);
                    cr_assert_eq(ts_forward(ctx[c], &p, &t), FA_OK, "%s: forward: %s", desc, fa_last_error());
                    cr_assert_eq(ts_backward(ctx[c], &p, &t), FA_OK, "%s, seed %llu: %s", desc,
                                 (unsigned long long)seed, fa_last_error());
                    cr_expect(ts_only_sequence_rows_written(&t, 1, msg, sizeof msg), "%s, seed %llu: %s",
                              desc, (unsigned long long)seed, msg);
                    cr_expect(ts_check_backward(&t, &p, msg, sizeof msg), "%s, blocks %s, seed %llu: %s",
                              desc, c ? "5/7" : "auto", (unsigned long long)seed, msg);
                    if (p.dsinks)
                        cr_expect(ts_check_dsinks(&t, &p, dsinks, msg, sizeof msg),
                                  "%s, blocks %s, seed %llu: %s", desc, c ? "5/7" : "auto",
                                  (unsigned long long)seed, msg);
                }
                ts_free(&t);
            }
    fa_context_destroy(ctx[0]);
    fa_context_destroy(ctx[1]);
}

/* The same batch on 1, 2, 3 and 4 threads: the same bytes of dq, dk, dv and dsinks. */
Test(seqs_backward, varlen_backward_is_thread_count_invariant)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx[4];
    for (int x = 0; x < 4; x++) ctx[x] = ts_context(x + 1, 0, 0);
    float sinks[4] = {0.5f, -1.0f, 2.0f, 0.0f}, dsinks[4] = {0}, first[4];
    char desc[512];
    for (int dt = 0; dt < 2; dt++)
        for (int l = 0; l < N_LAYOUTS; l++) {
            tu_rng rng = tu_rng_make(seed + (uint64_t)(dt * N_LAYOUTS + l));
            ts_spec s = ts_spec_of(&layouts[l], dt ? FA_F64 : FA_F32, 16, 16);
            ts_spec_draw(&s, &rng, 120, 150, 1);
            ts_batch t;
            ts_make(&t, &s, &rng, 2.0);
            fa_params p = ts_mask_params(&masks[l % N_MASKS]);
            p.sinks = sinks, p.dsinks = dsinks;
            ts_desc(&t, &p, desc, sizeof desc);
            cr_assert_eq(ts_forward(ctx[0], &p, &t), FA_OK, "%s: forward: %s", desc, fa_last_error());
            cr_assert_eq(ts_backward(ctx[0], &p, &t), FA_OK, "%s: %s", desc, fa_last_error());
            memcpy(first, dsinks, sizeof first);
            unsigned char *grads[3];
            for (int g = 0; g < 3; g++) grads[g] = tu_buf_snapshot(&t.buf[TS_DQ + g]);
            for (int x = 1; x < 4; x++) {
                ts_fill_canary(&t);
                cr_assert_eq(ts_forward(ctx[0], &p, &t), FA_OK, "%s: forward: %s", desc, fa_last_error());
                cr_assert_eq(ts_backward(ctx[x], &p, &t), FA_OK, "%s: %s", desc, fa_last_error());
                for (int g = 0; g < 3; g++)
                    cr_expect(tu_buf_equals_snapshot(&t.buf[TS_DQ + g], grads[g]),
                              "%s, seed %llu: %s on %d threads differs from 1 thread", desc,
                              (unsigned long long)seed,
                              g == 0   ? "dq"
                              : g == 1 ? "dk"
                                       : "dv",
                              x + 1);
                cr_expect(memcmp(first, dsinks, sizeof first) == 0,
                          "%s, seed %llu: dsinks on %d threads differs from 1 thread", desc,
                          (unsigned long long)seed, x + 1);
            }
            for (int g = 0; g < 3; g++) free(grads[g]);
            ts_free(&t);
        }
    for (int x = 0; x < 4; x++) fa_context_destroy(ctx[x]);
}
