/* SPDX-License-Identifier: BSD-3-Clause */
// Read-bandwidth probe. Eight accumulators per thread hide the add latency, so the loads, not the
// adds, set the pace; the widest vector loads this CPU has are used (the bandwidth hardly depends
// on the width, but narrow loads can fall short of it on one core).
#include "stream.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

// Each sum reads `ways` runs of n floats, run w at x + w·stride, a piece of each in turn (128 bytes
// portable, 256 AVX2, 512 AVX-512; ways = 1: one run in address order). n is a multiple of 128.

// Portable: 16-byte generic vectors.
typedef float portable_f32 __attribute__((vector_size(16)));
static double sum_portable(const float *x, size_t n, int ways, size_t stride)
{
    portable_f32 acc[8] = {{0}};
    for (size_t i = 0; i < n; i += 32)
        for (int w = 0; w < ways; w++)
            for (int j = 0; j < 8; j++) acc[j] += *(const portable_f32 *)(x + w * stride + i + 4 * (size_t)j);
    double s = 0.0;
    for (int j = 0; j < 8; j++) s += (double)acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3];
    return s;
}

#ifdef BENCH_X86
__attribute__((target("avx2"))) static double sum_avx2(const float *x0, size_t n, int ways, size_t stride)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i < n; i += 64)
        for (int w = 0; w < ways; w++) {
            const float *x = x0 + w * stride;
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

__attribute__((target("avx512f"))) static double sum_avx512(const float *x0, size_t n, int ways,
                                                            size_t stride)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i < n; i += 128)
        for (int w = 0; w < ways; w++) {
            const float *x = x0 + w * stride;
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

typedef double (*sum_fn)(const float *x, size_t n, int ways, size_t stride);

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

// What one thread of a probe reads in a pass: thread tid of n; returns a sum the compiler must keep.
typedef double (*pass_fn)(const void *arg, int tid, int n);

// The best of the team's passes over about seconds (3 at least), in seconds; *spread: median / best.
static double best_pass_s(pass_fn read, const void *arg, int threads, bench_pinning *pn, double seconds,
                          double *spread)
{
    double best = INFINITY, pass_s[STREAM_MAX_PASSES];
    int done = 0, passes = 0; // done: set by thread 0 between barriers: every thread runs the same passes
#pragma omp parallel num_threads(threads) default(none) \
    shared(read, arg, pn, seconds, best, pass_s, passes, done, sink)
    {
        int tid = omp_get_thread_num(), n = omp_get_num_threads();
        int pinned = bench_pinning_apply(pn, tid);
        double local = 0.0, total = 0.0, start = 0.0;
        for (int pass = 0; pass < STREAM_MAX_PASSES; pass++) {
#pragma omp barrier
            if (tid == 0) start = bench_now();
            local += read(arg, tid, n);
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
    *spread = bench_median(pass_s, passes) / best;
    return best;
}

typedef struct {
    sum_fn sum;
    const float *data;
    size_t floats;
    int ways;
} array_read;

// The thread's slice as `ways` equal runs read side by side, and what is left past them in order.
static double read_slice(const void *arg, int tid, int n)
{
    const array_read *a = arg;
    size_t lo, hi;
    slice(a->floats, tid, n, &lo, &hi);
    const size_t run = (hi - lo) / SLICE_GRAIN / (size_t)a->ways * SLICE_GRAIN, side = run * (size_t)a->ways;
    double total = run ? a->sum(a->data + lo, run, a->ways, run) : 0.0;
    return side < hi - lo ? total + a->sum(a->data + lo + side, hi - lo - side, 1, 0) : total;
}

// How many runs a thread reads side by side: one (the array in address order), and eight, as a
// decode group reads eight token rows a line of each in turn. On a Zen 3 VM (two runs of each) one
// thread read 15.9-21.2 GB/s from one run, 20.3-22.4 from 2, 21.7-26.9 from 8, 18.9-27.3 from 16,
// 16.1-16.2 from 32; two threads 26.7-33.0 from one, 44.4-53.8 from 8.
static const int read_ways[] = {1, 8};

double bench_stream_read_gbps(const bench_stream *s, int threads, bench_pinning *pn, double seconds,
                              double *spread)
{
    if (spread) *spread = NAN;
    if (!s->data || threads < 1 || !(seconds > 0.0)) return NAN;
    const size_t n_ways = sizeof read_ways / sizeof read_ways[0];
    const sum_fn sum = best_sum();
    double best = INFINITY, best_spread = NAN;
    for (size_t w = 0; w < n_ways; w++) {
        array_read a = {sum, s->data, s->bytes / sizeof(float), read_ways[w]};
        double median_over_best,
            t = best_pass_s(read_slice, &a, threads, pn, seconds / (double)n_ways, &median_over_best);
        if (t < best) {
            best = t;
            best_spread = median_over_best;
        }
    }
    if (spread) *spread = best_spread;
    return (double)s->bytes / best / 1e9;
}

// Spans: any address, any length, read in groups of `group` consecutive spans a 64-byte line of each
// in turn, so that up to `group` misses to places the hardware prefetchers cannot guess are in flight
// at once (a paged cache's pages lie at shuffled addresses). 16-byte generic vectors, unaligned: the
// reads of scattered lines are bound by the misses, not by the width of the loads. Integer sums: the
// bytes are any cache's (int8 codes read as floats would be subnormal at times, which costs some CPUs
// a microcode assist an add).
#define SPAN_LINE 64

typedef unsigned portable_u32 __attribute__((vector_size(16)));

static portable_u32 load16(const unsigned char *p)
{
    portable_u32 x;
    memcpy(&x, p, sizeof x);
    return x;
}

static double read_group(const bench_span *spans, size_t group)
{
    portable_u32 a0 = {0}, a1 = a0, a2 = a0, a3 = a0;
    size_t longest = 0;
    for (size_t j = 0; j < group; j++)
        if (spans[j].bytes > longest) longest = spans[j].bytes;
    for (size_t off = 0; off + SPAN_LINE <= longest; off += SPAN_LINE)
        for (size_t j = 0; j < group; j++) {
            if (off + SPAN_LINE > spans[j].bytes) continue;
            const unsigned char *p = (const unsigned char *)spans[j].data + off;
            a0 += load16(p);
            a1 += load16(p + 16);
            a2 += load16(p + 32);
            a3 += load16(p + 48);
        }
    // Each span's last bytes short of a line (a page's scales of a few heads: 32 bytes), without a
    // chain of dependent adds: 16 bytes at a time into the vectors, the last few summed as integers.
    unsigned few = 0;
    for (size_t j = 0; j < group; j++) {
        const unsigned char *p = spans[j].data;
        size_t i = spans[j].bytes / SPAN_LINE * SPAN_LINE;
        for (; i + 16 <= spans[j].bytes; i += 16) a0 += load16(p + i);
        for (; i < spans[j].bytes; i++) few += p[i];
    }
    portable_u32 sum = (a0 + a1) + (a2 + a3);
    return (double)(sum[0] + sum[1] + sum[2] + sum[3] + few);
}

typedef struct {
    const bench_span *spans;
    const size_t *first; // share t: spans [first[t], first[t + 1])
    int shares;
    size_t group;
} spans_read;

// Thread tid of n reads shares tid, tid + n, ...: all of them, should the team be smaller than asked.
static double read_spans(const void *arg, int tid, int n)
{
    const spans_read *a = arg;
    double total = 0.0;
    for (int t = tid; t < a->shares; t += n)
        for (size_t i = a->first[t]; i < a->first[t + 1]; i += a->group)
            total +=
                read_group(a->spans + i, a->first[t + 1] - i < a->group ? a->first[t + 1] - i : a->group);
    return total;
}

// The group sizes tried: one span at a time (what the prefetchers give alone), then more in flight
// (on a Zen 3 VM, int8 pages of one key: 8 to 32 spans the fastest, 64 and more slower again).
static const size_t span_groups[] = {1, 8, 32};

double bench_stream_spans_gbps(const bench_span *spans, size_t n, int threads, bench_pinning *pn,
                               double seconds, double *spread)
{
    if (spread) *spread = NAN;
    if (n == 0 || threads < 1 || !(seconds > 0.0)) return NAN;
    size_t *first = malloc(sizeof *first * ((size_t)threads + 1));
    if (!first) return NAN;
    double bytes = 0.0;
    for (size_t i = 0; i < n; i++) bytes += (double)spans[i].bytes;
    // Share t starts at the first span that begins at or past t/threads of the bytes.
    double done = 0.0;
    size_t i = 0;
    for (int t = 0; t < threads; t++) {
        while (i < n && done < bytes * t / threads) done += (double)spans[i++].bytes;
        first[t] = i;
    }
    first[threads] = n;
    double best = INFINITY, best_spread = NAN;
    for (size_t g = 0; g < sizeof span_groups / sizeof span_groups[0]; g++) {
        spans_read a = {spans, first, threads, span_groups[g]};
        double median_over_best, t = best_pass_s(read_spans, &a, threads, pn, seconds, &median_over_best);
        if (t < best) {
            best = t;
            best_spread = median_over_best;
        }
    }
    free(first);
    if (spread) *spread = best_spread;
    return bytes / best / 1e9;
}
