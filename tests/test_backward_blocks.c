/* SPDX-License-Identifier: BSD-3-Clause */
/* Block sizes change the order of the backward's arithmetic, not its result: for every pair of
 * block_q and block_k from {1, 2, 3, 5, 8, 16, 32, 64, 128}, the gradients (from out and lse of
 * fa_forward on the same context) agree with the oracle within the rule of
 * test_backward_accuracy.c, and fa_stats reports the configured block sizes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"
#include "util_backward.h"

static const int block_sizes[] = {1, 2, 3, 5, 8, 16, 32, 64, 128};
#define N_BLOCKS ((int)(sizeof block_sizes / sizeof block_sizes[0]))

static void run_blocks(fa_dtype dtype)
{
    uint64_t seed = tu_test_seed();
    /* Sizes no block divides; grouped heads; one case per causal mode and layout. BOTTOM_RIGHT
     * with Nq > Nk has 16 fully masked rows, TOP_LEFT with Nq > Nk none. The oracle runs once per
     * case; each block pair's context serves the three cases. */
    tub_problem bp[3];
    tub_ref oracle[3], naive[3];
    fa_params p[3];
    for (int c = 0; c < 3; c++) {
        tu_shape s = {dtype, 1, 2, 1, 77, 61, 19, 23, (tu_layout)c};
        p[c] = (fa_params)FA_PARAMS_INIT;
        p[c].causal = (fa_causal)c;
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tub_make(&bp[c], &s, &rng, 2.5);
        tub_ref_compute(&oracle[c], &bp[c], &p[c]);
        if (dtype == FA_F32) tub_ref_compute_naive_f32(&naive[c], &bp[c], &p[c]);
    }
    for (int a = 0; a < N_BLOCKS; a++)
        for (int b = 0; b < N_BLOCKS; b++) {
            fa_context_opts o = FA_CONTEXT_OPTS_INIT;
            o.num_threads = 2;
            o.block_q = block_sizes[a];
            o.block_k = block_sizes[b];
            fa_context *ctx;
            cr_assert_eq(fa_context_create(&ctx, &o), FA_OK, "blocks %d/%d", o.block_q, o.block_k);
            for (int c = 0; c < 3; c++) {
                uint64_t case_seed = seed + (uint64_t)c;
                char desc[320], msg[512];
                tub_desc(&bp[c], &p[c], o.block_q, o.block_k, desc, sizeof desc);
                tub_fill_grad_canary(&bp[c]);
                fa_status st = tub_forward(ctx, &p[c], &bp[c]);
                cr_assert_eq(st, FA_OK, "%s, seed %llu: forward status %d", desc,
                             (unsigned long long)case_seed, st);
                st = tub_backward(ctx, &p[c], &bp[c]);
                cr_expect_eq(st, FA_OK, "%s, seed %llu: backward status %d", desc,
                             (unsigned long long)case_seed, st);
                if (st != FA_OK) continue;
                fa_stats stats = FA_STATS_INIT;
                cr_assert_eq(fa_context_stats(ctx, &stats), FA_OK);
                /* the blocks used: the configured ones, no larger than the problem (flashattn.h) */
                int64_t nq = bp[c].fw.shape.q_len, nk = bp[c].fw.shape.kv_len;
                int64_t want_q = o.block_q < nq ? o.block_q : nq;
                int64_t want_k = o.block_k < nk ? o.block_k : nk;
                cr_expect(stats.block_q == want_q && stats.block_k == want_k,
                          "%s: fa_stats reports blocks %d/%d, used should be %lld/%lld", desc, stats.block_q,
                          stats.block_k, (long long)want_q, (long long)want_k);
                cr_expect(tub_grads_only_defined_written(&bp[c]), "%s, seed %llu: wrote outside dq/dk/dv",
                          desc, (unsigned long long)case_seed);
                cr_expect(tub_check_accuracy(&bp[c], &p[c], &oracle[c], dtype == FA_F32 ? &naive[c] : NULL,
                                             1e-11, msg, sizeof msg),
                          "%s, seed %llu: %s", desc, (unsigned long long)case_seed, msg);
            }
            fa_context_destroy(ctx);
        }
    for (int c = 0; c < 3; c++) {
        tub_ref_free(&oracle[c]);
        if (dtype == FA_F32) tub_ref_free(&naive[c]);
        tub_free(&bp[c]);
    }
}

Test(backward_blocks, f64_every_block_pair_matches_oracle_to_1e_11)
{
    run_blocks(FA_F64);
}

Test(backward_blocks, f32_every_block_pair_within_3x_naive_f32_error)
{
    run_blocks(FA_F32);
}
