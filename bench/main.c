// fa-bench: parse the command line, build one problem, and for each thread count create a context,
// run once, verify against the float64 oracle, and only then time it. Speeds are reported only
// when every thread count has passed, so a printed GFLOP/s always belongs to a correct result.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export.h"
#include "options.h"
#include "problem.h"
#include "report.h"
#include "results.h"
#include "timing.h"
#include "verify.h"

typedef struct {
    fa_context *ctx;
    const fa_params *params;
    const bench_problem *pb;
} forward_call;

static fa_status call_forward(void *arg)
{
    const forward_call *c = arg;
    return fa_forward(c->ctx, c->params, &c->pb->q, &c->pb->k, &c->pb->v, &c->pb->out, c->pb->lse);
}

// The run's first verified output. The library promises identical bytes for every thread count
// and repetition (same block sizes), so every later output is compared with it.
typedef struct {
    void *out, *lse;
    int block_q, block_k;
    int have;
} golden_output;

static int save_golden(golden_output *g, const bench_problem *pb, const fa_stats *st)
{
    g->out = malloc(pb->out_bytes);
    g->lse = malloc(pb->lse_bytes);
    if (!g->out || !g->lse) {
        fprintf(stderr, "fa-bench: cannot allocate a copy of the output for the determinism check\n");
        return -1;
    }
    memcpy(g->out, pb->out.data, pb->out_bytes);
    memcpy(g->lse, pb->lse, pb->lse_bytes);
    g->block_q = st->block_q;
    g->block_k = st->block_k;
    g->have = 1;
    return 0;
}

static int equals_golden(const golden_output *g, const bench_problem *pb)
{
    return memcmp(g->out, pb->out.data, pb->out_bytes) == 0 && memcmp(g->lse, pb->lse, pb->lse_bytes) == 0;
}

static int report_status(const char *what, int threads, fa_status s)
{
    fprintf(stderr, "fa-bench: %s at threads=%d failed: %s (status %d)\n", what, threads, fa_status_str(s),
            (int)s);
    return -1;
}

// One thread count, start to finish. Returns 0 with *row filled, or -1 after printing why.
static int run_thread_count(const bench_options *o, bench_problem *pb, const fa_params *params, int threads,
                            golden_output *golden, bench_row *row)
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
    forward_call call = {ctx, params, pb};
    int rc = -1;

    // Correctness first: a NaN-filled output, one call, the oracle on sampled rows.
    bench_problem_poison_outputs(pb);
    s = call_forward(&call);
    if (s != FA_OK) {
        report_status("fa_forward", threads, s);
        goto done;
    }
    if (progress) fprintf(stderr, "fa-bench: threads=%d: verifying...\n", threads);
    bench_verify_result vr;
    if (bench_verify_forward(pb, params, o->check_rows, &vr) != 0) {
        fprintf(stderr, "fa-bench: out of memory during verification\n");
        goto done;
    }
    if (!vr.passed) {
        fprintf(stderr, "fa-bench: verification FAILED at threads=%d (%s, bind %s)\n", threads,
                bench_dtype_name(pb->shape.dtype), bench_bind_name(o->bind));
        bench_verify_print_worst(stderr, &vr);
        goto done;
    }

    fa_stats st;
    fa_context_stats(ctx, &st);
    int comparable = 1;
    if (!golden->have) {
        if (save_golden(golden, pb, &st) != 0) goto done;
    } else if (st.block_q == golden->block_q && st.block_k == golden->block_k) {
        if (!equals_golden(golden, pb)) {
            fprintf(stderr,
                    "fa-bench: output with %d threads differs bitwise from the first thread count's "
                    "(same blocks %d/%d): the determinism contract is broken\n",
                    threads, st.block_q, st.block_k);
            goto done;
        }
    } else {
        comparable = 0; // different block sizes round differently; nothing to promise
    }

    if (progress) fprintf(stderr, "fa-bench: threads=%d: timing...\n", threads);
    s = bench_time_calls(call_forward, &call, o->warmup, o->reps, o->min_time, &row->timing);
    if (s != FA_OK) {
        report_status("timed fa_forward", threads, s);
        goto done;
    }
    // The last timed call's output must still be the verified one: catches races that show up
    // only under repetition.
    if (comparable && !equals_golden(golden, pb)) {
        fprintf(stderr,
                "fa-bench: output after %d timed calls with %d threads is not bitwise identical to the "
                "verified one\n",
                row->timing.count, threads);
        goto done;
    }

    fa_context_stats(ctx, &row->stats);
    snprintf(row->isa, sizeof row->isa, "%s", row->stats.isa ? row->stats.isa : "?");
    row->stats.isa = NULL;
    row->threads = threads;
    row->rows_checked = vr.rows_checked;
    row->err_out = vr.err_out;
    row->err_lse = vr.err_lse;
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

    bench_problem pb;
    if (bench_problem_init(&pb, &o.shape, o.dist, o.seed) != 0) return 1;
    fa_params params = fa_params_default();
    params.causal = o.shape.causal;
    bench_run_info info = {&o, fa_version(), bench_forward_flops(&o.shape),
                           bench_verify_tolerance(o.shape.dtype), omp_get_max_threads()};
    bench_report_header(stdout, &info);
    fflush(stdout); // the header shows what is running while the (possibly long) runs go on

    bench_row rows[BENCH_MAX_THREAD_COUNTS];
    memset(rows, 0, sizeof rows);
    golden_output golden = {0};
    int rc = 0;
    for (int t = 0; t < o.n_thread_counts && rc == 0; t++) {
        if (run_thread_count(&o, &pb, &params, o.thread_counts[t], &golden, &rows[t]) != 0)
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
    free(golden.out);
    free(golden.lse);
    bench_problem_free(&pb);
    return rc;
}
