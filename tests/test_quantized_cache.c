/* SPDX-License-Identifier: BSD-3-Clause */
/* Quantized KV caches (include/flashattn.h: FA_I8, FA_F8_E4M3, FA_F8_E5M2 with fa_params.k_scale and
 * v_scale). The contract's invariant, bit for bit: a call over a quantized cache computes what an
 * FA_F32 call over the dequantized cache (each element converted exactly, times its row's scale,
 * one float multiplication) computes, with the same context. Held here for every type, every scale
 * layout (one per tensor, per head, per token and head, per token for all heads, per token and head
 * stored after each row's codes in the cache's memory), decode steps
 * (which read the cache in place: 1-4 query rows, grouped GQA rows, split keys) and longer query
 * blocks (which widen tiles), both memory orders, masks, packed and paged batches (pages of 1, 16
 * and 256 keys, the scales a pool read through the same table); at 1-4 threads, and on the
 * kernel table the run has (scripts/test.sh runs the suite on every table this CPU has). NaN codes
 * (and NaN scales) reach exactly the rows that see their keys. The refusals of the scales' arguments,
 * with nothing written, are at the end. A NaN equals a NaN in the comparisons whatever its payload
 * (test_kernel_stored.c says why); every other bit must match. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/quant.h"
#include "util.h"

/* INLINE: per token and head, each scale in k's (v's) own memory right after its row's codes (rows
 * padded to 4 bytes), the scale view aliasing the cache, which the header allows. */
typedef enum { PER_TENSOR, PER_HEAD, PER_TOKEN_HEAD, PER_TOKEN, INLINE, SCALE_LAYOUTS } scale_layout;
static const char *const layout_name[SCALE_LAYOUTS] = {"per tensor", "per head", "per token and head",
                                                       "per token", "inline after each row"};
static const fa_dtype qtypes[3] = {FA_I8, FA_F8_E4M3, FA_F8_E5M2};

/* A code of type t whose value is O(1) after the type's typical scale (below), never a NaN or an
 * infinity unless asked. */
static uint8_t draw_code(fa_dtype t, tu_rng *rng)
{
    for (;;) {
        uint8_t c = (uint8_t)tu_rng_below(rng, 256);
        if (t == FA_I8) return c;
        if (!isfinite(t == FA_F8_E4M3 ? fa_f8e4m3_to_f32(c) : fa_f8e5m2_to_f32(c))) continue;
        return c;
    }
}

static float typical_scale(fa_dtype t)
{
    return t == FA_I8 ? 1.0f / 127 : t == FA_F8_E4M3 ? 1.0f / 64 : 1.0f / 4096;
}

/* One cache tensor (k or v) in its quantized form and dequantized, same layout, and its scales. */
typedef struct {
    fa_tensor q8, f32, scale;
    int64_t sb, sh, ss; /* the scale tensor's sizes */
    void *scale_memory; /* what cache_free frees: NULL when the scales live in q8's memory */
} cache_pair;

/* Row (b, h, s) of view t: its first element's offset, in elements. */
static int64_t row_at(const fa_tensor *t, int64_t b, int64_t h, int64_t s)
{
    return b * t->stride_batch + h * t->stride_head + s * t->stride_seq;
}

/* Codes [batch][heads][seq] rows of `pitch` bytes, `dim` of codes first, in bshd or bhsd order. */
static fa_tensor pitched_view(void *codes, fa_dtype t, int64_t batch, int64_t heads, int64_t seq, int64_t dim,
                              int64_t pitch, int bshd)
{
    fa_tensor v = fa_tensor_bhsd(codes, t, batch, heads, seq, dim);
    v.stride_seq = bshd ? heads * pitch : pitch;
    v.stride_head = bshd ? pitch : seq * pitch;
    v.stride_batch = seq * heads * pitch;
    return v;
}

static void cache_make(cache_pair *c, fa_dtype t, int64_t batch, int64_t heads, int64_t seq, int64_t dim,
                       int bshd, scale_layout sl, tu_rng *rng)
{
    const int inline_scales = sl == INLINE;
    const int64_t codes_dim = (dim + 3) / 4 * 4, pitch = inline_scales ? codes_dim + 4 : dim;
    const int64_t n = batch * heads * seq * dim, rows = batch * heads * seq;
    uint8_t *codes = calloc((size_t)(rows * pitch > 0 ? rows * pitch : 1), 1);
    float *wide = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    cr_assert(codes && wide);
    c->sb = sl == PER_TOKEN_HEAD || sl == PER_TOKEN || inline_scales ? batch : 1;
    c->sh = sl == PER_HEAD || sl == PER_TOKEN_HEAD || inline_scales ? heads : 1;
    c->ss = sl == PER_TOKEN_HEAD || sl == PER_TOKEN || inline_scales ? seq : 1;
    c->q8 = pitched_view(codes, t, batch, heads, seq, dim, pitch, bshd);
    c->f32 = bshd ? fa_tensor_bshd(wide, FA_F32, batch, seq, heads, dim)
                  : fa_tensor_bhsd(wide, FA_F32, batch, heads, seq, dim);
    if (inline_scales) { /* the codes' strides in floats: pitch is a multiple of 4 bytes */
        c->scale_memory = NULL;
        c->scale = fa_tensor_bhsd(codes + codes_dim, FA_F32, batch, heads, seq, 1);
        c->scale.stride_batch = c->q8.stride_batch / 4;
        c->scale.stride_head = c->q8.stride_head / 4;
        c->scale.stride_seq = c->q8.stride_seq / 4;
    } else {
        c->scale_memory =
            malloc(sizeof(float) * (size_t)(c->sb * c->sh * c->ss > 0 ? c->sb * c->sh * c->ss : 1));
        cr_assert(c->scale_memory);
        c->scale = fa_tensor_bhsd(c->scale_memory, FA_F32, c->sb, c->sh, c->ss, 1);
    }
    for (int64_t b = 0; b < c->sb; b++)
        for (int64_t h = 0; h < c->sh; h++)
            for (int64_t s = 0; s < c->ss; s++)
                *((float *)c->scale.data + row_at(&c->scale, b, h, s)) =
                    typical_scale(t) * (float)tu_rng_uniform(rng, 0.5, 2);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t s = 0; s < seq; s++)
                for (int64_t x = 0; x < dim; x++) codes[row_at(&c->q8, b, h, s) + x] = draw_code(t, rng);
}

/* Scale (b, h, s) of the cache, whatever its layout (a size of 1 broadcasts). */
static float *scale_at(cache_pair *c, int64_t b, int64_t h, int64_t s)
{
    return (float *)c->scale.data +
           row_at(&c->scale, c->sb > 1 ? b : 0, c->sh > 1 ? h : 0, c->ss > 1 ? s : 0);
}

/* The dequantized twin, from the codes and scales as they are now (a test may plant NaNs first). */
static void cache_dequantize(cache_pair *c)
{
    const uint8_t *codes = c->q8.data;
    float *wide = c->f32.data;
    for (int64_t b = 0; b < c->q8.batch; b++)
        for (int64_t h = 0; h < c->q8.heads; h++)
            for (int64_t s = 0; s < c->q8.seq; s++) {
                const float *sc = scale_at(c, b, h, s);
                for (int64_t x = 0; x < c->q8.dim; x++)
                    wide[row_at(&c->f32, b, h, s) + x] =
                        fa_stored_value(c->q8.dtype, codes + row_at(&c->q8, b, h, s) + x, 0, sc);
            }
}

static void cache_free(cache_pair *c)
{
    free(c->q8.data), free(c->f32.data), free(c->scale_memory);
}

/* Element i of two float arrays the same (NaN: any NaN). */
static int64_t first_difference(const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0 && !(a[i] != a[i] && b[i] != b[i])) return i;
    return -1;
}

typedef struct {
    fa_dtype t;
    int64_t b, hq, hkv, nq, nk, d, dv;
    int bshd;
    scale_layout sl;
    fa_causal causal;
} dense_case;

/* A dense call over the quantized cache against the same call over its dequantized twin (with
 * dropout for the odd scale layouts). */
static void check_dense(fa_context *ctx, const dense_case *c, tu_rng *rng, int plant_nan)
{
    char desc[200];
    snprintf(desc, sizeof desc,
             "dtype %d, B %lld Hq %lld Hkv %lld Nq %lld Nk %lld D %lld Dv %lld, %s, scales %s%s", (int)c->t,
             (long long)c->b, (long long)c->hq, (long long)c->hkv, (long long)c->nq, (long long)c->nk,
             (long long)c->d, (long long)c->dv, c->bshd ? "bshd" : "bhsd", layout_name[c->sl],
             plant_nan ? ", a NaN planted" : "");
    cache_pair k, v;
    cache_make(&k, c->t, c->b, c->hkv, c->nk, c->d, c->bshd, c->sl, rng);
    cache_make(&v, c->t, c->b, c->hkv, c->nk, c->dv, c->bshd, c->sl, rng);
    int64_t nan_key = -1;
    if (plant_nan && c->nk > 0) { /* key nan_key of batch 0, kv head 0: a NaN code, or a NaN scale for int8 */
        nan_key = c->nk / 2;
        int64_t at = nan_key * k.q8.stride_seq;
        if (c->t == FA_I8)
            *scale_at(&k, 0, 0, nan_key) = NAN; /* with one scale per tensor, every key is NaN */
        else
            ((uint8_t *)k.q8.data)[at + c->d / 2] = c->t == FA_F8_E4M3 ? 0x7f : 0x7e;
    }
    cache_dequantize(&k);
    cache_dequantize(&v);
    const int64_t q_elems = c->b * c->hq * c->nq * c->d, out_elems = c->b * c->hq * c->nq * c->dv;
    float *qd = malloc(sizeof(float) * (size_t)(q_elems + 1)),
          *o1 = malloc(sizeof(float) * (size_t)(out_elems + 1)),
          *o2 = malloc(sizeof(float) * (size_t)(out_elems + 1));
    float *l1 = malloc(sizeof(float) * (size_t)(c->b * c->hq * c->nq + 1)),
          *l2 = malloc(sizeof(float) * (size_t)(c->b * c->hq * c->nq + 1));
    cr_assert(qd && o1 && o2 && l1 && l2);
    for (int64_t i = 0; i < q_elems; i++) qd[i] = (float)tu_rng_uniform(rng, -1, 1);
    fa_tensor q = c->bshd ? fa_tensor_bshd(qd, FA_F32, c->b, c->nq, c->hq, c->d)
                          : fa_tensor_bhsd(qd, FA_F32, c->b, c->hq, c->nq, c->d);
    fa_tensor out1 = c->bshd ? fa_tensor_bshd(o1, FA_F32, c->b, c->nq, c->hq, c->dv)
                             : fa_tensor_bhsd(o1, FA_F32, c->b, c->hq, c->nq, c->dv);
    fa_tensor out2 = out1;
    out2.data = o2;
    fa_params p = FA_PARAMS_INIT;
    p.causal = c->causal;
    if (c->sl % 2) { /* dropout, on half the scale layouts: its mask is the same in both calls */
        p.dropout_p = 0.25;
        p.dropout_seed = (uint64_t)c->nk;
    }
    fa_status st = fa_forward(ctx, &p, &q, &k.f32, &v.f32, &out2, l2);
    cr_assert_eq(st, FA_OK, "%s, the f32 call: %s", desc, fa_last_error());
    p.k_scale = &k.scale;
    p.v_scale = &v.scale;
    st = fa_forward(ctx, &p, &q, &k.q8, &v.q8, &out1, l1);
    cr_assert_eq(st, FA_OK, "%s: %s", desc, fa_last_error());
    int64_t at = first_difference(o1, o2, out_elems);
    cr_expect(at < 0, "%s: out element %lld is %a, the dequantized call's %a", desc, (long long)at,
              at < 0 ? 0.0 : (double)o1[at], at < 0 ? 0.0 : (double)o2[at]);
    at = first_difference(l1, l2, c->b * c->hq * c->nq);
    cr_expect(at < 0, "%s: lse %lld is %a, the dequantized call's %a", desc, (long long)at,
              at < 0 ? 0.0 : (double)l1[at], at < 0 ? 0.0 : (double)l2[at]);
    if (nan_key >= 0) { /* the rows of the heads of kv head 0 in batch 0 that see nan_key */
        for (int64_t h = 0; h < c->hq; h++)
            for (int64_t i = 0; i < c->nq; i++) {
                int64_t diag = i + (c->causal == FA_CAUSAL_TOP_LEFT ? 0 : c->nk - c->nq);
                int sees = h / (c->hq / c->hkv) == 0 && (c->causal == FA_CAUSAL_NONE || nan_key <= diag);
                float lse = l1[h * c->nq + i];
                cr_expect(sees ? lse != lse : lse == lse, "%s: row %lld of head %lld %s key %lld, lse %a",
                          desc, (long long)i, (long long)h, sees ? "sees" : "does not see",
                          (long long)nan_key, (double)lse);
            }
    }
    free(qd), free(o1), free(o2), free(l1), free(l2);
    cache_free(&k), cache_free(&v);
}

Test(quantized_cache, a_dense_call_is_the_f32_call_on_the_dequantized_cache_bit_for_bit)
{
    tu_rng rng = tu_rng_make(tu_test_seed());
    static const struct {
        int64_t b, hq, hkv, nq, nk, d, dv;
        fa_causal causal;
        int block_k;
    } shapes[] = {
        {2, 4, 4, 1, 300, 64, 64, FA_CAUSAL_NONE, 0},          /* decode, in place */
        {1, 8, 2, 1, 3000, 128, 128, FA_CAUSAL_NONE, 64},      /* grouped GQA decode, split keys */
        {1, 4, 1, 3, 700, 40, 24, FA_CAUSAL_BOTTOM_RIGHT, 48}, /* 3 rows, a mask edge widens, Dv != D */
        {2, 2, 1, 77, 130, 33, 72, FA_CAUSAL_TOP_LEFT, 0},     /* a prefill block widens its tiles */
        {1, 2, 2, 150, 150, 64, 64, FA_CAUSAL_BOTTOM_RIGHT, 64},
    };
    for (int threads = 1; threads <= 4; threads += 3)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            fa_context *ctx = tu_context(threads, 0, shapes[s].block_k);
            for (int t = 0; t < 3; t++)
                for (int sl = 0; sl < SCALE_LAYOUTS; sl++) {
                    dense_case c = {qtypes[t],        shapes[s].b,     shapes[s].hq,
                                    shapes[s].hkv,    shapes[s].nq,    shapes[s].nk,
                                    shapes[s].d,      shapes[s].dv,    (int)(s + (size_t)sl) % 2,
                                    (scale_layout)sl, shapes[s].causal};
                    check_dense(ctx, &c, &rng, 0);
                }
            fa_context_destroy(ctx);
        }
}

Test(quantized_cache, nan_codes_and_nan_scales_reach_exactly_the_rows_that_see_them)
{
    tu_rng rng = tu_rng_make(tu_test_seed());
    fa_context *ctx = tu_context(2, 0, 64);
    for (int t = 0; t < 3; t++) {
        dense_case decode = {qtypes[t], 1, 4, 2, 1, 500, 64, 64, 0, PER_TOKEN_HEAD, FA_CAUSAL_NONE};
        dense_case causal = {qtypes[t], 1, 2, 1, 90, 90, 32, 32, 1, PER_TOKEN_HEAD, FA_CAUSAL_TOP_LEFT};
        check_dense(ctx, &decode, &rng, 1);
        check_dense(ctx, &causal, &rng, 1);
    }
    fa_context_destroy(ctx);
}

/* A batch of sequences over a quantized cache, packed (cu_seqlens_k) or paged (pages of `page` keys,
 * the scales a pool of their own read through the same table), against the same batch over the
 * dequantized cache: decode steps (one and three rows) and longer rows, keys in use short of the
 * capacity. */
static void check_batch(fa_context *ctx, fa_dtype t, int64_t page, scale_layout sl, int bshd, tu_rng *rng)
{
    enum { SEQS = 4, HQ = 4, HKV = 2, D = 64, DV = 48 };
    static const int64_t q_len[SEQS] = {1, 3, 9, 1}, used[SEQS] = {37, 500, 64, 129};
    const int paged = page > 0;
    int64_t cu_q[SEQS + 1] = {0}, cu_k[SEQS + 1] = {0}, pages_per_seq = 0, pages = 0;
    for (int b = 0; b < SEQS; b++) {
        cu_q[b + 1] = cu_q[b] + q_len[b];
        cu_k[b + 1] = cu_k[b] + used[b] + 3; /* packed: 3 keys past the ones in use */
        if (paged) {
            int64_t n = (used[b] + page - 1) / page;
            if (n > pages_per_seq) pages_per_seq = n;
            pages += n;
        }
    }
    pages += 2; /* spare pages no table entry names */
    int32_t *table = paged ? malloc(sizeof(int32_t) * (size_t)(SEQS * pages_per_seq)) : NULL;
    if (paged) { /* the pool's pages handed out in a shuffled order */
        int32_t *order = malloc(sizeof(int32_t) * (size_t)pages);
        cr_assert(table && order);
        for (int64_t i = 0; i < pages; i++) order[i] = (int32_t)i;
        for (int64_t i = pages - 1; i > 0; i--) {
            int64_t j = tu_rng_below(rng, i + 1);
            int32_t x = order[i];
            order[i] = order[j], order[j] = x;
        }
        for (int64_t b = 0, next = 0; b < SEQS; b++)
            for (int64_t j = 0; j < pages_per_seq; j++)
                table[b * pages_per_seq + j] = j < (used[b] + page - 1) / page ? order[next++] : -1;
        free(order);
    }
    cache_pair k, v; /* the pool ([pages][Hkv][page]) or the packed keys ([1][Hkv][total]) */
    const int64_t batch = paged ? pages : 1, seq = paged ? page : cu_k[SEQS];
    cache_make(&k, t, batch, HKV, seq, D, bshd, sl, rng);
    cache_make(&v, t, batch, HKV, seq, DV, bshd, sl, rng);
    cache_dequantize(&k);
    cache_dequantize(&v);
    const int64_t rows = cu_q[SEQS];
    float *qd = malloc(sizeof(float) * (size_t)(HQ * rows * D)),
          *o1 = malloc(sizeof(float) * (size_t)(HQ * rows * DV)),
          *o2 = malloc(sizeof(float) * (size_t)(HQ * rows * DV)),
          *l1 = malloc(sizeof(float) * (size_t)(HQ * rows)),
          *l2 = malloc(sizeof(float) * (size_t)(HQ * rows));
    cr_assert(qd && o1 && o2 && l1 && l2);
    for (int64_t i = 0; i < HQ * rows * D; i++) qd[i] = (float)tu_rng_uniform(rng, -1, 1);
    fa_tensor q =
        bshd ? fa_tensor_bshd(qd, FA_F32, 1, rows, HQ, D) : fa_tensor_bhsd(qd, FA_F32, 1, HQ, rows, D);
    fa_tensor out1 =
        bshd ? fa_tensor_bshd(o1, FA_F32, 1, rows, HQ, DV) : fa_tensor_bhsd(o1, FA_F32, 1, HQ, rows, DV);
    fa_tensor out2 = out1;
    out2.data = o2;
    fa_seqs seqs = FA_SEQS_INIT;
    seqs.batch = SEQS;
    seqs.cu_seqlens_q = cu_q;
    seqs.seqused_k = used;
    if (paged) {
        seqs.block_table = table;
        seqs.pages_per_seq = pages_per_seq;
    } else {
        seqs.cu_seqlens_k = cu_k;
    }
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_BOTTOM_RIGHT;
    p.seqs = &seqs;
    char desc[160];
    snprintf(desc, sizeof desc, "dtype %d, %s %lld, scales %s, %s", (int)t,
             paged ? "pages of" : "packed keys", (long long)page, layout_name[sl], bshd ? "bshd" : "bhsd");
    cr_assert_eq(fa_forward(ctx, &p, &q, &k.f32, &v.f32, &out2, l2), FA_OK, "%s, the f32 call: %s", desc,
                 fa_last_error());
    p.k_scale = &k.scale;
    p.v_scale = &v.scale;
    cr_assert_eq(fa_forward(ctx, &p, &q, &k.q8, &v.q8, &out1, l1), FA_OK, "%s: %s", desc, fa_last_error());
    int64_t at = first_difference(o1, o2, HQ * rows * DV);
    cr_expect(at < 0, "%s: out element %lld is %a, the dequantized call's %a", desc, (long long)at,
              at < 0 ? 0.0 : (double)o1[at], at < 0 ? 0.0 : (double)o2[at]);
    at = first_difference(l1, l2, HQ * rows);
    cr_expect(at < 0, "%s: lse %lld differs from the dequantized call's", desc, (long long)at);
    free(qd), free(o1), free(o2), free(l1), free(l2), free(table);
    cache_free(&k), cache_free(&v);
}

Test(quantized_cache, packed_and_paged_batches_are_the_f32_batch_on_the_dequantized_cache_bit_for_bit)
{
    tu_rng rng = tu_rng_make(tu_test_seed());
    static const int64_t pages[] = {0, 1, 16, 256}; /* 0: packed keys */
    for (int threads = 1; threads <= 3; threads += 2) {
        fa_context *ctx = tu_context(threads, 0, 64);
        for (int t = 0; t < 3; t++)
            for (size_t g = 0; g < sizeof pages / sizeof *pages; g++)
                for (int sl = 0; sl < SCALE_LAYOUTS; sl++)
                    check_batch(ctx, qtypes[t], pages[g], (scale_layout)sl, (int)(g + (size_t)sl) % 2, &rng);
        fa_context_destroy(ctx);
    }
}

/* ---- refusals: each names its argument, the _check call agrees, and nothing is written ---- */

typedef struct {
    const char *what, *names;
    fa_status want;
} refusal;

static void expect_refused(const refusal *r, const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                           const fa_tensor *v, fa_tensor *out, float *lse, int64_t out_elems, int64_t rows)
{
    memset(out->data, 0xA5, sizeof(float) * (size_t)out_elems);
    memset(lse, 0xA5, sizeof(float) * (size_t)rows);
    fa_status st = fa_forward(NULL, p, q, k, v, out, lse);
    cr_expect_eq(st, r->want, "%s: status %d (%s), expected %d", r->what, st, fa_last_error(), r->want);
    cr_expect(strstr(fa_last_error(), r->names) != NULL, "%s: \"%s\" does not name %s", r->what,
              fa_last_error(), r->names);
    cr_expect_eq(fa_forward_check(p, q, k, v, out, lse), r->want, "%s: fa_forward_check disagrees", r->what);
    for (int64_t i = 0; i < out_elems; i++) {
        uint32_t bits;
        memcpy(&bits, (float *)out->data + i, sizeof bits);
        if (bits != 0xA5A5A5A5u) {
            cr_expect(0, "%s: out element %lld written", r->what, (long long)i);
            break;
        }
    }
    for (int64_t i = 0; i < rows; i++) {
        uint32_t bits;
        memcpy(&bits, &lse[i], sizeof bits);
        if (bits != 0xA5A5A5A5u) {
            cr_expect(0, "%s: lse %lld written", r->what, (long long)i);
            break;
        }
    }
}

Test(quantized_cache, bad_scales_and_dtypes_are_refused_by_name_with_nothing_written)
{
    tu_rng rng = tu_rng_make(tu_test_seed());
    enum { B = 2, HQ = 4, HKV = 2, NQ = 3, NK = 40, D = 16 };
    cache_pair k, v;
    cache_make(&k, FA_I8, B, HKV, NK, D, 0, PER_TOKEN_HEAD, &rng);
    cache_make(&v, FA_I8, B, HKV, NK, D, 0, PER_TOKEN_HEAD, &rng);
    float qd[B * HQ * NQ * D], od[B * HQ * NQ * D], lse[B * HQ * NQ];
    for (int i = 0; i < B * HQ * NQ * D; i++) qd[i] = (float)tu_rng_uniform(&rng, -1, 1);
    fa_tensor q = fa_tensor_bhsd(qd, FA_F32, B, HQ, NQ, D), out = fa_tensor_bhsd(od, FA_F32, B, HQ, NQ, D);
    const int64_t out_elems = B * HQ * NQ * D, rows = B * HQ * NQ;
    fa_params p = FA_PARAMS_INIT;
    p.k_scale = &k.scale;
    p.v_scale = &v.scale;
    cr_assert_eq(fa_forward(NULL, &p, &q, &k.q8, &v.q8, &out, lse), FA_OK, "the valid call: %s",
                 fa_last_error());

    fa_params bad = p;
    bad.k_scale = NULL;
    expect_refused(&(refusal){"no k_scale", "p.k_scale", FA_ERR_NULL}, &bad, &q, &k.q8, &v.q8, &out, lse,
                   out_elems, rows);
    bad = p, bad.v_scale = NULL;
    expect_refused(&(refusal){"no v_scale", "p.v_scale", FA_ERR_NULL}, &bad, &q, &k.q8, &v.q8, &out, lse,
                   out_elems, rows);
    fa_tensor scale = k.scale;
    scale.data = NULL;
    bad = p, bad.k_scale = &scale;
    expect_refused(&(refusal){"k_scale data NULL", "p.k_scale", FA_ERR_NULL}, &bad, &q, &k.q8, &v.q8, &out,
                   lse, out_elems, rows);
    bad = p; /* scales given to a float cache: FA_ERR_ARG, not ignored */
    expect_refused(&(refusal){"scales with an f32 cache", "p.k_scale", FA_ERR_ARG}, &bad, &q, &k.f32, &v.f32,
                   &out, lse, out_elems, rows);
    fa_params only_v = FA_PARAMS_INIT;
    only_v.v_scale = &v.scale;
    expect_refused(&(refusal){"a v_scale with an f32 cache", "p.v_scale", FA_ERR_ARG}, &only_v, &q, &k.f32,
                   &v.f32, &out, lse, out_elems, rows);
    scale = k.scale, scale.dtype = FA_F64;
    bad = p, bad.k_scale = &scale;
    expect_refused(&(refusal){"f64 scales", "p.k_scale", FA_ERR_DTYPE}, &bad, &q, &k.q8, &v.q8, &out, lse,
                   out_elems, rows);
    scale = k.scale, scale.dtype = FA_BF16;
    expect_refused(&(refusal){"bf16 scales", "p.k_scale", FA_ERR_DTYPE}, &bad, &q, &k.q8, &v.q8, &out, lse,
                   out_elems, rows);
    fa_tensor q8 = q;
    q8.dtype = FA_I8;
    expect_refused(&(refusal){"int8 queries", "q.dtype", FA_ERR_DTYPE}, &p, &q8, &k.q8, &v.q8, &out, lse,
                   out_elems, rows);
    fa_params none = FA_PARAMS_INIT;
    expect_refused(&(refusal){"an int8 v under an f32 k", "v.dtype", FA_ERR_DTYPE}, &none, &q, &k.f32, &v.q8,
                   &out, lse, out_elems, rows);
    fa_tensor e4 = v.q8;
    e4.dtype = FA_F8_E4M3;
    expect_refused(&(refusal){"an E4M3 v under an int8 k", "v.dtype", FA_ERR_DTYPE}, &p, &q, &k.q8, &e4, &out,
                   lse, out_elems, rows);
    static const struct {
        int axis;
        int64_t size;
        const char *what;
    } shapes[] = {{0, B + 1, "batch neither B nor 1"},
                  {1, 3, "heads neither Hkv nor 1"},
                  {2, NK - 1, "seq neither Nk nor 1"},
                  {3, 2, "dim not 1"}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        scale = k.scale;
        int64_t *size[4] = {&scale.batch, &scale.heads, &scale.seq, &scale.dim};
        *size[shapes[i].axis] = shapes[i].size;
        bad = p, bad.k_scale = &scale;
        char what[64];
        snprintf(what, sizeof what, "k_scale %s", shapes[i].what);
        expect_refused(&(refusal){what, "p.k_scale", FA_ERR_SHAPE}, &bad, &q, &k.q8, &v.q8, &out, lse,
                       out_elems, rows);
    }
    scale = v.scale, scale.stride_seq = -1;
    bad = p, bad.v_scale = &scale;
    expect_refused(&(refusal){"v_scale stride -1", "p.v_scale", FA_ERR_STRIDE}, &bad, &q, &k.q8, &v.q8, &out,
                   lse, out_elems, rows);
    /* a scale tensor over the output: inputs may overlap inputs, never an output */
    scale = fa_tensor_bhsd(od, FA_F32, 1, 1, 1, 1);
    bad = p, bad.k_scale = &scale;
    expect_refused(&(refusal){"k_scale inside out", "p.k_scale", FA_ERR_ALIAS}, &bad, &q, &k.q8, &v.q8, &out,
                   lse, out_elems, rows);
    /* the backward: gradients of a quantized cache are not computed */
    {
        float dod[B * HQ * NQ * D], dqd[B * HQ * NQ * D];
        uint8_t dkd[B * HKV * NK * D], dvd[B * HKV * NK * D];
        fa_tensor dout = fa_tensor_bhsd(dod, FA_F32, B, HQ, NQ, D),
                  dq = fa_tensor_bhsd(dqd, FA_F32, B, HQ, NQ, D);
        fa_tensor dk = fa_tensor_bhsd(dkd, FA_I8, B, HKV, NK, D),
                  dv = fa_tensor_bhsd(dvd, FA_I8, B, HKV, NK, D);
        memset(dod, 0, sizeof dod);
        memset(dqd, 0xA5, sizeof dqd);
        fa_status st = fa_backward(NULL, &p, &q, &k.q8, &v.q8, &out, &dout, lse, &dq, &dk, &dv);
        cr_expect_eq(st, FA_ERR_UNSUPPORTED, "a quantized backward: status %d (%s)", st, fa_last_error());
        uint32_t bits;
        memcpy(&bits, dqd, sizeof bits);
        cr_expect_eq(bits, 0xA5A5A5A5u, "a refused backward wrote dq");
    }
    /* fa_merge takes no quantized parts */
    {
        fa_tensor parts[2] = {out, out};
        parts[0].dtype = parts[1].dtype = FA_I8;
        const void *lses[2] = {lse, lse};
        fa_tensor merged = fa_tensor_bhsd(qd, FA_I8, B, HQ, NQ, D);
        fa_status st = fa_merge(NULL, 2, parts, lses, &merged, NULL);
        cr_expect_eq(st, FA_ERR_DTYPE, "fa_merge of int8 parts: status %d (%s)", st, fa_last_error());
    }
    cache_free(&k), cache_free(&v);
}
