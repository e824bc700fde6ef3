/* SPDX-License-Identifier: BSD-3-Clause */
// The probe cache. Probes run on the calling thread's OpenMP team, between the library's calls,
// never during one.
#include "machine.h"

#include <math.h>
#include <string.h>

void bench_machine_init(bench_machine *m, double probe_time, int max_threads)
{
    memset(m, 0, sizeof *m);
    m->probe_time = probe_time;
    m->max_threads = max_threads;
    if (probe_time > 0.0) m->placement = bench_placement_create();
}

void bench_machine_free(bench_machine *m)
{
    bench_stream_free(&m->stream);
    bench_placement_destroy(m->placement);
    memset(m, 0, sizeof *m);
}

static bench_machine_entry *find(bench_machine *m, const bench_machine_entry *key)
{
    for (int i = 0; i < m->n_entries; i++) {
        bench_machine_entry *e = &m->entries[i];
        if (e->kind == key->kind && e->isa == key->isa && e->dtype == key->dtype &&
            e->threads == key->threads && e->bind == key->bind)
            return e;
    }
    return NULL;
}

static double remember(bench_machine *m, const bench_machine_entry *key, double value, double spread)
{
    if (m->n_entries < BENCH_MACHINE_MAX_ENTRIES) {
        m->entries[m->n_entries] = *key;
        m->entries[m->n_entries].value = value;
        m->entries[m->n_entries++].spread = spread;
    }
    return value;
}

// A cached probe's figures.
static double known_value(const bench_machine_entry *known, double *spread)
{
    if (spread) *spread = known->spread;
    return known->value;
}

double bench_machine_peak(bench_machine *m, const char *table, fa_dtype dtype, int threads, fa_bind bind,
                          bench_probe_isa *probe, double *spread)
{
    *probe = bench_probe_isa_for_table(table);
    if (spread) *spread = NAN;
    if (!(m->probe_time > 0.0)) return NAN;
    bench_machine_entry key = {0, *probe, dtype, threads, bind, NAN, NAN};
    const bench_machine_entry *known = find(m, &key);
    if (known) return known_value(known, spread);
    bench_pinning *pn = bench_pinning_begin(m->placement, bind, threads);
    double s, v = bench_peak_gflops(*probe, dtype, threads, pn, m->probe_time, &s);
    bench_pinning_end(pn);
    if (spread) *spread = s;
    return remember(m, &key, v, s);
}

fa_bind bench_machine_probe_bind(const fa_stats *st)
{
    return st->bound_threads > 0 ? st->bind : FA_BIND_NONE;
}

double bench_machine_read_gbps(bench_machine *m, int threads, fa_bind bind, double *spread)
{
    if (spread) *spread = NAN;
    if (!(m->probe_time > 0.0) || m->stream_failed) return NAN;
    bench_machine_entry key = {1, BENCH_PROBE_PORTABLE, FA_F32, threads, bind, NAN, NAN};
    const bench_machine_entry *known = find(m, &key);
    if (known) return known_value(known, spread);
    if (!m->stream.data &&
        bench_stream_init(&m->stream, bench_placement_l3_bytes(m->placement), m->max_threads) != 0) {
        m->stream_failed = 1;
        return NAN;
    }
    bench_pinning *pn = bench_pinning_begin(m->placement, bind, threads);
    double s, v = bench_stream_read_gbps(&m->stream, threads, pn, m->probe_time, &s);
    bench_pinning_end(pn);
    if (spread) *spread = s;
    return remember(m, &key, v, s);
}

double bench_machine_spans_gbps(bench_machine *m, const bench_span *spans, size_t n, int threads,
                                fa_bind bind, double *spread)
{
    if (spread) *spread = NAN;
    if (!(m->probe_time > 0.0)) return NAN;
    bench_pinning *pn = bench_pinning_begin(m->placement, bind, threads);
    double v = bench_stream_spans_gbps(spans, n, threads, pn, m->probe_time, spread);
    bench_pinning_end(pn);
    return v;
}
