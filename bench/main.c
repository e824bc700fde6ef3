// fa-bench: parse the command line, build one problem, and for each thread count create a context,
// run the pass once, verify against the float64 oracles, and only then time it. Speeds are reported
// only when every thread count has passed, so a printed GFLOP/s always belongs to a correct result.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calls.h"
#include "export.h"
#include "golden.h"
#include "options.h"
#include "problem.h"
#include "report.h"
#include "results.h"
#include "timing.h"
#include "verify.h"
#include "verify_backward.h"

static int report_status(const char *what, int threads, fa_status s)
{
    fprintf(stderr, "fa-bench: %s at threads=%d failed: %s (status %d)\n", what, threads, fa_status_str(s),
            (int)s);
    return -1;
}

// Checks the outputs of the verified call: out and lse always (a backward's inputs come from that
// forward), the gradients when the pass has them. Fills the row's error fields; -1 after a message.
static int verify_outputs(const bench_options *o, const bench_problem *pb, const fa_params *params,
                          const bench_backward_oracle *oracle, int threads, bench_row *row)
{
    bench_verify_result vr;
    if (bench_verify_forward(pb, params, o->check_rows, &vr) != 0) {
        fprintf(stderr, "fa-bench: out of memory during verification\n");
        return -1;
    }
    if (!vr.passed) {
        fprintf(stderr, "fa-bench: verification of out and lse FAILED at threads=%d (%s, bind %s)\n", threads,
                bench_dtype_name(pb->shape.dtype), bench_bind_name(o->bind));
        bench_verify_print_worst(stderr, &vr);
        return -1;
    }
    row->rows_checked = vr.rows_checked;
    row->err_out = vr.err_out;
    row->err_lse = vr.err_lse;
    row->err_dq = row->err_dk = row->err_dv = NAN;
    if (!pb->has_gradients) return 0;

    bench_verify_backward_result br;
    bench_verify_backward(pb, oracle, &br);
    if (!br.passed) {
        fprintf(stderr, "fa-bench: verification of dq, dk and dv FAILED at threads=%d (%s, bind %s)\n",
                threads, bench_dtype_name(pb->shape.dtype), bench_bind_name(o->bind));
        bench_verify_backward_print_worst(stderr, &br);
        return -1;
    }
    row->rows_checked_dq = br.rows_dq;
    row->rows_checked_dkdv = br.rows_dkdv;
    row->err_dq = br.err_dq;
    row->err_dk = br.err_dk;
    row->err_dv = br.err_dv;
    return 0;
}

// One thread count, start to finish. Returns 0 with *row filled, or -1 after printing why.
static int run_thread_count(const bench_options *o, bench_problem *pb, const fa_params *params,
                            const bench_backward_oracle *oracle, int threads, bench_golden *golden,
                            bench_row *row)
{
    int progress = isatty(STDERR_FILENO);
    fa_context_opts copts = fa_context_opts_default();
    copts.num_threads = threads;
    copts.bind = o->bind;
    copts.block_q = o->block_q;
    copts.block_k = o->block_k;
    fa_context *ctx = NULL;
    fa_status s = fa_context_create(&ctx, &copts);
    if (s != FA_OK) return report_status("fa_context_create", threads, s);
    bench_call call = {ctx, params, pb};
    bench_call_fn timed = bench_pass_call(o->pass);
    const char *timed_name = bench_pass_call_name(o->pass);
    int rc = -1;

    // Correctness first: NaN-filled outputs, one call (for bwd, after the forward that makes its out
    // and lse, on the same context), the oracles on sampled rows.
    bench_problem_poison_outputs(pb);
    if (o->pass == BENCH_PASS_BWD && (s = bench_call_forward(&call)) != FA_OK) {
        report_status("fa_forward (the backward's inputs)", threads, s);
        goto done;
    }
    if ((s = timed(&call)) != FA_OK) {
        report_status(timed_name, threads, s);
        goto done;
    }
    if (progress) fprintf(stderr, "fa-bench: threads=%d: verifying...\n", threads);
    if (verify_outputs(o, pb, params, oracle, threads, row) != 0) goto done;

    fa_stats st;
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

    if (progress) fprintf(stderr, "fa-bench: threads=%d: timing...\n", threads);
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

    fa_context_stats(ctx, &row->stats);
    snprintf(row->isa, sizeof row->isa, "%s", row->stats.isa ? row->stats.isa : "?");
    row->stats.isa = NULL;
    row->threads = threads;
    row->bitwise_identical = comparable ? 1 : -1;
    rc = 0;
done:
    fa_context_destroy(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    bench_options o;
    switch (bench_parse_options(argc, argv, &o)) {
    case BENCH_PARSE_HELP: return 0;
    case BENCH_PARSE_ERROR: return 2;
    case BENCH_PARSE_RUN: break;
    }

    int gradients = o.pass != BENCH_PASS_FWD;
    bench_problem pb;
    if (bench_problem_init(&pb, &o.shape, o.dist, o.seed, gradients) != 0) return 1;
    fa_params params = fa_params_default();
    params.causal = o.shape.causal;
    bench_run_info info = {&o,
                           fa_version(),
                           bench_pass_flops(&o.shape, o.pass),
                           bench_verify_tolerance(o.shape.dtype),
                           gradients ? bench_verify_gradient_tolerance(o.shape.dtype) : NAN,
                           NAN,
                           omp_get_max_threads()};
    bench_report_header(stdout, &info);
    fflush(stdout); // the header shows what is running while the (possibly long) runs go on

    int rc = 0;
    // The gradient oracle depends on the problem only: computed once, before any library call.
    bench_backward_oracle oracle = {0};
    if (gradients) {
        if (isatty(STDERR_FILENO)) fprintf(stderr, "fa-bench: computing the float64 gradient oracle...\n");
        if (bench_backward_oracle_compute(&oracle, &pb, &params, o.check_rows) != 0) {
            fprintf(stderr, "fa-bench: out of memory in the gradient oracle\n");
            rc = 1;
        }
        info.grad_oracle_s = oracle.seconds;
    }

    bench_row rows[BENCH_MAX_THREAD_COUNTS];
    memset(rows, 0, sizeof rows);
    bench_golden golden = {0};
    for (int t = 0; t < o.n_thread_counts && rc == 0; t++) {
        if (run_thread_count(&o, &pb, &params, &oracle, o.thread_counts[t], &golden, &rows[t]) != 0)
            rc = 1;
        else
            rows[t].gflops = info.flops / rows[t].timing.min_s / 1e9;
    }
    if (rc == 0) {
        bench_rows_compute_scaling(rows, o.n_thread_counts);
        bench_report_table(stdout, &info, rows, o.n_thread_counts);
        fflush(stdout); // before the files, in case one of them is /dev/stdout
        if (o.csv_path && bench_export_csv(o.csv_path, &info, rows, o.n_thread_counts) != 0) rc = 1;
        if (o.json_path && bench_export_json(o.json_path, &info, rows, o.n_thread_counts) != 0) rc = 1;
    }
    bench_golden_free(&golden);
    bench_backward_oracle_free(&oracle);
    bench_problem_free(&pb);
    return rc;
}
