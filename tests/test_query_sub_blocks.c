/* SPDX-License-Identifier: BSD-3-Clause */
/* An item of more than 64 query rows runs as blocks of 64 rows, all of them over one key tile
 * before the next (src/drivers/forward_attend.h): each block computes what an item of its rows alone
 * computes, so out and lse with block_q = 100, 128 and 256 are the bytes of block_q = 64 with the
 * same block_k, under every causal alignment, a window, ALiBi with a softcap, grouped heads and
 * Dv != D. The shapes keep at least 128 items at every block_q, so that no call splits its keys
 * (schedule.h) and the only difference between the calls is the rows an item holds. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"

typedef struct {
    tu_shape shape;
    fa_causal causal;
    int64_t window_left;
    int modifiers; /* ALiBi slopes and a softcap */
} sub_case;

/* B·Hq·ceil(Nq/256) = 128: no split at any block_q below */
static const sub_case cases[] = {
    {{FA_F32, 2, 32, 8, 300, 330, 40, 24, TU_BHSD}, FA_CAUSAL_NONE, -1, 0},
    {{FA_F32, 2, 32, 8, 300, 330, 40, 24, TU_BSHD}, FA_CAUSAL_TOP_LEFT, -1, 0},
    {{FA_F32, 2, 32, 32, 300, 260, 32, 32, TU_BHSD}, FA_CAUSAL_BOTTOM_RIGHT, -1, 1},
    {{FA_F32, 2, 32, 4, 300, 300, 64, 64, TU_PACKED}, FA_CAUSAL_TOP_LEFT, 70, 0},
    {{FA_F64, 2, 32, 8, 300, 330, 24, 40, TU_BHSD}, FA_CAUSAL_BOTTOM_RIGHT, -1, 0},
    {{FA_F64, 2, 32, 16, 300, 280, 16, 16, TU_BSHD}, FA_CAUSAL_NONE, 40, 1},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static const int wide_blocks[] = {100, 128, 256};
static const int key_blocks[] = {16, 64, 100};

static fa_status run(const sub_case *c, int block_q, int block_k, tu_problem *pr, const float *slopes)
{
    fa_context *ctx = tu_context(0, block_q, block_k);
    fa_params p = FA_PARAMS_INIT;
    p.causal = c->causal;
    p.window_left = c->window_left;
    if (c->modifiers) {
        p.softcap = 20.0;
        p.alibi_slopes = slopes;
    }
    tu_problem_fill_canary(pr);
    fa_status st = fa_forward(ctx, &p, &pr->q, &pr->k, &pr->v, &pr->out, pr->lse);
    fa_stats stats = FA_STATS_INIT;
    fa_context_stats(ctx, &stats);
    cr_expect_eq(stats.block_q, block_q, "fa_stats reports block_q %d, asked for %d", stats.block_q, block_q);
    fa_context_destroy(ctx);
    return st;
}

Test(query_sub_blocks, wide_items_give_the_bytes_of_64_row_items, .timeout = 600)
{
    uint64_t seed = tu_test_seed();
    float slopes[32];
    for (int h = 0; h < 32; h++) slopes[h] = 0.5f / (float)(h + 1);
    for (int c = 0; c < N_CASES; c++) {
        const sub_case *sc = &cases[c];
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tu_problem narrow, wide;
        tu_problem_make(&narrow, &sc->shape, &rng, 2.5);
        rng = tu_rng_make(seed + (uint64_t)c);
        tu_problem_make(&wide, &sc->shape, &rng, 2.5); /* same inputs, own outputs */
        fa_params shown = FA_PARAMS_INIT;
        shown.causal = sc->causal;
        shown.window_left = sc->window_left;
        char desc[256];
        tu_shape_str(&sc->shape, &shown, desc, sizeof desc);
        for (size_t k = 0; k < sizeof key_blocks / sizeof *key_blocks; k++) {
            fa_status st = run(sc, 64, key_blocks[k], &narrow, slopes);
            cr_assert_eq(st, FA_OK, "%s, blocks 64/%d: status %d", desc, key_blocks[k], st);
            for (size_t w = 0; w < sizeof wide_blocks / sizeof *wide_blocks; w++) {
                st = run(sc, wide_blocks[w], key_blocks[k], &wide, slopes);
                cr_assert_eq(st, FA_OK, "%s, blocks %d/%d: status %d", desc, wide_blocks[w], key_blocks[k],
                             st);
                int64_t where = 0;
                cr_expect(tu_outputs_bitwise_equal(&narrow, &wide, &where),
                          "%s%s, seed %llu: blocks %d/%d differ from 64/%d at %s %lld", desc,
                          sc->modifiers ? ", ALiBi, softcap 20" : "", (unsigned long long)seed,
                          wide_blocks[w], key_blocks[k], key_blocks[k], where < 0 ? "lse" : "out row",
                          (long long)where);
                cr_expect(tu_problem_only_defined_written(&wide), "%s, blocks %d/%d: wrote outside out/lse",
                          desc, wide_blocks[w], key_blocks[k]);
            }
        }
        tu_problem_free(&narrow);
        tu_problem_free(&wide);
    }
}

/* With few items a wide item's keys are split into chunks (schedule.h: 4 items of 256 rows against
 * 2000 keys), each chunk clamping every block's key range on its own: the results meet the
 * accuracy rule against the oracle and are the same bytes on 1 and 3 threads. */
Test(query_sub_blocks, wide_items_split_over_keys_match_the_oracle_on_every_thread_count, .timeout = 600)
{
    uint64_t seed = tu_test_seed();
    static const struct {
        tu_shape shape;
        fa_causal causal;
        int64_t window_left;
    } split_cases[] = {
        {{FA_F32, 1, 2, 1, 300, 2000, 40, 24, TU_BHSD}, FA_CAUSAL_BOTTOM_RIGHT, -1},
        {{FA_F64, 1, 2, 2, 300, 2000, 24, 40, TU_BSHD}, FA_CAUSAL_NONE, -1},
        {{FA_F32, 1, 2, 1, 300, 2000, 32, 32, TU_BHSD}, FA_CAUSAL_BOTTOM_RIGHT, 500},
    };
    for (size_t c = 0; c < sizeof split_cases / sizeof *split_cases; c++) {
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tu_problem one, three;
        tu_problem_make(&one, &split_cases[c].shape, &rng, 2.5);
        rng = tu_rng_make(seed + (uint64_t)c);
        tu_problem_make(&three, &split_cases[c].shape, &rng, 2.5);
        fa_params p = FA_PARAMS_INIT;
        p.causal = split_cases[c].causal;
        p.window_left = split_cases[c].window_left;
        char desc[256], msg[512];
        tu_shape_str(&split_cases[c].shape, &p, desc, sizeof desc);
        tu_problem *runs[2] = {&one, &three};
        for (int r = 0; r < 2; r++) {
            const int threads = r == 0 ? 1 : 3;
            fa_context *ctx = tu_context(threads, 256, 64);
            tu_problem_fill_canary(runs[r]);
            fa_status st =
                fa_forward(ctx, &p, &runs[r]->q, &runs[r]->k, &runs[r]->v, &runs[r]->out, runs[r]->lse);
            cr_assert_eq(st, FA_OK, "%s, %d threads: status %d", desc, threads, st);
            fa_context_destroy(ctx);
        }
        cr_expect(tu_check_picked_accuracy(&one, &p, INT64_MAX, 1e-12, msg, sizeof msg),
                  "%s, blocks 256/64, seed %llu: %s", desc, (unsigned long long)seed, msg);
        int64_t where = 0;
        cr_expect(tu_outputs_bitwise_equal(&one, &three, &where),
                  "%s, blocks 256/64, seed %llu: 3 threads differ from 1 at %s %lld", desc,
                  (unsigned long long)seed, where < 0 ? "lse" : "out row", (long long)where);
        tu_problem_free(&one);
        tu_problem_free(&three);
    }
}
