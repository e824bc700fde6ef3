/* The backward's two plans (src/backward.h): the split plan (dK/dV items per key block, dQ items
 * per query block) and the fused plan (one item per batch and kv head, dQ summed on the way) must
 * give bitwise identical dq, dk and dv, because the library picks between them by thread count and
 * promises results that do not depend on it (include/flashattn.h, fa_backward).
 *
 * White-box: the plan is forced through the context's internal field. Every case runs both plans
 * from the same out, lse and dout and compares the gradients byte for byte; the fused result is
 * also held to the backward accuracy rule against the float64 oracle (tests/reference_backward.c),
 * and both must write nothing but the gradient views (the fused plan writes dq in place, through
 * masked stores, so a packed layout with gaps after each row is among the cases). The cases cover
 * grouped and multi-query heads, both causal conventions with fully masked rows, head dims that are
 * not a multiple of the vector width, Nk = 0, and automatic, odd and tiny blocks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "backward.h"
#include "context.h"
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
    fa_context_opts o = fa_context_opts_default();
    o.num_threads = threads;
    o.block_q = block_q;
    o.block_k = block_k;
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
    ctx->backward_plan = plan;
    return ctx;
}

Test(backward_plans, fused_and_split_give_bitwise_identical_gradients)
{
    static const char *names[3] = {"dq", "dk", "dv"};
    uint64_t seed = tu_seed("backward_plans.fused_and_split_give_bitwise_identical_gradients");
    for (int b = 0; b < N_BLOCKS; b++) {
        /* 2 threads for the fused plan, 3 for the split one: the plan, not the team, is what differs */
        fa_context *fused = plan_context(2, blocks[b][0], blocks[b][1], FA_BACKWARD_PLAN_FUSED);
        fa_context *split = plan_context(3, blocks[b][0], blocks[b][1], FA_BACKWARD_PLAN_SPLIT);
        for (int c = 0; c < N_CASES; c++) {
            uint64_t case_seed = seed + (uint64_t)(b * N_CASES + c);
            tu_rng rng = tu_rng_make(case_seed);
            tub_problem a, twin;
            tub_make(&a, &cases[c].shape, &rng, 2.5);
            rng = tu_rng_make(case_seed);
            tub_make(&twin, &cases[c].shape, &rng, 2.5); /* the same inputs and dout */
            fa_params p = fa_params_default();
            p.causal = cases[c].causal;
            char desc[320];
            tub_desc(&a, &p, blocks[b][0], blocks[b][1], desc, sizeof desc);

            cr_assert_eq(tub_forward(fused, &p, &a), FA_OK, "%s", desc);
            memcpy(twin.fw.out_buf.base, a.fw.out_buf.base, a.fw.out_buf.bytes + 2 * TU_GUARD);
            memcpy(twin.fw.lse_buf.base, a.fw.lse_buf.base, a.fw.lse_buf.bytes + 2 * TU_GUARD);
            cr_assert_eq(tub_backward(fused, &p, &a), FA_OK, "%s (fused)", desc);
            cr_assert_eq(tub_backward(split, &p, &twin), FA_OK, "%s (split)", desc);

            for (int g = 0; g < 3; g++) {
                int64_t where;
                cr_expect(
                    tub_views_bitwise_equal(&a.grad[g], &twin.grad[g], &where),
                    "%s, seed %llu: %s of the fused plan differs from the split plan's at flat index %lld",
                    desc, (unsigned long long)case_seed, names[g], (long long)where);
            }
            cr_expect(tub_grads_only_defined_written(&a), "%s: the fused plan wrote outside dq/dk/dv", desc);
            cr_expect(tub_grads_only_defined_written(&twin), "%s: the split plan wrote outside dq/dk/dv",
                      desc);

            tub_ref oracle, naive;
            tub_ref_compute(&oracle, &a, &p);
            int f32 = cases[c].shape.dtype == FA_F32;
            if (f32) tub_ref_compute_naive_f32(&naive, &a, &p);
            char msg[512];
            cr_expect(tub_check_accuracy(&a, &p, &oracle, f32 ? &naive : NULL, 1e-11, msg, sizeof msg),
                      "%s (fused): %s", desc, msg);
            tub_ref_free(&oracle);
            if (f32) tub_ref_free(&naive);
            tub_free(&a);
            tub_free(&twin);
        }
        fa_context_destroy(fused);
        fa_context_destroy(split);
    }
}

/* The automatic choice: on one thread, or with whole rounds of heads for every thread, nothing is
 * idle and the fused plan does the least work; with far fewer heads than threads (a decode step,
 * one long sequence) most threads would idle in the fused plan, so the split plan's finer items
 * win. Checked over a range of counts, not a table of answers. */
Test(backward_plans, auto_plan_is_fused_without_idle_threads_and_split_with_few_heads)
{
    for (int64_t heads = 1; heads <= 64; heads++) {
        cr_expect_eq(fa_backward_plan_for(heads, 1), FA_BACKWARD_PLAN_FUSED, "%lld heads, 1 thread",
                     (long long)heads);
        for (int threads = 2; threads <= 64; threads++) {
            fa_backward_plan plan = fa_backward_plan_for(heads, threads);
            if (heads % threads == 0)
                cr_expect_eq(plan, FA_BACKWARD_PLAN_FUSED, "%lld heads, %d threads", (long long)heads,
                             threads);
            if (2 * heads <= threads)
                cr_expect_eq(plan, FA_BACKWARD_PLAN_SPLIT, "%lld heads, %d threads", (long long)heads,
                             threads);
        }
    }
}
