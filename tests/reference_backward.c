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
