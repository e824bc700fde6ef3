/* SPDX-License-Identifier: BSD-3-Clause */
/* Block sizes change the order of the arithmetic, not the result, in either direction: for every
 * pair of block_q and block_k from {1, 2, 3, 5, 8, 16, 32, 64, 128},
 * - forward: out and lse agree with the oracle within the accuracy rule of test_accuracy.c, and
 *   with the pair 1/1 within twice that;
 * - backward (from that forward's out and lse, on the same context): the gradients agree with the
 *   oracle within the rule of test_accuracy.c's backward (tub_check_accuracy), and fa_stats
 *   reports the configured block sizes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "util_backward.h"

static const int block_sizes[] = {1, 2, 3, 5, 8, 16, 32, 64, 128};
#define N_BLOCKS   ((int)(sizeof block_sizes / sizeof block_sizes[0]))
#define N_PROBLEMS 3

typedef struct {
    tub_problem bp;
    fa_params p;
    char desc[256];
    /* forward */
    int64_t *rows, n;
    tu_ref oracle, first;        /* first: the library's result with blocks 1/1, on the same rows */
    double out_limit, lse_limit; /* against the oracle */
    int have_first;
    /* backward */
    tub_ref grad_oracle, grad_naive;
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

/* fa_stats after a call reports the blocks it used: the configured ones, no larger than the
 * problem (flashattn.h). */
static void expect_stats_blocks(fa_context *ctx, const fa_context_opts *o, const tu_shape *s,
                                const char *desc)
{
    fa_stats stats = FA_STATS_INIT;
    cr_assert_eq(fa_context_stats(ctx, &stats), FA_OK);
    int64_t want_q = o->block_q < s->q_len ? o->block_q : s->q_len;
    int64_t want_k = o->block_k < s->kv_len ? o->block_k : s->kv_len;
    cr_expect(stats.block_q == want_q && stats.block_k == want_k,
              "%s: fa_stats reports blocks %d/%d, used should be %lld/%lld", desc, stats.block_q,
              stats.block_k, (long long)want_q, (long long)want_k);
}

/* The forward with one block pair: out and lse against the oracle and against blocks 1/1. */
static int check_forward(fa_context *ctx, const fa_context_opts *o, block_problem *b, uint64_t seed)
{
    tu_problem *pr = &b->bp.fw;
    char msg[512];
    tu_problem_fill_canary(pr);
    fa_status st = fa_forward(ctx, &b->p, &pr->q, &pr->k, &pr->v, &pr->out, pr->lse);
    cr_expect_eq(st, FA_OK, "%s, blocks %d/%d, seed %llu: status %d", b->desc, o->block_q, o->block_k,
                 (unsigned long long)seed, st);
    if (st != FA_OK) return 0;
    cr_expect(tu_problem_only_defined_written(pr), "%s, blocks %d/%d, seed %llu: wrote outside out/lse",
              b->desc, o->block_q, o->block_k, (unsigned long long)seed);
    char what[320];
    snprintf(what, sizeof what, "%s, blocks %d/%d, forward", b->desc, o->block_q, o->block_k);
    expect_stats_blocks(ctx, o, &pr->shape, what);
    cr_expect(tu_check_err("out", tu_compare_out(pr, &b->oracle), b->out_limit, msg, sizeof msg) &&
                  tu_check_err("lse", tu_compare_lse(pr, &b->oracle), b->lse_limit, msg, sizeof msg),
              "%s, blocks %d/%d against the oracle, seed %llu: %s", b->desc, o->block_q, o->block_k,
              (unsigned long long)seed, msg);
    if (!b->have_first) {
        capture(&b->first, pr, &b->oracle);
        b->have_first = 1;
        return 1;
    }
    cr_expect(tu_check_err("out", tu_compare_out(pr, &b->first), 2 * b->out_limit, msg, sizeof msg) &&
                  tu_check_err("lse", tu_compare_lse(pr, &b->first), 2 * b->lse_limit, msg, sizeof msg),
              "%s, blocks %d/%d against blocks 1/1, seed %llu: %s", b->desc, o->block_q, o->block_k,
              (unsigned long long)seed, msg);
    return 1;
}

/* The backward with one block pair, from the forward's out and lse: the gradients against the
 * oracle, and the block sizes fa_stats reports. */
static void check_backward(fa_context *ctx, const fa_context_opts *o, block_problem *b, uint64_t seed)
{
    char desc[320], msg[512];
    tub_desc(&b->bp, &b->p, o->block_q, o->block_k, desc, sizeof desc);
    tub_fill_grad_canary(&b->bp);
    unsigned char *out = kit_buf_snapshot(&b->bp.fw.out_buf), *lse = kit_buf_snapshot(&b->bp.fw.lse_buf);
    fa_status st = tub_backward(ctx, &b->p, &b->bp);
    /* out and lse are the backward's inputs: it reads them and writes none of their bytes */
    cr_expect(kit_buf_equals_snapshot(&b->bp.fw.out_buf, out) &&
                  kit_buf_equals_snapshot(&b->bp.fw.lse_buf, lse),
              "%s, seed %llu: the backward changed a byte of out or lse", desc, (unsigned long long)seed);
    free(out), free(lse);
    cr_expect_eq(st, FA_OK, "%s, seed %llu: backward status %d", desc, (unsigned long long)seed, st);
    if (st != FA_OK) return;
    expect_stats_blocks(ctx, o, &b->bp.fw.shape, desc);
    cr_expect(tub_grads_only_defined_written(&b->bp), "%s, seed %llu: wrote outside dq/dk/dv", desc,
              (unsigned long long)seed);
    int f32 = b->bp.fw.shape.dtype == FA_F32;
    cr_expect(tub_check_accuracy(&b->bp, &b->p, &b->grad_oracle, f32 ? &b->grad_naive : NULL, 1e-11, msg,
                                 sizeof msg),
              "%s, seed %llu: %s", desc, (unsigned long long)seed, msg);
}

static void run_blocks(fa_dtype dtype)
{
    uint64_t seed = tu_test_seed();
    block_problem *bp = calloc(N_PROBLEMS, sizeof *bp);
    cr_assert(bp);
    /* Sizes that no block divides, grouped heads, one problem per causal mode and layout;
     * BOTTOM_RIGHT with Nq > Nk has 16 fully masked rows, TOP_LEFT with Nq > Nk none. The oracles
     * run once per problem; each block pair's context serves the three, forward then backward. */
    for (int c = 0; c < N_PROBLEMS; c++) {
        block_problem *b = &bp[c];
        tu_shape s = {dtype, 1, 2, 1, 77, 61, 19, 23, (tu_layout)c};
        b->p = (fa_params)FA_PARAMS_INIT;
        b->p.causal = (fa_causal)c;
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tub_make(&b->bp, &s, &rng, 2.5);
        tu_problem *pr = &b->bp.fw;
        tu_shape_str(&s, &b->p, b->desc, sizeof b->desc);
        b->n = tu_pick_rows(pr, &b->p, INT64_MAX, &b->rows);
        tu_ref_compute(&b->oracle, pr, &b->p, b->rows, b->n);
        tub_ref_compute(&b->grad_oracle, &b->bp, &b->p);
        if (dtype == FA_F64) {
            b->out_limit = 1e-12 * tu_compare_ref_out(&b->oracle, &b->oracle).max_ref;
            b->lse_limit = 1e-12 * tu_compare_ref_lse(&b->oracle, &b->oracle).max_ref;
        } else {
            tu_ref naive;
            tu_ref_compute_naive_f32(&naive, pr, &b->p, b->rows, b->n);
            b->out_limit = 2.0 * tu_compare_ref_out(&naive, &b->oracle).max_err + 1e-6;
            b->lse_limit = 2.0 * tu_compare_ref_lse(&naive, &b->oracle).max_err + 1e-6;
            tu_ref_free(&naive);
            tub_ref_compute_naive_f32(&b->grad_naive, &b->bp, &b->p);
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
            /* The backward runs from the out and lse the forward just wrote and checked. */
            for (int c = 0; c < N_PROBLEMS; c++)
                if (check_forward(ctx, &o, &bp[c], seed + (uint64_t)c))
                    check_backward(ctx, &o, &bp[c], seed + (uint64_t)c);
            fa_context_destroy(ctx);
        }
    for (int c = 0; c < N_PROBLEMS; c++) {
        if (bp[c].have_first) tu_ref_free(&bp[c].first);
        tu_ref_free(&bp[c].oracle);
        tub_ref_free(&bp[c].grad_oracle);
        if (dtype == FA_F32) tub_ref_free(&bp[c].grad_naive);
        free(bp[c].rows);
        tub_free(&bp[c].bp);
    }
    free(bp);
}

/* f64: forward within 1e-12 of the oracle, gradients within 1e-11; f32: within 2x (forward) and 3x
 * (backward) the naive f32 error. */
Test(blocks, f64_every_block_size_pair_agrees_with_oracle_forward_and_backward)
{
    run_blocks(FA_F64);
}

Test(blocks, f32_every_block_size_pair_agrees_with_oracle_forward_and_backward)
{
    run_blocks(FA_F32);
}
