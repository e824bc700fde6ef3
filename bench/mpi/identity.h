/* SPDX-License-Identifier: BSD-3-Clause */
/* Which machine, MPI and build a run measured (the columns fa-bench's rows end with), read on
 * rank 0 at the start of the run. */
#ifndef FA_BENCH_MPI_IDENTITY_H
#define FA_BENCH_MPI_IDENTITY_H

#include <mpi.h>

typedef struct {
    char host[256];
    char cpu_model[128];                              /* /proc/cpuinfo's "model name"; "unknown" */
    char mpi_library[MPI_MAX_LIBRARY_VERSION_STRING]; /* the first line of MPI_Get_library_version */
    char single_copy[32]; /* OMPI_MCA_btl_vader_single_copy_mechanism, or "default" */
    char run_utc[32];     /* ISO 8601 */
    const char *compiler, *build_type, *git_revision;
} bm_identity;

void bm_identity_init(bm_identity *id);

#endif
