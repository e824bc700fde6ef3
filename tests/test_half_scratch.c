/* SPDX-License-Identifier: BSD-3-Clause */
/* Bounded scratch with half-precision views: scratch_peak is the float formula plus the widened
 * tiles (scratch_formula.h), for bf16, f16 and f32 queries over a half cache, forward and
 * backward, or the bf16 tiles' formulas for a call on dot-product units, and does not grow with
 * the sequence lengths. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "flashattn.h"
#include "half_util.h"
#include "scratch_formula.h"
#include "util.h"

static fa_tensor hs_tensor(fa_dtype t, int64_t b, int64_t h, int64_t s, int64_t d)
{
    /* zeros are valid values of every type: the arena's size does not depend on them */
    void *data = calloc((size_t)(b * h * s * d), t == FA_F32 ? 4 : 2);
    cr_assert(data);
    return fa_tensor_bhsd(data, t, b, h, s, d);
}

Test(half_scratch, peak_is_the_float_formula_plus_the_widened_tiles)
{
    static const struct {
        fa_dtype q, kv;
    } types[] = {{FA_BF16, FA_BF16}, {FA_F16, FA_F16}, {FA_F32, FA_BF16}, {FA_F32, FA_F16}};
    static const struct {
        int bq, bk;
        int64_t d, dv;
    } blocks[] = {{64, 64, 32, 32}, {17, 33, 59, 24}, {128, 16, 128, 256}, {200, 100, 64, 40}};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (size_t c = 0; c < sizeof blocks / sizeof blocks[0]; c++)
            for (int64_t scale = 1; scale <= 4; scale *= 4) { /* lengths grow 4x, the arena must not */
                fa_context *ctx = tu_context(2, blocks[c].bq, blocks[c].bk);
                /* two heads sharing one kv head; Nk < 4·bk keeps the keys unsplit */
                int64_t nq = (2 * blocks[c].bq + 3) * scale, nk = 3 * blocks[c].bk + 1, d = blocks[c].d,
                        dv = blocks[c].dv;
                fa_tensor q = hs_tensor(types[t].q, 1, 2, nq, d), k = hs_tensor(types[t].kv, 1, 1, nk, d);
                fa_tensor v = hs_tensor(types[t].kv, 1, 1, nk, dv), out = hs_tensor(types[t].q, 1, 2, nq, dv);
                fa_tensor dout = hs_tensor(types[t].q, 1, 2, nq, dv), dq = hs_tensor(types[t].q, 1, 2, nq, d);
                fa_tensor dk = hs_tensor(types[t].kv, 1, 1, nk, d),
                          dv_t = hs_tensor(types[t].kv, 1, 1, nk, dv);
                float *lse = calloc((size_t)(2 * nq), sizeof(float));
                int q_half = types[t].q != FA_F32;
                fa_stats st = FA_STATS_INIT;

                cr_assert_eq(fa_forward(ctx, NULL, &q, &k, &v, &out, lse), FA_OK, "%s", fa_last_error());
                cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
                size_t want = hu_on_dot_units(ctx, types[t].q, types[t].kv, d, nq)
                                  ? forward_dot_scratch(blocks[c].bq, blocks[c].bk, d, dv, 0)
                                  : forward_scratch(FA_F32, blocks[c].bq, blocks[c].bk, d, dv) +
                                        forward_half_tiles(q_half, 1, blocks[c].bq, blocks[c].bk, d, dv);
                cr_expect_eq(st.scratch_peak, want,
                             "types %zu, blocks %d/%d, Nq %lld: forward peak %zu, formula %zu", t,
                             blocks[c].bq, blocks[c].bk, (long long)nq, st.scratch_peak, want);

                fa_context_reset_stats(ctx);
                cr_assert_eq(fa_backward(ctx, NULL, &q, &k, &v, &out, &dout, lse, &dq, &dk, &dv_t), FA_OK,
                             "%s", fa_last_error());
                cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
                want = hu_backward_on_dot_units(ctx, types[t].q, types[t].kv, d, dv)
                           ? backward_dot_scratch(blocks[c].bq, blocks[c].bk, d, dv, 0)
                           : backward_scratch(FA_F32, blocks[c].bq, blocks[c].bk, d, dv, 0) +
                                 backward_half_tiles(q_half, 1, blocks[c].bq, blocks[c].bk, d, dv);
                cr_expect_eq(st.scratch_peak, want,
                             "types %zu, blocks %d/%d, Nq %lld: backward peak %zu, formula %zu", t,
                             blocks[c].bq, blocks[c].bk, (long long)nq, st.scratch_peak, want);
                fa_tensor *all[] = {&q, &k, &v, &out, &dout, &dq, &dk, &dv_t};
                for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]->data);
                free(lse);
                fa_context_destroy(ctx);
            }
}

/* A decode step over a bf16 cache reads it in place on every CPU: its peak is the group's formula (n
 * = 8 heads, one query row each: the score tile shared), the widened tiles a masked tile would
 * take, and the two row lists of bk + FA_STORED_AHEAD (64) rows (src/README.md, "Memory"). */
Test(half_scratch, decode_group_peak_counts_its_row_lists)
{
    static const struct {
        int bk;
        int64_t d, dv;
    } blocks[] = {{64, 128, 128}, {16, 64, 40}, {100, 59, 24}};
    for (size_t c = 0; c < sizeof blocks / sizeof blocks[0]; c++) {
        fa_context *ctx = tu_context(2, 0, blocks[c].bk);
        const int64_t heads = 8, nk = 3 * blocks[c].bk + 1, d = blocks[c].d, dv = blocks[c].dv; /* unsplit */
        fa_tensor q = hs_tensor(FA_F32, 1, heads, 1, d), k = hs_tensor(FA_BF16, 1, heads, nk, d);
        fa_tensor v = hs_tensor(FA_BF16, 1, heads, nk, dv), out = hs_tensor(FA_F32, 1, heads, 1, dv);
        float *lse = calloc((size_t)heads, sizeof(float));
        fa_params p = FA_PARAMS_INIT;
        p.causal = FA_CAUSAL_BOTTOM_RIGHT;
        cr_assert_eq(fa_forward(ctx, &p, &q, &k, &v, &out, lse), FA_OK, "%s", fa_last_error());
        fa_stats st = FA_STATS_INIT;
        cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
        const size_t want = decode_group_scratch(heads, 1, blocks[c].bk, d, dv) +
                            forward_half_tiles(0, 1, 1, blocks[c].bk, d, dv);
        cr_expect_eq(st.scratch_peak, want, "bk %d, D %lld, Dv %lld: peak %zu, formula %zu", blocks[c].bk,
                     (long long)d, (long long)dv, st.scratch_peak, want);
        free(q.data), free(k.data), free(v.data), free(out.data), free(lse);
        fa_context_destroy(ctx);
    }
}
