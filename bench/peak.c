/* SPDX-License-Identifier: BSD-3-Clause */
// FMA peak probe. One loop per (instruction set, dtype): N accumulators, each updated by one
// multiply-add per iteration, so the N chains are independent and a core with two FMA pipes of
// latency 4 is kept full with 8 or more. AVX-512 has 32 registers: 16 chains plus 2 constants;
// AVX2 and the portable loop have 16: 12 chains plus 2. Check with objdump -d that the loop body
// is only fused multiply-adds (or multiplies and adds) on registers, with no memory operands.
//
// a = a*m + c with 0 < m < 1 converges to c / (1 - m): no overflow, no denormals, and no way for
// the compiler to skip iterations, since m and c come from a run-time argument.
#include "peak.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "timing.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BENCH_X86 1
#endif

// Results go here so that no probe loop is dead code.
static volatile double sink;

#define CHAINS12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define CHAINS16(X) CHAINS12(X) X(12) X(13) X(14) X(15)

// One probe loop. Before each use, define: ATTR (the target attribute), TYPE (the register type),
// SCALAR (its element type), SET1(x) (broadcast), STEP(a, m, c) (one multiply-add) and SUM(v)
// (reduction to double); undefine them after.
#define DEFINE_LOOP(name, CHAINS)                          \
    ATTR static double name(int64_t iters, double param)   \
    {                                                      \
        const TYPE m = SET1((SCALAR)(1.0 - 1e-4 * param)); \
        const TYPE c = SET1((SCALAR)(1e-4 * param));       \
        CHAINS(DECLARE_CHAIN)                              \
        for (int64_t i = 0; i < iters; i++) {              \
            CHAINS(STEP_CHAIN)                             \
        }                                                  \
        TYPE acc = a0;                                     \
        CHAINS(ADD_CHAIN)                                  \
        return SUM(acc);                                   \
    }
#define DECLARE_CHAIN(i) TYPE a##i = SET1((SCALAR)(0.01 * (i)));
#define STEP_CHAIN(i)    a##i = STEP(a##i, m, c);
#define ADD_CHAIN(i)     acc = acc + a##i; // a0 twice: the sum only feeds the sink

// Portable: GNU vector extensions, 16 bytes, which the baseline x86-64 target (SSE2) and most
// others run natively. With -std=c11 GCC does not contract a*m + c into an FMA.
typedef float portable_f32 __attribute__((vector_size(16)));
typedef double portable_f64 __attribute__((vector_size(16)));
#define PORTABLE_STEP(a, m, c) ((a) * (m) + (c))

#define ATTR
#define STEP    PORTABLE_STEP
#define TYPE    portable_f32
#define SCALAR  float
#define SET1(x) ((portable_f32){(x), (x), (x), (x)})
#define SUM(v)  ((double)(v)[0] + (double)(v)[1] + (double)(v)[2] + (double)(v)[3])
DEFINE_LOOP(loop_portable_f32, CHAINS12)
#undef TYPE
#undef SCALAR
#undef SET1
#undef SUM
#define TYPE    portable_f64
#define SCALAR  double
#define SET1(x) ((portable_f64){(x), (x)})
#define SUM(v)  ((v)[0] + (v)[1])
DEFINE_LOOP(loop_portable_f64, CHAINS12)
#undef TYPE
#undef SCALAR
#undef SET1
#undef SUM
#undef STEP
#undef ATTR

#ifdef BENCH_X86
#define AVX2_ATTR   __attribute__((target("avx2,fma")))
#define AVX512_ATTR __attribute__((target("avx512f")))

AVX2_ATTR static double sum_avx2_f32(__m256 v)
{
    float lanes[8];
    _mm256_storeu_ps(lanes, v);
    double s = 0.0;
    for (int i = 0; i < 8; i++) s += lanes[i];
    return s;
}
AVX2_ATTR static double sum_avx2_f64(__m256d v)
{
    double lanes[4];
    _mm256_storeu_pd(lanes, v);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
AVX512_ATTR static double sum_avx512_f32(__m512 v)
{
    return (double)_mm512_reduce_add_ps(v);
}
AVX512_ATTR static double sum_avx512_f64(__m512d v)
{
    return _mm512_reduce_add_pd(v);
}

#define ATTR   AVX2_ATTR
#define TYPE   __m256
#define SCALAR float
#define SET1   _mm256_set1_ps
#define STEP   _mm256_fmadd_ps
#define SUM    sum_avx2_f32
DEFINE_LOOP(loop_avx2_f32, CHAINS12)
#undef TYPE
#undef SCALAR
#undef SET1
#undef STEP
#undef SUM
#define TYPE   __m256d
#define SCALAR double
#define SET1   _mm256_set1_pd
#define STEP   _mm256_fmadd_pd
#define SUM    sum_avx2_f64
DEFINE_LOOP(loop_avx2_f64, CHAINS12)
#undef ATTR
#undef TYPE
#undef SCALAR
#undef SET1
#undef STEP
#undef SUM
#define ATTR   AVX512_ATTR
#define TYPE   __m512
#define SCALAR float
#define SET1   _mm512_set1_ps
#define STEP   _mm512_fmadd_ps
#define SUM    sum_avx512_f32
DEFINE_LOOP(loop_avx512_f32, CHAINS16)
#undef TYPE
#undef SCALAR
#undef SET1
#undef STEP
#undef SUM
#define TYPE   __m512d
#define SCALAR double
#define SET1   _mm512_set1_pd
#define STEP   _mm512_fmadd_pd
#define SUM    sum_avx512_f64
DEFINE_LOOP(loop_avx512_f64, CHAINS16)
#undef ATTR
#undef TYPE
#undef SCALAR
#undef SET1
#undef STEP
#undef SUM
#endif

typedef double (*probe_loop)(int64_t iters, double param);

typedef struct {
    probe_loop loop;
    double flop_per_iter; // chains x lanes x 2
} probe;

static probe probe_for(bench_probe_isa isa, fa_dtype dtype)
{
    int f64 = dtype == FA_F64;
    switch (isa) {
#ifdef BENCH_X86
    case BENCH_PROBE_AVX512:
        return f64 ? (probe){loop_avx512_f64, 16 * 8 * 2} : (probe){loop_avx512_f32, 16 * 16 * 2};
    case BENCH_PROBE_AVX2:
        return f64 ? (probe){loop_avx2_f64, 12 * 4 * 2} : (probe){loop_avx2_f32, 12 * 8 * 2};
#endif
    default: return f64 ? (probe){loop_portable_f64, 12 * 2 * 2} : (probe){loop_portable_f32, 12 * 4 * 2};
    }
}

int bench_probe_isa_runs(bench_probe_isa isa)
{
#ifdef BENCH_X86
    __builtin_cpu_init();
    if (isa == BENCH_PROBE_AVX512) return __builtin_cpu_supports("avx512f");
    if (isa == BENCH_PROBE_AVX2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return isa == BENCH_PROBE_PORTABLE;
}

bench_probe_isa bench_probe_isa_for_table(const char *table)
{
    bench_probe_isa isa = BENCH_PROBE_PORTABLE;
    /* amx: its float kernels are avx512's (its bf16 products run on tiles, which no FMA probe measures) */
    if (table && (strncmp(table, "avx512", 6) == 0 || strcmp(table, "amx") == 0)) /* avx512, avx512_bf16 */
        isa = BENCH_PROBE_AVX512;
    else if (table && strcmp(table, "avx2") == 0)
        isa = BENCH_PROBE_AVX2;
    if (isa == BENCH_PROBE_AVX512 && !bench_probe_isa_runs(isa)) isa = BENCH_PROBE_AVX2;
    if (isa == BENCH_PROBE_AVX2 && !bench_probe_isa_runs(isa)) isa = BENCH_PROBE_PORTABLE;
    return isa;
}

const char *bench_probe_isa_name(bench_probe_isa isa)
{
    switch (isa) {
    case BENCH_PROBE_AVX512: return "avx512";
    case BENCH_PROBE_AVX2: return "avx2";
    default: return "portable";
    }
}

// Iterations for one call to take about target seconds on the calling thread: doubled from a
// small count until a call is long enough to time (which also wakes the wide units up), then scaled.
static int64_t calibrate(probe pr, double target)
{
    int64_t iters = 1024;
    for (;;) {
        double start = bench_now();
        sink = pr.loop(iters, 1.0);
        double elapsed = bench_now() - start;
        if (elapsed >= 0.005 || iters >= ((int64_t)1 << 40)) {
            double scaled = (double)iters * target / (elapsed > 0.0 ? elapsed : 1e-9);
            return scaled < 1024.0 ? 1024 : (int64_t)scaled;
        }
        iters *= 2;
    }
}

// Short timings, many of them: the best one is a stretch when no other process had the cores,
// as the library's fastest call is (a long timing on a shared machine always includes someone).
#define PEAK_TRIAL_S    0.002
#define PEAK_MIN_TRIALS 5
#define PEAK_MAX_TRIALS 100000
#define PEAK_SAMPLES    1024 // trial times kept for the median (the last ones, past that many)

double bench_peak_gflops(bench_probe_isa isa, fa_dtype dtype, int threads, bench_pinning *pn, double seconds,
                         double *spread)
{
    if (spread) *spread = NAN;
    if (!bench_probe_isa_runs(isa) || threads < 1 || !(seconds > 0.0)) return NAN;
    probe pr = probe_for(isa, dtype);
    int64_t iters = calibrate(pr, PEAK_TRIAL_S);
    double best = INFINITY, trial_s[PEAK_SAMPLES];
    int team = 0, kept = 0;
    int done = 0; // set by thread 0 between barriers, so every thread runs the same trials
#pragma omp parallel num_threads(threads) default(none) \
    shared(pr, iters, pn, seconds, best, trial_s, kept, team, done, sink)
    {
        int tid = omp_get_thread_num();
        int pinned = bench_pinning_apply(pn, tid);
        double local = 0.0, total = 0.0, start = 0.0;
        for (int t = 0; t < PEAK_MAX_TRIALS; t++) {
            // From the moment every thread is ready to the moment the last one is done.
#pragma omp barrier
            if (tid == 0) start = bench_now();
            local += pr.loop(iters, 1.0 + 1e-3 * tid);
#pragma omp barrier
            if (tid == 0) {
                double elapsed = bench_now() - start;
                total += elapsed;
                if (elapsed < best) best = elapsed;
                done = t + 1 >= PEAK_MIN_TRIALS && total >= seconds;
                trial_s[t % PEAK_SAMPLES] = elapsed;
                if (kept < PEAK_SAMPLES) kept++;
            }
#pragma omp barrier
            if (done) break;
        }
#pragma omp critical
        sink += local;
        if (tid == 0) team = omp_get_num_threads();
        if (pinned) bench_pinning_undo(pn, tid);
    }
    if (spread) *spread = bench_median(trial_s, kept) / best;
    // team, not threads: the runtime may give fewer threads than asked (OMP_THREAD_LIMIT).
    return (double)team * (double)iters * pr.flop_per_iter / best / 1e9;
}
