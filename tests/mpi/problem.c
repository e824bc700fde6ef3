/* SPDX-License-Identifier: BSD-3-Clause */
/* Global problems drawn from a seed, shards, and a rank's views or copies of its rows. */
#include "problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fill.h"
#include "score_mods.h"
#include "rng.h"

/* ---- elements ---------------------------------------------------------------------------- */

const char *mt_dtype_name(fa_dtype t)
{
    return t == FA_F64 ? "f64" : t == FA_BF16 ? "bf16" : t == FA_F16 ? "f16" : "f32";
}

fa_tensor mt_tensor(void *data, fa_dtype t, int64_t b, int64_t h, int64_t s, int64_t d, int bshd)
{
    return bshd ? fa_tensor_bshd(data, t, b, s, h, d) : fa_tensor_bhsd(data, t, b, h, s, d);
}

fa_tensor mt_rows_view(const fa_tensor *t, int64_t start, int64_t n)
{
    fa_tensor v = *t;
    v.data = (char *)t->data + start * t->stride_seq * (int64_t)kit_dtype_size(t->dtype);
    v.seq = n;
    return v;
}

double *mt_values(const fa_tensor *t)
{
    int64_t count = t->batch * t->heads * t->seq * t->dim;
    double *x = malloc(sizeof(double) * (size_t)(count + 1));
    if (!x) abort();
    int64_t i = 0;
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t s = 0; s < t->seq; s++)
                for (int64_t d = 0; d < t->dim; d++) x[i++] = kit_tensor_load(t, b, h, s, d);
    return x;
}

double mt_max_abs(const fa_tensor *t)
{
    double m = 0.0;
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t s = 0; s < t->seq; s++)
                for (int64_t d = 0; d < t->dim; d++) {
                    double x = fabs(kit_tensor_load(t, b, h, s, d));
                    if (x > m) m = x;
                }
    return m;
}

/* ---- cases ------------------------------------------------------------------------------- */

void mt_case_str(const mt_case *c, fa_dtype dtype, int size, char *buf, size_t n)
{
    static const char *causal[] = {"none", "top-left", "bottom-right"};
    static const char *split[] = {"even", "uneven", "empty-first", "empty-last"};
    static const char *bias[] = {"none", "full", "masked", "row"};
    char win[64] = "";
    if (c->windowed)
        snprintf(win, sizeof win, " window=%lld/%lld", (long long)c->window_left, (long long)c->window_right);
    snprintf(buf, n,
             "%s: %s P=%d %s%s%s B=%lld Hq=%lld Hkv=%lld N=%lld D=%lld Dv=%lld causal=%s%s shift=%lld "
             "softcap=%g alibi=%d sinks=%d bias=%s dropout=%g%s%s",
             c->name, mt_dtype_name(dtype), size, c->layout == FA_MPI_ZIGZAG ? "zigzag" : "contiguous",
             c->layout == FA_MPI_ZIGZAG ? "" : "/", c->layout == FA_MPI_ZIGZAG ? "" : split[c->split],
             (long long)c->batch, (long long)c->q_heads, (long long)c->kv_heads, (long long)c->len,
             (long long)c->dim, (long long)c->dim_v, causal[c->causal], win, (long long)c->diagonal_shift,
             c->softcap, c->alibi, c->sinks, bias[c->bias], c->dropout_p, c->bshd ? " bshd" : "",
             c->copy ? " copies" : (c->layout == FA_MPI_ZIGZAG ? " copies" : " views"));
}

/* ---- the global problem ------------------------------------------------------------------ */

typedef struct {
    uint64_t s;
} rng;

static double rng_uniform(rng *r, double lo, double hi)
{
    return lo + (hi - lo) * kit_unit_from_bits(kit_splitmix64(&r->s));
}

static fa_tensor global_tensor(kit_buf *mem, fa_dtype t, int64_t b, int64_t h, int64_t s, int64_t d, int bshd)
{
    *mem = kit_buf_alloc((size_t)(b * h * s * d) * kit_dtype_size(t));
    return mt_tensor(kit_buf_data(mem), t, b, h, s, d, bshd);
}

void mt_global_make(mt_global *g, const mt_case *c, fa_dtype dtype, uint64_t seed)
{
    memset(g, 0, sizeof *g);
    g->c = *c;
    if (!c->windowed) g->c.window_left = g->c.window_right = -1;
    g->dtype = dtype;
    g->n = c->len;
    rng r = {seed};
    int64_t B = c->batch, Hq = c->q_heads, Hkv = c->kv_heads, N = c->len;
    g->q = global_tensor(&g->mem[0], dtype, B, Hq, N, c->dim, c->bshd);
    g->k = global_tensor(&g->mem[1], dtype, B, Hkv, N, c->dim, c->bshd);
    g->v = global_tensor(&g->mem[2], dtype, B, Hkv, N, c->dim_v, c->bshd);
    g->dout = global_tensor(&g->mem[3], dtype, B, Hq, N, c->dim_v, c->bshd);
    kit_fill_uniform(&g->q, &r.s, -2.0, 2.0);
    kit_fill_uniform(&g->k, &r.s, -2.0, 2.0);
    kit_fill_uniform(&g->v, &r.s, -1.0, 1.0);
    kit_fill_uniform(&g->dout, &r.s, -1.0, 1.0);

    g->p = (fa_params)FA_PARAMS_INIT;
    g->p.causal = c->causal;
    g->p.window_left = g->c.window_left;
    g->p.window_right = g->c.window_right;
    g->p.diagonal_shift = c->diagonal_shift;
    g->p.softcap = c->softcap;
    /* the bias is of the accumulation type (float for bf16 and f16) */
    if (c->bias == MT_BIAS_ROW) {
        g->bias = global_tensor(&g->mem[4], kit_accum_dtype(dtype), 1, Hq, 1, N, 0);
        kit_fill_uniform(&g->bias, &r.s, -2.0, 2.0);
    } else if (c->bias != MT_BIAS_NONE) {
        g->bias = global_tensor(&g->mem[4], kit_accum_dtype(dtype), B, Hq, N, N, 0);
        kit_fill_uniform(&g->bias, &r.s, -2.0, 2.0);
        if (c->bias == MT_BIAS_MASKED)
            for (int64_t b = 0; b < B; b++)
                for (int64_t h = 0; h < Hq; h++)
                    for (int64_t i = 0; i < N; i++)
                        for (int64_t j = 0; j < N; j++)
                            if ((h == 0 && i % 11 == 3) || (kit_splitmix64(&r.s) & 7) == 0)
                                kit_tensor_store(&g->bias, b, h, i, j, -INFINITY);
    }
    if (c->bias != MT_BIAS_NONE) g->p.bias = &g->bias;
    if (c->alibi || c->sinks) {
        g->slopes = malloc(sizeof(float) * (size_t)(2 * Hq + 2));
        if (!g->slopes) abort();
        g->sinks = g->slopes + Hq + 1;
        kit_alibi_slopes(g->slopes, Hq);
        for (int64_t h = 0; h < Hq; h++) g->sinks[h] = (float)rng_uniform(&r, -1.0, 3.0);
        if (c->alibi) g->p.alibi_slopes = g->slopes;
        if (c->sinks) g->p.sinks = g->sinks;
    }
    if (c->dropout_p != 0.0) { /* seed and offset from the case's seed: the same on every rank */
        g->p.dropout_p = c->dropout_p;
        g->p.dropout_seed = kit_splitmix64(&r.s);
        g->p.dropout_offset = kit_splitmix64(&r.s);
    }
}

void mt_global_free(mt_global *g)
{
    for (int i = 0; i < 5; i++) kit_buf_free(&g->mem[i]);
    free(g->slopes);
    memset(g, 0, sizeof *g);
}

/* ---- shards ------------------------------------------------------------------------------ */

/* Rank `rank`'s run when `parts` ranks split n positions as evenly as they can. */
static void even_run(int64_t n, int parts, int rank, int64_t *start, int64_t *len)
{
    int64_t q = n / parts, rem = n % parts;
    *start = rank * q + (rank < rem ? rank : rem);
    *len = q + (rank < rem ? 1 : 0);
}

void mt_shard_make(mt_shard *s, const mt_case *c, int64_t n_global, int rank, int size)
{
    int64_t N = n_global, P = size;
    if (c->layout == FA_MPI_ZIGZAG) {
        int64_t chunk = N / (2 * P);
        s->n = 2 * chunk;
        s->start = rank * chunk;
        s->pos = malloc(sizeof(int64_t) * (size_t)(s->n + 1));
        if (!s->pos) abort();
        for (int64_t i = 0; i < chunk; i++) {
            s->pos[i] = rank * chunk + i;
            s->pos[chunk + i] = (2 * P - 1 - rank) * chunk + i;
        }
        return;
    }
    switch (size == 1 ? MT_SPLIT_EVEN : c->split) {
    case MT_SPLIT_UNEVEN: {
        /* run r has r + 1 of the P(P+1)/2 parts */
        int64_t total = P * (P + 1) / 2, before = (int64_t)rank * (rank + 1) / 2;
        int64_t through = (int64_t)(rank + 1) * (rank + 2) / 2;
        s->start = N * before / total;
        s->n = N * through / total - s->start;
        break;
    }
    case MT_SPLIT_EMPTY_FIRST:
        if (rank == 0) {
            s->start = 0;
            s->n = 0;
        } else {
            even_run(N, size - 1, rank - 1, &s->start, &s->n);
        }
        break;
    case MT_SPLIT_EMPTY_LAST:
        if (rank == size - 1) {
            s->start = N;
            s->n = 0;
        } else {
            even_run(N, size - 1, rank, &s->start, &s->n);
        }
        break;
    default: even_run(N, size, rank, &s->start, &s->n); break;
    }
    s->pos = malloc(sizeof(int64_t) * (size_t)(s->n + 1));
    if (!s->pos) abort();
    for (int64_t i = 0; i < s->n; i++) s->pos[i] = s->start + i;
}

void mt_shard_free(mt_shard *s)
{
    free(s->pos);
    s->pos = NULL;
}

/* ---- a rank's arguments ------------------------------------------------------------------ */

/* The rows of shard s of t copied into a fresh buffer of t's layout family. */
static fa_tensor copy_rows(kit_buf *mem, const fa_tensor *t, const mt_shard *s, int bshd)
{
    *mem = kit_buf_alloc((size_t)(t->batch * t->heads * s->n * t->dim) * kit_dtype_size(t->dtype));
    fa_tensor c = mt_tensor(kit_buf_data(mem), t->dtype, t->batch, t->heads, s->n, t->dim, bshd);
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t i = 0; i < s->n; i++)
                for (int64_t d = 0; d < t->dim; d++)
                    kit_tensor_store(&c, b, h, i, d, kit_tensor_load(t, b, h, s->pos[i], d));
    return c;
}

/* An output of h heads and d columns for the shard's rows: with views, rows [start, start + n) of a
 * buffer of the whole sequence (the others must stay canary); otherwise a buffer of n rows. */
static fa_tensor output(kit_buf *mem, const mt_local *l, const mt_global *g, const mt_shard *s, int64_t h,
                        int64_t d)
{
    int64_t rows = l->view ? g->n : s->n;
    *mem = kit_buf_alloc((size_t)(g->c.batch * h * rows * d) * kit_dtype_size(g->dtype));
    fa_tensor t = mt_tensor(kit_buf_data(mem), g->dtype, g->c.batch, h, rows, d, g->c.bshd);
    return l->view ? mt_rows_view(&t, s->start, s->n) : t;
}

void mt_local_make(mt_local *l, const mt_global *g, const mt_shard *s)
{
    memset(l, 0, sizeof *l);
    const mt_case *c = &g->c;
    l->view = c->layout == FA_MPI_CONTIGUOUS && !c->copy;
    if (l->view) {
        l->q = mt_rows_view(&g->q, s->start, s->n);
        l->k = mt_rows_view(&g->k, s->start, s->n);
        l->v = mt_rows_view(&g->v, s->start, s->n);
        l->dout = mt_rows_view(&g->dout, s->start, s->n);
        if (c->bias == MT_BIAS_FULL || c->bias == MT_BIAS_MASKED)
            l->bias = mt_rows_view(&g->bias, s->start, s->n);
    } else {
        l->q = copy_rows(&l->in[0], &g->q, s, c->bshd);
        l->k = copy_rows(&l->in[1], &g->k, s, c->bshd);
        l->v = copy_rows(&l->in[2], &g->v, s, c->bshd);
        l->dout = copy_rows(&l->in[3], &g->dout, s, c->bshd);
        if (c->bias == MT_BIAS_FULL || c->bias == MT_BIAS_MASKED)
            l->bias = copy_rows(&l->in[4], &g->bias, s, 0);
    }
    if (c->bias == MT_BIAS_ROW) l->bias = g->bias;

    l->out = output(&l->out_buf, l, g, s, c->q_heads, c->dim_v);
    l->dq = output(&l->grad_buf[0], l, g, s, c->q_heads, c->dim);
    l->dk = output(&l->grad_buf[1], l, g, s, c->kv_heads, c->dim);
    l->dv = output(&l->grad_buf[2], l, g, s, c->kv_heads, c->dim_v);
    fa_dtype acc = kit_accum_dtype(g->dtype);
    l->lse_buf = kit_buf_alloc((size_t)(c->batch * c->q_heads * s->n) * kit_dtype_size(acc));
    l->lse = kit_buf_data(&l->lse_buf);
    l->lse_view = fa_tensor_bhsd(l->lse, acc, c->batch, c->q_heads, s->n, 1);

    l->p = g->p;
    l->p.bias = c->bias != MT_BIAS_NONE ? &l->bias : NULL;
    if (c->sinks) {
        l->dsinks_buf = kit_buf_alloc(sizeof(float) * (size_t)c->q_heads);
        l->p.dsinks = kit_buf_data(&l->dsinks_buf);
    }
}

void mt_local_free(mt_local *l)
{
    for (int i = 0; i < 5; i++) kit_buf_free(&l->in[i]);
    kit_buf_free(&l->out_buf);
    kit_buf_free(&l->lse_buf);
    for (int i = 0; i < 3; i++) kit_buf_free(&l->grad_buf[i]);
    kit_buf_free(&l->dsinks_buf);
}

void mt_local_fill_grad_canary(mt_local *l)
{
    for (int i = 0; i < 3; i++) kit_buf_fill(&l->grad_buf[i], KIT_CANARY);
    kit_buf_fill(&l->dsinks_buf, KIT_CANARY);
}

void mt_local_fill_canary(mt_local *l)
{
    kit_buf_fill(&l->out_buf, KIT_CANARY);
    kit_buf_fill(&l->lse_buf, KIT_CANARY);
    mt_local_fill_grad_canary(l);
}
