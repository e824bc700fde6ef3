/* SPDX-License-Identifier: BSD-3-Clause */
/* The FMA peak probe: what the cores of this machine reach, measured in the same run as the
 * library, on the same threads, so that "% of peak" compares like with like (same clocks, same
 * turbo state, same neighbours on a shared machine). Each thread runs a loop of independent
 * multiply-add chains that lives in registers: no loads, no stores, nothing spilled. */
#ifndef FA_BENCH_PEAK_H
#define FA_BENCH_PEAK_H

#include "flashattn.h"
#include "placement.h"

/* Instruction sets a probe exists for; each kernel table maps to one. */
typedef enum {
    BENCH_PROBE_PORTABLE = 0, /* portable C on 16-byte generic vectors, multiply then add: the most the
                                 ref table, compiled for the baseline target, can use */
    BENCH_PROBE_AVX2 = 1,     /* AVX2 + FMA: 12 chains of 256-bit fused multiply-adds */
    BENCH_PROBE_AVX512 = 2    /* AVX-512F: 16 chains of 512-bit fused multiply-adds */
} bench_probe_isa;

/* The probe for a kernel table named by fa_stats.isa ("avx512", "avx2", else portable), lowered
 * to what this CPU runs. */
bench_probe_isa bench_probe_isa_for_table(const char *table);

/* Whether this CPU (and OS) runs the probe's instructions. */
int bench_probe_isa_runs(bench_probe_isa isa);

/* "avx512", "avx2" or "portable". */
const char *bench_probe_isa_name(bench_probe_isa isa);

/* GFLOP/s of threads threads (an OpenMP team, each pinned by pn when pn is not NULL) all running
 * the probe for isa and dtype (FA_F32 or FA_F64) at once: the best of many 2 ms timings of the
 * whole team, each from a barrier to a barrier, over about seconds in total. FLOP = 2 per lane per
 * multiply-add. NAN if isa does not run here. *spread (when not NULL): the median timing / the
 * best, how much other processes slowed the probe down (NAN with the NAN result). */
double bench_peak_gflops(bench_probe_isa isa, fa_dtype dtype, int threads, bench_pinning *pn, double seconds,
                         double *spread);

#endif
