/* SPDX-License-Identifier: BSD-3-Clause */
// The machine and the build, for every CSV/JSON row and the report header.
#include "identity.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_revision.h" // generated at build time by revision.cmake: FA_BENCH_GIT_REVISION
#include "placement.h"

#ifndef FA_BENCH_COMPILER
#define FA_BENCH_COMPILER "unknown"
#endif
#ifndef FA_BENCH_BUILD_TYPE
#define FA_BENCH_BUILD_TYPE ""
#endif

// The value after "key<spaces>:" on line, trimmed and with inner runs of spaces collapsed (Intel's
// model names pad with them). Returns 1 when line has that key.
static int field_value(const char *line, const char *key, char *out, size_t size)
{
    size_t n = strlen(key);
    if (strncmp(line, key, n) != 0) return 0;
    const char *p = line + n;
    while (*p == ' ' || *p == '\t') p++;
    if (*p != ':') return 0;
    p++;
    size_t w = 0;
    for (; *p && *p != '\n' && w + 1 < size; p++) {
        int space = *p == ' ' || *p == '\t';
        if (space && (w == 0 || out[w - 1] == ' ')) continue;
        out[w++] = space ? ' ' : *p;
    }
    while (w > 0 && out[w - 1] == ' ') w--;
    out[w] = '\0';
    return w > 0;
}

// The first line of f with key; closes f with close.
static int find_field(FILE *f, int (*close)(FILE *), const char *key, char *out, size_t size)
{
    if (!f) return 0;
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = field_value(line, key, out, size);
    close(f);
    return found;
}

static void read_cpu_model(char *out, size_t size)
{
    // x86 names the model in /proc/cpuinfo; Arm's cpuinfo has only part numbers, which lscpu decodes.
    if (find_field(fopen("/proc/cpuinfo", "r"), fclose, "model name", out, size)) return;
    if (find_field(popen("LC_ALL=C lscpu 2>/dev/null", "r"), pclose, "Model name", out, size)) return;
    snprintf(out, size, "unknown");
}

void bench_identity_init(bench_identity *id)
{
    memset(id, 0, sizeof *id);
    if (gethostname(id->host, sizeof id->host - 1) != 0 || !id->host[0])
        snprintf(id->host, sizeof id->host, "unknown");
    read_cpu_model(id->cpu_model, sizeof id->cpu_model);

    bench_placement *place = bench_placement_create();
    id->allowed_cores = bench_placement_allowed_cores(place);
    bench_placement_destroy(place);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) id->allowed_cpus = CPU_COUNT(&set);

    id->compiler = FA_BENCH_COMPILER;
    id->build_type = FA_BENCH_BUILD_TYPE[0] ? FA_BENCH_BUILD_TYPE : "none";
    id->git_revision = FA_BENCH_GIT_REVISION;

    time_t now = time(NULL);
    struct tm utc;
    if (now == (time_t)-1 || !gmtime_r(&now, &utc) ||
        strftime(id->run_utc, sizeof id->run_utc, "%Y-%m-%dT%H:%M:%SZ", &utc) == 0)
        snprintf(id->run_utc, sizeof id->run_utc, "unknown");
}
