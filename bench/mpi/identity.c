/* SPDX-License-Identifier: BSD-3-Clause */
// The run's machine, MPI and build.
#include "identity.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_revision.h" // generated at build time by bench/revision.cmake: FA_BENCH_GIT_REVISION

static void cpu_model(char *out, size_t size)
{
    snprintf(out, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *colon = strchr(line, ':');
        if (!colon) continue;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        snprintf(out, size, "%s", colon);
        out[strcspn(out, "\n")] = '\0';
        break;
    }
    fclose(f);
}

void bm_identity_init(bm_identity *id)
{
    memset(id, 0, sizeof *id);
    if (gethostname(id->host, sizeof id->host - 1) != 0) snprintf(id->host, sizeof id->host, "unknown");
    cpu_model(id->cpu_model, sizeof id->cpu_model);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(version, &len) == MPI_SUCCESS) {
        version[strcspn(version, "\n,")] = '\0';
        snprintf(id->mpi_library, sizeof id->mpi_library, "%s", version);
    } else {
        snprintf(id->mpi_library, sizeof id->mpi_library, "unknown");
    }
    const char *copy = getenv("OMPI_MCA_btl_vader_single_copy_mechanism");
    snprintf(id->single_copy, sizeof id->single_copy, "%s", copy && *copy ? copy : "default");
    time_t t = time(NULL);
    struct tm utc;
    if (gmtime_r(&t, &utc)) strftime(id->run_utc, sizeof id->run_utc, "%Y-%m-%dT%H:%M:%SZ", &utc);
    id->compiler = FA_BENCH_COMPILER;
    id->build_type = FA_BENCH_BUILD_TYPE[0] ? FA_BENCH_BUILD_TYPE : "none";
    id->git_revision = FA_BENCH_GIT_REVISION;
}
