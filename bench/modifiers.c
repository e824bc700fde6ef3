/* SPDX-License-Identifier: BSD-3-Clause */
// Score-modifier inputs, their fa_params, their words, and the visible pairs the FLOP count uses.
#include "modifiers.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtypes.h"
#include "score_mods.h"

// Streams after problem.c's (q 1, k 2, v 3, dout 4): the modifiers' values never repeat an input's.
enum { STREAM_BIAS = 5, STREAM_SINKS = 6 };

int bench_mods_any(const bench_mods *m)
{
    return m->window_left >= 0 || m->window_right >= 0 || m->softcap != 0.0 || m->alibi ||
           m->bias != BENCH_BIAS_NONE || m->sinks;
}

void bench_mods_words(const bench_mods *m, char *out, size_t size)
{
    size_t n = 0;
    out[0] = '\0';
#define APPEND(...)                                           \
    do {                                                      \
        if (n < size) {                                       \
            int w = snprintf(out + n, size - n, __VA_ARGS__); \
            n += w > 0 ? (size_t)w : 0;                       \
        }                                                     \
    } while (0)
    if (m->window_left >= 0 || m->window_right >= 0)
        APPEND(", window %lld,%lld", (long long)m->window_left, (long long)m->window_right);
    if (m->softcap != 0.0) APPEND(", softcap %g", m->softcap);
    if (m->alibi) APPEND(", alibi");
    if (m->bias != BENCH_BIAS_NONE) APPEND(", bias %s", bench_bias_name(m->bias));
    if (m->sinks) APPEND(", sinks");
    if (m->dbias) APPEND(", dbias");
#undef APPEND
}

int64_t bench_visible_pairs(const bench_shape *s)
{
    return kit_visible_pairs(s->causal, s->nq, s->nk, s->mods.window_left, s->mods.window_right);
}

double bench_bias_read_bytes(const bench_shape *s)
{
    // The bias has the accumulation type (f32 under a half q, flashattn.h).
    double e = (double)kit_dtype_size(kit_accum_dtype(s->dtype));
    switch (s->mods.bias) {
    case BENCH_BIAS_FULL: return (double)s->b * (double)s->hq * (double)bench_visible_pairs(s) * e;
    case BENCH_BIAS_KEYPAD: return (double)s->b * (double)s->nk * e;
    default: return 0.0;
    }
}

// The bias as a bhsd tensor of its own sizes, filled. Key padding: the last ceil(Nk/10) keys of
// every batch are -inf, the others 0 (so even Nk = 1 has its one key padded: fully masked rows are
// part of the contract). Full: values from the bias stream, in parallel (each element depends on
// its index only, so the fill is the same for any team). Its type is the accumulation type: f64 for
// f64, f32 for f32 and the half types (flashattn.h: a bias is never half).
static int init_bias(bench_problem *p, bench_dist dist, uint64_t seed)
{
    const bench_shape *s = &p->shape;
    int full = s->mods.bias == BENCH_BIAS_FULL;
    int64_t heads = full ? s->hq : 1, rows = full ? s->nq : 1;
    fa_dtype t = kit_accum_dtype(s->dtype);
    size_t es = kit_dtype_size(t);
    p->bias_bytes = bench_checked_bytes(s->b, heads, rows, s->nk, es);
    if (!p->bias_bytes) {
        fprintf(stderr, "fa-bench: the bias is too large to allocate\n");
        return -1;
    }
    void *data = bench_alloc_aligned(p->bias_bytes, "the bias");
    if (!data) return -1;
    p->bias = fa_tensor_bhsd(data, t, s->b, heads, rows, s->nk);
    int64_t n = s->b * heads * rows, nk = s->nk, padded = (nk + 9) / 10;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < n; r++)
        for (int64_t j = 0; j < nk; j++)
            kit_store(t, data, r * nk + j,
                      full ? bench_sample(dist, seed, STREAM_BIAS, (uint64_t)(r * nk + j))
                           : (j >= nk - padded ? -INFINITY : 0.0));
    return 0;
}

static float *alloc_floats(int64_t n, const char *what)
{
    return bench_alloc_aligned(sizeof(float) * (size_t)n, what);
}

int bench_modifiers_init(bench_problem *p, bench_dist dist, uint64_t seed)
{
    const bench_shape *s = &p->shape;
    const bench_mods *m = &s->mods;
    if (m->bias != BENCH_BIAS_NONE && init_bias(p, dist, seed) != 0) return -1;
    if (m->alibi) {
        if (!(p->alibi_slopes = alloc_floats(s->hq, "ALiBi slopes"))) return -1;
        kit_alibi_slopes(p->alibi_slopes, s->hq);
    }
    if (m->sinks) {
        if (!(p->sinks = alloc_floats(s->hq, "sink logits"))) return -1;
        for (int64_t h = 0; h < s->hq; h++)
            p->sinks[h] = (float)bench_sample(dist, seed, STREAM_SINKS, (uint64_t)h);
        if (p->has_gradients && !(p->dsinks = alloc_floats(s->hq, "dsinks"))) return -1;
    }
    if (m->dbias && p->has_gradients && p->bias.data) { // the bias's shape, type and layout
        void *data = bench_alloc_aligned(p->bias_bytes, "dbias");
        if (!data) return -1;
        p->dbias = p->bias;
        p->dbias.data = data;
    }
    return 0;
}

void bench_modifiers_params(const bench_problem *p, fa_params *params)
{
    const bench_mods *m = &p->shape.mods;
    params->causal = p->shape.causal;
    params->window_left = m->window_left;
    params->window_right = m->window_right;
    params->softcap = m->softcap;
    params->alibi_slopes = p->alibi_slopes;
    params->bias = p->bias.data ? &p->bias : NULL;
    params->sinks = p->sinks;
    params->dsinks = p->dsinks;
    params->dbias = p->dbias.data ? &p->dbias : NULL;
}
