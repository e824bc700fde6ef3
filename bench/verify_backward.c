/* SPDX-License-Identifier: BSD-3-Clause */
// Sampled comparison of dq, dk and dv against the row-level float64 oracle.
#include "verify_backward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtypes.h"
#include "given_out.h"
#include "reference.h"
#include "reference_backward.h"
#include "tables.h" /* the test kit's tables with bf16 dot-product units */
#include "timing.h"
#include "verify.h"

// A flattened row index of a [B][heads][seq] tensor, split back into (b, h, s).
typedef struct {
    int64_t b, h, s;
} row_index;

static row_index split_row(int64_t row, int64_t heads, int64_t seq)
{
    row_index r = {row / (seq * heads), (row / seq) % heads, row % seq};
    return r;
}

double bench_verify_gradient_tolerance(fa_dtype t)
{
    if (t == FA_F64) return 1e-11;
    return 1e-3 + (kit_dtype_is_half(t) ? kit_unit_roundoff(t) : 0.0);
}

// Whether an all-bf16 backward of shape s runs on bf16 dot-product units (include/flashattn.h,
// fa_backward): even head dims on a table that has them, which is the same for every context of
// the process. It then rounds P and dS to bf16 and is held to the header's bound, not the widened
// call's one rounding.
static int backward_on_dot_units(const bench_shape *s)
{
    if (s->dtype != FA_BF16 || s->kv_dtype != FA_BF16 || s->d % 2 != 0 || s->dv % 2 != 0) return 0;
    fa_context *ctx = NULL;
    fa_stats st = FA_STATS_INIT;
    int dot = fa_context_create(&ctx, NULL) == FA_OK && fa_context_stats(ctx, &st) == FA_OK &&
              kit_table_multiplies_bf16(st.isa);
    fa_context_destroy(ctx);
    return dot;
}

double bench_shape_gradient_tolerance(const bench_shape *s, fa_dtype t)
{
    /* on dot-product units the header's bound: 3 naive roundings, 3u, not the widened call's u */
    return bench_verify_gradient_tolerance(t) + (backward_on_dot_units(s) ? 2 * kit_unit_roundoff(t) : 0.0);
}

double bench_verify_dsinks_tolerance(fa_dtype q)
{
    // dsinks is float for every dtype, rounded once (flashattn.h): half an ulp, 2^-24 relative, on top
    // of the bound of a gradient of the accumulation type (never a half one's: dsinks is not half).
    return bench_verify_gradient_tolerance(kit_accum_dtype(q)) + 0x1p-24;
}

// The oracle's delta comes from the out the backward is handed when that out is half (given_out.h).
static int delta_from_out(const bench_problem *pb)
{
    return kit_dtype_is_half(pb->shape.dtype);
}

// lse and delta of query row (b, h, i): the oracle's own, delta replaced by dout_i·out_i with a half q.
static void row_stats(const bench_problem *pb, const fa_params *p, int64_t b, int64_t h, int64_t i,
                      double *lse, double *delta)
{
    ref_backward_row_stats(p, &pb->oracle_q, &pb->oracle_k, &pb->oracle_v, &pb->oracle_dout, b, h, i, lse,
                           delta);
    if (delta_from_out(pb)) *delta = bench_given_delta(&pb->oracle_dout, &pb->out, b, h, i);
}

static void compute_dq_rows(bench_backward_oracle *o, const bench_problem *pb, const fa_params *p)
{
    const bench_shape *s = &pb->shape;
    int64_t total = s->b * s->hq * s->nq;
#pragma omp parallel for schedule(dynamic)
    for (int64_t k = 0; k < o->n_dq; k++) {
        row_index r = split_row(kit_sample_row(k, o->n_dq, total), s->hq, s->nq);
        if (delta_from_out(pb)) {
            double lse, delta;
            row_stats(pb, p, r.b, r.h, r.s, &lse, &delta);
            bench_dq_row_stats(p, &pb->oracle_q, &pb->oracle_k, &pb->oracle_v, &pb->oracle_dout, r.b, r.h,
                               r.s, lse, delta, &o->dq[k * s->d]);
        } else {
            ref_backward_dq_row(p, &pb->oracle_q, &pb->oracle_k, &pb->oracle_v, &pb->oracle_dout, r.b, r.h,
                                r.s, &o->dq[k * s->d]);
        }
    }
}

// Sampled key rows come in increasing (b, kv head, j) order, so the rows of one (b, kv head) are
// consecutive: the softmax statistics of its query heads are computed once for all of them (the
// bulk of the cost, O(G·Nq·Nk·(D + Dv))), then each key row from them.
static int compute_kv_rows(bench_backward_oracle *o, const bench_problem *pb, const fa_params *p)
{
    const bench_shape *s = &pb->shape;
    int64_t total = s->b * s->hkv * s->nk, group = s->hq / s->hkv, n_stats = group * s->nq;
    double *lse = malloc(sizeof(double) * (size_t)n_stats), *delta = malloc(sizeof(double) * (size_t)n_stats);
    if (!lse || !delta) {
        free(lse);
        free(delta);
        return -1;
    }
    for (int64_t start = 0, end; start < o->n_kv; start = end) {
        int64_t head = kit_sample_row(start, o->n_kv, total) / s->nk; // flattened (b, kv head)
        for (end = start + 1; end < o->n_kv && kit_sample_row(end, o->n_kv, total) / s->nk == head;) end++;
        int64_t b = head / s->hkv, kvh = head % s->hkv;
#pragma omp parallel for schedule(dynamic, 16)
        for (int64_t r = 0; r < n_stats; r++)
            row_stats(pb, p, b, kvh * group + r / s->nq, r % s->nq, &lse[r], &delta[r]);
#pragma omp parallel for schedule(dynamic)
        for (int64_t k = start; k < end; k++) {
            int64_t j = kit_sample_row(k, o->n_kv, total) % s->nk;
            ref_backward_dkdv_row_stats(p, &pb->oracle_q, &pb->oracle_k, &pb->oracle_v, &pb->oracle_dout, b,
                                        kvh, j, lse, delta, &o->dk[k * s->d], &o->dv[k * s->dv]);
        }
        o->heads_touched++;
    }
    free(lse);
    free(delta);
    return 0;
}

// dsinks from every query row's lse and delta (row_stats, in parallel), each row's term
// kept in its own slot and summed serially, b-major then i: the same order for any team.
static int compute_dsinks(bench_backward_oracle *o, const bench_problem *pb, const fa_params *p)
{
    const bench_shape *s = &pb->shape;
    int64_t rows = s->b * s->hq * s->nq;
    double *term = malloc(sizeof(double) * (size_t)rows);
    o->dsinks = malloc(sizeof(double) * (size_t)s->hq);
    if (!term || !o->dsinks) {
        free(term);
        return -1;
    }
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t r = 0; r < rows; r++) {
        row_index x = split_row(r, s->hq, s->nq);
        double lse, delta;
        row_stats(pb, p, x.b, x.h, x.s, &lse, &delta);
        // lse includes the sink, so exp(sink - lse) <= 1; a row that sees nothing has delta = 0.
        term[r] = exp((double)p->sinks[x.h] - lse) * delta;
    }
    for (int64_t h = 0; h < s->hq; h++) {
        double sum = 0.0;
        for (int64_t b = 0; b < s->b; b++)
            for (int64_t i = 0; i < s->nq; i++) sum += term[(b * s->hq + h) * s->nq + i];
        o->dsinks[h] = -sum;
    }
    free(term);
    return 0;
}

int bench_backward_oracle_compute(bench_backward_oracle *o, const bench_problem *pb, const fa_params *p,
                                  int64_t check_rows)
{
    const bench_shape *s = &pb->shape;
    double start = bench_now(), seconds = o->seconds;
    int runs = o->runs;
    bench_backward_oracle_free(o); // a recomputation (from another given out) starts afresh
    o->seconds = seconds;
    o->runs = runs;
    o->heads_touched = 0;
    o->n_dq = kit_sample_count(check_rows, s->b * s->hq * s->nq);
    o->n_kv = kit_sample_count(check_rows, s->b * s->hkv * s->nk);
    o->dq = malloc(sizeof(double) * (size_t)(o->n_dq * s->d + 1));
    o->dk = malloc(sizeof(double) * (size_t)(o->n_kv * s->d + 1));
    o->dv = malloc(sizeof(double) * (size_t)(o->n_kv * s->dv + 1));
    if (!o->dq || !o->dk || !o->dv) return -1;
    if (delta_from_out(pb)) {
        if (!(o->given_out = malloc(pb->out_bytes))) return -1;
        memcpy(o->given_out, pb->out.data, pb->out_bytes);
        o->given_out_bytes = pb->out_bytes;
    }
    compute_dq_rows(o, pb, p);
    if (compute_kv_rows(o, pb, p) != 0) return -1;
    if (p->sinks && pb->dsinks && compute_dsinks(o, pb, p) != 0) return -1;
    o->seconds += bench_now() - start;
    o->runs++;
    return 0;
}

void bench_backward_oracle_free(bench_backward_oracle *o)
{
    free(o->dq);
    free(o->dk);
    free(o->dv);
    free(o->dsinks);
    free(o->given_out);
    o->dq = o->dk = o->dv = o->dsinks = NULL;
    o->given_out = NULL;
    o->given_out_bytes = 0;
}

int bench_backward_oracle_stale(const bench_backward_oracle *o, const bench_problem *pb)
{
    if (o->runs == 0) return 1;
    if (!delta_from_out(pb)) return 0;
    return o->given_out_bytes != pb->out_bytes || memcmp(o->given_out, pb->out.data, pb->out_bytes) != 0;
}

// One gradient's sampled rows against the oracle's: the largest difference, the largest finite
// |ref|, and where the largest difference is.
typedef struct {
    double diff, ref_max;
    int64_t row, col; // sample position and column of the largest difference
    double got, want;
} gradient_check;

static gradient_check compare_rows(const fa_tensor *t, int64_t n, const double *want)
{
    int64_t total = t->batch * t->heads * t->seq;
    gradient_check c = {0.0, 0.0, 0, 0, 0.0, 0.0};
    int first = 1;
    for (int64_t k = 0; k < n; k++) {
        row_index r = split_row(kit_sample_row(k, n, total), t->heads, t->seq);
        for (int64_t x = 0; x < t->dim; x++) {
            double got = kit_tensor_load(t, r.b, r.h, r.s, x), ref = want[k * t->dim + x];
            double diff = kit_abs_diff(got, ref);
            if (isfinite(ref) && fabs(ref) > c.ref_max) c.ref_max = fabs(ref);
            if (first || diff > c.diff) {
                c.diff = diff;
                c.row = k;
                c.col = x;
                c.got = got;
                c.want = ref;
                first = 0;
            }
        }
    }
    return c;
}

void bench_verify_backward(const bench_problem *pb, const bench_backward_oracle *o,
                           bench_verify_backward_result *r)
{
    static const char *const names[3] = {"dq", "dk", "dv"};
    const fa_tensor *tensors[3] = {&pb->dq, &pb->dk, &pb->dv};
    const int64_t counts[3] = {o->n_dq, o->n_kv, o->n_kv};
    const double *wants[3] = {o->dq, o->dk, o->dv};
    const double tols[3] = {bench_shape_gradient_tolerance(&pb->shape, pb->shape.dtype),
                            bench_shape_gradient_tolerance(&pb->shape, pb->shape.kv_dtype),
                            bench_shape_gradient_tolerance(&pb->shape, pb->shape.kv_dtype)};
    double errs[3];
    int worst = 0;
    gradient_check checks[3];
    for (int g = 0; g < 3; g++) {
        checks[g] = compare_rows(tensors[g], counts[g], wants[g]);
        double scale = checks[g].ref_max > 0.0 ? checks[g].ref_max : 1.0; // all-zero rows must be exact
        errs[g] = checks[g].diff / scale;
        // The worst is the one furthest past (or nearest to) its own bound: the groups' bounds differ
        // under a half-precision KV cache.
        if (errs[g] / tols[g] > errs[worst] / tols[worst] || isnan(errs[g])) worst = g;
    }
    r->rows_dq = o->n_dq;
    r->rows_dkdv = o->n_kv;
    r->tolerance = tols[0];
    r->tolerance_kv = tols[1];
    r->err_dq = errs[0];
    r->err_dk = errs[1];
    r->err_dv = errs[2];
    r->err_dsinks = NAN;
    r->dsinks_tolerance = bench_verify_dsinks_tolerance(pb->shape.dtype);
    r->passed = errs[0] <= tols[0] && errs[1] <= tols[1] && errs[2] <= tols[2];
    const fa_tensor *t = tensors[worst];
    row_index w = split_row(kit_sample_row(checks[worst].row, counts[worst], t->batch * t->heads * t->seq),
                            t->heads, t->seq);
    r->worst_name = names[worst];
    r->worst_b = w.b;
    r->worst_h = w.h;
    r->worst_s = w.s;
    r->worst_col = checks[worst].col;
    r->worst_got = checks[worst].got;
    r->worst_want = checks[worst].want;
    if (!o->dsinks) return;
    // dsinks as one flat row of Hq entries, judged like the others: normwise, and a NaN where the
    // oracle has a number fails. It names the worst entry when its error is the largest.
    const fa_tensor flat = {.data = pb->dsinks,
                            .dtype = FA_F32,
                            .batch = 1,
                            .heads = 1,
                            .seq = 1,
                            .dim = pb->shape.hq,
                            .stride_batch = 0,
                            .stride_head = 0,
                            .stride_seq = 0};
    gradient_check c = compare_rows(&flat, 1, o->dsinks);
    r->err_dsinks = c.diff / (c.ref_max > 0.0 ? c.ref_max : 1.0);
    if (r->err_dsinks <= r->dsinks_tolerance) return;
    r->passed = 0;
    if (r->err_dsinks / r->dsinks_tolerance <= errs[worst] / tols[worst]) return;
    r->worst_name = "dsinks";
    r->worst_b = r->worst_s = r->worst_col = 0;
    r->worst_h = c.col; // the query head
    r->worst_got = c.got;
    r->worst_want = c.want;
}

void bench_verify_backward_print_worst(FILE *f, const bench_verify_backward_result *r)
{
    fprintf(f,
            "  worst entry: %s[b=%lld h=%lld s=%lld][%lld] = %.17g, oracle %.17g\n"
            "  normwise error: dq %.3e, dk %.3e, dv %.3e (tolerance dq %.3g, dk/dv %.3g; %lld dq rows, "
            "%lld dk/dv rows checked)\n",
            r->worst_name, (long long)r->worst_b, (long long)r->worst_h, (long long)r->worst_s,
            (long long)r->worst_col, r->worst_got, r->worst_want, r->err_dq, r->err_dk, r->err_dv,
            r->tolerance, r->tolerance_kv, (long long)r->rows_dq, (long long)r->rows_dkdv);
    if (!isnan(r->err_dsinks))
        fprintf(f, "  dsinks: normwise error %.3e over every head (tolerance %.3g)\n", r->err_dsinks,
                r->dsinks_tolerance);
}
