/* SPDX-License-Identifier: BSD-3-Clause */
/* The parallel region every driver runs in. */
#include "runtime/team.h"

#include <fcntl.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- fork ----
 * GNU libgomp keeps its worker threads in a pool that fork() does not copy: in the child, the
 * first parallel region waits forever for threads that do not exist. The pool may come from the
 * library's own calls or from the user's OpenMP regions, and neither is visible from here. So the
 * parent's thread count is read just before every fork: a child of a process that had more than
 * one thread (or whose count could not be read) runs every call on the calling thread alone, and
 * so do its own children. The items are the same, so the results are bitwise the same; only the
 * speed differs. A child of a single-threaded process keeps its threads. */
static atomic_int threads_at_fork, in_forked_child;

/* The calling process's thread count from /proc/self/stat (field 20), or 0 when unreadable. */
static int process_threads(void)
{
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    for (int field = 2; p && field < 20; field++) p = strchr(p + 1, ' ');
    return p ? atoi(p + 1) : 0;
}

static void before_fork(void)
{
    atomic_store(&threads_at_fork, process_threads());
}

static void after_fork_in_child(void)
{
    if (atomic_load(&threads_at_fork) != 1) atomic_store(&in_forked_child, 1);
}

/* Armed when the library is loaded, so that forks before its first call are seen too. */
__attribute__((constructor)) static void watch_forks(void)
{
    (void)pthread_atfork(before_fork, NULL, after_fork_in_child);
}

/* The context's statistics describe the last call that succeeded: a failed call changes none. */
static fa_status record_call(fa_context *ctx, fa_bind mode, int bound, size_t plan, fa_status st)
{
    if (st == FA_OK) {
        ctx->last_bind = mode;
        ctx->last_bound_threads = bound;
        ctx->last_scratch_plan = plan;
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

static void reserve_only(const void *job, fa_arena *arena, int64_t index)
{
    (void)job, (void)arena, (void)index;
}

fa_status fa_team_reserve(fa_context *ctx, size_t scratch_bytes)
{
    /* one item per thread: fa_team_run starts every thread, and each reserves its arena */
    fa_team_work work = {.scratch_bytes = scratch_bytes,
                         .job = NULL,
                         .phases = 1,
                         .phase = {{ctx->num_threads, reserve_only}}};
    return fa_team_run(ctx, &work);
}

fa_status fa_team_run(fa_context *ctx, const fa_team_work *work)
{
    fa_bind mode = fa_context_call_bind(ctx);
    int64_t most_items = 0;
    for (int ph = 0; ph < work->phases; ph++)
        if (work->phase[ph].items > most_items) most_items = work->phase[ph].items;
    if (most_items == 0) return record_call(ctx, mode, 0, 0, FA_OK);
    if (atomic_load(&in_forked_child))
        return record_call(ctx, FA_BIND_NONE, 0, work->scratch_bytes, run_serially(ctx, work));

    /* No more threads than items: an idle thread would only be placed and woken for nothing. */
    int threads = ctx->num_threads;
    if ((int64_t)threads > most_items) threads = (int)most_items;

    atomic_int bound = 0, out_of_memory = 0;
#pragma omp parallel num_threads(threads) default(none) shared(ctx, work, mode, bound, out_of_memory)
    {
        /* A private copy of the work, taken before the first barrier: after the last loop's barrier
         * no thread reads the caller's stack again, which is about to be reused for the next call
         * (ThreadSanitizer flagged the phase-count read there with nested teams). */
        const fa_team_work mine = *work;
        int tid = omp_get_thread_num();
        int pinned = mode != FA_BIND_NONE && fa_topology_bind(ctx->topology, mode, tid);
        if (pinned) atomic_fetch_add_explicit(&bound, 1, memory_order_relaxed);
        fa_arena *arena = &ctx->arenas[tid];
        if (fa_arena_reserve(arena, mine.scratch_bytes) != 0)
            atomic_store_explicit(&out_of_memory, 1, memory_order_relaxed);
#pragma omp barrier
        if (!atomic_load_explicit(&out_of_memory, memory_order_relaxed)) {
            for (int ph = 0; ph < mine.phases; ph++) {
                const fa_team_phase *phase = &mine.phase[ph];
                /* the implicit barrier at the end of each loop orders the phases */
#pragma omp for schedule(dynamic, 1)
                for (int64_t i = 0; i < phase->items; i++) {
                    fa_arena_reset(arena);
                    phase->run(mine.job, arena, i);
                }
            }
        }
        if (pinned) fa_topology_restore(ctx->topology, tid);
    }
    return record_call(ctx, mode, atomic_load(&bound), work->scratch_bytes,
                       atomic_load(&out_of_memory) ? FA_ERR_NOMEM : FA_OK);
}

void fa_team_wait_until(atomic_int *counter, int value)
{
    for (int spin = 0; atomic_load_explicit(counter, memory_order_acquire) != value; spin++) {
        if (spin < 256) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        } else {
            sched_yield();
        }
    }
}
