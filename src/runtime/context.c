/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_context: thread count, binding policy, block sizes, kernel table, arenas, stats. */
#include "runtime/context.h"

#include "api/diagnostic.h"
#include "api/params.h"
#include "runtime/dispatch.h"

#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* FLASHATTN_BIND replaces AUTO. FA_ERR_ARG, named in the diagnostic, for a value it does not know. */
static fa_status bind_from_env(const char *call, fa_bind *mode)
{
    const char *s = getenv("FLASHATTN_BIND");
    if (!s || !*s) return FA_OK;
    if (strcmp(s, "none") == 0)
        *mode = FA_BIND_NONE;
    else if (strcmp(s, "core") == 0)
        *mode = FA_BIND_CORE;
    else if (strcmp(s, "spread") == 0)
        *mode = FA_BIND_SPREAD;
    else if (strcmp(s, "auto") != 0)
        return fa_diag_fail(FA_ERR_ARG, call, "FLASHATTN_BIND=%s: expected auto, none, core or spread", s);
    return FA_OK;
}

/* opts' fields, each named in the diagnostic. */
static fa_status check_opts(const char *call, const fa_context_opts *o)
{
    if (o->num_threads < 0)
        return fa_diag_fail(FA_ERR_ARG, call,
                            "opts.num_threads = %d: expected 0 (automatic) or a positive count",
                            o->num_threads);
    if (o->bind < FA_BIND_AUTO || o->bind > FA_BIND_SPREAD)
        return fa_diag_fail(
            FA_ERR_ARG, call,
            "opts.bind = %d: expected FA_BIND_AUTO, FA_BIND_NONE, FA_BIND_CORE or FA_BIND_SPREAD",
            (int)o->bind);
    if (o->block_q < 0)
        return fa_diag_fail(FA_ERR_ARG, call, "opts.block_q = %d: expected 0 (automatic) or a positive size",
                            o->block_q);
    if (o->block_k < 0)
        return fa_diag_fail(FA_ERR_ARG, call, "opts.block_k = %d: expected 0 (automatic) or a positive size",
                            o->block_k);
    return FA_OK;
}

/* AUTO defers to the OpenMP runtime when the user configured its binding, and stays unbound when
 * there are more threads than cores (pinning two threads to one core would only slow them). */
static fa_bind resolve_auto(int num_threads, int allowed_cores)
{
    if (getenv("OMP_PROC_BIND") || getenv("OMP_PLACES")) return FA_BIND_NONE;
    if (num_threads > allowed_cores) return FA_BIND_NONE;
    return FA_BIND_CORE;
}

/* fa_context_create, with failures reported under `call` (the default context's is made for a
 * computing call). */
static fa_status create_context(const char *call, fa_context **out, const fa_context_opts *opts)
{
    if (!out) return fa_diag_fail(FA_ERR_NULL, call, "ctx is NULL: nowhere to return the context");
    fa_context_opts o;
    fa_status st = fa_context_opts_read(call, opts, &o);
    if (st == FA_OK) st = check_opts(call, &o);
    if (st != FA_OK) return st;
    fa_bind bind = o.bind;
    if (bind == FA_BIND_AUTO && (st = bind_from_env(call, &bind)) != FA_OK) return st;

    fa_kernels_resolved kernels;
    int rc = fa_kernels_select(call, &kernels);
    if (rc != FA_OK) return (fa_status)rc;

    fa_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return fa_diag_fail(FA_ERR_NOMEM, call, "out of memory for the context (%zu bytes)", sizeof *ctx);
    ctx->num_threads = o.num_threads > 0 ? o.num_threads : omp_get_max_threads();
    ctx->block_q = o.block_q;
    ctx->block_k = o.block_k;
    ctx->kernel_table = kernels;
    ctx->kernel_table.table.f32 = &ctx->kernel_table.f32; /* the copy's own sets */
    ctx->kernel_table.table.f64 = &ctx->kernel_table.f64;
    if (kernels.table.bf16) ctx->kernel_table.table.bf16 = &ctx->kernel_table.bf16;
    ctx->kernels = &ctx->kernel_table.table;
    ctx->cpu = fa_cpu_identify();
    atomic_flag_clear(&ctx->busy);

    st = fa_topology_create(&ctx->topology, ctx->num_threads);
    if (st != FA_OK)
        fa_diag_fail(st, call, "the machine topology could not be loaded (hwloc): %s", fa_status_str(st));
    if (st == FA_OK) {
        ctx->arenas = calloc((size_t)ctx->num_threads, sizeof *ctx->arenas);
        if (!ctx->arenas)
            st = fa_diag_fail(FA_ERR_NOMEM, call, "out of memory for %d arena descriptors", ctx->num_threads);
    }
    if (st != FA_OK) {
        fa_context_destroy(ctx);
        return st;
    }
    if (bind == FA_BIND_AUTO) bind = resolve_auto(ctx->num_threads, fa_topology_allowed_cores(ctx->topology));
    ctx->bind = bind;
    ctx->last_bind = bind;
    ctx->last_block_q = ctx->block_q;
    ctx->last_block_k = ctx->block_k;
    *out = ctx;
    return FA_OK;
}

fa_status fa_context_create(fa_context **out, const fa_context_opts *opts)
{
    static const char call[] = "fa_context_create";
    fa_diag_clear();
    return fa_diag_finish(create_context(call, out, opts), call);
}

void fa_context_destroy(fa_context *ctx)
{
    if (!ctx) return;
    if (ctx->arenas)
        for (int i = 0; i < ctx->num_threads; i++) fa_arena_free(&ctx->arenas[i]);
    free(ctx->arenas);
    free(ctx->rows);
    fa_topology_destroy(ctx->topology);
    free(ctx);
}

fa_status fa_context_stats(const fa_context *ctx, fa_stats *out)
{
    static const char call[] = "fa_context_stats";
    fa_diag_clear();
    if (!ctx) return fa_diag_fail(FA_ERR_NULL, call, "ctx is NULL");
    if (!out) return fa_diag_fail(FA_ERR_NULL, call, "out is NULL");
    fa_status st = fa_stats_check(call, out);
    if (st != FA_OK) return st;
    fa_stats s = FA_STATS_INIT;
    s.num_threads = ctx->num_threads;
    s.bind = ctx->last_bind;
    s.bound_threads = ctx->last_bound_threads;
    s.block_q = ctx->last_block_q;
    s.block_k = ctx->last_block_k;
    s.isa = ctx->kernels->name;
    s.backward_plan = ctx->last_backward_plan;
    for (int i = 0; i < ctx->num_threads; i++) {
        if (ctx->arenas[i].capacity > s.scratch_capacity) s.scratch_capacity = ctx->arenas[i].capacity;
        if (ctx->arenas[i].peak > s.scratch_peak) s.scratch_peak = ctx->arenas[i].peak;
    }
    fa_stats_write(out, &s);
    return FA_OK;
}

void fa_context_reset_stats(fa_context *ctx)
{
    if (!ctx) return;
    ctx->last_bound_threads = 0;
    for (int i = 0; i < ctx->num_threads; i++) fa_arena_clear_peak(&ctx->arenas[i]);
}

int fa_context_acquire(fa_context *ctx)
{
    return !atomic_flag_test_and_set_explicit(&ctx->busy, memory_order_acquire);
}

void fa_context_release(fa_context *ctx)
{
    atomic_flag_clear_explicit(&ctx->busy, memory_order_release);
}

fa_bind fa_context_call_bind(const fa_context *ctx)
{
    return omp_in_parallel() ? FA_BIND_NONE : ctx->bind;
}

int fa_context_call_cores(const fa_context *ctx)
{
    return omp_in_parallel() ? 0 : fa_topology_allowed_cores(ctx->topology);
}

int fa_context_reserve_rows(fa_context *ctx, size_t bytes)
{
    if (bytes <= ctx->rows_bytes) return 0;
    void *rows = malloc(bytes);
    if (!rows) return -1;
    free(ctx->rows);
    ctx->rows = rows;
    ctx->rows_bytes = bytes;
    return 0;
}

/* ---- the per-thread default context (ctx == NULL) ---- */

static pthread_key_t default_key;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static int default_key_ok;

static void destroy_default(void *ctx)
{
    fa_context_destroy(ctx);
}

static void make_default_key(void)
{
    default_key_ok = pthread_key_create(&default_key, destroy_default) == 0;
}

fa_status fa_default_context(const char *call, fa_context **out)
{
    pthread_once(&default_once, make_default_key);
    if (!default_key_ok)
        return fa_diag_fail(FA_ERR_RUNTIME, call,
                            "ctx = NULL: no thread-specific key for the default context");
    fa_context *ctx = pthread_getspecific(default_key);
    if (!ctx) {
        fa_status st = create_context(call, &ctx, NULL);
        if (st != FA_OK) return st;
        if (pthread_setspecific(default_key, ctx) != 0) {
            fa_context_destroy(ctx);
            return fa_diag_fail(FA_ERR_NOMEM, call,
                                "ctx = NULL: out of memory for the default context's key");
        }
    }
    *out = ctx;
    return FA_OK;
}

/* Thread-exit destructors do not run for the thread that calls exit(); free its context here so
 * leak checkers see a clean exit. */
__attribute__((destructor)) static void destroy_main_default(void)
{
    if (!default_key_ok) return;
    fa_context *ctx = pthread_getspecific(default_key);
    if (ctx) {
        pthread_setspecific(default_key, NULL);
        fa_context_destroy(ctx);
    }
}
