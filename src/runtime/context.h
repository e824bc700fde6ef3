/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_context internals: what a call needs from its context. */
#ifndef FA_CONTEXT_H
#define FA_CONTEXT_H

#include <stdatomic.h>

#include "flashattn.h"
#include "kernels/kernels.h"
#include "runtime/arena.h"
#include "runtime/cpu_features.h"
#include "runtime/topology.h"

struct fa_context {
    int num_threads;
    fa_bind bind;              /* after resolving AUTO and FLASHATTN_BIND at create */
    int block_q, block_k;      /* as configured; 0 = automatic per call */
    const fa_kernels *kernels; /* &kernel_table.table */
    fa_kernels_resolved kernel_table;
    fa_topology *topology;
    fa_cpu_model cpu; /* read at create: the block-size table's key (block_sizes.c) */
    fa_arena *arenas; /* [num_threads], each owned by one team thread */
    void *rows;       /* per-problem values, grown on demand, kept until destroy: the split-KV
                               * forward's partial results, or the backward's delta and wavefront
                               * counters (one call at a time, so they share it) */
    size_t rows_bytes;
    atomic_flag busy;  /* set while a call runs */
    int backward_plan; /* fa_backward_plan: AUTO (0, what create sets); only the tests' seam,
                               * fa_backward_force_plan (backward.h), sets another */
    /* stats of the last call */
    fa_bind last_bind;
    int last_bound_threads;
    int last_block_q, last_block_k;
    size_t last_scratch_plan; /* the bytes of one arena the last call's items planned (plan/scratch.h) */
    const char *last_backward_plan; /* a static name; NULL before any backward */
};

/* Takes the context for one call; 0 if another call holds it. */
int fa_context_acquire(fa_context *ctx);
void fa_context_release(fa_context *ctx);

/* The calling thread's default context, created on first use (NULL ctx in the API). A failure to
 * create it is reported in the diagnostic under `call`, the public call that needed it. */
fa_status fa_default_context(const char *call, fa_context **out);

/* Makes ctx->rows hold at least `bytes`, growing only when it must. 0 on success, -1 on failure
 * (the old buffer is then kept). */
int fa_context_reserve_rows(fa_context *ctx, size_t bytes);

/* The binding policy for a call from here: NONE from inside an active parallel region, where
 * pinning every user thread's team to the same first cores would fight the user. */
fa_bind fa_context_call_bind(const fa_context *ctx);

/* The cores a call from here may count on having to itself: the process's allowed cores, or 0
 * from inside an active parallel region, whose other threads are running on them too. */
int fa_context_call_cores(const fa_context *ctx);

#endif
