/* SPDX-License-Identifier: BSD-3-Clause */
// One case: library rows (verified, then timed), probes, baseline, table. Speeds are reported
// only when every thread count has passed, so a printed GFLOP/s always belongs to a correct result.
#include "case.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FA_BENCH_HAVE_BLAS
#include "blas_baseline.h"
#endif
#include "calls.h"
#include "dtypes.h"
#include "golden.h"
#include "modifiers.h"
#include "problem.h"
#include "progress.h"
#include "ragged_case.h"
#include "report.h"
#include "timing.h"
#include "verify.h"
#include "verify_backward.h"

static int report_status(const char *what, int threads, fa_status s)
{
    fprintf(stderr, "fa-bench: %s at threads=%d failed: %s (status %d): %s\n", what, threads,
            fa_status_str(s), (int)s, fa_last_error());
    return -1;
}

// A head dim above the header's limit is refused by the library (the mla preset's D=576 until it is
// raised): said before anything is built, in words, with the library's own refusal. Returns 0 when the
// library accepts the shape's sizes (or refuses for another reason, which the call then reports).
static int refused_head_dim(const bench_problem *pb, const fa_params *params)
{
    const bench_shape *s = &pb->shape;
    if (s->d <= FA_MAX_HEAD_DIM && s->dv <= FA_MAX_HEAD_DIM) return 0;
    fa_status st = fa_forward_check(params, &pb->q, &pb->k, &pb->v, &pb->out, pb->lse);
    if (st == FA_OK) return 0; // a library built with a larger limit than this header's
    fprintf(stderr,
            "fa-bench: flashattn %s refuses D=%lld Dv=%lld: %s (status %d): %s\n"
            "fa-bench: (this build's flashattn.h allows head dims up to FA_MAX_HEAD_DIM = %d; the shape "
            "needs a library that accepts %lld)\n",
            fa_version(), (long long)s->d, (long long)s->dv, fa_status_str(st), (int)st, fa_last_error(),
            FA_MAX_HEAD_DIM, (long long)(s->d > s->dv ? s->d : s->dv));
    return -1;
}

// Checks the outputs of the verified call: out and lse always (a backward's inputs come from that
// forward), the gradients when the pass has them. Fills the row's error fields; -1 after a message.
// A half q's gradient oracle starts from the out the backward was handed (given_out.h): computed here,
// once out has passed, and again only when a thread count's out differs.
static int verify_outputs(const bench_options *o, const bench_problem *pb, const fa_params *params,
                          bench_backward_oracle *oracle, int threads, bench_row *row)
{
    bench_verify_result vr;
    if (bench_verify_forward(pb, params, o->check_rows, &vr) != 0) {
        fprintf(stderr, "fa-bench: out of memory during verification\n");
        return -1;
    }
    char types[48];
    bench_dtypes_words(&pb->shape, types, sizeof types);
    if (!vr.passed) {
        fprintf(stderr, "fa-bench: verification of out and lse FAILED at threads=%d (%s, bind %s)\n", threads,
                types, bench_bind_name(o->bind));
        bench_verify_print_worst(stderr, &vr);
        return -1;
    }
    row->rows_checked = vr.rows_checked;
    row->err_out = vr.err_out;
    row->err_lse = vr.err_lse;
    row->err_dq = row->err_dk = row->err_dv = row->err_dsinks = NAN;
    if (!pb->has_gradients) return 0;

    if (bench_backward_oracle_stale(oracle, pb)) {
        bench_progress_detail("threads %d: float64 gradient oracle from the out the backward was handed",
                              threads);
        if (bench_backward_oracle_compute(oracle, pb, params, o->check_rows) != 0) {
            fprintf(stderr, "fa-bench: out of memory in the gradient oracle\n");
            return -1;
        }
    }
    bench_verify_backward_result br;
    bench_verify_backward(pb, oracle, &br);
    if (!br.passed) {
        fprintf(stderr, "fa-bench: verification of dq, dk and dv FAILED at threads=%d (%s, bind %s)\n",
                threads, types, bench_bind_name(o->bind));
        bench_verify_backward_print_worst(stderr, &br);
        return -1;
    }
    row->rows_checked_dq = br.rows_dq;
    row->rows_checked_dkdv = br.rows_dkdv;
    row->err_dq = br.err_dq;
    row->err_dk = br.err_dk;
    row->err_dv = br.err_dv;
    row->err_dsinks = br.err_dsinks;
    return 0;
}

// One thread count, start to finish. Returns 0 with *row filled, or -1 after printing why.
static int run_thread_count(const bench_options *o, bench_pass pass, bench_problem *pb,
                            const fa_params *params, bench_backward_oracle *oracle, int threads,
                            bench_golden *golden, bench_row *row)
{
    fa_context_opts copts = FA_CONTEXT_OPTS_INIT;
    copts.num_threads = threads;
    copts.bind = o->bind;
    copts.block_q = o->block_q;
    copts.block_k = o->block_k;
    fa_context *ctx = NULL;
    fa_status s = fa_context_create(&ctx, &copts);
    if (s != FA_OK) return report_status("fa_context_create", threads, s);
    bench_call call = {ctx, params, pb};
    bench_call_fn timed = bench_pass_call(pass);
    const char *timed_name = bench_pass_call_name(pass);
    int rc = -1;

    // Correctness first: NaN-filled outputs, one call (for bwd, after the forward that makes its out
    // and lse, on the same context), the oracles on sampled rows.
    bench_problem_poison_outputs(pb);
    if (pass == BENCH_PASS_BWD && (s = bench_call_forward(&call)) != FA_OK) {
        report_status("fa_forward (the backward's inputs)", threads, s);
        goto done;
    }
    if ((s = timed(&call)) != FA_OK) {
        report_status(timed_name, threads, s);
        goto done;
    }
    bench_progress_detail("threads %d: verifying", threads);
    if (verify_outputs(o, pb, params, oracle, threads, row) != 0) goto done;
    // With --dropout the verified call was the one without: the dropout call's outputs are what the
    // bitwise checks below hold across thread counts and timed calls; the call without is timed
    // last, for the ratio.
    fa_params dropped = *params;
    dropped.dropout_p = o->dropout;
    dropped.dropout_seed = o->seed;
    if (o->dropout > 0.0) {
        call.params = &dropped;
        if ((pass == BENCH_PASS_BWD && (s = bench_call_forward(&call)) != FA_OK) ||
            (s = timed(&call)) != FA_OK) {
            report_status(timed_name, threads, s);
            goto done;
        }
    }

    fa_stats st = FA_STATS_INIT;
    fa_context_stats(ctx, &st);
    int comparable = 1;
    const char *differs = NULL;
    if (!golden->have) {
        if (bench_golden_save(golden, pb, &st) != 0) goto done;
    } else if (st.block_q == golden->block_q && st.block_k == golden->block_k) {
        if ((differs = bench_golden_first_difference(golden, pb)) != NULL) {
            fprintf(stderr,
                    "fa-bench: %s with %d threads differs bitwise from the first thread count's "
                    "(same blocks %d/%d): the determinism contract is broken\n",
                    differs, threads, st.block_q, st.block_k);
            goto done;
        }
    } else {
        comparable = 0; // different block sizes round differently; nothing to promise
    }

    bench_progress_detail("threads %d: timing", threads);
    s = bench_time_calls(timed, &call, o->warmup, o->reps, o->min_time, &row->timing);
    if (s != FA_OK) {
        report_status(timed_name, threads, s);
        goto done;
    }
    // The last timed call's outputs must still be the verified ones: catches races that show up
    // only under repetition.
    if (comparable && (differs = bench_golden_first_difference(golden, pb)) != NULL) {
        fprintf(stderr,
                "fa-bench: %s after %d timed calls with %d threads is not bitwise identical to the "
                "verified one\n",
                differs, row->timing.count, threads);
        goto done;
    }

    if (o->dropout > 0.0) {
        bench_call plain = {ctx, params, pb};
        s = bench_time_calls(timed, &plain, o->warmup, o->reps, o->min_time, &row->plain_timing);
        if (s != FA_OK) {
            report_status(timed_name, threads, s);
            goto done;
        }
    }

    row->stats = (fa_stats)FA_STATS_INIT;
    fa_context_stats(ctx, &row->stats);
    snprintf(row->isa, sizeof row->isa, "%s", row->stats.isa ? row->stats.isa : "?");
    snprintf(row->plan, sizeof row->plan, "%s", row->stats.backward_plan ? row->stats.backward_plan : "-");
    row->stats.isa = NULL;
    row->stats.backward_plan = NULL;
    row->threads = threads;
    row->bitwise_identical = comparable ? 1 : -1;
    rc = 0;
done:
    fa_context_destroy(ctx);
    return rc;
}

// The probes at each row's thread count, pinned as that row's threads were. Measured after the
// library's rows so that they never run while the library is timed.
static void measure_probes(bench_machine *m, const bench_run_info *info, bench_row *rows, int n)
{
    if (!(m->probe_time > 0.0)) return;
    bench_progress_detail("probing the FMA peak%s",
                          info->decode || info->bias_bandwidth ? " and the read bandwidth" : "");
    for (int r = 0; r < n; r++) {
        bench_row *w = &rows[r];
        fa_bind bind = w->stats.bound_threads > 0 ? w->stats.bind : FA_BIND_NONE;
        bench_probe_isa probe;
        // Half calls compute in f32: their peak is f32's, as their FLOP count is.
        w->peak_gflops = bench_machine_peak(m, w->isa, kit_accum_dtype(info->shape.dtype), w->threads, bind,
                                            &probe, &w->probe_spread);
        snprintf(w->peak_isa, sizeof w->peak_isa, "%s", bench_probe_isa_name(probe));
        w->pct_peak = 100.0 * w->gflops / w->peak_gflops;
        if (info->decode || info->bias_bandwidth) {
            double spread;
            w->read_gbps = bench_machine_read_gbps(m, w->threads, bind, &spread);
            w->probe_spread = fmax(w->probe_spread, spread); // the more disturbed of the two
        }
        if (info->decode) {
            w->kv_gbps = info->kv_bytes / w->timing.min_s / 1e9;
            w->pct_read_bw = 100.0 * w->kv_gbps / w->read_gbps;
        }
        if (info->bias_bandwidth) {
            w->bias_gbps = info->bias_bytes / w->timing.min_s / 1e9;
            w->pct_bias_bw = 100.0 * w->bias_gbps / w->read_gbps;
        }
    }
}

#ifdef FA_BENCH_HAVE_BLAS
// One mode at one row's thread count: one call compared with the library's out (which pb still
// holds: verified, and bitwise identical across rows), then timed only if it agrees. Returns 0, or
// -1 after a message.
static int time_blas_mode(const bench_options *o, const bench_run_info *info, bench_blas *b,
                          bench_blas_mode mode, bench_row *w, bench_timing *t)
{
    bench_progress("case %d/%d, threads %d: BLAS baseline (%s, %d timed call%s)", info->case_index + 1,
                   o->n_cases, w->threads, bench_blas_mode_name(mode), o->blas_reps,
                   o->blas_reps == 1 ? "" : "s");
    bench_blas_configure(b, mode, w->threads);
    memset(b->out, 0xff, b->out_bytes); // NaN: a value the baseline never writes fails the check
    bench_blas_call(b);
    double err = bench_blas_difference(b);
    if (!(err <= info->tolerance)) {
        fprintf(stderr,
                "fa-bench: the BLAS baseline (%s) differs from the library's out by %.3g (normwise) at "
                "threads=%d, above %.0e: not reported\n",
                bench_blas_mode_name(mode), err, w->threads, info->tolerance);
        return -1;
    }
    if (bench_time_calls(bench_blas_call, b, o->warmup, o->blas_reps, 0.0, t) != FA_OK) return -1;
    if (!(err <= w->blas_err)) w->blas_err = err; // the worse of the modes timed (NAN at first)
    return 0;
}

// The unfused baseline at each row's thread count, in the mode(s) asked for; the faster is kept.
static void measure_blas(const bench_options *o, const bench_run_info *info, const bench_problem *pb,
                         const fa_params *params, bench_row *rows, int n)
{
    int max_threads = 1, omp_default_threads = omp_get_max_threads();
    for (int r = 0; r < n; r++)
        if (rows[r].threads > max_threads) max_threads = rows[r].threads;
    bench_blas b;
    if (bench_blas_init(&b, pb, params, max_threads) != 0) return;
    bench_blas_mode modes[2] = {BENCH_BLAS_ROW_BLOCKS, BENCH_BLAS_GEMM_THREADS};
    int first = 0, last = 1;
    if (o->blas_mode != BENCH_BLAS_BEST) first = last = o->blas_mode == BENCH_BLAS_ROW_BLOCKS ? 0 : 1;
    for (int r = 0; r < n; r++) {
        bench_row *w = &rows[r];
        for (int k = first; k <= last; k++) {
            bench_timing t;
            if (time_blas_mode(o, info, &b, modes[k], w, &t) != 0) continue;
            w->blas_mode_min_s[modes[k]] = t.min_s;
            if (w->blas_mode == BENCH_BLAS_BEST || t.min_s < w->blas_timing.min_s) {
                w->blas_mode = modes[k];
                w->blas_timing = t;
            }
        }
        if (w->blas_mode == BENCH_BLAS_BEST) continue;
        w->blas_gflops = info->flops / w->blas_timing.min_s / 1e9;
        w->speedup_vs_blas = w->blas_timing.min_s / w->timing.min_s;
    }
    // One OpenBLAS thread between cases. An OpenMP build of OpenBLAS sets OpenMP's default team size
    // with it, which fa-bench's own parallel loops (verification) use: restored.
    bench_blas_configure(&b, BENCH_BLAS_ROW_BLOCKS, 1);
    omp_set_num_threads(omp_default_threads);
    bench_blas_free(&b);
}
#endif

#ifdef FA_BENCH_HAVE_BLAS
// The baseline's gemms are cblas_sgemm and cblas_dgemm on one type for q, k and v.
static int blas_dtype_missing(const bench_shape *s)
{
    return kit_dtype_is_half(s->dtype) || kit_dtype_is_half(s->kv_dtype) ||
           kit_dtype_is_quantized(s->kv_dtype);
}
#endif

// The BLAS baseline's description, or why it does not run for this case.
static const char *blas_status(const bench_options *o, const bench_case *c)
{
#ifdef FA_BENCH_HAVE_BLAS
    if (o->blas_reps == 0) return "off (--blas-reps N turns it on)";
    if (c->pass != BENCH_PASS_FWD) return "forward pass only";
    if (bench_mods_any(&c->shape.mods)) return "not for score modifiers (it has the causal mask only)";
    if (blas_dtype_missing(&c->shape)) return "f32 and f64 only (CBLAS has no bf16, f16 or 8-bit gemm)";
    return bench_blas_describe();
#else
    (void)o;
    (void)c;
    return "not built (CMake found no OpenBLAS)";
#endif
}

// The BLAS core warning, on stderr the first time a case runs the baseline; "" when none or not run.
static const char *blas_warning(const bench_run_info *info)
{
#ifdef FA_BENCH_HAVE_BLAS
    static int printed;
    if (!info->blas_runs) return "";
    const char *w = bench_blas_core_warning();
    if (w[0] && !printed) fprintf(stderr, "fa-bench: WARNING: %s\n", w);
    printed = 1;
    return w;
#else
    (void)info;
    return "";
#endif
}

static void fill_info(const bench_options *o, int index, const bench_identity *id, bench_run_info *info)
{
    const bench_case *c = &o->cases[index];
    const bench_shape *s = &c->shape;
    int gradients = c->pass != BENCH_PASS_FWD;
    // K and V bytes at the kv group's element size (a bf16 KV cache reads half an f32 cache's bytes),
    // a quantized row's scale included; with --shared-kv, V's rows are inside K's: read once.
    double row_bytes =
        bench_kv_row_bytes(s->kv_dtype, s->d) + (s->shared_kv ? 0.0 : bench_kv_row_bytes(s->kv_dtype, s->dv));
    *info = (bench_run_info){
        .opt = o,
        .version = fa_version(),
        .case_index = index,
        .shape = *s,
        .pass = c->pass,
        .flops = bench_pass_flops(s, c->pass),
        .visible_pairs = bench_visible_pairs(s),
        .bias_bytes = bench_bias_read_bytes(s),
        .bias_bandwidth = s->mods.bias == BENCH_BIAS_FULL,
        .reference = c->reference,
        .kv_bytes = (double)s->b * (double)s->hkv * (double)s->nk * row_bytes,
        .decode = s->nq <= BENCH_DECODE_MAX_NQ,
        .tolerance = bench_verify_tolerance(s->dtype),
        .lse_tolerance = bench_verify_lse_tolerance(s->dtype),
        .grad_tolerance = gradients ? bench_verify_gradient_tolerance(s->dtype) : NAN,
        .grad_kv_tolerance = gradients ? bench_verify_gradient_tolerance(s->kv_dtype) : NAN,
        .grad_oracle_s = NAN,
        .omp_max_threads = omp_get_max_threads(),
        .blas = blas_status(o, c),
        .identity = id,
    };
#ifdef FA_BENCH_HAVE_BLAS
    info->blas_runs =
        o->blas_reps > 0 && c->pass == BENCH_PASS_FWD && !bench_mods_any(&s->mods) && !blas_dtype_missing(s);
#endif
    info->blas_warning = blas_warning(info);
}

// Each row's GFLOP/s as a share of the reference case's row at the same thread count.
static void compare_with_reference(bench_row *rows, int n, const bench_case_result *reference)
{
    if (!reference) return;
    for (int r = 0; r < n && r < reference->n_rows; r++) {
        if (reference->rows[r].threads != rows[r].threads)
            continue; // same list: never, but say nothing wrong
        rows[r].reference_gflops = reference->rows[r].gflops;
        rows[r].pct_of_reference = 100.0 * rows[r].gflops / rows[r].reference_gflops;
    }
}

// Each row of an earlier round that was faster than this round's replaces it, whole: a row is
// always one round's measurement, with that round's timing, stats and errors.
static void keep_faster(bench_row *rows, int n, const bench_row *earlier, int n_earlier)
{
    for (int t = 0; t < n && t < n_earlier; t++)
        if (earlier[t].timing.min_s < rows[t].timing.min_s) rows[t] = earlier[t];
}

int bench_run_case(const bench_options *o, int index, int round, const bench_identity *id, bench_machine *m,
                   const bench_case_result *reference, bench_case_result *r)
{
    if (o->cases[index].shape.ragged.kind != BENCH_RAGGED_NONE)
        return bench_run_ragged_case(o, index, round, id, m, r);
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
    bench_run_info *info = &r->info;
    double case_start = bench_progress_elapsed();
    const int last_round = round == o->rounds - 1;
    char tag[64], words[320];
    if (o->rounds > 1)
        snprintf(tag, sizeof tag, "round %d/%d, case %d/%d", round + 1, o->rounds, index + 1, o->n_cases);
    else
        snprintf(tag, sizeof tag, "case %d/%d", index + 1, o->n_cases);
    bench_case_words(&o->cases[index], words, sizeof words);
    bench_progress("%s%s%s: %s", tag, o->preset ? " of preset " : "", o->preset ? o->preset : "", words);
    fill_info(o, index, id, info);
    if (last_round) {
        bench_report_header(stdout, info);
        fflush(stdout); // the header shows what is running while the (possibly long) runs go on
    }

    int gradients = info->pass != BENCH_PASS_FWD;
    bench_problem pb;
    if (bench_problem_init(&pb, &info->shape, o->dist, o->seed, gradients) != 0) {
        free(earlier);
        return -1;
    }
    fa_params params = FA_PARAMS_INIT;
    bench_modifiers_params(&pb, &params);
    bench_problem_kv_scales(&pb, &params);

    int rc = refused_head_dim(&pb, &params);
    // The gradient oracle depends on the problem only: computed once, before any library call. With a
    // half q it depends on the forward's out too: verify_outputs computes it then.
    bench_backward_oracle oracle = {0};
    if (rc == 0 && gradients && !kit_dtype_is_half(info->shape.dtype)) {
        bench_progress("%s: float64 gradient oracle", tag);
        if (bench_backward_oracle_compute(&oracle, &pb, &params, o->check_rows) != 0) {
            fprintf(stderr, "fa-bench: out of memory in the gradient oracle\n");
            rc = -1;
        }
    }

    bench_golden golden = {0};
    for (int t = 0; t < o->n_thread_counts && rc == 0; t++) {
        bench_row *row = &r->rows[t];
        bench_row_clear_extras(row);
        int threads = o->thread_counts[t];
        double start = bench_progress_elapsed();
        bench_progress("%s, threads %d (%d of %d): started", tag, threads, t + 1, o->n_thread_counts);
        if (run_thread_count(o, info->pass, &pb, &params, &oracle, threads, &golden, row) != 0) {
            rc = -1;
        } else {
            row->gflops = info->flops / row->timing.min_s / 1e9;
            bench_progress("%s, threads %d: done in %.1f s (%d timed call%s, min %.3f ms, %.1f GFLOP/s)", tag,
                           threads, bench_progress_elapsed() - start, row->timing.count,
                           row->timing.count == 1 ? "" : "s", 1e3 * row->timing.min_s, row->gflops);
        }
    }
    if (gradients) {
        info->grad_oracle_s = oracle.seconds;
        info->grad_oracle_runs = oracle.runs;
    }
    if (rc == 0) {
        r->n_rows = o->n_thread_counts;
        keep_faster(r->rows, r->n_rows, earlier, n_earlier);
        bench_rows_compute_scaling(r->rows, r->n_rows);
        compare_with_reference(r->rows, r->n_rows, reference);
        // The probes and the baseline once, in the last round, with the rows it reports.
        if (last_round) {
            measure_probes(m, info, r->rows, r->n_rows);
#ifdef FA_BENCH_HAVE_BLAS
            if (info->blas_runs) measure_blas(o, info, &pb, &params, r->rows, r->n_rows);
#endif
            bench_report_table(stdout, info, r->rows, r->n_rows);
            for (int t = 0; o->dropout > 0.0 && t < r->n_rows; t++)
                printf("dropout %g: threads %d: with %.3f ms, without %.3f ms (min of %d and %d calls): "
                       "ratio %.3f\n",
                       o->dropout, r->rows[t].threads, 1e3 * r->rows[t].timing.min_s,
                       1e3 * r->rows[t].plain_timing.min_s, r->rows[t].timing.count,
                       r->rows[t].plain_timing.count,
                       r->rows[t].timing.min_s / r->rows[t].plain_timing.min_s);
            fflush(stdout);
        }
        bench_progress("%s: done in %.1f s", tag, bench_progress_elapsed() - case_start);
    }
    free(earlier);
    bench_golden_free(&golden);
    bench_backward_oracle_free(&oracle);
    bench_problem_free(&pb);
    return rc;
}
