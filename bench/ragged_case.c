/* SPDX-License-Identifier: BSD-3-Clause */
// Ragged cases: every call checked before any is timed, and the rows reported only when all passed,
// as for dense cases (case.c). The compared calls share the row's context and rounds, so their
// ratios are measured under the same conditions.
#include "ragged_case.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_batch.h"
#include "dtypes.h"
#include "golden.h"
#include "progress.h"
#include "ragged_report.h"
#include "timing.h"
#include "varlen.h"
#include "verify.h"

static int failed(const char *what, int threads, fa_status s)
{
    fprintf(stderr, "fa-bench: %s at threads=%d failed: %s (status %d): %s\n", what, threads,
            fa_status_str(s), (int)s, fa_last_error());
    return -1;
}

static fa_context *make_context(const bench_options *o, int threads)
{
    fa_context_opts copts = FA_CONTEXT_OPTS_INIT;
    copts.num_threads = threads;
    copts.bind = o->bind;
    copts.block_q = o->block_q;
    copts.block_k = o->block_k;
    fa_context *ctx = NULL;
    fa_status s = fa_context_create(&ctx, &copts);
    if (s != FA_OK) {
        failed("fa_context_create", threads, s);
        return NULL;
    }
    return ctx;
}

static int verdict(const char *what, const bench_verify_result *r, int threads, const bench_options *o,
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

// The determinism check of case.c for one call's outputs: 1 compared and equal (or saved: the first
// thread count), 0 not comparable (other block sizes), -1 after a message.
static int same_as_first(bench_golden *g, const bench_problem *pb, const fa_stats *st, const char *call,
                         int threads, const char *when)
{
    if (!g->have) return bench_golden_save(g, pb, st) == 0 ? 1 : -1;
    if (st->block_q != g->block_q || st->block_k != g->block_k) return 0;
    const char *differs = bench_golden_first_difference(g, pb);
    if (!differs) return 1;
    fprintf(
        stderr,
        "fa-bench: %s of the %s call with %d threads%s differs bitwise from the first thread count's (same "
        "blocks %d/%d): the determinism contract is broken\n",
        differs, call, threads, when, st->block_q, st->block_k);
    return -1;
}

static void finish_row(bench_row *row, fa_context *ctx, int threads, int comparable)
{
    row->stats = (fa_stats)FA_STATS_INIT;
    fa_context_stats(ctx, &row->stats);
    snprintf(row->isa, sizeof row->isa, "%s", row->stats.isa ? row->stats.isa : "?");
    snprintf(row->plan, sizeof row->plan, "-");
    row->stats.isa = NULL;
    row->stats.backward_plan = NULL;
    row->threads = threads;
    row->bitwise_identical = comparable ? 1 : -1;
}

static int loop_matches(const bench_varlen *v, const fa_stats *packed, int threads, const char *when,
                        bench_varlen_match *m)
{
    bench_varlen_match_loop(v, packed->block_q, packed->block_k, m);
    if (m->passed) return 0;
    int64_t b = m->first_bad;
    fprintf(
        stderr,
        "fa-bench: the per-sequence loop%s at threads=%d differs from the packed call on sequence %lld (%lld "
        "tokens, blocks %d/%d): %s, or a row the packed call did not write\n",
        when, threads, (long long)b, (long long)v->lengths.len[b], packed->block_q, packed->block_k,
        m->first_bad_bitwise
            ? "not bitwise equal (its dense call took the same blocks and cannot split its keys)"
            : "beyond the tolerance (its dense call took other blocks or may split its keys)");
    return -1;
}

// One thread count of --varlen: the packed call, the loop (recording its blocks) and the equal batch
// once each, all checked; then timed: packed, equal, loop.
static int varlen_row(const bench_options *o, bench_varlen *v, int threads, bench_golden golden[2],
                      bench_row *row)
{
    fa_context *ctx = make_context(o, threads);
    if (!ctx) return -1;
    bench_varlen_call call = {ctx, v};
    const bench_shape *shape = &v->packed.shape;
    fa_stats packed_stats = FA_STATS_INIT, equal_stats = FA_STATS_INIT;
    int rc = -1;
    fa_status s;
    bench_problem_poison_outputs(&v->packed);
    bench_problem_poison_outputs(&v->equal);
    bench_varlen_poison_loop(v);
    if ((s = bench_varlen_call_packed(&call)) != FA_OK) {
        failed("the packed fa_forward", threads, s);
        goto done;
    }
    fa_context_stats(ctx, &packed_stats);
    if ((s = bench_varlen_call_loop_recorded(ctx, v)) != FA_OK) {
        failed("the per-sequence fa_forward loop", threads, s);
        goto done;
    }
    if ((s = bench_varlen_call_equal(&call)) != FA_OK) {
        failed("the equal-length fa_forward", threads, s);
        goto done;
    }
    fa_context_stats(ctx, &equal_stats);

    bench_progress_detail("threads %d: verifying", threads);
    bench_verify_result vp, vl, ve;
    if (bench_varlen_verify(v, o->check_rows, &vp, &vl) != 0 ||
        bench_verify_forward(&v->equal, &v->equal_params, o->check_rows, &ve) != 0) {
        fprintf(stderr, "fa-bench: out of memory during verification\n");
        goto done;
    }
    bench_varlen_match match;
    if (verdict("the packed out and lse", &vp, threads, o, shape) != 0 ||
        verdict("the per-sequence loop's out and lse", &vl, threads, o, shape) != 0 ||
        verdict("the equal-length batch's out and lse", &ve, threads, o, shape) != 0 ||
        loop_matches(v, &packed_stats, threads, "", &match) != 0)
        goto done;
    int packed_same = same_as_first(&golden[0], &v->packed, &packed_stats, "packed", threads, "");
    int equal_same = same_as_first(&golden[1], &v->equal, &equal_stats, "equal-length", threads, "");
    if (packed_same < 0 || equal_same < 0) goto done;

    bench_progress_detail("threads %d: timing", threads);
    if ((s = bench_time_calls(bench_varlen_call_packed, &call, o->warmup, o->reps, o->min_time,
                              &row->timing)) != FA_OK ||
        (s = bench_time_calls(bench_varlen_call_equal, &call, o->warmup, o->reps, o->min_time,
                              &row->ragged.equal)) != FA_OK ||
        (s = bench_time_calls(bench_varlen_call_loop, &call, o->warmup, o->reps, o->min_time,
                              &row->ragged.loop)) != FA_OK) {
        failed("a timed fa_forward", threads, s);
        goto done;
    }
    // The last timed calls' outputs must still be the checked ones (races that need repetition).
    const char *after = " after the timed calls";
    if ((packed_same && same_as_first(&golden[0], &v->packed, &packed_stats, "packed", threads, after) < 0) ||
        (equal_same &&
         same_as_first(&golden[1], &v->equal, &equal_stats, "equal-length", threads, after) < 0) ||
        loop_matches(v, &packed_stats, threads, after, &match) != 0)
        goto done;

    finish_row(row, ctx, threads, packed_same == 1);
    row->stats.block_q = packed_stats.block_q; // the loop ran last: its last sequence's blocks
    row->stats.block_k = packed_stats.block_k;
    row->rows_checked = vp.rows_checked;
    row->err_out = vp.err_out;
    row->err_lse = vp.err_lse;
    row->ragged.seqs_bitwise = match.bitwise;
    row->ragged.seqs_other_blocks = match.other_blocks;
    row->ragged.seqs_may_split = match.may_split;
    row->ragged.err_loop = match.err;
    rc = 0;
done:
    fa_context_destroy(ctx);
    return rc;
}

// One thread count of --decode-batch: the contiguous cache and the paged one once each, checked;
// then timed in that order.
static int decode_row(const bench_options *o, bench_decode *d, int threads, bench_golden *golden,
                      bench_row *row)
{
    fa_context *ctx = make_context(o, threads);
    if (!ctx) return -1;
    bench_decode_call call = {ctx, d};
    int paged = d->page_size > 0, rc = -1;
    fa_stats contiguous_stats = FA_STATS_INIT;
    fa_status s;
    const char *bad;
    bench_decode_poison(d);
    if ((s = bench_decode_call_contiguous(&call)) != FA_OK) {
        failed("fa_forward on the contiguous cache", threads, s);
        goto done;
    }
    fa_context_stats(ctx, &contiguous_stats);
    if (paged && (s = bench_decode_call_paged(&call)) != FA_OK) {
        failed("fa_forward on the paged cache", threads, s);
        goto done;
    }
    bench_progress_detail("threads %d: verifying", threads);
    bench_verify_result vr;
    if (bench_decode_verify(d, o->check_rows, &vr) != 0) {
        fprintf(stderr, "fa-bench: out of memory during verification\n");
        goto done;
    }
    if (verdict("the contiguous cache's out and lse", &vr, threads, o, &d->pb.shape) != 0) goto done;
    if ((bad = bench_decode_check_outputs(d)) != NULL) {
        fprintf(stderr, "fa-bench: at threads=%d, %s\n", threads, bad);
        goto done;
    }
    int same = same_as_first(golden, &d->pb, &contiguous_stats, "contiguous", threads, "");
    if (same < 0) goto done;

    bench_progress_detail("threads %d: timing", threads);
    bench_timing *contiguous = paged ? &row->ragged.contiguous : &row->timing;
    if ((s = bench_time_calls(bench_decode_call_contiguous, &call, o->warmup, o->reps, o->min_time,
                              contiguous)) != FA_OK ||
        (paged && (s = bench_time_calls(bench_decode_call_paged, &call, o->warmup, o->reps, o->min_time,
                                        &row->timing)) != FA_OK)) {
        failed("a timed fa_forward", threads, s);
        goto done;
    }
    if ((bad = bench_decode_check_outputs(d)) != NULL) {
        fprintf(stderr, "fa-bench: after the timed calls at threads=%d, %s\n", threads, bad);
        goto done;
    }
    if (same &&
        same_as_first(golden, &d->pb, &contiguous_stats, "contiguous", threads, " after the timed calls") < 0)
        goto done;

    finish_row(row, ctx, threads, same == 1);
    row->rows_checked = vr.rows_checked;
    row->err_out = vr.err_out;
    row->err_lse = vr.err_lse;
    rc = 0;
done:
    fa_context_destroy(ctx);
    return rc;
}

// Each row keeps its fastest round, whole, as dense rows do (case.c); each compared call then keeps
// its own fastest round too, so that a burst in one round spoils neither side of a ratio.
static void keep_faster(bench_row *rows, int n, const bench_row *earlier, int n_earlier)
{
    for (int t = 0; t < n && t < n_earlier; t++) {
        bench_ragged_row now = rows[t].ragged;
        if (earlier[t].timing.min_s < rows[t].timing.min_s) rows[t] = earlier[t];
        bench_ragged_row *kept = &rows[t].ragged;
        if (now.equal.min_s < kept->equal.min_s) kept->equal = now.equal;
        if (now.loop.min_s < kept->loop.min_s) kept->loop = now.loop;
        if (now.contiguous.min_s < kept->contiguous.min_s) kept->contiguous = now.contiguous;
    }
}

// The figures that follow from the timings alone.
static void compute_figures(const bench_run_info *info, bench_row *rows, int n)
{
    for (int r = 0; r < n; r++) {
        bench_row *w = &rows[r];
        bench_ragged_row *g = &w->ragged;
        w->gflops = info->flops / w->timing.min_s / 1e9;
        if (info->shape.ragged.kind == BENCH_RAGGED_VARLEN) {
            g->equal_gflops = info->ragged.equal_flops / g->equal.min_s / 1e9;
            g->loop_gflops = info->flops / g->loop.min_s / 1e9;
            g->vs_equal = w->gflops / g->equal_gflops;
            g->vs_loop = w->gflops / g->loop_gflops;
        } else {
            w->kv_gbps = info->kv_bytes / w->timing.min_s / 1e9;
            g->contiguous_kv_gbps = info->kv_bytes / g->contiguous.min_s / 1e9;
            g->paged_over_contiguous = w->timing.min_s / g->contiguous.min_s;
        }
    }
    bench_rows_compute_scaling(rows, n);
}

// The in-run probes at each row's thread count, pinned as its threads were: the FMA peak for varlen,
// the read bandwidth for decode.
static void measure_probes(bench_machine *m, const bench_run_info *info, bench_row *rows, int n)
{
    if (!(m->probe_time > 0.0)) return;
    int decode = info->shape.ragged.kind == BENCH_RAGGED_DECODE;
    bench_progress_detail("probing the %s", decode ? "read bandwidth" : "FMA peak");
    for (int r = 0; r < n; r++) {
        bench_row *w = &rows[r];
        fa_bind bind = w->stats.bound_threads > 0 ? w->stats.bind : FA_BIND_NONE;
        if (decode) {
            w->read_gbps = bench_machine_read_gbps(m, w->threads, bind, &w->probe_spread);
            w->pct_read_bw = 100.0 * w->kv_gbps / w->read_gbps;
            w->ragged.contiguous_pct_read_bw = 100.0 * w->ragged.contiguous_kv_gbps / w->read_gbps;
        } else {
            bench_probe_isa probe;
            // Half calls compute in f32: their peak is f32's, as their FLOP count is (case.c).
            w->peak_gflops = bench_machine_peak(m, w->isa, kit_accum_dtype(info->shape.dtype), w->threads,
                                                bind, &probe, &w->probe_spread);
            snprintf(w->peak_isa, sizeof w->peak_isa, "%s", bench_probe_isa_name(probe));
            w->pct_peak = 100.0 * w->gflops / w->peak_gflops;
        }
    }
}

static void fill_info(const bench_options *o, int index, const bench_identity *id, const bench_lengths *l,
                      bench_run_info *info)
{
    const bench_case *c = &o->cases[index];
    *info = (bench_run_info){
        .opt = o,
        .version = fa_version(),
        .case_index = index,
        .shape = c->shape,
        .pass = c->pass,
        .reference = -1,
        .decode = c->shape.ragged.kind == BENCH_RAGGED_DECODE,
        .tolerance = bench_verify_tolerance(c->shape.dtype),
        .lse_tolerance = bench_verify_lse_tolerance(c->shape.dtype),
        .grad_tolerance = NAN,
        .grad_kv_tolerance = NAN,
        .grad_oracle_s = NAN,
        .omp_max_threads = omp_get_max_threads(),
        .blas = "not for ragged batches",
        .blas_warning = "",
        .identity = id,
    };
    info->ragged = (bench_ragged_info){l->total, l->min, l->max, l->mean, 0, NAN, 0, 0, 0};
}

// The decode batch outlives its case: the next case, or the next round, of the same caches with
// another page size (or the same) builds only its pool (bench_decode_prepare). Freed after the
// run's last case, after a failure, and before any other kind of case.
static bench_decode kept_decode;

int bench_run_ragged_case(const bench_options *o, int index, int round, const bench_identity *id,
                          bench_machine *m, bench_case_result *r)
{
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
    int varlen = c->shape.ragged.kind == BENCH_RAGGED_VARLEN, last_round = round == o->rounds - 1;
    double case_start = bench_progress_elapsed();
    char tag[64], words[320];
    if (o->rounds > 1)
        snprintf(tag, sizeof tag, "round %d/%d, case %d/%d", round + 1, o->rounds, index + 1, o->n_cases);
    else
        snprintf(tag, sizeof tag, "case %d/%d", index + 1, o->n_cases);
    bench_case_words(c, words, sizeof words);
    bench_progress("%s%s%s: %s", tag, o->preset ? " of preset " : "", o->preset ? o->preset : "", words);

    bench_varlen v;
    bench_decode *d = &kept_decode;
    bench_run_info *info = &r->info;
    bench_progress_detail("%s: building the batch", tag);
    if (varlen) bench_decode_free(d);
    if (varlen ? bench_varlen_init(&v, &c->shape, o->dist, o->seed)
               : bench_decode_prepare(d, &c->shape, o->dist, o->seed)) {
        free(earlier);
        return -1;
    }
    const bench_lengths *l = varlen ? &v.lengths : &d->used;
    fill_info(o, index, id, l, info);
    if (varlen) {
        info->flops = v.flops;
        info->visible_pairs = bench_lengths_pairs(l, &c->shape);
        info->ragged.l_eq = v.l_eq;
        info->ragged.equal_flops = v.equal_flops;
        info->shape.nq = info->shape.nk = l->max;
    } else {
        info->flops = d->flops;
        info->kv_bytes = d->kv_bytes;
        info->visible_pairs = d->keys_seen;
        info->ragged.capacity = d->capacity;
        info->ragged.num_pages = d->num_pages;
        info->ragged.pages_per_seq = d->pages_per_seq;
        info->shape.nk = d->capacity;
    }
    if (last_round) {
        bench_ragged_report_header(stdout, info);
        fflush(stdout);
    }

    int rc = 0;
    bench_golden golden[2];
    memset(golden, 0, sizeof golden);
    for (int t = 0; t < o->n_thread_counts && rc == 0; t++) {
        bench_row *row = &r->rows[t];
        bench_row_clear_extras(row);
        int threads = o->thread_counts[t];
        double start = bench_progress_elapsed();
        bench_progress("%s, threads %d (%d of %d): started", tag, threads, t + 1, o->n_thread_counts);
        if (varlen ? varlen_row(o, &v, threads, golden, row) : decode_row(o, d, threads, &golden[0], row)) {
            rc = -1;
        } else {
            bench_progress("%s, threads %d: done in %.1f s (min %.3f ms%s)", tag, threads,
                           bench_progress_elapsed() - start, 1e3 * row->timing.min_s,
                           varlen             ? ", packed"
                           : d->page_size > 0 ? ", paged"
                                              : ", contiguous");
        }
    }
    if (rc == 0) {
        r->n_rows = o->n_thread_counts;
        keep_faster(r->rows, r->n_rows, earlier, n_earlier);
        compute_figures(info, r->rows, r->n_rows);
        if (last_round) {
            measure_probes(m, info, r->rows, r->n_rows);
            bench_ragged_report_table(stdout, info, r->rows, r->n_rows);
            fflush(stdout);
        }
        bench_progress("%s: done in %.1f s", tag, bench_progress_elapsed() - case_start);
    }
    free(earlier);
    bench_golden_free(&golden[0]);
    bench_golden_free(&golden[1]);
    if (varlen) bench_varlen_free(&v);
    if (rc != 0 || (last_round && index == o->n_cases - 1)) bench_decode_free(d);
    return rc;
}
