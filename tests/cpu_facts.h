/* SPDX-License-Identifier: BSD-3-Clause */
/* What this CPU and OS run, decided independently of the library (its cpu_features.c reads CPUID
 * and XCR0 itself): Linux's /proc/cpuinfo flags, which the kernel clears for registers it does not
 * save, confirmed by the CPUID the process sees (an emulator such as valgrind shows a CPU of its
 * own), and for AMX the permission Linux grants on request. For the tests that check which kernel
 * table a context picks. */
#ifndef FA_TEST_CPU_FACTS_H
#define FA_TEST_CPU_FACTS_H

/* 1 if /proc/cpuinfo's flags line has `flag` (e.g. "avx512f", "amx_bf16"), 0 if not, -1 when the
 * file or its flags line cannot be read. On aarch64 the hwcaps the kernel gave this process, read
 * from /proc/self/auxv (which qemu-user emulates; its /proc/cpuinfo is the host's), by the names
 * /proc/cpuinfo's Features line uses: "asimd", "fphp", "asimdhp", "bf16", "i8mm", "sve", "sve2",
 * "svebf16". */
int cf_flag(const char *flag);

/* The SVE vector length in bits as the CPU reports it to this thread (RDVL), 0 without SVE. */
int cf_sve_bits(void);

/* Whether the table named `table` ("ref", "avx2", "avx512", "avx512_bf16", "amx"; "neon", "neon_bf16",
 * "sve", "sve_bf16") runs here: its instructions' flags, for amx the tile-data permission (arch_prctl
 * ARCH_REQ_XCOMP_PERM), for sve and sve_bf16 a vector length they are compiled for (a power of two
 * from 128 to 2048 bits). */
int cf_table_runs(const char *table);

/* The tables every build on this architecture has (x86-64: ref, avx2, avx512, avx512_bf16, amx;
 * aarch64: ref, neon, neon_bf16, sve, sve_bf16; others: ref), and the one a context takes when
 * FLASHATTN_ISA names none: the best of ref, avx2, avx512, amx (neon, sve, neon_bf16, sve_bf16) this CPU
 * runs, with avx512_bf16 above
 * avx512 on an AMD Zen 4 or Zen 5 (cf_amd_zen4_or_zen5; elsewhere it is taken only by name). */
extern const char *const cf_tables[];
#if defined(__x86_64__)
#define CF_TABLES 5
#elif defined(__aarch64__)
#define CF_TABLES 5
#else
#define CF_TABLES 1
#endif
const char *cf_best_table(void);

/* 1 on an AMD CPU of family 25 or 26 (Zen 3 to Zen 5; Zen 3 has no AVX-512) as /proc/cpuinfo's
 * vendor_id and cpu family lines give it, else 0 (also off x86-64). */
int cf_amd_zen4_or_zen5(void);

#endif
