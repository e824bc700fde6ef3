/* SPDX-License-Identifier: BSD-3-Clause */
// The one runner: every case, dense or ragged, goes through the same steps (batch.h). Speeds are
// reported only when every thread count has passed, so a printed figure always belongs to a correct
// result; the compared calls share the row's context and rounds, so their ratios are measured under the
// same conditions.
#include "case.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "dtypes.h"
#include "golden.h"
#include "progress.h"
#include "report.h"
#include "verify.h"

int bench_batch_failed(const char *what, int threads, fa_status s)
{
    fprintf(stderr, "fa-bench: %s at threads=%d failed: %s (status %d): %s\n", what, threads,
            fa_status_str(s), (int)s, fa_last_error());
    return -1;
}

int bench_batch_verdict(const char *what, const bench_verify_result *r, int threads, const bench_options *o,
                        const bench_shape *shape)
{
    if (r->passed) return 0;
    char types[48];
    bench_dtypes_words(shape, types, sizeof types);
    fprintf(stderr, "fa-bench: verification of %s FAILED at threads=%d (%s, bind %s)\n", what, threads, types,
            bench_bind_name(o->bind));
    bench_verify_print_worst(stderr, r);
    return -1;
}

// The determinism check of one held output: 1 compared and equal (or saved: the first thread count),
// 0 not comparable (other block sizes round differently: nothing to promise), -1 after a message.
static int same_as_first(bench_golden *g, const bench_batch_held *h, int threads, const char *when)
{
    if (!g->have) return bench_golden_save(g, h->pb, &h->stats) == 0 ? 1 : -1;
    if (h->stats.block_q != g->block_q || h->stats.block_k != g->block_k) return 0;
    const char *differs = bench_golden_first_difference(g, h->pb);
    if (!differs) return 1;
    fprintf(stderr,
            "fa-bench: %s of the %s call with %d threads%s differs bitwise from the first thread count's "
            "(same blocks %d/%d): the determinism contract is broken\n",
            differs, h->name, threads, when, h->stats.block_q, h->stats.block_k);
    return -1;
}

// One thread count, start to finish: each call once, checked, its held outputs compared with the first
// thread count's; then each call timed in turn, and everything checked again (races that show up only
// under repetition). Returns 0 with *row filled, or -1 after printing why.
static int run_row(const bench_options *o, bench_batch *b, int threads, bench_golden *golden, bench_row *row)
{
    fa_context_opts copts = FA_CONTEXT_OPTS_INIT;
    copts.num_threads = threads;
    copts.bind = o->bind;
    copts.block_q = o->block_q;
    copts.block_k = o->block_k;
    fa_context *ctx = NULL;
    fa_status s = fa_context_create(&ctx, &copts);
    if (s != FA_OK) return bench_batch_failed("fa_context_create", threads, s);
    for (int c = 0; c < b->n_calls; c++) *(fa_context **)b->calls[c].arg = ctx;
    int rc = -1, same[BENCH_BATCH_MAX_HELD];
    if (b->ops->run_once(b, o, threads) != 0) goto done;
    bench_progress_detail("threads %d: verifying", threads);
    if (b->ops->check(b, o, threads, row) != 0) goto done;
    for (int h = 0; h < b->n_held; h++)
        if ((same[h] = same_as_first(&golden[h], &b->held[h], threads, "")) < 0) goto done;

    bench_progress_detail("threads %d: timing", threads);
    for (int c = 0; c < b->n_calls; c++) {
        bench_timing *t = (bench_timing *)((char *)row + b->calls[c].timing);
        s = bench_time_calls(b->calls[c].fn, b->calls[c].arg, o->warmup, o->reps, o->min_time, t);
        if (s != FA_OK) {
            bench_batch_failed(b->calls[c].name, threads, s);
            goto done;
        }
    }
    for (int h = 0; h < b->n_held; h++)
        if (same[h] && same_as_first(&golden[h], &b->held[h], threads, " after the timed calls") < 0)
            goto done;

    fa_stats st = FA_STATS_INIT;
    fa_context_stats(ctx, &st);
    row->stats = st;
    snprintf(row->isa, sizeof row->isa, "%s", st.isa ? st.isa : "?");
    snprintf(row->plan, sizeof row->plan, "%s", st.backward_plan ? st.backward_plan : "-");
    row->stats.isa = NULL; // the strings belong to the context, destroyed below
    row->stats.backward_plan = NULL;
    row->threads = threads;
    row->bitwise_identical = same[0] == 1 ? 1 : -1;
    rc = b->ops->finish ? b->ops->finish(b, threads, row) : 0;
done:
    fa_context_destroy(ctx);
    return rc;
}

// Each row of an earlier round that was faster than this round's replaces it, whole; each call it is
// compared with then keeps its own fastest round too, so that a burst in one round spoils neither side
// of a ratio.
static void keep_faster(bench_row *rows, int n, const bench_row *earlier, int n_earlier)
{
    for (int t = 0; t < n && t < n_earlier; t++) {
        bench_row now = rows[t];
        if (earlier[t].timing.min_s < rows[t].timing.min_s) rows[t] = earlier[t];
        bench_row *kept = &rows[t];
        kept->round_gflops = now.round_gflops; /* whichever round's time is kept */
        kept->pct_of_reference_lo = earlier[t].pct_of_reference_lo;
        kept->pct_of_reference_hi = earlier[t].pct_of_reference_hi;
        if (now.ragged.equal.min_s < kept->ragged.equal.min_s) kept->ragged.equal = now.ragged.equal;
        if (now.ragged.loop.min_s < kept->ragged.loop.min_s) kept->ragged.loop = now.ragged.loop;
        if (now.ragged.contiguous.min_s < kept->ragged.contiguous.min_s)
            kept->ragged.contiguous = now.ragged.contiguous;
        if (now.plain_timing.min_s < kept->plain_timing.min_s) kept->plain_timing = now.plain_timing;
    }
}

// The figures that follow from the timings alone; NAN where a call was not timed.
static void compute_figures(const bench_run_info *info, bench_row *rows, int n)
{
    for (int r = 0; r < n; r++) {
        bench_row *w = &rows[r];
        bench_ragged_row *g = &w->ragged;
        w->gflops = info->flops / w->timing.min_s / 1e9;
        if (info->decode) w->kv_gbps = info->kv_bytes / w->timing.min_s / 1e9;
        if (info->bias_bandwidth) w->bias_gbps = info->bias_bytes / w->timing.min_s / 1e9;
        if (g->equal.count > 0) {
            g->equal_gflops = info->ragged.equal_flops / g->equal.min_s / 1e9;
            g->loop_gflops = info->flops / g->loop.min_s / 1e9;
            g->vs_equal = w->gflops / g->equal_gflops;
            g->vs_loop = w->gflops / g->loop_gflops;
        }
        if (g->contiguous.count > 0) {
            g->contiguous_kv_gbps = info->kv_bytes / g->contiguous.min_s / 1e9;
            g->paged_over_contiguous = w->timing.min_s / g->contiguous.min_s;
        }
    }
    bench_rows_compute_scaling(rows, n);
}

// Whether the case's rows get the FMA peak probe: all but a decode batch's, bound by reads alone.
static int wants_peak(const bench_run_info *info)
{
    return info->shape.ragged.kind != BENCH_RAGGED_DECODE;
}

// The probes at each row's thread count, pinned as that row's threads were. Measured after the
// library's rows so that they never run while the library is timed.
static void measure_probes(bench_machine *m, const bench_run_info *info, bench_row *rows, int n)
{
    if (!(m->probe_time > 0.0)) return;
    int peak = wants_peak(info), read = info->decode || info->bias_bandwidth;
    bench_progress_detail("probing %s%s%s", peak ? "the FMA peak" : "", peak && read ? " and " : "",
                          read ? "the read bandwidth" : "");
    for (int r = 0; r < n; r++) {
        bench_row *w = &rows[r];
        fa_bind bind = bench_machine_probe_bind(&w->stats);
        double spread = NAN;
        if (peak) {
            bench_probe_isa probe;
            // Half calls compute in f32: their peak is f32's, as their FLOP count is.
            w->peak_gflops = bench_machine_peak(m, w->isa, kit_accum_dtype(info->shape.dtype), w->threads,
                                                bind, &probe, &w->probe_spread);
            snprintf(w->peak_isa, sizeof w->peak_isa, "%s", bench_probe_isa_name(probe));
            w->pct_peak = 100.0 * w->gflops / w->peak_gflops;
        }
        if (read) {
            w->read_gbps = bench_machine_read_gbps(m, w->threads, bind, &spread);
            w->probe_spread = peak ? fmax(w->probe_spread, spread) : spread; // the more disturbed of the two
            w->pct_read_bw = 100.0 * w->kv_gbps / w->read_gbps;
            w->pct_bias_bw = 100.0 * w->bias_gbps / w->read_gbps;
            w->ragged.contiguous_pct_read_bw = 100.0 * w->ragged.contiguous_kv_gbps / w->read_gbps;
        }
    }
}

// Each row's GFLOP/s as a share of the reference case's row at the same thread count (both their
// fastest rounds), and the range of the same share within one round over the rounds so far.
static void compare_with_reference(bench_row *rows, int n, const bench_case_result *reference)
{
    if (!reference) return;
    for (int r = 0; r < n && r < reference->n_rows; r++) {
        if (reference->rows[r].threads != rows[r].threads)
            continue; // same list: never, but say nothing wrong
        rows[r].reference_gflops = reference->rows[r].gflops;
        rows[r].pct_of_reference = 100.0 * rows[r].gflops / rows[r].reference_gflops;
        const double in_round = 100.0 * rows[r].round_gflops / reference->rows[r].round_gflops;
        rows[r].pct_of_reference_lo = fmin(rows[r].pct_of_reference_lo, in_round); // fmin(NAN, x) = x
        rows[r].pct_of_reference_hi = fmax(rows[r].pct_of_reference_hi, in_round);
    }
}

// What is the same for every kind of case; the batch fills the rest (batch.h).
static void fill_info(const bench_options *o, int index, const bench_identity *id, bench_run_info *info)
{
    const bench_case *c = &o->cases[index];
    *info = (bench_run_info){
        .opt = o,
        .version = fa_version(),
        .case_index = index,
        .shape = c->shape,
        .pass = c->pass,
        .reference = -1,
        .tolerance = bench_verify_tolerance(c->shape.dtype),
        .lse_tolerance = bench_verify_lse_tolerance(c->shape.dtype),
        .grad_tolerance = NAN,
        .grad_kv_tolerance = NAN,
        .grad_oracle_s = NAN,
        .omp_max_threads = omp_get_max_threads(),
        .blas_warning = "",
        .identity = id,
    };
}

int bench_run_case(const bench_options *o, int index, int round, const bench_identity *id, bench_machine *m,
                   const bench_case_result *reference, bench_case_result *r)
{
    // The rows of earlier rounds, before r is rebuilt for this one.
    int n_earlier = round > 0 ? r->n_rows : 0;
    bench_row *earlier = NULL;
    if (n_earlier > 0) {
        earlier = malloc(sizeof *earlier * (size_t)n_earlier);
        if (!earlier) {
            fprintf(stderr, "fa-bench: out of memory\n");
            return -1;
        }
        memcpy(earlier, r->rows, sizeof *earlier * (size_t)n_earlier);
    }
    memset(r, 0, sizeof *r);
    const bench_case *c = &o->cases[index];
    const int ragged = c->shape.ragged.kind != BENCH_RAGGED_NONE, last_round = round == o->rounds - 1;
    const int last_case = last_round && index == o->n_cases - 1;
    double case_start = bench_progress_elapsed();
    char tag[64], words[320];
    if (o->rounds > 1)
        snprintf(tag, sizeof tag, "round %d/%d, case %d/%d", round + 1, o->rounds, index + 1, o->n_cases);
    else
        snprintf(tag, sizeof tag, "case %d/%d", index + 1, o->n_cases);
    bench_case_words(c, words, sizeof words);
    bench_progress("%s%s%s: %s", tag, o->preset ? " of preset " : "", o->preset ? o->preset : "", words);

    bench_run_info *info = &r->info;
    fill_info(o, index, id, info);
    bench_batch batch;
    bench_progress_detail("%s: building the batch", tag);
    if (c->shape.ragged.kind != BENCH_RAGGED_DECODE) bench_ragged_batch_release();
    if ((ragged ? bench_ragged_batch_init(&batch, o, index, info)
                : bench_dense_batch_init(&batch, o, index, info)) != 0) {
        bench_ragged_batch_release();
        free(earlier);
        return -1;
    }
    if (last_round) {
        bench_report_header(stdout, info);
        fflush(stdout); // the header shows what is running while the (possibly long) runs go on
    }

    int rc = 0;
    bench_golden golden[BENCH_BATCH_MAX_HELD];
    memset(golden, 0, sizeof golden);
    for (int t = 0; t < o->n_thread_counts && rc == 0; t++) {
        bench_row *row = &r->rows[t];
        bench_row_clear_extras(row);
        int threads = o->thread_counts[t];
        double start = bench_progress_elapsed();
        bench_progress("%s, threads %d (%d of %d): started", tag, threads, t + 1, o->n_thread_counts);
        if (run_row(o, &batch, threads, golden, row) != 0) {
            rc = -1;
        } else {
            row->round_gflops = info->flops / row->timing.min_s / 1e9;
            bench_progress("%s, threads %d: done in %.1f s (%d timed call%s, min %.3f ms, %.1f GFLOP/s)", tag,
                           threads, bench_progress_elapsed() - start, row->timing.count,
                           row->timing.count == 1 ? "" : "s", 1e3 * row->timing.min_s, row->round_gflops);
        }
    }
    if (rc == 0) {
        r->n_rows = o->n_thread_counts;
        keep_faster(r->rows, r->n_rows, earlier, n_earlier);
        compute_figures(info, r->rows, r->n_rows);
        compare_with_reference(r->rows, r->n_rows, reference);
        // The probes and the baseline once, in the last round, with the rows it reports.
        if (last_round) {
            measure_probes(m, info, r->rows, r->n_rows);
            if (batch.ops->measure_extras) batch.ops->measure_extras(&batch, o, info, m, r->rows, r->n_rows);
            bench_report_table(stdout, info, r->rows, r->n_rows);
            fflush(stdout);
        }
        bench_progress("%s: done in %.1f s", tag, bench_progress_elapsed() - case_start);
    }
    free(earlier);
    for (int h = 0; h < BENCH_BATCH_MAX_HELD; h++) bench_golden_free(&golden[h]);
    batch.ops->free(&batch);
    if (rc != 0 || last_case) bench_ragged_batch_release();
    return rc;
}
