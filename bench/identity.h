/* SPDX-License-Identifier: BSD-3-Clause */
/* Which machine and which build a run measured, so that rows from many nodes and builds can be
 * merged into one table and still be told apart. Read once, at the start of the run. */
#ifndef FA_BENCH_IDENTITY_H
#define FA_BENCH_IDENTITY_H

typedef struct {
    char host[256];           /* gethostname(); "unknown" if it fails */
    char cpu_model[128];      /* /proc/cpuinfo "model name", else lscpu's "Model name"; "unknown" */
    int allowed_cores;        /* physical cores this process may use, as the library counts them (hwloc,
                              cgroups, taskset, Slurm); 0 if the topology could not be read */
    int allowed_cpus;         /* logical CPUs in the process's affinity mask; 0 if unknown */
    const char *compiler;     /* CMake's compiler id and version, "GNU 12.2.0" */
    const char *build_type;   /* the CMake configuration fa-bench was built in; "none" if unset */
    const char *git_revision; /* `git describe --always` of the source, "-dirty" when tracked files
                                 differ from it, at build time; "unknown" outside a git checkout */
    char run_utc[32];         /* when the run started, UTC, ISO 8601: 2024-05-01T12:34:56Z */
} bench_identity;

void bench_identity_init(bench_identity *id);

#endif
