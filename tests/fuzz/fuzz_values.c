/* SPDX-License-Identifier: BSD-3-Clause */
/* The values of a successful fa_forward or fa_backward of a dense batch (a batch of sequences is
 * checked as the dense batch of each sequence, fuzz_seqs.c): rows that see no key, rows within
 * rounding of a float64 softmax with every score modifier, finite gradients, dsinks by the
 * header's formula. See the top of fuzz_api.c. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "fuzz_case.h"

double fz_ld(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d)
{
    int64_t off = b * t->stride_batch + h * t->stride_head + s * t->stride_seq + d;
    /* decoded by the test kit from the formats' definitions, not by the library's conversions,
     * which the checks below are to judge */
    return kit_load(t->dtype, t->data, off);
}

fz_case *fz_dequantized(const fz_case *c, const fa_params *p, void **buf)
{
    const fa_tensor *kv[2] = {&c->view[FZ_K], &c->view[FZ_V]}, *scale[2] = {p->k_scale, p->v_scale};
    double n[2];
    for (int i = 0; i < 2; i++)
        n[i] = (double)kv[i]->batch * (double)kv[i]->heads * (double)kv[i]->seq * (double)kv[i]->dim;
    *buf = NULL;
    if (n[0] + n[1] > 8.0 * FZ_WORK_MAX) return NULL;
    fz_case *one = malloc(sizeof *one);
    float *x = malloc(sizeof(float) * (size_t)(n[0] + n[1] + 1));
    if (!one || !x) abort();
    memcpy(one, c, sizeof *one);
    float *at = x;
    for (int i = 0; i < 2; i++) {
        const fa_tensor *t = kv[i], *s = scale[i];
        for (int64_t b = 0; b < t->batch; b++)
            for (int64_t h = 0; h < t->heads; h++)
                for (int64_t r = 0; r < t->seq; r++) {
                    /* a size-1 axis of the scale is read at index 0, whatever its stride */
                    const float sc =
                        (float)fz_ld(s, s->batch == 1 ? 0 : b, s->heads == 1 ? 0 : h, s->seq == 1 ? 0 : r, 0);
                    for (int64_t d = 0; d < t->dim; d++) *at++ = (float)fz_ld(t, b, h, r, d) * sc;
                }
        one->view[i ? FZ_V : FZ_K] =
            fa_tensor_bhsd(at - (int64_t)n[i], FA_F32, t->batch, t->heads, t->seq, t->dim);
    }
    *buf = x;
    return one;
}

void fz_store_rounding(fa_dtype t, double *unit, double *floor_abs)
{
    *unit = t == FA_BF16 ? 0x1p-8 : t == FA_F16 ? 0x1p-11 : 0.0;
    *floor_abs = t == FA_BF16 ? 0x1p-134 : t == FA_F16 ? 0x1p-25 : 0.0;
}

double fz_ld_lse(const void *lse, fa_dtype t, int64_t row)
{
    return t == FA_F64 ? ((const double *)lse)[row] : (double)((const float *)lse)[row];
}

/* The index masks (causal and window), measured from the diagonal d0: whether row i sees key j. */
static int visible(const fa_params *p, int64_t i, int64_t j, int64_t nq, int64_t nk)
{
    const int64_t d0 = p->causal == FA_CAUSAL_TOP_LEFT ? 0 : nk - nq;
    const int64_t dist = i + d0 - j; /* > 0: a key before the diagonal; small: no overflow below */
    if (p->causal != FA_CAUSAL_NONE && dist < 0) return 0;
    if (p->window_left >= 0 && dist > p->window_left) return 0;
    if (p->window_right >= 0 && -dist > p->window_right) return 0;
    return 1;
}

/* Bias element (b, h, i, j): a size-1 axis is read at index 0, whatever its stride. */
static double bias_at(const fa_tensor *bias, int64_t b, int64_t h, int64_t i, int64_t j)
{
    return fz_ld(bias, bias->batch == 1 ? 0 : b, bias->heads == 1 ? 0 : h, bias->seq == 1 ? 0 : i, j);
}

/* Elements of a view, as a double (no overflow). */
static double view_elements(const fa_tensor *t)
{
    return (double)t->batch * (double)t->heads * (double)t->seq * (double)t->dim;
}

/* A successful call can still name views far larger than its work (a stride-0 view of 2^32 keys
 * when there is no query): the value checks then walk only what a call within the work budget
 * could have touched. A call with dropout is not value-checked here. */
static int checkable(const fz_case *c, const fa_params *p, int backward)
{
    /* dropout's values need its mask: tests/test_dropout.c holds them to the oracle given it */
    if (p->dropout_p != 0.0) return 0;
    double n = p->bias ? view_elements(p->bias) : 0.0;
    for (int i = 0; i < (backward ? FZ_VIEWS : 4); i++) n += view_elements(&c->view[i]);
    return n <= 8.0 * FZ_WORK_MAX;
}

int fz_ordinary(double x, double amp)
{
    return isfinite(x) && fabs(x) <= amp;
}

/* Whether every element of a (fitting) view is an ordinary value (or, with mask_ok, -inf). */
static int view_ordinary(const fa_tensor *t, double amp, int mask_ok)
{
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t s = 0; s < t->seq; s++)
                for (int64_t d = 0; d < t->dim; d++) {
                    double x = fz_ld(t, b, h, s, d);
                    if (!fz_ordinary(x, amp) && !(mask_ok && x == -INFINITY)) return 0;
                }
    return 1;
}

/* Bounds on the per-head arrays' values for the numeric checks (their own regions hold at most 16). */
#define FZ_SLOPE_MAX 16.0
#define FZ_SINK_MAX  64.0

static int heads_ordinary(const float *a, int64_t heads, double bound)
{
    for (int64_t h = 0; a && h < heads; h++)
        if (!fz_ordinary(a[h], bound)) return 0;
    return 1;
}

static double effective_scale(const fa_params *p, int64_t dim)
{
    return p->scale != 0.0 ? p->scale : 1.0 / sqrt((double)dim);
}

/* Scores stay far from overflow in the call's type: numeric checks apply. */
static int scores_bounded(const fz_case *c, const fa_params *p)
{
    double scale = effective_scale(p, c->view[FZ_Q].dim);
    return fabs(scale) * c->amp * c->amp * (double)c->view[FZ_Q].dim <= 1e4 && fabs(scale) <= FLT_MAX;
}

/* Whether the scores of row (b, h, i) against the keys it sees by the index masks are certainly
 * finite before the bias (q and those k rows moderate, the head's slope finite), and those keys'
 * v rows finite: then a -inf bias on every one of those keys hides them all. (A score that
 * overflows, or is NaN, is not hidden; and the header: "a -inf bias hides a key's score, not its
 * value row: that row must then be finite".) */
static int scores_finite(const fz_case *c, const fa_params *p, int64_t b, int64_t h, int64_t i)
{
    const fa_tensor *q = &c->view[FZ_Q], *k = &c->view[FZ_K], *v = &c->view[FZ_V];
    const int64_t g = h / (q->heads / k->heads);
    const double moderate = 64.0 * c->amp;
    if (!scores_bounded(c, p) || (p->alibi_slopes && !isfinite(p->alibi_slopes[h]))) return 0;
    for (int64_t d = 0; d < q->dim; d++)
        if (!fz_ordinary(fz_ld(q, b, h, i, d), moderate)) return 0;
    for (int64_t j = 0; j < k->seq; j++) {
        if (!visible(p, i, j, q->seq, k->seq)) continue;
        for (int64_t d = 0; d < k->dim; d++)
            if (!fz_ordinary(fz_ld(k, b, g, j, d), moderate)) return 0;
        for (int64_t d = 0; d < v->dim; d++)
            if (!isfinite(fz_ld(v, b, g, j, d))) return 0;
    }
    return 1;
}

/* The keys row (b, h, i) sees: by the index masks (*index), and of those, not hidden by a -inf
 * bias (returned). */
static int64_t keys_seen(const fa_params *p, int64_t nq, int64_t nk, int64_t b, int64_t h, int64_t i,
                         int64_t *index)
{
    int64_t seen = 0;
    *index = 0;
    for (int64_t j = 0; j < nk; j++) {
        if (!visible(p, i, j, nq, nk)) continue;
        ++*index;
        seen += !p->bias || bias_at(p->bias, b, h, i, j) != -INFINITY;
    }
    return seen;
}

/* Whether row (b, h, i) sees no key: none by the index masks, or all hidden by a -inf bias behind
 * finite scores (the header's fully masked row; a NaN score is not hidden). */
static int row_sees_nothing(const fz_case *c, const fa_params *p, int64_t b, int64_t h, int64_t i)
{
    int64_t index, seen = keys_seen(p, c->view[FZ_Q].seq, c->view[FZ_K].seq, b, h, i, &index);
    return index == 0 || (seen == 0 && scores_finite(c, p, b, h, i));
}

/* Rows whose values are compared with float64 (every row is checked for the no-key rule): at most
 * this many per call, evenly spread, so the harness stays cheaper than the call it checks. */
#define FZ_CHECKED_ROWS 16

/* The modified score of row (b, h, i) against key j in float64 (scale, softcap, ALiBi, bias, in
 * the header's order), and in *mag a bound on the magnitudes its rounding scales with. */
static double score(const fz_case *c, const fa_params *p, int64_t b, int64_t h, int64_t i, int64_t j,
                    double *mag)
{
    const fa_tensor *q = &c->view[FZ_Q], *k = &c->view[FZ_K];
    const int64_t g = h / (q->heads / k->heads), nq = q->seq, nk = k->seq;
    const double scale = effective_scale(p, q->dim);
    double dot = 0.0, m = 0.0;
    for (int64_t d = 0; d < q->dim; d++) {
        double x = fz_ld(q, b, h, i, d) * fz_ld(k, b, g, j, d);
        dot += x;
        m += fabs(x);
    }
    double s = scale * dot;
    m *= fabs(scale);
    if (p->softcap > 0.0) s = p->softcap * tanh(s / p->softcap); /* |s| only shrinks: m still bounds it */
    if (p->alibi_slopes) {
        const int64_t d0 = p->causal == FA_CAUSAL_TOP_LEFT ? 0 : nk - nq;
        const double term = (double)p->alibi_slopes[h] * (double)llabs(i + d0 - j);
        s -= term;
        m += fabs(term);
    }
    if (p->bias) {
        const double x = bias_at(p->bias, b, h, i, j);
        s += x;
        if (isfinite(x)) m += fabs(x);
    }
    *mag = m;
    return s;
}

void fz_check_forward_values(const fz_case *c, const fa_params *pp, const void *lse)
{
    const fa_params P = pp ? *pp : (fa_params)FA_PARAMS_INIT, *p = &P;
    const fa_tensor *q = &c->view[FZ_Q], *k = &c->view[FZ_K], *v = &c->view[FZ_V], *o = &c->view[FZ_OUT];
    const int64_t nq = q->seq, nk = k->seq, group = k->heads > 0 ? q->heads / k->heads : 1;
    const double amp = c->amp;
    const int f64 = q->dtype == FA_F64;
    const int bounded = scores_bounded(c, p) && heads_ordinary(p->alibi_slopes, q->heads, FZ_SLOPE_MAX) &&
                        heads_ordinary(p->sinks, q->heads, FZ_SINK_MAX);
    const double eps = f64 ? 1e-10 : 2e-4; /* bf16 and f16 inputs accumulate in float */
    double out_unit, out_floor; /* an f32 out under half q holds what the half out is rounded from */
    const int partials = o->dtype == FA_F32 && (q->dtype == FA_BF16 || q->dtype == FA_F16);
    fz_store_rounding(partials ? q->dtype : o->dtype, &out_unit, &out_floor);
    const int64_t rows = q->batch * q->heads * nq;
    const int64_t every = rows > FZ_CHECKED_ROWS ? rows / FZ_CHECKED_ROWS : 1;
    if (rows == 0 || !checkable(c, p, 0)) return;
    double *weight = malloc((size_t)(nk > 0 ? nk : 1) * sizeof *weight);
    double *want = malloc((size_t)o->dim * sizeof *want);
    if (!weight || !want) abort();
    for (int64_t b = 0; b < q->batch; b++)
        for (int64_t h = 0; h < q->heads; h++)
            for (int64_t i = 0; i < nq; i++) {
                const int64_t g = h / group, row = (b * q->heads + h) * nq + i; /* sampling only */
                const int64_t at = (b * q->heads + h) * c->lse_head_stride + i;
                if (row_sees_nothing(c, p, b, h, i)) { /* zeros, lse = -inf or the sink */
                    for (int64_t d = 0; d < o->dim; d++)
                        FZ_CHECK(fz_ld(o, b, h, i, d) == 0.0,
                                 "row (%lld,%lld,%lld) sees no key: out[%lld] = %g", (long long)b,
                                 (long long)h, (long long)i, (long long)d, fz_ld(o, b, h, i, d));
                    if (lse) {
                        double got = fz_ld_lse(lse, q->dtype, at), sink = p->sinks ? p->sinks[h] : -INFINITY;
                        FZ_CHECK(got == sink || (isnan(got) && isnan(sink)),
                                 "row (%lld,%lld,%lld) sees no key: lse = %g, not %g", (long long)b,
                                 (long long)h, (long long)i, got, sink);
                    }
                    continue;
                }
                if (!bounded || row % every != 0) continue;
                int clean = 1;
                for (int64_t d = 0; d < q->dim && clean; d++) clean = fz_ordinary(fz_ld(q, b, h, i, d), amp);
                for (int64_t j = 0; j < nk && clean; j++) {
                    if (!visible(p, i, j, nq, nk)) continue;
                    for (int64_t d = 0; d < k->dim && clean; d++)
                        clean = fz_ordinary(fz_ld(k, b, g, j, d), amp);
                    for (int64_t d = 0; d < v->dim && clean; d++)
                        clean = fz_ordinary(fz_ld(v, b, g, j, d), amp);
                    if (clean && p->bias) {
                        double x = bias_at(p->bias, b, h, i, j);
                        clean = fz_ordinary(x, amp) || x == -INFINITY;
                    }
                }
                if (!clean) continue; /* NaN/Inf reach the rows that see them: no claim on this one */
                double m = p->sinks ? p->sinks[h] : -INFINITY, smax = p->sinks ? fabs(p->sinks[h]) : 0.0;
                for (int64_t j = 0; j < nk; j++) {
                    weight[j] = -INFINITY;
                    if (!visible(p, i, j, nq, nk)) continue;
                    double mag;
                    weight[j] = score(c, p, b, h, i, j, &mag);
                    if (weight[j] > m) m = weight[j];
                    if (mag > smax) smax = mag;
                }
                double sum = p->sinks ? exp(p->sinks[h] - m) : 0.0;
                for (int64_t j = 0; j < nk; j++) sum += (weight[j] = exp(weight[j] - m));
                const double tol = eps * (1.0 + smax);
                if (lse) {
                    double lse_want = m + log(sum), got = fz_ld_lse(lse, q->dtype, at);
                    FZ_CHECK(isfinite(got) && fabs(got - lse_want) <= 2.0 * tol + eps * fabs(lse_want),
                             "row %lld: lse %.17g, float64 log-sum-exp %.17g", (long long)row, got, lse_want);
                }
                for (int64_t d = 0; d < o->dim; d++) want[d] = 0.0;
                for (int64_t j = 0; j < nk; j++)
                    for (int64_t d = 0; d < o->dim && weight[j] > 0.0; d++)
                        want[d] += weight[j] / sum * fz_ld(v, b, g, j, d);
                for (int64_t d = 0; d < o->dim; d++) {
                    double got = fz_ld(o, b, h, i, d);
                    /* the float result within amp·4·tol, then rounded once to out's dtype */
                    const double near = amp * 4.0 * tol;
                    FZ_CHECK(isfinite(got) &&
                                 fabs(got - want[d]) <= near + out_unit * (fabs(want[d]) + near) + out_floor,
                             "row %lld: out[%lld] = %.17g, float64 %.17g", (long long)row, (long long)d, got,
                             want[d]);
                }
            }
    free(weight);
    free(want);
}

/* dsinks[h] = -sum over b, i of exp(sinks[h] - lse) · rowsum(dout ∘ out), from the forward's own
 * out and lse (the header's formula; its rounding scales with the terms' magnitudes, plus the one
 * rounding to float, which may underflow, and the flush of weights below the smallest normal).
 * The terms of c's rows (a batch of sequences adds those of each sequence). */
void fz_dsinks_terms(const fz_case *c, const fa_params *p, const void *lse, double *want, double *mag,
                     double *flushed)
{
    const fa_tensor *q = &c->view[FZ_Q], *o = &c->view[FZ_OUT], *dout = &c->view[FZ_DOUT];
    const double tiny = q->dtype == FA_F64 ? DBL_MIN : FLT_MIN;
    for (int64_t h = 0; h < q->heads; h++)
        for (int64_t b = 0; b < q->batch; b++)
            for (int64_t i = 0; i < q->seq; i++) {
                double delta = 0.0, dmag = 0.0;
                for (int64_t d = 0; d < o->dim; d++) {
                    double x = fz_ld(dout, b, h, i, d) * fz_ld(o, b, h, i, d);
                    delta += x;
                    dmag += fabs(x);
                }
                double l = fz_ld_lse(lse, q->dtype, (b * q->heads + h) * c->lse_head_stride + i),
                       w = exp(p->sinks[h] - l);
                want[h] -= w * delta;
                mag[h] += w * (dmag + 1e-300) * (1.0 + fabs(l));
                flushed[h] += tiny * dmag; /* a weight below the smallest normal may count as 0 */
            }
}

void fz_dsinks_compare(const fa_params *p, int64_t heads, fa_dtype dtype, const double *want,
                       const double *mag, const double *flushed)
{
    const double eps = dtype == FA_F64 ? 1e-10 : 2e-4;
    for (int64_t h = 0; h < heads; h++) {
        double got = p->dsinks[h]; /* a float in every dtype: rounded once from the accumulation type */
        FZ_CHECK(isfinite(got) && fabs(got - want[h]) <= eps * mag[h] + flushed[h] +
                                                             0.5 * FLT_EPSILON * fabs(want[h]) + FLT_TRUE_MIN,
                 "dsinks[%lld] = %.17g, float64 %.17g (scale %g)", (long long)h, got, want[h], mag[h]);
    }
}

/* dbias from ordinary inputs (flashattn.h, fa_params.dbias: the sum of dS over the (b, h, i) that
 * read an entry of the bias): exactly 0 where no reader sees the key (an index mask or a -inf bias
 * hides it from each: P = 0 there), and finite everywhere (|dS| <= 2·Dv·amp², so a sum of at most
 * B·Hq·Nq of them holds in float). */
static void check_dbias(const fz_case *c, const fa_params *p)
{
    const fa_tensor *q = &c->view[FZ_Q], *bias = p->bias, *db = p->dbias;
    const int64_t nq = q->seq, nk = c->view[FZ_K].seq;
    /* An empty dbias has no entry to check (its data may be NULL): a broadcast axis of extent 0 (a
     * stride of 0 over 0 heads, say) would otherwise still be walked once below. */
    if (db->batch == 0 || db->heads == 0 || db->seq == 0 || db->dim == 0) return;
    /* the entry of dbias (b', h', i') that (b, h, i) reads: 0 on a broadcast axis (size 1 or stride 0) */
    const int bb = bias->batch == 1 || bias->stride_batch == 0,
              bh = bias->heads == 1 || bias->stride_head == 0, bi = bias->seq == 1 || bias->stride_seq == 0;
    for (int64_t b0 = 0; b0 < (bb ? 1 : q->batch); b0++)
        for (int64_t h0 = 0; h0 < (bh ? 1 : q->heads); h0++)
            for (int64_t i0 = 0; i0 < (bi ? 1 : nq); i0++)
                for (int64_t j = 0; j < nk; j++) {
                    int seen = 0;
                    for (int64_t b = bb ? 0 : b0; b < (bb ? q->batch : b0 + 1) && !seen; b++)
                        for (int64_t h = bh ? 0 : h0; h < (bh ? q->heads : h0 + 1) && !seen; h++)
                            for (int64_t i = bi ? 0 : i0; i < (bi ? nq : i0 + 1) && !seen; i++)
                                seen = visible(p, i, j, nq, nk) && bias_at(bias, b, h, i, j) != -INFINITY;
                    const double got = fz_ld(db, b0, h0, i0, j);
                    FZ_CHECK(
                        seen ? isfinite(got) : got == 0.0,
                        "dbias (%lld,%lld,%lld,%lld) = %g from ordinary inputs (a reader sees the key: %d)",
                        (long long)b0, (long long)h0, (long long)i0, (long long)j, got, seen);
                }
}

int fz_check_backward_values(const fz_case *c, const fa_params *pp)
{
    const fa_params P = pp ? *pp : (fa_params)FA_PARAMS_INIT, *p = &P;
    const fa_tensor *q = &c->view[FZ_Q], *k = &c->view[FZ_K], *dq = &c->view[FZ_DQ];
    const fa_tensor *dk = &c->view[FZ_DK], *dv = &c->view[FZ_DV];
    const int64_t nq = q->seq, nk = k->seq, group = k->heads > 0 ? q->heads / k->heads : 1;
    if (!checkable(c, p, 1)) return 0;
    int clean = scores_bounded(c, p) && view_ordinary(q, c->amp, 0) && view_ordinary(k, c->amp, 0) &&
                view_ordinary(&c->view[FZ_V], c->amp, 0) && view_ordinary(&c->view[FZ_DOUT], c->amp, 0) &&
                (!p->bias || view_ordinary(p->bias, c->amp, 1)) &&
                heads_ordinary(p->alibi_slopes, q->heads, FZ_SLOPE_MAX) &&
                heads_ordinary(p->sinks, q->heads, FZ_SINK_MAX);
    /* Rows that see no key: dq = 0. Hidden by the index masks: always; all hidden by a -inf bias:
     * when the inputs are ordinary (the bias hides scores, not dout or value rows, whose NaN then
     * reaches the row as 0 · NaN: flashattn.h, fa_params). */
    for (int64_t b = 0; b < q->batch; b++)
        for (int64_t h = 0; h < q->heads; h++)
            for (int64_t i = 0; i < nq; i++) {
                if (!row_sees_nothing(c, p, b, h, i)) continue;
                int64_t index;
                keys_seen(p, nq, nk, b, h, i, &index);
                if (index > 0 && !clean) continue;
                for (int64_t d = 0; d < q->dim; d++)
                    FZ_CHECK(fz_ld(dq, b, h, i, d) == 0.0, "row (%lld,%lld,%lld) sees no key: dq = %g",
                             (long long)b, (long long)h, (long long)i, fz_ld(dq, b, h, i, d));
            }
    /* Keys no row of the group sees: dk = dv = 0. Hidden by the index masks: always; by a -inf bias
     * as well: when every input is ordinary (a NaN elsewhere would make 0 · NaN). */
    for (int64_t b = 0; b < k->batch; b++)
        for (int64_t g = 0; g < k->heads; g++)
            for (int64_t j = 0; j < nk; j++) {
                int by_index = 0, seen = 0;
                for (int64_t h = g * group; h < (g + 1) * group && !seen; h++)
                    for (int64_t i = 0; i < nq && !seen; i++) {
                        int vis = visible(p, i, j, nq, nk);
                        by_index |= vis;
                        seen = vis && (!p->bias || bias_at(p->bias, b, h, i, j) != -INFINITY);
                    }
                if (seen || (by_index && !clean)) continue;
                for (int64_t d = 0; d < dk->dim; d++)
                    FZ_CHECK(fz_ld(dk, b, g, j, d) == 0.0, "key (%lld,%lld,%lld) seen by no row: dk = %g",
                             (long long)b, (long long)g, (long long)j, fz_ld(dk, b, g, j, d));
                for (int64_t d = 0; d < dv->dim; d++)
                    FZ_CHECK(fz_ld(dv, b, g, j, d) == 0.0, "key (%lld,%lld,%lld) seen by no row: dv = %g",
                             (long long)b, (long long)g, (long long)j, fz_ld(dv, b, g, j, d));
            }
    if (!clean) return 0;
    if (p->dbias) check_dbias(c, p);
    const fa_tensor *grads[3] = {dq, dk, dv};
    /* Bounds on each gradient's magnitude from ordinary inputs (|x| <= amp; p <= 1 and each row's
     * probabilities sum to at most 1; the softcap's factor at most 1): |dS| <= 2·Dv·amp²·p, so
     * |dq| <= |scale|·2·Dv·amp³, |dk| <= |scale|·2·Dv·amp³ and |dv| <= amp, each times the rows of
     * the group for dk and dv. A gradient stored as f16 holds values up to 65504 and rounds larger
     * ones to inf (flashattn.h): it is required finite where its bound, with room for float's own
     * rounding, stays below that. bf16, f32 and f64 hold every such bound. */
    const double scale = fabs(effective_scale(p, q->dim)), amp3 = c->amp * c->amp * c->amp;
    const double rows_per_key = (double)nq * (double)group, dv_dim = (double)c->view[FZ_V].dim;
    const double bound[3] = {scale * 2.0 * dv_dim * amp3, rows_per_key * scale * 2.0 * dv_dim * amp3,
                             rows_per_key * c->amp};
    for (int g = 0; g < 3; g++) {
        const fa_tensor *t = grads[g];
        if (t->dtype == FA_F16 && bound[g] * (1.0 + 1e-3) >= 65504.0) continue; /* may round to inf */
        for (int64_t b = 0; b < t->batch; b++)
            for (int64_t h = 0; h < t->heads; h++)
                for (int64_t s = 0; s < t->seq; s++)
                    for (int64_t d = 0; d < t->dim; d++)
                        FZ_CHECK(isfinite(fz_ld(t, b, h, s, d)),
                                 "%s (%lld,%lld,%lld,%lld) = %g from ordinary inputs",
                                 g == 0   ? "dq"
                                 : g == 1 ? "dk"
                                          : "dv",
                                 (long long)b, (long long)h, (long long)s, (long long)d,
                                 fz_ld(t, b, h, s, d));
    }
    return 1;
}
