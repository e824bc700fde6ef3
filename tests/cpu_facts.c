/* SPDX-License-Identifier: BSD-3-Clause */
/* Independent CPU facts for the kernel-table tests; see cpu_facts.h. */
#include "cpu_facts.h"

#include <stdio.h>
#include <string.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__x86_64__)
const char *const cf_tables[] = {"ref", "avx2", "avx512", "avx512_bf16", "amx"};
#elif defined(__aarch64__)
const char *const cf_tables[] = {"ref", "neon", "neon_bf16", "sve", "sve_bf16"};
#else
const char *const cf_tables[] = {"ref"};
#endif

#if defined(__aarch64__)
/* AT_HWCAP (16) and AT_HWCAP2 (26) as /proc/self/auxv lists them: pairs of 64-bit words. */
static int auxv_hwcaps(unsigned long long *hw, unsigned long long *hw2)
{
    FILE *f = fopen("/proc/self/auxv", "rb");
    if (!f) return -1;
    unsigned long long pair[2];
    *hw = *hw2 = 0;
    while (fread(pair, sizeof pair, 1, f) == 1 && pair[0] != 0) {
        if (pair[0] == 16) *hw = pair[1];
        if (pair[0] == 26) *hw2 = pair[1];
    }
    fclose(f);
    return 0;
}

int cf_flag(const char *flag)
{
    /* Linux's arch/arm64/include/uapi/asm/hwcap.h */
    static const struct {
        const char *flag;
        int word, bit;
    } bits[] = {{"asimd", 1, 1}, {"fphp", 1, 9},  {"asimdhp", 1, 10}, {"sve", 1, 22},
                {"sve2", 2, 1},  {"i8mm", 2, 13}, {"bf16", 2, 14},    {"svebf16", 2, 12}};
    unsigned long long hw, hw2;
    if (auxv_hwcaps(&hw, &hw2) != 0) return -1;
    for (size_t i = 0; i < sizeof bits / sizeof *bits; i++)
        if (strcmp(bits[i].flag, flag) == 0)
            return (int)(((bits[i].word == 1 ? hw : hw2) >> bits[i].bit) & 1u);
    return 0;
}

int cf_sve_bits(void)
{
    if (cf_flag("sve") != 1) return 0;
    long bytes;
    __asm__ volatile(".arch_extension sve\n\trdvl %0, #1" : "=r"(bytes));
    return (int)(8 * bytes);
}
#else
int cf_sve_bits(void)
{
    return 0;
}

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
#endif

#if defined(__x86_64__)
#include <cpuid.h>

/* What CPUID tells this process, as a second witness: under an emulator (valgrind) the process
 * sees the emulated CPU, not /proc/cpuinfo's. Leaf 7 (EBX: AVX2 5, AVX512F 16, DQ 17, BW 30, VL 31;
 * EDX: AMX-BF16 22, AMX-TILE 24), leaf 7.1 (EAX: AVX512-BF16 5), leaf 1 (ECX: FMA 12, F16C 29). */
static int cpuid_has(const char *flag)
{
    unsigned a, b, c, d, a1 = 0, b1, c1, d1;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    unsigned ecx1 = c;
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    if (a >= 1) __cpuid_count(7, 1, a1, b1, c1, d1);
    static const struct {
        const char *flag;
        int reg; /* 0: leaf 7 EBX, 1: leaf 7 EDX, 2: leaf 7.1 EAX, 3: leaf 1 ECX */
        int bit;
    } bits[] = {{"avx2", 0, 5},      {"avx512f", 0, 16},  {"avx512dq", 0, 17}, {"avx512bw", 0, 30},
                {"avx512vl", 0, 31}, {"amx_bf16", 1, 22}, {"amx_tile", 1, 24}, {"avx512_bf16", 2, 5},
                {"fma", 3, 12},      {"f16c", 3, 29}};
    const unsigned regs[4] = {b, d, a1, ecx1};
    for (size_t i = 0; i < sizeof bits / sizeof *bits; i++)
        if (strcmp(bits[i].flag, flag) == 0) return (regs[bits[i].reg] >> bits[i].bit) & 1u;
    return 1; /* a flag this table does not know: /proc/cpuinfo alone decides */
}

static int all_flags(const char *const *flags)
{
    for (; *flags; flags++) {
        if (cf_flag(*flags) != 1) return 0;
        if (!cpuid_has(*flags)) return 0;
    }
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
#endif

int cf_table_runs(const char *table)
{
    if (strcmp(table, "ref") == 0) return 1;
#if defined(__aarch64__)
    if (strcmp(table, "neon") == 0) return cf_flag("asimd") == 1;
    if (strcmp(table, "neon_bf16") == 0) return cf_flag("asimd") == 1 && cf_flag("bf16") == 1;
    /* sve and sve_bf16: compiled for the powers of two from 128 to 2048 bits */
    int bits = cf_sve_bits(), compiled = bits >= 128 && bits <= 2048 && (bits & (bits - 1)) == 0;
    if (strcmp(table, "sve") == 0) return cf_flag("asimd") == 1 && compiled;
    if (strcmp(table, "sve_bf16") == 0)
        return cf_flag("asimd") == 1 && compiled && cf_flag("bf16") == 1 && cf_flag("svebf16") == 1;
#endif
#if defined(__x86_64__)
    static const char *const avx2[] = {"avx2", "fma", "f16c", NULL};
    static const char *const avx512[] = {"avx512f", "avx512dq", "avx512bw", NULL};
    static const char *const avx512_bf16[] = {"avx512f",  "avx512dq",    "avx512bw",
                                              "avx512vl", "avx512_bf16", NULL};
    static const char *const amx[] = {"avx512f",     "avx512dq", "avx512bw", "avx512vl",
                                      "avx512_bf16", "amx_tile", "amx_bf16", NULL};
    if (strcmp(table, "avx2") == 0) return all_flags(avx2);
    if (strcmp(table, "avx512") == 0) return all_flags(avx512);
    if (strcmp(table, "avx512_bf16") == 0) return all_flags(avx512_bf16);
    if (strcmp(table, "amx") == 0) return all_flags(amx) && tiles_permitted();
#endif
    return 0;
}

#if defined(__x86_64__)
/* The value of /proc/cpuinfo's first `key` line ("vendor_id", "cpu family") into buf; 0 if absent. */
static int cpuinfo_field(const char *key, char *buf, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon || strncmp(line, key, strlen(key)) != 0) continue;
        if (line[strlen(key)] != ' ' && line[strlen(key)] != '\t') continue;
        snprintf(buf, size, "%s", colon + 1 + (colon[1] == ' '));
        buf[strcspn(buf, "\n")] = '\0';
        found = 1;
    }
    fclose(f);
    return found;
}
#endif

int cf_amd_zen4_or_zen5(void)
{
#if defined(__x86_64__)
    char vendor[64], family[16];
    if (!cpuinfo_field("vendor_id", vendor, sizeof vendor) ||
        !cpuinfo_field("cpu family", family, sizeof family))
        return 0;
    return strcmp(vendor, "AuthenticAMD") == 0 && (strcmp(family, "25") == 0 || strcmp(family, "26") == 0);
#else
    return 0;
#endif
}

const char *cf_best_table(void)
{
#if defined(__aarch64__)
    static const char *const automatic[] = {"ref", "neon", "sve", "neon_bf16", "sve_bf16"};
#else
    /* worst first; avx512_bf16 only on an AMD Zen 4 or Zen 5 (its bf16 dot products pay there) */
    static const char *const automatic[] = {"ref", "avx2", "avx512", "avx512_bf16", "amx"};
#endif
    const char *best = "ref";
    for (size_t t = 0; t < sizeof automatic / sizeof *automatic; t++) {
        if (strcmp(automatic[t], "avx512_bf16") == 0 && !cf_amd_zen4_or_zen5()) continue;
        if (cf_table_runs(automatic[t])) best = automatic[t];
    }
    return best;
}
