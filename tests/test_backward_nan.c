/* SPDX-License-Identifier: BSD-3-Clause */
/* NaN confinement (include/flashattn.h: "NaN or Inf inside q, k or v is not an error: it reaches
 * exactly the rows that see it"), followed through the backward.
 *
 * One element v[b0][g0][j0][y0] is NaN (batch b0, kv head g0, key j0). With P computed from q, k and
 * lse alone, and dP_ij = dout_i·v_j, delta_i = dout_i·out_i, dS_ij = P_ij·(dP_ij - delta_i):
 *   - lse reads no v: every lse is finite.
 *   - out_i = sum_j P_ij v_j: a row that sees j0 has out_i[y0] NaN; every other row is finite.
 *   - delta_i is NaN exactly for the rows that see j0; dP_ij is NaN only at j = j0.
 *   - dq_i = scale·sum_{j seen by i} dS_ij k_j reads only row i's dS: finite when row i does not see
 *     j0 (a row that sees no key at all gets exactly 0). Rows that see j0 are not asserted.
 *   - dk_j = scale·sum_{i sees j} dS_ij q_i: finite when no row sees both j and j0 (then no
 *     NaN delta_i and, for j = j0, no NaN dP reaches it). Under a causal mask that is every key of
 *     the NaN's kv head that some row i >= j0 sees; only the keys no row sees (exactly 0) and the
 *     other heads and batches remain, which is what is asserted - nothing more.
 *   - dv_j = sum_i P_ij dout_i reads no v: every dv is finite, NaN or not.
 * The masked tiles matter here: the library computes dP over whole tiles, so a masked (i, j0) has
 * P = 0 and 0·NaN = NaN unless it is dropped. Every asserted-finite value must also agree with the
 * oracle (rule of test 1), which computes on the same NaN input.
 * Cases: TOP_LEFT with Nq < Nk and j0 seen by the later rows, TOP_LEFT with j0 >= Nq (seen by no
 * row: nothing may change at all), BOTTOM_RIGHT with Nq > Nk (fully masked rows). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "util.h"
#include "util_backward.h"

typedef struct {
    tu_shape shape;
    fa_causal causal;
    int64_t b0, g0, j0, y0;
} nan_case;

static const nan_case cases[] = {
    {{FA_F64, 2, 4, 2, 40, 57, 12, 9, TU_BHSD}, FA_CAUSAL_TOP_LEFT, 0, 1, 23, 3},
    {{FA_F32, 2, 4, 2, 40, 57, 12, 9, TU_BSHD}, FA_CAUSAL_TOP_LEFT, 1, 0, 23, 8},
    {{FA_F64, 1, 2, 1, 40, 57, 12, 9, TU_PACKED}, FA_CAUSAL_TOP_LEFT, 0, 0, 50, 0},
    {{FA_F32, 1, 2, 1, 40, 57, 12, 9, TU_BHSD}, FA_CAUSAL_TOP_LEFT, 0, 0, 50, 0},
    {{FA_F64, 2, 4, 2, 57, 40, 12, 9, TU_BSHD}, FA_CAUSAL_BOTTOM_RIGHT, 1, 1, 23, 4},
    {{FA_F32, 2, 4, 1, 57, 40, 12, 9, TU_PACKED}, FA_CAUSAL_BOTTOM_RIGHT, 0, 0, 23, 4},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

typedef struct {
    int threads, block_q, block_k;
} ctx_cfg;

static const ctx_cfg configs[] = {{2, 0, 0}, {3, 5, 7}, {1, 16, 8}};
#define N_CONFIGS ((int)(sizeof configs / sizeof configs[0]))

/* Whether query row (b, h, i) sees the NaN. */
static int row_sees_nan(const nan_case *c, int64_t b, int64_t h, int64_t i)
{
    int64_t group = c->shape.q_heads / c->shape.kv_heads;
    return b == c->b0 && h / group == c->g0 &&
           ref_visible(c->causal, c->shape.q_len, c->shape.kv_len, i, c->j0);
}

/* Whether some query row of kv head (b, g) sees both key j and the NaN key. */
static int key_shares_a_row_with_nan(const nan_case *c, int64_t b, int64_t g, int64_t j)
{
    if (b != c->b0 || g != c->g0) return 0;
    for (int64_t i = 0; i < c->shape.q_len; i++)
        if (ref_visible(c->causal, c->shape.q_len, c->shape.kv_len, i, j) &&
            ref_visible(c->causal, c->shape.q_len, c->shape.kv_len, i, c->j0))
            return 1;
    return 0;
}

static int key_seen(const nan_case *c, int64_t j)
{
    for (int64_t i = 0; i < c->shape.q_len; i++)
        if (ref_visible(c->causal, c->shape.q_len, c->shape.kv_len, i, j)) return 1;
    return 0;
}

/* mask[g][flat] = 1 for the gradient values that must be finite (see the top of the file). */
static void finite_masks(const nan_case *c, const tub_problem *bp, unsigned char *mask[3])
{
    for (int g = 0; g < 3; g++) {
        const fa_tensor *t = &bp->grad[g];
        mask[g] = malloc((size_t)tub_numel(t) + 1);
        int64_t flat = 0;
        for (int64_t b = 0; b < t->batch; b++)
            for (int64_t h = 0; h < t->heads; h++)
                for (int64_t s = 0; s < t->seq; s++) {
                    int must;
                    if (g == TUB_DQ)
                        must = !row_sees_nan(c, b, h, s);
                    else if (g == TUB_DK)
                        must = !key_shares_a_row_with_nan(c, b, h, s);
                    else
                        must = 1;
                    for (int64_t d = 0; d < t->dim; d++) mask[g][flat++] = (unsigned char)must;
                }
    }
}

static void run_case(fa_context *ctx, const ctx_cfg *cfg, const nan_case *c, uint64_t seed)
{
    fa_params p = FA_PARAMS_INIT;
    p.causal = c->causal;
    tu_rng rng = tu_rng_make(seed);
    tub_problem bp;
    tub_make(&bp, &c->shape, &rng, 2.0);
    kit_tensor_store(&bp.fw.v, c->b0, c->g0, c->j0, c->y0, NAN);
    char desc[400];
    tub_desc(&bp, &p, cfg->block_q, cfg->block_k, desc, sizeof desc);
    size_t len = strlen(desc);
    snprintf(desc + len, sizeof desc - len, " threads %d, NaN at v[%lld][%lld][%lld][%lld]", cfg->threads,
             (long long)c->b0, (long long)c->g0, (long long)c->j0, (long long)c->y0);

    fa_status st = tub_forward(ctx, &p, &bp);
    cr_assert_eq(st, FA_OK, "%s, seed %llu: forward status %d", desc, (unsigned long long)seed, st);
    const tu_shape *s = &c->shape;
    int64_t bad_out = 0, bad_lse = 0, missing_nan = 0;
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t h = 0; h < s->q_heads; h++)
            for (int64_t i = 0; i < s->q_len; i++) {
                int64_t row = (b * s->q_heads + h) * s->q_len + i;
                if (!isfinite(tu_lse_get(&bp.fw, row)) && tu_lse_get(&bp.fw, row) != -INFINITY) bad_lse++;
                if (row_sees_nan(c, b, h, i)) {
                    if (!isnan(kit_tensor_load(&bp.fw.out, b, h, i, c->y0))) missing_nan++;
                } else {
                    for (int64_t y = 0; y < s->dim_v; y++)
                        if (!isfinite(kit_tensor_load(&bp.fw.out, b, h, i, y))) bad_out++;
                }
            }
    cr_expect_eq(bad_lse, 0, "%s, seed %llu: %lld lse values are NaN or +inf", desc, (unsigned long long)seed,
                 (long long)bad_lse);
    cr_expect_eq(bad_out, 0,
                 "%s, seed %llu: forward: %lld out values of rows that do not see the NaN are not finite",
                 desc, (unsigned long long)seed, (long long)bad_out);
    cr_expect_eq(missing_nan, 0,
                 "%s, seed %llu: forward: %lld rows that see the NaN have a number in column %lld", desc,
                 (unsigned long long)seed, (long long)missing_nan, (long long)c->y0);

    st = tub_backward(ctx, &p, &bp);
    cr_assert_eq(st, FA_OK, "%s, seed %llu: backward status %d (NaN input is not an error)", desc,
                 (unsigned long long)seed, st);
    cr_expect(tub_grads_only_defined_written(&bp), "%s, seed %llu: wrote outside dq/dk/dv", desc,
              (unsigned long long)seed);
    unsigned char *mask[3];
    finite_masks(c, &bp, mask);
    static const char *names[3] = {"dq", "dk", "dv"};
    for (int g = 0; g < 3; g++) {
        double *x = tub_view_copy(&bp.grad[g]);
        int64_t bad = 0, first = -1, asserted = 0;
        for (int64_t i = 0; i < tub_numel(&bp.grad[g]); i++) {
            if (!mask[g][i]) continue;
            asserted++;
            if (!isfinite(x[i]) && bad++ == 0) first = i;
        }
        cr_expect_eq(bad, 0,
                     "%s, seed %llu: %lld of the %lld %s values that cannot depend on the NaN are not "
                     "finite, first at flat index %lld",
                     desc, (unsigned long long)seed, (long long)bad, (long long)asserted, names[g],
                     (long long)first);
        free(x);
    }
    /* Rows that see no key: dq exactly 0; keys no row sees: dk = dv = 0 exactly. */
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t h = 0; h < s->q_heads; h++)
            for (int64_t i = 0; i < s->q_len; i++) {
                int sees_any = 0;
                for (int64_t j = 0; j < s->kv_len && !sees_any; j++)
                    sees_any = ref_visible(c->causal, s->q_len, s->kv_len, i, j);
                for (int64_t x = 0; !sees_any && x < s->dim; x++)
                    cr_expect(kit_tensor_load(&bp.grad[TUB_DQ], b, h, i, x) == 0.0,
                              "%s: dq of fully masked row %lld is %g", desc, (long long)i,
                              kit_tensor_load(&bp.grad[TUB_DQ], b, h, i, x));
            }
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t g = 0; g < s->kv_heads; g++)
            for (int64_t j = 0; j < s->kv_len; j++) {
                if (key_seen(c, j)) continue;
                for (int64_t x = 0; x < s->dim; x++)
                    cr_expect(kit_tensor_load(&bp.grad[TUB_DK], b, g, j, x) == 0.0,
                              "%s: dk of unseen key %lld is %g", desc, (long long)j,
                              kit_tensor_load(&bp.grad[TUB_DK], b, g, j, x));
                for (int64_t y = 0; y < s->dim_v; y++)
                    cr_expect(kit_tensor_load(&bp.grad[TUB_DV], b, g, j, y) == 0.0,
                              "%s: dv of unseen key %lld is %g", desc, (long long)j,
                              kit_tensor_load(&bp.grad[TUB_DV], b, g, j, y));
            }
    /* The asserted values against the oracle on the same (NaN-carrying) input. */
    char msg[512];
    tub_ref oracle, naive;
    tub_ref_compute(&oracle, &bp, &p);
    if (s->dtype == FA_F32) tub_ref_compute_naive_f32(&naive, &bp, &p);
    cr_expect(tub_check_accuracy_masked(&bp, &p, &oracle, s->dtype == FA_F32 ? &naive : NULL, mask, 1e-11,
                                        msg, sizeof msg),
              "%s, seed %llu: values that cannot depend on the NaN, against the oracle: %s", desc,
              (unsigned long long)seed, msg);
    tub_ref_free(&oracle);
    if (s->dtype == FA_F32) tub_ref_free(&naive);
    for (int g = 0; g < 3; g++) free(mask[g]);
    tub_free(&bp);
}

Test(backward_nan, nan_in_one_key_of_v_reaches_only_gradients_that_depend_on_it)
{
    uint64_t seed = tu_test_seed();
    for (int x = 0; x < N_CONFIGS; x++) {
        fa_context *ctx = tu_context(configs[x].threads, configs[x].block_q, configs[x].block_k);
        for (int c = 0; c < N_CASES; c++) run_case(ctx, &configs[x], &cases[c], seed + (uint64_t)c);
        fa_context_destroy(ctx);
    }
}
