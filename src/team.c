/* The parallel region every driver runs in. */
#include "team.h"

#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>

/* ---- fork ----
 * GNU libgomp keeps its worker threads in a pool that a fork() does not copy: in the child, the
 * first parallel region waits forever for threads that do not exist. So once this process has
 * run a parallel region, a forked child (and its children) run every call on the calling thread
 * alone. The items are the same, so the results are bitwise the same; only the speed differs. */
static atomic_int parallel_used, in_forked_child;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void after_fork_in_child(void)
{
    if (atomic_load(&parallel_used)) atomic_store(&in_forked_child, 1);
}

static void watch_forks(void)
{
    (void)pthread_atfork(NULL, NULL, after_fork_in_child);
}

/* The context's statistics describe the last call that succeeded: a failed call changes none. */
static fa_status record_call(fa_context *ctx, fa_bind mode, int bound, fa_status st)
{
    if (st == FA_OK) {
        ctx->last_bind = mode;
        ctx->last_bound_threads = bound;
    }
    return st;
}

/* Every item of every phase, in order, on the calling thread (thread 0's arena). */
static fa_status run_serially(fa_context *ctx, const fa_team_work *work)
{
    fa_arena *arena = &ctx->arenas[0];
    if (fa_arena_reserve(arena, work->scratch_bytes) != 0) return FA_ERR_NOMEM;
    for (int ph = 0; ph < work->phases; ph++)
        for (int64_t i = 0; i < work->phase[ph].items; i++) {
            fa_arena_reset(arena);
            work->phase[ph].run(work->job, arena, i);
        }
    return FA_OK;
}

fa_status fa_team_run(fa_context *ctx, const fa_team_work *work)
{
    fa_bind mode = fa_context_call_bind(ctx);
    int64_t most_items = 0;
    for (int ph = 0; ph < work->phases; ph++)
        if (work->phase[ph].items > most_items) most_items = work->phase[ph].items;
    if (most_items == 0) return record_call(ctx, mode, 0, FA_OK);
    pthread_once(&fork_once, watch_forks);
    if (atomic_load(&in_forked_child)) return record_call(ctx, FA_BIND_NONE, 0, run_serially(ctx, work));
    atomic_store(&parallel_used, 1);

    /* No more threads than items: an idle thread would only be placed and woken for nothing. */
    int threads = ctx->num_threads;
    if ((int64_t)threads > most_items) threads = (int)most_items;

    atomic_int bound = 0, out_of_memory = 0;
#pragma omp parallel num_threads(threads) default(none) shared(ctx, work, mode, bound, out_of_memory)
    {
        int tid = omp_get_thread_num();
        int pinned = mode != FA_BIND_NONE && fa_topology_bind(ctx->topology, mode, tid);
        if (pinned) atomic_fetch_add_explicit(&bound, 1, memory_order_relaxed);
        fa_arena *arena = &ctx->arenas[tid];
        if (fa_arena_reserve(arena, work->scratch_bytes) != 0)
            atomic_store_explicit(&out_of_memory, 1, memory_order_relaxed);
#pragma omp barrier
        if (!atomic_load_explicit(&out_of_memory, memory_order_relaxed)) {
            for (int ph = 0; ph < work->phases; ph++) {
                const fa_team_phase *phase = &work->phase[ph];
                /* the implicit barrier at the end of each loop orders the phases */
#pragma omp for schedule(dynamic, 1)
                for (int64_t i = 0; i < phase->items; i++) {
                    fa_arena_reset(arena);
                    phase->run(work->job, arena, i);
                }
            }
        }
        if (pinned) fa_topology_restore(ctx->topology, tid);
    }
    return record_call(ctx, mode, atomic_load(&bound), atomic_load(&out_of_memory) ? FA_ERR_NOMEM : FA_OK);
}
