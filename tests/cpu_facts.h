/* SPDX-License-Identifier: BSD-3-Clause */
/* What this CPU and OS run, decided independently of the library (its cpu_features.c reads CPUID
 * and XCR0 itself): Linux's /proc/cpuinfo flags, which the kernel clears for registers it does not
 * save, confirmed by the CPUID the process sees (an emulator such as valgrind shows a CPU of its
 * own), and for AMX the permission Linux grants on request. For the tests that check which kernel
 * table a context picks. */
#ifndef FA_TEST_CPU_FACTS_H
#define FA_TEST_CPU_FACTS_H

/* 1 if /proc/cpuinfo's flags line has `flag` (e.g. "avx512f", "amx_bf16"), 0 if not, -1 when the
 * file or its flags line cannot be read. */
int cf_flag(const char *flag);

/* Whether the table named `table` ("ref", "avx2", "avx512", "avx512_bf16", "amx") runs here: its instructions'
 * flags, and for amx the tile-data permission (arch_prctl ARCH_REQ_XCOMP_PERM). */
int cf_table_runs(const char *table);

/* The tables every build on x86-64 has, and the one a context takes when FLASHATTN_ISA names none:
 * the best of ref, avx2, avx512, amx this CPU runs (avx512_bf16 is taken only by name). */
extern const char *const cf_tables[];
#define CF_TABLES 5
const char *cf_best_table(void);

#endif
