/* SPDX-License-Identifier: BSD-3-Clause */
// A dense case's batch (batch.h): one problem, the pass's call on it (and, with --dropout, the same call
// without dropout beside it), checked against the float64 oracles; the BLAS baseline beside its rows.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#ifdef FA_BENCH_HAVE_BLAS
#include "blas_baseline.h"
#endif
#include "calls.h"
#include "dtypes.h"
#include "modifiers.h"
#include "progress.h"
#include "verify.h"
#include "verify_backward.h"

typedef struct {
    bench_problem pb;
    fa_params params;  // the verified call's
    fa_params dropped; // --dropout: the held and timed call's (params with dropout_p set)
    bench_backward_oracle oracle;
    bench_call call, plain; // the held and timed call (params, or dropped); params's (verified)
    bench_pass pass;
    bench_run_info *info; // the case's: the gradient oracle's time goes there
} dense;

// A head dim above the header's limit is refused by the library (the mla preset's D=576 until it is
// raised): said before anything runs, in words, with the library's own refusal. Returns 0 when the
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

// The verified call on NaN-filled outputs; for bwd, after the forward that makes its out and lse, on
// the same context.
static int run_once(bench_batch *b, const bench_options *o, int threads)
{
    (void)o;
    dense *k = b->kind;
    fa_status s;
    k->plain.ctx = k->call.ctx; // the runner sets the timed calls' only
    bench_problem_poison_outputs(&k->pb);
    if (k->pass == BENCH_PASS_BWD && (s = bench_call_forward(&k->plain)) != FA_OK)
        return bench_batch_failed("fa_forward (the backward's inputs)", threads, s);
    if ((s = bench_pass_call(k->pass)(&k->plain)) != FA_OK)
        return bench_batch_failed(bench_pass_call_name(k->pass), threads, s);
    return 0;
}

// Checks out and lse always (a backward's inputs come from that forward), the gradients when the pass
// has them. The gradient oracle is computed at the first thread count, once out has passed, and reused:
// it depends on the problem alone, but for a half q, whose oracle starts from the out the backward was
// handed (given_out.h): computed again when a thread count's out differs. With --dropout the
// verified call was the one without: the dropout call then runs, and its outputs are the held ones.
static int check(bench_batch *b, const bench_options *o, int threads, bench_row *row)
{
    dense *k = b->kind;
    bench_verify_result vr;
    if (bench_verify_forward(&k->pb, &k->params, o->check_rows, &vr) != 0) {
        fprintf(stderr, "fa-bench: out of memory during verification\n");
        return -1;
    }
    if (bench_batch_verdict("out and lse", &vr, threads, o, &k->pb.shape) != 0) return -1;
    row->rows_checked = vr.rows_checked;
    row->err_out = vr.err_out;
    row->err_lse = vr.err_lse;
    if (k->pb.has_gradients) {
        if (bench_backward_oracle_stale(&k->oracle, &k->pb)) {
            bench_progress("threads %d: float64 gradient oracle%s", threads,
                           kit_dtype_is_half(k->pb.shape.dtype) ? " from the out the backward was handed"
                                                                : "");
            if (bench_backward_oracle_compute(&k->oracle, &k->pb, &k->params, o->check_rows) != 0) {
                fprintf(stderr, "fa-bench: out of memory in the gradient oracle\n");
                return -1;
            }
            k->info->grad_oracle_s = k->oracle.seconds;
            k->info->grad_oracle_runs = k->oracle.runs;
        }
        bench_verify_backward_result br;
        bench_verify_backward(&k->pb, &k->oracle, &br);
        if (!br.passed) {
            char types[48];
            bench_dtypes_words(&k->pb.shape, types, sizeof types);
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
    }
    fa_status s;
    if (o->dropout > 0.0 && ((k->pass == BENCH_PASS_BWD && (s = bench_call_forward(&k->call)) != FA_OK) ||
                             (s = bench_pass_call(k->pass)(&k->call)) != FA_OK))
        return bench_batch_failed(bench_pass_call_name(k->pass), threads, s);
    fa_context_stats(k->call.ctx, &b->held[0].stats);
    return 0;
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
static void measure_blas(bench_batch *batch, const bench_options *o, const bench_run_info *info,
                         bench_machine *machine, bench_row *rows, int n)
{
    (void)machine;
    const dense *k = batch->kind;
    if (!info->blas_runs) return;
    int max_threads = 1, omp_default_threads = omp_get_max_threads();
    for (int r = 0; r < n; r++)
        if (rows[r].threads > max_threads) max_threads = rows[r].threads;
    bench_blas b;
    if (bench_blas_init(&b, &k->pb, &k->params, max_threads) != 0) return;
    bench_blas_mode modes[2] = {BENCH_BLAS_ROW_BLOCKS, BENCH_BLAS_GEMM_THREADS};
    int first = 0, last = 1;
    if (o->blas_mode != BENCH_BLAS_BEST) first = last = o->blas_mode == BENCH_BLAS_ROW_BLOCKS ? 0 : 1;
    for (int r = 0; r < n; r++) {
        bench_row *w = &rows[r];
        for (int m = first; m <= last; m++) {
            bench_timing t;
            if (time_blas_mode(o, info, &b, modes[m], w, &t) != 0) continue;
            w->blas_mode_min_s[modes[m]] = t.min_s;
            if (w->blas_mode == BENCH_BLAS_BEST || t.min_s < w->blas_timing.min_s) {
                w->blas_mode = modes[m];
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

static void fill_info(const bench_options *o, const bench_case *c, bench_run_info *info)
{
    const bench_shape *s = &c->shape;
    int gradients = c->pass != BENCH_PASS_FWD;
    // K and V bytes at the kv group's element size (a bf16 KV cache reads half an f32 cache's bytes),
    // a quantized row's scale included; with --shared-kv, V's rows are inside K's: read once.
    double row_bytes =
        bench_kv_row_bytes(s->kv_dtype, s->d) + (s->shared_kv ? 0.0 : bench_kv_row_bytes(s->kv_dtype, s->dv));
    info->flops = bench_pass_flops(s, c->pass);
    info->visible_pairs = bench_visible_pairs(s);
    info->bias_bytes = bench_bias_read_bytes(s);
    info->bias_bandwidth = s->mods.bias == BENCH_BIAS_FULL;
    info->reference = c->reference;
    info->kv_bytes = (double)s->b * (double)s->hkv * (double)s->nk * row_bytes;
    info->decode = s->nq <= BENCH_DECODE_MAX_NQ;
    if (gradients) {
        info->grad_tolerance = bench_shape_gradient_tolerance(s, s->dtype);
        info->grad_kv_tolerance = bench_shape_gradient_tolerance(s, s->kv_dtype);
    }
    info->blas = blas_status(o, c);
#ifdef FA_BENCH_HAVE_BLAS
    info->blas_runs =
        o->blas_reps > 0 && c->pass == BENCH_PASS_FWD && !bench_mods_any(&s->mods) && !blas_dtype_missing(s);
#endif
    info->blas_warning = blas_warning(info);
}

static void free_dense(bench_batch *b)
{
    dense *k = b->kind;
    bench_backward_oracle_free(&k->oracle);
    bench_problem_free(&k->pb);
    free(k);
}

static const bench_batch_ops dense_ops = {
    .run_once = run_once,
    .check = check,
    .measure_extras =
#ifdef FA_BENCH_HAVE_BLAS
        measure_blas,
#else
        NULL,
#endif
    .free = free_dense,
};

int bench_dense_batch_init(bench_batch *b, const bench_options *o, int index, bench_run_info *info)
{
    const bench_case *c = &o->cases[index];
    fill_info(o, c, info);
    dense *k = calloc(1, sizeof *k);
    if (!k) {
        fprintf(stderr, "fa-bench: out of memory\n");
        return -1;
    }
    *b = (bench_batch){.ops = &dense_ops, .kind = k};
    k->pass = c->pass;
    k->info = info;
    int gradients = c->pass != BENCH_PASS_FWD;
    if (bench_problem_init(&k->pb, &c->shape, o->dist, o->seed, gradients) != 0) {
        free(k);
        return -1;
    }
    k->params = (fa_params)FA_PARAMS_INIT;
    bench_modifiers_params(&k->pb, &k->params);
    bench_problem_kv_scales(&k->pb, &k->params);
    k->dropped = k->params;
    k->dropped.dropout_p = o->dropout;
    k->dropped.dropout_seed = o->seed;
    k->plain = (bench_call){NULL, &k->params, &k->pb};
    k->call = (bench_call){NULL, o->dropout > 0.0 ? &k->dropped : &k->params, &k->pb};
    // The pass's call, held and timed; with --dropout the call without is timed first, for the ratio
    // (timed last, it would leave its outputs where the held ones are compared).
    bench_batch_call timed = {bench_pass_call(c->pass), &k->call, offsetof(bench_row, timing),
                              bench_pass_call_name(c->pass)};
    if (o->dropout > 0.0) {
        b->calls[b->n_calls++] = (bench_batch_call){bench_pass_call(c->pass), &k->plain,
                                                    offsetof(bench_row, plain_timing), timed.name};
    }
    b->calls[b->n_calls++] = timed;
    b->held[b->n_held++] = (bench_batch_held){&k->pb, bench_pass_call_name(c->pass), FA_STATS_INIT};

    if (refused_head_dim(&k->pb, &k->params) != 0) {
        free_dense(b);
        return -1;
    }
    return 0;
}
