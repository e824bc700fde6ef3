/* SPDX-License-Identifier: BSD-3-Clause */
/* The bf16/f16 accuracy suites' problems; see half_cases.h. */
#include "half_cases.h"

#include <criterion/criterion.h>

/* spec: causal, window_left, window_right, softcap, alibi, bias, sinks */
const hc_case hc_cases[HC_CASES] = {
    /* a decode step: one query, 130 keys (130 = 2·64 + 2), GQA, Dv < D */
    {1, 4, 2, 1, 130, 64, 32, 0, {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_OFF, 0}, 0.0, 0},
    /* 17 x 63 on 13/24 tiles, softcap 1.5 caps most scores, token-major layout */
    {2, 4, 2, 17, 63, 40, 24, 1, {FA_CAUSAL_TOP_LEFT, -1, -1, 1.5, 0, TM_BIAS_OFF, 0}, 0.0, 1},
    /* more queries than keys under bottom-right: the first 113 rows see no key; ALiBi */
    {1, 4, 2, 130, 17, 33, 48, 0, {FA_CAUSAL_BOTTOM_RIGHT, -1, -1, 0.0, 1, TM_BIAS_OFF, 0}, 0.3, 0},
    /* multi-query heads, a two-sided window and sinks, on 5/7 tiles */
    {1, 4, 1, 63, 130, 16, 16, 0, {FA_CAUSAL_NONE, 20, 5, 0.0, 0, TM_BIAS_OFF, 1}, 0.0, 2},
    /* a full f32 bias with -inf entries, Dv > D */
    {2, 2, 2, 63, 63, 24, 40, 1, {FA_CAUSAL_TOP_LEFT, -1, -1, 0.0, 0, TM_BIAS_FULL, 0}, 0.0, 1},
    /* key padding (-inf) bias with sinks and a softcap of 30 (few scores capped); Dv = 72 */
    {1, 4, 2, 17, 130, 8, 72, 0, {FA_CAUSAL_BOTTOM_RIGHT, -1, -1, 30.0, 0, TM_BIAS_KEY_PADDING, 1}, 0.0, 0},
    /* one key: P = 1 wherever a row sees it (out is a v row); a left window, ALiBi, head-broadcast bias */
    {1, 4, 2, 130, 1, 24, 16, 0, {FA_CAUSAL_TOP_LEFT, 3, -1, 0.0, 1, TM_BIAS_HEAD_BROADCAST, 0}, 0.0, 2},
    /* the smallest problem, odd head dims */
    {1, 2, 1, 1, 1, 5, 3, 0, {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_OFF, 0}, 0.0, 1},
    /* 130 x 130 on 200/100 blocks (one item of 130 rows: two query blocks on AMX tiles, which see
     * different columns of a key tile), a window closed on both sides and a negative scale */
    {1, 2, 1, 130, 130, 32, 24, 1, {FA_CAUSAL_BOTTOM_RIGHT, 40, 0, 0.0, 0, TM_BIAS_OFF, 1}, -0.2, 3},
    /* items of 260 rows on 512/128 blocks (three query blocks on AMX tiles) whose 600 keys are split
     * into two chunks (2 items: schedule.h splits them) */
    {1, 2, 1, 260, 600, 32, 32, 0, {FA_CAUSAL_BOTTOM_RIGHT, -1, -1, 0.0, 0, TM_BIAS_OFF, 0}, 0.0, 4},
};

const int hc_context_blocks[HC_CONTEXTS][2] = {{0, 0}, {13, 24}, {5, 7}, {200, 100}, {512, 128}};

const fa_dtype hc_dtype_pairs[HC_DTYPE_PAIRS][2] = {
    {FA_BF16, FA_BF16}, {FA_F16, FA_F16}, {FA_F32, FA_BF16}, {FA_F32, FA_F16}};

kit_shape hc_shape(const hc_case *c, fa_dtype qt, fa_dtype kt)
{
    kit_shape s = {qt, kt, c->batch, c->q_heads, c->kv_heads, c->q_len, c->kv_len, c->dim, c->dim_v, c->bshd};
    return s;
}

void hc_mods(tm_mods *m, const hc_case *c, tu_rng *rng)
{
    tu_shape s = {FA_F32, c->batch, c->q_heads, c->kv_heads, c->q_len, c->kv_len, c->dim, c->dim_v, TU_BHSD};
    tm_mods_make(m, &c->spec, &s, c->scale, rng);
}

void hc_contexts_create(fa_context *ctx[HC_CONTEXTS])
{
    for (int x = 0; x < HC_CONTEXTS; x++) {
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.num_threads = 2;
        o.block_q = hc_context_blocks[x][0];
        o.block_k = hc_context_blocks[x][1];
        cr_assert_eq(fa_context_create(&ctx[x], &o), FA_OK, "context %d: %s", x, fa_last_error());
    }
}

void hc_contexts_destroy(fa_context *ctx[HC_CONTEXTS])
{
    for (int x = 0; x < HC_CONTEXTS; x++) fa_context_destroy(ctx[x]);
}
