/* SPDX-License-Identifier: BSD-3-Clause */
/* --isa: the kernel table of the contexts fa-bench creates. The library reads FLASHATTN_ISA in
 * fa_context_create, so fa-bench sets the variable before its first context and asks a throwaway
 * context whether the library accepts it, before any problem is allocated. */
#ifndef FA_BENCH_ISA_H
#define FA_BENCH_ISA_H

/* isa: "ref", "avx2", "avx512" (setenv FLASHATTN_ISA), "auto" (unsetenv), or NULL (leave the
 * environment as it is). Then creates and destroys one context. Returns 0 when the library accepts
 * the choice, or -1 after printing the status and what it means to stderr. */
int bench_isa_apply(const char *isa);

/* What the run asked for, for the report header: "avx512 (--isa)", "avx2 (FLASHATTN_ISA)" or
 * "auto". The string is static. */
const char *bench_isa_requested(void);

#endif
