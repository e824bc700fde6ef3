/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_forward and fa_backward over a batch of sequences (include/flashattn.h, fa_seqs) with packed
 * (varlen) queries and keys, and dense batches whose sequences use their own number of keys
 * (seqused_k); paged keys are refused in the backward by design (a row of the error-exit table). In both
 * directions:
 * - a sequence's rows of out and lse, and its dq, dk and dv, are bitwise those of a dense call of
 *   that sequence alone with the same block sizes (the backward from the same out and lse), for
 *   every causal mode and windows, GQA, f32 and f64;
 * - against the float64 oracles applied to each sequence alone (its own Nq and keys in use, so its
 *   own causal alignment d0 = Nk_b - Nq_b, window, ALiBi distances and sink), with sequences without
 *   queries, without keys, of one token and with more queries than keys, under ALiBi, sinks and
 *   softcap (backward: tub_check_accuracy's rule, f64 1e-11, f32 3x the naive f32 error; dsinks is
 *   the sum over the sequences of each one's oracle dsinks);
 * - the bytes (dsinks too) do not depend on the thread count (1..4);
 * and forward:
 * - a sequence without keys gets exact zeros and lse = -inf, or its head's sink;
 * and every call writes only its sequences' rows (the backward: dq rows and keys in use of dk and
 * dv): inputs that no sequence owns hold NaN, outputs outside the sequences' rows keep their canary
 * bytes (seqs_util.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/context.h" /* white-box: the row buffer that holds split-KV partials */
#include "seqs_util.h"
#include "util_backward.h"

/* Blocks of 16 queries and 16 keys. Forward sequences of up to 10 key blocks: a sequence with few
 * query items and at least 4·block_k keys splits them (split-KV), and it must split them exactly as
 * a dense call of it alone does (include/flashattn.h, fa_seqs). The backward never splits keys; its
 * sequences stay under 4 key blocks. */
enum { BQ = 16, BK = 16, MAX_Q = 40 };

/* every causal alignment, and windows: alone, with each causal mode, one-sided and closed */
static const ts_mask_case masks[] = {
    {FA_CAUSAL_NONE, -1, -1}, {FA_CAUSAL_TOP_LEFT, -1, -1}, {FA_CAUSAL_BOTTOM_RIGHT, -1, -1},
    {FA_CAUSAL_NONE, 6, 3},   {FA_CAUSAL_TOP_LEFT, 9, -1},  {FA_CAUSAL_BOTTOM_RIGHT, 4, 0},
    {FA_CAUSAL_NONE, -1, 2},
};
#define N_MASKS ((int)(sizeof masks / sizeof masks[0]))

/* The layouts of a batch: packed or dense queries, packed or dense keys, with or without keys in
 * use, token- or head-major memory, and the heads (grouped, multi-query, one per query head). */

static const ts_layout_case layouts[] = {
    {1, TS_KEYS_PACKED, 0, 0, 7, 4, 2}, {1, TS_KEYS_PACKED, 1, 1, 6, 3, 1}, {1, TS_KEYS_DENSE, 1, 0, 5, 2, 2},
    {0, TS_KEYS_PACKED, 0, 1, 5, 4, 1}, {0, TS_KEYS_DENSE, 1, 0, 6, 4, 2},  {0, TS_KEYS_DENSE, 0, 1, 3, 2, 1},
};
#define N_LAYOUTS ((int)(sizeof layouts / sizeof layouts[0]))

/* Sizes of one test's batches: sequences per batch (ts_spec_of's count and its second size) and
 * the largest queries and keys a sequence draws (ts_spec_draw), and the amplitude of q and k. */
typedef struct {
    int64_t n, m, max_q, max_k;
    double amp;
} seq_sizes;

/* Each direction's part of the tables (the backward takes the first masks and layouts) and sizes. */
static const struct {
    int n_masks, n_layouts;
    seq_sizes oracle, threads; /* of the oracle and the thread-count tests */
} dirs[TUB_DIRECTIONS] = {
    [TUB_FORWARD] = {N_MASKS, N_LAYOUTS, {12, 10, 50, 90, 2.5}, {16, 16, 150, 200, 2.5}},
    [TUB_BACKWARD] = {6, 5, {10, 7, 30, 45, 2.0}, {16, 16, 120, 150, 2.0}},
};
static const int64_t dense_max_k[TUB_DIRECTIONS] = {10 * BK, 4 * BK - 1};

/* lse is optional: without it, out holds the same bytes and the lse storage is left alone. */
static int out_without_lse_is_the_same(fa_context *ctx, const fa_params *p, ts_batch *t)
{
    unsigned char *out = kit_buf_snapshot(&t->buf[TS_OUT]);
    ts_fill_canary(t);
    unsigned char *lse = kit_buf_snapshot(&t->buf[TS_TENSORS]);
    fa_params pp = *p;
    pp.seqs = &t->seqs;
    fa_status st = fa_forward(ctx, &pp, &t->t[TS_Q], &t->t[TS_K], &t->t[TS_V], &t->t[TS_OUT], NULL);
    int ok = st == FA_OK && kit_buf_equals_snapshot(&t->buf[TS_OUT], out) &&
             kit_buf_equals_snapshot(&t->buf[TS_TENSORS], lse);
    free(out), free(lse);
    return ok;
}

/* The seed of one batch: the direction, dtype, layout and mask. */
static uint64_t batch_seed(uint64_t seed, int d, int dt, int l, int m)
{
    return seed + (uint64_t)(((d * 2 + dt) * N_LAYOUTS + l) * N_MASKS + m);
}

Test(seqs, packed_rows_and_gradients_are_bitwise_those_of_a_dense_call_per_sequence)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx = tu_context(0, BQ, BK);
    char desc[512], msg[1024];
    for (int d = 0; d < TUB_DIRECTIONS; d++)
        for (int dt = 0; dt < 2; dt++)
            for (int l = 0; l < dirs[d].n_layouts; l++)
                for (int m = 0; m < dirs[d].n_masks; m++) {
                    tu_rng rng = tu_rng_make(batch_seed(seed, d, dt, l, m));
                    ts_spec s = ts_spec_of(&layouts[l], dt ? FA_F64 : FA_F32, 8 + 5 * l, 6 + 3 * m);
                    ts_spec_draw(&s, &rng, MAX_Q, dense_max_k[d], 1);
                    ts_batch t;
                    ts_make(&t, &s, &rng, 2.0);
                    fa_params p = ts_mask_params(&masks[m]);
                    ts_desc(&t, &p, desc, sizeof desc);
                    cr_assert_eq(ts_forward(ctx, &p, &t), FA_OK, "%s, seed %llu: forward: %s", desc,
                                 (unsigned long long)seed, fa_last_error());
                    if (d == TUB_FORWARD) {
                        cr_expect(ts_only_sequence_rows_written(&t, 0, msg, sizeof msg), "%s, seed %llu: %s",
                                  desc, (unsigned long long)seed, msg);
                        cr_expect(ts_forward_equals_dense_calls(ctx, &p, &t, msg, sizeof msg),
                                  "%s, blocks %d/%d, seed %llu: %s", desc, BQ, BK, (unsigned long long)seed,
                                  msg);
                        cr_expect(out_without_lse_is_the_same(ctx, &p, &t),
                                  "%s, seed %llu: without lse, out differs", desc, (unsigned long long)seed);
                    } else {
                        cr_assert_eq(ts_backward(ctx, &p, &t), FA_OK, "%s, seed %llu: %s", desc,
                                     (unsigned long long)seed, fa_last_error());
                        cr_expect(ts_only_sequence_rows_written(&t, 1, msg, sizeof msg), "%s, seed %llu: %s",
                                  desc, (unsigned long long)seed, msg);
                        cr_expect(ts_backward_equals_dense_calls(ctx, &p, &t, msg, sizeof msg),
                                  "%s, blocks %d/%d, seed %llu: backward: %s", desc, BQ, BK,
                                  (unsigned long long)seed, msg);
                    }
                    ts_free(&t);
                }
    fa_context_destroy(ctx);
}

/* Sequences of every length class against the oracles, under every causal alignment and window and
 * with the value modifiers and sinks, which apply per sequence too; automatic and odd blocks. */
Test(seqs, every_sequence_and_its_gradients_match_the_oracle_on_its_own_lengths)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx[2] = {tu_context(0, 0, 0), tu_context(0, 5, 7)};
    float slopes[4], sinks[4], dsinks[4];
    char desc[512], msg[1024];
    for (int d = 0; d < TUB_DIRECTIONS; d++)
        for (int dt = 0; dt < 2; dt++)
            for (int l = 0; l < dirs[d].n_layouts; l++)
                for (int m = 0; m < dirs[d].n_masks; m++) {
                    const seq_sizes *z = &dirs[d].oracle;
                    tu_rng rng = tu_rng_make(batch_seed(seed, d, dt, l, m));
                    ts_spec s = ts_spec_of(&layouts[l], dt ? FA_F64 : FA_F32, z->n, z->m);
                    ts_spec_draw(&s, &rng, z->max_q, z->max_k, 1);
                    ts_batch t;
                    ts_make(&t, &s, &rng, z->amp);
                    fa_params p = ts_mask_params(&masks[m]);
                    for (int h = 0; h < 4; h++) {
                        slopes[h] = (float)tu_rng_uniform(&rng, 0.0, 0.5);
                        sinks[h] = (float)tu_rng_uniform(&rng, -2.0, 3.0);
                    }
                    int mods = (l + m) % 4; /* none, ALiBi, sinks, ALiBi + sinks + softcap */
                    if (mods & 1) p.alibi_slopes = slopes;
                    if (mods >= 2) p.sinks = sinks;
                    if (mods >= 2 && d == TUB_BACKWARD) p.dsinks = dsinks;
                    if (mods == 3) p.softcap = 4.0;
                    ts_desc(&t, &p, desc, sizeof desc);
                    for (int c = 0; c < 2; c++) {
                        const char *blocks = c ? "5/7" : "auto";
                        ts_fill_canary(&t);
                        cr_assert_eq(ts_forward(ctx[c], &p, &t), FA_OK, "%s, seed %llu: forward: %s", desc,
                                     (unsigned long long)seed, fa_last_error());
                        if (d == TUB_FORWARD) {
                            cr_expect(ts_only_sequence_rows_written(&t, 0, msg, sizeof msg),
                                      "%s, seed %llu: %s", desc, (unsigned long long)seed, msg);
                            cr_expect(ts_check_forward(&t, &p, msg, sizeof msg),
                                      "%s, blocks %s, seed %llu: %s", desc, blocks, (unsigned long long)seed,
                                      msg);
                            continue;
                        }
                        cr_assert_eq(ts_backward(ctx[c], &p, &t), FA_OK, "%s, seed %llu: %s", desc,
                                     (unsigned long long)seed, fa_last_error());
                        cr_expect(ts_only_sequence_rows_written(&t, 1, msg, sizeof msg), "%s, seed %llu: %s",
                                  desc, (unsigned long long)seed, msg);
                        cr_expect(ts_check_backward(&t, &p, msg, sizeof msg),
                                  "%s, blocks %s, seed %llu: backward: %s", desc, blocks,
                                  (unsigned long long)seed, msg);
                        if (p.dsinks)
                            cr_expect(ts_check_dsinks(&t, &p, dsinks, msg, sizeof msg),
                                      "%s, blocks %s, seed %llu: %s", desc, blocks, (unsigned long long)seed,
                                      msg);
                    }
                    ts_free(&t);
                }
    fa_context_destroy(ctx[0]);
    fa_context_destroy(ctx[1]);
}

static double lse_at(const ts_batch *t, int64_t b, int64_t h, int64_t i)
{
    const void *row = ts_seq_lse(t, b, h);
    return t->s.dtype == FA_F64 ? ((const double *)row)[i] : (double)((const float *)row)[i];
}

/* No key (none packed, or none in use): every row gets exact zeros and lse = -inf, or the sink. */
Test(seqs, sequences_without_keys_get_zeros_and_minus_inf_or_their_sink)
{
    uint64_t seed = tu_test_seed();
    tu_rng rng = tu_rng_make(seed);
    float sinks[3] = {-1.5f, 0.0f, 2.25f};
    for (int dt = 0; dt < 2; dt++)
        for (int l = 0; l < 3; l++) {
            ts_spec s = ts_spec_of(&layouts[l], dt ? FA_F64 : FA_F32, 8, 5);
            s.q_heads = 3, s.kv_heads = 1;
            ts_spec_draw(&s, &rng, 20, 30, 0);
            for (int64_t b = 0; b < s.batch; b += 2) { /* every other sequence has no key */
                s.k_len[b] = l == 0 ? 0 : s.k_len[b];
                s.k_used[b] = 0;
            }
            ts_batch t;
            ts_make(&t, &s, &rng, 2.0);
            for (int with_sink = 0; with_sink < 2; with_sink++) {
                fa_params p = FA_PARAMS_INIT;
                p.causal = (fa_causal)(l % 3);
                if (with_sink) p.sinks = sinks;
                char desc[512];
                ts_desc(&t, &p, desc, sizeof desc);
                ts_fill_canary(&t);
                cr_assert_eq(ts_forward(NULL, &p, &t), FA_OK, "%s: %s", desc, fa_last_error());
                for (int64_t b = 0; b < s.batch; b += 2) {
                    fa_tensor out = ts_seq_view(&t, TS_OUT, b);
                    for (int64_t h = 0; h < s.q_heads; h++)
                        for (int64_t i = 0; i < t.q_len[b]; i++) {
                            double want = with_sink ? (double)sinks[h] : -INFINITY;
                            cr_expect(lse_at(&t, b, h, i) == want,
                                      "%s, seed %llu: sequence %lld head %lld row %lld: lse %g, want %g",
                                      desc, (unsigned long long)seed, (long long)b, (long long)h,
                                      (long long)i, lse_at(&t, b, h, i), want);
                            for (int64_t y = 0; y < s.dim_v; y++)
                                cr_expect(kit_tensor_load(&out, 0, h, i, y) == 0.0 &&
                                              !signbit(kit_tensor_load(&out, 0, h, i, y)),
                                          "%s, seed %llu: sequence %lld head %lld row %lld: out[%lld] = %g, "
                                          "want +0",
                                          desc, (unsigned long long)seed, (long long)b, (long long)h,
                                          (long long)i, (long long)y, kit_tensor_load(&out, 0, h, i, y));
                        }
                }
            }
            ts_free(&t);
        }
}

/* The backward's side of the thread-count test: dq, dk, dv and dsinks of ctx[1..3] against ctx[0]'s,
 * each from ctx[0]'s out and lse. */
static void backward_same_bytes_on(fa_context *ctx[4], fa_params *p, ts_batch *t, const char *desc,
                                   uint64_t seed)
{
    static const float sinks[4] = {0.5f, -1.0f, 2.0f, 0.0f};
    float dsinks[4] = {0}, first[4];
    p->sinks = sinks, p->dsinks = dsinks;
    cr_assert_eq(ts_forward(ctx[0], p, t), FA_OK, "%s: forward: %s", desc, fa_last_error());
    cr_assert_eq(ts_backward(ctx[0], p, t), FA_OK, "%s: %s", desc, fa_last_error());
    memcpy(first, dsinks, sizeof first);
    unsigned char *grads[3];
    for (int g = 0; g < 3; g++) grads[g] = kit_buf_snapshot(&t->buf[TS_DQ + g]);
    for (int x = 1; x < 4; x++) {
        ts_fill_canary(t);
        cr_assert_eq(ts_forward(ctx[0], p, t), FA_OK, "%s: forward: %s", desc, fa_last_error());
        cr_assert_eq(ts_backward(ctx[x], p, t), FA_OK, "%s: %s", desc, fa_last_error());
        for (int g = 0; g < 3; g++)
            cr_expect(kit_buf_equals_snapshot(&t->buf[TS_DQ + g], grads[g]),
                      "%s, seed %llu: %s on %d threads differs from 1 thread", desc, (unsigned long long)seed,
                      g == 0   ? "dq"
                      : g == 1 ? "dk"
                               : "dv",
                      x + 1);
        cr_expect(memcmp(first, dsinks, sizeof first) == 0,
                  "%s, seed %llu: dsinks on %d threads differs from 1 thread", desc, (unsigned long long)seed,
                  x + 1);
    }
    for (int g = 0; g < 3; g++) free(grads[g]);
    p->sinks = NULL, p->dsinks = NULL;
}

/* The same batch on 1, 2, 3 and 4 threads: the same bytes of out and lse; of dq, dk, dv and dsinks. */
Test(seqs, varlen_forward_and_backward_are_thread_count_invariant)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx[4];
    for (int x = 0; x < 4; x++) ctx[x] = tu_context(x + 1, 0, 0);
    char desc[512];
    for (int d = 0; d < TUB_DIRECTIONS; d++)
        for (int dt = 0; dt < 2; dt++)
            for (int l = 0; l < dirs[d].n_layouts; l++) {
                const seq_sizes *z = &dirs[d].threads;
                tu_rng rng = tu_rng_make(batch_seed(seed, d, dt, l, 0));
                ts_spec s = ts_spec_of(&layouts[l], dt ? FA_F64 : FA_F32, z->n, z->m);
                ts_spec_draw(&s, &rng, z->max_q, z->max_k, 1);
                ts_batch t;
                ts_make(&t, &s, &rng, z->amp);
                fa_params p = ts_mask_params(&masks[l % dirs[d].n_masks]);
                ts_desc(&t, &p, desc, sizeof desc);
                if (d == TUB_FORWARD) {
                    char same_msg[128];
                    cr_expect(ts_forward_same_bytes_on(ctx, 4, &p, &t, same_msg, sizeof same_msg),
                              "%s, seed %llu: 1 to 4 threads: %s", desc, (unsigned long long)seed, same_msg);
                } else {
                    backward_same_bytes_on(ctx, &p, &t, desc, seed);
                }
                ts_free(&t);
            }
    for (int x = 0; x < 4; x++) fa_context_destroy(ctx[x]);
}

/* Items wider than the float kernels' 64 rows (src/drivers/forward_attend.h: blocks of 64 rows over each key
 * tile) in a batch of sequences: every sequence matches the oracle, each as its dense call alone,
 * and the bytes do not depend on the thread count. */
Test(seqs, wide_items_match_the_oracle_and_dense_calls_on_any_thread_count)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx[3];
    for (int x = 0; x < 3; x++) ctx[x] = tu_context(x + 1, 96, 40);
    char desc[512], msg[1024];
    for (int dt = 0; dt < 2; dt++)
        for (int l = 0; l < N_LAYOUTS; l++) {
            tu_rng rng = tu_rng_make(seed + (uint64_t)(dt * N_LAYOUTS + l));
            ts_spec s = ts_spec_of(&layouts[l], dt ? FA_F64 : FA_F32, 16, 24);
            ts_spec_draw(&s, &rng, 150, 200, 1);
            ts_batch t;
            ts_make(&t, &s, &rng, 2.5);
            fa_params p = ts_mask_params(&masks[(l + dt) % N_MASKS]);
            ts_desc(&t, &p, desc, sizeof desc);
            cr_expect(ts_forward_same_bytes_on(ctx, 3, &p, &t, msg, sizeof msg),
                      "%s, blocks 96/40, seed %llu: %s", desc, (unsigned long long)seed, msg);
            cr_expect(ts_check_forward(&t, &p, msg, sizeof msg), "%s, blocks 96/40, seed %llu: %s", desc,
                      (unsigned long long)seed, msg);
            cr_expect(ts_forward_equals_dense_calls(ctx[0], &p, &t, msg, sizeof msg),
                      "%s, blocks 96/40, seed %llu: %s", desc, (unsigned long long)seed, msg);
            ts_free(&t);
        }
    for (int x = 0; x < 3; x++) fa_context_destroy(ctx[x]);
}

/* A decode step: one query per sequence against caches of very different lengths, used keys given
 * by seqused_k (a dense cache) or packed keys. Every sequence long enough splits its keys as a dense
 * call of it alone does (so the threads have chunks to take however few sequences there are): its
 * rows are bitwise those of that dense call, match the oracle, and do not depend on the thread
 * count; the partials of the split exist in the context (white-box: its row buffer). */
Test(seqs, decode_batch_splits_keys_as_dense_calls_do_on_any_thread_count)
{
    uint64_t seed = tu_test_seed();
    enum { DEC_BQ = 16, DEC_BK = 32, DEC_MAX_K = 1500 };
    fa_context *ctx[4];
    for (int x = 0; x < 4; x++) ctx[x] = tu_context(x + 1, DEC_BQ, DEC_BK);
    char desc[512], msg[1024];
    for (int dt = 0; dt < 2; dt++)
        for (int packed_k = 0; packed_k < 2; packed_k++) {
            tu_rng rng = tu_rng_make(seed + (uint64_t)(dt * 2 + packed_k));
            ts_spec s = {0};
            s.dtype = dt ? FA_F64 : FA_F32;
            s.batch = TS_MAX_SEQS, s.q_heads = 8, s.kv_heads = 2, s.dim = 32, s.dim_v = 24;
            s.packed_q = 1, s.keys = packed_k ? TS_KEYS_PACKED : TS_KEYS_DENSE, s.seqused = !packed_k;
            s.spare_rows = 1;
            ts_spec_draw(&s, &rng, 1, DEC_MAX_K, 0);
            int64_t longest = 0;
            for (int64_t b = 0; b < s.batch; b++) {
                s.q_len[b] = 1; /* one query each */
                int64_t keys = packed_k ? s.k_len[b] : s.k_used[b];
                if (keys > longest) longest = keys;
            }
            cr_assert_geq(longest, 4 * DEC_BK, "seed %llu: no sequence long enough to split",
                          (unsigned long long)seed);
            ts_batch t;
            ts_make(&t, &s, &rng, 2.5);
            fa_params p = FA_PARAMS_INIT;
            p.causal = packed_k ? FA_CAUSAL_BOTTOM_RIGHT : FA_CAUSAL_NONE;
            ts_desc(&t, &p, desc, sizeof desc);
            cr_assert_eq(ts_forward(ctx[0], &p, &t), FA_OK, "%s: %s", desc, fa_last_error());
            /* the item tables take under 64 bytes per sequence; the rest is partials */
            cr_expect_gt(ctx[0]->rows_bytes, (size_t)(64 * (s.batch + 2)),
                         "%s: a decode batch with %lld-key caches did not split its keys", desc,
                         (long long)longest);
            cr_expect(ts_check_forward(&t, &p, msg, sizeof msg), "%s, seed %llu: %s", desc,
                      (unsigned long long)seed, msg);
            cr_expect(ts_only_sequence_rows_written(&t, 0, msg, sizeof msg), "%s, seed %llu: %s", desc,
                      (unsigned long long)seed, msg);
            cr_expect(ts_forward_equals_dense_calls(ctx[0], &p, &t, msg, sizeof msg), "%s, seed %llu: %s",
                      desc, (unsigned long long)seed, msg);
            char same_msg[128];
            cr_expect(ts_forward_same_bytes_on(ctx, 4, &p, &t, same_msg, sizeof same_msg),
                      "%s, seed %llu: 1 to 4 threads: %s", desc, (unsigned long long)seed, same_msg);
            ts_free(&t);
        }
    for (int x = 0; x < 4; x++) fa_context_destroy(ctx[x]);
}

/* Sequences whose split-KV partials exceed the 16 MiB cap together run in waves (src/drivers/forward.c):
 * five sequences of 2 heads x 128 queries against 2048 keys, Dv = 256 and blocks of 64 split their
 * keys into 16 chunks each, about 4.2 MB of partials a sequence, so they take two waves. Each
 * sequence's rows are still bitwise those of its dense call, at every thread count, and the partial
 * buffer stays within the cap (white-box: the context's row buffer). */
Test(seqs, sequences_whose_partials_exceed_the_cap_run_in_waves)
{
    uint64_t seed = tu_test_seed();
    tu_rng rng = tu_rng_make(seed);
    fa_context *ctx[4];
    for (int x = 0; x < 4; x++) ctx[x] = tu_context(x + 1, 64, 64);
    ts_spec s = {0};
    s.dtype = FA_F32;
    s.batch = 5, s.q_heads = 2, s.kv_heads = 1, s.dim = 8, s.dim_v = 256;
    s.packed_q = 1, s.keys = TS_KEYS_PACKED;
    for (int64_t b = 0; b < s.batch; b++) s.q_len[b] = 128, s.k_len[b] = 2048;
    ts_batch t;
    ts_make(&t, &s, &rng, 2.0);
    fa_params p = FA_PARAMS_INIT;
    char desc[512], msg[1024];
    ts_desc(&t, &p, desc, sizeof desc);
    cr_assert_eq(ts_forward(ctx[0], &p, &t), FA_OK, "%s: %s", desc, fa_last_error());
    cr_expect_gt(ctx[0]->rows_bytes, (size_t)8 << 20, "%s: the sequences did not split as planned", desc);
    cr_expect_leq(ctx[0]->rows_bytes, ((size_t)16 << 20) + 64 * (size_t)(s.batch + 1),
                  "%s: %zu bytes of partials and tables", desc, ctx[0]->rows_bytes);
    cr_expect(ts_forward_equals_dense_calls(ctx[0], &p, &t, msg, sizeof msg), "%s, seed %llu: %s", desc,
              (unsigned long long)seed, msg);
    cr_expect(ts_forward_same_bytes_on(ctx, 4, &p, &t, msg, sizeof msg), "%s, seed %llu: 1 to 4 threads: %s",
              desc, (unsigned long long)seed, msg);
    ts_free(&t);
    for (int x = 0; x < 4; x++) fa_context_destroy(ctx[x]);
}
