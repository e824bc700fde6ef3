/* SPDX-License-Identifier: BSD-3-Clause */
/* The kernel tables describe themselves (src/kernels/kernels.h, fa_kernel_traits and
 * fa_kernels.requires) and start from ref: every table this build has states the element types
 * of the half it sits in, a padding unit of 64 bytes that its vectors divide and the one score-tile
 * layout; the features it requires are those the CPU must have for the table to be chosen (checked
 * against cpuid here, independently); and a table that leaves an operation NULL gets ref's, every
 * other operation kept. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cpu_facts.h"
#include "kernels/kernels.h"
#include "runtime/dispatch.h"

static const char *const names[] = {"ref",  "avx2",      "avx512", "avx512_bf16", "amx",
                                    "neon", "neon_bf16", "sve",    "sve_bf16"};
#define N_NAMES 9

static void check_traits(const char *name, const char *half, const fa_kernel_traits *t, fa_dtype dtype,
                         size_t elem)
{
    cr_expect_eq(t->input, dtype, "%s.%s: input type", name, half);
    cr_expect_eq(t->accum, dtype, "%s.%s: accumulator type", name, half);
    cr_expect_eq((size_t)t->pad_elems * elem, 64u, "%s.%s: the padding unit is 64 bytes", name, half);
    cr_expect(t->lanes >= 1 && t->pad_elems % t->lanes == 0,
              "%s.%s: %d lanes do not divide the %d-element unit", name, half, t->lanes, t->pad_elems);
    cr_expect(t->scores_keys >= 1 && t->scores_vecs >= 1 && t->rows_rows >= 1 && t->rows_vecs >= 1,
              "%s.%s: register blocks", name, half);
    cr_expect_eq(t->score_tile, FA_TILE_KEY_MAJOR, "%s.%s: score tiles are key-major", name, half);
}

/* A bf16 set: bf16 inputs, f32 accumulators padded like the f32 half's, operands padded by pairs. */
static void check_bf16_traits(const char *name, const fa_kernels_bf16 *set)
{
    const fa_kernel_traits *b = &set->traits;
    cr_expect_eq(b->input, FA_BF16, "%s.bf16: input type", name);
    cr_expect_eq(b->accum, FA_F32, "%s.bf16: accumulator type", name);
    cr_expect_eq((size_t)b->pad_elems * sizeof(float), 64u, "%s.bf16: the padding unit is 64 bytes", name);
    cr_expect(set->pad_k >= 2 && set->pad_k % 2 == 0, "%s.bf16: pad_k %d pads whole pairs", name, set->pad_k);
    cr_expect_eq(b->score_tile, FA_TILE_KEY_MAJOR, "%s.bf16: score tiles are key-major", name);
}

Test(kernel_traits, every_table_states_its_types_padding_and_layout)
{
    int found = 0;
    for (int i = 0; i < N_NAMES; i++) {
        const fa_kernels *t = fa_kernels_named(names[i]);
        if (!t) continue;
        found++;
        cr_expect_str_eq(t->name, names[i]);
        check_traits(names[i], "f32", &t->f32->traits, FA_F32, sizeof(float));
        check_traits(names[i], "f64", &t->f64->traits, FA_F64, sizeof(double));
        if (t->bf16) check_bf16_traits(names[i], t->bf16);
    }
    cr_expect_null(fa_kernels_named("ref")->bf16, "ref widens bf16: it has no dot-product set");
    check_bf16_traits("ref_bf16", &fa_kernels_ref_bf16);
    cr_expect(found >= 1 && fa_kernels_named("ref"), "every build has ref");
    cr_expect_null(fa_kernels_named("sse9"));
}

Test(kernel_traits, ref_has_every_operation_and_every_resolved_table_too)
{
    for (int i = 0; i < N_NAMES; i++) {
        const fa_kernels *t = fa_kernels_named(names[i]);
        if (!t) continue;
        fa_kernels_resolved r;
        fa_kernels_resolve(t, &r);
        cr_expect_eq(r.table.f32, &r.f32);
        cr_expect_eq(r.table.f64, &r.f64);
        cr_expect_eq(r.table.requires, t->requires);
#define CHECK_OP(op)                                                                 \
    cr_expect(r.f32.op &&r.f64.op, "%s: " #op " missing after resolving", names[i]); \
    if (strcmp(names[i], "ref") == 0) cr_expect(t->f32->op && t->f64->op, "ref lacks " #op);
        FA_KERNEL_OPS(CHECK_OP)
#undef CHECK_OP
    }
}

Test(kernel_traits, a_table_leaving_operations_null_gets_refs_and_keeps_its_own)
{
    const fa_kernels *ref = fa_kernels_named("ref");
    /* every other operation left out, from a set whose operations are all distinct from ref's */
    const fa_kernels *base =
        fa_kernels_named("avx512") ? fa_kernels_named("avx512") : fa_kernels_named("avx2");
    if (!base) base = fa_kernels_named("neon");
    if (!base) base = ref; /* a build without x86 tables: the fill still has to keep what is there */
    fa_kernels_f32 f32 = *base->f32;
    fa_kernels_f64 f64 = *base->f64;
    int k = 0;
#define DROP_ODD(op) \
    if (k++ % 2) f32.op = NULL, f64.op = NULL;
    FA_KERNEL_OPS(DROP_ODD)
#undef DROP_ODD
    fa_kernels partial = {.name = "partial", .requires = base->requires, .f32 = &f32, .f64 = &f64};
    fa_kernels_resolved r;
    fa_kernels_resolve(&partial, &r);
    k = 0;
/* (an operation the base table itself leaves NULL, as the x86 tables' double halves do scores_half,
 * is ref's either way) */
#define CHECK_FILL(op)                                                                            \
    if (k++ % 2) {                                                                                \
        cr_expect(r.f32.op == ref->f32->op && r.f64.op == ref->f64->op, #op ": ref's operation"); \
    } else {                                                                                      \
        cr_expect(r.f32.op == (base->f32->op ? base->f32->op : ref->f32->op) &&                   \
                      r.f64.op == (base->f64->op ? base->f64->op : ref->f64->op),                 \
                  #op ": the table's own kept");                                                  \
    }
    FA_KERNEL_OPS(CHECK_FILL)
#undef CHECK_FILL
    cr_expect_eq(memcmp(&r.f32.traits, &base->f32->traits, sizeof r.f32.traits), 0, "traits are the table's");
}

/* Each feature bit as Linux reports it in /proc/cpuinfo's flags: an independent source (the kernel
 * clears a flag whose registers it does not save, as the library's XCR0 check does). 1 or 0, or
 * -1 when the file cannot be read. */
static int cpu_has(unsigned bit)
{
    static const struct {
        unsigned bit;
        const char *flag;
    } flags[] = {{FA_CPU_AVX2, "avx2"},
                 {FA_CPU_FMA, "fma"},
                 {FA_CPU_AVX512F, "avx512f"},
                 {FA_CPU_AVX512DQ, "avx512dq"},
                 {FA_CPU_AVX512BW, "avx512bw"},
                 {FA_CPU_AVX512VL, "avx512vl"},
                 {FA_CPU_AVX512BF16, "avx512_bf16"},
                 {FA_CPU_AVX512FP16, "avx512_fp16"},
                 {FA_CPU_F16C, "f16c"}};
    /* AMX: both tile flags, and the permission Linux grants on request (cpu_facts.h) */
    if (bit == FA_CPU_AMX_BF16)
        return cf_flag("amx_bf16") == 1 && cf_flag("amx_tile") == 1 && cf_table_runs("amx");
    /* aarch64: the hwcaps (cpu_facts.h reads them from /proc/self/auxv) and RDVL's vector length */
    if (bit == FA_CPU_FP16) return cf_flag("fphp") == 1 && cf_flag("asimdhp") == 1;
    if (bit == FA_CPU_SVE_VL128) return cf_sve_bits() == 128;
    if (bit == FA_CPU_SVE_VL256) return cf_sve_bits() == 256;
    if (bit == FA_CPU_SVE_VL512) return cf_sve_bits() == 512;
    if (bit == FA_CPU_SVE_VL1024) return cf_sve_bits() == 1024;
    if (bit == FA_CPU_SVE_VL2048) return cf_sve_bits() == 2048;
    static const struct {
        unsigned bit;
        const char *flag;
    } arm[] = {{FA_CPU_ASIMD, "asimd"}, {FA_CPU_BF16, "bf16"}, {FA_CPU_I8MM, "i8mm"},
               {FA_CPU_SVE, "sve"},     {FA_CPU_SVE2, "sve2"}, {FA_CPU_SVE_BF16, "svebf16"}};
    for (size_t i = 0; i < sizeof arm / sizeof *arm; i++)
        if (arm[i].bit == bit) return cf_flag(arm[i].flag);
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
        if (flags[i].bit == bit) return cf_flag(flags[i].flag);
    return -1;
}

Test(kernel_traits, a_table_runs_exactly_when_the_cpu_has_every_feature_it_requires)
{
    for (int i = 0; i < N_NAMES; i++) {
        const fa_kernels *t = fa_kernels_named(names[i]);
        if (!t) continue;
        int all = 1;
        for (unsigned bit = 1; bit; bit <<= 1) {
            if (!(t->requires & bit)) continue;
            int has = cpu_has(bit);
            cr_assert_neq(has, -1, "/proc/cpuinfo has no flags line to check bit 0x%x against", bit);
            all &= has;
        }
        cr_expect_eq(fa_kernels_cpu_runs(t), all, "%s (requires 0x%x)", names[i], t->requires);
    }
    cr_expect_eq(fa_kernels_named("ref")->requires, 0u, "ref runs everywhere");
}
