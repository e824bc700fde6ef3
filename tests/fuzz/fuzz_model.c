/* SPDX-License-Identifier: BSD-3-Clause */
/* The expected-status model; see fuzz_model.h. */
#include "fuzz_model.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Marks of one view in the element map beyond this are not made (the view is then "unknown"). */
#define FZ_MARK_BUDGET 8.0e6

const fa_status fz_class_status[FZ_CLASSES] = {FA_ERR_NULL,   FA_ERR_ARG,   FA_ERR_DTYPE,       FA_ERR_SHAPE,
                                               FA_ERR_STRIDE, FA_ERR_ALIAS, FA_ERR_UNSUPPORTED, FA_ERR_BUSY};
enum {
    C_NULL = FZ_C_NULL,
    C_ARG = FZ_C_ARG,
    C_DTYPE = FZ_C_DTYPE,
    C_SHAPE = FZ_C_SHAPE,
    C_STRIDE = FZ_C_STRIDE,
    C_ALIAS = FZ_C_ALIAS,
    C_UNSUPPORTED = FZ_C_UNSUPPORTED,
    C_BUSY = FZ_C_BUSY
};
static const char *const class_name[FZ_CLASSES] = {"NULL",   "ARG",   "DTYPE",       "SHAPE",
                                                   "STRIDE", "ALIAS", "UNSUPPORTED", "BUSY"};
static const char *const view_name[FZ_CALL_BITS] = {"q",
                                                    "k",
                                                    "v",
                                                    "out",
                                                    "dout",
                                                    "dq",
                                                    "dk",
                                                    "dv",
                                                    "bias",
                                                    "lse",
                                                    "alibi_slopes",
                                                    "sinks",
                                                    "dsinks",
                                                    "cu_seqlens_q",
                                                    "cu_seqlens_k",
                                                    "seqused_k",
                                                    "block_table",
                                                    "k_scale",
                                                    "v_scale",
                                                    "dbias"};

size_t fz_dtype_bytes(fa_dtype t)
{
    switch (t) {
    case FA_F64: return 8;
    case FA_F32: return 4;
    case FA_BF16:
    case FA_F16: return 2;
    case FA_I8:
    case FA_F8_E4M3:
    case FA_F8_E5M2: return 1;
    }
    return 0;
}

int fz_dtype_quantized(fa_dtype t)
{
    return t == FA_I8 || t == FA_F8_E4M3 || t == FA_F8_E5M2;
}

int fz_view_empty(const fa_tensor *t)
{
    return t->batch == 0 || t->heads == 0 || t->seq == 0 || t->dim == 0;
}

int64_t fz_view_span(const fa_tensor *t)
{
    const int64_t size[4] = {t->batch, t->heads, t->seq, t->dim};
    const int64_t stride[4] = {t->stride_batch, t->stride_head, t->stride_seq, 1};
    int64_t last = 0, term;
    for (int i = 0; i < 4; i++) {
        if (size[i] <= 0 || stride[i] < 0) return -1;
        if (__builtin_mul_overflow(size[i] - 1, stride[i], &term) ||
            __builtin_add_overflow(last, term, &last))
            return -1;
    }
    return last == INT64_MAX ? -1 : last + 1;
}

int fz_view_fits(const fz_pool *pool, const fa_tensor *t)
{
    size_t es = fz_dtype_bytes(t->dtype);
    if (fz_view_empty(t) || !t->data || es == 0) return 0;
    int64_t span = fz_view_span(t);
    if (span < 0 || (uint64_t)span > pool->bytes / es) return 0;
    uintptr_t begin = (uintptr_t)pool->base, at = (uintptr_t)t->data;
    if (at < begin || at - begin > pool->bytes || at % es != 0) return 0;
    return (size_t)span * es <= pool->bytes - (at - begin);
}

size_t fz_array_bytes(const fa_tensor *q)
{
    if (!q || q->heads <= 0 || (uint64_t)q->heads > SIZE_MAX / sizeof(float)) return 0;
    return (size_t)q->heads * sizeof(float);
}

size_t fz_lse_bytes(const fa_tensor *q)
{
    if (!q || q->batch <= 0 || q->heads <= 0 || q->seq <= 0 || q->dim <= 0) return 0;
    int64_t rows;
    if (__builtin_mul_overflow(q->batch, q->heads, &rows) || __builtin_mul_overflow(rows, q->seq, &rows))
        return 0;
    if ((uint64_t)rows > SIZE_MAX / 8) return 0;
    return (size_t)rows * (q->dtype == FA_F64 ? 8u : 4u);
}

/* ---- helpers ---- */

void fz_set_class(fz_model *m, int c, int state, const char *why_fmt, const char *what)
{
    if (state <= m->state[c]) return;
    m->state[c] = state;
    if (state == FZ_PRESENT && !m->refused) {
        m->refused = 1;
        snprintf(m->why, sizeof m->why, "%s: ", class_name[c]);
        size_t used = strlen(m->why);
        snprintf(m->why + used, sizeof m->why - used, why_fmt, what);
    }
}

void fz_maybe(fz_model *m, int c)
{
    if (m->state[c] < FZ_MAYBE) m->state[c] = FZ_MAYBE;
}

static int dtype_known(fa_dtype t)
{
    return fz_dtype_bytes(t) != 0;
}

static int same_shape(const fa_tensor *a, const fa_tensor *b)
{
    return a->batch == b->batch && a->heads == b->heads && a->seq == b->seq && a->dim == b->dim;
}

static int64_t mod_floor(int64_t x, int64_t w)
{
    int64_t r = x % w;
    return r < 0 ? r + w : r;
}

/* The params the library reads: the defaults, then the caller's first min(struct_size, ours) bytes
 * (flashattn.h, the ABI section): a field past a smaller struct_size is not read, whatever it holds. */
static fa_params params_of(const fz_call *c)
{
    fa_params p = FA_PARAMS_INIT;
    if (c->p) memcpy(&p, c->p, c->p->struct_size < sizeof p ? c->p->struct_size : sizeof p);
    return p;
}

/* The views the call reads or writes: its n tensors, then the bias (index FZ_BIAS), a quantized
 * cache's scales (FZ_KSCALE_BIT, FZ_VSCALE_BIT) and the backward's dbias (FZ_DBIAS_BIT), or NULL. */
static const fa_tensor *view_at(const fz_call *c, int i)
{
    const fa_params p = params_of(c);
    if (i == FZ_BIAS) return p.bias;
    if (i == FZ_DBIAS_BIT) return c->backward ? p.dbias : NULL;
    if (i == FZ_KSCALE_BIT) return p.k_scale;
    if (i == FZ_VSCALE_BIT) return p.v_scale;
    return i >= 0 && i < c->n && i < FZ_VIEWS ? c->t[i] : NULL;
}

/* Whether argument bit i is a view (a tensor, the bias, a scale, dbias), and the next such bit: the
 * loops over every view run `for (i = 0; i < FZ_CALL_BITS; i = next_view(i))`. */
static int is_view_bit(const fz_call *c, int i)
{
    return i < c->n || i == FZ_BIAS_BIT || i == FZ_KSCALE_BIT || i == FZ_VSCALE_BIT || i == FZ_DBIAS_BIT;
}

static int next_view(int i)
{
    return i == FZ_BIAS ? FZ_KSCALE_BIT : i + 1; /* FZ_KSCALE_BIT, FZ_VSCALE_BIT, FZ_DBIAS_BIT: in a row */
}
_Static_assert(FZ_VSCALE_BIT == FZ_KSCALE_BIT + 1 && FZ_DBIAS_BIT == FZ_VSCALE_BIT + 1 &&
                   FZ_CALL_BITS == FZ_DBIAS_BIT + 1,
               "next_view: the views after the bias are consecutive bits, the last ones");

/* The elements of dbias the call writes (flashattn.h, fa_params.dbias): on an axis where the bias
 * has a stride of 0 and a size above 1, one (the sum); the view as given elsewhere. For the view
 * bit i of another argument, that argument's view. */
static const fa_tensor *written_view(const fz_call *c, int i, fa_tensor *tmp)
{
    const fa_tensor *t = view_at(c, i), *bias = view_at(c, FZ_BIAS);
    if (i != FZ_DBIAS_BIT || !t || !bias) return t;
    *tmp = *t;
    if (bias->stride_batch == 0 && tmp->batch > 1) tmp->batch = 1;
    if (bias->stride_head == 0 && tmp->heads > 1) tmp->heads = 1;
    if (bias->stride_seq == 0 && tmp->seq > 1) tmp->seq = 1;
    return tmp;
}

/* Whether k is a quantized cache (then its scales are required, and only then allowed). */
static int k_quantized(const fz_call *c)
{
    return c->t[FZ_K] && fz_dtype_quantized(c->t[FZ_K]->dtype);
}

/* The per-head arrays the call uses (fa_forward ignores dsinks). */
static const void *array_at(const fz_call *c, int bit)
{
    const fa_params p = params_of(c);
    if (bit == FZ_SLOPES_BIT) return p.alibi_slopes;
    if (bit == FZ_SINKS_BIT) return p.sinks;
    return c->backward ? p.dsinks : NULL;
}

static const void *seqs_array(const fa_seqs *s, int which)
{
    if (!s) return NULL;
    return which == 0   ? (const void *)s->cu_seqlens_q
           : which == 1 ? (const void *)s->cu_seqlens_k
           : which == 2 ? (const void *)s->seqused_k
                        : (const void *)s->block_table;
}

size_t fz_seqs_elem(int which)
{
    return which == 3 ? sizeof(int32_t) : sizeof(int64_t);
}

int64_t fz_seqs_entries(const fa_seqs *s, int which)
{
    if (!seqs_array(s, which) || s->batch < 0) return 0;
    if (which <= 1) return s->batch == INT64_MAX ? -1 : s->batch + 1;
    if (which == 2) return s->batch;
    int64_t n; /* batch·pages_per_seq 4-byte entries, when that is representable */
    if (s->pages_per_seq < 0) return 0;
    if (__builtin_mul_overflow(s->batch, s->pages_per_seq, &n) || n > INT64_MAX / (int64_t)sizeof(int32_t))
        return -1;
    return n;
}

/* The range of the sequences' array `which`: its entries, or empty (none, too many to count, or
 * wrapping around the address space). */
static fz_range seqs_range(const fa_seqs *s, int which)
{
    int64_t n = fz_seqs_entries(s, which);
    if (n <= 0 || (uint64_t)n > UINTPTR_MAX / fz_seqs_elem(which)) return fz_plain_range(NULL, 0);
    return fz_plain_range(seqs_array(s, which), (size_t)n * fz_seqs_elem(which));
}

/* Whether the sequences' array `which` has entries whose bytes wrap around the address space. */
static int seqs_wraps(const fa_seqs *s, int which)
{
    int64_t n = fz_seqs_entries(s, which);
    const void *a = seqs_array(s, which);
    return n > 0 && (uint64_t)n <= UINTPTR_MAX / fz_seqs_elem(which) &&
           (uintptr_t)a > UINTPTR_MAX - (uintptr_t)n * fz_seqs_elem(which);
}

/* Entry i of an array the model has found inside the pool (read bytewise: it may be misaligned). */
static int64_t seqs_at(const fa_seqs *s, int which, int64_t i)
{
    const unsigned char *at = (const unsigned char *)seqs_array(s, which) + i * (int64_t)fz_seqs_elem(which);
    if (which == 3) {
        int32_t x;
        memcpy(&x, at, sizeof x);
        return x;
    }
    int64_t x;
    memcpy(&x, at, sizeof x);
    return x;
}

fz_range fz_view_range(const fa_tensor *t)
{
    fz_range r = {0, 0};
    int64_t span = fz_view_empty(t) ? -1 : fz_view_span(t);
    size_t es = fz_dtype_bytes(t->dtype);
    if (span < 0 || es == 0 || (uint64_t)span > UINTPTR_MAX / es) return r;
    uintptr_t end;
    if (__builtin_add_overflow((uintptr_t)t->data, (uintptr_t)span * es, &end)) return r;
    r.begin = (uintptr_t)t->data;
    r.end = end;
    return r;
}

fz_range fz_plain_range(const void *at, size_t bytes)
{
    fz_range r = {(uintptr_t)at, (uintptr_t)at};
    if (at && bytes && (uintptr_t)at <= UINTPTR_MAX - bytes) r.end = (uintptr_t)at + bytes;
    return r;
}

int fz_ranges_meet(fz_range a, fz_range b)
{
    return a.begin < a.end && b.begin < b.end && a.begin < b.end && b.begin < a.end;
}

int fz_range_fits(const fz_pool *pool, fz_range r)
{
    uintptr_t begin = (uintptr_t)pool->base;
    return r.begin >= begin && r.end >= r.begin && r.end - begin <= pool->bytes;
}

/* Marks the elements of a view that fits with `bit`. Inputs may collapse stride-0 axes (the same
 * addresses again); outputs are walked whole and a second mark of the same element is a
 * self-overlap. Returns 1 when marked; 0 when over budget. */
int fz_mark_view(fz_model *m, const fz_pool *pool, const fa_tensor *t, int bit, int collapse, int *dup)
{
    int64_t B = t->batch, H = t->heads, S = t->seq, D = t->dim;
    const int64_t sb = t->stride_batch, sh = t->stride_head, ss = t->stride_seq;
    if (collapse) {
        if (sb == 0) B = 1;
        if (sh == 0) H = 1;
        if (ss == 0) S = 1;
    }
    const size_t per = fz_dtype_bytes(t->dtype) / m->unit; /* units of one element */
    double marks = (double)B * (double)H * (double)S * (double)D;
    if (!collapse && marks > (double)(m->units / per)) { /* more elements than the pool has: two share one */
        *dup = 1;
        return 0;
    }
    if (marks > FZ_MARK_BUDGET) return 0;
    const size_t off0 = (size_t)((const unsigned char *)t->data - pool->base) / m->unit;
    const uint32_t mask = 1u << bit;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t s = 0; s < S; s++) {
                size_t row = off0 + (size_t)(b * sb + h * sh + s * ss) * per;
                for (size_t u = 0; u < (size_t)D * per; u++) {
                    uint32_t *x = &m->map[row + u];
                    if (*x & mask) *dup = 1;
                    *x |= mask;
                }
            }
    return 1;
}

/* Marks a plain byte range (the lse, a per-head array) that fits and starts on a unit. */
int fz_mark_range(fz_model *m, const fz_pool *pool, fz_range r, int bit)
{
    size_t first = (size_t)(r.begin - (uintptr_t)pool->base);
    if (r.begin >= r.end || !fz_range_fits(pool, r) || first % m->unit != 0) return 0;
    size_t last = (size_t)(r.end - (uintptr_t)pool->base);
    for (size_t u = first / m->unit; u < (last + m->unit - 1) / m->unit; u++) m->map[u] |= 1u << bit;
    return 1;
}

/* The documented exception for views whose ranges meet: both row-interleaved with the same row
 * stride w (every batch on a row boundary, every head inside a row) and their column sets disjoint
 * modulo w. 1: it holds, 0: it does not, -1: the harness does not decide (misaligned bases, a
 * pairwise check the library may decline, very wide rows). */
int fz_interleaved_disjoint(const fa_tensor *a, const fa_tensor *b)
{
    const int64_t w = a->stride_seq;
    const size_t es = fz_dtype_bytes(a->dtype);
    /* columns are counted in elements: views of two dtypes (f32 q's group over a half k's) have
     * no common row width, so the exception never holds between them */
    if (a->dtype != b->dtype || es == 0 || w <= 0 || b->stride_seq != w) return 0;
    const fa_tensor *both[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        const fa_tensor *x = both[i];
        if (x->batch > 1 && x->stride_batch % w != 0) return 0;
        /* no overflow: the view's span is valid, and it bounds this sum */
        if ((x->heads - 1) * x->stride_head + x->dim > w) return 0;
    }
    intptr_t gap = (intptr_t)((uintptr_t)b->data - (uintptr_t)a->data);
    if (gap % (intptr_t)es != 0) return -1;
    if ((double)a->heads * (double)b->heads > 65536.0 || w > ((int64_t)1 << 22)) return -1;
    unsigned char *col = calloc((size_t)w, 1);
    if (!col) abort();
    for (int64_t h = 0; h < a->heads; h++)
        for (int64_t x = 0; x < a->dim; x++) col[mod_floor(h * a->stride_head + x, w)] = 1;
    int disjoint = 1;
    const int64_t shift = mod_floor((int64_t)(gap / (intptr_t)es), w);
    for (int64_t h = 0; h < b->heads && disjoint; h++)
        for (int64_t x = 0; x < b->dim; x++)
            if (col[mod_floor(shift + mod_floor(h * b->stride_head + x, w), w)]) {
                disjoint = 0;
                break;
            }
    free(col);
    return disjoint;
}

/* ---- the classes, in the header's order; each returns 1 when a class was found PRESENT ---- */

static int null_data(const fa_tensor *t)
{
    return !t->data && t->batch > 0 && t->heads > 0 && t->seq > 0 && t->dim > 0;
}

static int model_null(const fz_call *c, fz_model *m)
{
    const fa_params p = params_of(c);
    for (int i = 0; i < c->n; i++)
        if (!c->t[i]) fz_set_class(m, C_NULL, FZ_PRESENT, "%s tensor pointer", view_name[i]);
    for (int i = 0; i < c->n && !m->refused; i++)
        if (null_data(c->t[i]))
            fz_set_class(m, C_NULL, FZ_PRESENT, "%s data of a non-empty view", view_name[i]);
    if (p.bias && null_data(p.bias))
        fz_set_class(m, C_NULL, FZ_PRESENT, "%s", "bias data of a non-empty view");
    for (int i = FZ_KSCALE_BIT; i <= FZ_VSCALE_BIT; i++)
        if (view_at(c, i) && null_data(view_at(c, i)))
            fz_set_class(m, C_NULL, FZ_PRESENT, "%s data of a non-empty view", view_name[i]);
    if (k_quantized(c) && !p.k_scale)
        fz_set_class(m, C_NULL, FZ_PRESENT, "%s", "a quantized k without k_scale");
    if (k_quantized(c) && !p.v_scale)
        fz_set_class(m, C_NULL, FZ_PRESENT, "%s", "a quantized k without v_scale");
    if (c->backward && !c->lse) fz_set_class(m, C_NULL, FZ_PRESENT, "%s", "lse of the backward");
    if (c->backward && p.dsinks && !p.sinks)
        fz_set_class(m, C_NULL, FZ_PRESENT, "%s", "dsinks without sinks");
    const fa_tensor *dbias = view_at(c, FZ_DBIAS_BIT);
    if (dbias && null_data(dbias))
        fz_set_class(m, C_NULL, FZ_PRESENT, "%s", "dbias data of a non-empty view");
    if (dbias && !p.bias) fz_set_class(m, C_NULL, FZ_PRESENT, "%s", "dbias without bias");
    return m->refused;
}

static int model_arg(const fz_call *c, fz_model *m)
{
    const fa_params p = params_of(c);
    const int float_scores = c->t[FZ_Q]->dtype != FA_F64;
    if (!isfinite(p.scale))
        fz_set_class(m, C_ARG, FZ_PRESENT, "%s", "scale not finite");
    else if (float_scores && fabs(p.scale) > FLT_MAX)
        fz_set_class(m, C_ARG, FZ_PRESENT, "%s", "scale beyond the float range with float scores");
    if (p.causal != FA_CAUSAL_NONE && p.causal != FA_CAUSAL_TOP_LEFT && p.causal != FA_CAUSAL_BOTTOM_RIGHT)
        fz_set_class(m, C_ARG, FZ_PRESENT, "%s", "unknown causal value");
    if (p.window_left < -1 || p.window_right < -1) fz_set_class(m, C_ARG, FZ_PRESENT, "%s", "window < -1");
    if (p.diagonal_shift > FA_MAX_DIAGONAL_SHIFT || p.diagonal_shift < -FA_MAX_DIAGONAL_SHIFT)
        fz_set_class(m, C_ARG, FZ_PRESENT, "%s", "|diagonal_shift| > FA_MAX_DIAGONAL_SHIFT");
    if (!(p.softcap >= 0.0) || !isfinite(p.softcap))
        fz_set_class(m, C_ARG, FZ_PRESENT, "%s", "softcap negative or NaN/Inf");
    else if (float_scores && p.softcap != 0.0 && (p.softcap < FLT_MIN || p.softcap > FLT_MAX))
        fz_set_class(m, C_ARG, FZ_PRESENT, "%s", "softcap outside float's normal range with float scores");
    if (!(p.dropout_p >= 0.0 && p.dropout_p < 1.0))
        fz_set_class(m, C_ARG, FZ_PRESENT, "%s", "dropout_p NaN, negative or >= 1");
    if (p.dropout_row0 < 0 || p.dropout_key0 < 0)
        fz_set_class(m, C_ARG, FZ_PRESENT, "%s", "a negative dropout origin");
    /* fa_seqs: counts are scalars (a negative one is an invalid argument, as the status list
     * says of FA_ERR_ARG), and paged keys have no packed offsets */
    const fa_seqs *s = p.seqs;
    if (s && s->batch < 0) fz_set_class(m, C_ARG, FZ_PRESENT, "%s", "seqs.batch < 0");
    if (s && s->block_table && s->pages_per_seq < 0)
        fz_set_class(m, C_ARG, FZ_PRESENT, "%s", "seqs.pages_per_seq < 0 with a block table");
    if (s && s->block_table && s->cu_seqlens_k)
        fz_set_class(m, C_ARG, FZ_PRESENT, "%s", "seqs.cu_seqlens_k with a block table");
    /* scales given to a k that is not quantized: refused, not ignored */
    if ((p.k_scale || p.v_scale) && !k_quantized(c))
        fz_set_class(m, C_ARG, FZ_PRESENT, "%s", "k_scale or v_scale with a k that is not quantized");
    return m->refused;
}

/* The pair of dtypes a call may have (flashattn.h, fa_forward): one type throughout (not a quantized
 * one: those are a KV cache's storage only), or f32 q over a bf16, f16 or quantized k. */
static int dtype_pair_allowed(fa_dtype q, fa_dtype k)
{
    if (q == k) return !fz_dtype_quantized(q);
    return q == FA_F32 && (k == FA_BF16 || k == FA_F16 || fz_dtype_quantized(k));
}

/* The header's dtype rules in its order: every dtype known (q, k, v, out, [dout, dq, dk, dv], the
 * bias); the pair (q, k); each of v, out, dout, dq, dk, dv the dtype of its group's leader (k for
 * v, dk, dv; q for out, dout, dq; under half q, k, v the forward's out may be f32, and the backward's
 * dq, dk and dv all three); the bias the
 * accumulation type (f64 for f64 q, else f32). Any of them is FA_ERR_DTYPE; the reason names the
 * first. */
static int model_dtype(const fz_call *c, fz_model *m)
{
    static const int leader[FZ_VIEWS] = {FZ_Q, FZ_K, FZ_K, FZ_Q, FZ_Q, FZ_Q, FZ_K, FZ_K};
    for (int i = 0; i < FZ_CALL_BITS; i = next_view(i)) {
        const fa_tensor *t = view_at(c, i);
        if (t && !dtype_known(t->dtype))
            fz_set_class(m, C_DTYPE, FZ_PRESENT, "unknown dtype of %s", view_name[i]);
    }
    if (m->refused) return 1;
    const fa_dtype q = c->t[FZ_Q]->dtype, k = c->t[FZ_K]->dtype;
    if (!dtype_pair_allowed(q, k))
        fz_set_class(m, C_DTYPE, FZ_PRESENT, "%s", "(q, k) dtypes neither one type nor f32 over bf16/f16");
    /* partial results under half q, k, v: the forward's out may be f32 (for fa_merge), the
     * backward's dq may be f32, and then dk and dv are f32 with it */
    const int half_q = q == FA_BF16 || q == FA_F16;
    const int f32_out = !c->backward && half_q && c->t[FZ_OUT]->dtype == FA_F32;
    const int f32_grads = c->backward && half_q && c->t[FZ_DQ]->dtype == FA_F32;
    for (int i = FZ_V; i < c->n; i++) {
        const int partial = (i == FZ_OUT && f32_out) || (i >= FZ_DQ && f32_grads);
        if (c->t[i]->dtype != (partial ? FA_F32 : c->t[leader[i]]->dtype))
            fz_set_class(m, C_DTYPE, FZ_PRESENT, "dtype of %s differs from its group leader's", view_name[i]);
    }
    const fa_tensor *bias = view_at(c, FZ_BIAS);
    if (bias && bias->dtype != (q == FA_F64 ? FA_F64 : FA_F32))
        fz_set_class(m, C_DTYPE, FZ_PRESENT, "%s", "bias dtype not the accumulation type");
    const fa_tensor *dbias = view_at(c, FZ_DBIAS_BIT);
    if (dbias && dbias->dtype != (q == FA_F64 ? FA_F64 : FA_F32))
        fz_set_class(m, C_DTYPE, FZ_PRESENT, "%s", "dbias dtype not the bias's (the accumulation type)");
    for (int i = FZ_KSCALE_BIT; i <= FZ_VSCALE_BIT; i++) /* the scales: f32 views */
        if (view_at(c, i) && view_at(c, i)->dtype != (q == FA_F64 ? FA_F64 : FA_F32))
            fz_set_class(m, C_DTYPE, FZ_PRESENT, "%s dtype not the accumulation type", view_name[i]);
    return m->refused;
}

/* Whether the library reads the entries of array `which` (all of them: of the table, those of the
 * pages in use are enough, but the harness writes every one) and the model can too. If not, SHAPE
 * is undecided: a misaligned or wrapping array is a STRIDE refusal (model_stride) that the library
 * makes before reading it, any other one the harness must not pass (reads_outside). */
static int seqs_readable(const fa_seqs *s, const fz_pool *pool, int which, fz_model *m)
{
    int64_t n = fz_seqs_entries(s, which);
    fz_range r = seqs_range(s, which);
    if (n == 0) return 1;
    if ((uintptr_t)seqs_array(s, which) % fz_seqs_elem(which) != 0) {
        fz_maybe(m, C_SHAPE);
        return 0;
    }
    if (r.begin < r.end && fz_range_fits(pool, r)) return 1;
    fz_maybe(m, C_SHAPE);
    if (!seqs_wraps(s, which)) m->reads_outside = 1;
    return 0;
}

/* The sequences against the tensors (flashattn.h, fa_seqs): the offsets start at 0, never decrease
 * and end within their token axis; the keys in use lie within each sequence's capacity; the pages
 * of the keys in use lie in the pool; the table's size is representable. The arrays are read from
 * the pool; one that is not inside it (the harness only passes such an array when it wraps around
 * the address space, a STRIDE refusal) leaves SHAPE undecided. On success, m->work counts the
 * sequences' own score pairs. */
static void model_seqs_shape(const fz_call *c, const fz_pool *pool, fz_model *m)
{
    const fa_seqs *s = c->p->seqs;
    const fa_tensor *q = c->t[FZ_Q], *k = c->t[FZ_K], *v = c->t[FZ_V];
    const int64_t batch = s->batch;
    const int64_t *cu[2] = {s->cu_seqlens_q, s->cu_seqlens_k};
    const int64_t total[2] = {q->seq, k->seq};
    int offsets_ok = 1;
    /* the library takes the ranges of both offsets arrays and seqused_k before reading any */
    if (!seqs_readable(s, pool, 0, m) || !seqs_readable(s, pool, 1, m) || !seqs_readable(s, pool, 2, m))
        return;
    for (int a = 0; a < 2; a++) {
        if (!cu[a]) continue;
        int ok = seqs_at(s, a, 0) == 0;
        for (int64_t b = 0; b < batch && ok; b++) ok = seqs_at(s, a, b + 1) >= seqs_at(s, a, b);
        if (ok && seqs_at(s, a, batch) > total[a]) ok = 0;
        if (!ok)
            fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s start at 0, never decrease, end within the axis",
                         a ? "cu_seqlens_k" : "cu_seqlens_q");
        offsets_ok &= ok;
    }
    int64_t paged_capacity = 0, entries;
    if (s->block_table && (__builtin_mul_overflow(s->pages_per_seq, k->seq, &paged_capacity) ||
                           __builtin_mul_overflow(s->pages_per_seq, batch, &entries) ||
                           __builtin_mul_overflow(entries, (int64_t)sizeof(int32_t), &entries))) {
        fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "seqs.pages_per_seq: the table or a capacity overflows");
        return;
    }
    if (!offsets_ok || !seqs_readable(s, pool, 3, m)) return;
    double pairs = 0.0;
    for (int64_t b = 0; b < batch; b++) {
        int64_t capacity = s->cu_seqlens_k  ? seqs_at(s, 1, b + 1) - seqs_at(s, 1, b)
                           : s->block_table ? paged_capacity
                                            : k->seq;
        int64_t used = s->seqused_k ? seqs_at(s, 2, b) : capacity;
        if (used < 0 || used > capacity) {
            fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "seqs.seqused_k beyond the capacity or negative");
            continue;
        }
        if (s->block_table && k->seq > 0) /* the pages of the keys in use (no overflow: used <= capacity) */
            for (int64_t page = 0; page < used / k->seq + (used % k->seq != 0); page++) {
                int64_t at = seqs_at(s, 3, b * s->pages_per_seq + page);
                if (at < 0 || at >= k->batch)
                    fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "a page in use outside the pool");
            }
        pairs += (double)(s->cu_seqlens_q ? seqs_at(s, 0, b + 1) - seqs_at(s, 0, b) : q->seq) * (double)used;
    }
    m->work = pairs * (double)q->heads * (double)(q->dim + v->dim);
}

static int model_shape(const fz_call *c, const fz_pool *pool, fz_model *m)
{
    const fa_tensor *q = c->t[FZ_Q], *k = c->t[FZ_K], *v = c->t[FZ_V], *o = c->t[FZ_OUT];
    const fa_seqs *seqs = c->p ? c->p->seqs : NULL;
    for (int i = 0; i < FZ_CALL_BITS; i = next_view(i)) {
        const fa_tensor *t = view_at(c, i);
        if (t && (t->batch < 0 || t->heads < 0 || t->seq < 0 || t->dim < 0))
            fz_set_class(m, C_SHAPE, FZ_PRESENT, "negative size in %s", view_name[i]);
    }
    if (!seqs && (k->batch != q->batch || v->batch != q->batch || o->batch != q->batch))
        fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "batch sizes differ");
    if (seqs) { /* q: 1 when packed, else one per sequence; k likewise unless paged (a pool of pages) */
        if (o->batch != q->batch || v->batch != k->batch)
            fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "batch sizes differ");
        if (q->batch != (seqs->cu_seqlens_q ? 1 : seqs->batch))
            fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "q.batch disagrees with the sequences");
        if (!seqs->block_table && k->batch != (seqs->cu_seqlens_k ? 1 : seqs->batch))
            fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "k.batch disagrees with the sequences");
    }
    if (o->heads != q->heads || v->heads != k->heads)
        fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "head counts differ");
    if (o->seq != q->seq || v->seq != k->seq)
        fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "sequence lengths differ");
    if (k->dim != q->dim || o->dim != v->dim) fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "head dims differ");
    if (q->dim < 1 || q->dim > FA_MAX_HEAD_DIM || v->dim < 1 || v->dim > FA_MAX_HEAD_DIM)
        fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "D or Dv outside 1..FA_MAX_HEAD_DIM");
    if (q->heads > 0 && (k->heads <= 0 || q->heads % k->heads != 0))
        fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "Hq not a multiple of Hkv");
    if (c->backward) {
        if (!same_shape(c->t[FZ_DOUT], o))
            fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "dout shape != out shape");
        if (!same_shape(c->t[FZ_DQ], q)) fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "dq shape != q shape");
        if (!same_shape(c->t[FZ_DK], k)) fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "dk shape != k shape");
        if (!same_shape(c->t[FZ_DV], v)) fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s", "dv shape != v shape");
    }
    const fa_tensor *bias = view_at(c, FZ_BIAS);
    if (bias) { /* each of batch, heads, seq the problem's or 1; dim = Nk (with sequences the header
                   says no more than FA_ERR_UNSUPPORTED: the shape may or may not be judged first) */
        const int state = seqs ? FZ_MAYBE : FZ_PRESENT;
        if ((bias->batch != q->batch && bias->batch != 1) || (bias->heads != q->heads && bias->heads != 1) ||
            (bias->seq != q->seq && bias->seq != 1))
            fz_set_class(m, C_SHAPE, state, "%s", "bias batch, heads or seq neither the problem's nor 1");
        if (bias->dim != k->seq) fz_set_class(m, C_SHAPE, state, "%s", "bias dim != Nk");
        const fa_tensor *dbias = view_at(c, FZ_DBIAS_BIT);
        if (dbias && !same_shape(dbias, bias))
            fz_set_class(m, C_SHAPE, state, "%s", "dbias sizes != the bias's");
    }
    for (int i = FZ_KSCALE_BIT; i <= FZ_VSCALE_BIT; i++) { /* shaped like k (v) with dim 1, or 1s */
        const fa_tensor *s = view_at(c, i), *of = i == FZ_KSCALE_BIT ? k : v;
        if (!s) continue;
        if ((s->batch != of->batch && s->batch != 1) || (s->heads != of->heads && s->heads != 1) ||
            (s->seq != of->seq && s->seq != 1))
            fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s batch, heads or seq neither its tensor's nor 1",
                         view_name[i]);
        if (s->dim != 1) fz_set_class(m, C_SHAPE, FZ_PRESENT, "%s dim != 1", view_name[i]);
    }
    if (m->refused) return 1;
    m->work =
        (double)q->batch * (double)q->heads * (double)q->seq * (double)k->seq * (double)(q->dim + v->dim);
    if (seqs) model_seqs_shape(c, pool, m);
    if (m->refused) return 1;
    /* Not in the header's list: B·Hq·Nq lse values whose byte count overflows int64. */
    int64_t rows;
    if (__builtin_mul_overflow(q->batch, q->heads, &rows) || __builtin_mul_overflow(rows, q->seq, &rows) ||
        __builtin_mul_overflow(rows, (int64_t)8, &rows))
        fz_maybe(m, C_SHAPE);
    return 0;
}

/* Whether argument `bit` is an output of the call: out and the lse of fa_forward; dq, dk, dv,
 * dsinks and dbias of fa_backward (view_at gives the forward no dbias). */
static int is_output(const fz_call *c, int bit)
{
    if (bit < c->n) return c->is_out[bit];
    if (bit == FZ_LSE_BIT) return c->lse_out;
    return bit == FZ_DSINKS_BIT || bit == FZ_DBIAS_BIT;
}

static int model_stride(const fz_call *c, fz_model *m, int known_dup[FZ_CALL_BITS])
{
    for (int i = 0; i < FZ_CALL_BITS; i = next_view(i)) {
        const fa_tensor *t = view_at(c, i);
        if (t && (t->stride_batch < 0 || t->stride_head < 0 || t->stride_seq < 0))
            fz_set_class(m, C_STRIDE, FZ_PRESENT, "negative stride in %s", view_name[i]);
    }
    if (m->refused) return 1;
    for (int i = 0; i < FZ_CALL_BITS; i = next_view(i)) { /* data must be aligned to its element size */
        const fa_tensor *t = view_at(c, i);
        if (!t || (uintptr_t)t->data % fz_dtype_bytes(t->dtype) == 0) continue;
        if (!fz_view_empty(t))
            fz_set_class(m, C_STRIDE, FZ_PRESENT, "data of %s not aligned to its element size", view_name[i]);
        else
            fz_maybe(m, C_STRIDE); /* an empty view: not said */
    }
    if (c->lse && (uintptr_t)c->lse % (c->t[FZ_Q]->dtype == FA_F64 ? 8u : 4u) != 0) {
        if (fz_lse_bytes(c->t[FZ_Q]))
            fz_set_class(m, C_STRIDE, FZ_PRESENT, "%s not aligned to its element size", "lse");
        else
            fz_maybe(m, C_STRIDE);
    }
    const size_t heads = fz_array_bytes(c->t[FZ_Q]);
    for (int bit = FZ_SLOPES_BIT; bit <= FZ_DSINKS_BIT; bit++) { /* Hq floats, aligned to float */
        const void *a = array_at(c, bit);
        if (!a || !heads) continue;
        if ((uintptr_t)a % sizeof(float) != 0)
            fz_set_class(m, C_STRIDE, FZ_PRESENT, "%s not aligned to float", view_name[bit]);
        else if ((uintptr_t)a > UINTPTR_MAX - heads)
            fz_maybe(m, C_STRIDE); /* address wraps */
    }
    for (int i = 0; i < FZ_CALL_BITS; i = next_view(i)) {
        const fa_tensor *t = view_at(c, i);
        if (!t || fz_view_empty(t)) continue;
        int64_t span = fz_view_span(t), bytes;
        if (span < 0 || __builtin_mul_overflow(span, (int64_t)fz_dtype_bytes(t->dtype), &bytes))
            fz_set_class(m, C_STRIDE, FZ_PRESENT, "offsets of %s overflow int64", view_name[i]);
        else if ((uintptr_t)t->data > UINTPTR_MAX - (uintptr_t)bytes)
            fz_maybe(m, C_STRIDE); /* address wraps */
    }
    if (c->lse && fz_lse_bytes(c->t[FZ_Q]) > UINTPTR_MAX - (uintptr_t)c->lse) fz_maybe(m, C_STRIDE);
    const fa_seqs *seqs = c->p ? c->p->seqs : NULL;
    for (int which = 0; seqs && which < 4; which++) { /* the sequences' arrays: inputs like sinks */
        if (fz_seqs_entries(seqs, which) == 0) continue;
        if ((uintptr_t)seqs_array(seqs, which) % fz_seqs_elem(which) != 0)
            fz_set_class(m, C_STRIDE, FZ_PRESENT, "%s not aligned to its elements",
                         view_name[FZ_CUQ_BIT + which]);
        else if (seqs_wraps(seqs, which))
            fz_set_class(m, C_STRIDE, FZ_PRESENT, "%s wraps around the address space",
                         view_name[FZ_CUQ_BIT + which]);
    }
    const fa_tensor *dbias = view_at(c, FZ_DBIAS_BIT), *bias = view_at(c, FZ_BIAS);
    if (dbias && bias && !fz_view_empty(dbias)) { /* stride 0 where the bias broadcasts by a stride of 0 */
        const int64_t size[3] = {dbias->batch, dbias->heads, dbias->seq};
        const int64_t bias_stride[3] = {bias->stride_batch, bias->stride_head, bias->stride_seq};
        const int64_t stride[3] = {dbias->stride_batch, dbias->stride_head, dbias->stride_seq};
        for (int a = 0; a < 3; a++)
            if (size[a] > 1 && bias_stride[a] == 0 && stride[a] != 0)
                fz_set_class(m, C_STRIDE, FZ_PRESENT, "%s", "dbias not broadcast where the bias is");
    }
    if (m->refused) return 1;
    fa_tensor tmp;
    for (int i = 0; i < FZ_CALL_BITS; i = next_view(i)) {
        const fa_tensor *t = written_view(c, i, &tmp);
        if (!t || !is_output(c, i) || fz_view_empty(t)) continue;
        const int64_t size[3] = {t->batch, t->heads, t->seq};
        const int64_t stride[3] = {t->stride_batch, t->stride_head, t->stride_seq};
        int repeated = 0; /* an axis of size > 1 with stride 0 gives two elements one address */
        for (int a = 0; a < 3; a++) repeated |= size[a] > 1 && stride[a] == 0;
        if (repeated || known_dup[i])
            fz_set_class(m, C_STRIDE, FZ_PRESENT, "output %s overlaps itself", view_name[i]);
        else if (i == FZ_DBIAS_BIT ? c->dbias_raw : c->raw[i])
            fz_maybe(m, C_STRIDE);
    }
    return m->refused;
}

/* The range of argument `bit`, and whether the call has it. */
static int arg_range(const fz_call *c, int bit, fz_range *r)
{
    if (is_view_bit(c, bit)) {
        const fa_tensor *t = view_at(c, bit);
        if (!t) return 0;
        *r = fz_view_range(t);
        return 1;
    }
    if (bit >= c->n && bit < FZ_VIEWS) return 0;
    if (bit == FZ_LSE_BIT) {
        *r = fz_plain_range(c->lse, c->lse ? fz_lse_bytes(c->t[FZ_Q]) : 0);
        return c->lse != NULL;
    }
    if (bit >= FZ_CUQ_BIT && bit <= FZ_TABLE_BIT) {
        const fa_seqs *s = c->p ? c->p->seqs : NULL;
        *r = seqs_range(s, bit - FZ_CUQ_BIT);
        return seqs_array(s, bit - FZ_CUQ_BIT) != NULL;
    }
    if (bit >= FZ_CALL_BITS) return 0;
    const void *a = array_at(c, bit);
    *r = fz_plain_range(a, fz_array_bytes(c->t[FZ_Q]));
    return a != NULL;
}

void fz_view_strides(fz_model *m, const fa_tensor *t)
{
    if (t->stride_batch < 0 || t->stride_head < 0 || t->stride_seq < 0)
        fz_set_class(m, FZ_C_STRIDE, FZ_PRESENT, "%s", "a negative stride");
    if (fz_view_empty(t)) return;
    if ((uintptr_t)t->data % fz_dtype_bytes(t->dtype) != 0)
        fz_set_class(m, FZ_C_STRIDE, FZ_PRESENT, "%s", "data not aligned to its element size");
    int64_t span = fz_view_span(t), bytes;
    if (span < 0 && t->stride_batch >= 0 && t->stride_head >= 0 && t->stride_seq >= 0)
        fz_set_class(m, FZ_C_STRIDE, FZ_PRESENT, "%s", "offsets overflow int64");
    else if (span >= 0 && __builtin_mul_overflow(span, (int64_t)fz_dtype_bytes(t->dtype), &bytes))
        fz_set_class(m, FZ_C_STRIDE, FZ_PRESENT, "%s", "byte offsets overflow int64");
    else if (span >= 0 && (uintptr_t)t->data > UINTPTR_MAX - (uintptr_t)bytes)
        fz_maybe(m, FZ_C_STRIDE);
}

void fz_alias_views(fz_model *m, const fa_tensor *a, const fa_tensor *b, int known, int share,
                    const char *what)
{
    int ex = fz_interleaved_disjoint(a, b);
    if (ex == 1 && share) {
        fprintf(stderr, "fuzz model: %s interleaved-disjoint yet sharing elements\n", what);
        abort(); /* the harness contradicts itself */
    }
    if (share)
        fz_set_class(m, C_ALIAS, FZ_PRESENT, "%s share elements", what);
    else if (ex == 0)
        fz_set_class(m, C_ALIAS, FZ_PRESENT, "%s ranges meet, not interleaved-disjoint", what);
    else if (ex < 0 && !known && a->data == b->data)
        fz_set_class(m, C_ALIAS, FZ_PRESENT, "%s start at the same address", what);
    else if (ex < 0)
        fz_maybe(m, C_ALIAS);
}

static int model_alias(const fz_call *c, fz_model *m, const unsigned shared[FZ_BITS])
{
    fz_range r[FZ_BITS];
    int has[FZ_BITS];
    for (int i = 0; i < FZ_BITS; i++) has[i] = arg_range(c, i, &r[i]);
    for (int o = 0; o < FZ_BITS; o++) {
        if (!has[o] || !is_output(c, o)) continue;
        for (int x = 0; x < FZ_BITS; x++) {
            if (x == o || !has[x] || (is_output(c, x) && x < o)) continue; /* each pair once */
            if (!fz_ranges_meet(r[o], r[x])) continue;
            char what[40];
            snprintf(what, sizeof what, "%s/%s", view_name[o], view_name[x]);
            const int views = is_view_bit(c, o) && is_view_bit(c, x);
            if (!views) { /* the lse and the arrays are plain ranges: meeting is overlapping */
                fz_set_class(m, C_ALIAS, FZ_PRESENT, "%s ranges meet", what);
                continue;
            }
            int both_known = m->marked[o] && m->marked[x];
            fa_tensor tmp_o, tmp_x;
            fz_alias_views(m, written_view(c, o, &tmp_o), written_view(c, x, &tmp_x), both_known,
                           both_known && (shared[o] >> x & 1u), what);
        }
    }
    return m->refused;
}

static int model_unsupported(const fz_call *c, fz_model *m)
{
    const fa_seqs *seqs = c->p ? c->p->seqs : NULL;
    if (seqs && c->p->bias) fz_set_class(m, C_UNSUPPORTED, FZ_PRESENT, "%s", "a bias with sequences");
    if (seqs && c->backward && seqs->block_table)
        fz_set_class(m, C_UNSUPPORTED, FZ_PRESENT, "%s", "paged keys in the backward");
    if (c->backward && k_quantized(c))
        fz_set_class(m, C_UNSUPPORTED, FZ_PRESENT, "%s", "the gradients of a quantized cache");
    /* dropout's counter holds rows below 2^32 and keys below 2^34 (a paged capacity counts) */
    const fa_params p = params_of(c); /* dropout's fields lie past the smallest struct_size */
    if (p.dropout_p != 0.0) {
        const fa_tensor *q = view_at(c, 0), *k = view_at(c, 1);
        int64_t keys = k->seq;
        if (seqs && seqs->block_table && __builtin_mul_overflow(seqs->pages_per_seq, k->seq, &keys))
            keys = INT64_MAX;
        if (q->seq > ((int64_t)1 << 32) || keys > ((int64_t)1 << 34))
            fz_set_class(m, C_UNSUPPORTED, FZ_PRESENT, "%s", "dropout past its counter's rows or keys");
        /* the origins count: the last row is dropout_row0 + Nq - 1 (both origins >= 0 here) */
        else if (p.dropout_row0 > ((int64_t)1 << 32) - q->seq || p.dropout_key0 > ((int64_t)1 << 34) - keys)
            fz_set_class(m, C_UNSUPPORTED, FZ_PRESENT, "%s",
                         "dropout's origins past its counter's rows or keys");
    }
    return m->refused;
}

/* Whether every non-empty view, the lse and the arrays the call reads or writes lie inside the
 * pool (alignment aside). */
static int all_fit(const fz_call *c, const fz_pool *pool)
{
    for (int bit = 0; bit < FZ_BITS; bit++) {
        fz_range r;
        if (!arg_range(c, bit, &r)) continue;
        if (is_view_bit(c, bit)) {
            const fa_tensor *t = view_at(c, bit);
            if (!fz_view_empty(t) && !fz_view_fits(pool, t)) return 0;
        } else if (r.begin < r.end && !fz_range_fits(pool, r))
            return 0;
        else if (bit >= FZ_CUQ_BIT && bit <= FZ_TABLE_BIT) {
            if (r.begin == r.end && fz_seqs_entries(c->p->seqs, bit - FZ_CUQ_BIT) != 0)
                return 0; /* entries that wrap, or too many to count */
        } else if (r.begin == r.end &&
                   (bit == FZ_LSE_BIT ? fz_lse_bytes(c->t[FZ_Q]) : fz_array_bytes(c->t[FZ_Q])))
            return 0; /* non-empty but wrapping around the address space */
    }
    return 1;
}

void fz_map_alloc(fz_model *m, const fz_pool *pool, size_t es)
{
    m->unit = es < sizeof(float) ? es : sizeof(float);
    m->units = pool->bytes / m->unit;
    m->map = calloc(m->units + 1, sizeof *m->map);
    if (!m->map) abort();
}

void fz_shared_bits(const fz_model *m, unsigned shared[FZ_BITS])
{
    for (int i = 0; i < FZ_BITS; i++) shared[i] = 0;
    for (size_t u = 0; u < m->units; u++) {
        unsigned bits = m->map[u];
        if ((bits & (bits - 1)) == 0) continue;
        for (int i = 0; i < FZ_BITS; i++)
            if (bits >> i & 1u) shared[i] |= bits & ~(1u << i);
    }
}

/* The header's reading rule (its ABI section) for p and then p.seqs, before every other check: a
 * struct whose size or bytes it refuses is the one status the call may return. */
static int model_structs(const fz_call *c, fz_model *m)
{
    static const char *const what[2] = {"p", "p.seqs"};
    const void *s[2] = {c->p, NULL};
    const size_t min[2] = {FA_PARAMS_SIZE_MIN, FA_SEQS_SIZE_MIN},
                 own[2] = {sizeof(fa_params), sizeof(fa_seqs)};
    for (int i = 0; i < 2; i++) {
        if (!s[i]) return 0;
        fa_status st = fz_abi_read_status(s[i], min[i], own[i]);
        if (st != FA_OK) {
            fz_set_class(m, st == FA_ERR_ARG ? FZ_C_ARG : FZ_C_UNSUPPORTED, FZ_PRESENT,
                         st == FA_ERR_ARG ? "%s: struct_size out of range"
                                          : "%s: a field this library does not know",
                         what[i]);
            return 1;
        }
        if (i == 0) s[1] = c->p->seqs;
    }
    return 0;
}

void fz_model_call(const fz_call *c, const fz_pool *pool, fz_model *m)
{
    if (c->merge) {
        fz_model_merge(c, pool, m);
        return;
    }
    if (c->convert) {
        fz_model_convert(c, pool, m);
        return;
    }
    memset(m, 0, sizeof *m);
    if (model_structs(c, m)) return;
    m->all_fit = model_null(c, m) ? 0 : all_fit(c, pool);
    if (m->refused || model_arg(c, m) || model_dtype(c, m) || model_shape(c, pool, m)) return;

    /* Known dtypes from here on (q's group, k's group, the bias): map the pool in units that
     * divide every element size. */
    size_t es_min = fz_dtype_bytes(c->t[FZ_Q]->dtype);
    for (int i = 0; i < FZ_CALL_BITS; i = next_view(i)) {
        const fa_tensor *t = view_at(c, i);
        if (t && fz_dtype_bytes(t->dtype) < es_min) es_min = fz_dtype_bytes(t->dtype);
    }
    fz_map_alloc(m, pool, es_min);
    int dup[FZ_CALL_BITS] = {0}, dup_input = 0; /* an input's repeated elements are no self-overlap */
    for (int i = 0; i < FZ_CALL_BITS; i = next_view(i)) {
        fa_tensor tmp;
        const fa_tensor *t = written_view(c, i, &tmp);
        const int input = !is_output(c, i);
        if (t && fz_view_fits(pool, t) && t->stride_batch >= 0 && t->stride_head >= 0 && t->stride_seq >= 0)
            m->marked[i] = fz_mark_view(m, pool, t, i, input, input ? &dup_input : &dup[i]);
    }
    for (int bit = FZ_LSE_BIT; bit <= FZ_TABLE_BIT; bit++) { /* the plain ranges */
        fz_range r;
        if (arg_range(c, bit, &r)) m->marked[bit] = fz_mark_range(m, pool, r, bit);
    }
    /* what a successful call may write: its outputs' elements */
    m->out_bits = c->lse_out ? 1u << FZ_LSE_BIT : 0u;
    m->outputs_mapped = 1;
    for (int i = 0; i < c->n; i++)
        if (c->is_out[i]) {
            m->out_bits |= 1u << i;
            if (!fz_view_empty(c->t[i]) && !m->marked[i]) m->outputs_mapped = 0;
        }
    if (c->backward && c->p && c->p->dsinks) {
        m->out_bits |= 1u << FZ_DSINKS_BIT;
        if (c->t[FZ_Q]->heads > 0 && !m->marked[FZ_DSINKS_BIT]) m->outputs_mapped = 0;
    }
    if (view_at(c, FZ_DBIAS_BIT)) {
        m->out_bits |= 1u << FZ_DBIAS_BIT;
        if (!fz_view_empty(view_at(c, FZ_DBIAS_BIT)) && !m->marked[FZ_DBIAS_BIT]) m->outputs_mapped = 0;
    }
    unsigned shared[FZ_BITS];
    fz_shared_bits(m, shared);
    if (model_stride(c, m, dup) || model_alias(c, m, shared) || model_unsupported(c, m)) return;
}

void fz_model_free(fz_model *m)
{
    free(m->map);
    m->map = NULL;
}

int fz_status_allowed(const fz_model *m, fa_status st)
{
    for (int c = 0; c < FZ_CLASSES; c++) {
        if (m->state[c] != FZ_ABSENT && st == fz_class_status[c]) return 1;
        if (m->state[c] == FZ_PRESENT) return 0;
    }
    return st == FA_OK;
}

void fz_model_describe(const fz_model *m, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
    for (int c = 0; c < FZ_CLASSES && used < size; c++) {
        if (m->state[c] == FZ_ABSENT) continue;
        used += (size_t)snprintf(buf + used, size - used, "%s%s(%s)", used ? " " : "", class_name[c],
                                 m->state[c] == FZ_PRESENT ? "present" : "maybe");
        if (m->state[c] == FZ_PRESENT) break;
    }
    if (!m->refused && used < size) snprintf(buf + used, size - used, "%sOK", used ? " or " : "");
}
