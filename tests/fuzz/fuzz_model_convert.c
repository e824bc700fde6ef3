/* SPDX-License-Identifier: BSD-3-Clause */
/* The statuses include/flashattn.h lets fa_convert(dst, src) return (fuzz_model.h): dst is t[FZ_OUT],
 * src t[FZ_Q]. Refused: dst or src NULL, then the data of a non-empty one NULL (FA_ERR_NULL); an
 * unknown dtype of either, a quantized dst (FA_ERR_DTYPE); a negative size, dst's sizes other than
 * src's (FA_ERR_SHAPE); negative strides, data not aligned to its element size, offsets that overflow
 * int64 or wrap, dst overlapping itself (FA_ERR_STRIDE); dst overlapping src (FA_ERR_ALIAS). A
 * quantized src is converted, not refused. */
#include <string.h>

#include "fuzz_model.h"

static int null_data(const fa_tensor *t)
{
    return !t->data && !fz_view_empty(t) && t->batch > 0 && t->heads > 0 && t->seq > 0 && t->dim > 0;
}

static int convert_null_dtype_shape(const fa_tensor *dst, const fa_tensor *src, fz_model *m)
{
    if (!dst || !src) {
        fz_set_class(m, FZ_C_NULL, FZ_PRESENT, "%s", "dst or src NULL");
        return 1;
    }
    if (null_data(dst) || null_data(src))
        fz_set_class(m, FZ_C_NULL, FZ_PRESENT, "%s", "the data of a non-empty view NULL");
    if (m->refused) return 1;
    if (!fz_dtype_bytes(dst->dtype) || !fz_dtype_bytes(src->dtype))
        fz_set_class(m, FZ_C_DTYPE, FZ_PRESENT, "%s", "an unknown dtype");
    else if (fz_dtype_quantized(dst->dtype))
        fz_set_class(m, FZ_C_DTYPE, FZ_PRESENT, "%s", "a quantized dst");
    if (m->refused) return 1;
    const fa_tensor *both[2] = {dst, src};
    for (int x = 0; x < 2; x++)
        if (both[x]->batch < 0 || both[x]->heads < 0 || both[x]->seq < 0 || both[x]->dim < 0)
            fz_set_class(m, FZ_C_SHAPE, FZ_PRESENT, "%s", "a negative size");
    if (dst->batch != src->batch || dst->heads != src->heads || dst->seq != src->seq || dst->dim != src->dim)
        fz_set_class(m, FZ_C_SHAPE, FZ_PRESENT, "%s", "dst's sizes differ from src's");
    return m->refused;
}

static int convert_stride(const fa_tensor *dst, const fa_tensor *src, fz_model *m, int dst_dup, int dst_raw)
{
    fz_view_strides(m, dst);
    fz_view_strides(m, src);
    if (m->refused || fz_view_empty(dst)) return m->refused;
    int repeated = (dst->batch > 1 && dst->stride_batch == 0) || (dst->heads > 1 && dst->stride_head == 0) ||
                   (dst->seq > 1 && dst->stride_seq == 0);
    if (repeated || dst_dup)
        fz_set_class(m, FZ_C_STRIDE, FZ_PRESENT, "%s", "dst overlaps itself");
    else if (dst_raw)
        fz_maybe(m, FZ_C_STRIDE); /* the library's test may refuse more than the element map shows */
    return m->refused;
}

void fz_model_convert(const fz_call *c, const fz_pool *pool, fz_model *m)
{
    memset(m, 0, sizeof *m);
    const fa_tensor *dst = c->t[FZ_OUT], *src = c->t[FZ_Q];
    if (convert_null_dtype_shape(dst, src, m)) return;
    m->all_fit =
        (fz_view_empty(dst) || fz_view_fits(pool, dst)) && (fz_view_empty(src) || fz_view_fits(pool, src));
    /* elements, against the budget of one call: the harness checks each one */
    m->work = (double)dst->batch * (double)dst->heads * (double)dst->seq * (double)dst->dim;
    size_t es = fz_dtype_bytes(dst->dtype) < fz_dtype_bytes(src->dtype) ? fz_dtype_bytes(dst->dtype)
                                                                        : fz_dtype_bytes(src->dtype);
    fz_map_alloc(m, pool, es);
    int dst_dup = 0, src_dup = 0; /* src is an input: elements it shares are no error */
    const fa_tensor *both[2] = {src, dst};
    for (int x = 0; x < 2; x++) {
        const fa_tensor *t = both[x];
        if (fz_view_fits(pool, t) && t->stride_batch >= 0 && t->stride_head >= 0 && t->stride_seq >= 0)
            m->marked[x] = fz_mark_view(m, pool, t, x, x == 0, x ? &dst_dup : &src_dup);
    }
    m->out_bits = 1u << FZ_CONVERT_DST_BIT;
    m->outputs_mapped = fz_view_empty(dst) || m->marked[FZ_CONVERT_DST_BIT];
    unsigned shared[FZ_BITS];
    fz_shared_bits(m, shared);
    if (convert_stride(dst, src, m, dst_dup, c->raw[FZ_OUT])) return;
    if (fz_ranges_meet(fz_view_range(dst), fz_view_range(src))) {
        int known = m->marked[FZ_CONVERT_SRC_BIT] && m->marked[FZ_CONVERT_DST_BIT];
        fz_alias_views(m, dst, src, known, known && (shared[FZ_CONVERT_DST_BIT] >> FZ_CONVERT_SRC_BIT & 1u),
                       "dst/src");
    }
}
