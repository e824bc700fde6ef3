/* SPDX-License-Identifier: BSD-3-Clause */
// Read-bandwidth probe. Eight accumulators per thread hide the add latency, so the loads, not the
// adds, set the pace; the widest vector loads this CPU has are used (the bandwidth hardly depends
// on the width, but narrow loads can fall short of it on one core).
#include "stream.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "huge_pages.h"
#include "timing.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BENCH_X86 1
#endif

#define STREAM_MIN_BYTES ((size_t)128 << 20)
#define STREAM_ALIGN     4096
// Slices start on multiples of this many floats (4 KiB): whole pages, whole vectors.
#define SLICE_GRAIN 1024

static volatile double sink;

// Portable: 16-byte generic vectors. n is a multiple of 32.
typedef float portable_f32 __attribute__((vector_size(16)));
static double sum_portable(const float *x, size_t n)
{
    portable_f32 acc[8] = {{0}};
    for (size_t i = 0; i < n; i += 32)
        for (int j = 0; j < 8; j++) acc[j] += *(const portable_f32 *)(x + i + 4 * (size_t)j);
    double s = 0.0;
    for (int j = 0; j < 8; j++) s += (double)acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3];
    return s;
}

#ifdef BENCH_X86
__attribute__((target("avx2"))) static double sum_avx2(const float *x, size_t n)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i < n; i += 64) {
        a0 = _mm256_add_ps(a0, _mm256_load_ps(x + i));
        a1 = _mm256_add_ps(a1, _mm256_load_ps(x + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_load_ps(x + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_load_ps(x + i + 24));
        a4 = _mm256_add_ps(a4, _mm256_load_ps(x + i + 32));
        a5 = _mm256_add_ps(a5, _mm256_load_ps(x + i + 40));
        a6 = _mm256_add_ps(a6, _mm256_load_ps(x + i + 48));
        a7 = _mm256_add_ps(a7, _mm256_load_ps(x + i + 56));
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    float lanes[8];
    _mm256_storeu_ps(lanes, s);
    double total = 0.0;
    for (int j = 0; j < 8; j++) total += lanes[j];
    return total;
}

__attribute__((target("avx512f"))) static double sum_avx512(const float *x, size_t n)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i < n; i += 128) {
        a0 = _mm512_add_ps(a0, _mm512_load_ps(x + i));
        a1 = _mm512_add_ps(a1, _mm512_load_ps(x + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_load_ps(x + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_load_ps(x + i + 48));
        a4 = _mm512_add_ps(a4, _mm512_load_ps(x + i + 64));
        a5 = _mm512_add_ps(a5, _mm512_load_ps(x + i + 80));
        a6 = _mm512_add_ps(a6, _mm512_load_ps(x + i + 96));
        a7 = _mm512_add_ps(a7, _mm512_load_ps(x + i + 112));
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    return (double)_mm512_reduce_add_ps(s);
}
#endif

typedef double (*sum_fn)(const float *x, size_t n);

static sum_fn best_sum(void)
{
#ifdef BENCH_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return sum_avx512;
    if (__builtin_cpu_supports("avx2")) return sum_avx2;
#endif
    return sum_portable;
}

// Thread t of n reads floats [lo, hi): contiguous, SLICE_GRAIN-aligned, covering the array.
static void slice(size_t floats, int t, int n, size_t *lo, size_t *hi)
{
    size_t grains = floats / SLICE_GRAIN;
    *lo = grains * (size_t)t / (size_t)n * SLICE_GRAIN;
    *hi = grains * (size_t)(t + 1) / (size_t)n * SLICE_GRAIN;
}

int bench_stream_init(bench_stream *s, size_t l3_bytes, int max_threads)
{
    size_t bytes = 4 * l3_bytes;
    if (bytes < STREAM_MIN_BYTES) bytes = STREAM_MIN_BYTES;
    bytes = (bytes + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1);
    s->data = bench_alloc_buffer(bytes, STREAM_ALIGN); /* in huge pages as the caches are (huge_pages.h) */
    s->bytes = s->data ? bytes : 0;
    if (!s->data) {
        fprintf(stderr, "fa-bench: cannot allocate the read-bandwidth probe's %.0f MiB\n",
                (double)bytes / 1048576.0);
        return -1;
    }
    size_t floats = bytes / sizeof(float);
    float *data = s->data;
    if (max_threads < 1) max_threads = 1;
#pragma omp parallel num_threads(max_threads) default(none) shared(data, floats)
    {
        size_t lo, hi;
        slice(floats, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        for (size_t i = lo; i < hi; i++) data[i] = 1.0f;
    }
    return 0;
}

void bench_stream_free(bench_stream *s)
{
    free(s->data);
    s->data = NULL;
    s->bytes = 0;
}

#define STREAM_MAX_PASSES 1000

double bench_stream_read_gbps(const bench_stream *s, int threads, bench_pinning *pn, double seconds,
                              double *spread)
{
    if (spread) *spread = NAN;
    if (!s->data || threads < 1 || !(seconds > 0.0)) return NAN;
    sum_fn sum = best_sum();
    const float *data = s->data;
    size_t floats = s->bytes / sizeof(float);
    double best = INFINITY, pass_s[STREAM_MAX_PASSES];
    int done = 0, passes = 0; // done: set by thread 0 between barriers: every thread runs the same passes
#pragma omp parallel num_threads(threads) default(none) \
    shared(sum, data, floats, pn, seconds, best, pass_s, passes, done, sink)
    {
        int tid = omp_get_thread_num(), n = omp_get_num_threads();
        int pinned = bench_pinning_apply(pn, tid);
        size_t lo, hi;
        slice(floats, tid, n, &lo, &hi);
        double local = 0.0, total = 0.0, start = 0.0;
        for (int pass = 0; pass < STREAM_MAX_PASSES; pass++) {
#pragma omp barrier
            if (tid == 0) start = bench_now();
            local += sum(data + lo, hi - lo);
#pragma omp barrier
            if (tid == 0) {
                double elapsed = bench_now() - start;
                total += elapsed;
                if (elapsed < best) best = elapsed;
                done = pass >= 2 && total >= seconds;
                pass_s[passes++] = elapsed;
            }
#pragma omp barrier
            if (done) break;
        }
#pragma omp critical
        sink += local;
        if (pinned) bench_pinning_undo(pn, tid);
    }
    if (spread) *spread = bench_median(pass_s, passes) / best;
    return (double)s->bytes / best / 1e9;
}
