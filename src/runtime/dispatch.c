/* SPDX-License-Identifier: BSD-3-Clause */
/* Chooses the kernel table once per context: the best this CPU runs, or the one FLASHATTN_ISA names;
 * then resolves it, ref's operations standing in for those the table leaves NULL. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api/diagnostic.h"
#include "flashattn.h"
#include "runtime/cpu_features.h"
#include "runtime/dispatch.h"

/* The tables the automatic choice takes, best first; and every name FLASHATTN_ISA may give.
 * avx512_bf16 comes before avx512 only on the CPUs of dot_units_pay. On aarch64 (nothing there is
 * measured yet: src/README.md, "aarch64") the bf16 tables come first: BFDOT does 8 multiply-adds per
 * 128-bit instruction where FMLA does 4, and at the issue rates Arm publishes for Neoverse V1 and V2
 * that is twice the f32 kernels' multiply-adds per cycle for the bf16 products (an Arm machine is to
 * confirm it). Then sve before neon, each way: as wide or wider, with masked tails (the CPUs with
 * FEAT_BF16 (V1: 4 × 128-bit pipes against 2 × 256-bit SVE, V2 and N2: 128-bit SVE) issue as many
 * lanes a cycle through either). */
static const char *const automatic[] = {"amx",       "avx512_bf16", "avx512", "avx2", "sve_bf16",
                                        "neon_bf16", "sve",         "neon",   "ref"};
#define N_AUTOMATIC (sizeof automatic / sizeof *automatic)
static const char *const known[] = {"amx",       "avx512_bf16", "avx512", "avx2", "sve_bf16",
                                    "neon_bf16", "sve",         "neon",   "ref"};
#define N_KNOWN (sizeof known / sizeof *known)

/* The features a table may require, as a diagnostic names them. */
static const struct {
    unsigned bit;
    const char *shown;
} features[] = {
    {FA_CPU_AVX2, "AVX2"},
    {FA_CPU_FMA, "FMA"},
    {FA_CPU_AVX512F, "AVX-512F"},
    {FA_CPU_AVX512DQ, "AVX-512DQ"},
    {FA_CPU_AVX512BW, "AVX-512BW"},
    {FA_CPU_AVX512VL, "AVX-512VL"},
    {FA_CPU_AVX512BF16, "AVX512-BF16"},
    {FA_CPU_AVX512FP16, "AVX512-FP16"},
    {FA_CPU_F16C, "F16C"},
    {FA_CPU_AMX_BF16, "AMX-BF16 (with the OS's permission)"},
    {FA_CPU_ASIMD, "ASIMD"},
    {FA_CPU_FP16, "FP16"},
    {FA_CPU_BF16, "BF16"},
    {FA_CPU_I8MM, "I8MM"},
    {FA_CPU_SVE, "SVE"},
    {FA_CPU_SVE2, "SVE2"},
    {FA_CPU_SVE_BF16, "SVE-BF16"},
    {FA_CPU_SVE_VL128, "SVE at a vector length of 128, 256, 512, 1024 or 2048 bits (prctl PR_SVE_GET_VL)"},
};

int fa_kernels_cpu_runs(const fa_kernels *t)
{
    return (t->requires & ~fa_cpu_features()) == 0;
}

const fa_kernels *fa_kernels_named(const char *name)
{
#ifdef FA_HAVE_X86_KERNELS
    if (strcmp(name, "amx") == 0) return &fa_kernels_amx;
    if (strcmp(name, "avx512_bf16") == 0) return &fa_kernels_avx512_bf16;
    if (strcmp(name, "avx512") == 0) return &fa_kernels_avx512;
    if (strcmp(name, "avx2") == 0) return &fa_kernels_avx2;
#endif
#ifdef FA_HAVE_ARM_KERNELS
    if (strcmp(name, "neon") == 0) return &fa_kernels_neon;
    if (strcmp(name, "neon_bf16") == 0) return &fa_kernels_neon_bf16;
    /* the instantiation for this thread's vector length; at a length none is compiled for, the
     * 128-bit one, which then does not run (its feature check names the length) */
    if (strcmp(name, "sve") == 0) {
        switch (fa_cpu_sve_bits()) {
        case 256: return &fa_kernels_sve256;
        case 512: return &fa_kernels_sve512;
        case 1024: return &fa_kernels_sve1024;
        case 2048: return &fa_kernels_sve2048;
        default: return &fa_kernels_sve128;
        }
    }
    if (strcmp(name, "sve_bf16") == 0) {
        switch (fa_cpu_sve_bits()) {
        case 256: return &fa_kernels_sve_bf16_256;
        case 512: return &fa_kernels_sve_bf16_512;
        case 1024: return &fa_kernels_sve_bf16_1024;
        case 2048: return &fa_kernels_sve_bf16_2048;
        default: return &fa_kernels_sve_bf16_128;
        }
    }
#endif
    if (strcmp(name, "ref") == 0) return &fa_kernels_ref;
    return NULL;
}

/* The tables of this build besides ref, for a diagnostic. */
static const char *build_tables(void)
{
#if defined(FA_HAVE_X86_KERNELS)
    return ", avx2, avx512, avx512_bf16 and amx";
#elif defined(FA_HAVE_ARM_KERNELS)
    return ", neon, neon_bf16, sve and sve_bf16";
#else
    return " only";
#endif
}

/* What the CPU lacks for a table, in words, for the diagnostic ("AVX-512F, AVX-512DQ"). */
static const char *cpu_lacks(const fa_kernels *t, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof features / sizeof *features; i++) {
        if (!(t->requires & features[i].bit) || (fa_cpu_features() & features[i].bit)) continue;
        size_t n = strlen(features[i].shown) + (used ? 2 : 0);
        if (used + n + 1 > size) break;
        memcpy(buf + used, ", ", used ? 2 : 0);
        memcpy(buf + used + (used ? 2 : 0), features[i].shown, strlen(features[i].shown) + 1);
        used += n;
    }
    return buf;
}

/* The assertion keeps FA_KERNEL_OPS whole when an operation is added to FA_KERNEL_SET. */
#define FA_COUNT_OP(op) +1
_Static_assert(sizeof(fa_kernels_f32) ==
                   offsetof(fa_kernels_f32, scores) + (0 FA_KERNEL_OPS(FA_COUNT_OP)) * sizeof(void (*)(void)),
               "FA_KERNEL_OPS must list every operation of FA_KERNEL_SET");

void fa_kernels_resolve(const fa_kernels *t, fa_kernels_resolved *out)
{
    const fa_kernels *ref = &fa_kernels_ref;
    out->f32 = *t->f32;
    out->f64 = *t->f64;
#define FA_FILL_OP(op)                            \
    if (!out->f32.op) out->f32.op = ref->f32->op; \
    if (!out->f64.op) out->f64.op = ref->f64->op;
    FA_KERNEL_OPS(FA_FILL_OP)
#undef FA_FILL_OP
    out->bf16 = t->bf16 ? *t->bf16 : fa_kernels_ref_bf16;
#define FA_FILL_BF16_OP(op) \
    if (!out->bf16.op) out->bf16.op = fa_kernels_ref_bf16.op;
    FA_KERNEL_BF16_OPS(FA_FILL_BF16_OP)
#undef FA_FILL_BF16_OP
    out->table = *t;
    out->table.f32 = &out->f32;
    out->table.f64 = &out->f64;
    out->table.bf16 = t->bf16 ? &out->bf16 : NULL;
}

/* Whether a CPU's vdpbf16ps pays for bf16 over widening to the avx512 table's f32 kernels. AMD's
 * Zen 4 and Zen 5 (families 25 and 26; Zen 3, also 25, has no AVX-512 and never gets here) issue
 * it as often as an f32 FMA, twice the multiply-adds: an all-bf16 call ran 1.5-1.9x the f32
 * forward and 1.2-1.4x the f32 backward on a Zen 4, where widening ran at 0.92x and 0.73x
 * (bench/results/2026-12-03-amd-epyc-zen4-bf16.md). On the Intel Xeon measured it issues a
 * quarter as often as an FMA, and the table ran at half the f32 rate
 * (kernels/avx512_bf16/dpbf16_dot.c): every Intel CPU keeps avx512 (or amx, which comes first). */
static int dot_units_pay(fa_cpu_model cpu)
{
    return cpu.vendor == FA_CPU_AMD && (cpu.family == 0x19 || cpu.family == 0x1a);
}

const fa_kernels *fa_kernels_automatic(fa_cpu_model cpu, unsigned have)
{
    for (size_t i = 0; i < N_AUTOMATIC; i++) {
        if (strcmp(automatic[i], "avx512_bf16") == 0 && !dot_units_pay(cpu)) continue;
        const fa_kernels *t = fa_kernels_named(automatic[i]);
        if (t && (t->requires & ~have) == 0) return t;
    }
    return &fa_kernels_ref;
}

int fa_kernels_select(const char *call, fa_kernels_resolved *out)
{
    const char *want = getenv("FLASHATTN_ISA");
    if (want && *want && strcmp(want, "auto") != 0) {
        int is_known = 0;
        for (size_t i = 0; i < N_KNOWN; i++) is_known |= strcmp(want, known[i]) == 0;
        if (!is_known)
            return fa_diag_fail(FA_ERR_ARG, call,
                                "FLASHATTN_ISA=%s: expected ref, avx2, avx512, avx512_bf16, amx, neon, "
                                "neon_bf16, sve, sve_bf16 or auto",
                                want);
        /* refused, never silently replaced */
        const fa_kernels *t = fa_kernels_named(want);
        if (!t)
            return fa_diag_fail(FA_ERR_UNSUPPORTED, call,
                                "FLASHATTN_ISA=%s: this build has no %s table (it was built for a CPU family "
                                "without it); the build has ref%s",
                                want, want, build_tables());
        if (!fa_kernels_cpu_runs(t)) {
            char lacks[128];
            return fa_diag_fail(FA_ERR_UNSUPPORTED, call,
                                "FLASHATTN_ISA=%s: this CPU (or its OS) lacks %s; the build has the table, "
                                "the CPU cannot run it",
                                want, cpu_lacks(t, lacks, sizeof lacks));
        }
        fa_kernels_resolve(t, out);
        return FA_OK;
    }
    fa_kernels_resolve(fa_kernels_automatic(fa_cpu_identify(), fa_cpu_features()), out);
    return FA_OK;
}
