/* SPDX-License-Identifier: BSD-3-Clause */
/* hwloc: topology, placements, binding.
 *
 * The topology is loaded once per context and then only its results are kept: one CPU set per
 * thread for each binding policy, and the L2 size. Binding at call time goes straight to
 * the OS with sets prepared here, so a call neither loads a topology nor allocates.
 */
#include "runtime/topology.h"

#include <hwloc.h>
#include <limits.h>
#include <stdlib.h>

#ifdef __linux__
#include <hwloc/glibc-sched.h>
#include <pthread.h>
#include <sched.h>
#endif

#ifdef __linux__
typedef cpu_set_t *fa_cpuset; /* CPU_ALLOC'd, set_bytes long */
#else
typedef hwloc_bitmap_t fa_cpuset;
#endif

struct fa_topology {
    int num_threads;
    int allowed_cores;
    fa_cache_sizes caches;
    fa_cpuset *core_place;   /* [num_threads]: compact, thread i on core i mod cores */
    fa_cpuset *spread_place; /* [num_threads]: hwloc_distrib over the whole restricted machine */
    fa_cpuset *saved;        /* [num_threads]: affinity before the current call */
#ifdef __linux__
    size_t set_bytes;
#else
    hwloc_topology_t topo; /* kept for binding calls where there is no direct OS path */
#endif
};

static size_t cache_size(hwloc_topology_t topo, hwloc_obj_type_t type)
{
    hwloc_obj_t obj = hwloc_get_obj_by_type(topo, type, 0);
    return (obj && obj->attr) ? (size_t)obj->attr->cache.size : 0;
}

/* Restricts the topology to what this process may run on: hwloc already leaves out CPUs that
 * cgroups forbid; the process binding (taskset, srun --cpu-bind, mpirun) narrows it further. */
static void restrict_to_process(hwloc_topology_t topo)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set) return;
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(set)) {
        hwloc_bitmap_and(set, set, hwloc_topology_get_allowed_cpuset(topo));
        if (!hwloc_bitmap_iszero(set)) hwloc_topology_restrict(topo, set, 0);
    }
    hwloc_bitmap_free(set);
}

static void free_sets(fa_topology *t, fa_cpuset *sets)
{
    if (!sets) return;
    for (int i = 0; i < t->num_threads; i++) {
#ifdef __linux__
        if (sets[i]) CPU_FREE(sets[i]);
#else
        hwloc_bitmap_free(sets[i]);
#endif
    }
    free(sets);
}

static fa_cpuset *alloc_sets(fa_topology *t)
{
    fa_cpuset *sets = calloc((size_t)t->num_threads, sizeof *sets);
    if (!sets) return NULL;
    for (int i = 0; i < t->num_threads; i++) {
#ifdef __linux__
        sets[i] = CPU_ALLOC(t->set_bytes * 8);
        if (sets[i]) CPU_ZERO_S(t->set_bytes, sets[i]);
#else
        sets[i] = hwloc_bitmap_alloc();
#endif
        if (!sets[i]) {
            free_sets(t, sets);
            return NULL;
        }
    }
    return sets;
}

static int store_set(fa_topology *t, hwloc_topology_t topo, hwloc_const_cpuset_t from, fa_cpuset to)
{
#ifdef __linux__
    return hwloc_cpuset_to_glibc_sched_affinity(topo, from, to, t->set_bytes);
#else
    (void)t;
    (void)topo;
    return hwloc_bitmap_copy(to, from);
#endif
}

/* CORE: thread i on the i-th allowed core, wrapping around. SPREAD: hwloc_distrib, which splits
 * the threads evenly down the tree (packages, then NUMA nodes, then L3 domains, then cores).
 * Returns 0 on success, -1 when the topology has no usable unit, -2 when memory ran out. */
static int compute_places(fa_topology *t, hwloc_topology_t topo)
{
    int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    hwloc_obj_type_t unit = HWLOC_OBJ_CORE;
    if (cores <= 0) { /* some virtual machines report PUs only */
        unit = HWLOC_OBJ_PU;
        cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    }
    if (cores <= 0) return -1;
    t->allowed_cores = cores;
    for (int i = 0; i < t->num_threads; i++) {
        hwloc_obj_t core = hwloc_get_obj_by_type(topo, unit, (unsigned)(i % cores));
        if (!core || store_set(t, topo, core->cpuset, t->core_place[i]) != 0) return -1;
    }

    /* hwloc_distrib allocates each set itself (it stores a duplicate into every slot). */
    hwloc_bitmap_t *spread = calloc((size_t)t->num_threads, sizeof *spread);
    if (!spread) return -2;
    hwloc_obj_t root = hwloc_get_root_obj(topo);
    int rc =
        hwloc_distrib(topo, &root, 1, spread, (unsigned)t->num_threads, hwloc_get_type_depth(topo, unit), 0);
    if (rc != 0) rc = -2; /* hwloc_distrib fails only when it cannot allocate a set */
    for (int i = 0; i < t->num_threads && rc == 0; i++)
        if (!spread[i]) rc = -2;
    /* hwloc_distrib hands out whole domains when there are fewer threads than cores; each thread
     * gets the first core of its domain, so it stays put like OMP_PROC_BIND=spread on cores. */
    for (int i = 0; i < t->num_threads && rc == 0; i++) {
        hwloc_obj_t first = hwloc_get_next_obj_inside_cpuset_by_type(topo, spread[i], unit, NULL);
        rc = store_set(t, topo, first ? first->cpuset : spread[i], t->spread_place[i]);
    }
    for (int i = 0; i < t->num_threads; i++) hwloc_bitmap_free(spread[i]);
    free(spread);
    return rc;
}

fa_status fa_topology_create_from(fa_topology **out, struct hwloc_topology *topo, int num_threads)
{
    fa_topology *t = calloc(1, sizeof *t);
    if (!t) return FA_ERR_NOMEM;
    t->num_threads = num_threads;
#ifdef __linux__
    int last = hwloc_bitmap_last(hwloc_topology_get_complete_cpuset(topo));
    t->set_bytes = CPU_ALLOC_SIZE((last < CPU_SETSIZE ? CPU_SETSIZE : last + 1));
#else
    t->topo = topo;
#endif
    t->caches.l2 = cache_size(topo, HWLOC_OBJ_L2CACHE);

    fa_status st = FA_OK;
    t->core_place = alloc_sets(t);
    t->spread_place = alloc_sets(t);
    t->saved = alloc_sets(t);
    if (!t->core_place || !t->spread_place || !t->saved)
        st = FA_ERR_NOMEM;
    else {
        int rc = compute_places(t, topo);
        st = rc == 0 ? FA_OK : (rc == -2 ? FA_ERR_NOMEM : FA_ERR_RUNTIME);
    }
    if (st != FA_OK) {
#ifndef __linux__
        t->topo = NULL; /* the caller's */
#endif
        fa_topology_destroy(t);
        return st;
    }
    *out = t;
    return FA_OK;
}

fa_status fa_topology_create(fa_topology **out, int num_threads)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) return FA_ERR_RUNTIME;
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return FA_ERR_RUNTIME;
    }
    restrict_to_process(topo);
    fa_status st = fa_topology_create_from(out, topo, num_threads);
#ifdef __linux__
    hwloc_topology_destroy(topo); /* only its results are kept */
#else
    if (st != FA_OK) hwloc_topology_destroy(topo); /* kept for binding calls otherwise */
#endif
    return st;
}

int fa_topology_place(const fa_topology *t, fa_bind mode, int tid, struct hwloc_bitmap_s *out)
{
    if (tid < 0 || tid >= t->num_threads || (mode != FA_BIND_CORE && mode != FA_BIND_SPREAD)) return -1;
    fa_cpuset place = mode == FA_BIND_CORE ? t->core_place[tid] : t->spread_place[tid];
#ifdef __linux__
    hwloc_bitmap_zero(out);
    for (int cpu = 0; cpu < (int)(t->set_bytes * 8); cpu++)
        if (CPU_ISSET_S((size_t)cpu, t->set_bytes, place)) hwloc_bitmap_set(out, (unsigned)cpu);
    return 0;
#else
    return hwloc_bitmap_copy(out, place);
#endif
}

void fa_topology_destroy(fa_topology *t)
{
    if (!t) return;
    free_sets(t, t->core_place);
    free_sets(t, t->spread_place);
    free_sets(t, t->saved);
#ifndef __linux__
    if (t->topo) hwloc_topology_destroy(t->topo);
#endif
    free(t);
}

int fa_topology_allowed_cores(const fa_topology *t)
{
    return t->allowed_cores;
}

fa_cache_sizes fa_topology_caches(const fa_topology *t)
{
    return t->caches;
}

int fa_topology_bind(fa_topology *t, fa_bind mode, int tid)
{
    if (tid < 0 || tid >= t->num_threads || (mode != FA_BIND_CORE && mode != FA_BIND_SPREAD)) return 0;
    fa_cpuset place = mode == FA_BIND_CORE ? t->core_place[tid] : t->spread_place[tid];
#ifdef __linux__
    pthread_t self = pthread_self();
    if (pthread_getaffinity_np(self, t->set_bytes, t->saved[tid]) != 0) return 0;
    return pthread_setaffinity_np(self, t->set_bytes, place) == 0;
#else
    if (hwloc_get_cpubind(t->topo, t->saved[tid], HWLOC_CPUBIND_THREAD) != 0) return 0;
    return hwloc_set_cpubind(t->topo, place, HWLOC_CPUBIND_THREAD) == 0;
#endif
}

void fa_topology_restore(fa_topology *t, int tid)
{
#ifdef __linux__
    (void)pthread_setaffinity_np(pthread_self(), t->set_bytes, t->saved[tid]);
#else
    (void)hwloc_set_cpubind(t->topo, t->saved[tid], HWLOC_CPUBIND_THREAD);
#endif
}
