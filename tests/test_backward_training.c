/* SPDX-License-Identifier: BSD-3-Clause */
/* A training-style loop is reproducible across thread counts: a tiny "model" whose parameters are
 * q, k and v themselves takes 10 steps of
 *     out = fa_forward(q, k, v);  dout = out - target  (the gradient of ½‖out - target‖²);
 *     dq, dk, dv = fa_backward(...);  x -= lr · dx  for x in q, k, v
 * once on a 1-thread context and once on a 4-thread context. The final parameters (and every
 * step's loss) are bitwise identical, and finite. A falling loss is not asserted: it is not what the
 * library promises. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "util_backward.h"

#define STEPS 10

static void sgd_step(const fa_tensor *x, const fa_tensor *dx, double lr)
{
    for (int64_t b = 0; b < x->batch; b++)
        for (int64_t h = 0; h < x->heads; h++)
            for (int64_t s = 0; s < x->seq; s++)
                for (int64_t d = 0; d < x->dim; d++)
                    kit_tensor_store(x, b, h, s, d,
                                     kit_tensor_load(x, b, h, s, d) - lr * kit_tensor_load(dx, b, h, s, d));
}

/* dout = out - target; returns ½‖out - target‖². */
static double loss_and_dout(const tub_problem *bp, const fa_tensor *target)
{
    const fa_tensor *o = &bp->fw.out;
    double loss = 0.0;
    for (int64_t b = 0; b < o->batch; b++)
        for (int64_t h = 0; h < o->heads; h++)
            for (int64_t s = 0; s < o->seq; s++)
                for (int64_t d = 0; d < o->dim; d++) {
                    double r = kit_tensor_load(o, b, h, s, d) - kit_tensor_load(target, b, h, s, d);
                    kit_tensor_store(&bp->dout, b, h, s, d, r);
                    loss += 0.5 * r * r;
                }
    return loss;
}

/* Trains a fresh model from `seed` on ctx; the parameters stay in *bp, the losses in loss[]. */
static void train(fa_context *ctx, const fa_params *p, const tu_shape *s, uint64_t seed, tub_problem *bp,
                  double loss[STEPS])
{
    tu_rng rng = tu_rng_make(seed);
    tub_make(bp, s, &rng, 1.5);
    /* The target: a fixed random tensor of out's shape (dout's storage from tub_make, which the loop
     * then overwrites, would do too; a separate buffer keeps it fixed). */
    kit_buf target_buf =
        kit_buf_alloc((size_t)(s->batch * s->q_heads * s->q_len * s->dim_v) * tu_dtype_size(s->dtype));
    fa_tensor target =
        fa_tensor_bhsd(kit_buf_data(&target_buf), s->dtype, s->batch, s->q_heads, s->q_len, s->dim_v);
    kit_fill_uniform(&target, &rng.state, -0.5, 0.5);
    const double lr = 0.05;
    for (int step = 0; step < STEPS; step++) {
        cr_assert_eq(tub_forward(ctx, p, bp), FA_OK, "step %d: forward", step);
        loss[step] = loss_and_dout(bp, &target);
        cr_assert_eq(tub_backward(ctx, p, bp), FA_OK, "step %d: backward", step);
        sgd_step(&bp->fw.q, &bp->grad[TUB_DQ], lr);
        sgd_step(&bp->fw.k, &bp->grad[TUB_DK], lr);
        sgd_step(&bp->fw.v, &bp->grad[TUB_DV], lr);
    }
    kit_buf_free(&target_buf);
}

static void run_training(uint64_t seed, fa_dtype dtype, int block_q, int block_k)
{
    /* Grouped heads (dk/dv sum over the group), Dv != D, causal, sizes no block divides. */
    tu_shape s = {dtype, 2, 4, 2, 45, 45, 16, 12, TU_BSHD};
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_TOP_LEFT;
    static const int threads[2] = {1, 4};
    tub_problem model[2];
    double loss[2][STEPS];
    for (int x = 0; x < 2; x++) {
        fa_context *ctx = tu_context(threads[x], block_q, block_k);
        train(ctx, &p, &s, seed, &model[x], loss[x]);
        fa_context_destroy(ctx);
    }
    char desc[320];
    tub_desc(&model[0], &p, block_q, block_k, desc, sizeof desc);
    fprintf(stderr, "[training] %s: loss %.6g -> %.6g over %d steps\n", desc, loss[0][0], loss[0][STEPS - 1],
            STEPS);
    for (int step = 0; step < STEPS; step++)
        cr_expect(memcmp(&loss[0][step], &loss[1][step], sizeof(double)) == 0,
                  "%s, seed %llu: step %d loss %.17g on 1 thread, %.17g on 4", desc, (unsigned long long)seed,
                  step, loss[0][step], loss[1][step]);
    const fa_tensor *params[2][3] = {{&model[0].fw.q, &model[0].fw.k, &model[0].fw.v},
                                     {&model[1].fw.q, &model[1].fw.k, &model[1].fw.v}};
    static const char *names[3] = {"q", "k", "v"};
    for (int g = 0; g < 3; g++) {
        int64_t where, first;
        cr_expect(tub_views_bitwise_equal(params[0][g], params[1][g], &where),
                  "%s, seed %llu: after %d steps, %s differs between 1 and 4 threads at flat index %lld",
                  desc, (unsigned long long)seed, STEPS, names[g], (long long)where);
        int64_t bad = tub_count_nonfinite(params[0][g], &first);
        cr_expect_eq(bad, 0, "%s, seed %llu: %lld non-finite values in the trained %s", desc,
                     (unsigned long long)seed, (long long)bad, names[g]);
    }
    for (int step = 0; step < STEPS; step++)
        cr_expect(isfinite(loss[0][step]), "%s: step %d loss %g", desc, step, loss[0][step]);
    tub_free(&model[0]);
    tub_free(&model[1]);
}

Test(backward_training, sgd_loop_parameters_bitwise_equal_on_1_and_4_threads_f32)
{
    run_training(tu_test_seed(), FA_F32, 0, 0);
}

Test(backward_training, sgd_loop_parameters_bitwise_equal_on_1_and_4_threads_f64)
{
    run_training(tu_test_seed(), FA_F64, 0, 0);
}

Test(backward_training, sgd_loop_parameters_bitwise_equal_on_1_and_4_threads_with_small_blocks)
{
    run_training(tu_test_part_seed("f32"), FA_F32, 8, 5);
    run_training(tu_test_part_seed("f64"), FA_F64, 8, 5);
}
