/* SPDX-License-Identifier: BSD-3-Clause */
/* Where the in-run probes put their threads: hwloc, by the placement rules include/flashattn.h states
 * for FA_BIND_CORE and FA_BIND_SPREAD, so that a probe's threads sit where a timed call's threads sat.
 * Also the machine facts the probes and the rows need from the topology: the L3 size, the cores. */
#ifndef FA_BENCH_PLACEMENT_H
#define FA_BENCH_PLACEMENT_H

#include <stddef.h>

#include "flashattn.h"

typedef struct bench_placement bench_placement;

/* Loads the topology restricted as the library restricts it (the allowed CPUs, narrowed by the
 * process binding). NULL if hwloc fails: the probes then run unpinned. */
bench_placement *bench_placement_create(void);

/* NULL is a no-op. */
void bench_placement_destroy(bench_placement *p);

/* Total bytes of all L3 caches in the restricted topology (0 when hwloc reports none). */
size_t bench_placement_l3_bytes(const bench_placement *p);

/* Cores (PUs where hwloc reports no cores) in the restricted topology: the library's allowed cores;
 * 0 for NULL. */
int bench_placement_allowed_cores(const bench_placement *p);

/* One team's pinning, by the library's rules (FA_BIND_CORE, FA_BIND_SPREAD); other modes pin nothing. */
typedef struct bench_pinning bench_pinning;

/* Prepares the places of threads threads; NULL when mode pins nothing, p is NULL, or memory ran out
 * (the team then runs unpinned). Called outside the parallel region. */
bench_pinning *bench_pinning_begin(const bench_placement *p, fa_bind mode, int threads);

/* Inside the team: pins the calling thread (number tid) to its place, keeping its previous binding.
 * Returns 1 if pinned. pn NULL: returns 0. */
int bench_pinning_apply(bench_pinning *pn, int tid);

/* Inside the team, by a thread that bench_pinning_apply pinned: restores its previous binding. */
void bench_pinning_undo(bench_pinning *pn, int tid);

/* Frees the places. NULL is a no-op. */
void bench_pinning_end(bench_pinning *pn);

#endif
