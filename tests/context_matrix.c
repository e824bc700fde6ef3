/* SPDX-License-Identifier: BSD-3-Clause */
/* The determinism tests' thread count × binding matrix; see context_matrix.h. */
#include "context_matrix.h"

#include <criterion/criterion.h>

static const int thread_counts[CM_THREAD_COUNTS] = {1, 2, 3, 4, 7};
static const fa_bind binds[CM_BINDS] = {FA_BIND_NONE, FA_BIND_CORE, FA_BIND_SPREAD, FA_BIND_AUTO};

int cm_threads(int x)
{
    return thread_counts[x / CM_BINDS];
}

fa_bind cm_bind(int x)
{
    return binds[x % CM_BINDS];
}

void cm_create(fa_context *ctx[CM_CONTEXTS], int block_q, int block_k)
{
    for (int x = 0; x < CM_CONTEXTS; x++) {
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.num_threads = cm_threads(x);
        o.bind = cm_bind(x);
        o.block_q = block_q;
        o.block_k = block_k;
        fa_status st = fa_context_create(&ctx[x], &o);
        cr_assert_eq(st, FA_OK, "create(num_threads %d, bind %d): status %d", o.num_threads, (int)o.bind, st);
    }
}

void cm_destroy(fa_context *ctx[CM_CONTEXTS])
{
    for (int x = 0; x < CM_CONTEXTS; x++) fa_context_destroy(ctx[x]);
}
