/* SPDX-License-Identifier: BSD-3-Clause */
/* The forward's work items (src/plan/schedule.c, fa_forward_items in src/drivers/forward.c): every
 * query block listed exactly once, the most keys a row first across all heads under a causal mask, split-KV
 * chunks that tile the keys exactly, and a decode step cut into enough items for a large node.
 * Invariants of the mask geometry and the item map; the results' bits across thread counts are the
 * invariance suites'. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "api/params.h"
#include "api/validate.h"
#include "drivers/forward.h"
#include "plan/mask.h"
#include "plan/schedule.h"

typedef struct {
    float *q, *k, *v, *out;
    fa_params_copy params;
    fa_problem prob;
} case_t;

static void case_make(case_t *c, int64_t b, int64_t h, int64_t nq, int64_t nk, int64_t d, fa_causal causal)
{
    fa_params p = FA_PARAMS_INIT;
    p.causal = causal;
    c->q = calloc((size_t)(b * h * nq * d), sizeof(float));
    c->out = calloc((size_t)(b * h * nq * d), sizeof(float));
    c->k = calloc((size_t)(b * h * nk * d), sizeof(float));
    c->v = calloc((size_t)(b * h * nk * d), sizeof(float));
    cr_assert(c->q && c->out && c->k && c->v);
    fa_tensor tq = fa_tensor_bhsd(c->q, FA_F32, b, h, nq, d),
              to = fa_tensor_bhsd(c->out, FA_F32, b, h, nq, d);
    fa_tensor tk = fa_tensor_bhsd(c->k, FA_F32, b, h, nk, d), tv = fa_tensor_bhsd(c->v, FA_F32, b, h, nk, d);
    cr_assert_eq(fa_params_read("test", &p, &c->params), FA_OK);
    cr_assert_eq(fa_validate_forward("test", &c->params.p, &tq, &tk, &tv, &to, NULL, &c->prob), FA_OK, "%s",
                 fa_last_error());
}

static void case_free(case_t *c)
{
    free(c->q), free(c->k), free(c->v), free(c->out);
}

static int64_t visible_pairs(const fa_problem *p, int64_t row0, int64_t rows)
{
    int64_t n = 0;
    for (int64_t r = row0; r < row0 + rows; r++) {
        fa_key_range k = fa_visible_keys(p, r);
        if (k.end > k.begin) n += k.end - k.begin;
    }
    return n;
}

Test(schedule, every_query_block_is_one_item_and_causal_ones_come_costliest_first)
{
    static const fa_causal causals[] = {FA_CAUSAL_NONE, FA_CAUSAL_TOP_LEFT, FA_CAUSAL_BOTTOM_RIGHT};
    static const int64_t shapes[][4] = {{2, 3, 200, 200}, {1, 5, 300, 450}, {3, 1, 64, 64}, {2, 2, 70, 33}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (size_t m = 0; m < 3; m++)
            for (int64_t bq = 16; bq <= 64; bq *= 2) {
                case_t c;
                case_make(&c, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], 8, causals[m]);
                const fa_problem *p = &c.prob;
                fa_q_schedule sc = fa_q_schedule_make(p, bq);
                cr_assert_eq(sc.count, p->batch * p->q_heads * sc.q_blocks);
                char *seen = calloc((size_t)sc.count, 1);
                int64_t previous = INT64_MAX / 4096, previous_rows = 1;
                for (int64_t i = 0; i < sc.count; i++) {
                    fa_q_item it = fa_q_schedule_item(&sc, p, i);
                    cr_assert(it.batch >= 0 && it.batch < p->batch && it.q_head >= 0 &&
                              it.q_head < p->q_heads);
                    cr_assert_eq(it.row0 % bq, 0);
                    int64_t block = it.row0 / bq,
                            slot = (it.batch * p->q_heads + it.q_head) * sc.q_blocks + block;
                    cr_assert_lt(block, sc.q_blocks);
                    cr_assert_eq(it.rows, p->q_len - it.row0 < bq ? p->q_len - it.row0 : bq);
                    cr_expect_eq(seen[slot], 0,
                                 "shape %zu, mask %zu, block_q %lld: item %lld lists a block twice", s, m,
                                 (long long)bq, (long long)i);
                    seen[slot] = 1;
                    if (causals[m] == FA_CAUSAL_NONE) continue;
                    /* a causal mask's later blocks see more keys a row; every head's are handed out
                     * before any head's earlier blocks (pairs a row compared by cross-multiplying) */
                    int64_t pairs = visible_pairs(p, it.row0, it.rows);
                    cr_expect_leq(pairs * previous_rows, previous * it.rows,
                                  "shape %zu, mask %zu, block_q %lld: item %lld sees %lld pairs in %lld rows "
                                  "after %lld in %lld",
                                  s, m, (long long)bq, (long long)i, (long long)pairs, (long long)it.rows,
                                  (long long)previous, (long long)previous_rows);
                    previous = pairs, previous_rows = it.rows;
                }
                free(seen);
                case_free(&c);
            }
}

typedef struct {
    int64_t pairs, attention, merges;
    int64_t key_hi_max;
} item_sums;

static void add_item(void *user, const fa_forward_item_info *it)
{
    item_sums *s = user;
    if (it->phase == 1) {
        s->merges++;
        return;
    }
    s->attention++;
    s->pairs += it->pairs;
    if (it->key_hi > s->key_hi_max) s->key_hi_max = it->key_hi;
}

/* Without a mask every computed pair is visible: the items' pairs, chunks and groups included, add
 * up to B·H·Nq·Nk exactly when each (row, key) is computed by one item. */
Test(schedule, forward_items_compute_every_pair_once)
{
    static const int64_t shapes[][4] = {
        {1, 8, 1, 32768}, {2, 3, 1, 5000}, {1, 2, 200, 3000}, {4, 16, 512, 512}, {1, 8, 4, 20000}};
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        case_t c;
        case_make(&c, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], 16, FA_CAUSAL_NONE);
        item_sums sums = {0, 0, 0, 0};
        cr_assert_eq(fa_forward_items(ctx, &c.prob, add_item, &sums), FA_OK);
        cr_expect_eq(sums.pairs, shapes[s][0] * shapes[s][1] * shapes[s][2] * shapes[s][3],
                     "shape %zu: %lld pairs", s, (long long)sums.pairs);
        cr_expect_leq(sums.key_hi_max, shapes[s][3]);
        case_free(&c);
    }
    fa_context_destroy(ctx);
}

/* A decode step over one long cache is cut into FA_SPLIT_DECODE_ITEMS chunk items (its keys allow
 * that many chunks of two tiles), merged per query item: enough for 256 threads from the shape. */
Test(schedule, a_decode_step_splits_into_the_decode_target)
{
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    case_t c;
    case_make(&c, 1, 8, 1, 65536, 64, FA_CAUSAL_NONE);
    item_sums sums = {0, 0, 0, 0};
    cr_assert_eq(fa_forward_items(ctx, &c.prob, add_item, &sums), FA_OK);
    cr_expect_geq(sums.attention, FA_SPLIT_DECODE_ITEMS, "%lld chunk items", (long long)sums.attention);
    cr_expect_eq(sums.merges, 8);
    case_free(&c);
    fa_context_destroy(ctx);
}
