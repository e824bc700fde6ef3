/* SPDX-License-Identifier: BSD-3-Clause */
// Ranks' hosts and CPUs; the sleeping barrier.
#include "cpusets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int bm_cpusets_gather(bm_cpusets *c, MPI_Comm comm)
{
    memset(c, 0, sizeof *c);
    MPI_Comm_size(comm, &c->ranks);
    bm_where me;
    memset(&me, 0, sizeof me);
    if (gethostname(me.host, sizeof me.host - 1) != 0) snprintf(me.host, sizeof me.host, "unknown");
    if (sched_getaffinity(0, sizeof me.cpus, &me.cpus) != 0) CPU_ZERO(&me.cpus);
    c->where = calloc((size_t)c->ranks, sizeof *c->where);
    int ok = c->where != NULL, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    if (!all) return -1;
    if (MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, c->where, (int)sizeof me, MPI_BYTE, comm) != MPI_SUCCESS)
        return -1;
    CPU_ZERO(&c->reference);
    for (int r = 0; r < c->ranks; r++) {
        if (strcmp(c->where[r].host, c->where[0].host) != 0) continue;
        c->ranks_on_host0++;
        CPU_OR(&c->reference, &c->reference, &c->where[r].cpus);
    }
    for (int r = 0; r < c->ranks && !c->shared; r++)
        for (int s = r + 1; s < c->ranks && !c->shared; s++) {
            if (strcmp(c->where[r].host, c->where[s].host) != 0) continue;
            cpu_set_t both;
            CPU_AND(&both, &c->where[r].cpus, &c->where[s].cpus);
            c->shared = CPU_COUNT(&both) > 0;
        }
    return 0;
}

void bm_cpusets_free(bm_cpusets *c)
{
    free(c->where);
    c->where = NULL;
}

void bm_cpulist(const cpu_set_t *set, char *out, size_t size)
{
    size_t n = 0;
    out[0] = '\0';
    for (int cpu = 0; cpu < CPU_SETSIZE && n < size; cpu++) {
        if (!CPU_ISSET(cpu, set)) continue;
        int last = cpu;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set)) last++;
        int w = last == cpu ? snprintf(out + n, size - n, "%s%d", n ? "," : "", cpu)
                            : snprintf(out + n, size - n, "%s%d-%d", n ? "," : "", cpu, last);
        n += w > 0 ? (size_t)w : 0;
        cpu = last;
    }
    if (n == 0) snprintf(out, size, "?");
}

void bm_sleepy_barrier(MPI_Comm comm)
{
    MPI_Request req;
    int done = 0;
    MPI_Ibarrier(comm, &req);
    // Every wake-up takes the core from the thread of the reference pinned there: at 200 us the
    // reference ran 2-10% slower than fa-bench's on the same problem; at 10 ms it is the same.
    const struct timespec pause = {0, 10000000};
    while (MPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done) nanosleep(&pause, NULL);
}
