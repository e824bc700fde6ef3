/* SPDX-License-Identifier: BSD-3-Clause */
/* The loops of port_costs.h, in inline assembly so that the compiler can neither fold the
 * broadcasts into the FMAs nor drop the loads: each step is one of the avx512 score kernel's
 * (src/kernels/tile_scores.h): 4 query vectors, 6 key scalars 256 bytes apart, 24 FMAs into
 * zmm8-zmm31. 64 steps walk 16 KiB of queries and 1.5 KiB of keys, all in L1. */
#include "port_costs.h"

#include <math.h>
#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)

#define STEPS  64
#define BLOCKS 4096 /* of STEPS steps per timing */

static float queries[STEPS * 64] __attribute__((aligned(64)));
static float keys[6 * 64 + STEPS] __attribute__((aligned(64)));

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* 24 FMAs: key vectors zmm4-zmm7 (zmm4, zmm5 twice) times query vectors zmm0-zmm3 */
#define FMA_ROW(B, A0, A1, A2, A3)                      \
    "vfmadd231ps %%zmm" #B ", %%zmm0, %%zmm" #A0 "\n\t" \
    "vfmadd231ps %%zmm" #B ", %%zmm1, %%zmm" #A1 "\n\t" \
    "vfmadd231ps %%zmm" #B ", %%zmm2, %%zmm" #A2 "\n\t" \
    "vfmadd231ps %%zmm" #B ", %%zmm3, %%zmm" #A3 "\n\t"
#define FMA_ROWS_0_3 \
    FMA_ROW(4, 8, 9, 10, 11) FMA_ROW(5, 12, 13, 14, 15) FMA_ROW(6, 16, 17, 18, 19) FMA_ROW(7, 20, 21, 22, 23)
#define FMA_ROWS_4_5 FMA_ROW(4, 24, 25, 26, 27) FMA_ROW(5, 28, 29, 30, 31)
#define LOAD_QUERIES                \
    "vmovaps (%[q]), %%zmm0\n\t"    \
    "vmovaps 64(%[q]), %%zmm1\n\t"  \
    "vmovaps 128(%[q]), %%zmm2\n\t" \
    "vmovaps 192(%[q]), %%zmm3\n\t"
/* vfmadd231ps with the key scalar at OFF broadcast from memory into every lane */
#define FMA_EMBEDDED(OFF, A0, A1, A2, A3)                           \
    "vfmadd231ps " #OFF "(%[k])%{1to16%}, %%zmm0, %%zmm" #A0 "\n\t" \
    "vfmadd231ps " #OFF "(%[k])%{1to16%}, %%zmm1, %%zmm" #A1 "\n\t" \
    "vfmadd231ps " #OFF "(%[k])%{1to16%}, %%zmm2, %%zmm" #A2 "\n\t" \
    "vfmadd231ps " #OFF "(%[k])%{1to16%}, %%zmm3, %%zmm" #A3 "\n\t"

#define CLOBBERS                                                                                           \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",      \
        "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", \
        "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "memory", "cc"

static void steps_of(port_variant v)
{
    int64_t n = STEPS;
    const float *q = queries, *k = keys;
    switch (v) {
    case PORT_FMA_ONLY:
        __asm__ volatile("1:\n\t" FMA_ROWS_0_3 FMA_ROWS_4_5 "dec %[n]\n\tjnz 1b" : [n] "+r"(n) : : CLOBBERS);
        break;
    case PORT_FOUR_LOADS:
        __asm__ volatile("1:\n\t" LOAD_QUERIES FMA_ROWS_0_3 FMA_ROWS_4_5
                         "add $256, %[q]\n\tdec %[n]\n\tjnz 1b"
                         : [n] "+r"(n), [q] "+r"(q)
                         :
                         : CLOBBERS);
        break;
    case PORT_LOADS_BROADCASTS:
        __asm__ volatile("1:\n\t" LOAD_QUERIES "vbroadcastss (%[k]), %%zmm4\n\t"
                         "vbroadcastss 256(%[k]), %%zmm5\n\t"
                         "vbroadcastss 512(%[k]), %%zmm6\n\t"
                         "vbroadcastss 768(%[k]), %%zmm7\n\t" FMA_ROWS_0_3
                         "vbroadcastss 1024(%[k]), %%zmm4\n\t"
                         "vbroadcastss 1280(%[k]), %%zmm5\n\t" FMA_ROWS_4_5
                         "add $256, %[q]\n\tadd $4, %[k]\n\tdec %[n]\n\tjnz 1b"
                         : [n] "+r"(n), [q] "+r"(q), [k] "+r"(k)
                         :
                         : CLOBBERS);
        break;
    case PORT_EMBEDDED_BROADCAST:
        __asm__ volatile("1:\n\t" LOAD_QUERIES FMA_EMBEDDED(0, 8, 9, 10, 11) FMA_EMBEDDED(256, 12, 13, 14, 15)
                             FMA_EMBEDDED(512, 16, 17, 18, 19) FMA_EMBEDDED(768, 20, 21, 22, 23)
                                 FMA_EMBEDDED(1024, 24, 25, 26, 27)
                                     FMA_EMBEDDED(1280, 28, 29, 30,
                                                  31) "add $256, %[q]\n\tadd $4, %[k]\n\tdec %[n]\n\tjnz 1b"
                         : [n] "+r"(n), [q] "+r"(q), [k] "+r"(k)
                         :
                         : CLOBBERS);
        break;
    }
}

const char *port_variant_name(port_variant v)
{
    static const char *const names[PORT_VARIANTS] = {"24 FMAs, registers only", "+ 4 loads",
                                                     "+ 4 loads, 6 broadcasts (the score kernel's step)",
                                                     "4 loads, 24 FMAs broadcasting from memory"};
    return names[v];
}

int port_costs_run_here(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}

double port_costs_gflops(port_variant v, int rounds)
{
    double best = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = seconds_now();
        for (int b = 0; b < BLOCKS; b++) steps_of(v);
        double dt = seconds_now() - t0;
        double gflops = (double)BLOCKS * STEPS * 24 * 32 / dt * 1e-9; /* 16 lanes x 2 FLOP per FMA */
        if (gflops > best) best = gflops;
    }
    return best;
}

#else /* not x86-64: no loops to run */

const char *port_variant_name(port_variant v)
{
    (void)v;
    return "";
}

int port_costs_run_here(void)
{
    return 0;
}

double port_costs_gflops(port_variant v, int rounds)
{
    (void)v, (void)rounds;
    return NAN;
}

#endif
