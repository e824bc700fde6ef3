/* SPDX-License-Identifier: BSD-3-Clause */
/* Determinism under every score modifier (include/flashattn.h, "Determinism" and fa_backward): for
 * a given problem and block size choice, out, lse, dq, dk, dv and dsinks are the same bytes for 1,
 * 2, 3 and 4 threads, and, in the backward, under each of its three plans (tests/test_backward_plans.c
 * forces them through the library's seam), with automatic blocks and with fixed odd ones (13/24).
 * Blocks beyond Nq and Nk give the bytes of blocks equal to them (the same key tiling).
 * Each case's first result is also held to the oracles (tests/reference*.c) at the rules of
 * test_modifiers.c (forward and backward), so what is invariant is also right.
 * The cases cover every modifier (windows, softcap, ALiBi, each bias shape, sinks) and decode steps
 * (Nq <= 3, thousands of keys, few heads), which the forward splits over keys (split-KV, checked
 * through the context's row buffer: white-box), with sinks and windows, where whole key chunks
 * see nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/backward.h" /* white-box: fa_backward_force_plan */
#include "runtime/context.h"  /* white-box: rows_bytes, the split-KV partials */
#include "modifiers.h"
#include "util.h"
#include "util_backward.h"

typedef struct {
    tu_shape shape;
    tm_spec spec;
} inv_case;

static const inv_case forward_cases[] = {
    {{FA_F32, 2, 4, 2, 150, 170, 40, 24, TU_BHSD}, {FA_CAUSAL_NONE, 9, 3, 0.0, 0, TM_BIAS_OFF, 0}},
    {{FA_F64, 2, 4, 2, 150, 170, 40, 24, TU_BSHD}, {FA_CAUSAL_TOP_LEFT, -1, -1, 3.0, 1, TM_BIAS_OFF, 0}},
    {{FA_F32, 2, 4, 1, 170, 150, 33, 17, TU_PACKED},
     {FA_CAUSAL_BOTTOM_RIGHT, -1, -1, 0.0, 0, TM_BIAS_FULL, 1}},
    {{FA_F64, 2, 4, 2, 170, 150, 20, 24, TU_BHSD},
     {FA_CAUSAL_BOTTOM_RIGHT, 20, -1, 0.0, 0, TM_BIAS_KEY_PADDING, 1}},
    {{FA_F32, 2, 2, 2, 90, 130, 24, 24, TU_BSHD},
     {FA_CAUSAL_NONE, -1, -1, 1.5, 1, TM_BIAS_BATCH_BROADCAST, 0}},
    {{FA_F64, 2, 2, 1, 64, 80, 16, 8, TU_BHSD},
     {FA_CAUSAL_NONE, -1, 5, 0.0, 0, TM_BIAS_KEY_PADDING_STRIDE0, 1}},
    /* decode steps, split over keys with either blocks: a row's keys span at least 4 key tiles of
     * the automatic size (at most 512); with 13/24 blocks most chunks of the windowed ones are empty */
    {{FA_F32, 1, 2, 1, 1, 4000, 64, 64, TU_BHSD}, {FA_CAUSAL_BOTTOM_RIGHT, 2200, -1, 0.0, 0, TM_BIAS_OFF, 1}},
    {{FA_F64, 1, 2, 2, 3, 4200, 32, 48, TU_BSHD},
     {FA_CAUSAL_BOTTOM_RIGHT, -1, -1, 4.0, 1, TM_BIAS_KEY_PADDING, 1}},
    {{FA_F32, 2, 1, 1, 1, 4500, 24, 24, TU_BHSD}, {FA_CAUSAL_NONE, 2100, 0, 2.0, 1, TM_BIAS_FULL, 1}},
};
#define N_FORWARD ((int)(sizeof forward_cases / sizeof forward_cases[0]))
enum { FIRST_DECODE = 6 };

static const inv_case backward_cases[] = {
    {{FA_F32, 2, 4, 2, 100, 110, 32, 24, TU_BHSD}, {FA_CAUSAL_NONE, 9, 3, 0.0, 0, TM_BIAS_OFF, 0}},
    {{FA_F64, 2, 4, 2, 100, 110, 32, 24, TU_BSHD}, {FA_CAUSAL_TOP_LEFT, -1, -1, 3.0, 1, TM_BIAS_OFF, 0}},
    {{FA_F32, 2, 4, 1, 110, 100, 33, 17, TU_PACKED},
     {FA_CAUSAL_BOTTOM_RIGHT, -1, -1, 0.0, 0, TM_BIAS_FULL, 1}},
    {{FA_F64, 1, 4, 1, 120, 90, 20, 24, TU_BHSD},
     {FA_CAUSAL_BOTTOM_RIGHT, 20, -1, 0.0, 0, TM_BIAS_KEY_PADDING, 1}},
    {{FA_F32, 2, 2, 2, 60, 90, 24, 24, TU_BSHD},
     {FA_CAUSAL_NONE, -1, -1, 1.5, 1, TM_BIAS_BATCH_BROADCAST, 0}},
    {{FA_F64, 2, 2, 1, 64, 80, 16, 8, TU_BHSD},
     {FA_CAUSAL_NONE, -1, 5, 0.0, 0, TM_BIAS_KEY_PADDING_STRIDE0, 1}},
    /* one long sequence: only key and query blocks to spread the work over */
    {{FA_F32, 1, 1, 1, 500, 500, 16, 16, TU_BHSD},
     {FA_CAUSAL_TOP_LEFT, 60, -1, 2.0, 1, TM_BIAS_KEY_PADDING, 1}},
    /* a decode step */
    {{FA_F64, 1, 2, 1, 1, 1500, 24, 24, TU_BHSD}, {FA_CAUSAL_BOTTOM_RIGHT, 200, -1, 0.0, 1, TM_BIAS_OFF, 1}},
};
#define N_BACKWARD ((int)(sizeof backward_cases / sizeof backward_cases[0]))

static const int blocks[2][2] = {{0, 0}, {13, 24}};

/* ---- forward ---------------------------------------------------------------------------------- */

enum { N_FORWARD_CONTEXTS = 4 }; /* 1, 2, 3, 4 threads */

static void run_forward(int block_q, int block_k)
{
    uint64_t seed = tu_test_seed();
    /* ctx[0], 1 thread, is made afresh for every case: its row buffer then grows only for that
     * case's split-KV partials */
    fa_context *ctx[N_FORWARD_CONTEXTS];
    for (int x = 1; x < N_FORWARD_CONTEXTS; x++) ctx[x] = tu_context(x + 1, block_q, block_k);
    for (int c = 0; c < N_FORWARD; c++) {
        ctx[0] = tu_context(1, block_q, block_k);
        const inv_case *ic = &forward_cases[c];
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tu_problem pr;
        tu_problem_make(&pr, &ic->shape, &rng, 2.5);
        tm_mods m;
        tm_mods_make(&m, &ic->spec, &ic->shape, 0.0, &rng);
        char desc[512], msg[512];
        tm_desc(&ic->shape, &m, desc, sizeof desc);
        size_t out_bytes = pr.out_buf.bytes + 2 * KIT_GUARD, lse_bytes = pr.lse_buf.bytes + 2 * KIT_GUARD;
        unsigned char *out0 = malloc(out_bytes), *lse0 = malloc(lse_bytes);
        cr_assert(out0 && lse0);
        for (int x = 0; x < N_FORWARD_CONTEXTS; x++) {
            tu_problem_fill_canary(&pr);
            fa_status st = fa_forward(ctx[x], &m.p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
            cr_assert_eq(st, FA_OK, "%s, blocks %d/%d: status %d", desc, block_q, block_k, st);
            if (c >= FIRST_DECODE && x == 0)
                cr_expect(ctx[0]->rows_bytes > 0, "%s, blocks %d/%d: the decode step was not split over keys",
                          desc, block_q, block_k);
            if (x == 0) {
                memcpy(out0, pr.out_buf.base, out_bytes);
                memcpy(lse0, pr.lse_buf.base, lse_bytes);
                cr_expect(tu_check_picked_accuracy(&pr, &m.p, INT64_MAX, 1e-12, msg, sizeof msg),
                          "%s, blocks %d/%d, 1 thread, seed %llu: %s", desc, block_q, block_k,
                          (unsigned long long)(seed + (uint64_t)c), msg);
                continue;
            }
            cr_expect(memcmp(out0, pr.out_buf.base, out_bytes) == 0 &&
                          memcmp(lse0, pr.lse_buf.base, lse_bytes) == 0,
                      "%s, blocks %d/%d, seed %llu: out or lse on %d threads differs from 1 thread", desc,
                      block_q, block_k, (unsigned long long)(seed + (uint64_t)c), x + 1);
        }
        free(out0);
        free(lse0);
        tm_mods_free(&m);
        tu_problem_free(&pr);
        fa_context_destroy(ctx[0]);
    }
    for (int x = 1; x < N_FORWARD_CONTEXTS; x++) fa_context_destroy(ctx[x]);
}

Test(modifier_invariance, forward_bitwise_equal_on_1_to_4_threads_under_every_modifier)
{
    run_forward(blocks[0][0], blocks[0][1]);
}

Test(modifier_invariance, forward_bitwise_equal_on_1_to_4_threads_under_every_modifier_with_odd_blocks)
{
    run_forward(blocks[1][0], blocks[1][1]);
}

/* ---- backward --------------------------------------------------------------------------------- */

static const struct {
    int threads;
    fa_backward_plan plan;
} backward_runs[] = {
    {1, FA_BACKWARD_PLAN_AUTO},      {2, FA_BACKWARD_PLAN_AUTO},      {3, FA_BACKWARD_PLAN_AUTO},
    {4, FA_BACKWARD_PLAN_AUTO},      {2, FA_BACKWARD_PLAN_SPLIT},     {3, FA_BACKWARD_PLAN_FUSED},
    {2, FA_BACKWARD_PLAN_WAVEFRONT}, {4, FA_BACKWARD_PLAN_WAVEFRONT},
};
#define N_BACKWARD_RUNS ((int)(sizeof backward_runs / sizeof backward_runs[0]))

static void run_backward(int block_q, int block_k)
{
    static const char *names[3] = {"dq", "dk", "dv"};
    uint64_t seed = tu_test_seed();
    fa_context *ctx[N_BACKWARD_RUNS];
    for (int x = 0; x < N_BACKWARD_RUNS; x++) {
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.num_threads = backward_runs[x].threads;
        o.block_q = block_q;
        o.block_k = block_k;
        cr_assert_eq(fa_context_create(&ctx[x], &o), FA_OK);
        fa_backward_force_plan(ctx[x], backward_runs[x].plan);
    }
    for (int c = 0; c < N_BACKWARD; c++) {
        const inv_case *ic = &backward_cases[c];
        uint64_t case_seed = seed + (uint64_t)c;
        tu_rng rng = tu_rng_make(case_seed);
        tub_problem bp;
        tub_make(&bp, &ic->shape, &rng, 2.5);
        tm_mods m;
        tm_mods_make(&m, &ic->spec, &ic->shape, 0.0, &rng);
        char desc[512], msg[512];
        tm_desc(&ic->shape, &m, desc, sizeof desc);
        cr_assert_eq(tub_forward(ctx[0], &m.p, &bp), FA_OK, "%s", desc);
        if (ic->spec.sinks) tm_mods_want_dsinks(&m);
        unsigned char *first[3];
        size_t bytes[3];
        float *dsinks0 = malloc(sizeof(float) * (size_t)(ic->shape.q_heads + 1));
        for (int g = 0; g < 3; g++) {
            bytes[g] = bp.grad_buf[g].bytes + 2 * KIT_GUARD;
            first[g] = malloc(bytes[g]);
        }
        for (int x = 0; x < N_BACKWARD_RUNS; x++) {
            tub_fill_grad_canary(&bp);
            if (ic->spec.sinks) tm_mods_want_dsinks(&m);
            fa_status st = tub_backward(ctx[x], &m.p, &bp);
            const char *plan = fa_backward_plan_name(backward_runs[x].plan);
            cr_assert_eq(st, FA_OK, "%s, blocks %d/%d, %d threads, plan %s: status %d", desc, block_q,
                         block_k, backward_runs[x].threads, plan, st);
            if (x == 0) {
                for (int g = 0; g < 3; g++) memcpy(first[g], bp.grad_buf[g].base, bytes[g]);
                if (ic->spec.sinks) memcpy(dsinks0, m.p.dsinks, sizeof(float) * (size_t)ic->shape.q_heads);
                int f32 = ic->shape.dtype == FA_F32;
                tub_ref oracle, naive;
                tub_ref_compute(&oracle, &bp, &m.p);
                if (f32) tub_ref_compute_naive_f32(&naive, &bp, &m.p);
                cr_expect(tub_check_accuracy(&bp, &m.p, &oracle, f32 ? &naive : NULL, 1e-11, msg, sizeof msg),
                          "%s, blocks %d/%d, 1 thread, seed %llu: %s", desc, block_q, block_k,
                          (unsigned long long)case_seed, msg);
                if (ic->spec.sinks)
                    cr_expect(tm_check_dsinks(&bp, &m, msg, sizeof msg), "%s, blocks %d/%d, seed %llu: %s",
                              desc, block_q, block_k, (unsigned long long)case_seed, msg);
                tub_ref_free(&oracle);
                if (f32) tub_ref_free(&naive);
                continue;
            }
            for (int g = 0; g < 3; g++)
                cr_expect(memcmp(first[g], bp.grad_buf[g].base, bytes[g]) == 0,
                          "%s, blocks %d/%d, seed %llu: %s on %d threads, plan %s, differs from 1 thread's",
                          desc, block_q, block_k, (unsigned long long)case_seed, names[g],
                          backward_runs[x].threads, plan);
            if (ic->spec.sinks)
                cr_expect(
                    memcmp(dsinks0, m.p.dsinks, sizeof(float) * (size_t)ic->shape.q_heads) == 0 &&
                        tm_dsinks_guards_intact(&m),
                    "%s, blocks %d/%d, seed %llu: dsinks on %d threads, plan %s, differs from 1 thread's",
                    desc, block_q, block_k, (unsigned long long)case_seed, backward_runs[x].threads, plan);
        }
        for (int g = 0; g < 3; g++) free(first[g]);
        free(dsinks0);
        tm_mods_free(&m);
        tub_free(&bp);
    }
    for (int x = 0; x < N_BACKWARD_RUNS; x++) fa_context_destroy(ctx[x]);
}

Test(modifier_invariance, backward_bitwise_equal_on_1_to_4_threads_and_every_plan_under_every_modifier)
{
    run_backward(blocks[0][0], blocks[0][1]);
}

Test(modifier_invariance, backward_bitwise_equal_on_1_to_4_threads_and_every_plan_with_odd_blocks)
{
    run_backward(blocks[1][0], blocks[1][1]);
}

/* ---- blocks beyond the sequence ----------------------------------------------------------------
 * include/flashattn.h, fa_context_opts: "A call uses at most its Nq (a larger block covers the same
 * rows, bit for bit)" and at most Nk keys per tile: blocks larger than the sequences keep the key
 * tiling of blocks equal to them, so the bytes of every output are the same. */

Test(modifier_invariance, blocks_beyond_nq_and_nk_give_the_bytes_of_blocks_equal_to_them)
{
    static const char *names[3] = {"dq", "dk", "dv"};
    uint64_t seed = tu_test_seed();
    for (int c = 0; c < N_BACKWARD; c++) {
        const inv_case *ic = &backward_cases[c];
        int nq = (int)ic->shape.q_len, nk = (int)ic->shape.kv_len;
        fa_context *exact = tu_context(2, nq, nk), *beyond = tu_context(2, nq + 29, nk + 61);
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tub_problem a, b;
        tub_make(&a, &ic->shape, &rng, 2.5);
        tm_mods m;
        tm_mods_make(&m, &ic->spec, &ic->shape, 0.0, &rng);
        rng = tu_rng_make(seed + (uint64_t)c);
        tub_make(&b, &ic->shape, &rng, 2.5); /* the same inputs and dout, its own outputs */
        char desc[512];
        tm_desc(&ic->shape, &m, desc, sizeof desc);
        float *dsinks_a = malloc(sizeof(float) * (size_t)(ic->shape.q_heads + 1));
        tub_problem *pb[2] = {&a, &b};
        fa_context *ctx[2] = {exact, beyond};
        for (int x = 0; x < 2; x++) {
            m.p.dsinks = NULL;
            cr_assert_eq(tub_forward(ctx[x], &m.p, pb[x]), FA_OK, "%s", desc);
            if (ic->spec.sinks) tm_mods_want_dsinks(&m);
            cr_assert_eq(tub_backward(ctx[x], &m.p, pb[x]), FA_OK, "%s", desc);
            if (ic->spec.sinks && x == 0)
                memcpy(dsinks_a, m.p.dsinks, sizeof(float) * (size_t)ic->shape.q_heads);
        }
        int64_t where = 0;
        cr_expect(tu_outputs_bitwise_equal(&a.fw, &b.fw, &where),
                  "%s, seed %llu: blocks %d/%d and %d/%d differ at %s %lld", desc,
                  (unsigned long long)(seed + (uint64_t)c), nq, nk, nq + 29, nk + 61,
                  where < 0 ? "lse" : "out row", (long long)where);
        for (int g = 0; g < 3; g++)
            cr_expect(tub_views_bitwise_equal(&a.grad[g], &b.grad[g], &where),
                      "%s, seed %llu: %s of blocks %d/%d and %d/%d differ at flat index %lld", desc,
                      (unsigned long long)(seed + (uint64_t)c), names[g], nq, nk, nq + 29, nk + 61,
                      (long long)where);
        if (ic->spec.sinks)
            cr_expect(memcmp(dsinks_a, m.p.dsinks, sizeof(float) * (size_t)ic->shape.q_heads) == 0,
                      "%s, seed %llu: dsinks of blocks %d/%d and %d/%d differ", desc,
                      (unsigned long long)(seed + (uint64_t)c), nq, nk, nq + 29, nk + 61);
        free(dsinks_a);
        tm_mods_free(&m);
        tub_free(&a);
        tub_free(&b);
        fa_context_destroy(exact);
        fa_context_destroy(beyond);
    }
}
