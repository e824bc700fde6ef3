/* SPDX-License-Identifier: BSD-3-Clause */
/* Naive float64 attention: the definition, written as plainly as possible. */
#include "reference.h"

#include <math.h>
#include <stdlib.h>

static const void *elem_addr(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d)
{
    int64_t off = b * t->stride_batch + h * t->stride_head + s * t->stride_seq + d;
    size_t size = t->dtype == FA_F64 ? sizeof(double) : sizeof(float);
    return (const char *)t->data + off * (int64_t)size;
}

double ref_load(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d)
{
    const void *a = elem_addr(t, b, h, s, d);
    return t->dtype == FA_F64 ? *(const double *)a : (double)*(const float *)a;
}

int ref_visible(fa_causal c, int64_t nq, int64_t nk, int64_t i, int64_t j)
{
    switch (c) {
    case FA_CAUSAL_TOP_LEFT: return j <= i;
    case FA_CAUSAL_BOTTOM_RIGHT: return j <= i + nk - nq;
    default: return 1;
    }
}

static double effective_scale(const fa_params *p, int64_t d)
{
    return (p && p->scale != 0.0) ? p->scale : 1.0 / sqrt((double)d);
}

void ref_forward_row(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                     int64_t b, int64_t h, int64_t i, double *out_row, double *lse)
{
    fa_causal causal = p ? p->causal : FA_CAUSAL_NONE;
    int64_t nq = q->seq, nk = k->seq, d = q->dim, dv = v->dim;
    int64_t kvh = h / (q->heads / k->heads);
    double scale = effective_scale(p, d);
    double *score = malloc(sizeof(double) * (size_t)(nk > 0 ? nk : 1));
    double row_max = -INFINITY;
    int any = 0;
    for (int64_t j = 0; j < nk; j++) {
        if (!ref_visible(causal, nq, nk, i, j)) continue;
        double dot = 0.0;
        for (int64_t x = 0; x < d; x++) dot += ref_load(q, b, h, i, x) * ref_load(k, b, kvh, j, x);
        score[j] = scale * dot;
        if (!any || score[j] > row_max || isnan(score[j])) row_max = score[j];
        any = 1;
    }
    for (int64_t y = 0; y < dv; y++) out_row[y] = 0.0;
    if (!any) {
        *lse = -INFINITY;
        free(score);
        return;
    }
    double sum = 0.0;
    for (int64_t j = 0; j < nk; j++) {
        if (!ref_visible(causal, nq, nk, i, j)) continue;
        double w = exp(score[j] - row_max);
        sum += w;
        for (int64_t y = 0; y < dv; y++) out_row[y] += w * ref_load(v, b, kvh, j, y);
    }
    for (int64_t y = 0; y < dv; y++) out_row[y] /= sum;
    *lse = row_max + log(sum);
    free(score);
}

void ref_forward(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v, double *out,
                 double *lse)
{
    int64_t dv = v->dim;
    double scratch_lse;
    for (int64_t b = 0; b < q->batch; b++)
        for (int64_t h = 0; h < q->heads; h++)
            for (int64_t i = 0; i < q->seq; i++) {
                int64_t row = (b * q->heads + h) * q->seq + i;
                double *o = out ? out + row * dv : NULL;
                double tmp[512];
                ref_forward_row(p, q, k, v, b, h, i, o ? o : tmp, lse ? lse + row : &scratch_lse);
            }
}

void ref_forward_row_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                               int64_t b, int64_t h, int64_t i, double *out_row, double *lse)
{
    fa_causal causal = p ? p->causal : FA_CAUSAL_NONE;
    int64_t nq = q->seq, nk = k->seq, d = q->dim, dv = v->dim;
    int64_t kvh = h / (q->heads / k->heads);
    float scale = (float)effective_scale(p, d);
    float *score = malloc(sizeof(float) * (size_t)(nk > 0 ? nk : 1));
    float *acc = malloc(sizeof(float) * (size_t)dv);
    float row_max = -INFINITY;
    int any = 0;
    for (int64_t j = 0; j < nk; j++) {
        if (!ref_visible(causal, nq, nk, i, j)) continue;
        float dot = 0.0f;
        for (int64_t x = 0; x < d; x++)
            dot += (float)ref_load(q, b, h, i, x) * (float)ref_load(k, b, kvh, j, x);
        score[j] = scale * dot;
        if (!any || score[j] > row_max || isnan(score[j])) row_max = score[j];
        any = 1;
    }
    for (int64_t y = 0; y < dv; y++) acc[y] = 0.0f;
    float sum = 0.0f;
    for (int64_t j = 0; any && j < nk; j++) {
        if (!ref_visible(causal, nq, nk, i, j)) continue;
        float w = expf(score[j] - row_max);
        sum += w;
        for (int64_t y = 0; y < dv; y++) acc[y] += w * (float)ref_load(v, b, kvh, j, y);
    }
    for (int64_t y = 0; y < dv; y++) out_row[y] = any ? (double)(acc[y] / sum) : 0.0;
    *lse = any ? (double)(row_max + logf(sum)) : -INFINITY;
    free(acc);
    free(score);
}

void ref_forward_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                           double *out, double *lse)
{
    int64_t dv = v->dim;
    double scratch_lse;
    for (int64_t b = 0; b < q->batch; b++)
        for (int64_t h = 0; h < q->heads; h++)
            for (int64_t i = 0; i < q->seq; i++) {
                int64_t row = (b * q->heads + h) * q->seq + i;
                double tmp[512];
                ref_forward_row_naive_f32(p, q, k, v, b, h, i, out ? out + row * dv : tmp,
                                          lse ? lse + row : &scratch_lse);
            }
}
