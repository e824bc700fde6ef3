/* SPDX-License-Identifier: BSD-3-Clause */
/* Naive analytic attention gradients, one (batch, head) at a time:
 *   P = softmax(scale·QKᵀ + mask), dV = Pᵀ dO, dP = dO Vᵀ, dS = P ∘ (dP - rowsum(P ∘ dP)),
 *   dQ = scale · dS K, dK = scale · dSᵀ Q.
 * Written once as a macro over the arithmetic type, so the f32 yardstick does the same steps. */
#include "reference_backward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double scale_of(const fa_params *p, int64_t d)
{
    return (p && p->scale != 0.0) ? p->scale : 1.0 / sqrt((double)d);
}

#define DEFINE_REF_BACKWARD(NAME, T, EXP)                                                                      \
    void NAME(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,                  \
              const fa_tensor *dout, double *dq, double *dk, double *dv)                                       \
    {                                                                                                          \
        fa_causal causal = p ? p->causal : FA_CAUSAL_NONE;                                                     \
        int64_t B = q->batch, Hq = q->heads, Hkv = k->heads, nq = q->seq, nk = k->seq, d = q->dim,            \
                dvd = v->dim, group = Hkv > 0 ? Hq / Hkv : 1;                                                  \
        T scale = (T)scale_of(p, d);                                                                           \
        size_t n_nk = (size_t)(nk > 0 ? nk : 1);                                                               \
        T *prob = malloc(sizeof(T) * n_nk), *dprob = malloc(sizeof(T) * n_nk);                                 \
        T *gk = calloc((size_t)(B * Hkv * nk * d) + 1, sizeof(T));                                             \
        T *gv = calloc((size_t)(B * Hkv * nk * dvd) + 1, sizeof(T));                                           \
        for (int64_t b = 0; b < B; b++)                                                                        \
            for (int64_t h = 0; h < Hq; h++) {                                                                 \
                int64_t kvh = h / group;                                                                       \
                for (int64_t i = 0; i < nq; i++) {                                                             \
                    T row_max = -(T)INFINITY, sum = 0;                                                         \
                    int any = 0;                                                                               \
                    for (int64_t j = 0; j < nk; j++) {                                                         \
                        if (!ref_visible(causal, nq, nk, i, j)) continue;                                      \
                        T dot = 0;                                                                             \
                        for (int64_t x = 0; x < d; x++)                                                        \
                            dot += (T)ref_load(q, b, h, i, x) * (T)ref_load(k, b, kvh, j, x);                  \
                        prob[j] = scale * dot;                                                                 \
                        if (!any || prob[j] > row_max) row_max = prob[j];                                      \
                        any = 1;                                                                               \
                    }                                                                                          \
                    T *gq_row = NULL, gq_tmp[512];                                                             \
                    (void)gq_row;                                                                              \
                    for (int64_t x = 0; x < d; x++) gq_tmp[x] = 0;                                             \
                    if (any) {                                                                                 \
                        for (int64_t j = 0; j < nk; j++)                                                       \
                            if (ref_visible(causal, nq, nk, i, j)) sum += (prob[j] = EXP(prob[j] - row_max));  \
                        T delta = 0;                                                                           \
                        for (int64_t j = 0; j < nk; j++) {                                                     \
                            if (!ref_visible(causal, nq, nk, i, j)) continue;                                  \
                            prob[j] /= sum;                                                                    \
                            T dp = 0;                                                                          \
                            for (int64_t y = 0; y < dvd; y++)                                                  \
                                dp += (T)ref_load(dout, b, h, i, y) * (T)ref_load(v, b, kvh, j, y);            \
                            dprob[j] = dp;                                                                     \
                            delta += prob[j] * dp;                                                             \
                        }                                                                                      \
                        for (int64_t j = 0; j < nk; j++) {                                                     \
                            if (!ref_visible(causal, nq, nk, i, j)) continue;                                  \
                            T ds = prob[j] * (dprob[j] - delta);                                               \
                            T *gkr = gk + ((b * Hkv + kvh) * nk + j) * d;                                      \
                            T *gvr = gv + ((b * Hkv + kvh) * nk + j) * dvd;                                    \
                            for (int64_t x = 0; x < d; x++) {                                                  \
                                gq_tmp[x] += ds * (T)ref_load(k, b, kvh, j, x);                                \
                                gkr[x] += scale * ds * (T)ref_load(q, b, h, i, x);                             \
                            }                                                                                  \
                            for (int64_t y = 0; y < dvd; y++) gvr[y] += prob[j] * (T)ref_load(dout, b, h, i, y); \
                        }                                                                                      \
                    }                                                                                          \
                    if (dq)                                                                                    \
                        for (int64_t x = 0; x < d; x++) dq[((b * Hq + h) * nq + i) * d + x] = (double)(scale * gq_tmp[x]); \
                }                                                                                              \
            }                                                                                                  \
        for (int64_t x = 0; dk && x < B * Hkv * nk * d; x++) dk[x] = (double)gk[x];                            \
        for (int64_t x = 0; dv && x < B * Hkv * nk * dvd; x++) dv[x] = (double)gv[x];                          \
        free(gk);                                                                                              \
        free(gv);                                                                                              \
        free(prob);                                                                                            \
        free(dprob);                                                                                           \
    }

DEFINE_REF_BACKWARD(ref_backward, double, exp)
DEFINE_REF_BACKWARD(ref_backward_naive_f32, float, expf)

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
    } else {
        const float *row = (const float *)t->data + base;
        for (int64_t x = 0; x < t->dim; x++) dot += a[x] * (double)row[x];
    }
    return dot;
}

// P_ij and dP_ij of query row (b, h, i) for every key j (0 where masked), its lse and delta.
// Returns whether the row sees any key.
static int row_softmax(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                       const fa_tensor *dout, int64_t b, int64_t h, int64_t i, double *prob, double *dprob,
                       double *lse, double *delta)
{
    fa_causal causal = p ? p->causal : FA_CAUSAL_NONE;
    int64_t nq = q->seq, nk = k->seq, kvh = h / (q->heads / k->heads);
    double scale = scale_of(p, q->dim);
    double *qi = load_row(q, b, h, i), *gi = load_row(dout, b, h, i);
    double row_max = -INFINITY;
    int any = 0;
    for (int64_t j = 0; j < nk; j++) {
        prob[j] = dprob[j] = 0.0;
        if (!ref_visible(causal, nq, nk, i, j)) continue;
        prob[j] = scale * dot_with(qi, k, b, kvh, j); // the score, until it becomes P_ij below
        if (!any || prob[j] > row_max || isnan(prob[j])) row_max = prob[j];
        any = 1;
    }
    *lse = -INFINITY;
    *delta = 0.0;
    if (any) {
        double sum = 0.0;
        for (int64_t j = 0; j < nk; j++)
            if (ref_visible(causal, nq, nk, i, j)) sum += exp(prob[j] - row_max);
        *lse = row_max + log(sum);
        for (int64_t j = 0; j < nk; j++) {
            if (!ref_visible(causal, nq, nk, i, j)) continue;
            prob[j] = exp(prob[j] - row_max) / sum;
            dprob[j] = dot_with(gi, v, b, kvh, j);
            *delta += prob[j] * dprob[j];
        }
    }
    free(qi);
    free(gi);
    return any;
}

void ref_backward_row_stats(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                            const fa_tensor *dout, int64_t b, int64_t h, int64_t i, double *lse,
                            double *delta)
{
    size_t n_nk = (size_t)(k->seq > 0 ? k->seq : 1);
    double *prob = malloc(sizeof(double) * n_nk), *dprob = malloc(sizeof(double) * n_nk);
    row_softmax(p, q, k, v, dout, b, h, i, prob, dprob, lse, delta);
    free(prob);
    free(dprob);
}

void ref_backward_dq_row(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                         const fa_tensor *dout, int64_t b, int64_t h, int64_t i, double *dq_row)
{
    fa_causal causal = p ? p->causal : FA_CAUSAL_NONE;
    int64_t nq = q->seq, nk = k->seq, d = q->dim, kvh = h / (q->heads / k->heads);
    double scale = scale_of(p, d);
    size_t n_nk = (size_t)(nk > 0 ? nk : 1);
    double *prob = malloc(sizeof(double) * n_nk), *dprob = malloc(sizeof(double) * n_nk);
    double lse, delta;
    for (int64_t x = 0; x < d; x++) dq_row[x] = 0.0;
    if (row_softmax(p, q, k, v, dout, b, h, i, prob, dprob, &lse, &delta)) {
        for (int64_t j = 0; j < nk; j++) {
            if (!ref_visible(causal, nq, nk, i, j)) continue;
            double ds = prob[j] * (dprob[j] - delta);
            for (int64_t x = 0; x < d; x++) dq_row[x] += ds * ref_load(k, b, kvh, j, x);
        }
        for (int64_t x = 0; x < d; x++) dq_row[x] *= scale;
    }
    free(prob);
    free(dprob);
}

void ref_backward_dkdv_row_stats(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                 const fa_tensor *v, const fa_tensor *dout, int64_t b, int64_t kvh, int64_t j,
                                 const double *lse, const double *delta, double *dk_row, double *dv_row)
{
    fa_causal causal = p ? p->causal : FA_CAUSAL_NONE;
    int64_t nq = q->seq, nk = k->seq, d = q->dim, dvd = v->dim, group = q->heads / k->heads;
    double scale = scale_of(p, d);
    double *kj = load_row(k, b, kvh, j), *vj = load_row(v, b, kvh, j);
    double *gk = calloc((size_t)d, sizeof(double)), *gv = calloc((size_t)dvd, sizeof(double));
    for (int64_t g = 0; g < group; g++) {
        int64_t h = kvh * group + g;
        for (int64_t i = 0; i < nq; i++) {
            // A row that sees key j sees at least one key, so its lse is finite for finite inputs.
            if (!ref_visible(causal, nq, nk, i, j) || lse[g * nq + i] == -INFINITY) continue;
            double prob = exp(scale * dot_with(kj, q, b, h, i) - lse[g * nq + i]);
            double ds = prob * (dot_with(vj, dout, b, h, i) - delta[g * nq + i]);
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
