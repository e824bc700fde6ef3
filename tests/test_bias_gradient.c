/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_params.dbias (include/flashattn.h): fa_backward's gradient of the additive bias.
 * - dbias matches the float64 oracle (ref_backward_dbias) for every broadcast pattern tm_mods makes
 *   ([B][1][1][Nk], the same as a stride-0 [B][Hq][Nq][Nk] view, a full [B][Hq][Nq][Nk] with gaps,
 *   [1][Hq][Nq][Nk], [B][1][Nq][Nk]), with causal masks, windows and softcap: f64 within 1e-11 of
 *   the largest |dbias|, f32 within 3x the naive f32 algorithm's error + 1e-5 (the gradients' rule),
 *   bf16 and f16 inputs by the half suites' rule against the yardstick handed the same rounded out;
 *   the gradient of a -inf bias entry is exactly 0; nothing is written outside dbias's elements;
 * - dbias is the derivative of the library's own forward: central finite differences over bias
 *   entries (f64), through softcap and masks, the broadcast entries summing every use;
 * - dbias, dq, dk and dv are the same bytes on 1..4 threads under every backward plan, and asking
 *   for dbias leaves dq, dk and dv the bytes of the call without it;
 * - a dbias broadcast over an axis of extent 0 (B, Hq or Nq of 0) is an empty sum: every element +0
 *   (a fuzz find: such a dbias was left unwritten);
 * - an empty dbias is accepted whatever its strides, and the strides rule still refuses a non-empty one. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/backward.h"
#include "half_util.h"
#include "modifiers.h"
#include "reference_backward.h"
#include "util.h"
#include "util_backward.h"

/* dbias laid out as the bias tm_mods made (the same strides: stride 0 where the bias has it), in a
 * canary-filled guarded block of the bias block's size. */
typedef struct {
    kit_buf buf;
    fa_tensor view;
} dbias_buf;

static void dbias_make(dbias_buf *d, const tm_mods *m)
{
    d->buf = kit_buf_alloc(m->bias_buf.bytes);
    d->view = m->bias;
    d->view.data = kit_buf_data(&d->buf);
}

/* Every element of the view NaN (the bytes around it stay the canary): an element the call leaves
 * unwritten shows as NaN against the oracle. */
static void dbias_poison(dbias_buf *d)
{
    const fa_tensor *t = &d->view;
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t i = 0; i < t->seq; i++)
                for (int64_t j = 0; j < t->dim; j++) kit_tensor_store(t, b, h, i, j, NAN);
}

static void dbias_canary(dbias_buf *d)
{
    memset(d->buf.base, KIT_CANARY, d->buf.bytes + 2 * KIT_GUARD);
}

/* 1 when every byte of the block that is not a byte of an element of the view still holds the canary. */
static int dbias_only_view_written(const dbias_buf *d)
{
    const fa_tensor *t = &d->view;
    size_t e = tu_dtype_size(t->dtype);
    unsigned char *mine = calloc(d->buf.bytes + 1, 1);
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t i = 0; i < t->seq; i++) {
                size_t at = (size_t)(b * t->stride_batch + h * t->stride_head + i * t->stride_seq) * e;
                memset(mine + at, 1, (size_t)t->dim * e);
            }
    const unsigned char *data = kit_buf_data(&d->buf);
    int ok = kit_buf_guards_intact(&d->buf);
    for (size_t x = 0; ok && x < d->buf.bytes; x++)
        if (!mine[x] && data[x] != KIT_CANARY) ok = 0;
    free(mine);
    return ok;
}

/* The view's elements in the oracle's layout (ref_dbias_shape_of: broadcast axes of size 1). */
static double *dbias_in_ref_layout(const dbias_buf *d, const fa_params *p, const fa_tensor *q, int64_t *n)
{
    ref_dbias_shape s = ref_dbias_shape_of(p, q);
    int64_t nk = d->view.dim;
    *n = s.batch * s.heads * s.seq * nk;
    double *x = malloc(sizeof(double) * (size_t)(*n + 1));
    for (int64_t b = 0; b < s.batch; b++)
        for (int64_t h = 0; h < s.heads; h++)
            for (int64_t i = 0; i < s.seq; i++)
                for (int64_t j = 0; j < nk; j++)
                    x[ref_dbias_at(&s, b, h, i) * nk + j] = kit_tensor_load(&d->view, b, h, i, j);
    return x;
}

/* Every -inf entry of the bias has a gradient of exactly 0 (its probability is 0 wherever it is read). */
static int64_t minus_inf_entries_not_zero(const tm_mods *m, const dbias_buf *d)
{
    const fa_tensor *t = &m->bias;
    int64_t bad = 0;
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t i = 0; i < t->seq; i++)
                for (int64_t j = 0; j < t->dim; j++)
                    if (kit_tensor_load(t, b, h, i, j) == -INFINITY &&
                        kit_tensor_load(&d->view, b, h, i, j) != 0.0)
                        bad++;
    return bad;
}

static const struct {
    const char *name;
    tm_spec spec;
} configs[] = {
    {"no mask", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_OFF, 0}},
    {"top-left, window 9/-1", {FA_CAUSAL_TOP_LEFT, 9, -1, 0.0, 0, TM_BIAS_OFF, 0}},
    {"softcap 1.5, bottom-right, ALiBi", {FA_CAUSAL_BOTTOM_RIGHT, -1, -1, 1.5, 1, TM_BIAS_OFF, 0}},
    {"softcap 2, window 4/3, sinks", {FA_CAUSAL_NONE, 4, 3, 2.0, 0, TM_BIAS_OFF, 1}},
};
#define N_CONFIGS ((int)(sizeof configs / sizeof configs[0]))

static double max_abs(const double *x, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

Test(bias_gradient, dbias_matches_the_oracle_for_every_broadcast_pattern_f32_f64)
{
    static const tu_shape shapes[] = {
        {FA_F32, 2, 4, 2, 37, 45, 16, 12, TU_BHSD},
        {FA_F64, 2, 4, 2, 37, 45, 16, 12, TU_BSHD},
        {FA_F32, 1, 2, 1, 50, 23, 8, 8, TU_PACKED},
        {FA_F64, 3, 2, 2, 9, 31, 4, 6, TU_BHSD},
    };
    uint64_t seed = tu_test_seed();
    fa_context *ctx = tu_context(2, 16, 8); /* several query and key blocks, masks that skip some */
    int checked = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
        for (int c = 0; c < N_CONFIGS; c++)
            for (int kind = TM_BIAS_KEY_PADDING; kind < TM_BIAS_KINDS; kind++) {
                const tu_shape *s = &shapes[si];
                tu_rng rng = tu_rng_make(seed + si * 1000 + (uint64_t)(c * 10 + kind));
                tub_problem bp;
                tub_make(&bp, s, &rng, 1.5);
                tm_spec spec = configs[c].spec;
                spec.bias = (tm_bias_kind)kind;
                tm_mods m;
                tm_mods_make(&m, &spec, s, 0.0, &rng);
                dbias_buf d;
                dbias_make(&d, &m);
                dbias_poison(&d);
                char desc[700], shape[512];
                tm_desc(s, &m, shape, sizeof shape);
                snprintf(desc, sizeof desc, "%s (%s), seed %llu", configs[c].name, shape,
                         (unsigned long long)seed);
                cr_assert_eq(tub_forward(ctx, &m.p, &bp), FA_OK, "%s", desc);
                fa_params p = m.p;
                p.dbias = &d.view;
                cr_assert_eq(tub_backward(ctx, &p, &bp), FA_OK, "%s: %s", desc, fa_last_error());
                cr_expect(dbias_only_view_written(&d), "%s: wrote outside dbias's elements", desc);
                cr_expect_eq(minus_inf_entries_not_zero(&m, &d), 0,
                             "%s: a -inf bias entry has a nonzero gradient", desc);
                int64_t n;
                double *lib = dbias_in_ref_layout(&d, &m.p, &bp.fw.q, &n);
                double *ref = malloc(sizeof(double) * (size_t)(n + 1));
                ref_backward_dbias(&m.p, &bp.fw.q, &bp.fw.k, &bp.fw.v, &bp.dout, ref);
                tub_err e = tub_compare_arrays(lib, ref, n, NULL);
                double limit;
                if (s->dtype == FA_F64) {
                    limit = 1e-11 * max_abs(ref, n) + 1e-300;
                } else {
                    double *naive = malloc(sizeof(double) * (size_t)(n + 1));
                    ref_backward_dbias_naive_f32(&m.p, &bp.fw.q, &bp.fw.k, &bp.fw.v, &bp.dout, naive);
                    limit = 3.0 * tub_compare_arrays(naive, ref, n, NULL).max_err + 1e-5;
                    free(naive);
                }
                cr_expect(
                    e.mismatches == 0 && e.max_err <= limit,
                    "%s: dbias |lib - oracle| %.3e > %.3e at %lld (lib %.9g, oracle %.17g), %lld non-finite "
                    "mismatches",
                    desc, e.max_err, limit, (long long)e.worst, e.worst_lib, e.worst_ref,
                    (long long)e.mismatches);
                checked++;
                free(lib);
                free(ref);
                kit_buf_free(&d.buf);
                tm_mods_free(&m);
                tub_free(&bp);
            }
    cr_expect_eq(checked, 4 * N_CONFIGS * (TM_BIAS_KINDS - 1));
    fa_context_destroy(ctx);
}

/* bf16 and f16 inputs (q, k, v, out, dout in one half type, the bias f32): against the oracle by
 * the half suites' rule (hu_check), the yardstick handed the same rounded out. */
Test(bias_gradient, dbias_of_half_inputs_matches_the_oracle)
{
    static const fa_dtype types[] = {FA_BF16, FA_F16};
    uint64_t seed = tu_test_seed();
    fa_context *ctx = tu_context(2, 16, 8);
    for (int ti = 0; ti < 2; ti++)
        for (int c = 0; c < N_CONFIGS; c++)
            for (int kind = TM_BIAS_KEY_PADDING; kind < TM_BIAS_KINDS; kind++) {
                kit_shape hs = {types[ti], types[ti], 2, 4, 2, 33, 41, 16, 10, ti};
                tu_shape fs = {FA_F32,    hs.batch, hs.q_heads, hs.kv_heads, hs.q_len,
                               hs.kv_len, hs.dim,   hs.dim_v,   TU_BHSD};
                tu_rng rng = tu_rng_make(seed + (uint64_t)(ti * 100 + c * 10 + kind));
                kit_problem pr;
                hu_make(&pr, &hs, &rng, 1.5);
                tm_spec spec = configs[c].spec;
                spec.bias = (tm_bias_kind)kind;
                tm_mods m;
                tm_mods_make(&m, &spec, &fs, 0.0, &rng);
                dbias_buf d;
                dbias_make(&d, &m);
                dbias_poison(&d);
                char desc[700];
                hu_desc(&hs, &m.p, desc, sizeof desc);
                cr_assert_eq(hu_forward(ctx, &m.p, &pr), FA_OK, "%s", desc);
                fa_params p = m.p;
                p.dbias = &d.view;
                cr_assert_eq(hu_backward(ctx, &p, &pr), FA_OK, "%s: %s", desc, fa_last_error());
                cr_expect(dbias_only_view_written(&d), "%s (%s): wrote outside dbias's elements", desc,
                          configs[c].name);
                cr_expect_eq(minus_inf_entries_not_zero(&m, &d), 0,
                             "%s (%s): a -inf bias entry has a gradient", desc, configs[c].name);
                int64_t n;
                double *lib = dbias_in_ref_layout(&d, &m.p, &pr.t[KIT_Q], &n);
                double *ref = malloc(sizeof(double) * (size_t)(n + 1)),
                       *naive = malloc(sizeof(double) * (size_t)(n + 1));
                ref_backward_dbias(&m.p, &pr.t[KIT_Q], &pr.t[KIT_K], &pr.t[KIT_V], &pr.t[KIT_DOUT], ref);
                ref_backward_dbias_naive_f32_given_out(&m.p, &pr.t[KIT_Q], &pr.t[KIT_K], &pr.t[KIT_V],
                                                       &pr.t[KIT_OUT], &pr.t[KIT_DOUT], naive);
                char msg[400];
                cr_expect(hu_check("dbias", FA_F32, lib, ref, naive, n, 1e-5, msg, sizeof msg),
                          "%s (%s), seed %llu: %s", desc, configs[c].name, (unsigned long long)seed, msg);
                free(lib);
                free(ref);
                free(naive);
                kit_buf_free(&d.buf);
                tm_mods_free(&m);
                kit_problem_free(&pr);
            }
    fa_context_destroy(ctx);
}

/* ΔL = sum(dout ∘ (out(a) - out(b))), element by element. */
static double loss_diff(const double *dout, const double *a, const double *b, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += dout[i] * (a[i] - b[i]);
    return s;
}

static double *out_with(fa_context *ctx, const fa_params *p, tub_problem *bp, const fa_tensor *t, int64_t b,
                        int64_t h, int64_t i, int64_t j, double value)
{
    double saved = kit_tensor_load(t, b, h, i, j);
    kit_tensor_store(t, b, h, i, j, value);
    fa_status st = tub_forward(ctx, p, bp);
    kit_tensor_store(t, b, h, i, j, saved);
    cr_assert_eq(st, FA_OK, "forward status %d", st);
    return tu_out_copy(&bp->fw);
}

/* The fourth-order central difference of test_backward_modifiers_finite_diff.c (same step and
 * tolerance): |g - dbias| <= 1e-7 · max(|dbias|, floor), floor = max(1e-3 · max|dbias|, 1e-4). A bias
 * entry of a broadcast axis is read by every (b, h, i) of it, so its difference sums them all. */
Test(bias_gradient, dbias_matches_central_differences_of_the_forward)
{
    static const tu_shape shapes[] = {
        {FA_F64, 2, 2, 1, 9, 11, 6, 5, TU_BHSD},
        {FA_F64, 2, 3, 3, 13, 7, 4, 3, TU_BHSD},
    };
    static const tm_spec specs[] = {
        {FA_CAUSAL_NONE, -1, -1, 1.5, 0, TM_BIAS_OFF, 0},
        {FA_CAUSAL_TOP_LEFT, 5, -1, 0.0, 1, TM_BIAS_OFF, 1},
    };
    uint64_t seed = tu_test_seed();
    fa_context *ctx = tu_context(1, 5, 4);
    int checked = 0;
    for (int si = 0; si < 2; si++)
        for (int c = 0; c < 2; c++)
            for (int kind = TM_BIAS_KEY_PADDING; kind < TM_BIAS_KINDS; kind++) {
                const tu_shape *s = &shapes[si];
                tu_rng rng = tu_rng_make(seed + (uint64_t)(si * 100 + c * 10 + kind));
                tub_problem bp;
                tub_make(&bp, s, &rng, 1.5);
                tm_spec spec = specs[c];
                spec.bias = (tm_bias_kind)kind;
                tm_mods m;
                tm_mods_make(&m, &spec, s, 0.0, &rng);
                dbias_buf d;
                dbias_make(&d, &m);
                char desc[700], shape[512];
                tm_desc(s, &m, shape, sizeof shape);
                snprintf(desc, sizeof desc, "%s, seed %llu", shape, (unsigned long long)seed);
                cr_assert_eq(tub_forward(ctx, &m.p, &bp), FA_OK, "%s", desc);
                fa_params p = m.p;
                p.dbias = &d.view;
                cr_assert_eq(tub_backward(ctx, &p, &bp), FA_OK, "%s: %s", desc, fa_last_error());
                double *dout = tub_view_copy(&bp.dout);
                int64_t n_out = tu_problem_rows(&bp.fw) * s->dim_v;
                const fa_tensor *t = &m.bias;
                double top = 0.0;
                for (int64_t b = 0; b < t->batch; b++)
                    for (int64_t h = 0; h < t->heads; h++)
                        for (int64_t i = 0; i < t->seq; i++)
                            for (int64_t j = 0; j < t->dim; j++)
                                if (fabs(kit_tensor_load(&d.view, b, h, i, j)) > top)
                                    top = fabs(kit_tensor_load(&d.view, b, h, i, j));
                double floor_abs = 1e-3 * top > 1e-4 ? 1e-3 * top : 1e-4;
                for (int e = 0; e < 10; e++) {
                    int64_t b = tu_rng_below(&rng, t->batch), h = tu_rng_below(&rng, t->heads),
                            i = tu_rng_below(&rng, t->seq), j = tu_rng_below(&rng, t->dim);
                    double x0 = kit_tensor_load(t, b, h, i, j), an = kit_tensor_load(&d.view, b, h, i, j);
                    if (!isfinite(x0)) { /* moving a -inf entry changes nothing: its gradient is 0 */
                        cr_expect(an == 0.0, "%s: dbias at a -inf entry (%lld %lld %lld %lld) = %g", desc,
                                  (long long)b, (long long)h, (long long)i, (long long)j, an);
                        continue;
                    }
                    double step = ldexp(1.0, -10 + (fabs(x0) > 1.0 ? (int)ceil(log2(fabs(x0))) : 0));
                    double *p1 = out_with(ctx, &m.p, &bp, t, b, h, i, j, x0 + step),
                           *m1 = out_with(ctx, &m.p, &bp, t, b, h, i, j, x0 - step),
                           *p2 = out_with(ctx, &m.p, &bp, t, b, h, i, j, x0 + 2 * step),
                           *m2 = out_with(ctx, &m.p, &bp, t, b, h, i, j, x0 - 2 * step);
                    double fd = (8.0 * loss_diff(dout, p1, m1, n_out) - loss_diff(dout, p2, m2, n_out)) /
                                (12.0 * step);
                    double tol = 1e-7 * (fabs(an) > floor_abs ? fabs(an) : floor_abs);
                    cr_expect(fabs(fd - an) <= tol,
                              "%s: dL/dbias(%lld %lld %lld %lld): finite difference %.15g, dbias %.15g, "
                              "|diff| %.3e > "
                              "%.3e",
                              desc, (long long)b, (long long)h, (long long)i, (long long)j, fd, an,
                              fabs(fd - an), tol);
                    checked++;
                    free(p1);
                    free(m1);
                    free(p2);
                    free(m2);
                }
                free(dout);
                kit_buf_free(&d.buf);
                tm_mods_free(&m);
                tub_free(&bp);
            }
    cr_expect_gt(checked, 100, "only %d finite entries were probed", checked);
    fa_context_destroy(ctx);
}

/* One backward's bytes: dq, dk, dv and dbias. */
typedef struct {
    double *grad[3];
    unsigned char *dbias;
} run_bytes;

static run_bytes snapshot(const tub_problem *bp, const dbias_buf *d)
{
    run_bytes r;
    for (int g = 0; g < 3; g++) r.grad[g] = tub_view_copy(&bp->grad[g]);
    r.dbias = malloc(d->buf.bytes + 2 * KIT_GUARD);
    memcpy(r.dbias, d->buf.base, d->buf.bytes + 2 * KIT_GUARD);
    return r;
}

static void run_bytes_free(run_bytes *r)
{
    for (int g = 0; g < 3; g++) free(r->grad[g]);
    free(r->dbias);
}

static int grads_same(const run_bytes *a, const run_bytes *b, const tub_problem *bp)
{
    for (int g = 0; g < 3; g++)
        if (memcmp(a->grad[g], b->grad[g], sizeof(double) * (size_t)tub_numel(&bp->grad[g])) != 0) return 0;
    return 1;
}

Test(bias_gradient, dbias_is_the_same_bytes_at_every_thread_count_and_plan_and_leaves_the_gradients_alone)
{
    static const tu_shape shapes[] = {
        {FA_F32, 2, 4, 2, 70, 90, 16, 16, TU_BHSD},
        {FA_F64, 1, 3, 1, 45, 60, 8, 12, TU_BSHD},
    };
    static const fa_backward_plan plans[] = {FA_BACKWARD_PLAN_FUSED, FA_BACKWARD_PLAN_WAVEFRONT,
                                             FA_BACKWARD_PLAN_SPLIT};
    static const char *plan_names[] = {"fused", "wavefront", "split"};
    uint64_t seed = tu_test_seed();
    for (int si = 0; si < 2; si++)
        for (int kind = TM_BIAS_KEY_PADDING; kind < TM_BIAS_KINDS; kind++) {
            const tu_shape *s = &shapes[si];
            tu_rng rng = tu_rng_make(seed + (uint64_t)(si * 10 + kind));
            tub_problem bp;
            tub_make(&bp, s, &rng, 1.5);
            tm_spec spec = {FA_CAUSAL_TOP_LEFT, 30, -1, 1.5, 0, (tm_bias_kind)kind, 0};
            tm_mods m;
            tm_mods_make(&m, &spec, s, 0.0, &rng);
            dbias_buf d;
            dbias_make(&d, &m);
            char desc[700], shape[512];
            tm_desc(s, &m, shape, sizeof shape);
            snprintf(desc, sizeof desc, "%s, seed %llu", shape, (unsigned long long)seed);
            /* the call without dbias: the gradients every call with it must leave as they are */
            fa_context *ctx = tu_context(1, 16, 16);
            cr_assert_eq(tub_forward(ctx, &m.p, &bp), FA_OK, "%s", desc);
            dbias_canary(&d);
            cr_assert_eq(tub_backward(ctx, &m.p, &bp), FA_OK, "%s", desc);
            run_bytes without = snapshot(&bp, &d);
            fa_context_destroy(ctx);
            fa_params p = m.p;
            p.dbias = &d.view;
            run_bytes first = {{NULL, NULL, NULL}, NULL};
            for (int threads = 1; threads <= 4; threads++)
                for (int pl = 0; pl < 3; pl++) {
                    ctx = tu_context(threads, 16, 16);
                    fa_backward_force_plan(ctx, plans[pl]);
                    dbias_canary(&d);
                    tub_fill_grad_canary(&bp);
                    cr_assert_eq(tub_backward(ctx, &p, &bp), FA_OK, "%s: %s", desc, fa_last_error());
                    fa_context_destroy(ctx);
                    run_bytes now = snapshot(&bp, &d);
                    cr_expect(
                        grads_same(&now, &without, &bp),
                        "%s: dq, dk or dv on %d threads, plan %s, with dbias differ from the call without it",
                        desc, threads, plan_names[pl]);
                    if (!first.dbias) {
                        first = now;
                        continue;
                    }
                    cr_expect(memcmp(now.dbias, first.dbias, d.buf.bytes + 2 * KIT_GUARD) == 0,
                              "%s: dbias on %d threads, plan %s, differs from 1 thread, fused", desc, threads,
                              plan_names[pl]);
                    run_bytes_free(&now);
                }
            run_bytes_free(&first);
            run_bytes_free(&without);
            kit_buf_free(&d.buf);
            tm_mods_free(&m);
            tub_free(&bp);
        }
}

/* dbias [1][1][Nq][Nk] (or [1][H][1][Nk]) broadcast over a batch, heads or rows of extent 0: nothing is
 * summed into it, so every element must be +0, whatever it held before, at 1 and 2 threads. */
Test(bias_gradient, dbias_broadcast_over_an_empty_axis_is_zeros)
{
    enum { NQ = 15, NK = 29, D = 16 };
    static const struct {
        int64_t b, h, nq, bias_b, bias_h, bias_q; /* the problem's B, H, Nq; the bias's sizes */
        const char *what;
    } cases[] = {
        {1, 0, NQ, 1, 1, NQ, "Hq = 0, heads broadcast"},
        {0, 2, NQ, 1, 2, NQ, "B = 0, batch broadcast"},
        {1, 2, 0, 1, 2, 1, "Nq = 0, rows broadcast"},
        {2, 0, NQ, 1, 1, 1, "Hq = 0, every axis broadcast"},
    };
    /* inputs (q, k, v, out, dout may share memory) and each gradient apart: at most B·H·Nk·D floats */
    static float in[2 * 2 * NK * D], grad_q[2 * 2 * NK * D], grad_k[2 * 2 * NK * D], grad_v[2 * 2 * NK * D];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int threads = 1; threads <= 2; threads++) {
            const int64_t b = cases[c].b, h = cases[c].h, nq = cases[c].nq;
            fa_tensor q = fa_tensor_bhsd(in, FA_F32, b, h, nq, D),
                      kv = fa_tensor_bhsd(in, FA_F32, b, h, NK, D);
            fa_tensor out = q, dout = q, dq = fa_tensor_bhsd(grad_q, FA_F32, b, h, nq, D),
                      dk = fa_tensor_bhsd(grad_k, FA_F32, b, h, NK, D),
                      dv = fa_tensor_bhsd(grad_v, FA_F32, b, h, NK, D);
            float *bias = calloc((size_t)(cases[c].bias_h * cases[c].bias_q * NK), sizeof(float)),
                  *dbias = malloc(sizeof(float) * (size_t)(cases[c].bias_h * cases[c].bias_q * NK)),
                  lse[1] = {0};
            cr_assert(bias && dbias);
            const size_t n = (size_t)(cases[c].bias_h * cases[c].bias_q * NK);
            for (size_t x = 0; x < n; x++) dbias[x] = NAN;
            fa_tensor tb =
                          fa_tensor_bhsd(bias, FA_F32, cases[c].bias_b, cases[c].bias_h, cases[c].bias_q, NK),
                      tdb = fa_tensor_bhsd(dbias, FA_F32, cases[c].bias_b, cases[c].bias_h, cases[c].bias_q,
                                           NK);
            fa_params p = FA_PARAMS_INIT;
            p.causal = FA_CAUSAL_BOTTOM_RIGHT;
            p.bias = &tb;
            p.dbias = &tdb;
            fa_context *ctx = tu_context(threads, 0, 0);
            fa_status st = fa_backward(ctx, &p, &q, &kv, &kv, &out, &dout, lse, &dq, &dk, &dv);
            cr_assert_eq(st, FA_OK, "%s, %d threads: %s", cases[c].what, threads, fa_last_error());
            size_t wrong = 0, first = n;
            for (size_t x = 0; x < n; x++)
                if (!(dbias[x] == 0.0f && !signbit(dbias[x])) && wrong++ == 0) first = x;
            cr_expect_eq(wrong, 0,
                         "%s, %d threads: %zu of %zu dbias elements are not +0 (the first, %zu: %g)",
                         cases[c].what, threads, wrong, n, first, first < n ? (double)dbias[first] : 0.0);
            fa_context_destroy(ctx);
            free(bias), free(dbias);
        }
}

/* An empty dbias (Hq = 0) has no element, so its strides, like any empty tensor's, are not judged: a
 * bias broadcasting its rows (stride_seq 0) beside a dbias that does not is accepted and writes
 * nothing (a fuzz find: it was refused as FA_ERR_STRIDE). The same strides with Hq = 2 are refused,
 * with nothing written, so the rule still holds wherever there is an element. */
Test(bias_gradient, empty_dbias_is_accepted_whatever_its_strides)
{
    enum { B = 2, NQ = 7, NK = 9, D = 16, H_MAX = 2 };
    static float in[B * H_MAX * NK * D], grad_q[B * H_MAX * NQ * D], grad_k[B * H_MAX * NK * D],
        grad_v[B * H_MAX * NK * D], bias[B * H_MAX * NK], dbias[B * H_MAX * NQ * NK], lse[B * H_MAX * NQ];
    for (int64_t h = 0; h <= H_MAX; h += H_MAX) {
        for (size_t x = 0; x < sizeof dbias / sizeof *dbias; x++) dbias[x] = NAN;
        fa_tensor q = fa_tensor_bhsd(in, FA_F32, B, h, NQ, D), kv = fa_tensor_bhsd(in, FA_F32, B, h, NK, D);
        fa_tensor out = q, dout = q, dq = fa_tensor_bhsd(grad_q, FA_F32, B, h, NQ, D),
                  dk = fa_tensor_bhsd(grad_k, FA_F32, B, h, NK, D),
                  dv = fa_tensor_bhsd(grad_v, FA_F32, B, h, NK, D);
        fa_tensor tb = fa_tensor_bhsd(bias, FA_F32, B, h, NQ, NK),
                  tdb = fa_tensor_bhsd(dbias, FA_F32, B, h, NQ, NK);
        tb.stride_seq = 0;   /* one bias row for every query row */
        tb.stride_head = NK; /* packed without the rows */
        tb.stride_batch = h * NK;
        fa_params p = FA_PARAMS_INIT;
        p.bias = &tb;
        p.dbias = &tdb;
        fa_context *ctx;
        cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
        fa_status st = fa_backward(ctx, &p, &q, &kv, &kv, &out, &dout, lse, &dq, &dk, &dv);
        if (h == 0)
            cr_expect_eq(st, FA_OK, "Hq = 0: %s", fa_last_error());
        else
            cr_expect_eq(st, FA_ERR_STRIDE, "Hq = %lld: dbias.stride_seq %lld beside a bias's 0 gave %d",
                         (long long)h, (long long)tdb.stride_seq, (int)st);
        size_t written = 0;
        for (size_t x = 0; x < sizeof dbias / sizeof *dbias; x++) written += !isnan(dbias[x]);
        cr_expect_eq(written, 0, "Hq = %lld: %zu dbias elements written", (long long)h, written);
        fa_context_destroy(ctx);
    }
}
