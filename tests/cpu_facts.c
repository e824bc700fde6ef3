/* SPDX-License-Identifier: BSD-3-Clause */
/* Independent CPU facts for the kernel-table tests; see cpu_facts.h. */
#include "cpu_facts.h"

#include <stdio.h>
#include <string.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

const char *const cf_tables[] = {"ref", "avx2", "avx512", "amx"};

int cf_flag(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return -1;
    char line[8192];
    int found = -1;
    while (found < 0 && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0) continue;
        found = 0;
        for (char *tok = strtok(strchr(line, ':') + 1, " \n"); tok; tok = strtok(NULL, " \n"))
            if (strcmp(tok, flag) == 0) found = 1;
    }
    fclose(f);
    return found;
}

static int all_flags(const char *const *flags)
{
    for (; *flags; flags++)
        if (cf_flag(*flags) != 1) return 0;
    return 1;
}

static int tiles_permitted(void)
{
#if defined(__linux__) && defined(SYS_arch_prctl)
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
#else
    return 0;
#endif
}

int cf_table_runs(const char *table)
{
    static const char *const avx2[] = {"avx2", "fma", "f16c", NULL};
    static const char *const avx512[] = {"avx512f", "avx512dq", NULL};
    static const char *const amx[] = {"avx512f", "avx512dq", "avx512bw", "avx512_bf16", "amx_tile", "amx_bf16", NULL};
    if (strcmp(table, "ref") == 0) return 1;
#if defined(__x86_64__)
    if (strcmp(table, "avx2") == 0) return all_flags(avx2);
    if (strcmp(table, "avx512") == 0) return all_flags(avx512);
    if (strcmp(table, "amx") == 0) return all_flags(amx) && tiles_permitted();
#endif
    return 0;
}

const char *cf_best_table(void)
{
    const char *best = "ref";
    for (int t = 0; t < CF_TABLES; t++)
        if (cf_table_runs(cf_tables[t])) best = cf_tables[t];
    return best;
}
