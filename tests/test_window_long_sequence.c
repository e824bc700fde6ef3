/* SPDX-License-Identifier: BSD-3-Clause */
/* A sliding window over a long sequence (include/flashattn.h, "Score modifiers": "key tiles outside
 * every row's window are never loaded or computed"). Whether a tile was skipped cannot be seen in
 * the result, so this states what can: over Nq = Nk = 4096 with a window of 64 keys, out, lse, dq,
 * dk, dv (and dsinks) are exact against the oracles at the rules of test_modifiers.c (both
 * directions), on automatic and odd blocks. The library's work is then about
 * 4096·65 score pairs, not 4096²; a driver that computed every tile would make this suite slow,
 * though nothing here times it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "modifiers.h"
#include "util.h"
#include "util_backward.h"

static const struct {
    tu_shape shape;
    tm_spec spec;
} cases[] = {
    {{FA_F32, 1, 1, 1, 4096, 4096, 16, 16, TU_BHSD}, {FA_CAUSAL_TOP_LEFT, 64, -1, 0.0, 0, TM_BIAS_OFF, 0}},
    {{FA_F64, 1, 1, 1, 4096, 4096, 16, 8, TU_BSHD}, {FA_CAUSAL_NONE, 48, 16, 0.0, 1, TM_BIAS_OFF, 1}},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

Test(window_long_sequence, window_of_64_over_4096_keys_matches_oracles_forward_and_backward, .timeout = 300)
{
    uint64_t seed = tu_test_seed();
    static const int blocks[2][2] = {{0, 0}, {37, 50}};
    for (int c = 0; c < N_CASES; c++) {
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tub_problem bp;
        tub_make(&bp, &cases[c].shape, &rng, 2.0);
        tm_mods m;
        tm_mods_make(&m, &cases[c].spec, &cases[c].shape, 0.0, &rng);
        int f32 = cases[c].shape.dtype == FA_F32;
        tub_ref oracle, naive;
        tub_ref_compute(&oracle, &bp, &m.p); /* once: the same inputs for both block sizes */
        if (f32) tub_ref_compute_naive_f32(&naive, &bp, &m.p);
        int64_t *rows;
        int64_t n = tu_pick_rows(&bp.fw, &m.p, INT64_MAX, &rows);
        for (int b = 0; b < 2; b++) {
            fa_context *ctx = tu_context(0, blocks[b][0], blocks[b][1]);
            char desc[600], msg[512];
            tm_desc(&cases[c].shape, &m, desc, sizeof desc);
            m.p.dsinks = NULL;
            cr_assert_eq(tub_forward(ctx, &m.p, &bp), FA_OK, "%s", desc);
            cr_expect(tu_check_accuracy(&bp.fw, &m.p, rows, n, 1e-12, msg, sizeof msg),
                      "%s, blocks %d/%d, seed %llu: %s", desc, blocks[b][0], blocks[b][1],
                      (unsigned long long)seed, msg);
            if (cases[c].spec.sinks) tm_mods_want_dsinks(&m);
            cr_assert_eq(tub_backward(ctx, &m.p, &bp), FA_OK, "%s", desc);
            cr_expect(tub_check_accuracy(&bp, &m.p, &oracle, f32 ? &naive : NULL, 1e-11, msg, sizeof msg),
                      "%s, blocks %d/%d, seed %llu: %s", desc, blocks[b][0], blocks[b][1],
                      (unsigned long long)seed, msg);
            if (cases[c].spec.sinks)
                cr_expect(tm_check_dsinks(&bp, &m, msg, sizeof msg), "%s, blocks %d/%d, seed %llu: %s", desc,
                          blocks[b][0], blocks[b][1], (unsigned long long)seed, msg);
            fa_context_destroy(ctx);
        }
        free(rows);
        tub_ref_free(&oracle);
        if (f32) tub_ref_free(&naive);
        tm_mods_free(&m);
        tub_free(&bp);
    }
}
