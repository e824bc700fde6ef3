/* SPDX-License-Identifier: BSD-3-Clause */
/* Placement logic on synthetic hwloc topologies, independent of the machine running the tests.
 *
 * FA_BIND_CORE puts thread i on the i-th allowed core (compact, wrapping around); FA_BIND_SPREAD
 * spreads threads evenly over packages, then NUMA nodes, then L3 domains, then cores. The
 * expectations below are derived from those rules and the synthetic shape, not from a run. */
#include <criterion/criterion.h>
#include <hwloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/topology.h"

/* 2 packages x 2 NUMA nodes x 2 L3 domains x 8 cores x 2 PUs: 64 cores, 128 PUs, numbered in
 * order, so core c holds PUs 2c and 2c+1 and one L3 domain spans 8 cores. */
#define SYNTHETIC "pack:2 numa:2 l3:2 core:8 pu:2"

static hwloc_topology_t synthetic(const char *desc)
{
    hwloc_topology_t topo;
    cr_assert_eq(hwloc_topology_init(&topo), 0);
    cr_assert_eq(hwloc_topology_set_synthetic(topo, desc), 0, "synthetic description %s", desc);
    cr_assert_eq(hwloc_topology_load(topo), 0);
    return topo;
}

/* The PUs of cores [first, first + n). */
static hwloc_bitmap_t cores(int first, int n)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    for (int c = first; c < first + n; c++) hwloc_bitmap_set_range(set, (unsigned)(2 * c), (int)(2 * c + 1));
    return set;
}

static void expect_place(const fa_topology *t, fa_bind mode, int tid, hwloc_bitmap_t want)
{
    hwloc_bitmap_t got = hwloc_bitmap_alloc();
    cr_assert_eq(fa_topology_place(t, mode, tid, got), 0);
    char g[256], w[256];
    hwloc_bitmap_list_snprintf(g, sizeof g, got);
    hwloc_bitmap_list_snprintf(w, sizeof w, want);
    cr_expect(hwloc_bitmap_isequal(got, want), "%s thread %d: PUs %s, expected %s",
              mode == FA_BIND_CORE ? "CORE" : "SPREAD", tid, g, w);
    hwloc_bitmap_free(got);
    hwloc_bitmap_free(want);
}

Test(placement, core_is_compact_and_wraps_around_the_allowed_cores)
{
    hwloc_topology_t topo = synthetic(SYNTHETIC);
    fa_topology *t;
    cr_assert_eq(fa_topology_create_from(&t, topo, 130), FA_OK);
    cr_expect_eq(fa_topology_allowed_cores(t), 64);
    for (int i = 0; i < 130; i++) expect_place(t, FA_BIND_CORE, i, cores(i % 64, 1));
    fa_topology_destroy(t);
    hwloc_topology_destroy(topo);
}

Test(placement, spread_puts_threads_on_packages_then_numa_nodes_then_l3_domains)
{
    hwloc_topology_t topo = synthetic(SYNTHETIC);
    fa_topology *t;
    /* 2 threads: one per package; 4: one per NUMA node; 8: one per L3 domain (first core of each). */
    for (int n = 2; n <= 8; n *= 2) {
        cr_assert_eq(fa_topology_create_from(&t, topo, n), FA_OK);
        for (int i = 0; i < n; i++) {
            int domain_cores = 64 / n; /* cores per package, NUMA node or L3 domain */
            hwloc_bitmap_t want = cores(i * domain_cores, 1);
            expect_place(t, FA_BIND_SPREAD, i, want);
        }
        fa_topology_destroy(t);
    }
    /* 64 threads: every core once. */
    cr_assert_eq(fa_topology_create_from(&t, topo, 64), FA_OK);
    hwloc_bitmap_t seen = hwloc_bitmap_alloc();
    for (int i = 0; i < 64; i++) {
        hwloc_bitmap_t got = hwloc_bitmap_alloc();
        cr_assert_eq(fa_topology_place(t, FA_BIND_SPREAD, i, got), 0);
        cr_expect_eq(hwloc_bitmap_weight(got), 2, "thread %d: not one core", i);
        cr_expect(!hwloc_bitmap_intersects(seen, got), "thread %d shares a core", i);
        hwloc_bitmap_or(seen, seen, got);
        hwloc_bitmap_free(got);
    }
    cr_expect_eq(hwloc_bitmap_weight(seen), 128);
    hwloc_bitmap_free(seen);
    fa_topology_destroy(t);
    hwloc_topology_destroy(topo);
}

Test(placement, a_restricted_cpuset_is_all_that_placement_uses)
{
    hwloc_topology_t topo = synthetic(SYNTHETIC);
    /* As a Slurm step bound to the second package's second NUMA node: cores 48..63. */
    hwloc_bitmap_t allowed = cores(48, 16);
    cr_assert_eq(hwloc_topology_restrict(topo, allowed, 0), 0);
    fa_topology *t;
    cr_assert_eq(fa_topology_create_from(&t, topo, 20), FA_OK);
    cr_expect_eq(fa_topology_allowed_cores(t), 16);
    for (int i = 0; i < 20; i++) {
        expect_place(t, FA_BIND_CORE, i, cores(48 + i % 16, 1));
        hwloc_bitmap_t got = hwloc_bitmap_alloc();
        cr_assert_eq(fa_topology_place(t, FA_BIND_SPREAD, i, got), 0);
        cr_expect(hwloc_bitmap_isincluded(got, allowed), "SPREAD thread %d leaves the allowed set", i);
        hwloc_bitmap_free(got);
    }
    /* 2 threads spread over the two L3 domains of that node. */
    fa_topology_destroy(t);
    cr_assert_eq(fa_topology_create_from(&t, topo, 2), FA_OK);
    expect_place(t, FA_BIND_SPREAD, 0, cores(48, 1));
    expect_place(t, FA_BIND_SPREAD, 1, cores(56, 1));
    fa_topology_destroy(t);
    hwloc_bitmap_free(allowed);
    hwloc_topology_destroy(topo);
}

/* Two cores whose PUs are CPUs 65536 and 65537: beyond any Linux kernel's CPU count (NR_CPUS is at
 * most 8192), so sched_setaffinity refuses every placement on them (EINVAL), as it refuses a
 * placement outside the process's cgroup. */
#define NO_SUCH_CPUS "core:2 pu:1(indexes=65536,65537)"

/* Whether the OS lets this thread pin itself to one CPU it may run on (what a context's threads
 * do under FA_BIND_CORE): it restores the thread's affinity afterwards. */
static int os_accepts_a_pin(void)
{
    cpu_set_t mine, one;
    if (pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) != 0) return 0;
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &mine)) cpu++;
    if (cpu == CPU_SETSIZE) return 0;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    int pinned = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
    cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof mine, &mine), 0, "could not restore affinity");
    return pinned;
}

/* A 2-thread CORE context with fixed blocks (so both contexts below cut the work alike), on the
 * topology hwloc loads in fa_context_create: HWLOC_SYNTHETIC replaces the machine's when set. */
static fa_context *core_context(const char *synthetic_topology)
{
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = 2;
    o.bind = FA_BIND_CORE;
    o.block_q = 64;
    o.block_k = 64;
    if (synthetic_topology) cr_assert_eq(setenv("HWLOC_SYNTHETIC", synthetic_topology, 1), 0);
    fa_context *ctx;
    fa_status st = fa_context_create(&ctx, &o);
    unsetenv("HWLOC_SYNTHETIC");
    cr_assert_eq(st, FA_OK, "fa_context_create: %s", fa_last_error());
    return ctx;
}

/* A binding the OS refuses is not an error: the call runs unbound, gives the same bytes, and
 * bound_threads says that nothing was pinned. The refusal is the OS's own (NO_SUCH_CPUS), so the
 * library holds no switch for tests. On the machine's own topology both threads are pinned wherever
 * the OS lets a thread pin itself to a CPU of the process (probed first), and none elsewhere. */
Test(placement, a_refused_binding_runs_unbound_gives_the_same_bytes_and_shows_in_bound_threads)
{
    /* The description means what it says: two PUs, CPUs 65536 and 65537. */
    hwloc_topology_t topo = synthetic(NO_SUCH_CPUS);
    hwloc_bitmap_t want = hwloc_bitmap_alloc();
    hwloc_bitmap_set_range(want, 65536, 65537);
    cr_assert(hwloc_bitmap_isequal(hwloc_topology_get_complete_cpuset(topo), want),
              "%s does not describe CPUs 65536 and 65537", NO_SUCH_CPUS);
    hwloc_bitmap_free(want);
    hwloc_topology_destroy(topo);

    enum { N = 200, D = 24 };
    float *q = malloc(sizeof(float) * 2 * N * D), *o1 = malloc(sizeof(float) * 2 * N * D),
          *o2 = malloc(sizeof(float) * 2 * N * D);
    cr_assert(q && o1 && o2);
    for (int i = 0; i < 2 * N * D; i++) q[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    fa_tensor tq = fa_tensor_bhsd(q, FA_F32, 1, 2, N, D), t1 = fa_tensor_bhsd(o1, FA_F32, 1, 2, N, D),
              t2 = fa_tensor_bhsd(o2, FA_F32, 1, 2, N, D);
    fa_stats st = FA_STATS_INIT;

    int pinnable = os_accepts_a_pin();
    fa_context *machine = core_context(NULL);
    cr_assert_eq(fa_forward(machine, NULL, &tq, &tq, &tq, &t1, NULL), FA_OK);
    cr_assert_eq(fa_context_stats(machine, &st), FA_OK);
    cr_expect_eq(st.bound_threads, pinnable ? 2 : 0,
                 "machine topology: %d of 2 threads pinned, although the OS %s a thread pin itself",
                 st.bound_threads, pinnable ? "lets" : "does not let");

    fa_context *refused = core_context(NO_SUCH_CPUS);
    cr_assert_eq(fa_forward(refused, NULL, &tq, &tq, &tq, &t2, NULL), FA_OK);
    cr_assert_eq(fa_context_stats(refused, &st), FA_OK);
    cr_expect_eq(st.bound_threads, 0, "bound_threads %d although every binding was refused",
                 st.bound_threads);
    cr_expect_eq(st.bind, FA_BIND_CORE, "the policy stays CORE; only the outcome differs");
    cr_expect(memcmp(o1, o2, sizeof(float) * 2 * N * D) == 0, "a refused binding changed the result");
    fa_context_destroy(machine);
    fa_context_destroy(refused);
    free(q);
    free(o1);
    free(o2);
}
