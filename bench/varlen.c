/* SPDX-License-Identifier: BSD-3-Clause */
// --varlen: the packed batch, the equal-length dense batch and the per-sequence loop; their checks.
#include "varlen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtypes.h"
#include "modifiers.h"
#include "reference.h"

// Sequence b's rows [cu[b], cu[b+1]) of a packed [1][H][total][dim] view, as a view of its own.
static fa_tensor sequence_view(const fa_tensor *packed, const int64_t *cu, int64_t b)
{
    fa_tensor t = *packed;
    t.data = (char *)packed->data + (size_t)(cu[b] * packed->stride_seq) * kit_dtype_size(packed->dtype);
    t.seq = cu[b + 1] - cu[b];
    return t;
}

// lse's type: the accumulation type (float for bf16 and f16 calls, dtypes.h).
static fa_dtype lse_dtype(const bench_varlen *v)
{
    return kit_accum_dtype(v->packed.shape.dtype);
}

// Sequence b's lse of the loop: [Hq][L_b], contiguous, at element Hq * cu[b].
static void *loop_lse_of(const bench_varlen *v, int64_t b)
{
    return (char *)v->loop_lse + (size_t)(v->packed.shape.hq * v->cu[b]) * kit_dtype_size(lse_dtype(v));
}

double bench_varlen_match_tolerance(fa_dtype t)
{
    // Each side is within f32's bound of the exact value before its one rounding (verify.h), so two
    // rounded outputs differ by at most f32's bound plus u of each side's rounding.
    return bench_verify_tolerance(t) + (kit_dtype_is_half(t) ? kit_unit_roundoff(t) : 0.0);
}

int bench_varlen_init(bench_varlen *v, const bench_shape *s, bench_dist dist, uint64_t seed)
{
    memset(v, 0, sizeof *v);
    if (bench_lengths_draw(&v->lengths, &s->ragged, seed) != 0) return -1;
    const bench_lengths *l = &v->lengths;
    v->cu = malloc(sizeof *v->cu * (size_t)(l->count + 1));
    if (!v->cu) {
        fprintf(stderr, "fa-bench: out of memory for the sequence offsets\n");
        bench_varlen_free(v);
        return -1;
    }
    v->cu[0] = 0;
    for (int64_t b = 0; b < l->count; b++) v->cu[b + 1] = v->cu[b] + l->len[b];
    v->seqs = (fa_seqs)FA_SEQS_INIT;
    v->seqs.batch = l->count;
    v->seqs.cu_seqlens_q = v->seqs.cu_seqlens_k = v->cu;

    bench_shape packed = *s;
    packed.b = 1;
    packed.nq = packed.nk = l->total;
    packed.ragged = (bench_ragged){BENCH_RAGGED_NONE, 0, 0, 0, 0, 0};
    if (bench_problem_init(&v->packed, &packed, dist, seed, 0) != 0) {
        bench_varlen_free(v);
        return -1;
    }
    v->dense_params = (fa_params)FA_PARAMS_INIT;
    bench_modifiers_params(&v->packed, &v->dense_params);
    v->packed_params = v->dense_params;
    v->packed_params.seqs = &v->seqs;

    size_t e = kit_dtype_size(kit_accum_dtype(s->dtype)); // lse's element
    v->loop_out = v->packed.out;
    v->loop_out.data = bench_alloc_aligned(v->packed.out_bytes, "the per-sequence loop's out");
    v->loop_lse_bytes = (size_t)(s->hq * l->total) * e;
    v->loop_lse =
        v->loop_out.data ? bench_alloc_aligned(v->loop_lse_bytes, "the per-sequence loop's lse") : NULL;
    v->loop_block_q = calloc((size_t)l->count, sizeof *v->loop_block_q);
    v->loop_block_k = calloc((size_t)l->count, sizeof *v->loop_block_k);
    if (!v->loop_lse || !v->loop_block_q || !v->loop_block_k) {
        if (v->loop_lse) fprintf(stderr, "fa-bench: out of memory for the loop's block sizes\n");
        bench_varlen_free(v);
        return -1;
    }
    bench_varlen_poison_loop(v);

    bench_shape equal = packed;
    v->l_eq = bench_lengths_equal(l, s);
    equal.b = l->count;
    equal.nq = equal.nk = v->l_eq;
    if (bench_problem_init(&v->equal, &equal, dist, seed, 0) != 0) {
        bench_varlen_free(v);
        return -1;
    }
    v->equal_params = (fa_params)FA_PARAMS_INIT;
    bench_modifiers_params(&v->equal, &v->equal_params);

    // Q·Kᵀ and P·V on each visible pair of each head, one multiply-add = 2 FLOP (problem.h).
    v->flops = 2.0 * (double)s->hq * (double)bench_lengths_pairs(l, s) * (double)(s->d + s->dv);
    v->equal_flops = bench_forward_flops(&v->equal.shape);
    return 0;
}

void bench_varlen_free(bench_varlen *v)
{
    bench_problem_free(&v->packed);
    bench_problem_free(&v->equal);
    free(v->loop_out.data);
    free(v->loop_lse);
    free(v->loop_block_q);
    free(v->loop_block_k);
    free(v->cu);
    bench_lengths_free(&v->lengths);
    memset(v, 0, sizeof *v);
}

void bench_varlen_poison_loop(bench_varlen *v)
{
    memset(v->loop_out.data, 0xff, v->packed.out_bytes); // NaN in all four types, as problem.c's
    memset(v->loop_lse, 0xff, v->loop_lse_bytes);
}

fa_status bench_varlen_call_packed(void *arg)
{
    const bench_varlen_call *c = arg;
    const bench_problem *p = &c->v->packed;
    return fa_forward(c->ctx, &c->v->packed_params, &p->q, &p->k, &p->v, &p->out, p->lse);
}

fa_status bench_varlen_call_equal(void *arg)
{
    const bench_varlen_call *c = arg;
    const bench_problem *p = &c->v->equal;
    return fa_forward(c->ctx, &c->v->equal_params, &p->q, &p->k, &p->v, &p->out, p->lse);
}

// What a user without fa_seqs writes: one dense call per sequence, on views of the packed tensors.
fa_status bench_varlen_call_loop(void *arg)
{
    const bench_varlen_call *c = arg;
    const bench_varlen *v = c->v;
    for (int64_t b = 0; b < v->lengths.count; b++) {
        fa_tensor q = sequence_view(&v->packed.q, v->cu, b), k = sequence_view(&v->packed.k, v->cu, b);
        fa_tensor val = sequence_view(&v->packed.v, v->cu, b), out = sequence_view(&v->loop_out, v->cu, b);
        fa_status s = fa_forward(c->ctx, &v->dense_params, &q, &k, &val, &out, loop_lse_of(v, b));
        if (s != FA_OK) return s;
    }
    return FA_OK;
}

fa_status bench_varlen_call_loop_recorded(fa_context *ctx, bench_varlen *v)
{
    for (int64_t b = 0; b < v->lengths.count; b++) {
        fa_tensor q = sequence_view(&v->packed.q, v->cu, b), k = sequence_view(&v->packed.k, v->cu, b);
        fa_tensor val = sequence_view(&v->packed.v, v->cu, b), out = sequence_view(&v->loop_out, v->cu, b);
        fa_status s = fa_forward(ctx, &v->dense_params, &q, &k, &val, &out, loop_lse_of(v, b));
        if (s != FA_OK) return s;
        fa_stats st = FA_STATS_INIT;
        fa_context_stats(ctx, &st);
        v->loop_block_q[b] = st.block_q;
        v->loop_block_k[b] = st.block_k;
    }
    return FA_OK;
}

// The sequence that owns token t: the last b with cu[b] <= t (cu increases, lengths >= 1).
static int64_t sequence_of(const bench_varlen *v, int64_t t)
{
    int64_t lo = 0, hi = v->lengths.count - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (v->cu[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int bench_varlen_verify(const bench_varlen *v, int64_t check_rows, bench_verify_result *packed,
                        bench_verify_result *loop)
{
    const bench_shape *s = &v->packed.shape;
    int64_t hq = s->hq, total = v->lengths.total, rows = hq * total;
    int64_t n = kit_sample_count(check_rows, rows);
    bench_row_check *checks = calloc((size_t)(2 * (n > 0 ? n : 1)), sizeof *checks);
    if (!checks) return -1;
    bench_row_check *loop_checks = checks + n;
    int failed_alloc = 0;
#pragma omp parallel reduction(| : failed_alloc)
    {
        double *want = malloc(sizeof(double) * (size_t)s->dv);
        if (!want) failed_alloc = 1;
#pragma omp for schedule(dynamic)
        for (int64_t k = 0; k < n; k++) {
            if (!want) continue;
            int64_t r = kit_sample_row(k, n, rows), t = r / hq, h = r % hq, b = sequence_of(v, t);
            int64_t i = t - v->cu[b], len = v->lengths.len[b];
            // The oracle views: the rounded half inputs as exact f32 copies (problem.h).
            fa_tensor q = sequence_view(&v->packed.oracle_q, v->cu, b);
            fa_tensor kk = sequence_view(&v->packed.oracle_k, v->cu, b);
            fa_tensor vv = sequence_view(&v->packed.oracle_v, v->cu, b);
            double lse_want;
            ref_forward_row(&v->dense_params, &q, &kk, &vv, 0, h, i, want, &lse_want);
            bench_row_check *pc = &checks[k], *lc = &loop_checks[k];
            bench_row_check_fill(pc, &v->packed.out, 0, h, t, want,
                                 kit_load(lse_dtype(v), v->packed.lse, h * total + t), lse_want);
            bench_row_check_fill(lc, &v->loop_out, 0, h, t, want,
                                 kit_load(lse_dtype(v), loop_lse_of(v, b), h * len + i), lse_want);
            pc->b = lc->b = b; // reported as (sequence, head, row of the sequence)
            pc->h = lc->h = h;
            pc->i = lc->i = i;
        }
        free(want);
    }
    if (!failed_alloc) {
        bench_verify_reduce(checks, n, s->dtype, packed);
        bench_verify_reduce(loop_checks, n, s->dtype, loop);
    }
    free(checks);
    return failed_alloc ? -1 : 0;
}

// The loop's rows of sequence b against the packed ones: byte for byte, or (tolerance) the largest
// normwise difference, by the rules of verify.h: out within bench_varlen_match_tolerance, lse within
// lse's bound. Either way a NaN in the packed rows (the poison of a row never written: the inputs are
// finite) fails.
static int match_sequence(const bench_varlen *v, int64_t b, int bitwise, double *err)
{
    const bench_shape *s = &v->packed.shape;
    const fa_tensor *po = &v->packed.out, *lo = &v->loop_out;
    fa_dtype lt = lse_dtype(v);
    size_t e = kit_dtype_size(s->dtype), row_bytes = (size_t)s->dv * e;
    int64_t len = v->lengths.len[b], total = v->lengths.total;
    double diff = 0.0, scale = 0.0, lse_diff = 0.0, lse_scale = 1.0;
    for (int64_t h = 0; h < s->hq; h++)
        for (int64_t i = 0; i < len; i++) {
            int64_t t = v->cu[b] + i, at = h * po->stride_head + t * po->stride_seq;
            const char *pr = (const char *)po->data + (size_t)at * e,
                       *lr = (const char *)lo->data + (size_t)at * e;
            double pl = kit_load(lt, v->packed.lse, h * total + t);
            double ll = kit_load(lt, loop_lse_of(v, b), h * len + i);
            if (isnan(pl)) return 0;
            for (int64_t y = 0; y < s->dv; y++) {
                double x = kit_load(s->dtype, pr, y);
                if (isnan(x)) return 0;
                if (!bitwise) {
                    double d = kit_abs_diff(kit_load(s->dtype, lr, y), x);
                    if (d > diff) diff = d;
                    if (fabs(x) > scale) scale = fabs(x);
                }
            }
            if (bitwise) {
                if (memcmp(pr, lr, row_bytes) != 0 || memcmp(&pl, &ll, sizeof pl) != 0) return 0;
            } else {
                double d = kit_abs_diff(ll, pl);
                if (d > lse_diff) lse_diff = d;
                if (fabs(pl) > lse_scale) lse_scale = fabs(pl);
            }
        }
    if (bitwise) return 1;
    double eo = diff / (scale > 0.0 ? scale : 1.0), el = lse_diff / lse_scale;
    *err = eo > el ? eo : el;
    return eo <= bench_varlen_match_tolerance(s->dtype) && el <= bench_verify_lse_tolerance(s->dtype);
}

void bench_varlen_match_loop(const bench_varlen *v, int block_q, int block_k, bench_varlen_match *m)
{
    const bench_shape *s = &v->packed.shape;
    *m = (bench_varlen_match){0, 0, 0, 0.0, 1, -1, 0};
    for (int64_t b = 0; b < v->lengths.count; b++) {
        int64_t len = v->lengths.len[b], items = s->hq * ((len + block_q - 1) / block_q);
        int same_blocks = (block_q < len ? block_q : len) == v->loop_block_q[b] &&
                          (block_k < len ? block_k : len) == v->loop_block_k[b];
        int may_split = items < 128 && len >= 4 * (int64_t)block_k, bitwise = same_blocks && !may_split;
        double err = 0.0;
        int ok = match_sequence(v, b, bitwise, &err);
        if (bitwise) {
            m->bitwise++;
        } else {
            if (!same_blocks)
                m->other_blocks++;
            else
                m->may_split++;
            if (err > m->err) m->err = err;
        }
        if (!ok && m->passed) {
            m->passed = 0;
            m->first_bad = b;
            m->first_bad_bitwise = bitwise;
        }
    }
}
