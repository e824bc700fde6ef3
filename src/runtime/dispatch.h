/* SPDX-License-Identifier: BSD-3-Clause */
/* Kernel-table dispatch: which table a context runs, chosen once from CPUID (runtime/cpu_features.h)
 * or FLASHATTN_ISA, and resolved so that every operation a table leaves NULL is ref's. The
 * framework's job, as in BLIS's frame/base: the kernels know nothing of it. */
#ifndef FA_DISPATCH_H
#define FA_DISPATCH_H

#include "kernels/kernels.h"
#include "runtime/cpu_features.h"

/* Picks the table for this CPU, or the one FLASHATTN_ISA names ("auto" or empty: the best), and
 * resolves it into *out. Returns 0, or a nonzero fa_status (FA_ERR_UNSUPPORTED when the named table
 * is missing from the build or the CPU lacks one of its features, FA_ERR_ARG when the name is
 * unknown), with the diagnostic naming `call`, the variable and which of the two it is. Called once
 * per context. */
int fa_kernels_select(const char *call, fa_kernels_resolved *out);

/* The table the automatic choice takes for a CPU of this maker, family and model with these
 * features (FA_CPU_* bits): the first of amx, avx512_bf16 (on the CPUs whose bf16 dot products
 * outrun the f32 kernels: AMD families 25 and 26), avx512, avx2, sve_bf16, neon_bf16, sve, neon that this
 * build has and `have` runs, else ref. A function of its arguments alone, for the selection and the tests. */
const fa_kernels *fa_kernels_automatic(fa_cpu_model cpu, unsigned have);

/* The table named `name` ("ref", "avx2", "avx512", "avx512_bf16", "amx", "neon", "neon_bf16", "sve",
 * "sve_bf16": the instantiation for the calling thread's SVE vector length) if this build has it, else
 * NULL; and whether this CPU and OS run its instructions. For the selection and the tests. */
const fa_kernels *fa_kernels_named(const char *name);
int fa_kernels_cpu_runs(const fa_kernels *t);

/* *out = t with every NULL operation replaced by ref's (out->table points at out's own sets; a
 * copy of *out must point its table at its own copies). */
void fa_kernels_resolve(const fa_kernels *t, fa_kernels_resolved *out);

#endif
