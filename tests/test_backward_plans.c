/* SPDX-License-Identifier: BSD-3-Clause */
/* The backward's three plans (src/drivers/backward.h): split (dK/dV items per key block, dQ items per
 * query block), fused (one item per batch and kv head, dQ summed on the way) and wavefront (dK/dV
 * items per key block that hand dQ on to each other in key order) must give bitwise identical dq, dk
 * and dv, because the library picks between them by thread count and promises results that do not
 * depend on it (include/flashattn.h, fa_backward).
 *
 * White-box: the plan is forced through the library's seam for tests, fa_backward_force_plan. Every
 * case runs the three plans from the same out, lse and dout and compares the gradients byte for
 * byte with the split plan's; the fused result is also held to the backward accuracy rule against
 * the float64 oracle (tests/reference_backward.c), and every plan must write nothing but the
 * gradient views (fused and wavefront write dq in place, through masked stores, so a packed layout
 * with gaps after each row is among the cases). The wavefront plan runs on 2 and on 5 threads (more
 * threads than this machine's cores: its waits must still move). The cases cover grouped and
 * multi-query heads, both causal conventions with fully masked rows and query blocks that meet no key,
 * head dims that are not a multiple of the vector width, Nk = 0, and automatic, odd and tiny
 * blocks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "drivers/backward.h"
#include "half_util.h"
#include "util.h"
#include "util_backward.h"

typedef struct {
    tu_shape shape;
    fa_causal causal;
} plan_case;

static const plan_case cases[] = {
    {{FA_F32, 2, 4, 2, 100, 110, 24, 40, TU_PACKED}, FA_CAUSAL_NONE},
    {{FA_F64, 1, 3, 1, 77, 130, 20, 8, TU_BSHD}, FA_CAUSAL_TOP_LEFT},
    {{FA_F32, 1, 2, 2, 130, 70, 33, 17, TU_BHSD}, FA_CAUSAL_BOTTOM_RIGHT},
    {{FA_F64, 2, 2, 2, 64, 64, 64, 64, TU_PACKED}, FA_CAUSAL_TOP_LEFT},
    {{FA_F32, 1, 1, 1, 1, 300, 16, 16, TU_BHSD}, FA_CAUSAL_BOTTOM_RIGHT},
    {{FA_F32, 1, 2, 1, 9, 0, 8, 8, TU_BHSD}, FA_CAUSAL_NONE},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static const int blocks[][2] = {{0, 0}, {13, 24}, {4, 3}};
#define N_BLOCKS ((int)(sizeof blocks / sizeof blocks[0]))

static fa_context *plan_context(int threads, int block_q, int block_k, fa_backward_plan plan)
{
    fa_context *ctx = tu_context(threads, block_q, block_k);
    fa_backward_force_plan(ctx, plan);
    return ctx;
}

typedef struct {
    const char *name;
    int threads;
    fa_backward_plan plan;
} plan_run;

/* The split plan first: the others are compared with it. */
static const plan_run runs[] = {
    {"split", 3, FA_BACKWARD_PLAN_SPLIT},
    {"fused", 2, FA_BACKWARD_PLAN_FUSED},
    {"wavefront", 2, FA_BACKWARD_PLAN_WAVEFRONT},
    {"wavefront", 5, FA_BACKWARD_PLAN_WAVEFRONT},
};
#define N_RUNS ((int)(sizeof runs / sizeof runs[0]))

Test(backward_plans, every_plan_gives_bitwise_identical_gradients)
{
    static const char *names[3] = {"dq", "dk", "dv"};
    uint64_t seed = tu_test_seed();
    for (int b = 0; b < N_BLOCKS; b++) {
        fa_context *ctx[N_RUNS];
        for (int r = 0; r < N_RUNS; r++)
            ctx[r] = plan_context(runs[r].threads, blocks[b][0], blocks[b][1], runs[r].plan);
        for (int c = 0; c < N_CASES; c++) {
            uint64_t case_seed = seed + (uint64_t)(b * N_CASES + c);
            tub_problem pr[N_RUNS];
            for (int r = 0; r < N_RUNS; r++) { /* the same inputs and dout in each */
                tu_rng rng = tu_rng_make(case_seed);
                tub_make(&pr[r], &cases[c].shape, &rng, 2.5);
            }
            fa_params p = FA_PARAMS_INIT;
            p.causal = cases[c].causal;
            char desc[320];
            tub_desc(&pr[0], &p, blocks[b][0], blocks[b][1], desc, sizeof desc);
            cr_assert_eq(tub_forward(ctx[0], &p, &pr[0]), FA_OK, "%s", desc);
            for (int r = 0; r < N_RUNS; r++) {
                if (r > 0) { /* the same out and lse too */
                    memcpy(pr[r].fw.out_buf.base, pr[0].fw.out_buf.base,
                           pr[0].fw.out_buf.bytes + 2 * KIT_GUARD);
                    memcpy(pr[r].fw.lse_buf.base, pr[0].fw.lse_buf.base,
                           pr[0].fw.lse_buf.bytes + 2 * KIT_GUARD);
                }
                cr_assert_eq(tub_backward(ctx[r], &p, &pr[r]), FA_OK, "%s (%s, %d threads)", desc,
                             runs[r].name, runs[r].threads);
                fa_stats st = FA_STATS_INIT;
                cr_assert_eq(fa_context_stats(ctx[r], &st), FA_OK);
                cr_expect(st.backward_plan && strcmp(st.backward_plan, runs[r].name) == 0,
                          "%s: fa_stats.backward_plan is %s after the %s plan ran", desc,
                          st.backward_plan ? st.backward_plan : "NULL", runs[r].name);
                cr_expect(tub_grads_only_defined_written(&pr[r]), "%s: the %s plan wrote outside dq/dk/dv",
                          desc, runs[r].name);
                for (int g = 0; g < 3 && r > 0; g++) {
                    int64_t where;
                    cr_expect(
                        tub_views_bitwise_equal(&pr[r].grad[g], &pr[0].grad[g], &where),
                        "%s, seed %llu: %s of the %s plan (%d threads) differs from the split plan's at "
                        "flat index %lld",
                        desc, (unsigned long long)case_seed, names[g], runs[r].name, runs[r].threads,
                        (long long)where);
                }
            }

            tub_ref oracle, naive;
            tub_ref_compute(&oracle, &pr[1], &p);
            int f32 = cases[c].shape.dtype == FA_F32;
            if (f32) tub_ref_compute_naive_f32(&naive, &pr[1], &p);
            char msg[512];
            cr_expect(tub_check_accuracy(&pr[1], &p, &oracle, f32 ? &naive : NULL, 1e-11, msg, sizeof msg),
                      "%s (fused): %s", desc, msg);
            tub_ref_free(&oracle);
            if (f32) tub_ref_free(&naive);
            for (int r = 0; r < N_RUNS; r++) tub_free(&pr[r]);
        }
        for (int r = 0; r < N_RUNS; r++) fa_context_destroy(ctx[r]);
    }
}

/* Half-precision q, k and v: the fused and wavefront plans sum a half dq in float in a buffer the
 * context keeps (one dQ item's accumulator per query block), and an all-bf16 call on a table with
 * bf16 dot-product units sums dQ transposed there too; each rounds once at the block's last key
 * block, so every plan must give the split plan's bytes. bf16/bf16 (the dot units where the table
 * has them, else widened), f16/f16 (widened), and f32 queries over a bf16 cache (a float dq: summed
 * in the caller's rows), with query blocks that meet no key (bottom-right, Nq > Nk), GQA, odd blocks
 * and a layout with gaps; the plan each call took is checked, so no fallback passes silently. */
Test(backward_plans, half_gradients_are_bitwise_identical_under_every_plan)
{
    static const fa_dtype types[][2] = {{FA_BF16, FA_BF16}, {FA_F16, FA_F16}, {FA_F32, FA_BF16}};
    static const struct {
        int64_t batch, q_heads, kv_heads, q_len, kv_len, dim, dim_v;
        fa_causal causal;
    } shapes[] = {
        {2, 4, 2, 100, 110, 32, 24, FA_CAUSAL_NONE},
        {1, 2, 1, 150, 70, 16, 16, FA_CAUSAL_BOTTOM_RIGHT}, /* the first 80 rows see no key */
        {1, 1, 1, 130, 130, 64, 64, FA_CAUSAL_TOP_LEFT},
    };
    static const char *names[3] = {"dq", "dk", "dv"};
    static const int half_blocks[][2] = {{0, 0}, {13, 24}, {32, 16}};
    uint64_t seed = tu_test_seed();
    for (int b = 0; b < 3; b++) {
        fa_context *ctx[N_RUNS];
        for (int r = 0; r < N_RUNS; r++)
            ctx[r] = plan_context(runs[r].threads, half_blocks[b][0], half_blocks[b][1], runs[r].plan);
        for (int t = 0; t < 3; t++)
            for (int c = 0; c < 3; c++) {
                kit_shape s = {types[t][0],        types[t][1],
                               shapes[c].batch,    shapes[c].q_heads,
                               shapes[c].kv_heads, shapes[c].q_len,
                               shapes[c].kv_len,   shapes[c].dim,
                               shapes[c].dim_v,    c == 0 ? KIT_BSHD : KIT_BHSD};
                fa_params p = FA_PARAMS_INIT;
                p.causal = shapes[c].causal;
                const uint64_t case_seed = seed + (uint64_t)(9 * b + 3 * t + c);
                kit_problem pr[N_RUNS];
                char desc[400];
                hu_desc(&s, &p, desc, sizeof desc);
                for (int r = 0; r < N_RUNS; r++) {
                    tu_rng rng = tu_rng_make(case_seed); /* the same inputs for every plan */
                    hu_make(&pr[r], &s, &rng, 2.5);
                    cr_assert_eq(hu_forward(ctx[0], &p, &pr[r]), FA_OK, "%s: %s", desc, fa_last_error());
                    cr_assert_eq(hu_backward(ctx[r], &p, &pr[r]), FA_OK, "%s (%s): %s", desc, runs[r].name,
                                 fa_last_error());
                    fa_stats st = FA_STATS_INIT;
                    cr_assert_eq(fa_context_stats(ctx[r], &st), FA_OK);
                    cr_expect(st.backward_plan && strcmp(st.backward_plan, runs[r].name) == 0,
                              "%s, blocks %d/%d: the %s plan was forced, %s ran", desc, half_blocks[b][0],
                              half_blocks[b][1], runs[r].name, st.backward_plan ? st.backward_plan : "NULL");
                    cr_expect(kit_problem_guards_intact(&pr[r]), "%s (%s): wrote outside a tensor", desc,
                              runs[r].name);
                    for (int g = 0; g < 3 && r > 0; g++) {
                        int64_t where = -1;
                        cr_expect(hu_views_bitwise_equal(&pr[r].t[KIT_DQ + g], &pr[0].t[KIT_DQ + g], &where),
                                  "%s, blocks %d/%d, seed %llu: %s of the %s plan (%d threads) differs from "
                                  "the split plan's at flat index %lld",
                                  desc, half_blocks[b][0], half_blocks[b][1], (unsigned long long)case_seed,
                                  names[g], runs[r].name, runs[r].threads, (long long)where);
                    }
                }
                for (int r = 0; r < N_RUNS; r++) kit_problem_free(&pr[r]);
            }
        for (int r = 0; r < N_RUNS; r++) fa_context_destroy(ctx[r]);
    }
}

/* Where the dQ sums of the fused and wavefront plans cannot be allocated, a half-precision backward
 * runs the split plan rather than fail: with each allocation of a bf16 backward on a fresh context
 * made to fail in turn (alone), the call either succeeds with the bytes of the call without a
 * failure (`want`, which the split plan gives too) and the split plan named in fa_stats, or returns
 * FA_ERR_NOMEM with dq, dk and dv untouched; the fallback must be among the outcomes. A dense call
 * has the fused plan forced; a batch of sequences takes it on its own. */
static void expect_sums_fall_back(const kit_shape *s, const fa_params *p, const char *what)
{
    cr_assert(tu_alloc_counting_active(), "the allocation wrappers are not linked in");
    const uint64_t seed = tu_test_seed();
    kit_problem want, pr;
    tu_rng rng = tu_rng_make(seed);
    hu_make(&want, s, &rng, 2.5);
    rng = tu_rng_make(seed);
    hu_make(&pr, s, &rng, 2.5);
    fa_context *first = plan_context(2, 0, 0, p->seqs ? FA_BACKWARD_PLAN_AUTO : FA_BACKWARD_PLAN_SPLIT);
    cr_assert_eq(hu_forward(first, p, &want), FA_OK, "%s: %s", what, fa_last_error());
    cr_assert_eq(hu_backward(first, p, &want), FA_OK, "%s: %s", what, fa_last_error());
    fa_context_destroy(first);
    cr_assert_eq(hu_forward(NULL, p, &pr), FA_OK, "%s: %s", what, fa_last_error());
    static const char *names[3] = {"dq", "dk", "dv"};
    int fell_back = 0;
    for (long nth = 1; nth <= 8; nth++) {
        fa_context *ctx = plan_context(2, 0, 0, p->seqs ? FA_BACKWARD_PLAN_AUTO : FA_BACKWARD_PLAN_FUSED);
        for (int g = 0; g < 3; g++) kit_buf_fill(&pr.buf[KIT_DQ + g], KIT_CANARY);
        tu_alloc_fail(nth, 0);
        fa_status st = hu_backward(ctx, p, &pr);
        long injected = tu_alloc_failures_injected();
        tu_alloc_fail(0, 0);
        fa_stats stats = FA_STATS_INIT;
        cr_assert_eq(fa_context_stats(ctx, &stats), FA_OK);
        if (st == FA_ERR_NOMEM) {
            cr_expect_gt(injected, 0, "%s, allocation %ld: FA_ERR_NOMEM without a failed allocation", what,
                         nth);
            for (int g = 0; g < 3; g++)
                cr_expect(kit_buf_untouched(&pr.buf[KIT_DQ + g]),
                          "%s, allocation %ld fails: FA_ERR_NOMEM, yet %s written", what, nth, names[g]);
        } else {
            cr_expect_eq(st, FA_OK, "%s, allocation %ld fails: status %d (%s)", what, nth, st,
                         fa_last_error());
            const char *plan = injected ? "split" : "fused";
            cr_expect(stats.backward_plan && strcmp(stats.backward_plan, plan) == 0,
                      "%s, allocation %ld fails (%ld injected): plan %s, expected %s", what, nth, injected,
                      stats.backward_plan ? stats.backward_plan : "NULL", plan);
            fell_back += injected > 0;
            for (int g = 0; g < 3; g++) {
                int64_t where = -1;
                cr_expect(
                    hu_views_bitwise_equal(&pr.t[KIT_DQ + g], &want.t[KIT_DQ + g], &where),
                    "%s, allocation %ld fails, seed %llu: %s differs from the call without a failure at "
                    "%lld",
                    what, nth, (unsigned long long)seed, names[g], (long long)where);
            }
        }
        fa_context_destroy(ctx);
    }
    cr_expect_gt(fell_back, 0, "%s: no failed allocation of the dQ sums was survived through the split plan",
                 what);
    kit_problem_free(&want);
    kit_problem_free(&pr);
}

Test(backward_plans, half_dq_sums_out_of_memory_fall_back_to_the_split_plan)
{
    kit_shape s = {FA_BF16, FA_BF16, 1, 4, 2, 100, 90, 32, 32, KIT_BHSD};
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_TOP_LEFT;
    expect_sums_fall_back(&s, &p, "dense");
    /* a packed batch (token-major), whose sequences share the sums at their first query items */
    static const int64_t cu_q[5] = {0, 40, 41, 41, 74}, cu_k[5] = {0, 50, 120, 132, 165};
    fa_seqs seqs = FA_SEQS_INIT;
    seqs.batch = 4;
    seqs.cu_seqlens_q = cu_q;
    seqs.cu_seqlens_k = cu_k;
    kit_shape packed = {FA_BF16, FA_BF16, 1, 4, 2, cu_q[4], cu_k[4], 32, 32, KIT_BSHD};
    p.causal = FA_CAUSAL_BOTTOM_RIGHT;
    p.seqs = &seqs;
    expect_sums_fall_back(&packed, &p, "packed");
}

/* The automatic choice: on one thread, or with whole rounds of heads for every thread, nothing is
 * idle and the fused plan does the least work. With far fewer heads than threads (a decode step,
 * one long sequence) most threads would idle in the fused plan, so finer items win: the wavefront
 * plan's where every thread has a core, the split plan's (which never waits) where threads share
 * cores. Checked over a range of counts, not a table of answers. */
Test(backward_plans, auto_plan_is_fused_without_idle_threads_and_finer_with_few_heads)
{
    for (int64_t heads = 1; heads <= 64; heads++) {
        cr_expect_eq(fa_backward_plan_for(heads, 1, 1), FA_BACKWARD_PLAN_FUSED, "%lld heads, 1 thread",
                     (long long)heads);
        for (int threads = 2; threads <= 64; threads++) {
            for (int cores = threads / 2; cores <= threads; cores += threads - threads / 2) {
                fa_backward_plan plan = fa_backward_plan_for(heads, threads, cores);
                if (heads % threads == 0)
                    cr_expect_eq(plan, FA_BACKWARD_PLAN_FUSED, "%lld heads, %d threads, %d cores",
                                 (long long)heads, threads, cores);
                if (2 * heads <= threads)
                    cr_expect_eq(plan, cores >= threads ? FA_BACKWARD_PLAN_WAVEFRONT : FA_BACKWARD_PLAN_SPLIT,
                                 "%lld heads, %d threads, %d cores", (long long)heads, threads, cores);
            }
        }
    }
}

/* fa_stats.backward_plan names the plan an automatic call took: NULL before any backward, then the
 * plan fa_backward_plan_for gives for the problem's heads, the context's threads and the cores a
 * call from here may count on; a forward leaves it as it was. */
Test(backward_plans, stats_name_the_plan_an_automatic_call_took)
{
    uint64_t seed = tu_test_seed();
    static const int threads[] = {1, 2, 3, 4};
    static const tu_shape shapes[] = {
        {FA_F32, 1, 1, 1, 70, 90, 16, 16, TU_BHSD}, /* one head */
        {FA_F64, 2, 4, 2, 40, 50, 8, 8, TU_BSHD},   /* four kv heads */
    };
    for (int t = 0; t < 4; t++)
        for (int c = 0; c < 2; c++) {
            fa_context *ctx = tu_context(threads[t], 0, 0);
            fa_stats st = FA_STATS_INIT;
            cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
            cr_expect_null(st.backward_plan, "before any backward: %s", st.backward_plan);
            tu_rng rng = tu_rng_make(seed + (uint64_t)(t * 2 + c));
            tub_problem bp;
            tub_make(&bp, &shapes[c], &rng, 2.0);
            fa_params p = FA_PARAMS_INIT;
            cr_assert_eq(tub_forward(ctx, &p, &bp), FA_OK);
            cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
            cr_expect_null(st.backward_plan, "after a forward only: %s", st.backward_plan);
            cr_assert_eq(tub_backward(ctx, &p, &bp), FA_OK);
            cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
            const char *want = fa_backward_plan_name(fa_backward_plan_for(
                shapes[c].batch * shapes[c].kv_heads, threads[t], fa_context_call_cores(ctx)));
            cr_expect(st.backward_plan && strcmp(st.backward_plan, want) == 0,
                      "%d threads, %lld kv heads: fa_stats.backward_plan %s, expected %s", threads[t],
                      (long long)(shapes[c].batch * shapes[c].kv_heads),
                      st.backward_plan ? st.backward_plan : "NULL", want);
            cr_assert_eq(tub_forward(ctx, &p, &bp), FA_OK);
            cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
            cr_expect(st.backward_plan && strcmp(st.backward_plan, want) == 0,
                      "a forward changed fa_stats.backward_plan to %s",
                      st.backward_plan ? st.backward_plan : "NULL");
            tub_free(&bp);
            fa_context_destroy(ctx);
        }
}
