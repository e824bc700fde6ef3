/* SPDX-License-Identifier: BSD-3-Clause */
/* Score-modifier test helpers; see modifiers.h. */
#include "modifiers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference_backward.h"
#include "score_mods.h"

tm_spec tm_spec_none(void)
{
    tm_spec s = {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_OFF, 0};
    return s;
}

static float *per_head(int64_t heads)
{
    float *x = malloc(sizeof(float) * (size_t)(heads + 1));
    if (!x) abort();
    return x;
}

/* A buffer of n elements of type t, every one NaN: what the bias view does not cover stays so, and
 * a read of it would show. */
static kit_buf nan_buffer(fa_dtype t, int64_t n)
{
    kit_buf b = kit_buf_alloc((size_t)n * tu_dtype_size(t));
    for (int64_t x = 0; x < n; x++) {
        if (t == FA_F64)
            ((double *)kit_buf_data(&b))[x] = NAN;
        else
            ((float *)kit_buf_data(&b))[x] = NAN;
    }
    return b;
}

static void make_bias(tm_mods *m, const tu_shape *s, tu_rng *rng)
{
    fa_dtype t = s->dtype;
    int64_t B = s->batch, H = s->q_heads, Nq = s->q_len, Nk = s->kv_len;
    switch (m->spec.bias) {
    case TM_BIAS_KEY_PADDING:
    case TM_BIAS_KEY_PADDING_STRIDE0: {
        m->bias_buf = nan_buffer(t, B * Nk);
        fa_tensor one = fa_tensor_bhsd(kit_buf_data(&m->bias_buf), t, B, 1, 1, Nk);
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < Nk; j++)
                kit_tensor_store(&one, b, 0, 0, j,
                                 j >= Nk - (b + 1) * Nk / 6 ? -INFINITY : tu_rng_uniform(rng, -0.5, 0.5));
        if (m->spec.bias == TM_BIAS_KEY_PADDING_STRIDE0) {
            fa_tensor wide = {.data = one.data,
                              .dtype = t,
                              .batch = B,
                              .heads = H,
                              .seq = Nq,
                              .dim = Nk,
                              .stride_batch = Nk,
                              .stride_head = 0,
                              .stride_seq = 0};
            one = wide;
        }
        m->bias = one;
        break;
    }
    case TM_BIAS_FULL:
    case TM_BIAS_BATCH_BROADCAST:
    case TM_BIAS_HEAD_BROADCAST: {
        int full = m->spec.bias == TM_BIAS_FULL;
        int64_t bb = m->spec.bias == TM_BIAS_BATCH_BROADCAST ? 1 : B,
                hh = m->spec.bias == TM_BIAS_HEAD_BROADCAST ? 1 : H;
        int64_t ss = full ? Nk + 3 : Nk, sh = full ? Nq * ss + 1 : Nq * Nk,
                sb = full ? hh * sh + 2 : hh * Nq * Nk;
        m->bias_buf = nan_buffer(t, bb * sb);
        fa_tensor view = {.data = kit_buf_data(&m->bias_buf),
                          .dtype = t,
                          .batch = bb,
                          .heads = hh,
                          .seq = Nq,
                          .dim = Nk,
                          .stride_batch = sb,
                          .stride_head = sh,
                          .stride_seq = ss};
        for (int64_t b = 0; b < bb; b++)
            for (int64_t h = 0; h < hh; h++)
                for (int64_t i = 0; i < Nq; i++)
                    for (int64_t j = 0; j < Nk; j++)
                        kit_tensor_store(&view, b, h, i, j,
                                         tu_rng_below(rng, 32) == 0 ? -INFINITY
                                                                    : tu_rng_uniform(rng, -2.0, 2.0));
        m->bias = view;
        break;
    }
    default: break;
    }
}

void tm_mods_make(tm_mods *m, const tm_spec *spec, const tu_shape *s, double scale, tu_rng *rng)
{
    memset(m, 0, sizeof *m);
    m->spec = *spec;
    m->p = (fa_params)FA_PARAMS_INIT;
    m->p.scale = scale;
    m->p.causal = spec->causal;
    m->p.window_left = spec->window_left;
    m->p.window_right = spec->window_right;
    m->p.softcap = spec->softcap;
    int64_t H = s->q_heads;
    if (spec->alibi) {
        m->slopes = per_head(H);
        kit_alibi_slopes(m->slopes, H);
        m->p.alibi_slopes = m->slopes;
    }
    if (spec->sinks) {
        m->sinks = per_head(H);
        for (int64_t h = 0; h < H; h++)
            m->sinks[h] = (float)(floor(tu_rng_uniform(rng, -1.0, 3.0) * 256.0) / 256.0);
        m->p.sinks = m->sinks;
        m->dsinks_buf = kit_buf_alloc(sizeof(float) * (size_t)H);
    }
    if (spec->bias != TM_BIAS_OFF) {
        make_bias(m, s, rng);
        m->p.bias = &m->bias;
    }
}

void tm_mods_free(tm_mods *m)
{
    free(m->slopes);
    free(m->sinks);
    kit_buf_free(&m->bias_buf);
    kit_buf_free(&m->dsinks_buf);
    memset(m, 0, sizeof *m);
}

void tm_mods_want_dsinks(tm_mods *m)
{
    if (!m->spec.sinks) abort(); /* a test bug: dsinks without sinks is a refused call */
    memset(m->dsinks_buf.base, KIT_CANARY, m->dsinks_buf.bytes + 2 * KIT_GUARD);
    m->p.dsinks = kit_buf_data(&m->dsinks_buf);
}

int tm_dsinks_guards_intact(const tm_mods *m)
{
    return kit_buf_guards_intact(&m->dsinks_buf);
}

void tm_desc(const tu_shape *s, const tm_mods *m, char *buf, size_t size)
{
    static const char *bias[TM_BIAS_KINDS] = {"off",
                                              "key-padding [B][1][1][Nk]",
                                              "key-padding (strides 0)",
                                              "full [B][Hq][Nq][Nk]",
                                              "batch-broadcast [1][Hq][Nq][Nk]",
                                              "head-broadcast [B][1][Nq][Nk]"};
    char shape[256];
    tu_shape_str(s, &m->p, shape, sizeof shape);
    snprintf(buf, size, "%s window %lld/%lld softcap %g alibi %s bias %s sinks %s", shape,
             (long long)m->spec.window_left, (long long)m->spec.window_right, m->spec.softcap,
             m->spec.alibi ? "on" : "off", bias[m->spec.bias], m->spec.sinks ? "on" : "off");
}

int tm_check_dsinks(const tub_problem *bp, const tm_mods *m, char *msg, size_t msg_size)
{
    const fa_tensor *q = &bp->fw.q, *k = &bp->fw.k, *v = &bp->fw.v;
    int64_t H = q->heads;
    double *ref = malloc(sizeof(double) * (size_t)(H + 1)), *naive = malloc(sizeof(double) * (size_t)(H + 1));
    if (!ref || !naive) abort();
    ref_backward_dsinks(&m->p, q, k, v, &bp->dout, ref);
    int f32 = q->dtype == FA_F32;
    if (f32) ref_backward_dsinks_naive_f32(&m->p, q, k, v, &bp->dout, naive);
    double max_ref = 0.0, naive_err = 0.0;
    for (int64_t h = 0; h < H; h++) {
        if (isfinite(ref[h]) && fabs(ref[h]) > max_ref) max_ref = fabs(ref[h]);
        if (f32 && isfinite(ref[h]) && fabs(naive[h] - ref[h]) > naive_err)
            naive_err = fabs(naive[h] - ref[h]);
    }
    int ok = tm_dsinks_guards_intact(m);
    if (!ok) snprintf(msg, msg_size, "dsinks: a byte around the Hq floats was written");
    for (int64_t h = 0; h < H && ok; h++) {
        double lib = (double)m->p.dsinks[h];
        if (!isfinite(lib) || !isfinite(ref[h])) {
            ok = (isnan(lib) && isnan(ref[h])) || lib == ref[h];
            if (!ok)
                snprintf(msg, msg_size, "dsinks[%lld]: lib %.9g, oracle %.17g", (long long)h, lib, ref[h]);
            continue;
        }
        /* rounding to float: within half an ulp, 2^-24 relative, or half the smallest subnormal */
        double limit = f32 ? 3.0 * naive_err + 1e-5 : 0x1p-24 * fabs(ref[h]) + 0x1p-150 + 1e-11 * max_ref;
        ok = fabs(lib - ref[h]) <= limit;
        if (!ok)
            snprintf(msg, msg_size, "dsinks[%lld]: lib %.9g, oracle %.17g: |diff| %.3e > limit %.3e (%s)",
                     (long long)h, lib, ref[h], fabs(lib - ref[h]), limit,
                     f32 ? "3 x naive f32 error + 1e-5" : "half a float ulp + 1e-11 x max|ref|");
    }
    free(ref);
    free(naive);
    return ok;
}
