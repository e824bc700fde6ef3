/* SPDX-License-Identifier: BSD-3-Clause */
/* References of a global problem and the accuracy rules of expect.h, applied to a rank's rows. */
#include "expect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "reference_backward.h"

static const char *grad_name[3] = {"dq", "dk", "dv"};

static double *alloc_doubles(int64_t n)
{
    double *x = malloc(sizeof(double) * (size_t)(n + 1));
    if (!x) abort();
    return x;
}

/* ---- references -------------------------------------------------------------------------- */

static void single_process(mt_result *res, fa_context *ctx, const mt_global *g, int backward)
{
    const mt_case *c = &g->c;
    int64_t B = c->batch, Hq = c->q_heads, Hkv = c->kv_heads, N = g->n;
    size_t es = kit_dtype_size(g->dtype);
    fa_dtype acc = kit_accum_dtype(g->dtype);
    kit_buf ob = kit_buf_alloc((size_t)(B * Hq * N * c->dim_v) * es),
            lb = kit_buf_alloc((size_t)(B * Hq * N) * kit_dtype_size(acc));
    fa_tensor out = fa_tensor_bhsd(kit_buf_data(&ob), g->dtype, B, Hq, N, c->dim_v);
    fa_tensor lse = fa_tensor_bhsd(kit_buf_data(&lb), acc, B, Hq, N, 1);
    fa_status st = fa_forward(ctx, &g->p, &g->q, &g->k, &g->v, &out, lse.data);
    MT_CHECK(st == FA_OK, "the single-process fa_forward (the reference) returned %s: %s", fa_status_str(st),
             fa_last_error());
    res->out = mt_values(&out);
    res->lse = mt_values(&lse);
    if (backward) {
        int64_t heads[3] = {Hq, Hkv, Hkv}, dims[3] = {c->dim, c->dim, c->dim_v};
        kit_buf gb[3];
        fa_tensor grad[3];
        for (int i = 0; i < 3; i++) {
            gb[i] = kit_buf_alloc((size_t)(B * heads[i] * N * dims[i]) * es);
            grad[i] = fa_tensor_bhsd(kit_buf_data(&gb[i]), g->dtype, B, heads[i], N, dims[i]);
        }
        fa_params p = g->p;
        float *dsinks = malloc(sizeof(float) * (size_t)(Hq + 1));
        if (!dsinks) abort();
        if (c->sinks) p.dsinks = dsinks;
        st =
            fa_backward(ctx, &p, &g->q, &g->k, &g->v, &out, &g->dout, lse.data, &grad[0], &grad[1], &grad[2]);
        MT_CHECK(st == FA_OK, "the single-process fa_backward (the reference) returned %s: %s",
                 fa_status_str(st), fa_last_error());
        for (int i = 0; i < 3; i++) {
            res->grad[i] = mt_values(&grad[i]);
            kit_buf_free(&gb[i]);
        }
        if (c->sinks) {
            res->dsinks = alloc_doubles(Hq);
            for (int64_t h = 0; h < Hq; h++) res->dsinks[h] = (double)dsinks[h];
        }
        free(dsinks);
    }
    kit_buf_free(&ob);
    kit_buf_free(&lb);
}

/* The float64 oracle (naive = 0) or the naive f32 implementation (naive = 1) of g. */
static void oracle(mt_result *res, const mt_global *g, int backward, int naive)
{
    const mt_case *c = &g->c;
    int64_t B = c->batch, Hq = c->q_heads, Hkv = c->kv_heads, N = g->n;
    res->out = alloc_doubles(B * Hq * N * c->dim_v);
    res->lse = alloc_doubles(B * Hq * N);
    (naive ? ref_forward_naive_f32 : ref_forward)(&g->p, &g->q, &g->k, &g->v, res->out, res->lse);
    if (!backward) return;
    res->grad[0] = alloc_doubles(B * Hq * N * c->dim);
    res->grad[1] = alloc_doubles(B * Hkv * N * c->dim);
    res->grad[2] = alloc_doubles(B * Hkv * N * c->dim_v);
    (naive ? ref_backward_naive_f32 : ref_backward)(&g->p, &g->q, &g->k, &g->v, &g->dout, res->grad[0],
                                                    res->grad[1], res->grad[2]);
    if (c->sinks) {
        res->dsinks = alloc_doubles(Hq);
        (naive ? ref_backward_dsinks_naive_f32 : ref_backward_dsinks)(&g->p, &g->q, &g->k, &g->v, &g->dout,
                                                                      res->dsinks);
    }
}

/* Dropout's mask over the whole sequence, by the public call (fa_dropout_mask): what one call over
 * the sequence drops, by the header's definition. [B][Hq][N][N]. */
static uint8_t *mask_of(const mt_global *g)
{
    const mt_case *c = &g->c;
    int64_t B = c->batch, Hq = c->q_heads, N = g->n;
    uint8_t *keep = malloc((size_t)(B * Hq * N * N) + 1);
    if (!keep) abort();
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++) {
            fa_status st = fa_dropout_mask(&g->p, Hq, b, h, 0, 0, N, N, keep + (b * Hq + h) * N * N, N);
            MT_CHECK(st == FA_OK, "fa_dropout_mask (the reference's mask) returned %s", fa_status_str(st));
        }
    return keep;
}

/* The float64 oracle (naive = 0) or the naive f32 implementation (naive = 1) with dropout, given
 * its mask. */
static void oracle_dropout(mt_result *res, const mt_global *g, const uint8_t *keep, int backward, int naive)
{
    const mt_case *c = &g->c;
    int64_t B = c->batch, Hq = c->q_heads, Hkv = c->kv_heads, N = g->n;
    res->out = alloc_doubles(B * Hq * N * c->dim_v);
    res->lse = alloc_doubles(B * Hq * N);
    (naive ? ref_forward_dropout_naive_f32 : ref_forward_dropout)(&g->p, &g->q, &g->k, &g->v, keep, res->out,
                                                                  res->lse);
    if (!backward) return;
    res->grad[0] = alloc_doubles(B * Hq * N * c->dim);
    res->grad[1] = alloc_doubles(B * Hkv * N * c->dim);
    res->grad[2] = alloc_doubles(B * Hkv * N * c->dim_v);
    if (naive)
        ref_backward_dropout_naive_f32_given_out(&g->p, &g->q, &g->k, &g->v, NULL, &g->dout, keep,
                                                 res->grad[0], res->grad[1], res->grad[2], NULL);
    else
        ref_backward_dropout(&g->p, &g->q, &g->k, &g->v, &g->dout, keep, res->grad[0], res->grad[1],
                             res->grad[2]);
}

/* The naive f32 forward rounded to the half dtype t (out; lse stays float): the half suites' yardstick. */
static void round_naive(mt_result *res, const mt_global *g)
{
    const mt_case *c = &g->c;
    int64_t n = c->batch * c->q_heads * g->n * c->dim_v;
    for (int64_t x = 0; x < n; x++) res->out[x] = kit_round(g->dtype, res->out[x]);
}

void mt_refs_compute(mt_refs *r, fa_context *ctx, const mt_global *g, int backward)
{
    memset(r, 0, sizeof *r);
    single_process(&r->single, ctx, g, backward);
    const int half = g->dtype == FA_BF16 || g->dtype == FA_F16;
    if (g->p.dropout_p != 0.0) { /* the oracles given the public mask */
        r->keep = mask_of(g);
        oracle_dropout(&r->oracle, g, r->keep, backward, 0);
        if (g->dtype != FA_F64) oracle_dropout(&r->naive, g, r->keep, backward && !half, 1);
        if (half) round_naive(&r->naive, g);
    } else if (g->dtype != FA_F64) {
        /* bf16, f16: the backward's yardstick starts from the out the ring returns (mt_expect_backward) */
        oracle(&r->oracle, g, backward, 0);
        oracle(&r->naive, g, backward && !half, 1);
        if (half) round_naive(&r->naive, g);
    } else if (backward && g->c.sinks) {
        r->oracle.dsinks = alloc_doubles(g->c.q_heads);
        ref_backward_dsinks(&g->p, &g->q, &g->k, &g->v, &g->dout, r->oracle.dsinks);
    }
    /* tests/util_backward.h, tub_grad_bounds: |dS| <= P·2·Dv·max|dout|·max|v|, sum_j P <= 1, and a
     * key is seen by at most G·N query rows of its kv head */
    const mt_case *c = &g->c;
    double scale = g->p.scale != 0.0 ? g->p.scale : 1.0 / sqrt((double)c->dim);
    double group = c->kv_heads > 0 ? (double)(c->q_heads / c->kv_heads) : 1.0;
    double ds = 2.0 * (double)c->dim_v * mt_max_abs(&g->dout) * mt_max_abs(&g->v);
    r->bound[0] = fabs(scale) * ds * mt_max_abs(&g->k);
    r->bound[1] = fabs(scale) * ds * mt_max_abs(&g->q) * group * (double)g->n;
    r->bound[2] = mt_max_abs(&g->dout) * group * (double)g->n;
}

static void result_free(mt_result *res)
{
    free(res->out);
    free(res->lse);
    for (int i = 0; i < 3; i++) free(res->grad[i]);
    free(res->dsinks);
    memset(res, 0, sizeof *res);
}

void mt_refs_free(mt_refs *r)
{
    result_free(&r->single);
    result_free(&r->oracle);
    result_free(&r->naive);
    free(r->keep);
    r->keep = NULL;
}

/* ---- comparisons ------------------------------------------------------------------------- */

typedef struct {
    double max_err, max_ref;
    int64_t worst; /* flat index of max_err, -1 if none */
    double worst_lib, worst_ref;
    int64_t mismatches, first_mismatch;
    double mismatch_lib, mismatch_ref;
} mt_err;

/* max |x - ref| and max |ref| over the finite pairs; a pair where either is not finite must hold the
 * same value (NaN matching NaN), else it counts as a mismatch. */
static mt_err compare(const double *x, const double *ref, int64_t count)
{
    mt_err e = {0.0, 0.0, -1, 0.0, 0.0, 0, -1, 0.0, 0.0};
    for (int64_t i = 0; i < count; i++) {
        double a = x[i], b = ref[i];
        if (!isfinite(a) || !isfinite(b)) {
            if (!(a == b || (isnan(a) && isnan(b)))) {
                if (e.mismatches++ == 0) {
                    e.first_mismatch = i;
                    e.mismatch_lib = a;
                    e.mismatch_ref = b;
                }
            }
            continue;
        }
        double d = fabs(a - b);
        if (fabs(b) > e.max_ref) e.max_ref = fabs(b);
        if (e.worst < 0 || d > e.max_err) {
            e.max_err = d;
            e.worst = i;
            e.worst_lib = a;
            e.worst_ref = b;
        }
    }
    return e;
}

/* The shard's rows of a global [B][H][N][d] array, as [B][H][n][d]. */
static double *rows_of(const double *global, int64_t B, int64_t H, int64_t N, int64_t d, const mt_shard *s)
{
    double *x = alloc_doubles(B * H * s->n * d);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < s->n; i++)
                memcpy(x + ((b * H + h) * s->n + i) * d, global + ((b * H + h) * N + s->pos[i]) * d,
                       sizeof(double) * (size_t)d);
    return x;
}

/* What a tensor of the shard's rows is, for messages: its shape and which rows to compare. */
typedef struct {
    const char *name;
    int64_t heads, dim;
} mt_what;

static void coords(int64_t flat, const mt_what *w, const mt_shard *s, char *buf, size_t size)
{
    if (flat < 0 || s->n == 0) {
        snprintf(buf, size, "-");
        return;
    }
    int64_t d = flat % w->dim, i = (flat / w->dim) % s->n, h = (flat / (w->dim * s->n)) % w->heads,
            b = flat / (w->dim * s->n * w->heads);
    snprintf(buf, size, "(b %lld, h %lld, local row %lld = position %lld, d %lld)", (long long)b,
             (long long)h, (long long)i, (long long)s->pos[i], (long long)d);
}

static void judge(const mt_what *w, const mt_shard *s, const mt_err *e, double limit, const char *rule,
                  const char *extra)
{
    char at[160];
    if (e->mismatches) {
        coords(e->first_mismatch, w, s, at, sizeof at);
        mt_fail(__FILE__, __LINE__, "%s: %lld non-finite mismatches, first at %s: lib %.17g ref %.17g%s",
                w->name, (long long)e->mismatches, at, e->mismatch_lib, e->mismatch_ref, extra);
    }
    if (!(e->max_err <= limit)) {
        coords(e->worst, w, s, at, sizeof at);
        mt_fail(__FILE__, __LINE__,
                "%s: max error %.3e > limit %.3e (%s), worst at %s: lib %.17g ref %.17g%s", w->name,
                e->max_err, limit, rule, at, e->worst_lib, e->worst_ref, extra);
    }
}

/* One ulp of t at magnitude m >= 0 (tests/half_util.c, hu_ulp): 2^(e - p) for 2^(e-1) <= m < 2^e,
 * p the significant bits, never below the smallest subnormal. */
static double ulp_of(fa_dtype t, double m)
{
    int p = t == FA_BF16 ? 8 : t == FA_F16 ? 11 : 24, emin = t == FA_BF16 ? -133 : t == FA_F16 ? -24 : -149;
    int e = 0;
    if (m > 0 && isfinite(m)) frexp(m, &e);
    double ulp = ldexp(1.0, e - p), least = ldexp(1.0, emin);
    return m > 0 && ulp > least ? ulp : least;
}

/* One tensor of the rank's rows against the references: the f64 rule relative to `norm_floor`
 * (0 for the forward), against the single-process call and, with dropout, the oracle given the
 * public mask too; or the f32 rule with `times` and `plus`; or the half suites' rule (half_util.h,
 * hu_check): 3 x the naive f32 error (rounded to the output's dtype) + max(one ulp of that dtype
 * at max|oracle|, plus), lse float. */
static void judge_rows(const mt_what *w, const mt_shard *s, const fa_tensor *lib_view, const mt_refs *r,
                       int which, int is_lse, double rel_tol, double norm_floor, double times, double plus,
                       const mt_global *g)
{
    const mt_case *c = &g->c;
    int64_t B = c->batch, count = B * w->heads * s->n * w->dim;
    double *lib = mt_values(lib_view);
    const mt_result *ref = g->dtype == FA_F64 ? &r->single : &r->oracle;
#define PICK(res) (is_lse ? (res)->lse : which < 0 ? (res)->out : (res)->grad[which])
    double *want = rows_of(PICK(ref), B, w->heads, g->n, w->dim, s);
    mt_err e = compare(lib, want, count);
    char rule[160], extra[160] = "";
    const int half = g->dtype == FA_BF16 || g->dtype == FA_F16;
    if (g->dtype == FA_F64) {
        double norm = e.max_ref > norm_floor ? e.max_ref : norm_floor;
        snprintf(rule, sizeof rule, "%.0e x max(max|ref| %.3e, floor %.3e) of the single-process call",
                 rel_tol, e.max_ref, norm_floor);
        judge(w, s, &e, rel_tol * norm, rule, extra);
        if (g->p.dropout_p != 0.0 && PICK(&r->oracle)) { /* and the mask of the header's definition */
            double *exact = rows_of(PICK(&r->oracle), B, w->heads, g->n, w->dim, s);
            mt_err eo = compare(lib, exact, count);
            norm = eo.max_ref > norm_floor ? eo.max_ref : norm_floor;
            snprintf(rule, sizeof rule,
                     "%.0e x max(max|ref| %.3e, floor %.3e) of the oracle given fa_dropout_mask", rel_tol,
                     eo.max_ref, norm_floor);
            judge(w, s, &eo, rel_tol * norm, rule, extra);
            free(exact);
        }
    } else if (half) {
        double *naive = rows_of(PICK(&r->naive), B, w->heads, g->n, w->dim, s);
        mt_err en = compare(naive, want, count);
        fa_dtype t = is_lse ? FA_F32 : g->dtype;
        double floor = is_lse ? plus * (e.max_ref > 1.0 ? e.max_ref : 1.0) : plus, ulp = ulp_of(t, e.max_ref);
        if (ulp > floor) floor = ulp;
        snprintf(rule, sizeof rule,
                 "3 x naive f32 error %.3e (rounded to %s) + floor %.3e, against the float64 oracle",
                 en.max_err, mt_dtype_name(t), floor);
        judge(w, s, &e, 3.0 * en.max_err + floor, rule, extra);
        free(naive);
    } else {
        double *naive = rows_of(PICK(&r->naive), B, w->heads, g->n, w->dim, s);
        double *single = rows_of(PICK(&r->single), B, w->heads, g->n, w->dim, s);
        mt_err en = compare(naive, want, count), es = compare(single, want, count);
        /* lse: the floor is relative to its size (tests/util.c tu_check_accuracy) */
        double floor = is_lse ? plus * (en.max_ref > 1.0 ? en.max_ref : 1.0) : plus;
        snprintf(rule, sizeof rule, "%g x naive f32 error %.3e + %.3e, against the float64 oracle", times,
                 en.max_err, floor);
        snprintf(extra, sizeof extra, "; the single-process f32 call's error on these rows: %.3e",
                 es.max_err);
        judge(w, s, &e, times * en.max_err + floor, rule, extra);
        free(naive);
        free(single);
    }
#undef PICK
    free(lib);
    free(want);
}

void mt_expect_forward(const mt_global *g, const mt_shard *s, const mt_local *l, const mt_refs *r,
                       int without_lse)
{
    const mt_case *c = &g->c;
    mt_what out = {"out", c->q_heads, c->dim_v}, lse = {"lse", c->q_heads, 1};
    judge_rows(&out, s, &l->out, r, -1, 0, 1e-12, 0.0, 2.0, 1e-6, g);
    MT_CHECK(kit_buf_only_view_written(&l->out_buf, &l->out),
             "out: a byte outside the rank's rows of out (or around its buffer) was written");
    if (without_lse) {
        MT_CHECK(kit_buf_untouched(&l->lse_buf), "lse NULL, yet the rank's lse buffer was written");
    } else {
        judge_rows(&lse, s, &l->lse_view, r, -1, 1, 1e-12, 0.0, 2.0, 1e-6, g);
        MT_CHECK(kit_buf_only_view_written(&l->lse_buf, &l->lse_view),
                 "lse: a byte around the lse buffer was written");
    }
    for (int i = 0; i < 3; i++)
        MT_CHECK(kit_buf_untouched(&l->grad_buf[i]), "fa_mpi_forward wrote into %s's buffer", grad_name[i]);
}

/* The half suites' backward yardstick (reference_backward.h, ref_backward_naive_f32_given_out): the
 * naive f32 backward from the out the backward is handed, here the ring's, gathered from every rank
 * (each position's row from the rank that holds it; the others add zeros), with dropout's mask keep
 * (or none), its gradients rounded to the dtype. Collective. */
static void naive_given_ring_out(const mt_env *env, const mt_global *g, const mt_shard *s, const mt_local *l,
                                 const uint8_t *keep, mt_result *res)
{
    const mt_case *c = &g->c;
    int64_t B = c->batch, Hq = c->q_heads, Hkv = c->kv_heads, N = g->n, Dv = c->dim_v;
    double *all = calloc((size_t)(B * Hq * N * Dv + 1), sizeof(double));
    if (!all) abort();
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < s->n; i++)
                for (int64_t d = 0; d < Dv; d++)
                    all[((b * Hq + h) * N + s->pos[i]) * Dv + d] = kit_tensor_load(&l->out, b, h, i, d);
    MPI_Allreduce(MPI_IN_PLACE, all, (int)(B * Hq * N * Dv), MPI_DOUBLE, MPI_SUM, env->comm);
    kit_buf ob = kit_buf_alloc((size_t)(B * Hq * N * Dv) * kit_dtype_size(g->dtype));
    fa_tensor out = fa_tensor_bhsd(kit_buf_data(&ob), g->dtype, B, Hq, N, Dv);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < N; i++)
                for (int64_t d = 0; d < Dv; d++)
                    kit_tensor_store(&out, b, h, i, d, all[((b * Hq + h) * N + i) * Dv + d]);
    int64_t n[3] = {B * Hq * N * c->dim, B * Hkv * N * c->dim, B * Hkv * N * Dv};
    for (int x = 0; x < 3; x++) res->grad[x] = alloc_doubles(n[x]);
    res->dsinks = alloc_doubles(Hq);
    ref_backward_dropout_naive_f32_given_out(&g->p, &g->q, &g->k, &g->v, &out, &g->dout, keep, res->grad[0],
                                             res->grad[1], res->grad[2], c->sinks ? res->dsinks : NULL);
    for (int x = 0; x < 3; x++)
        for (int64_t e = 0; e < n[x]; e++) res->grad[x][e] = kit_round(g->dtype, res->grad[x][e]);
    kit_buf_free(&ob);
    free(all);
}

void mt_expect_backward(const mt_env *env, const mt_global *g, const mt_shard *s, const mt_local *l,
                        const mt_refs *refs)
{
    const mt_case *c = &g->c;
    mt_refs with_given = *refs; /* bf16, f16: the naive backward from the ring's out */
    mt_result given;
    memset(&given, 0, sizeof given);
    if (g->dtype == FA_BF16 || g->dtype == FA_F16) {
        naive_given_ring_out(env, g, s, l, refs->keep, &given);
        for (int x = 0; x < 3; x++) with_given.naive.grad[x] = given.grad[x];
        with_given.naive.dsinks = given.dsinks;
    }
    const mt_refs *r = &with_given;
    const fa_tensor *views[3] = {&l->dq, &l->dk, &l->dv};
    int64_t heads[3] = {c->q_heads, c->kv_heads, c->kv_heads}, dims[3] = {c->dim, c->dim, c->dim_v};
    for (int i = 0; i < 3; i++) {
        mt_what w = {grad_name[i], heads[i], dims[i]};
        judge_rows(&w, s, views[i], r, i, 0, 1e-11, 1e-4 * r->bound[i], 3.0, 1e-5, g);
        MT_CHECK(kit_buf_only_view_written(&l->grad_buf[i], views[i]),
                 "%s: a byte outside the rank's rows (or around its buffer) was written", grad_name[i]);
    }
    if (!c->sinks) {
        result_free(&given);
        return;
    }
    int64_t Hq = c->q_heads;
    const float *dsinks = l->p.dsinks;
    fa_tensor dsinks_view = fa_tensor_bhsd(l->p.dsinks, FA_F32, 1, 1, 1, Hq);
    MT_CHECK(kit_buf_only_view_written(&l->dsinks_buf, &dsinks_view),
             "dsinks: a byte around the Hq floats was written");
    const double *exact = r->oracle.dsinks;
    double max_ref = 0.0, naive_err = 0.0;
    for (int64_t h = 0; h < Hq; h++) {
        if (isfinite(exact[h]) && fabs(exact[h]) > max_ref) max_ref = fabs(exact[h]);
        if (g->dtype != FA_F64 && isfinite(exact[h]) && fabs(r->naive.dsinks[h] - exact[h]) > naive_err)
            naive_err = fabs(r->naive.dsinks[h] - exact[h]);
    }
    for (int64_t h = 0; h < Hq; h++) {
        double lib = (double)dsinks[h];
        if (!isfinite(lib) || !isfinite(exact[h])) {
            MT_CHECK((isnan(lib) && isnan(exact[h])) || lib == exact[h],
                     "dsinks[%lld]: lib %.9g, oracle %.17g", (long long)h, lib, exact[h]);
            continue;
        }
        /* rounding to float: half an ulp (2^-24 relative) or half the smallest subnormal */
        int f32 = g->dtype != FA_F64; /* bf16, f16: the half suites' dsinks rule is f32's */
        double limit = f32 ? 3.0 * naive_err + 1e-5 : 0x1p-24 * fabs(exact[h]) + 0x1p-150 + 1e-11 * max_ref;
        MT_CHECK(fabs(lib - exact[h]) <= limit,
                 "dsinks[%lld]: lib %.9g, oracle %.17g: |diff| %.3e > limit %.3e (%s); single-process "
                 "fa_backward: %.9g",
                 (long long)h, lib, exact[h], fabs(lib - exact[h]), limit,
                 f32 ? "3 x naive f32 error + 1e-5" : "half a float ulp + 1e-11 x max|ref|",
                 r->single.dsinks[h]);
    }
    MT_EXPECT_SAME_BYTES(env, dsinks, sizeof(float) * (size_t)Hq, "dsinks");
    result_free(&given);
}
