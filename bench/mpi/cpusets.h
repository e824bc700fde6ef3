/* SPDX-License-Identifier: BSD-3-Clause */
/* Where the ranks run: every rank's host and CPUs (its affinity as the launcher set it), whether
 * ranks of one host share CPUs, and the CPUs of rank 0's host that the one-process reference may use
 * (the union of those ranks' CPUs, so that it runs on the cores the ranks ran on). Also a barrier
 * that sleeps instead of spinning, for the ranks that wait while the reference runs: Open MPI's
 * blocking calls poll, and a polling rank would take a core from the reference. */
#ifndef FA_BENCH_MPI_CPUSETS_H
#define FA_BENCH_MPI_CPUSETS_H

#include <mpi.h>
#include <sched.h>
#include <stddef.h>

typedef struct {
    char host[64];
    cpu_set_t cpus;
} bm_where;

typedef struct {
    int ranks;
    bm_where *where;     /* every rank's, in rank order */
    int shared;          /* ranks on one host share a CPU */
    cpu_set_t reference; /* the union of the CPUs of the ranks on rank 0's host */
    int ranks_on_host0;  /* how many ranks share rank 0's host */
} bm_cpusets;

/* Collective: gathers every rank's host and CPUs. 0, or -1 (no memory or MPI error; every rank
 * returns the same). */
int bm_cpusets_gather(bm_cpusets *c, MPI_Comm comm);
void bm_cpusets_free(bm_cpusets *c);

/* "0-3,8" */
void bm_cpulist(const cpu_set_t *set, char *out, size_t size);

/* Collective: MPI_Ibarrier, then MPI_Test every 10 ms, sleeping in between. */
void bm_sleepy_barrier(MPI_Comm comm);

#endif
