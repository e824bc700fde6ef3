/* SPDX-License-Identifier: BSD-3-Clause */
/* The header's determinism promise: for a given P and layout, every output's bytes are the same on
 * every run and at every thread count, in every dtype (f64, f32, bf16, f16) and with dropout. Each
 * case runs the forward and the backward four times into canary-filled buffers: a 1-thread
 * context, the same again, a 2-thread context, and the default context on a fresh duplicate of the
 * communicator (new cached buffers), and compares every byte of
 * out, lse, dq, dk, dv and dsinks (guards and unwritten rows included) with the first run; then once
 * more with p in a struct of FA_STRUCT_SIZE_MAX bytes whose bytes past this build's fa_params are zero
 * (include/flashattn.h, "ABI": a newer header's p that uses nothing new reads as this one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

/* one case a line or two */
// clang-format off
static const mt_case cases[] = {
    {.name = "determinism-causal-gqa-sinks", .layout = FA_MPI_CONTIGUOUS, .split = MT_SPLIT_UNEVEN,
     .batch = 2, .q_heads = 4, .kv_heads = 2, .len = 150, .dim = 32, .dim_v = 16,
     .causal = FA_CAUSAL_TOP_LEFT, .sinks = 1},
    {.name = "determinism-window-alibi-zigzag", .layout = FA_MPI_ZIGZAG, .batch = 1, .q_heads = 4,
     .kv_heads = 2, .len = 192, .dim = 16, .dim_v = 16, .causal = FA_CAUSAL_TOP_LEFT, .windowed = 1,
     .window_left = 40, .window_right = -1, .alibi = 1},
    {.name = "determinism-bias-empty-last", .layout = FA_MPI_CONTIGUOUS, .split = MT_SPLIT_EMPTY_LAST,
     .batch = 1, .q_heads = 2, .kv_heads = 2, .len = 100, .dim = 16, .dim_v = 24, .bias = MT_BIAS_FULL},
    {.name = "determinism-sinks-bshd-zigzag", .layout = FA_MPI_ZIGZAG, .batch = 2, .q_heads = 2,
     .kv_heads = 1, .len = 144, .dim = 24, .dim_v = 24, .sinks = 1, .bshd = 1},
    {.name = "determinism-dropout-causal-gqa-zigzag", .layout = FA_MPI_ZIGZAG, .batch = 2, .q_heads = 4,
     .kv_heads = 2, .len = 96, .dim = 16, .dim_v = 16, .causal = FA_CAUSAL_TOP_LEFT, .dropout_p = 0.25},
    {.name = "determinism-dropout-bias-uneven", .layout = FA_MPI_CONTIGUOUS, .split = MT_SPLIT_UNEVEN,
     .batch = 1, .q_heads = 2, .kv_heads = 1, .len = 101, .dim = 16, .dim_v = 8, .bias = MT_BIAS_FULL,
     .sinks = 1, .dropout_p = 0.5},
};
// clang-format on

/* Forward then backward into l, with p (NULL: l's own); 1 when both returned FA_OK on every rank. */
static int run(const mt_env *env, fa_context *ctx, const mt_case *c, mt_local *l, const fa_params *p,
               const char *what)
{
    char call[128];
    if (!p) p = &l->p;
    mt_local_fill_canary(l);
    fa_status st = fa_mpi_forward(env->comm, c->layout, ctx, p, &l->q, &l->k, &l->v, &l->out, l->lse);
    snprintf(call, sizeof call, "fa_mpi_forward (%s)", what);
    if (!MT_EXPECT_STATUS(env, st, FA_OK, call)) return 0;
    st = fa_mpi_backward(env->comm, c->layout, ctx, p, &l->q, &l->k, &l->v, &l->out, &l->dout, l->lse, &l->dq,
                         &l->dk, &l->dv);
    snprintf(call, sizeof call, "fa_mpi_backward (%s)", what);
    return MT_EXPECT_STATUS(env, st, FA_OK, call);
}

static void expect_same_buf(const kit_buf *a, const kit_buf *b, const char *tensor, const char *what)
{
    size_t n = a->bytes + 2 * KIT_GUARD;
    if (!a->base || !memcmp(a->base, b->base, n)) return;
    size_t i = 0;
    while (a->base[i] == b->base[i]) i++;
    mt_fail(__FILE__, __LINE__, "%s: %s differs from the first run's at byte %zu of its buffer (%s)", what,
            tensor, i < KIT_GUARD ? 0 : i - KIT_GUARD,
            i < KIT_GUARD || i >= KIT_GUARD + a->bytes ? "a guard byte" : "data");
}

static void expect_same(const mt_local *a, const mt_local *b, const char *what)
{
    expect_same_buf(&a->out_buf, &b->out_buf, "out", what);
    expect_same_buf(&a->lse_buf, &b->lse_buf, "lse", what);
    expect_same_buf(&a->grad_buf[0], &b->grad_buf[0], "dq", what);
    expect_same_buf(&a->grad_buf[1], &b->grad_buf[1], "dk", what);
    expect_same_buf(&a->grad_buf[2], &b->grad_buf[2], "dv", what);
    expect_same_buf(&a->dsinks_buf, &b->dsinks_buf, "dsinks", what);
}

static void determinism_case(const mt_env *env, const mt_case *c, fa_dtype dtype)
{
    char desc[512];
    mt_case_str(c, dtype, env->size, desc, sizeof desc);
    uint64_t seed = mt_case_seed(env->seed, c->name, (int)dtype);
    mt_case_begin("%s, comm %s, case seed %llu", desc, env->comm_name, (unsigned long long)seed);
    mt_global g;
    mt_global_make(&g, c, dtype, seed);
    mt_shard s;
    mt_shard_make(&s, c, g.n, env->rank, env->size);
    mt_local first, again;
    mt_local_make(&first, &g, &s);
    mt_local_make(&again, &g, &s);

    if (run(env, env->ctx1, c, &first, NULL, "1 thread")) {
        if (run(env, env->ctx1, c, &again, NULL, "1 thread, repeated"))
            expect_same(&first, &again, "repeated run");
        if (run(env, env->ctx2, c, &again, NULL, "2 threads"))
            expect_same(&first, &again, "2 threads per rank");
        static union {
            fa_params p;
            unsigned char bytes[FA_STRUCT_SIZE_MAX];
        } larger;
        memset(&larger, 0, sizeof larger);
        larger.p = again.p;
        larger.p.struct_size = sizeof larger;
        if (run(env, env->ctx1, c, &again, &larger.p, "p of FA_STRUCT_SIZE_MAX bytes"))
            expect_same(&first, &again, "p in a larger struct");
        MPI_Comm dup;
        MPI_Comm_dup(env->comm, &dup);
        mt_env on_dup = *env;
        on_dup.comm = dup;
        on_dup.comm_name = "a duplicate";
        if (run(&on_dup, env->ctx, c, &again, NULL, "a duplicate communicator, default threads"))
            expect_same(&first, &again, "a duplicate communicator");
        MPI_Comm_free(&dup);
    }
    mt_local_free(&again);
    mt_local_free(&first);
    mt_shard_free(&s);
    mt_global_free(&g);
    mt_case_end();
}

void mt_run_determinism(const mt_env *env)
{
    static const fa_dtype dtypes[] = {FA_F64, FA_F32, FA_BF16, FA_F16};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int t = 0; t < 4; t++)
            if (mt_selected(env, cases[i].name)) determinism_case(env, &cases[i], dtypes[t]);
}
