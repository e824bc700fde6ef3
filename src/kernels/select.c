/* SPDX-License-Identifier: BSD-3-Clause */
/* Chooses the kernel table once per context: the best this CPU runs, or the one FLASHATTN_ISA names. */
#include <stdlib.h>
#include <string.h>

#include "diagnostic.h"
#include "flashattn.h"
#include "kernels/kernels.h"

/* Whether this CPU (and its OS, which must save the wider registers) runs a table's instructions.
 * libgcc's cpu model checks both the CPUID bits and the OS's XSAVE support. */
static int cpu_runs(const char *isa)
{
#ifdef FA_HAVE_X86_KERNELS
    __builtin_cpu_init();
    if (strcmp(isa, "avx512") == 0) return __builtin_cpu_supports("avx512f");
    if (strcmp(isa, "avx2") == 0) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return strcmp(isa, "ref") == 0;
}

static const fa_kernels *table_named(const char *isa)
{
#ifdef FA_HAVE_X86_KERNELS
    if (strcmp(isa, "avx512") == 0) return &fa_kernels_avx512;
    if (strcmp(isa, "avx2") == 0) return &fa_kernels_avx2;
#endif
    if (strcmp(isa, "ref") == 0) return &fa_kernels_ref;
    return NULL;
}

/* What the CPU lacks for a table, in words, for the diagnostic. */
static const char *cpu_lacks(const char *isa)
{
    if (strcmp(isa, "avx512") == 0) return "AVX-512F";
    return "AVX2 and FMA";
}

int fa_kernels_select(const char *call, const fa_kernels **out)
{
    static const char *const known[] = {"avx512", "avx2", "ref"}; /* best first */
    const char *want = getenv("FLASHATTN_ISA");
    if (want && *want && strcmp(want, "auto") != 0) {
        int is_known = 0;
        for (size_t i = 0; i < sizeof known / sizeof *known; i++) is_known |= strcmp(want, known[i]) == 0;
        if (!is_known)
            return fa_diag_fail(FA_ERR_ARG, call, "FLASHATTN_ISA=%s: expected ref, avx2, avx512 or auto", want);
        /* refused, never silently replaced */
        const fa_kernels *t = table_named(want);
        if (!t)
            return fa_diag_fail(FA_ERR_UNSUPPORTED, call,
                                "FLASHATTN_ISA=%s: this build has no %s table (it was built for a CPU family "
                                "without it); the build has ref%s",
                                want, want, table_named("avx512") ? ", avx2 and avx512" : "");
        if (!cpu_runs(want))
            return fa_diag_fail(FA_ERR_UNSUPPORTED, call,
                                "FLASHATTN_ISA=%s: this CPU (or its OS) lacks %s; the build has the table, "
                                "the CPU cannot run it",
                                want, cpu_lacks(want));
        *out = t;
        return FA_OK;
    }
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        const fa_kernels *t = table_named(known[i]);
        if (t && cpu_runs(known[i])) {
            *out = t;
            return FA_OK;
        }
    }
    *out = &fa_kernels_ref;
    return FA_OK;
}
