/* SPDX-License-Identifier: BSD-3-Clause */
/* Everything that touches hwloc or the OS's thread affinity lives behind this header. */
#ifndef FA_TOPOLOGY_H
#define FA_TOPOLOGY_H

#include <stddef.h>

#include "flashattn.h"

typedef struct fa_topology fa_topology;

typedef struct {
    size_t l2; /* bytes of one L2 cache (0 when unknown): what the automatic block sizes fit */
} fa_cache_sizes;

/* Loads the machine topology once, restricted to the CPUs this process may use (cgroups, and the
 * process's own binding: taskset, Slurm, MPI launchers), and computes where each of num_threads
 * threads goes under FA_BIND_CORE and FA_BIND_SPREAD. */
fa_status fa_topology_create(fa_topology **out, int num_threads);
void fa_topology_destroy(fa_topology *t);

/* ---- for tests: placement on any topology (synthetic, recorded, restricted) ---- */
struct hwloc_topology;
struct hwloc_bitmap_s;
/* Computes placements and the L2 size from an already loaded (and, if wanted, restricted) hwloc
 * topology, which stays the caller's. fa_topology_create() is this on the machine's own topology
 * restricted to the process's CPUs. */
fa_status fa_topology_create_from(fa_topology **out, struct hwloc_topology *topo, int num_threads);
/* Where thread `tid` goes under `mode` (CORE or SPREAD), as an hwloc cpuset of OS indexes. */
int fa_topology_place(const fa_topology *t, fa_bind mode, int tid, struct hwloc_bitmap_s *out);

int fa_topology_allowed_cores(const fa_topology *t);
fa_cache_sizes fa_topology_caches(const fa_topology *t);

/* From inside a call, by team thread `tid` (< num_threads): remembers the thread's current
 * affinity, then pins it to its place under `mode` (CORE or SPREAD). Returns 1 when pinned,
 * 0 when the OS refused (the thread then runs unbound and its affinity is unchanged). */
int fa_topology_bind(fa_topology *t, fa_bind mode, int tid);

/* Gives thread `tid` back the affinity it had before fa_topology_bind() pinned it. */
void fa_topology_restore(fa_topology *t, int tid);

#endif
