/* SPDX-License-Identifier: BSD-3-Clause */
/* Block sizes change the order of the arithmetic, not the result: every pair of block_q and
 * block_k from {1, 2, 3, 5, 8, 16, 32, 64, 128} agrees with the oracle within the accuracy rule
 * of test_accuracy.c, and with the pair 1/1 within twice that. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const int block_sizes[] = {1, 2, 3, 5, 8, 16, 32, 64, 128};
#define N_BLOCKS   ((int)(sizeof block_sizes / sizeof block_sizes[0]))
#define N_PROBLEMS 3

typedef struct {
    tu_problem pr;
    fa_params p;
    char desc[256];
    int64_t *rows, n;
    tu_ref oracle, first;        /* first: the library's result with blocks 1/1, on the same rows */
    double out_limit, lse_limit; /* against the oracle */
    int have_first;
} block_problem;

/* The library's values on r's rows, as a tu_ref. */
static void capture(tu_ref *dst, const tu_problem *pr, const tu_ref *r)
{
    dst->n = r->n;
    dst->dim_v = r->dim_v;
    dst->rows = malloc(sizeof(int64_t) * (size_t)(r->n + 1));
    dst->out = malloc(sizeof(double) * (size_t)(r->n * r->dim_v + 1));
    dst->lse = malloc(sizeof(double) * (size_t)(r->n + 1));
    cr_assert(dst->rows && dst->out && dst->lse);
    double *all_out = tu_out_copy(pr), *all_lse = tu_lse_copy(pr);
    for (int64_t x = 0; x < r->n; x++) {
        dst->rows[x] = r->rows[x];
        dst->lse[x] = all_lse[r->rows[x]];
        memcpy(dst->out + x * r->dim_v, all_out + r->rows[x] * r->dim_v, sizeof(double) * (size_t)r->dim_v);
    }
    free(all_out);
    free(all_lse);
}

static void run_blocks(fa_dtype dtype)
{
    uint64_t seed = tu_test_seed();
    block_problem *bp = calloc(N_PROBLEMS, sizeof *bp);
    cr_assert(bp);
    /* Sizes that no block divides, one problem per causal mode; BOTTOM_RIGHT with Nq > Nk has 16
     * fully masked rows. */
    for (int c = 0; c < N_PROBLEMS; c++) {
        block_problem *b = &bp[c];
        tu_shape s = {dtype, 1, 2, 1, 77, 61, 19, 23, (tu_layout)c};
        b->p = (fa_params)FA_PARAMS_INIT;
        b->p.causal = (fa_causal)c;
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tu_problem_make(&b->pr, &s, &rng, 2.5);
        tu_shape_str(&s, &b->p, b->desc, sizeof b->desc);
        b->n = tu_pick_rows(&b->pr, &b->p, INT64_MAX, &b->rows);
        tu_ref_compute(&b->oracle, &b->pr, &b->p, b->rows, b->n);
        if (dtype == FA_F64) {
            b->out_limit = 1e-12 * tu_compare_ref_out(&b->oracle, &b->oracle).max_ref;
            b->lse_limit = 1e-12 * tu_compare_ref_lse(&b->oracle, &b->oracle).max_ref;
        } else {
            tu_ref naive;
            tu_ref_compute_naive_f32(&naive, &b->pr, &b->p, b->rows, b->n);
            b->out_limit = 2.0 * tu_compare_ref_out(&naive, &b->oracle).max_err + 1e-6;
            b->lse_limit = 2.0 * tu_compare_ref_lse(&naive, &b->oracle).max_err + 1e-6;
            tu_ref_free(&naive);
        }
    }
    for (int a = 0; a < N_BLOCKS; a++)
        for (int k = 0; k < N_BLOCKS; k++) {
            fa_context_opts o = FA_CONTEXT_OPTS_INIT;
            o.num_threads = 2;
            o.block_q = block_sizes[a];
            o.block_k = block_sizes[k];
            fa_context *ctx;
            cr_assert_eq(fa_context_create(&ctx, &o), FA_OK, "blocks %d/%d", o.block_q, o.block_k);
            for (int c = 0; c < N_PROBLEMS; c++) {
                block_problem *b = &bp[c];
                char msg[512];
                tu_problem_fill_canary(&b->pr);
                fa_status st = fa_forward(ctx, &b->p, &b->pr.q, &b->pr.k, &b->pr.v, &b->pr.out, b->pr.lse);
                cr_expect_eq(st, FA_OK, "%s, blocks %d/%d, seed %llu: status %d", b->desc, o.block_q,
                             o.block_k, (unsigned long long)seed, st);
                if (st != FA_OK) continue;
                cr_expect(tu_problem_only_defined_written(&b->pr),
                          "%s, blocks %d/%d, seed %llu: wrote outside out/lse", b->desc, o.block_q, o.block_k,
                          (unsigned long long)seed);
                cr_expect(
                    tu_check_err("out", tu_compare_out(&b->pr, &b->oracle), b->out_limit, msg, sizeof msg) &&
                        tu_check_err("lse", tu_compare_lse(&b->pr, &b->oracle), b->lse_limit, msg,
                                     sizeof msg),
                    "%s, blocks %d/%d against the oracle, seed %llu: %s", b->desc, o.block_q, o.block_k,
                    (unsigned long long)seed, msg);
                if (!b->have_first) {
                    capture(&b->first, &b->pr, &b->oracle);
                    b->have_first = 1;
                    continue;
                }
                cr_expect(tu_check_err("out", tu_compare_out(&b->pr, &b->first), 2 * b->out_limit, msg,
                                       sizeof msg) &&
                              tu_check_err("lse", tu_compare_lse(&b->pr, &b->first), 2 * b->lse_limit, msg,
                                           sizeof msg),
                          "%s, blocks %d/%d against blocks 1/1, seed %llu: %s", b->desc, o.block_q, o.block_k,
                          (unsigned long long)seed, msg);
            }
            fa_context_destroy(ctx);
        }
    for (int c = 0; c < N_PROBLEMS; c++) {
        if (bp[c].have_first) tu_ref_free(&bp[c].first);
        tu_ref_free(&bp[c].oracle);
        free(bp[c].rows);
        tu_problem_free(&bp[c].pr);
    }
    free(bp);
}

Test(blocks, f64_every_block_size_pair_agrees_with_oracle_and_each_other)
{
    run_blocks(FA_F64);
}

Test(blocks, f32_every_block_size_pair_agrees_with_oracle_and_each_other)
{
    run_blocks(FA_F32);
}
