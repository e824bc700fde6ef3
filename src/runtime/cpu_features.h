/* SPDX-License-Identifier: BSD-3-Clause */
/* What this CPU and its OS run, as FA_CPU_* bits (kernels/kernels.h). */
#ifndef FA_KERNELS_CPU_FEATURES_H
#define FA_KERNELS_CPU_FEATURES_H

unsigned fa_cpu_features(void);

/* The calling thread's SVE vector length in bits (128 to 2048), or 0 without SVE (or off aarch64
 * Linux). */
int fa_cpu_sve_bits(void);

/* Who made this CPU and which microarchitecture it is, from CPUID: the vendor string's maker, and
 * the display family and model (the extended fields folded in, as Intel's and AMD's manuals define
 * them). FA_CPU_OTHER, 0, 0 where CPUID is absent or the vendor is another. A hypervisor may show
 * a model of its own choosing: callers treat the result as a hint, never as a requirement. */
typedef enum { FA_CPU_OTHER = 0, FA_CPU_INTEL, FA_CPU_AMD } fa_cpu_vendor;
typedef struct {
    fa_cpu_vendor vendor;
    unsigned family, model;
} fa_cpu_model;

fa_cpu_model fa_cpu_identify(void);

#endif
