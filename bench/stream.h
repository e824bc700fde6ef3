/* SPDX-License-Identifier: BSD-3-Clause */
/* The read-bandwidth probe (STREAM-style, reads only): each thread of a team sums its own disjoint
 * slice of one large array with vector loads, in one stream or in several, so the figure is what
 * memory delivers to that many reading threads — the bound of a decode-shaped attention, which reads
 * K and V once per call. */
#ifndef FA_BENCH_STREAM_H
#define FA_BENCH_STREAM_H

#include <stddef.h>

#include "placement.h"

typedef struct {
    float *data;
    size_t bytes;
} bench_stream;

/* The array a probe reads: max(4 x l3_bytes, 128 MiB), rounded to 1 MiB, so that no pass is
 * served by the caches. Pages are first touched by a team of max_threads threads (each its own
 * slice), as the library's threads touch their data. Returns 0, or -1 after a message. */
int bench_stream_init(bench_stream *s, size_t l3_bytes, int max_threads);

/* Frees the array; a zeroed probe is fine. */
void bench_stream_free(bench_stream *s);

/* GB/s (1e9 bytes) of threads threads (each pinned by pn when it is not NULL) reading the whole
 * array, disjoint slices, one pass per timing: each thread its slice in address order, and as eight
 * equal runs read side by side (one core keeps more misses in flight over several streams, as a
 * decode group reading several token rows does); the best pass of either over about seconds in all
 * (3 passes each at least). *spread (when not NULL): that way's median pass time / its best (NAN
 * with a NAN result). */
double bench_stream_read_gbps(const bench_stream *s, int threads, bench_pinning *pn, double seconds,
                              double *spread);

/* A read of given bytes where they lie: a paged KV cache's pages in the order a call reads them. */
typedef struct {
    const void *data;
    size_t bytes;
} bench_span;

/* GB/s of threads threads (pinned by pn when it is not NULL) reading spans[0..n), every byte, the
 * team's shares consecutive spans of about equal bytes, each thread its spans in order: one at a
 * time, and in groups of 8 and of 32 read a 64-byte line of each in turn (more misses in flight, as a
 * kernel reading the rows of several keys has); the fastest, each its best pass over about seconds
 * (3 at least). NAN when there is nothing to read or memory runs out. */
double bench_stream_spans_gbps(const bench_span *spans, size_t n, int threads, bench_pinning *pn,
                               double seconds, double *spread);

#endif
