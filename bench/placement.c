/* SPDX-License-Identifier: BSD-3-Clause */
// Where the probes' threads go and the machine's L3 size, with hwloc directly. The rules are the
// ones include/flashattn.h states for FA_BIND_CORE and FA_BIND_SPREAD, applied to the same restricted
// topology, so a probe's threads sit where a timed call's threads sat.
#include "placement.h"

#include <hwloc.h>
#include <stdlib.h>

struct bench_placement {
    hwloc_topology_t topo;
};

struct bench_pinning {
    hwloc_topology_t topo; // the placement's: it outlives the pinning
    int threads;
    hwloc_bitmap_t *place; // [threads]
    hwloc_bitmap_t *saved; // [threads]: each thread's binding before bench_pinning_apply
};

bench_placement *bench_placement_create(void)
{
    bench_placement *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (hwloc_topology_init(&p->topo) != 0) {
        free(p);
        return NULL;
    }
    if (hwloc_topology_load(p->topo) != 0) {
        hwloc_topology_destroy(p->topo);
        free(p);
        return NULL;
    }
    // As the library does: the allowed CPUs, narrowed by taskset, srun or mpirun's process binding.
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set && hwloc_get_cpubind(p->topo, set, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(set)) {
        hwloc_bitmap_and(set, set, hwloc_topology_get_allowed_cpuset(p->topo));
        if (!hwloc_bitmap_iszero(set)) hwloc_topology_restrict(p->topo, set, 0);
    }
    hwloc_bitmap_free(set);
    return p;
}

void bench_placement_destroy(bench_placement *p)
{
    if (!p) return;
    hwloc_topology_destroy(p->topo);
    free(p);
}

size_t bench_placement_l3_bytes(const bench_placement *p)
{
    if (!p) return 0;
    size_t total = 0;
    int n = hwloc_get_nbobjs_by_type(p->topo, HWLOC_OBJ_L3CACHE);
    for (int i = 0; i < n; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(p->topo, HWLOC_OBJ_L3CACHE, (unsigned)i);
        if (o && o->attr) total += (size_t)o->attr->cache.size;
    }
    return total;
}

// The unit a thread is placed on: a core, or a PU where the machine reports no cores (some VMs).
static hwloc_obj_type_t place_unit(hwloc_topology_t topo)
{
    return hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
}

int bench_placement_allowed_cores(const bench_placement *p)
{
    return p ? hwloc_get_nbobjs_by_type(p->topo, place_unit(p->topo)) : 0;
}

static void free_sets(hwloc_bitmap_t *sets, int n)
{
    if (!sets) return;
    for (int i = 0; i < n; i++) hwloc_bitmap_free(sets[i]);
    free(sets);
}

void bench_pinning_end(bench_pinning *pn)
{
    if (!pn) return;
    free_sets(pn->place, pn->threads);
    free_sets(pn->saved, pn->threads);
    free(pn);
}

// CORE: thread i on the i-th allowed core, wrapping around. SPREAD: hwloc_distrib splits the threads
// evenly down the tree (packages, NUMA nodes, L3 domains, cores) and each thread takes the first
// core of its share, as OMP_PROC_BIND=spread on cores does. Returns 0, or -1.
static int compute_places(bench_pinning *pn, fa_bind mode)
{
    hwloc_topology_t topo = pn->topo;
    hwloc_obj_type_t unit = place_unit(topo);
    int units = hwloc_get_nbobjs_by_type(topo, unit);
    if (units <= 0) return -1;
    if (mode == FA_BIND_CORE) {
        for (int i = 0; i < pn->threads; i++) {
            hwloc_obj_t o = hwloc_get_obj_by_type(topo, unit, (unsigned)(i % units));
            if (!o || hwloc_bitmap_copy(pn->place[i], o->cpuset) != 0) return -1;
        }
        return 0;
    }
    hwloc_bitmap_t *spread = calloc((size_t)pn->threads, sizeof *spread);
    if (!spread) return -1;
    hwloc_obj_t root = hwloc_get_root_obj(topo);
    int rc =
        hwloc_distrib(topo, &root, 1, spread, (unsigned)pn->threads, hwloc_get_type_depth(topo, unit), 0);
    for (int i = 0; i < pn->threads && rc == 0; i++) {
        hwloc_obj_t first =
            spread[i] ? hwloc_get_next_obj_inside_cpuset_by_type(topo, spread[i], unit, NULL) : NULL;
        rc = spread[i] ? hwloc_bitmap_copy(pn->place[i], first ? first->cpuset : spread[i]) : -1;
    }
    free_sets(spread, pn->threads);
    return rc == 0 ? 0 : -1;
}

bench_pinning *bench_pinning_begin(const bench_placement *p, fa_bind mode, int threads)
{
    if (!p || threads < 1 || (mode != FA_BIND_CORE && mode != FA_BIND_SPREAD)) return NULL;
    bench_pinning *pn = calloc(1, sizeof *pn);
    if (!pn) return NULL;
    pn->topo = p->topo;
    pn->threads = threads;
    pn->place = calloc((size_t)threads, sizeof *pn->place);
    pn->saved = calloc((size_t)threads, sizeof *pn->saved);
    int ok = pn->place && pn->saved;
    for (int i = 0; ok && i < threads; i++) {
        pn->place[i] = hwloc_bitmap_alloc();
        pn->saved[i] = hwloc_bitmap_alloc();
        ok = pn->place[i] && pn->saved[i];
    }
    if (!ok || compute_places(pn, mode) != 0) {
        bench_pinning_end(pn);
        return NULL;
    }
    return pn;
}

int bench_pinning_apply(bench_pinning *pn, int tid)
{
    if (!pn || tid < 0 || tid >= pn->threads) return 0;
    if (hwloc_get_cpubind(pn->topo, pn->saved[tid], HWLOC_CPUBIND_THREAD) != 0) return 0;
    return hwloc_set_cpubind(pn->topo, pn->place[tid], HWLOC_CPUBIND_THREAD) == 0;
}

void bench_pinning_undo(bench_pinning *pn, int tid)
{
    if (pn && tid >= 0 && tid < pn->threads)
        (void)hwloc_set_cpubind(pn->topo, pn->saved[tid], HWLOC_CPUBIND_THREAD);
}
