/* SPDX-License-Identifier: BSD-3-Clause */
/* Naive float64 attention: the definition, written as plainly as possible. */
#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The kit's own conversions (dtype.h): a half element reads as the value the caller stored, exactly,
 * through code that shares nothing with the library's widening. */
#include "dtype.h"

double ref_load(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d)
{
    return kit_tensor_load(t, b, h, s, d);
}

int ref_visible(fa_causal c, int64_t nq, int64_t nk, int64_t i, int64_t j)
{
    switch (c) {
    case FA_CAUSAL_TOP_LEFT: return j <= i;
    case FA_CAUSAL_BOTTOM_RIGHT: return j <= i + nk - nq;
    default: return 1;
    }
}

/* d0: the key on row i's diagonal is i + d0 (the alignment's offset plus diagonal_shift). */
static int64_t diag_offset(const fa_params *p, int64_t nq, int64_t nk)
{
    if (!p) return nk - nq;
    return (p->causal == FA_CAUSAL_TOP_LEFT ? 0 : nk - nq) + p->diagonal_shift;
}

int ref_sees(const fa_params *p, int64_t nq, int64_t nk, int64_t i, int64_t j)
{
    if (!p) return 1;
    /* j <= diag under a causal mask, j >= diag - window_left and j <= diag + window_right, written
     * as distances from the diagonal (within ±(Nq + Nk + 2^52)), so that no window, up to
     * INT64_MAX, overflows */
    int64_t diag = i + diag_offset(p, nq, nk);
    if (p->causal != FA_CAUSAL_NONE && j > diag) return 0;
    if (p->window_left >= 0 && diag - j > p->window_left) return 0;
    if (p->window_right >= 0 && j - diag > p->window_right) return 0;
    return 1;
}

double ref_bias(const fa_params *p, int64_t b, int64_t h, int64_t i, int64_t j)
{
    if (!p || !p->bias) return 0.0;
    const fa_tensor *t = p->bias;
    return ref_load(t, t->batch == 1 ? 0 : b, t->heads == 1 ? 0 : h, t->seq == 1 ? 0 : i, j);
}

/* |i + d0 - j|, the ALiBi distance. */
static int64_t alibi_distance(const fa_params *p, int64_t nq, int64_t nk, int64_t i, int64_t j)
{
    int64_t dist = i + diag_offset(p, nq, nk) - j;
    return dist < 0 ? -dist : dist;
}

double ref_modify(const fa_params *p, int64_t nq, int64_t nk, int64_t b, int64_t h, int64_t i, int64_t j,
                  double s, double *dmod)
{
    double slope = 1.0;
    if (p && p->softcap > 0) {
        double t = tanh(s / p->softcap);
        s = p->softcap * t;
        slope = 1.0 - t * t;
    }
    if (p && p->alibi_slopes) s -= (double)p->alibi_slopes[h] * (double)alibi_distance(p, nq, nk, i, j);
    if (p && p->bias) s += ref_bias(p, b, h, i, j);
    if (dmod) *dmod = slope;
    return s;
}

float ref_modify_f32(const fa_params *p, int64_t nq, int64_t nk, int64_t b, int64_t h, int64_t i, int64_t j,
                     float s, float *dmod)
{
    float slope = 1.0f;
    if (p && p->softcap > 0) {
        float cap = (float)p->softcap, t = tanhf(s / cap);
        s = cap * t;
        slope = 1.0f - t * t;
    }
    if (p && p->alibi_slopes) s -= p->alibi_slopes[h] * (float)alibi_distance(p, nq, nk, i, j);
    if (p && p->bias) s += (float)ref_bias(p, b, h, i, j);
    if (dmod) *dmod = slope;
    return s;
}

static double effective_scale(const fa_params *p, int64_t d)
{
    return (p && p->scale != 0.0) ? p->scale : 1.0 / sqrt((double)d);
}

/* keep: NULL, or row i's Nk keep flags of dropout (then each kept weight times 1/(1 - p->dropout_p),
 * each dropped one 0, in the output only). */
static void forward_row(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                        int64_t b, int64_t h, int64_t i, const uint8_t *keep, double *out_row, double *lse)
{
    int64_t nq = q->seq, nk = k->seq, d = q->dim, dv = v->dim;
    int64_t kvh = h / (q->heads / k->heads);
    double scale = effective_scale(p, d);
    double *score = malloc(sizeof(double) * (size_t)(nk > 0 ? nk : 1));
    double row_max = -INFINITY;
    int any = 0;
    for (int64_t j = 0; j < nk; j++) {
        if (!ref_sees(p, nq, nk, i, j)) continue;
        double dot = 0.0;
        for (int64_t x = 0; x < d; x++) dot += ref_load(q, b, h, i, x) * ref_load(k, b, kvh, j, x);
        score[j] = ref_modify(p, nq, nk, b, h, i, j, scale * dot, NULL);
        if (!any || score[j] > row_max || isnan(score[j])) row_max = score[j];
        any = 1;
    }
    int has_sink = p && p->sinks;
    double sink = has_sink ? (double)p->sinks[h] : -INFINITY;
    for (int64_t y = 0; y < dv; y++) out_row[y] = 0.0;
    if (row_max == -INFINITY) { /* no key, or only -inf scores: e^s = 0 for all, out = 0 */
        *lse = sink;
        free(score);
        return;
    }
    double ref = has_sink && sink > row_max ? sink : row_max; /* a NaN row_max stays */
    double sum = 0.0;
    for (int64_t j = 0; j < nk; j++) {
        if (!ref_sees(p, nq, nk, i, j)) continue;
        double w = exp(score[j] - ref);
        sum += w;
        if (keep) w *= keep[j] ? 1.0 / (1.0 - p->dropout_p) : 0.0;
        for (int64_t y = 0; y < dv; y++) out_row[y] += w * ref_load(v, b, kvh, j, y);
    }
    if (has_sink) sum += exp(sink - ref);
    for (int64_t y = 0; y < dv; y++) out_row[y] /= sum;
    *lse = ref + log(sum);
    free(score);
}

void ref_forward_row(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                     int64_t b, int64_t h, int64_t i, double *out_row, double *lse)
{
    forward_row(p, q, k, v, b, h, i, NULL, out_row, lse);
}

void ref_forward_dropout(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                         const uint8_t *keep, double *out, double *lse)
{
    int64_t dv = v->dim;
    double scratch_lse;
    for (int64_t b = 0; b < q->batch; b++)
        for (int64_t h = 0; h < q->heads; h++)
            for (int64_t i = 0; i < q->seq; i++) {
                int64_t row = (b * q->heads + h) * q->seq + i;
                double *o = out ? out + row * dv : NULL;
                double tmp[FA_MAX_HEAD_DIM];
                forward_row(p, q, k, v, b, h, i, keep ? keep + row * k->seq : NULL, o ? o : tmp,
                            lse ? lse + row : &scratch_lse);
            }
}

void ref_forward(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v, double *out,
                 double *lse)
{
    ref_forward_dropout(p, q, k, v, NULL, out, lse);
}

/* keep: as forward_row's, applied in float. */
static void forward_row_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                  const fa_tensor *v, int64_t b, int64_t h, int64_t i, const uint8_t *keep,
                                  double *out_row, double *lse)
{
    int64_t nq = q->seq, nk = k->seq, d = q->dim, dv = v->dim;
    int64_t kvh = h / (q->heads / k->heads);
    float scale = (float)effective_scale(p, d);
    float *score = malloc(sizeof(float) * (size_t)(nk > 0 ? nk : 1));
    float *acc = malloc(sizeof(float) * (size_t)dv);
    float row_max = -INFINITY;
    int any = 0;
    for (int64_t j = 0; j < nk; j++) {
        if (!ref_sees(p, nq, nk, i, j)) continue;
        float dot = 0.0f;
        for (int64_t x = 0; x < d; x++)
            dot += (float)ref_load(q, b, h, i, x) * (float)ref_load(k, b, kvh, j, x);
        score[j] = ref_modify_f32(p, nq, nk, b, h, i, j, scale * dot, NULL);
        if (!any || score[j] > row_max || isnan(score[j])) row_max = score[j];
        any = 1;
    }
    int has_sink = p && p->sinks;
    float sink = has_sink ? p->sinks[h] : -INFINITY;
    int live = row_max != -INFINITY;
    float ref = has_sink && sink > row_max ? sink : row_max;
    for (int64_t y = 0; y < dv; y++) acc[y] = 0.0f;
    float sum = 0.0f;
    for (int64_t j = 0; live && j < nk; j++) {
        if (!ref_sees(p, nq, nk, i, j)) continue;
        float w = expf(score[j] - ref);
        sum += w;
        if (keep) w *= keep[j] ? 1.0f / (float)(1.0 - p->dropout_p) : 0.0f;
        for (int64_t y = 0; y < dv; y++) acc[y] += w * (float)ref_load(v, b, kvh, j, y);
    }
    if (live && has_sink) sum += expf(sink - ref);
    for (int64_t y = 0; y < dv; y++) out_row[y] = live ? (double)(acc[y] / sum) : 0.0;
    *lse = live ? (double)(ref + logf(sum)) : (double)sink;
    free(acc);
    free(score);
}

void ref_forward_row_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                               int64_t b, int64_t h, int64_t i, double *out_row, double *lse)
{
    forward_row_naive_f32(p, q, k, v, b, h, i, NULL, out_row, lse);
}

void ref_forward_dropout_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                   const fa_tensor *v, const uint8_t *keep, double *out, double *lse)
{
    int64_t dv = v->dim;
    double scratch_lse;
    for (int64_t b = 0; b < q->batch; b++)
        for (int64_t h = 0; h < q->heads; h++)
            for (int64_t i = 0; i < q->seq; i++) {
                int64_t row = (b * q->heads + h) * q->seq + i;
                double tmp[FA_MAX_HEAD_DIM];
                forward_row_naive_f32(p, q, k, v, b, h, i, keep ? keep + row * k->seq : NULL,
                                      out ? out + row * dv : tmp, lse ? lse + row : &scratch_lse);
            }
}

void ref_forward_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                           double *out, double *lse)
{
    ref_forward_dropout_naive_f32(p, q, k, v, NULL, out, lse);
}
