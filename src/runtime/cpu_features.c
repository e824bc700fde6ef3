/* SPDX-License-Identifier: BSD-3-Clause */
/* The FA_CPU_* features this CPU and its OS provide. x86: from CPUID and XGETBV: a feature counts
 * only when the CPU reports it and the OS saves the registers it uses (XCR0), as a table's
 * instructions would otherwise fault. Read directly rather than with __builtin_cpu_supports, whose
 * feature names differ between compilers (clang 14 knows neither "f16c" nor "avx512fp16").
 * aarch64: from Linux's hwcaps (getauxval), which the kernel sets only for state it saves, and the
 * SVE vector length from prctl(PR_SVE_GET_VL). Each architecture's probes compile only there. */
#include "runtime/cpu_features.h"

#include "kernels/kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* Linux (5.16 and later) lets a process use AMX's 8 KiB of tile data only after it asks
 * (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, 18): a tile instruction faults before.
 * The request is process-wide, idempotent, and refused where the kernel or a seccomp filter says no;
 * other systems are taken to refuse. */
static int amx_permitted(void)
{
#if defined(__linux__) && defined(SYS_arch_prctl)
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
#else
    return 0;
#endif
}

static unsigned long long xcr0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static unsigned probe(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const unsigned fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28),
                   f16c = c & (1u << 29);
    if (!osxsave || !avx) return 0;
    const unsigned long long x = xcr0();
    const int os_ymm = (x & 0x6) == 0x6;   /* SSE and AVX state */
    const int os_zmm = (x & 0xe6) == 0xe6; /* and the opmask, ZMM0-15 upper halves, ZMM16-31 */
    if (!os_ymm) return 0;
    unsigned have = 0;
    if (fma) have |= FA_CPU_FMA;
    if (f16c) have |= FA_CPU_F16C;
    if (__get_cpuid_max(0, NULL) < 7) return have;
    __cpuid_count(7, 0, a, b, c, d);
    if (b & (1u << 5)) have |= FA_CPU_AVX2;
    if (os_zmm) {
        if (b & (1u << 16)) have |= FA_CPU_AVX512F;
        if (b & (1u << 17)) have |= FA_CPU_AVX512DQ;
        if (b & (1u << 30)) have |= FA_CPU_AVX512BW;
        if (b & (1u << 31)) have |= FA_CPU_AVX512VL;
        if (d & (1u << 23)) have |= FA_CPU_AVX512FP16;
        /* AMX-BF16 (bit 22) with AMX-TILE (24), XTILECFG and XTILEDATA saved by the OS (XCR0 17, 18) */
        const int os_tiles = ((x >> 17) & 3) == 3;
        if ((d & (1u << 22)) && (d & (1u << 24)) && os_tiles && amx_permitted()) have |= FA_CPU_AMX_BF16;
        const unsigned max_sub = a;
        if (max_sub >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            if (a & (1u << 5)) have |= FA_CPU_AVX512BF16;
        }
    }
    return have;
}

fa_cpu_model fa_cpu_identify(void)
{
    fa_cpu_model m = {FA_CPU_OTHER, 0, 0};
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return m;
    /* the vendor string is EBX, EDX, ECX: "GenuineIntel", "AuthenticAMD" */
    if (b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu)
        m.vendor = FA_CPU_INTEL;
    else if (b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u)
        m.vendor = FA_CPU_AMD;
    else
        return m;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return m;
    unsigned family = (a >> 8) & 0xf, model = (a >> 4) & 0xf;
    if (family == 0xf) family += (a >> 20) & 0xff;
    if (family == 0x6 || family >= 0xf) model |= ((a >> 16) & 0xf) << 4;
    m.family = family;
    m.model = model;
    return m;
}
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#include <sys/prctl.h>

/* Linux's hwcap bits (asm/hwcap.h), spelt out: older headers lack the newer ones. */
#define FA_HWCAP_FPHP     (1ul << 9)
#define FA_HWCAP_ASIMDHP  (1ul << 10)
#define FA_HWCAP_ASIMD    (1ul << 1)
#define FA_HWCAP_SVE      (1ul << 22)
#define FA_HWCAP2_SVE2    (1ul << 1)
#define FA_HWCAP2_SVEBF16 (1ul << 12)
#define FA_HWCAP2_I8MM    (1ul << 13)
#define FA_HWCAP2_BF16    (1ul << 14)
#ifndef PR_SVE_GET_VL
#define PR_SVE_GET_VL 51
#endif
#ifndef PR_SVE_VL_LEN_MASK
#define PR_SVE_VL_LEN_MASK 0xffff
#endif

static unsigned probe(void)
{
    const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    unsigned have = 0;
    if (hw & FA_HWCAP_ASIMD) have |= FA_CPU_ASIMD;
    if ((hw & FA_HWCAP_FPHP) && (hw & FA_HWCAP_ASIMDHP)) have |= FA_CPU_FP16;
    if (hw2 & FA_HWCAP2_BF16) have |= FA_CPU_BF16;
    if (hw2 & FA_HWCAP2_I8MM) have |= FA_CPU_I8MM;
    if (hw & FA_HWCAP_SVE) {
        have |= FA_CPU_SVE;
        if (hw2 & FA_HWCAP2_SVE2) have |= FA_CPU_SVE2;
        if (hw2 & FA_HWCAP2_SVEBF16) have |= FA_CPU_SVE_BF16;
        /* the calling thread's vector length in bytes (a thread may change its own; new threads
         * inherit it, so the team runs at the length the context was chosen at) */
        const int vl = prctl(PR_SVE_GET_VL, 0, 0, 0, 0);
        const int bytes = vl < 0 ? 0 : (vl & PR_SVE_VL_LEN_MASK);
        if (bytes == 16) have |= FA_CPU_SVE_VL128;
        if (bytes == 32) have |= FA_CPU_SVE_VL256;
        if (bytes == 64) have |= FA_CPU_SVE_VL512;
        if (bytes == 128) have |= FA_CPU_SVE_VL1024;
        if (bytes == 256) have |= FA_CPU_SVE_VL2048;
    }
    return have;
}

int fa_cpu_sve_bits(void)
{
    if (!(getauxval(AT_HWCAP) & FA_HWCAP_SVE)) return 0;
    const int vl = prctl(PR_SVE_GET_VL, 0, 0, 0, 0);
    return vl < 0 ? 0 : 8 * (vl & PR_SVE_VL_LEN_MASK);
}

fa_cpu_model fa_cpu_identify(void)
{
    fa_cpu_model m = {FA_CPU_OTHER, 0, 0};
    return m;
}
#else
static unsigned probe(void)
{
    return 0;
}

fa_cpu_model fa_cpu_identify(void)
{
    fa_cpu_model m = {FA_CPU_OTHER, 0, 0};
    return m;
}
#endif

#if !(defined(__aarch64__) && defined(__linux__))
int fa_cpu_sve_bits(void)
{
    return 0;
}
#endif

unsigned fa_cpu_features(void)
{
    /* CPUID (getauxval, prctl) is cheap and its answer fixed: no caching (and so no synchronisation)
     * needed. */
    return probe();
}
