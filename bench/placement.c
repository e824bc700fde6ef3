/* SPDX-License-Identifier: BSD-3-Clause */
// Where the probes' threads go (the library's own placement) and the machine's L3 size.
#include "placement.h"

#include "runtime/topology.h"

#include <hwloc.h>
#include <stdlib.h>

struct bench_placement {
    hwloc_topology_t topo; // for the L3 size the STREAM probe needs
};

struct bench_pinning {
    fa_topology *topology;
    fa_bind mode;
    int threads;
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

/* Pinning goes through the library's own topology module (src/runtime/topology.c), so a probe's threads
 * sit exactly where a timed call's threads sat: one set of placement rules, not two. */
void bench_pinning_end(bench_pinning *pn)
{
    if (!pn) return;
    fa_topology_destroy(pn->topology);
    free(pn);
}

bench_pinning *bench_pinning_begin(const bench_placement *p, fa_bind mode, int threads)
{
    if (!p || threads < 1 || (mode != FA_BIND_CORE && mode != FA_BIND_SPREAD)) return NULL;
    bench_pinning *pn = calloc(1, sizeof *pn);
    if (!pn) return NULL;
    pn->mode = mode;
    pn->threads = threads;
    if (fa_topology_create(&pn->topology, threads) != FA_OK) {
        free(pn);
        return NULL;
    }
    return pn;
}

int bench_pinning_apply(bench_pinning *pn, int tid)
{
    if (!pn || tid < 0 || tid >= pn->threads) return 0;
    return fa_topology_bind(pn->topology, pn->mode, tid);
}

void bench_pinning_undo(bench_pinning *pn, int tid)
{
    if (pn && tid >= 0 && tid < pn->threads) fa_topology_restore(pn->topology, tid);
}
