/* SPDX-License-Identifier: BSD-3-Clause */
/* Determinism with bf16 and f16 tensors (include/flashattn.h, "Determinism" and
 * fa_backward's): out, lse, dq, dk, dv (and dsinks) are the same bytes at 1, 2, 3 and 4 threads,
 * for bf16/bf16, f16/f16 and f32 queries over a bf16 or f16 KV cache, on automatic blocks and on
 * odd fixed ones (13/24), over shapes that cut the work differently: more items than threads, GQA
 * and MQA, one long head (the backward's per-key-block plans), and a decode step whose keys the
 * forward splits.
 * And a batch of packed sequences (fa_seqs: cu_seqlens_q, cu_seqlens_k) in half types: each
 * sequence's rows of out, lse, dq and its keys' rows of dk, dv are bitwise those of a dense call of
 * that sequence alone with the same block sizes (the header's promise for fa_seqs, which
 * test_seqs.c holds the backward to as well), at every thread count. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half_cases.h"
#include "half_util.h"

enum { MAX_THREADS = 4 };

typedef struct {
    int64_t batch, q_heads, kv_heads, q_len, kv_len, dim, dim_v;
    fa_causal causal;
    int sinks;
} inv_case;

static const inv_case cases[] = {
    {2, 4, 2, 100, 110, 32, 24, FA_CAUSAL_NONE, 0},         /* more items than threads, GQA */
    {1, 4, 1, 110, 100, 32, 24, FA_CAUSAL_TOP_LEFT, 1},     /* MQA, sinks and dsinks */
    {1, 1, 1, 300, 300, 16, 16, FA_CAUSAL_BOTTOM_RIGHT, 0}, /* one head: the work is cut by blocks */
    {1, 4, 2, 1, 2000, 64, 48, FA_CAUSAL_NONE, 0},          /* a decode step: the forward splits the keys */
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static void contexts(fa_context *ctx[MAX_THREADS], int block_q, int block_k)
{
    for (int t = 0; t < MAX_THREADS; t++) {
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.num_threads = t + 1;
        o.bind = FA_BIND_NONE;
        o.block_q = block_q;
        o.block_k = block_k;
        cr_assert_eq(fa_context_create(&ctx[t], &o), FA_OK, "%d threads: %s", t + 1, fa_last_error());
    }
}

static void destroy(fa_context *ctx[MAX_THREADS])
{
    for (int t = 0; t < MAX_THREADS; t++) fa_context_destroy(ctx[t]);
}

static float *sinks_for(int64_t heads, tu_rng *rng)
{
    float *s = malloc(sizeof(float) * (size_t)(heads + 1));
    if (!s) abort();
    for (int64_t h = 0; h < heads; h++) s[h] = (float)tu_rng_uniform(rng, -1.0, 3.0);
    return s;
}

static void expect_same(const char *what, const fa_tensor *a, const fa_tensor *b, int threads,
                        const char *desc)
{
    int64_t where = -1;
    cr_expect(hu_views_bitwise_equal(a, b, &where),
              "%s, blocks as above: %s at %d threads differs from 1 thread "
              "at flat index %lld",
              desc, what, threads, (long long)where);
}

static void run_pair(fa_dtype qt, fa_dtype kt)
{
    uint64_t seed = tu_test_seed();
    static const int blocks[2][2] = {{0, 0}, {13, 24}};
    for (int bl = 0; bl < 2; bl++) {
        fa_context *ctx[MAX_THREADS];
        contexts(ctx, blocks[bl][0], blocks[bl][1]);
        for (int c = 0; c < N_CASES; c++) {
            const inv_case *ic = &cases[c];
            kit_shape s = {qt,        kt,         ic->batch, ic->q_heads, ic->kv_heads,
                           ic->q_len, ic->kv_len, ic->dim,   ic->dim_v,   c & 1};
            kit_problem pr[MAX_THREADS];
            float *dsinks[MAX_THREADS] = {0}, *sinks = NULL;
            fa_params p = FA_PARAMS_INIT;
            p.causal = ic->causal;
            char desc[400];
            for (int t = 0; t < MAX_THREADS; t++) {
                tu_rng rng = tu_rng_make(seed + (uint64_t)c); /* the same inputs for every thread count */
                hu_make(&pr[t], &s, &rng, 2.5);
                if (ic->sinks && t == 0) sinks = sinks_for(s.q_heads, &rng);
            }
            p.sinks = sinks;
            hu_desc(&s, &p, desc, sizeof desc);
            for (int t = 0; t < MAX_THREADS; t++) {
                fa_params pt = p;
                if (ic->sinks) {
                    dsinks[t] = calloc((size_t)s.q_heads, sizeof(float));
                    pt.dsinks = dsinks[t];
                }
                fa_status st = hu_forward(ctx[t], &pt, &pr[t]);
                cr_assert_eq(st, FA_OK, "%s, blocks %d/%d, %d threads: forward status %d (%s)", desc,
                             blocks[bl][0], blocks[bl][1], t + 1, st, fa_last_error());
                st = hu_backward(ctx[t], &pt, &pr[t]);
                cr_assert_eq(st, FA_OK, "%s, blocks %d/%d, %d threads: backward status %d (%s)", desc,
                             blocks[bl][0], blocks[bl][1], t + 1, st, fa_last_error());
            }
            char full[480];
            snprintf(full, sizeof full, "%s, blocks %d/%d, seed %llu", desc, blocks[bl][0], blocks[bl][1],
                     (unsigned long long)(seed + (uint64_t)c));
            fa_tensor lse0 = fa_tensor_bhsd(pr[0].lse, FA_F32, s.batch, s.q_heads, s.q_len, 1);
            for (int t = 1; t < MAX_THREADS; t++) {
                fa_tensor lse = fa_tensor_bhsd(pr[t].lse, FA_F32, s.batch, s.q_heads, s.q_len, 1);
                expect_same("out", &pr[0].t[KIT_OUT], &pr[t].t[KIT_OUT], t + 1, full);
                expect_same("lse", &lse0, &lse, t + 1, full);
                expect_same("dq", &pr[0].t[KIT_DQ], &pr[t].t[KIT_DQ], t + 1, full);
                expect_same("dk", &pr[0].t[KIT_DK], &pr[t].t[KIT_DK], t + 1, full);
                expect_same("dv", &pr[0].t[KIT_DV], &pr[t].t[KIT_DV], t + 1, full);
                if (ic->sinks)
                    cr_expect(memcmp(dsinks[0], dsinks[t], sizeof(float) * (size_t)s.q_heads) == 0,
                              "%s: dsinks at %d threads differs from 1 thread", full, t + 1);
                cr_expect(kit_problem_guards_intact(&pr[t]), "%s, %d threads: wrote outside a tensor", full,
                          t + 1);
            }
            for (int t = 0; t < MAX_THREADS; t++) {
                kit_problem_free(&pr[t]);
                free(dsinks[t]);
            }
            free(sinks);
        }
        destroy(ctx);
    }
}

Test(half_invariance, bf16_outputs_and_gradients_bitwise_equal_at_1_to_4_threads)
{
    run_pair(FA_BF16, FA_BF16);
}

Test(half_invariance, f16_outputs_and_gradients_bitwise_equal_at_1_to_4_threads)
{
    run_pair(FA_F16, FA_F16);
}

Test(half_invariance, f32_queries_over_bf16_kv_outputs_and_gradients_bitwise_equal_at_1_to_4_threads)
{
    run_pair(FA_F32, FA_BF16);
}

Test(half_invariance, f32_queries_over_f16_kv_outputs_and_gradients_bitwise_equal_at_1_to_4_threads)
{
    run_pair(FA_F32, FA_F16);
}

/* ---- packed sequences against dense calls ------------------------------------------------- */

/* Query and key lengths of the sequences: a sequence without keys, one of one query and one key,
 * one with more queries than keys, a decode step over more than 4·16 keys (the forward splits its
 * keys), one without queries, and longer ones with odd lengths. Blocks of 16 x 16. */
enum { SEQS = 7, BQ = 16, BK = 16 };
static const int64_t seq_q[SEQS] = {5, 1, 40, 1, 0, 33, 17};
static const int64_t seq_k[SEQS] = {0, 1, 9, 70, 12, 50, 63};

static void seq_params(fa_params *p, int variant, float *sinks, float *slopes, int64_t heads)
{
    *p = (fa_params)FA_PARAMS_INIT;
    if (variant == 0) {
        p->causal = FA_CAUSAL_BOTTOM_RIGHT;
        return;
    }
    p->causal = FA_CAUSAL_TOP_LEFT;
    p->window_left = 9;
    p->softcap = 20.0;
    for (int64_t h = 0; h < heads; h++)
        slopes[h] = (float)(0.25 / (double)(h + 1)), sinks[h] = 0.5f * (float)h;
    p->alibi_slopes = slopes;
    p->sinks = sinks;
}

static void run_packed(fa_dtype qt, fa_dtype kt, int variant, fa_context *ctx[MAX_THREADS], uint64_t seed)
{
    int64_t cu_q[SEQS + 1] = {0}, cu_k[SEQS + 1] = {0};
    for (int b = 0; b < SEQS; b++) cu_q[b + 1] = cu_q[b] + seq_q[b], cu_k[b + 1] = cu_k[b] + seq_k[b];
    enum { HQ = 4, HKV = 2, D = 24, DV = 16 };
    float sinks[HQ], slopes[HQ];
    fa_params p;
    seq_params(&p, variant, sinks, slopes, HQ);
    fa_seqs seqs = FA_SEQS_INIT;
    seqs.batch = SEQS;
    seqs.cu_seqlens_q = cu_q;
    seqs.cu_seqlens_k = cu_k;
    fa_params pp = p;
    pp.seqs = &seqs;
    /* token-major [1][total][H][D], as varlen batches are laid out */
    kit_shape ps = {qt, kt, 1, HQ, HKV, cu_q[SEQS], cu_k[SEQS], D, DV, 1};
    kit_problem packed[MAX_THREADS];
    char desc[400];
    hu_desc(&ps, &p, desc, sizeof desc);
    for (int t = 0; t < MAX_THREADS; t++) {
        tu_rng rng = tu_rng_make(seed);
        hu_make(&packed[t], &ps, &rng, 2.5);
        fa_status st = hu_forward(ctx[t], &pp, &packed[t]);
        cr_assert_eq(st, FA_OK, "packed %s, %d threads: forward status %d (%s)", desc, t + 1, st,
                     fa_last_error());
        st = hu_backward(ctx[t], &pp, &packed[t]);
        cr_assert_eq(st, FA_OK, "packed %s, %d threads: backward status %d (%s)", desc, t + 1, st,
                     fa_last_error());
    }
    fa_tensor lse0 = fa_tensor_bhsd(packed[0].lse, FA_F32, 1, HQ, ps.q_len, 1);
    for (int t = 1; t < MAX_THREADS; t++) {
        fa_tensor lse = fa_tensor_bhsd(packed[t].lse, FA_F32, 1, HQ, ps.q_len, 1);
        static const int outs[4] = {KIT_OUT, KIT_DQ, KIT_DK, KIT_DV};
        static const char *names[4] = {"out", "dq", "dk", "dv"};
        for (int x = 0; x < 4; x++) {
            int64_t where = -1;
            cr_expect(hu_views_bitwise_equal(&packed[0].t[outs[x]], &packed[t].t[outs[x]], &where),
                      "packed %s, seed %llu: %s at %d threads differs from 1 thread at flat index %lld", desc,
                      (unsigned long long)seed, names[x], t + 1, (long long)where);
        }
        int64_t where = -1;
        cr_expect(hu_views_bitwise_equal(&lse0, &lse, &where),
                  "packed %s, seed %llu: lse at %d threads differs from 1 thread at %lld", desc,
                  (unsigned long long)seed, t + 1, (long long)where);
    }
    /* each sequence alone, dense, on the 2-thread context (same blocks) */
    kit_problem *pk = &packed[0];
    for (int b = 0; b < SEQS; b++) {
        kit_shape s = {qt, kt, 1, HQ, HKV, seq_q[b], seq_k[b], D, DV, 0};
        tu_rng rng = tu_rng_make(seed);
        kit_problem one;
        hu_make(&one, &s, &rng, 2.5);
        hu_copy_rows(&one.t[KIT_Q], 0, 0, &pk->t[KIT_Q], 0, cu_q[b], seq_q[b]);
        hu_copy_rows(&one.t[KIT_DOUT], 0, 0, &pk->t[KIT_DOUT], 0, cu_q[b], seq_q[b]);
        hu_copy_rows(&one.t[KIT_K], 0, 0, &pk->t[KIT_K], 0, cu_k[b], seq_k[b]);
        hu_copy_rows(&one.t[KIT_V], 0, 0, &pk->t[KIT_V], 0, cu_k[b], seq_k[b]);
        cr_assert_eq(hu_forward(ctx[1], &p, &one), FA_OK, "sequence %d alone: %s", b, fa_last_error());
        cr_assert_eq(hu_backward(ctx[1], &p, &one), FA_OK, "sequence %d alone: %s", b, fa_last_error());
        fa_tensor lse_one = fa_tensor_bhsd(one.lse, FA_F32, 1, HQ, seq_q[b], 1);
        char where[96];
        struct {
            const char *name;
            const fa_tensor *packed, *alone;
            int64_t first, rows;
        } parts[5] = {{"out", &pk->t[KIT_OUT], &one.t[KIT_OUT], cu_q[b], seq_q[b]},
                      {"lse", &lse0, &lse_one, cu_q[b], seq_q[b]},
                      {"dq", &pk->t[KIT_DQ], &one.t[KIT_DQ], cu_q[b], seq_q[b]},
                      {"dk", &pk->t[KIT_DK], &one.t[KIT_DK], cu_k[b], seq_k[b]},
                      {"dv", &pk->t[KIT_DV], &one.t[KIT_DV], cu_k[b], seq_k[b]}};
        for (int x = 0; x < 5; x++)
            cr_expect(
                hu_rows_bitwise_equal(parts[x].packed, 0, parts[x].first, parts[x].alone, 0, 0, parts[x].rows,
                                      where, sizeof where),
                "packed %s, seed %llu: sequence %d (Nq %lld, Nk %lld): %s differs from the dense call of "
                "it alone at %s",
                desc, (unsigned long long)seed, b, (long long)seq_q[b], (long long)seq_k[b], parts[x].name,
                where);
        kit_problem_free(&one);
    }
    for (int t = 0; t < MAX_THREADS; t++) kit_problem_free(&packed[t]);
}

Test(half_invariance, packed_sequences_are_bitwise_dense_calls_per_sequence_at_1_to_4_threads)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx[MAX_THREADS];
    contexts(ctx, BQ, BK);
    for (int pair = 0; pair < HC_DTYPE_PAIRS; pair++)
        for (int variant = 0; variant < 2; variant++)
            run_packed(hc_dtype_pairs[pair][0], hc_dtype_pairs[pair][1], variant, ctx,
                       seed + (uint64_t)(2 * pair + variant));
    destroy(ctx);
}
