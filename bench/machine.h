/* SPDX-License-Identifier: BSD-3-Clause */
/* The machine as measured in this run: the FMA peak (peak.h) and the read bandwidth (stream.h) per
 * thread count, each measured the first time a row needs it and reused by every later row and
 * case with the same key, so a preset pays for each probe once. */
#ifndef FA_BENCH_MACHINE_H
#define FA_BENCH_MACHINE_H

#include "flashattn.h"
#include "peak.h"
#include "placement.h"
#include "stream.h"

#define BENCH_MACHINE_MAX_ENTRIES 512

typedef struct {
    int kind; /* 0: FMA peak, 1: read bandwidth */
    bench_probe_isa isa;
    fa_dtype dtype;
    int threads;
    fa_bind bind;  /* how the probe's threads were pinned: CORE, SPREAD or NONE */
    double value;  /* GFLOP/s or GB/s; NAN if it could not be measured */
    double spread; /* its median timing / its best (peak.h, stream.h); NAN with a NAN value */
} bench_machine_entry;

typedef struct {
    double probe_time; /* seconds per probe and thread count; 0: every figure is NAN */
    int max_threads;   /* the run's largest thread count: the read probe's array is touched by that many */
    bench_placement *placement;
    bench_stream stream;
    int stream_failed;
    bench_machine_entry entries[BENCH_MACHINE_MAX_ENTRIES];
    int n_entries;
} bench_machine;

void bench_machine_init(bench_machine *m, double probe_time, int max_threads);
void bench_machine_free(bench_machine *m);

/* How a probe pins its threads to measure beside a timed call whose context reported st: as the
 * call's threads were (st->bind), or not at all where the call pinned none. */
fa_bind bench_machine_probe_bind(const fa_stats *st);

/* FMA peak GFLOP/s for the kernel table named table (fa_stats.isa), dtype and threads, with the
 * probe's threads pinned by bind (the policy the timed call used; NONE when it pinned nothing).
 * *probe is set to the probe's instruction set, *spread (when not NULL) to the probe's median timing /
 * its best. */
double bench_machine_peak(bench_machine *m, const char *table, fa_dtype dtype, int threads, fa_bind bind,
                          bench_probe_isa *probe, double *spread);

/* Read bandwidth in GB/s for threads threads pinned by bind; *spread as bench_machine_peak's. */
double bench_machine_read_gbps(bench_machine *m, int threads, fa_bind bind, double *spread);

/* GB/s of threads threads pinned by bind reading spans[0..n) (bench_stream_spans_gbps), measured at each
 * call: the spans are a case's own; *spread as bench_machine_peak's. */
double bench_machine_spans_gbps(bench_machine *m, const bench_span *spans, size_t n, int threads,
                                fa_bind bind, double *spread);

#endif
