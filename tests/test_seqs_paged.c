/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_forward with paged K/V (include/flashattn.h, fa_seqs.block_table): key t of sequence b lives in
 * page block_table[b][t / page_size], row t % page_size, of pools laid out as FlashAttention and vLLM
 * keep them ([pages][page_size][Hkv][D]) or head-major.
 * - Paged keys give bitwise the out and lse of the same keys in a contiguous cache, packed or dense,
 *   and of a dense call per sequence: page sizes that divide the key block and that do not, pages
 *   larger than the block, pages in shuffled order, table entries of -1 beyond the pages in use,
 *   keys in use that are no whole number of pages, GQA, packed and dense queries;
 * - sequences may share pages (a common prefix);
 * - against the float64 oracle per sequence, with every causal alignment, windows, ALiBi, sinks and
 *   softcap, and sequences with no key in use or one;
 * - the bytes do not depend on the thread count (1..4).
 * Rows of pages beyond a sequence's keys in use and pages no entry in use names hold NaN, so a read
 * of them would show (seqs_util.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "seqs_util.h"

typedef struct {
    int64_t page_size, block_k, pages_per_seq;
} paging;

/* Pages that divide the key block (16 in 32, 1 in 8, 16 in 16), that do not (5 and 7 keys: blocks
 * straddle pages), larger than the block (20 and 32 keys for blocks of 16); capacities below
 * 4·block_k and from it on (split-KV). */
static const paging pagings[] = {
    {16, 32, 12}, {5, 16, 20}, {20, 16, 3}, {32, 16, 1}, {1, 8, 70}, {7, 8, 4}, {16, 16, 3},
};
#define N_PAGINGS ((int)(sizeof pagings / sizeof pagings[0]))

static const fa_causal causals[3] = {FA_CAUSAL_NONE, FA_CAUSAL_TOP_LEFT, FA_CAUSAL_BOTTOM_RIGHT};

/* A paged batch: packed or dense queries, GQA, seqused (with spare table entries) or full pages. */
static ts_spec paged_spec(fa_dtype dt, const paging *g, int packed_q, int seqused, int head_major)
{
    ts_spec s = {0};
    s.dtype = dt;
    s.batch = 6, s.q_heads = 4, s.kv_heads = 2, s.dim = 12, s.dim_v = 9;
    s.packed_q = packed_q, s.keys = TS_KEYS_PAGED, s.seqused = seqused, s.head_major = head_major;
    s.spare_rows = 2;
    s.page_size = g->page_size, s.pages_per_seq = g->pages_per_seq, s.spare_pages = 3;
    return s;
}

Test(seqs_paged, paged_keys_give_bitwise_the_result_of_the_same_keys_in_a_contiguous_cache)
{
    uint64_t seed = tu_test_seed();
    char desc[512], msg[1024];
    for (int g = 0; g < N_PAGINGS; g++) {
        /* Capacities from 4·block_k on let a sequence split its keys (split-KV), as its dense call
         * does: the pagings have both kinds. */
        fa_context *ctx = tu_context(0, 16, (int)pagings[g].block_k);
        for (int dt = 0; dt < 2; dt++)
            for (int c = 0; c < 3; c++) {
                int variant = (g + dt + c) % 4; /* packed q + seqused, dense q + seqused, full pages */
                tu_rng rng = tu_rng_make(seed + (uint64_t)((g * 2 + dt) * 3 + c));
                ts_spec s =
                    paged_spec(dt ? FA_F64 : FA_F32, &pagings[g], variant != 1, variant < 3, variant & 1);
                ts_spec_draw(&s, &rng, 30, 0, 1);
                ts_batch t, packed, dense;
                ts_make(&t, &s, &rng, 2.5);
                ts_make_twin(&packed, &t, TS_KEYS_PACKED, 0);
                ts_make_twin(&dense, &t, TS_KEYS_DENSE, s.pages_per_seq * s.page_size);
                fa_params p = FA_PARAMS_INIT;
                p.causal = causals[c];
                if (c == 2 && dt == 1) p.window_left = 6, p.window_right = 0; /* and a window */
                ts_desc(&t, &p, desc, sizeof desc);
                cr_assert_eq(ts_forward(ctx, &p, &t), FA_OK, "%s, seed %llu: %s", desc,
                             (unsigned long long)seed, fa_last_error());
                cr_expect(ts_only_sequence_rows_written(&t, 0, msg, sizeof msg), "%s, seed %llu: %s", desc,
                          (unsigned long long)seed, msg);
                cr_assert_eq(ts_forward(ctx, &p, &packed), FA_OK, "%s (packed twin): %s", desc,
                             fa_last_error());
                cr_assert_eq(ts_forward(ctx, &p, &dense), FA_OK, "%s (dense twin): %s", desc,
                             fa_last_error());
                cr_expect(ts_outputs_bitwise_equal(&t, &packed, 0, msg, sizeof msg),
                          "%s, block_k %lld, seed %llu: paged against a packed cache: %s", desc,
                          (long long)pagings[g].block_k, (unsigned long long)seed, msg);
                cr_expect(ts_outputs_bitwise_equal(&t, &dense, 0, msg, sizeof msg),
                          "%s, block_k %lld, seed %llu: paged against a dense cache: %s", desc,
                          (long long)pagings[g].block_k, (unsigned long long)seed, msg);
                cr_expect(ts_forward_equals_dense_calls(ctx, &p, &t, msg, sizeof msg),
                          "%s, block_k %lld, seed %llu: paged against dense calls: %s", desc,
                          (long long)pagings[g].block_k, (unsigned long long)seed, msg);
                ts_free(&t), ts_free(&packed), ts_free(&dense);
            }
        fa_context_destroy(ctx);
    }
}

/* Sequence b's contiguous keys (kc, vc) read back from the pages its table names. */
static void gather_pages(ts_batch *t)
{
    const ts_spec *s = &t->s;
    for (int64_t b = 0; b < s->batch; b++) {
        fa_tensor kc = ts_seq_view(t, TS_K, b), vc = ts_seq_view(t, TS_V, b);
        for (int64_t key = 0; key < t->used[b]; key++) {
            int64_t page = t->block_table[b * s->pages_per_seq + key / s->page_size],
                    row = key % s->page_size;
            for (int64_t h = 0; h < s->kv_heads; h++) {
                for (int64_t d = 0; d < s->dim; d++)
                    kit_tensor_store(&kc, 0, h, key, d, kit_tensor_load(&t->t[TS_K], page, h, row, d));
                for (int64_t d = 0; d < s->dim_v; d++)
                    kit_tensor_store(&vc, 0, h, key, d, kit_tensor_load(&t->t[TS_V], page, h, row, d));
            }
        }
    }
}

/* A common prefix: the later sequences' first pages are the first sequence's (vLLM's prefix
 * caching), and one sequence names one page twice. Each still computes over its own keys. */
Test(seqs_paged, sequences_may_share_pages)
{
    uint64_t seed = tu_test_seed();
    tu_rng rng = tu_rng_make(seed);
    char desc[512], msg[1024];
    for (int dt = 0; dt < 2; dt++) {
        paging g = {8, 16, 6};
        ts_spec s = paged_spec(dt ? FA_F64 : FA_F32, &g, 1, 1, dt);
        ts_spec_draw(&s, &rng, 20, 0, 0);
        for (int64_t b = 0; b < s.batch; b++)
            s.k_used[b] = 17 + tu_rng_below(&rng, 48 - 17 + 1); /* 3..6 pages */
        ts_batch t;
        ts_make(&t, &s, &rng, 2.5);
        for (int64_t b = 1; b < s.batch; b++) {
            t.block_table[b * s.pages_per_seq] = t.block_table[0];
            t.block_table[b * s.pages_per_seq + 1] = t.block_table[1];
        }
        t.block_table[2] = t.block_table[0]; /* sequence 0 reads its first page twice */
        gather_pages(&t);
        ts_batch packed;
        ts_make_twin(&packed, &t, TS_KEYS_PACKED, 0);
        fa_params p = FA_PARAMS_INIT;
        p.causal = FA_CAUSAL_BOTTOM_RIGHT;
        ts_desc(&t, &p, desc, sizeof desc);
        cr_assert_eq(ts_forward(NULL, &p, &t), FA_OK, "%s: %s", desc, fa_last_error());
        cr_assert_eq(ts_forward(NULL, &p, &packed), FA_OK, "%s (packed twin): %s", desc, fa_last_error());
        cr_expect(ts_outputs_bitwise_equal(&t, &packed, 0, msg, sizeof msg), "%s, seed %llu: %s", desc,
                  (unsigned long long)seed, msg);
        cr_expect(ts_check_forward(&t, &p, msg, sizeof msg), "%s, seed %llu: %s", desc,
                  (unsigned long long)seed, msg);
        ts_free(&t), ts_free(&packed);
    }
}

Test(seqs_paged, every_sequence_matches_the_oracle_on_its_own_keys_in_use)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx[2] = {tu_context(0, 0, 0), tu_context(0, 7, 12)};
    float slopes[4], sinks[4];
    char desc[512], msg[1024];
    for (int g = 0; g < N_PAGINGS; g++)
        for (int dt = 0; dt < 2; dt++) {
            tu_rng rng = tu_rng_make(seed + (uint64_t)(g * 2 + dt));
            int variant = (g + dt) % 3;
            ts_spec s =
                paged_spec(dt ? FA_F64 : FA_F32, &pagings[g], variant != 1, variant < 2, variant == 0);
            ts_spec_draw(&s, &rng, 40, 0, 1);
            ts_batch t;
            ts_make(&t, &s, &rng, 2.5);
            for (int h = 0; h < 4; h++) {
                slopes[h] = (float)tu_rng_uniform(&rng, 0.0, 0.5);
                sinks[h] = (float)tu_rng_uniform(&rng, -2.0, 3.0);
            }
            fa_params p = FA_PARAMS_INIT;
            p.causal = causals[g % 3];
            if (g % 2) p.window_left = 5 + g, p.window_right = g % 3 == 0 ? 2 : -1;
            if ((g + dt) % 2) p.alibi_slopes = slopes;
            if (g % 3 != 1) p.sinks = sinks;
            if (g == 4) p.softcap = 3.5;
            ts_desc(&t, &p, desc, sizeof desc);
            for (int c = 0; c < 2; c++) {
                ts_fill_canary(&t);
                cr_assert_eq(ts_forward(ctx[c], &p, &t), FA_OK, "%s, seed %llu: %s", desc,
                             (unsigned long long)seed, fa_last_error());
                cr_expect(ts_only_sequence_rows_written(&t, 0, msg, sizeof msg), "%s, seed %llu: %s", desc,
                          (unsigned long long)seed, msg);
                cr_expect(ts_check_forward(&t, &p, msg, sizeof msg), "%s, blocks %s, seed %llu: %s", desc,
                          c ? "7/12" : "auto", (unsigned long long)seed, msg);
            }
            ts_free(&t);
        }
    fa_context_destroy(ctx[0]);
    fa_context_destroy(ctx[1]);
}

/* Caches of up to 1200 keys (several key tiles of the automatic size, which is at most 512, and pages
 * straddling them) on 1..4 threads. */
Test(seqs_paged, paged_forward_is_thread_count_invariant)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx[4];
    for (int x = 0; x < 4; x++) ctx[x] = tu_context(x + 1, 0, 0);
    char desc[512];
    for (int g = 0; g < N_PAGINGS; g += 2)
        for (int dt = 0; dt < 2; dt++) {
            tu_rng rng = tu_rng_make(seed + (uint64_t)(g * 2 + dt));
            paging big = pagings[g];
            big.pages_per_seq = (1200 + big.page_size - 1) / big.page_size;
            ts_spec s = paged_spec(dt ? FA_F64 : FA_F32, &big, dt == 0, 1, g % 4 == 0);
            s.batch = 9;
            ts_spec_draw(&s, &rng, dt ? 3 : 60, 0, 1); /* decode-like (few queries) and prefill-like */
            ts_batch t;
            ts_make(&t, &s, &rng, 2.5);
            fa_params p = FA_PARAMS_INIT;
            p.causal = causals[(g / 2 + dt) % 3];
            ts_desc(&t, &p, desc, sizeof desc);
            char same_msg[128];
            cr_expect(ts_forward_same_bytes_on(ctx, 4, &p, &t, same_msg, sizeof same_msg),
                      "%s, seed %llu: 1 to 4 threads: %s", desc, (unsigned long long)seed, same_msg);
            /* with the automatic blocks too, the bytes of the same keys in a packed cache */
            ts_batch packed;
            ts_make_twin(&packed, &t, TS_KEYS_PACKED, 0);
            cr_assert_eq(ts_forward(ctx[1], &p, &packed), FA_OK, "%s (packed twin): %s", desc,
                         fa_last_error());
            char msg[512];
            cr_expect(ts_outputs_bitwise_equal(&t, &packed, 0, msg, sizeof msg),
                      "%s, seed %llu: paged against a packed cache: %s", desc, (unsigned long long)seed, msg);
            ts_free(&t), ts_free(&packed);
        }
    for (int x = 0; x < 4; x++) fa_context_destroy(ctx[x]);
}
