/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_mpi_forward and fa_mpi_backward against the single-process calls on the whole sequence (f64)
 * and against the float64 oracle by the suite's f32 rule (f32) or the half suites' rule (bf16,
 * f16), for every rank's rows: the rules are in expect.h. ZIGZAG lengths are multiples of 24, so
 * that 2P divides them for P = 1..4. */
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "expect.h"

#define CONTIG FA_MPI_CONTIGUOUS
#define ZIGZAG FA_MPI_ZIGZAG
#define NONE   FA_CAUSAL_NONE
#define TL     FA_CAUSAL_TOP_LEFT
#define BR     FA_CAUSAL_BOTTOM_RIGHT

/* one case a line or two */
// clang-format off
static const mt_case cases[] = {
    {.name = "plain", .layout = CONTIG, .batch = 2, .q_heads = 2, .kv_heads = 2, .len = 96, .dim = 16,
     .dim_v = 16},
    {.name = "plain-zigzag", .layout = ZIGZAG, .batch = 2, .q_heads = 2, .kv_heads = 2, .len = 96, .dim = 16,
     .dim_v = 16},
    {.name = "causal-gqa-uneven", .layout = CONTIG, .split = MT_SPLIT_UNEVEN, .batch = 1, .q_heads = 4,
     .kv_heads = 2, .len = 101, .dim = 32, .dim_v = 24, .causal = TL},
    {.name = "causal-gqa-zigzag", .layout = ZIGZAG, .batch = 1, .q_heads = 4, .kv_heads = 2, .len = 192,
     .dim = 16, .dim_v = 32, .causal = TL},
    {.name = "causal-bottom-right-zigzag", .layout = ZIGZAG, .batch = 2, .q_heads = 2, .kv_heads = 1,
     .len = 96, .dim = 24, .dim_v = 8, .causal = BR},
    {.name = "causal-bottom-right-empty-last", .layout = CONTIG, .split = MT_SPLIT_EMPTY_LAST, .batch = 1,
     .q_heads = 4, .kv_heads = 2, .len = 77, .dim = 16, .dim_v = 16, .causal = BR},
    {.name = "empty-first-window", .layout = CONTIG, .split = MT_SPLIT_EMPTY_FIRST, .batch = 1, .q_heads = 2,
     .kv_heads = 2, .len = 90, .dim = 8, .dim_v = 12, .windowed = 1, .window_left = 6, .window_right = 2},
    /* a window far shorter than a shard: most key shards are invisible to most ranks */
    {.name = "window-skips-shards", .layout = CONTIG, .batch = 1, .q_heads = 4, .kv_heads = 2, .len = 240,
     .dim = 16, .dim_v = 16, .causal = TL, .windowed = 1, .window_left = 5, .window_right = -1},
    {.name = "window-skips-shards-zigzag", .layout = ZIGZAG, .batch = 1, .q_heads = 4, .kv_heads = 2,
     .len = 240, .dim = 16, .dim_v = 16, .causal = TL, .windowed = 1, .window_left = 5, .window_right = -1},
    {.name = "window-both-sides", .layout = CONTIG, .split = MT_SPLIT_UNEVEN, .batch = 1, .q_heads = 2,
     .kv_heads = 1, .len = 130, .dim = 32, .dim_v = 16, .windowed = 1, .window_left = 7, .window_right = 3},
    {.name = "window-both-sides-zigzag", .layout = ZIGZAG, .batch = 1, .q_heads = 2, .kv_heads = 2,
     .len = 144, .dim = 16, .dim_v = 16, .windowed = 1, .window_left = 4, .window_right = 4},
    {.name = "window-right-only-zigzag", .layout = ZIGZAG, .batch = 1, .q_heads = 2, .kv_heads = 1, .len = 96,
     .dim = 16, .dim_v = 16, .windowed = 1, .window_left = -1, .window_right = 3},
    /* every modifier at once, over an empty first shard */
    {.name = "all-modifiers-empty-first", .layout = CONTIG, .split = MT_SPLIT_EMPTY_FIRST, .batch = 1,
     .q_heads = 4, .kv_heads = 2, .len = 110, .dim = 16, .dim_v = 24, .causal = TL, .windowed = 1,
     .window_left = 20, .window_right = -1, .softcap = 8.0, .alibi = 1, .sinks = 1, .bias = MT_BIAS_FULL},
    {.name = "alibi-causal-zigzag", .layout = ZIGZAG, .batch = 1, .q_heads = 4, .kv_heads = 2, .len = 120,
     .dim = 16, .dim_v = 16, .causal = TL, .alibi = 1},
    {.name = "alibi-softcap-uneven", .layout = CONTIG, .split = MT_SPLIT_UNEVEN, .batch = 2, .q_heads = 2,
     .kv_heads = 2, .len = 88, .dim = 32, .dim_v = 32, .alibi = 1, .softcap = 5.0},
    {.name = "sinks-causal", .layout = CONTIG, .batch = 2, .q_heads = 4, .kv_heads = 2, .len = 100, .dim = 16,
     .dim_v = 16, .causal = TL, .sinks = 1},
    {.name = "sinks-window-zigzag", .layout = ZIGZAG, .batch = 1, .q_heads = 4, .kv_heads = 1, .len = 144,
     .dim = 16, .dim_v = 24, .causal = TL, .windowed = 1, .window_left = 9, .window_right = -1, .sinks = 1},
    {.name = "bias-uneven", .layout = CONTIG, .split = MT_SPLIT_UNEVEN, .batch = 2, .q_heads = 2,
     .kv_heads = 2, .len = 70, .dim = 16, .dim_v = 16, .bias = MT_BIAS_FULL},
    /* -inf bias entries, and rows that see no key through the bias (out 0, lse -inf or the sink) */
    {.name = "bias-masked-sinks-zigzag", .layout = ZIGZAG, .batch = 1, .q_heads = 4, .kv_heads = 2, .len = 96,
     .dim = 16, .dim_v = 16, .causal = TL, .bias = MT_BIAS_MASKED, .sinks = 1},
    {.name = "bias-masked-empty-last", .layout = CONTIG, .split = MT_SPLIT_EMPTY_LAST, .batch = 1,
     .q_heads = 2, .kv_heads = 1, .len = 66, .dim = 8, .dim_v = 16, .bias = MT_BIAS_MASKED},
    {.name = "bias-row-broadcast", .layout = CONTIG, .batch = 2, .q_heads = 2, .kv_heads = 1, .len = 64,
     .dim = 8, .dim_v = 8, .causal = BR, .bias = MT_BIAS_ROW},
    /* the first 3 rows see no key: row i sees j <= i - 3 */
    {.name = "diagonal-shift-window", .layout = CONTIG, .split = MT_SPLIT_UNEVEN, .batch = 1, .q_heads = 2,
     .kv_heads = 2, .len = 80, .dim = 16, .dim_v = 16, .causal = TL, .windowed = 1, .window_left = 10,
     .window_right = -1, .diagonal_shift = -3},
    {.name = "diagonal-shift-alibi-zigzag", .layout = ZIGZAG, .batch = 1, .q_heads = 2, .kv_heads = 1,
     .len = 96, .dim = 16, .dim_v = 16, .causal = TL, .diagonal_shift = 5, .alibi = 1},
    {.name = "bshd-views", .layout = CONTIG, .split = MT_SPLIT_UNEVEN, .batch = 2, .q_heads = 4,
     .kv_heads = 2, .len = 75, .dim = 16, .dim_v = 16, .causal = TL, .bshd = 1},
    {.name = "bshd-zigzag", .layout = ZIGZAG, .batch = 2, .q_heads = 4, .kv_heads = 2, .len = 72, .dim = 16,
     .dim_v = 8, .causal = TL, .bshd = 1},
    {.name = "copies-contiguous", .layout = CONTIG, .split = MT_SPLIT_UNEVEN, .batch = 1, .q_heads = 2,
     .kv_heads = 1, .len = 97, .dim = 32, .dim_v = 16, .causal = TL, .copy = 1},
    {.name = "no-lse", .layout = CONTIG, .split = MT_SPLIT_UNEVEN, .batch = 1, .q_heads = 4, .kv_heads = 2,
     .len = 90, .dim = 16, .dim_v = 16, .causal = TL, .no_lse = 1},
    {.name = "no-lse-zigzag", .layout = ZIGZAG, .batch = 1, .q_heads = 2, .kv_heads = 2, .len = 96, .dim = 16,
     .dim_v = 16, .causal = BR, .sinks = 1, .no_lse = 1},
    {.name = "tiny-zigzag", .layout = ZIGZAG, .batch = 1, .q_heads = 1, .kv_heads = 1, .len = 24, .dim = 8,
     .dim_v = 8, .causal = TL},
    {.name = "empty-sequence", .layout = CONTIG, .batch = 1, .q_heads = 2, .kv_heads = 1, .len = 0, .dim = 16,
     .dim_v = 16, .causal = TL},
    {.name = "empty-sequence-zigzag", .layout = ZIGZAG, .batch = 1, .q_heads = 2, .kv_heads = 1, .len = 0,
     .dim = 16, .dim_v = 16},
    /* several key tiles per shard */
    {.name = "long-causal-zigzag", .layout = ZIGZAG, .batch = 1, .q_heads = 2, .kv_heads = 1, .len = 384,
     .dim = 32, .dim_v = 32, .causal = TL},
    {.name = "long-contiguous", .layout = CONTIG, .batch = 1, .q_heads = 2, .kv_heads = 2, .len = 300,
     .dim = 32, .dim_v = 16},
    /* dropout over the ring: the mask of the global rows and keys, every dtype against the oracles
     * given fa_dropout_mask (f64 also against the single-process call) */
    {.name = "dropout-causal-gqa-zigzag", .layout = ZIGZAG, .batch = 2, .q_heads = 4, .kv_heads = 2,
     .len = 96, .dim = 16, .dim_v = 24, .causal = TL, .dropout_p = 0.3},
    {.name = "dropout-uneven-bias-alibi-window", .layout = CONTIG, .split = MT_SPLIT_UNEVEN, .batch = 1,
     .q_heads = 2, .kv_heads = 2, .len = 101, .dim = 16, .dim_v = 16, .windowed = 1, .window_left = 30,
     .window_right = 9, .alibi = 1, .bias = MT_BIAS_FULL, .dropout_p = 0.6},
    {.name = "dropout-empty-first-softcap", .layout = CONTIG, .split = MT_SPLIT_EMPTY_FIRST, .batch = 1,
     .q_heads = 2, .kv_heads = 1, .len = 90, .dim = 8, .dim_v = 8, .softcap = 5.0, .dropout_p = 0.1},
};
// clang-format on

void mt_run_case(const mt_env *env, const mt_case *c, fa_dtype dtype)
{
    char desc[512];
    mt_case_str(c, dtype, env->size, desc, sizeof desc);
    uint64_t seed = mt_case_seed(env->seed, c->name, (int)dtype);
    mt_case_begin("%s, comm %s, case seed %llu", desc, env->comm_name, (unsigned long long)seed);
    mt_global g;
    mt_global_make(&g, c, dtype, seed);
    mt_shard s;
    mt_shard_make(&s, c, g.n, env->rank, env->size);
    mt_local l;
    mt_local_make(&l, &g, &s);
    int backward = !c->no_lse;
    mt_refs r;
    mt_refs_compute(&r, env->ctx, &g, backward);

    fa_status st = fa_mpi_forward(env->comm, c->layout, env->ctx, &l.p, &l.q, &l.k, &l.v, &l.out,
                                  c->no_lse ? NULL : l.lse);
    /* the status check is collective, so every rank takes the same branch below */
    int ok = MT_EXPECT_STATUS(env, st, FA_OK, "fa_mpi_forward");
    if (ok) mt_expect_forward(&g, &s, &l, &r, c->no_lse);
    if (ok && backward) {
        st = fa_mpi_backward(env->comm, c->layout, env->ctx, &l.p, &l.q, &l.k, &l.v, &l.out, &l.dout, l.lse,
                             &l.dq, &l.dk, &l.dv);
        if (MT_EXPECT_STATUS(env, st, FA_OK, "fa_mpi_backward")) mt_expect_backward(env, &g, &s, &l, &r);
    }
    mt_refs_free(&r);
    mt_local_free(&l);
    mt_shard_free(&s);
    mt_global_free(&g);
    mt_case_end();
}

void mt_run_accuracy(const mt_env *env)
{
    static const fa_dtype dtypes[] = {FA_F64, FA_F32, FA_BF16, FA_F16};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int t = 0; t < 4; t++)
            if (mt_selected(env, cases[i].name)) mt_run_case(env, &cases[i], dtypes[t]);
}

void mt_run_accuracy_on_subcomm(const mt_env *env)
{
    static const char *names[] = {"causal-gqa-uneven", "sinks-window-zigzag", "bias-uneven"};
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if (!strcmp(cases[i].name, names[n]) && mt_selected(env, cases[i].name))
                mt_run_case(env, &cases[i], FA_F64);
}
