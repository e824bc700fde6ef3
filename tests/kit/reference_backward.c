/* SPDX-License-Identifier: BSD-3-Clause */
/* Naive analytic attention gradients, one (batch, head) at a time, under every modifier of p:
 *   S = modify(scale·QKᵀ) (ref_modify: softcap, ALiBi, bias) over the keys each row sees,
 *   P = softmax(S) with e^(sink) in each denominator, dV = Pᵀ dO, dP = dO Vᵀ,
 *   dS = P ∘ (dP - rowsum(P ∘ dP)) ∘ modify', dQ = scale · dS K, dK = scale · dSᵀ Q,
 *   dsink_h = -Σ_(b,i) P_sink · rowsum(P ∘ dP).
 * Written once as a macro over the arithmetic type, so the f32 yardstick does the same steps. */
#include "reference_backward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double scale_of(const fa_params *p, int64_t d)
{
    return (p && p->scale != 0.0) ? p->scale : 1.0 / sqrt((double)d);
}

ref_dbias_shape ref_dbias_shape_of(const fa_params *p, const fa_tensor *q)
{
    ref_dbias_shape s = {1, 1, 1};
    const fa_tensor *b = p ? p->bias : NULL;
    if (!b) return s;
    s.batch = b->batch == 1 || b->stride_batch == 0 ? 1 : q->batch;
    s.heads = b->heads == 1 || b->stride_head == 0 ? 1 : q->heads;
    s.seq = b->seq == 1 || b->stride_seq == 0 ? 1 : q->seq;
    return s;
}

int64_t ref_dbias_at(const ref_dbias_shape *s, int64_t b, int64_t h, int64_t i)
{
    return ((s->batch > 1 ? b : 0) * s->heads + (s->heads > 1 ? h : 0)) * s->seq + (s->seq > 1 ? i : 0);
}

/* NAME(p, q, k, v, out, dout, keep, dq, dk, dv, dsinks, dbias): every output may be NULL. dbias sums
 * dS before the modifiers' derivative (the gradient of the modified score) over the bias's broadcast
 * axes, b, then h, then i, in T. out NULL: delta_i is sum_j P_ij·M_ij·dP_ij from the oracle's own P;
 * otherwise delta_i = dout_i·out_i from the given out tensor, summed in T in column order (what
 * fa_backward does with the out it is handed). keep: NULL, or dropout's mask [B][Hq][Nq][Nk];
 * M_ij = keep_ij / (1 - p->dropout_p) (1 without), so out = (P∘M)·V, dV = (P∘M)ᵀ·dO and
 * dS = P∘(dP∘M - delta). */
#define DEFINE_REF_BACKWARD(NAME, T, EXP, MODIFY)                                                    \
    static void NAME(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v, \
                     const fa_tensor *out, const fa_tensor *dout, const uint8_t *keep, double *dq,   \
                     double *dk, double *dv, double *dsinks, double *dbias)                          \
    {                                                                                                \
        int64_t B = q->batch, Hq = q->heads, Hkv = k->heads, nq = q->seq, nk = k->seq, d = q->dim,   \
                dvd = v->dim, group = Hkv > 0 ? Hq / Hkv : 1;                                        \
        int grads = dq || dk || dv || dbias, has_sink = p && p->sinks;                               \
        T scale = (T)scale_of(p, d);                                                                 \
        size_t n_nk = (size_t)(nk > 0 ? nk : 1);                                                     \
        T *prob = malloc(sizeof(T) * n_nk), *dprob = malloc(sizeof(T) * n_nk),                       \
          *dmod = malloc(sizeof(T) * n_nk);                                                          \
        T *gk = calloc((size_t)(B * Hkv * nk * d) + 1, sizeof(T));                                   \
        T *gv = calloc((size_t)(B * Hkv * nk * dvd) + 1, sizeof(T));                                 \
        T *gsink = calloc((size_t)Hq + 1, sizeof(T));                                                \
        ref_dbias_shape bs = ref_dbias_shape_of(p, q);                                               \
        T *gbias = calloc((size_t)(bs.batch * bs.heads * bs.seq * nk) + 1, sizeof(T));               \
        for (int64_t b = 0; b < B; b++)                                                              \
            for (int64_t h = 0; h < Hq; h++) {                                                       \
                int64_t kvh = h / group;                                                             \
                T sink = has_sink ? (T)p->sinks[h] : -(T)INFINITY;                                   \
                for (int64_t i = 0; i < nq; i++) {                                                   \
                    T row_max = -(T)INFINITY, sum = 0;                                               \
                    int any = 0;                                                                     \
                    for (int64_t j = 0; j < nk; j++) {                                               \
                        if (!ref_sees(p, nq, nk, i, j)) continue;                                    \
                        T dot = 0;                                                                   \
                        for (int64_t x = 0; x < d; x++)                                              \
                            dot += (T)ref_load(q, b, h, i, x) * (T)ref_load(k, b, kvh, j, x);        \
                        prob[j] = MODIFY(p, nq, nk, b, h, i, j, scale * dot, &dmod[j]);              \
                        if (!any || prob[j] > row_max || isnan(prob[j])) row_max = prob[j];          \
                        any = 1;                                                                     \
                    }                                                                                \
                    T gq_tmp[512];                                                                   \
                    for (int64_t x = 0; x < d; x++) gq_tmp[x] = 0;                                   \
                    if (row_max != -(T)INFINITY) { /* sees a key whose score is not -inf */          \
                        T ref = has_sink && sink > row_max ? sink : row_max;                         \
                        for (int64_t j = 0; j < nk; j++)                                             \
                            if (ref_sees(p, nq, nk, i, j)) sum += (prob[j] = EXP(prob[j] - ref));    \
                        if (has_sink) sum += EXP(sink - ref);                                        \
                        T delta = 0;                                                                 \
                        for (int64_t j = 0; j < nk; j++) {                                           \
                            if (!ref_sees(p, nq, nk, i, j)) continue;                                \
                            prob[j] /= sum;                                                          \
                            T dp = 0;                                                                \
                            for (int64_t y = 0; y < dvd; y++)                                        \
                                dp += (T)ref_load(dout, b, h, i, y) * (T)ref_load(v, b, kvh, j, y);  \
                            if (keep)                                                                \
                                dp *= keep[((b * Hq + h) * nq + i) * nk + j]                         \
                                          ? (T)(1.0 / (1.0 - p->dropout_p))                          \
                                          : (T)0;                                                    \
                            dprob[j] = dp;                                                           \
                            if (!out) delta += prob[j] * dp;                                         \
                        }                                                                            \
                        for (int64_t y = 0; out && y < dvd; y++)                                     \
                            delta += (T)ref_load(dout, b, h, i, y) * (T)ref_load(out, b, h, i, y);   \
                        if (has_sink) gsink[h] -= EXP(sink - ref) / sum * delta;                     \
                        for (int64_t j = 0; grads && j < nk; j++) {                                  \
                            if (!ref_sees(p, nq, nk, i, j)) continue;                                \
                            T ds_mod = prob[j] * (dprob[j] - delta), ds = ds_mod * dmod[j];          \
                            if (dbias) gbias[ref_dbias_at(&bs, b, h, i) * nk + j] += ds_mod;         \
                            T *gkr = gk + ((b * Hkv + kvh) * nk + j) * d;                            \
                            T *gvr = gv + ((b * Hkv + kvh) * nk + j) * dvd;                          \
                            for (int64_t x = 0; x < d; x++) {                                        \
                                gq_tmp[x] += ds * (T)ref_load(k, b, kvh, j, x);                      \
                                gkr[x] += scale * ds * (T)ref_load(q, b, h, i, x);                   \
                            }                                                                        \
                            T kept = prob[j];                                                        \
                            if (keep)                                                                \
                                kept *= keep[((b * Hq + h) * nq + i) * nk + j]                       \
                                            ? (T)(1.0 / (1.0 - p->dropout_p))                        \
                                            : (T)0;                                                  \
                            for (int64_t y = 0; y < dvd; y++)                                        \
                                gvr[y] += kept * (T)ref_load(dout, b, h, i, y);                      \
                        }                                                                            \
                    }                                                                                \
                    if (dq)                                                                          \
                        for (int64_t x = 0; x < d; x++)                                              \
                            dq[((b * Hq + h) * nq + i) * d + x] = (double)(scale * gq_tmp[x]);       \
                }                                                                                    \
            }                                                                                        \
        for (int64_t x = 0; dk && x < B * Hkv * nk * d; x++) dk[x] = (double)gk[x];                  \
        for (int64_t x = 0; dv && x < B * Hkv * nk * dvd; x++) dv[x] = (double)gv[x];                \
        for (int64_t h = 0; dsinks && h < Hq; h++) dsinks[h] = (double)gsink[h];                     \
        for (int64_t x = 0; dbias && x < bs.batch * bs.heads * bs.seq * nk; x++)                     \
            dbias[x] = (double)gbias[x];                                                             \
        free(gbias);                                                                                 \
        free(gk);                                                                                    \
        free(gv);                                                                                    \
        free(gsink);                                                                                 \
        free(prob);                                                                                  \
        free(dprob);                                                                                 \
        free(dmod);                                                                                  \
    }

DEFINE_REF_BACKWARD(backward_f64, double, exp, ref_modify)
DEFINE_REF_BACKWARD(backward_f32, float, expf, ref_modify_f32)

void ref_backward(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                  const fa_tensor *dout, double *dq, double *dk, double *dv)
{
    backward_f64(p, q, k, v, NULL, dout, NULL, dq, dk, dv, NULL, NULL);
}

void ref_backward_dropout(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                          const fa_tensor *dout, const uint8_t *keep, double *dq, double *dk, double *dv)
{
    backward_f64(p, q, k, v, NULL, dout, keep, dq, dk, dv, NULL, NULL);
}

void ref_backward_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                            const fa_tensor *dout, double *dq, double *dk, double *dv)
{
    backward_f32(p, q, k, v, NULL, dout, NULL, dq, dk, dv, NULL, NULL);
}

void ref_backward_dsinks(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                         const fa_tensor *dout, double *dsinks)
{
    backward_f64(p, q, k, v, NULL, dout, NULL, NULL, NULL, NULL, dsinks, NULL);
}

void ref_backward_dsinks_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                   const fa_tensor *v, const fa_tensor *dout, double *dsinks)
{
    backward_f32(p, q, k, v, NULL, dout, NULL, NULL, NULL, NULL, dsinks, NULL);
}

void ref_backward_naive_f32_given_out(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                      const fa_tensor *v, const fa_tensor *out, const fa_tensor *dout,
                                      double *dq, double *dk, double *dv, double *dsinks)
{
    backward_f32(p, q, k, v, out, dout, NULL, dq, dk, dv, dsinks, NULL);
}

void ref_backward_dropout_naive_f32_given_out(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                              const fa_tensor *v, const fa_tensor *out, const fa_tensor *dout,
                                              const uint8_t *keep, double *dq, double *dk, double *dv,
                                              double *dsinks)
{
    backward_f32(p, q, k, v, out, dout, keep, dq, dk, dv, dsinks, NULL);
}

void ref_backward_dbias(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                        const fa_tensor *dout, double *dbias)
{
    backward_f64(p, q, k, v, NULL, dout, NULL, NULL, NULL, NULL, NULL, dbias);
}

void ref_backward_dbias_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                  const fa_tensor *v, const fa_tensor *dout, double *dbias)
{
    backward_f32(p, q, k, v, NULL, dout, NULL, NULL, NULL, NULL, NULL, dbias);
}

void ref_backward_dbias_naive_f32_given_out(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                            const fa_tensor *v, const fa_tensor *out, const fa_tensor *dout,
                                            double *dbias)
{
    backward_f32(p, q, k, v, out, dout, NULL, NULL, NULL, NULL, NULL, dbias);
}

/* Row-level oracles (fa-bench's sampled check): the same definitions, one gradient row at a time. */

// A row that is read many times, copied to double once (the dim axis is contiguous).
static double *load_row(const fa_tensor *t, int64_t b, int64_t h, int64_t s)
{
    double *row = malloc(sizeof(double) * (size_t)t->dim);
    for (int64_t x = 0; x < t->dim; x++) row[x] = ref_load(t, b, h, s, x);
    return row;
}

// a · row (b, h, s) of t. The dim axis is contiguous, so the row is read through one pointer: the
// O(Nq·Nk) dot products dominate a sampled check of a long sequence.
static double dot_with(const double *a, const fa_tensor *t, int64_t b, int64_t h, int64_t s)
{
    int64_t base = b * t->stride_batch + h * t->stride_head + s * t->stride_seq;
    double dot = 0.0;
    if (t->dtype == FA_F64) {
        const double *row = (const double *)t->data + base;
        for (int64_t x = 0; x < t->dim; x++) dot += a[x] * row[x];
    } else if (t->dtype == FA_F32) {
        const float *row = (const float *)t->data + base;
        for (int64_t x = 0; x < t->dim; x++) dot += a[x] * (double)row[x];
    } else { // bf16, f16: widened element by element
        for (int64_t x = 0; x < t->dim; x++) dot += a[x] * ref_load(t, b, h, s, x);
    }
    return dot;
}

// P_ij, dP_ij and the modifiers' derivative m'_ij of query row (b, h, i) for every key j (0, 0, 1
// where masked; dmod may be NULL), its lse and delta. Returns whether the row sees a key whose
// score is not -inf.
static int row_softmax(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                       const fa_tensor *dout, int64_t b, int64_t h, int64_t i, double *prob, double *dprob,
                       double *dmod, double *lse, double *delta)
{
    int64_t nq = q->seq, nk = k->seq, kvh = h / (q->heads / k->heads);
    double scale = scale_of(p, q->dim);
    double *qi = load_row(q, b, h, i), *gi = load_row(dout, b, h, i);
    int has_sink = p && p->sinks;
    double sink = has_sink ? (double)p->sinks[h] : -INFINITY;
    double row_max = -INFINITY;
    int any = 0;
    for (int64_t j = 0; j < nk; j++) {
        prob[j] = dprob[j] = 0.0;
        if (dmod) dmod[j] = 1.0;
        if (!ref_sees(p, nq, nk, i, j)) continue;
        // the score, until it becomes P_ij below
        prob[j] =
            ref_modify(p, nq, nk, b, h, i, j, scale * dot_with(qi, k, b, kvh, j), dmod ? &dmod[j] : NULL);
        if (!any || prob[j] > row_max || isnan(prob[j])) row_max = prob[j];
        any = 1;
    }
    *lse = sink;
    *delta = 0.0;
    int live = row_max != -INFINITY;
    if (live) {
        double ref = has_sink && sink > row_max ? sink : row_max, sum = 0.0;
        for (int64_t j = 0; j < nk; j++)
            if (ref_sees(p, nq, nk, i, j)) sum += exp(prob[j] - ref);
        if (has_sink) sum += exp(sink - ref);
        *lse = ref + log(sum);
        for (int64_t j = 0; j < nk; j++) {
            if (!ref_sees(p, nq, nk, i, j)) continue;
            prob[j] = exp(prob[j] - ref) / sum;
            dprob[j] = dot_with(gi, v, b, kvh, j);
            *delta += prob[j] * dprob[j];
        }
    } else {
        for (int64_t j = 0; j < nk; j++) prob[j] = 0.0; // -inf scores: probability 0
    }
    free(qi);
    free(gi);
    return live;
}

void ref_backward_row_stats(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                            const fa_tensor *dout, int64_t b, int64_t h, int64_t i, double *lse,
                            double *delta)
{
    size_t n_nk = (size_t)(k->seq > 0 ? k->seq : 1);
    double *prob = malloc(sizeof(double) * n_nk), *dprob = malloc(sizeof(double) * n_nk);
    row_softmax(p, q, k, v, dout, b, h, i, prob, dprob, NULL, lse, delta);
    free(prob);
    free(dprob);
}

void ref_backward_dq_row(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                         const fa_tensor *dout, int64_t b, int64_t h, int64_t i, double *dq_row)
{
    int64_t nq = q->seq, nk = k->seq, d = q->dim, kvh = h / (q->heads / k->heads);
    double scale = scale_of(p, d);
    size_t n_nk = (size_t)(nk > 0 ? nk : 1);
    double *prob = malloc(sizeof(double) * n_nk), *dprob = malloc(sizeof(double) * n_nk);
    double *dmod = malloc(sizeof(double) * n_nk);
    double lse, delta;
    for (int64_t x = 0; x < d; x++) dq_row[x] = 0.0;
    if (row_softmax(p, q, k, v, dout, b, h, i, prob, dprob, dmod, &lse, &delta)) {
        for (int64_t j = 0; j < nk; j++) {
            if (!ref_sees(p, nq, nk, i, j)) continue;
            double ds = prob[j] * (dprob[j] - delta) * dmod[j];
            for (int64_t x = 0; x < d; x++) dq_row[x] += ds * ref_load(k, b, kvh, j, x);
        }
        for (int64_t x = 0; x < d; x++) dq_row[x] *= scale;
    }
    free(prob);
    free(dprob);
    free(dmod);
}

void ref_backward_dkdv_row_stats(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                 const fa_tensor *v, const fa_tensor *dout, int64_t b, int64_t kvh, int64_t j,
                                 const double *lse, const double *delta, double *dk_row, double *dv_row)
{
    int64_t nq = q->seq, nk = k->seq, d = q->dim, dvd = v->dim, group = q->heads / k->heads;
    double scale = scale_of(p, d);
    double *kj = load_row(k, b, kvh, j), *vj = load_row(v, b, kvh, j);
    double *gk = calloc((size_t)d, sizeof(double)), *gv = calloc((size_t)dvd, sizeof(double));
    for (int64_t g = 0; g < group; g++) {
        int64_t h = kvh * group + g;
        for (int64_t i = 0; i < nq; i++) {
            // lse is -inf only for a row without sinks that sees no key whose score is not -inf:
            // its probabilities are all 0 (and exp(-inf - -inf) would be NaN).
            if (!ref_sees(p, nq, nk, i, j) || lse[g * nq + i] == -INFINITY) continue;
            double dmod;
            double s = ref_modify(p, nq, nk, b, h, i, j, scale * dot_with(kj, q, b, h, i), &dmod);
            double prob = exp(s - lse[g * nq + i]);
            double ds = prob * (dot_with(vj, dout, b, h, i) - delta[g * nq + i]) * dmod;
            for (int64_t x = 0; x < d; x++) gk[x] += scale * ds * ref_load(q, b, h, i, x);
            for (int64_t y = 0; y < dvd; y++) gv[y] += prob * ref_load(dout, b, h, i, y);
        }
    }
    for (int64_t x = 0; dk_row && x < d; x++) dk_row[x] = gk[x];
    for (int64_t y = 0; dv_row && y < dvd; y++) dv_row[y] = gv[y];
    free(kj);
    free(vj);
    free(gk);
    free(gv);
}

void ref_backward_dkdv_row(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                           const fa_tensor *dout, int64_t b, int64_t kvh, int64_t j, double *dk_row,
                           double *dv_row)
{
    int64_t nq = q->seq, group = q->heads / k->heads;
    size_t n = (size_t)(group * nq > 0 ? group * nq : 1);
    double *lse = malloc(sizeof(double) * n), *delta = malloc(sizeof(double) * n);
    for (int64_t g = 0; g < group; g++)
        for (int64_t i = 0; i < nq; i++)
            ref_backward_row_stats(p, q, k, v, dout, b, kvh * group + g, i, &lse[g * nq + i],
                                   &delta[g * nq + i]);
    ref_backward_dkdv_row_stats(p, q, k, v, dout, b, kvh, j, lse, delta, dk_row, dv_row);
    free(lse);
    free(delta);
}
