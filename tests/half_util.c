/* SPDX-License-Identifier: BSD-3-Clause */
/* bf16/f16 test helpers; see half_util.h. */
#include "half_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "reference.h"
#include "tables.h"

const char *hu_dtype_name(fa_dtype t)
{
    switch (t) {
    case FA_F32: return "f32";
    case FA_F64: return "f64";
    case FA_BF16: return "bf16";
    case FA_F16: return "f16";
    default: return "?";
    }
}

double hu_round(fa_dtype t, double x)
{
    return kit_round(t, x);
}

double hu_ulp(fa_dtype t, double m)
{
    int p, emin; /* significant bits; exponent of the smallest subnormal */
    switch (t) {
    case FA_F64: p = 53, emin = -1074; break;
    case FA_BF16: p = 8, emin = -133; break;
    case FA_F16: p = 11, emin = -24; break;
    default: p = 24, emin = -149; break;
    }
    int e = 0;
    if (m > 0 && isfinite(m)) frexp(m, &e); /* m = f·2^e, 0.5 <= f < 1: 2^(e-1) <= m < 2^e */
    double ulp = ldexp(1.0, e - p), least = ldexp(1.0, emin);
    return m > 0 && ulp > least ? ulp : least;
}

/* ---- problems --------------------------------------------------------------------------- */

static void element_address(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d, void **a)
{
    int64_t off = b * t->stride_batch + h * t->stride_head + s * t->stride_seq + d;
    *a = (char *)t->data + off * (int64_t)kit_dtype_size(t->dtype);
}

uint64_t hu_bits(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d)
{
    void *a;
    element_address(t, b, h, s, d, &a);
    uint64_t bits = 0;
    /* little-endian x86 and ARM: the element's bytes are the low bytes of the integer */
    memcpy(&bits, a, kit_dtype_size(t->dtype));
    return bits;
}

int64_t hu_numel(const fa_tensor *t)
{
    return t->batch * t->heads * t->seq * t->dim;
}

void hu_make(kit_problem *pr, const kit_shape *s, tu_rng *rng, double qk_amp)
{
    kit_problem_opts o = kit_suite_opts(&rng->state, qk_amp);
    o.gradients = 1;
    const char *failed = kit_problem_make(pr, s, &o);
    if (failed) {
        fprintf(stderr, "out of memory for %s\n", failed);
        abort();
    }
}

double *hu_view_copy(const fa_tensor *t)
{
    double *x = malloc(sizeof(double) * (size_t)(hu_numel(t) + 1));
    if (!x) abort();
    int64_t n = 0;
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t s = 0; s < t->seq; s++)
                for (int64_t d = 0; d < t->dim; d++) x[n++] = ref_load(t, b, h, s, d);
    return x;
}

int hu_views_bitwise_equal(const fa_tensor *a, const fa_tensor *b, int64_t *where)
{
    int64_t n = 0;
    for (int64_t bb = 0; bb < a->batch; bb++)
        for (int64_t h = 0; h < a->heads; h++)
            for (int64_t s = 0; s < a->seq; s++)
                for (int64_t d = 0; d < a->dim; d++, n++)
                    if (hu_bits(a, bb, h, s, d) != hu_bits(b, bb, h, s, d)) {
                        *where = n;
                        return 0;
                    }
    return 1;
}

void hu_copy_rows(const fa_tensor *dst, int64_t dst_b, int64_t dst_s0, const fa_tensor *src, int64_t src_b,
                  int64_t src_s0, int64_t rows)
{
    size_t e = kit_dtype_size(src->dtype);
    for (int64_t h = 0; h < src->heads; h++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t d = 0; d < src->dim; d++) {
                void *to, *from;
                element_address(dst, dst_b, h, dst_s0 + r, d, &to);
                element_address(src, src_b, h, src_s0 + r, d, &from);
                memcpy(to, from, e);
            }
}

int hu_rows_bitwise_equal(const fa_tensor *a, int64_t a_b, int64_t a_s0, const fa_tensor *b, int64_t b_b,
                          int64_t b_s0, int64_t rows, char *where, size_t where_size)
{
    for (int64_t h = 0; h < a->heads; h++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t d = 0; d < a->dim; d++)
                if (hu_bits(a, a_b, h, a_s0 + r, d) != hu_bits(b, b_b, h, b_s0 + r, d)) {
                    snprintf(where, where_size, "head %lld row %lld col %lld", (long long)h, (long long)r,
                             (long long)d);
                    return 0;
                }
    return 1;
}

fa_status hu_forward(fa_context *ctx, const fa_params *p, kit_problem *pr)
{
    return fa_forward(ctx, p, &pr->t[KIT_Q], &pr->t[KIT_K], &pr->t[KIT_V], &pr->t[KIT_OUT], pr->lse);
}

fa_status hu_backward(fa_context *ctx, const fa_params *p, kit_problem *pr)
{
    return fa_backward(ctx, p, &pr->t[KIT_Q], &pr->t[KIT_K], &pr->t[KIT_V], &pr->t[KIT_OUT], &pr->t[KIT_DOUT],
                       pr->lse, &pr->t[KIT_DQ], &pr->t[KIT_DK], &pr->t[KIT_DV]);
}

void hu_desc(const kit_shape *s, const fa_params *p, char *buf, size_t size)
{
    static const char *causal[] = {"none", "top-left", "bottom-right"};
    int c = p ? (int)p->causal : 0;
    snprintf(
        buf, size,
        "%s/%s B=%lld Hq=%lld Hkv=%lld Nq=%lld Nk=%lld D=%lld Dv=%lld %s causal=%s scale=%g window=%lld/%lld "
        "softcap=%g%s%s%s",
        hu_dtype_name(s->q_dtype), hu_dtype_name(s->kv_dtype), (long long)s->batch, (long long)s->q_heads,
        (long long)s->kv_heads, (long long)s->q_len, (long long)s->kv_len, (long long)s->dim,
        (long long)s->dim_v, s->layout == KIT_BSHD ? "bshd" : "bhsd", (c >= 0 && c < 3) ? causal[c] : "?",
        p ? p->scale : 0.0, p ? (long long)p->window_left : -1LL, p ? (long long)p->window_right : -1LL,
        p ? p->softcap : 0.0, p && p->alibi_slopes ? " alibi" : "", p && p->bias ? " bias" : "",
        p && p->sinks ? " sinks" : "");
}

/* ---- the accuracy rule ------------------------------------------------------------------ */

static int same_nonfinite(double x, double ref)
{
    return (isnan(x) && isnan(ref)) || x == ref;
}

hu_err hu_compare(const double *x, const double *ref, int64_t n)
{
    hu_err e = {0.0, 0.0, -1, 0.0, 0.0, 0, -1};
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(ref[i])) {
            if (!same_nonfinite(x[i], ref[i]) && e.mismatches++ == 0) {
                e.first_mismatch = i;
                e.worst_x = x[i], e.worst_ref = ref[i];
            }
            continue;
        }
        double err = fabs(x[i] - ref[i]);
        if (fabs(ref[i]) > e.max_ref) e.max_ref = fabs(ref[i]);
        if (err > e.max_err || e.worst < 0) {
            e.max_err = err, e.worst = i;
            if (!e.mismatches) e.worst_x = x[i], e.worst_ref = ref[i];
        }
    }
    return e;
}

int hu_check(const char *what, fa_dtype t, const double *lib, const double *oracle, const double *naive,
             int64_t n, double f32_floor, char *msg, size_t msg_size)
{
    hu_err el = hu_compare(lib, oracle, n), en = hu_compare(naive, oracle, n);
    if (el.mismatches) {
        snprintf(msg, msg_size,
                 "%s (%s): %lld non-finite mismatches, first at flat index %lld: lib %.9g oracle %.9g", what,
                 hu_dtype_name(t), (long long)el.mismatches, (long long)el.first_mismatch, el.worst_x,
                 el.worst_ref);
        return 0;
    }
    double ulp = hu_ulp(t, el.max_ref), abs_floor = ulp > f32_floor ? ulp : f32_floor;
    double limit = 3.0 * en.max_err + abs_floor;
    if (!(el.max_err <= limit)) {
        snprintf(
            msg, msg_size,
            "%s (%s): max error %.3e > 3 x naive f32 error %.3e + floor %.3e (max |oracle| %.3e), worst at "
            "flat index %lld: lib %.9g oracle %.9g",
            what, hu_dtype_name(t), el.max_err, en.max_err, abs_floor, el.max_ref, (long long)el.worst,
            el.worst_x, el.worst_ref);
        return 0;
    }
    return 1;
}

static int dot_units_bf16_even(fa_context *ctx, fa_dtype qt, fa_dtype kt, int64_t dim)
{
    fa_context *own = NULL;
    if (!ctx && fa_context_create(&own, NULL) != FA_OK) return 0;
    fa_stats st = FA_STATS_INIT;
    int dot = fa_context_stats(ctx ? ctx : own, &st) == FA_OK && kit_table_multiplies_bf16(st.isa);
    fa_context_destroy(own);
    return dot && qt == FA_BF16 && kt == FA_BF16 && dim % 2 == 0;
}

int hu_on_dot_units(fa_context *ctx, fa_dtype qt, fa_dtype kt, int64_t dim, int64_t q_rows)
{
    return dot_units_bf16_even(ctx, qt, kt, dim) && q_rows > 4;
}

int hu_backward_on_dot_units(fa_context *ctx, fa_dtype qt, fa_dtype kt, int64_t dim, int64_t dim_v)
{
    return dot_units_bf16_even(ctx, qt, kt, dim) && dim_v % 2 == 0;
}
