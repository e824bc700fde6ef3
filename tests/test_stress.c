/* SPDX-License-Identifier: BSD-3-Clause */
/* Many user threads at once, and a process restricted to fewer CPUs than the machine has.
 *
 * Stress: 16 pthreads x 50 rounds, each round one training step (fa_forward then fa_backward) on
 * the thread's own buffers, cycling through the problems of runtime_util.c (f32 and f64, every
 * causal mode, GQA and MQA, every layout, two split-KV decode shapes). Each thread either owns a
 * context (1 or 2 threads, every binding policy; 16 OpenMP teams on a 2-core machine oversubscribe
 * it, which is the point) or passes ctx = NULL. Every step's output storage must equal the serial
 * run's byte for byte (include/flashattn.h: identical bytes for every thread count, binding and
 * repetition). Worker threads only count; the main thread asserts (Criterion's rule).
 *
 * Restricted: placements computed for a process whose affinity is narrower than the machine stay
 * inside it, and calls bind inside it. */
#include <criterion/criterion.h>
#include <hwloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_util.h"
#include "runtime/topology.h"

enum { STRESS_THREADS = 16, STRESS_ROUNDS = 50 };

static const fa_bind stress_binds[4] = {FA_BIND_AUTO, FA_BIND_NONE, FA_BIND_CORE, FA_BIND_SPREAD};

typedef struct {
    int id;
    int own_context;
    const rt_run *expected; /* [RT_CASES], read-only, shared */
    pthread_barrier_t *start;
    rt_run runs[RT_CASES]; /* this thread's buffers */
    long steps, failed, mismatches;
    fa_status first_status;
    int first_failed_case, first_failed_round, first_mismatch_case, first_mismatch_round;
} stress_worker;

static void *stress_main(void *arg)
{
    stress_worker *w = arg;
    fa_context *ctx = NULL;
    fa_status st = FA_OK;
    if (w->own_context) {
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.num_threads = 1 + w->id % 2;
        o.bind = stress_binds[(w->id / 2) % 4];
        st = fa_context_create(&ctx, &o);
    }
    pthread_barrier_wait(w->start); /* every thread starts its rounds together */
    for (int round = 0; round < STRESS_ROUNDS; round++) {
        int c = (w->id + round) % RT_CASES;
        fa_status s = st == FA_OK ? rt_step(ctx, &w->runs[c]) : st;
        w->steps++;
        if (s != FA_OK) {
            if (w->failed++ == 0) {
                w->first_status = s;
                w->first_failed_case = c;
                w->first_failed_round = round;
            }
        } else if (!rt_outputs_equal(&w->expected[c], &w->runs[c])) {
            if (w->mismatches++ == 0) {
                w->first_mismatch_case = c;
                w->first_mismatch_round = round;
            }
        }
    }
    fa_context_destroy(ctx);
    return NULL;
}

static void stress(int own_context)
{
    uint64_t seed = tu_test_seed();
    cr_assert(tu_alloc_counting_active(), "the allocation wrappers are not linked in");
    rt_run *expected = calloc(RT_CASES, sizeof *expected);
    stress_worker *w = calloc(STRESS_THREADS, sizeof *w);
    cr_assert(expected && w);
    for (int c = 0; c < RT_CASES; c++) {
        char msg[1024];
        rt_make(&expected[c], &rt_cases[c], seed + (uint64_t)c);
        cr_assert(rt_serial(&expected[c], 1, msg, sizeof msg), "seed %llu: %s", (unsigned long long)seed,
                  msg);
    }
    for (int t = 0; t < STRESS_THREADS; t++) {
        w[t].id = t;
        w[t].own_context = own_context;
        w[t].expected = expected;
        for (int c = 0; c < RT_CASES; c++) rt_make(&w[t].runs[c], &rt_cases[c], seed + (uint64_t)c);
    }
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, STRESS_THREADS);
    pthread_t th[STRESS_THREADS];
    int started = 0;

    /* No Criterion assert between these two counts (its macros free what its library allocated):
     * only the threads' contexts - their own, or the default contexts freed at thread exit. */
    tu_alloc_count c0 = tu_alloc_count_now();
    for (int t = 0; t < STRESS_THREADS; t++) {
        w[t].start = &start;
        if (pthread_create(&th[t], NULL, stress_main, &w[t]) != 0) break;
        started++;
    }
    if (started < STRESS_THREADS) abort(); /* the barrier would wait forever */
    for (int t = 0; t < STRESS_THREADS; t++) pthread_join(th[t], NULL);
    tu_alloc_count c1 = tu_alloc_count_now();
    pthread_barrier_destroy(&start);

    long steps = 0, failed = 0, mismatches = 0;
    for (int t = 0; t < STRESS_THREADS; t++) {
        steps += w[t].steps;
        failed += w[t].failed;
        mismatches += w[t].mismatches;
    }
    long leaked = (c1.allocs - c0.allocs) - (c1.frees - c0.frees);
    fprintf(stderr,
            "[stress] %s: %d threads x %d rounds: %ld mismatches (%ld forward+backward steps, %ld failed; "
            "allocations - frees = %ld)\n",
            own_context ? "own contexts" : "ctx = NULL", STRESS_THREADS, STRESS_ROUNDS, mismatches, steps,
            failed, leaked);
    for (int t = 0; t < STRESS_THREADS; t++) {
        cr_expect_eq(w[t].failed, 0, "thread %d: %ld failed steps, first %s on case \"%s\" in round %d", t,
                     w[t].failed, fa_status_str(w[t].first_status), rt_cases[w[t].first_failed_case].name,
                     w[t].first_failed_round);
        cr_expect_eq(
            w[t].mismatches, 0,
            "thread %d, seed %llu: %ld steps differ from the serial run, first case \"%s\" in round %d", t,
            (unsigned long long)seed, w[t].mismatches, rt_cases[w[t].first_mismatch_case].name,
            w[t].first_mismatch_round);
    }
    cr_expect_eq(steps, (long)STRESS_THREADS * STRESS_ROUNDS);
    cr_expect_eq(mismatches, 0);
    cr_expect_eq(leaked, 0, "%ld allocations of the threads' contexts were never freed", leaked);
    for (int t = 0; t < STRESS_THREADS; t++)
        for (int c = 0; c < RT_CASES; c++) rt_free(&w[t].runs[c]);
    for (int c = 0; c < RT_CASES; c++) rt_free(&expected[c]);
    free(w);
    free(expected);
}

Test(stress, sixteen_threads_with_own_contexts_match_the_serial_run_bitwise)
{
    rt_watchdog(300);
    stress(1);
}

Test(stress, sixteen_threads_with_null_contexts_match_the_serial_run_bitwise)
{
    rt_watchdog(300);
    stress(0);
}

/* ---- a process restricted to fewer CPUs --------------------------------------------------------
 * The library loads the topology restricted to the process's CPUs (taskset, cgroups, Slurm, MPI),
 * so every CORE and SPREAD place must lie inside that set. Checked on whatever this process was
 * given (scripts/hostile_runtime.sh runs the suite under `taskset -c 0`), then with the process
 * narrowed here to its last allowed CPU (not CPU 0: a place that ignores the mask shows), where
 * real calls must also bind inside it and give the serial bytes. */

static hwloc_bitmap_t to_hwloc(const cpu_set_t *s)
{
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, s)) hwloc_bitmap_set(b, (unsigned)c);
    return b;
}

static void expect_places_inside(const cpu_set_t *mask, const char *what)
{
    hwloc_bitmap_t allowed = to_hwloc(mask);
    char allowed_s[256];
    hwloc_bitmap_list_snprintf(allowed_s, sizeof allowed_s, allowed);
    int cpus = CPU_COUNT(mask);
    int counts[] = {1, 2, cpus, 2 * cpus + 1};
    for (int k = 0; k < 4; k++) {
        int n = counts[k];
        fa_topology *t;
        cr_assert_eq(fa_topology_create(&t, n), FA_OK, "%s, %d threads", what, n);
        int cores = fa_topology_allowed_cores(t);
        cr_expect(cores >= 1 && cores <= cpus, "%s: %d allowed cores for %d allowed CPUs (%s)", what, cores,
                  cpus, allowed_s);
        hwloc_bitmap_t seen = hwloc_bitmap_alloc(), got = hwloc_bitmap_alloc(), first = hwloc_bitmap_alloc();
        for (int tid = 0; tid < n; tid++)
            for (int m = 0; m < 2; m++) {
                fa_bind mode = m ? FA_BIND_SPREAD : FA_BIND_CORE;
                cr_assert_eq(fa_topology_place(t, mode, tid, got), 0);
                char got_s[256];
                hwloc_bitmap_list_snprintf(got_s, sizeof got_s, got);
                cr_expect(!hwloc_bitmap_iszero(got), "%s, %d threads: %s thread %d has an empty place", what,
                          n, m ? "SPREAD" : "CORE", tid);
                cr_expect(hwloc_bitmap_isincluded(got, allowed),
                          "%s, %d threads: %s thread %d placed on CPUs %s, outside the allowed %s", what, n,
                          m ? "SPREAD" : "CORE", tid, got_s, allowed_s);
                if (mode != FA_BIND_CORE) continue;
                /* CORE: the first `cores` threads on distinct cores, then around again. */
                if (tid < cores) {
                    cr_expect(!hwloc_bitmap_intersects(seen, got), "%s: CORE thread %d shares a core", what,
                              tid);
                    hwloc_bitmap_or(seen, seen, got);
                } else {
                    cr_assert_eq(fa_topology_place(t, mode, tid % cores, first), 0);
                    cr_expect(hwloc_bitmap_isequal(got, first), "%s: CORE thread %d not on thread %d's core",
                              what, tid, tid % cores);
                }
            }
        hwloc_bitmap_free(seen);
        hwloc_bitmap_free(got);
        hwloc_bitmap_free(first);
        fa_topology_destroy(t);
    }
    hwloc_bitmap_free(allowed);
}

Test(restricted, placements_and_bindings_stay_inside_the_process_cpu_set)
{
    rt_watchdog(120);
    uint64_t seed = tu_test_seed();
    int threads_now = rt_process_threads();
    cpu_set_t given;
    CPU_ZERO(&given);
    cr_assert_eq(sched_getaffinity(0, sizeof given, &given), 0);
    cr_log_info("process affinity: %d CPUs, %d threads", CPU_COUNT(&given), threads_now);
    expect_places_inside(&given, "the process's own CPU set");

    if (CPU_COUNT(&given) < 2) {
        cr_log_info("one allowed CPU: the narrowed half is what the check above did");
    } else {
        int last = -1;
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &given)) last = c;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(last, &one);
        /* hwloc reads the process binding as the union over its threads (Criterion's runner has a
         * thread of its own here): narrow them all, as taskset does. */
        cr_assert_eq(rt_narrow_process(&one), 0);
        expect_places_inside(&one, "the process narrowed to its last CPU");
    }

    /* Real calls inside whatever the process now has: the same bytes as a serial run, threads
     * bound where they may be (AUTO with more threads than allowed cores stays unbound), and the
     * caller's affinity unchanged. */
    cpu_set_t mask;
    CPU_ZERO(&mask);
    cr_assert_eq(sched_getaffinity(0, sizeof mask, &mask), 0);
    rt_run expected, run;
    char msg[1024];
    rt_make(&expected, &rt_cases[0], seed);
    rt_make(&run, &rt_cases[0], seed);
    cr_assert(rt_serial(&expected, 1, msg, sizeof msg), "seed %llu: %s", (unsigned long long)seed, msg);
    static const fa_bind modes[] = {FA_BIND_CORE, FA_BIND_SPREAD, FA_BIND_AUTO};
    for (int m = 0; m < 3; m++) {
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.num_threads = 2;
        o.bind = modes[m];
        fa_context *ctx;
        cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
        fa_status st = rt_step(ctx, &run);
        cr_expect_eq(st, FA_OK, "bind %d: %s", (int)o.bind, fa_status_str(st));
        cr_expect(rt_outputs_equal(&expected, &run), "bind %d, seed %llu: differs from the serial run",
                  (int)o.bind, (unsigned long long)seed);
        fa_stats s = FA_STATS_INIT;
        cr_assert_eq(fa_context_stats(ctx, &s), FA_OK);
        int cores;
        {
            fa_topology *t;
            cr_assert_eq(fa_topology_create(&t, 1), FA_OK);
            cores = fa_topology_allowed_cores(t);
            fa_topology_destroy(t);
        }
        cr_log_info("%d allowed CPUs (%d cores), bind %d with 2 threads: stats bind %d, bound_threads %d",
                    CPU_COUNT(&mask), cores, (int)o.bind, (int)s.bind, s.bound_threads);
        if (o.bind == FA_BIND_AUTO && cores < 2) {
            cr_expect_eq(s.bind, FA_BIND_NONE, "AUTO with 2 threads on %d core: resolved to %d", cores,
                         (int)s.bind);
            cr_expect_eq(s.bound_threads, 0);
        } else if (o.bind != FA_BIND_AUTO) {
            cr_expect_eq(s.bind, o.bind);
            /* Every place lies inside the process's CPUs, so the OS accepts every binding. */
            cr_expect_eq(s.bound_threads, 2, "bind %d: %d of 2 threads bound inside the allowed CPUs",
                         (int)o.bind, s.bound_threads);
        }
        cpu_set_t after;
        CPU_ZERO(&after);
        cr_assert_eq(sched_getaffinity(0, sizeof after, &after), 0);
        cr_expect(CPU_EQUAL(&mask, &after), "bind %d: the caller's affinity changed", (int)o.bind);
        fa_context_destroy(ctx);
    }
    rt_free(&expected);
    rt_free(&run);
}
