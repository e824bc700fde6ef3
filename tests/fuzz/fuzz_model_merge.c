/* SPDX-License-Identifier: BSD-3-Clause */
/* The statuses include/flashattn.h lets fa_merge return (fuzz_model.h): n >= 1 parts outs[k] of one
 * shape [B][H][Nq][Dv] (Dv in 1..FA_MAX_HEAD_DIM) and one dtype, each with its lse lses[k]
 * ([B][H][Nq] of the accumulation type: float for FA_F32, FA_BF16 and FA_F16), merged into out
 * (the parts' shape and dtype) and lse (NULL, or like lses[k]). Refused: outs, lses, out, a part's
 * data or a part's lse NULL; n < 1; mixed dtypes (f32 with bf16/f16 among them); a size that
 * differs from outs[0]'s or Dv out of range; strides as fa_forward; out or lse overlapping a part,
 * its lse or each other. Quantized parts or out (a KV cache's storage only) are FA_ERR_DTYPE.
 *
 * Parts from the ninth on get no bits of their own in the element map: the harness repeats the
 * first eight, and a later part that is no copy of one of them leaves ALIAS undecided. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_model.h"

static const fa_tensor *part(const fz_call *c, int k)
{
    return &c->outs[k];
}

static int null_data(const fa_tensor *t)
{
    return !t->data && !fz_view_empty(t) && t->batch > 0 && t->heads > 0 && t->seq > 0 && t->dim > 0;
}

/* The views of the call: parts 0..n-1 (k >= 0) and out (k = -1). */
static const fa_tensor *view_of(const fz_call *c, int k)
{
    return k < 0 ? c->t[FZ_OUT] : part(c, k);
}

static int merge_null(const fz_call *c, fz_model *m)
{
    if (!c->outs) fz_set_class(m, FZ_C_NULL, FZ_PRESENT, "%s", "outs NULL");
    if (!c->lses) fz_set_class(m, FZ_C_NULL, FZ_PRESENT, "%s", "lses NULL");
    if (!c->t[FZ_OUT])
        fz_set_class(m, FZ_C_NULL, FZ_PRESENT, "%s", "out NULL");
    else if (null_data(c->t[FZ_OUT]))
        fz_set_class(m, FZ_C_NULL, FZ_PRESENT, "%s", "out data of a non-empty view");
    if (m->refused || c->parts < 1) return m->refused;
    for (int k = 0; k < c->parts; k++) {
        if (null_data(part(c, k))) fz_set_class(m, FZ_C_NULL, FZ_PRESENT, "%s", "a part's data NULL");
        if (!c->lses[k]) { /* the header says nothing of an empty part's lse: it has no row */
            if (!fz_view_empty(part(c, k)))
                fz_set_class(m, FZ_C_NULL, FZ_PRESENT, "%s", "a part's lse NULL");
            else
                fz_maybe(m, FZ_C_NULL);
        }
    }
    return m->refused;
}

static int merge_dtype_shape(const fz_call *c, fz_model *m)
{
    const fa_tensor *first = part(c, 0);
    for (int k = -1; k < c->parts; k++) {
        fa_dtype t = view_of(c, k)->dtype;
        if (!fz_dtype_bytes(t))
            fz_set_class(m, FZ_C_DTYPE, FZ_PRESENT, "%s", "an unknown dtype");
        else if (fz_dtype_quantized(t)) /* a KV cache's storage only (flashattn.h, fa_dtype) */
            fz_set_class(m, FZ_C_DTYPE, FZ_PRESENT, "%s", "a quantized part or out");
        else if (t != first->dtype)
            fz_set_class(m, FZ_C_DTYPE, FZ_PRESENT, "%s", "dtypes differ");
    }
    if (m->refused) return 1;
    for (int k = -1; k < c->parts; k++) {
        const fa_tensor *t = view_of(c, k);
        if (t->batch < 0 || t->heads < 0 || t->seq < 0 || t->dim < 0)
            fz_set_class(m, FZ_C_SHAPE, FZ_PRESENT, "%s", "a negative size");
        if (t->batch != first->batch || t->heads != first->heads || t->seq != first->seq ||
            t->dim != first->dim)
            fz_set_class(m, FZ_C_SHAPE, FZ_PRESENT, "%s", "a size differs from outs[0]'s");
    }
    if (!m->refused && (first->dim < 1 || first->dim > FA_MAX_HEAD_DIM))
        fz_set_class(m, FZ_C_SHAPE, FZ_PRESENT, "%s", "Dv outside 1..FA_MAX_HEAD_DIM");
    return m->refused;
}

/* The lse of out's shape: its bytes, and whether lse `at` is aligned and does not wrap. */
static void merge_lse_stride(fz_model *m, const void *at, const fa_tensor *out, const char *what)
{
    size_t bytes = fz_lse_bytes(out), elem = out->dtype == FA_F64 ? 8u : 4u;
    if (!at || !bytes) {
        if (at && (uintptr_t)at % elem != 0) fz_maybe(m, FZ_C_STRIDE); /* no row: not said */
        return;
    }
    if ((uintptr_t)at % elem != 0)
        fz_set_class(m, FZ_C_STRIDE, FZ_PRESENT, "%s not aligned to its elements", what);
    else if ((uintptr_t)at > UINTPTR_MAX - bytes)
        fz_maybe(m, FZ_C_STRIDE); /* wraps */
}

static int merge_stride(const fz_call *c, fz_model *m, int out_dup, int out_raw)
{
    for (int k = -1; k < c->parts; k++) fz_view_strides(m, view_of(c, k));
    const fa_tensor *out = c->t[FZ_OUT];
    merge_lse_stride(m, c->lse, out, "lse");
    for (int k = 0; k < c->parts; k++) merge_lse_stride(m, c->lses[k], out, "a part's lse");
    if (m->refused) return 1;
    if (!fz_view_empty(out)) { /* out must not overlap itself */
        int repeated = (out->batch > 1 && out->stride_batch == 0) ||
                       (out->heads > 1 && out->stride_head == 0) || (out->seq > 1 && out->stride_seq == 0);
        if (repeated || out_dup)
            fz_set_class(m, FZ_C_STRIDE, FZ_PRESENT, "%s", "out overlaps itself");
        else if (out_raw)
            fz_maybe(m, FZ_C_STRIDE);
    }
    return m->refused;
}

/* Field by field (a struct's padding bytes are no part of it). */
static int same_view(const fa_tensor *a, const fa_tensor *b)
{
    return a->data == b->data && a->dtype == b->dtype && a->batch == b->batch && a->heads == b->heads &&
           a->seq == b->seq && a->dim == b->dim && a->stride_batch == b->stride_batch &&
           a->stride_head == b->stride_head && a->stride_seq == b->stride_seq;
}

/* The bit of part k, or -1 for a later part: *repeat says whether it copies one of the first ones. */
static int part_bit(const fz_call *c, int k, int *repeat)
{
    *repeat = 1;
    if (k < FZ_MERGE_SEEN) return k;
    *repeat = 0;
    for (int j = 0; j < FZ_MERGE_SEEN; j++)
        if (same_view(part(c, k), part(c, j))) *repeat = 1;
    return -1;
}

static int merge_alias(const fz_call *c, fz_model *m, const unsigned shared[FZ_BITS])
{
    const fa_tensor *out = c->t[FZ_OUT];
    const size_t lse_bytes = fz_lse_bytes(out);
    const fz_range out_r = fz_view_range(out), lse_r = fz_plain_range(c->lse, c->lse ? lse_bytes : 0);
    if (fz_ranges_meet(out_r, lse_r)) fz_set_class(m, FZ_C_ALIAS, FZ_PRESENT, "%s", "out/lse ranges meet");
    for (int k = 0; k < c->parts; k++) {
        int repeat, bit = part_bit(c, k, &repeat);
        const fa_tensor *t = part(c, k);
        fz_range pr = fz_view_range(t), lr = fz_plain_range(c->lses[k], c->lses[k] ? lse_bytes : 0);
        if (fz_ranges_meet(lr, out_r) || fz_ranges_meet(lr, lse_r))
            fz_set_class(m, FZ_C_ALIAS, FZ_PRESENT, "%s", "out or lse over a part's lse");
        if (fz_ranges_meet(pr, lse_r)) fz_set_class(m, FZ_C_ALIAS, FZ_PRESENT, "%s", "lse over a part");
        if (!fz_ranges_meet(pr, out_r)) continue;
        if (bit < 0 && !repeat) { /* a part the map does not know */
            fz_maybe(m, FZ_C_ALIAS);
            continue;
        }
        if (bit < 0) continue; /* the same as an earlier part: judged there */
        int known = m->marked[bit] && m->marked[FZ_MERGE_OUT_BIT];
        fz_alias_views(m, out, t, known, known && (shared[FZ_MERGE_OUT_BIT] >> bit & 1u), "out/a part");
    }
    return m->refused;
}

/* Every view and lse inside the pool. */
static int merge_fits(const fz_call *c, const fz_pool *pool)
{
    const fa_tensor *out = c->t[FZ_OUT];
    const size_t lse_bytes = fz_lse_bytes(out);
    for (int k = -1; k < c->parts; k++) {
        const fa_tensor *t = view_of(c, k);
        if (!fz_view_empty(t) && !fz_view_fits(pool, t)) return 0;
        const void *l = k < 0 ? c->lse : c->lses[k];
        fz_range r = fz_plain_range(l, l ? lse_bytes : 0);
        if (l && lse_bytes && (r.begin == r.end || !fz_range_fits(pool, r))) return 0;
    }
    return 1;
}

void fz_model_merge(const fz_call *c, const fz_pool *pool, fz_model *m)
{
    memset(m, 0, sizeof *m);
    if (merge_null(c, m)) return;
    if (c->parts < 1) {
        fz_set_class(m, FZ_C_ARG, FZ_PRESENT, "%s", "n < 1");
        return;
    }
    m->all_fit = merge_fits(c, pool);
    if (merge_dtype_shape(c, m)) return;
    const fa_tensor *out = c->t[FZ_OUT];
    m->work =
        (double)c->parts * (double)out->batch * (double)out->heads * (double)out->seq * (double)out->dim;
    fz_map_alloc(m, pool, fz_dtype_bytes(out->dtype));
    int out_dup = 0, part_dup = 0; /* parts are inputs: elements they share are no error */
    const size_t lse_bytes = fz_lse_bytes(out);
    if (fz_view_fits(pool, out) && out->stride_batch >= 0 && out->stride_head >= 0 && out->stride_seq >= 0)
        m->marked[FZ_MERGE_OUT_BIT] = fz_mark_view(m, pool, out, FZ_MERGE_OUT_BIT, 0, &out_dup);
    if (c->lse)
        m->marked[FZ_MERGE_LSE_BIT] =
            fz_mark_range(m, pool, fz_plain_range(c->lse, lse_bytes), FZ_MERGE_LSE_BIT);
    for (int k = 0; k < c->parts && k < FZ_MERGE_SEEN; k++) {
        const fa_tensor *t = part(c, k);
        if (fz_view_fits(pool, t) && t->stride_batch >= 0 && t->stride_head >= 0 && t->stride_seq >= 0)
            m->marked[k] = fz_mark_view(m, pool, t, k, 1, &part_dup);
        if (c->lses[k])
            m->marked[FZ_MERGE_LSES + k] =
                fz_mark_range(m, pool, fz_plain_range(c->lses[k], lse_bytes), FZ_MERGE_LSES + k);
    }
    m->out_bits = 1u << FZ_MERGE_OUT_BIT | (c->lse ? 1u << FZ_MERGE_LSE_BIT : 0u);
    m->outputs_mapped = (fz_view_empty(out) || m->marked[FZ_MERGE_OUT_BIT]) &&
                        (!c->lse || !lse_bytes || m->marked[FZ_MERGE_LSE_BIT]);
    unsigned shared[FZ_BITS];
    fz_shared_bits(m, shared);
    /* bf16 and f16 parts merge too (into an out of their dtype): nothing is unsupported */
    if (merge_stride(c, m, out_dup, c->raw[FZ_OUT]) || merge_alias(c, m, shared)) return;
}
