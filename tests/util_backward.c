/* SPDX-License-Identifier: BSD-3-Clause */
/* Backward-pass test helpers; see util_backward.h. */
#include "util_backward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "reference_backward.h"

/* ---- problems --------------------------------------------------------------------------- */

/* A [B][S][H][dim] view with `gh` elements between heads, `gs` after each row of heads and `gb`
 * after each batch, in a fresh canary-filled buffer. */
static fa_tensor padded_view(kit_buf *buf, fa_dtype t, int64_t B, int64_t H, int64_t S, int64_t dim,
                             int64_t gh, int64_t gs, int64_t gb)
{
    int64_t sh = dim + gh, ss = H * sh + gs, sb = S * ss + gb;
    *buf = kit_buf_alloc((size_t)(B * sb) * tu_dtype_size(t));
    fa_tensor v = {.data = kit_buf_data(buf),
                   .dtype = t,
                   .batch = B,
                   .heads = H,
                   .seq = S,
                   .dim = dim,
                   .stride_batch = sb,
                   .stride_head = sh,
                   .stride_seq = ss};
    return v;
}

/* A view of the given shape in the layout family of `layout` (see tub_make); `gaps` picks the
 * padding of the TU_PACKED family so that no two tensors share it. */
static fa_tensor layout_view(kit_buf *buf, tu_layout layout, fa_dtype t, int64_t B, int64_t H, int64_t S,
                             int64_t dim, int gaps)
{
    if (layout == TU_PACKED) return padded_view(buf, t, B, H, S, dim, 1 + gaps % 3, 2 + gaps, 3 + 2 * gaps);
    *buf = kit_buf_alloc((size_t)(B * H * S * dim) * tu_dtype_size(t));
    if (layout == TU_BHSD) return fa_tensor_bhsd(kit_buf_data(buf), t, B, H, S, dim);
    return fa_tensor_bshd(kit_buf_data(buf), t, B, S, H, dim);
}

void tub_make(tub_problem *bp, const tu_shape *s, tu_rng *rng, double qk_amp)
{
    memset(bp, 0, sizeof *bp);
    tu_problem_make(&bp->fw, s, rng, qk_amp);
    bp->dout = layout_view(&bp->dout_buf, s->layout, s->dtype, s->batch, s->q_heads, s->q_len, s->dim_v, 0);
    const fa_tensor *like[3] = {&bp->fw.q, &bp->fw.k, &bp->fw.v};
    for (int g = 0; g < 3; g++)
        bp->grad[g] = layout_view(&bp->grad_buf[g], s->layout, s->dtype, like[g]->batch, like[g]->heads,
                                  like[g]->seq, like[g]->dim, g + 1);
    kit_fill_uniform(&bp->dout, &rng->state, -1.0, 1.0);
}

void tub_free(tub_problem *bp)
{
    tu_problem_free(&bp->fw);
    kit_buf_free(&bp->dout_buf);
    for (int g = 0; g < 3; g++) kit_buf_free(&bp->grad_buf[g]);
}

void tub_fill_grad_canary(tub_problem *bp)
{
    for (int g = 0; g < 3; g++)
        if (bp->grad_buf[g].base)
            memset(bp->grad_buf[g].base, KIT_CANARY, bp->grad_buf[g].bytes + 2 * KIT_GUARD);
}

fa_status tub_forward(fa_context *ctx, const fa_params *p, tub_problem *bp)
{
    return fa_forward(ctx, p, &bp->fw.q, &bp->fw.k, &bp->fw.v, &bp->fw.out, bp->fw.lse);
}

fa_status tub_backward(fa_context *ctx, const fa_params *p, tub_problem *bp)
{
    return fa_backward(ctx, p, &bp->fw.q, &bp->fw.k, &bp->fw.v, &bp->fw.out, &bp->dout, bp->fw.lse,
                       &bp->grad[0], &bp->grad[1], &bp->grad[2]);
}

static int only_view_written(const kit_buf *buf, const fa_tensor *t)
{
    if (!kit_buf_guards_intact(buf)) return 0;
    size_t n = buf->bytes;
    if (n == 0) return 1;
    unsigned char *mark = calloc(n, 1);
    if (!mark) abort();
    size_t e = tu_dtype_size(t->dtype);
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t s = 0; s < t->seq; s++) {
                size_t off = (size_t)(b * t->stride_batch + h * t->stride_head + s * t->stride_seq) * e;
                memset(mark + off, 1, (size_t)t->dim * e);
            }
    const unsigned char *data = kit_buf_data(buf);
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++)
        if (!mark[i] && data[i] != KIT_CANARY) ok = 0;
    free(mark);
    return ok;
}

int tub_grads_only_defined_written(const tub_problem *bp)
{
    for (int g = 0; g < 3; g++)
        if (!only_view_written(&bp->grad_buf[g], &bp->grad[g])) return 0;
    return 1;
}

/* ---- views ------------------------------------------------------------------------------ */

int64_t tub_numel(const fa_tensor *t)
{
    return t->batch * t->heads * t->seq * t->dim;
}

/* Runs `body` for every element of view t, in [B][H][S][D] order, with `flat` its flat index and
 * `addr` its address (the loop counters b_, h_, s_, d_ are in scope too). */
#define FOR_EACH_ELEMENT(t, flat, addr, body)                                                                \
    do {                                                                                                     \
        size_t e_ = tu_dtype_size((t)->dtype);                                                               \
        int64_t flat = 0;                                                                                    \
        for (int64_t b_ = 0; b_ < (t)->batch; b_++)                                                          \
            for (int64_t h_ = 0; h_ < (t)->heads; h_++)                                                      \
                for (int64_t s_ = 0; s_ < (t)->seq; s_++)                                                    \
                    for (int64_t d_ = 0; d_ < (t)->dim; d_++, flat++) {                                      \
                        const unsigned char *addr =                                                          \
                            (const unsigned char *)(t)->data +                                               \
                            (size_t)(b_ * (t)->stride_batch + h_ * (t)->stride_head + s_ * (t)->stride_seq + \
                                     d_) *                                                                   \
                                e_;                                                                          \
                        body                                                                                 \
                    }                                                                                        \
    } while (0)

static double load(const unsigned char *addr, fa_dtype t)
{
    if (t == FA_F64) {
        double x;
        memcpy(&x, addr, sizeof x);
        return x;
    }
    float x;
    memcpy(&x, addr, sizeof x);
    return (double)x;
}

double *tub_view_copy(const fa_tensor *t)
{
    double *c = malloc(sizeof(double) * (size_t)(tub_numel(t) + 1));
    if (!c) abort();
    FOR_EACH_ELEMENT(t, i, a, { c[i] = load(a, t->dtype); });
    return c;
}

int tub_views_bitwise_equal(const fa_tensor *a, const fa_tensor *b, int64_t *where)
{
    size_t e = tu_dtype_size(a->dtype);
    int64_t first = -1;
    FOR_EACH_ELEMENT(a, i, pa, {
        const unsigned char *pb =
            (const unsigned char *)b->data +
            (size_t)(b_ * b->stride_batch + h_ * b->stride_head + s_ * b->stride_seq + d_) * e;
        if (first < 0 && memcmp(pa, pb, e) != 0) first = i;
    });
    if (where) *where = first;
    return first < 0;
}

int64_t tub_count_nonfinite(const fa_tensor *t, int64_t *first)
{
    int64_t n = 0, f = -1;
    FOR_EACH_ELEMENT(t, i, a, {
        if (!isfinite(load(a, t->dtype)) && n++ == 0) f = i;
    });
    if (first) *first = f;
    return n;
}

double tub_max_abs(const fa_tensor *t)
{
    double m = 0.0;
    FOR_EACH_ELEMENT(t, i, a, {
        (void)i;
        double x = fabs(load(a, t->dtype));
        if (x > m) m = x;
    });
    return m;
}

/* ---- oracle ----------------------------------------------------------------------------- */

static void ref_alloc(tub_ref *r, const tub_problem *bp)
{
    for (int g = 0; g < 3; g++) {
        r->grad[g] = malloc(sizeof(double) * (size_t)(tub_numel(&bp->grad[g]) + 1));
        if (!r->grad[g]) abort();
    }
}

void tub_ref_compute(tub_ref *r, const tub_problem *bp, const fa_params *p)
{
    ref_alloc(r, bp);
    ref_backward(p, &bp->fw.q, &bp->fw.k, &bp->fw.v, &bp->dout, r->grad[0], r->grad[1], r->grad[2]);
}

void tub_ref_compute_naive_f32(tub_ref *r, const tub_problem *bp, const fa_params *p)
{
    ref_alloc(r, bp);
    ref_backward_naive_f32(p, &bp->fw.q, &bp->fw.k, &bp->fw.v, &bp->dout, r->grad[0], r->grad[1], r->grad[2]);
}

void tub_ref_free(tub_ref *r)
{
    for (int g = 0; g < 3; g++) {
        free(r->grad[g]);
        r->grad[g] = NULL;
    }
}

static void err_add(tub_err *e, double lib, double ref, int64_t i)
{
    if (!isfinite(lib) || !isfinite(ref)) {
        int same = (isnan(lib) && isnan(ref)) || (isinf(ref) && lib == ref);
        if (!same && e->mismatches++ == 0) {
            e->first_mismatch = i;
            e->worst_lib = lib;
            e->worst_ref = ref;
        }
        return;
    }
    double d = fabs(lib - ref);
    if (fabs(ref) > e->max_ref) e->max_ref = fabs(ref);
    if (e->worst < 0 || d > e->max_err) {
        e->max_err = d > e->max_err ? d : e->max_err;
        e->worst = i;
        if (e->mismatches == 0) {
            e->worst_lib = lib;
            e->worst_ref = ref;
        }
    }
}

static tub_err err_new(void)
{
    tub_err e;
    memset(&e, 0, sizeof e);
    e.worst = e.first_mismatch = -1;
    return e;
}

tub_err tub_compare_view(const fa_tensor *lib, const double *ref, const unsigned char *mask)
{
    tub_err e = err_new();
    FOR_EACH_ELEMENT(lib, i, a, {
        if (!mask || mask[i]) err_add(&e, load(a, lib->dtype), ref[i], i);
    });
    return e;
}

tub_err tub_compare_arrays(const double *x, const double *ref, int64_t n, const unsigned char *mask)
{
    tub_err e = err_new();
    for (int64_t i = 0; i < n; i++)
        if (!mask || mask[i]) err_add(&e, x[i], ref[i], i);
    return e;
}

void tub_grad_bounds(const tub_problem *bp, const fa_params *p, double bound[3])
{
    const tu_shape *s = &bp->fw.shape;
    double scale = (p && p->scale != 0.0) ? p->scale : 1.0 / sqrt((double)s->dim);
    double group = s->kv_heads > 0 ? (double)(s->q_heads / s->kv_heads) : 1.0;
    double ds = 2.0 * (double)s->dim_v * tub_max_abs(&bp->dout) * tub_max_abs(&bp->fw.v);
    bound[TUB_DQ] = fabs(scale) * ds * tub_max_abs(&bp->fw.k);
    bound[TUB_DK] = fabs(scale) * ds * tub_max_abs(&bp->fw.q) * group * (double)s->q_len;
    bound[TUB_DV] = tub_max_abs(&bp->dout) * group * (double)s->q_len;
}

static const char *grad_name[3] = {"dq", "dk", "dv"};

/* The [B][H][S][D] coordinates of a flat index of t, for messages. */
static void coords(const fa_tensor *t, int64_t i, char *buf, size_t size)
{
    if (i < 0) {
        snprintf(buf, size, "-");
        return;
    }
    int64_t d = i % t->dim, s = (i / t->dim) % t->seq, h = (i / (t->dim * t->seq)) % t->heads,
            b = i / (t->dim * t->seq * t->heads);
    snprintf(buf, size, "(b %lld, h %lld, s %lld, d %lld)", (long long)b, (long long)h, (long long)s,
             (long long)d);
}

int tub_check_accuracy(const tub_problem *bp, const fa_params *p, const tub_ref *oracle, const tub_ref *naive,
                       double rel_tol, char *msg, size_t msg_size)
{
    return tub_check_accuracy_masked(bp, p, oracle, naive, NULL, rel_tol, msg, msg_size);
}

int tub_check_accuracy_masked(const tub_problem *bp, const fa_params *p, const tub_ref *oracle,
                              const tub_ref *naive, unsigned char *const mask[3], double rel_tol, char *msg,
                              size_t msg_size)
{
    double bound[3];
    tub_grad_bounds(bp, p, bound);
    for (int g = 0; g < 3; g++) {
        const fa_tensor *t = &bp->grad[g];
        tub_err e = tub_compare_view(t, oracle->grad[g], mask ? mask[g] : NULL);
        char at[96];
        if (e.mismatches) {
            coords(t, e.first_mismatch, at, sizeof at);
            snprintf(msg, msg_size, "%s: %lld non-finite mismatches, first at %s: lib %.17g ref %.17g",
                     grad_name[g], (long long)e.mismatches, at, e.worst_lib, e.worst_ref);
            return 0;
        }
        double limit;
        const char *rule;
        char rule_buf[128];
        if (bp->fw.shape.dtype == FA_F64) {
            double norm = e.max_ref > 1e-4 * bound[g] ? e.max_ref : 1e-4 * bound[g];
            limit = rel_tol * norm;
            snprintf(rule_buf, sizeof rule_buf, "%.0e x max(max|ref| %.3e, 1e-4 x bound %.3e)", rel_tol,
                     e.max_ref, bound[g]);
            rule = rule_buf;
        } else {
            tub_err n =
                tub_compare_arrays(naive->grad[g], oracle->grad[g], tub_numel(t), mask ? mask[g] : NULL);
            limit = 3.0 * n.max_err + 1e-5;
            snprintf(rule_buf, sizeof rule_buf, "3 x naive f32 error %.3e + 1e-5", n.max_err);
            rule = rule_buf;
        }
        if (!(e.max_err <= limit)) {
            coords(t, e.worst, at, sizeof at);
            snprintf(msg, msg_size, "%s: max error %.3e > limit %.3e (%s), worst at %s: lib %.17g ref %.17g",
                     grad_name[g], e.max_err, limit, rule, at, e.worst_lib, e.worst_ref);
            return 0;
        }
    }
    return 1;
}

void tub_desc(const tub_problem *bp, const fa_params *p, int block_q, int block_k, char *buf, size_t size)
{
    char s[256];
    tu_shape_str(&bp->fw.shape, p, s, sizeof s);
    snprintf(buf, size, "%s blocks %d/%d", s, block_q, block_k);
}

const char *tub_direction_name(tub_direction d)
{
    return d == TUB_FORWARD ? "forward" : "backward";
}
