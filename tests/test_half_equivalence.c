/* SPDX-License-Identifier: BSD-3-Clause */
/* The half-precision contract as an exact invariant: a call with bf16/f16 tensors computes in
 * float exactly what a float call on the widened inputs computes, and rounds each output once.
 * So out, dq, dk and dv of the half call are, bit for bit, the float call's results rounded to
 * nearest even (kernels/half.h), and lse (float in both) is the same bits; the same for the
 * half-precision KV cache (f32 q, out, dout, dq over bf16/f16 k, v, dk, dv). Checked on every
 * table the suite runs with, over masks, every score modifier, dropout, GQA, Dv != D, edge tiles, a batch
 * of packed sequences, and paged keys; a paged call is also bitwise its contiguous cache's.
 *
 * The one exception is the header's: an all-bf16 call with even head dims on a table with bf16
 * dot-product units (amx) multiplies the bf16 inputs directly and rounds P (and in the backward
 * dS) to bf16, so its outputs are not the widened call's; there the calls are held to the float64
 * oracle (test_half_accuracy.c, both directions), to thread-count invariance
 * (test_half_invariance.c) and here to the paged/contiguous invariant, and the suite's run on the
 * avx512 table (scripts/test.sh) checks the widened equivalence of the same calls. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flashattn.h"
#include "half_util.h"
#include "kernels/half.h"
#include "util.h"

typedef struct {
    fa_dtype q_type, kv_type;
    const char *name;
} he_types;

static const he_types he_combos[] = {{FA_BF16, FA_BF16, "bf16"},
                                     {FA_F16, FA_F16, "f16"},
                                     {FA_F32, FA_BF16, "f32 q over a bf16 cache"},
                                     {FA_F32, FA_F16, "f32 q over an f16 cache"}};

/* A tensor stored in `type` and its widened float copy, contiguous [b][h][s][d]. */
typedef struct {
    fa_tensor t, wide;
    void *data;
    float *wide_data;
    int64_t n;
} he_tensor;

static float he_round(fa_dtype t, float x)
{
    if (t == FA_BF16) return fa_bf16_to_f32(fa_bf16_from_f32(x));
    if (t == FA_F16) return fa_f16_to_f32(fa_f16_from_f32(x));
    return x;
}

static he_tensor he_make(fa_dtype type, int64_t b, int64_t h, int64_t s, int64_t d)
{
    he_tensor x;
    x.n = b * h * s * d;
    size_t elem = type == FA_F32 ? 4 : 2;
    x.data = calloc((size_t)(x.n ? x.n : 1), elem);
    x.wide_data = calloc((size_t)(x.n ? x.n : 1), sizeof(float));
    cr_assert(x.data && x.wide_data);
    x.t = fa_tensor_bhsd(x.data, type, b, h, s, d);
    x.wide = fa_tensor_bhsd(x.wide_data, FA_F32, b, h, s, d);
    return x;
}

/* Random values in [-amp, amp), representable in the tensor's type, in both copies. */
static void he_fill(he_tensor *x, tu_rng *rng, double amp)
{
    for (int64_t i = 0; i < x->n; i++) {
        float v = he_round(x->t.dtype, (float)tu_rng_uniform(rng, -amp, amp));
        x->wide_data[i] = v;
        if (x->t.dtype == FA_BF16)
            ((uint16_t *)x->data)[i] = fa_bf16_from_f32(v);
        else if (x->t.dtype == FA_F16)
            ((uint16_t *)x->data)[i] = fa_f16_from_f32(v);
        else
            ((float *)x->data)[i] = v;
    }
}

/* The stored (narrow) tensor made from what the float call wrote into its wide copy, rounded. */
static void he_expect_rounded(const he_tensor *got, const float *wide, const char *what, const char *combo,
                              const char *shape)
{
    for (int64_t i = 0; i < got->n; i++) {
        uint32_t want, have;
        if (got->t.dtype == FA_F32) {
            float w = wide[i], h = ((const float *)got->data)[i];
            memcpy(&want, &w, 4);
            memcpy(&have, &h, 4);
        } else {
            want = got->t.dtype == FA_BF16 ? fa_bf16_from_f32(wide[i]) : fa_f16_from_f32(wide[i]);
            have = ((const uint16_t *)got->data)[i];
        }
        if (want != have)
            cr_assert_fail("%s, %s, %s: element %lld is 0x%x, the float call's result rounded is 0x%x (%.9g)",
                           combo, shape, what, (long long)i, have, want, (double)wide[i]);
    }
}

static void he_free(he_tensor *x)
{
    free(x->data);
    free(x->wide_data);
}

typedef struct {
    int64_t b, hq, hkv, nq, nk, d, dv;
    fa_causal causal;
    int modifiers; /* bit 0: softcap, ALiBi, a window, an f32 bias and sinks; bit 1: dropout */
    const char *name;
} he_shape;

static void he_check(fa_context *ctx, const he_types *ty, const he_shape *s, uint64_t seed)
{
    tu_rng rng = tu_rng_make(seed);
    he_tensor q = he_make(ty->q_type, s->b, s->hq, s->nq, s->d),
              k = he_make(ty->kv_type, s->b, s->hkv, s->nk, s->d);
    he_tensor v = he_make(ty->kv_type, s->b, s->hkv, s->nk, s->dv),
              out = he_make(ty->q_type, s->b, s->hq, s->nq, s->dv);
    he_tensor dout = he_make(ty->q_type, s->b, s->hq, s->nq, s->dv),
              dq = he_make(ty->q_type, s->b, s->hq, s->nq, s->d);
    he_tensor dk = he_make(ty->kv_type, s->b, s->hkv, s->nk, s->d),
              dv = he_make(ty->kv_type, s->b, s->hkv, s->nk, s->dv);
    he_fill(&q, &rng, 2.0);
    he_fill(&k, &rng, 2.0);
    he_fill(&v, &rng, 1.0);
    he_fill(&dout, &rng, 1.0);
    size_t rows = (size_t)(s->b * s->hq * s->nq);
    float *lse = calloc(rows + 1, sizeof(float)), *lse_wide = calloc(rows + 1, sizeof(float));
    float *out_wide = calloc((size_t)out.n + 1, sizeof(float));
    float slopes[8], sinks[8];
    for (int h = 0; h < 8; h++)
        slopes[h] = 0.05f * (float)(h + 1), sinks[h] = (float)tu_rng_uniform(&rng, -1, 1);
    float *bias_data = calloc((size_t)(s->nq * s->nk) + 1, sizeof(float));
    for (int64_t i = 0; i < s->nq * s->nk; i++) bias_data[i] = (float)tu_rng_uniform(&rng, -1, 1);
    fa_tensor bias = fa_tensor_bhsd(bias_data, FA_F32, 1, 1, s->nq, s->nk);

    fa_params p = FA_PARAMS_INIT;
    p.causal = s->causal;
    if (s->modifiers & 2) { /* the mask is the same in both calls: a function of the indices */
        p.dropout_p = 0.3;
        p.dropout_seed = seed;
    }
    if (s->modifiers & 1) {
        p.softcap = 5.0;
        p.alibi_slopes = slopes;
        p.window_left = s->nk / 3;
        p.bias = &bias;
        p.sinks = sinks;
    }
    cr_assert_eq(fa_forward(ctx, &p, &q.t, &k.t, &v.t, &out.t, lse), FA_OK, "%s, %s: %s", ty->name, s->name,
                 fa_last_error());
    fa_tensor out_w = fa_tensor_bhsd(out_wide, FA_F32, s->b, s->hq, s->nq, s->dv);
    cr_assert_eq(fa_forward(ctx, &p, &q.wide, &k.wide, &v.wide, &out_w, lse_wide), FA_OK, "%s",
                 fa_last_error());
    /* a decode step groups its heads' one row each (the cases here have groups of at most 4) */
    if (!hu_on_dot_units(ctx, ty->q_type, ty->kv_type, s->d, s->nq == 1 ? s->hq / s->hkv : s->nq)) {
        he_expect_rounded(&out, out_wide, "out", ty->name, s->name);
        cr_assert_eq(memcmp(lse, lse_wide, rows * sizeof(float)), 0,
                     "%s, %s: lse differs from the float call's", ty->name, s->name);
    }

    /* the backward from the half call's own (rounded) output, against the float call on its widening */
    for (int64_t i = 0; i < out.n; i++)
        out.wide_data[i] = ty->q_type == FA_F32    ? ((float *)out.data)[i]
                           : ty->q_type == FA_BF16 ? fa_bf16_to_f32(((uint16_t *)out.data)[i])
                                                   : fa_f16_to_f32(((uint16_t *)out.data)[i]);
    cr_assert_eq(fa_backward(ctx, &p, &q.t, &k.t, &v.t, &out.t, &dout.t, lse, &dq.t, &dk.t, &dv.t), FA_OK,
                 "%s, %s: %s", ty->name, s->name, fa_last_error());
    cr_assert_eq(fa_backward(ctx, &p, &q.wide, &k.wide, &v.wide, &out.wide, &dout.wide, lse, &dq.wide,
                             &dk.wide, &dv.wide),
                 FA_OK, "%s", fa_last_error());
    if (!hu_backward_on_dot_units(ctx, ty->q_type, ty->kv_type, s->d, s->dv)) {
        he_expect_rounded(&dq, dq.wide_data, "dq", ty->name, s->name);
        he_expect_rounded(&dk, dk.wide_data, "dk", ty->name, s->name);
        he_expect_rounded(&dv, dv.wide_data, "dv", ty->name, s->name);
    }

    free(lse), free(lse_wide), free(out_wide), free(bias_data);
    he_tensor *all[] = {&q, &k, &v, &out, &dout, &dq, &dk, &dv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) he_free(all[i]);
}

static const he_shape he_shapes[] = {
    {1, 2, 2, 64, 64, 32, 32, FA_CAUSAL_NONE, 0, "B1 H2 N64 D32"},
    {2, 4, 2, 37, 70, 24, 40, FA_CAUSAL_BOTTOM_RIGHT, 0, "B2 H4/2 Nq37 Nk70 D24 Dv40 bottom-right"},
    {1, 2, 1, 130, 17, 20, 8, FA_CAUSAL_TOP_LEFT, 0, "B1 H2/1 Nq130 Nk17 D20 Dv8 top-left"},
    {1, 4, 2, 45, 90, 16, 24, FA_CAUSAL_BOTTOM_RIGHT, 1, "B1 H4/2 Nq45 Nk90 D16 Dv24 with every modifier"},
    {1, 8, 2, 1, 300, 64, 64, FA_CAUSAL_NONE, 0, "GQA decode Nq1 Nk300 D64"},
    /* one and two rows an item read the values in blocks of up to 8 vectors: Dv past 128, and with a tail */
    {1, 2, 2, 1, 300, 40, 136, FA_CAUSAL_NONE, 0, "decode Nq1 Nk300 D40 Dv136"},
    {1, 4, 2, 1, 200, 72, 100, FA_CAUSAL_BOTTOM_RIGHT, 0, "GQA decode, groups of 2, Nq1 Nk200 D72 Dv100"},
    {1, 4, 2, 45, 90, 16, 24, FA_CAUSAL_BOTTOM_RIGHT, 3, "Nq45 Nk90 D16 Dv24, modifiers, dropout"},
    {1, 8, 2, 1, 300, 64, 64, FA_CAUSAL_NONE, 2, "GQA decode Nq1 Nk300 D64, dropout"},
    {2, 2, 2, 3, 300, 40, 136, FA_CAUSAL_NONE, 2, "decode Nq3 Nk300 D40 Dv136, dropout"},
};

Test(half_equivalence, every_output_is_the_float_calls_rounded_once)
{
    fa_context *ctx;
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = 2;
    cr_assert_eq(fa_context_create(&ctx, &o), FA_OK, "%s", fa_last_error());
    for (size_t c = 0; c < sizeof he_combos / sizeof he_combos[0]; c++)
        for (size_t s = 0; s < sizeof he_shapes / sizeof he_shapes[0]; s++)
            he_check(ctx, &he_combos[c], &he_shapes[s], tu_test_part_seed(he_shapes[s].name) + c);
    fa_context_destroy(ctx);
}

/* fa_merge of half-precision parts: the float merge of their widening, rounded once. */
Test(half_equivalence, merge_is_the_float_merge_of_the_widened_parts_rounded_once)
{
    const int64_t b = 2, h = 3, nq = 21, dv = 19;
    static const fa_dtype types[] = {FA_BF16, FA_F16};
    for (size_t t = 0; t < 2; t++) {
        tu_rng rng = tu_rng_make(tu_test_seed() + t);
        he_tensor parts[3], out = he_make(types[t], b, h, nq, dv);
        fa_tensor narrow[3], wide[3];
        float *lses[3];
        const void *lse_ptrs[3];
        for (int k = 0; k < 3; k++) {
            parts[k] = he_make(types[t], b, h, nq, dv);
            he_fill(&parts[k], &rng, 3.0);
            narrow[k] = parts[k].t, wide[k] = parts[k].wide;
            lses[k] = malloc((size_t)(b * h * nq) * sizeof(float));
            for (int64_t i = 0; i < b * h * nq; i++) lses[k][i] = (float)tu_rng_uniform(&rng, -4, 4);
            lses[k][k] = -INFINITY; /* a row some part did not see */
            lse_ptrs[k] = lses[k];
        }
        float *lse = malloc((size_t)(b * h * nq) * sizeof(float)),
              *lse_wide = malloc((size_t)(b * h * nq) * sizeof(float));
        cr_assert_eq(fa_merge(NULL, 3, narrow, lse_ptrs, &out.t, lse), FA_OK, "%s", fa_last_error());
        cr_assert_eq(fa_merge(NULL, 3, wide, lse_ptrs, &out.wide, lse_wide), FA_OK, "%s", fa_last_error());
        /* out.wide now holds the float merge: the half merge must be its rounding */
        float *want = malloc((size_t)out.n * sizeof(float));
        memcpy(want, out.wide_data, (size_t)out.n * sizeof(float));
        he_expect_rounded(&out, want, "merged out", types[t] == FA_BF16 ? "bf16" : "f16",
                          "B2 H3 N21 Dv19, 3 parts");
        cr_assert_eq(memcmp(lse, lse_wide, (size_t)(b * h * nq) * sizeof(float)), 0, "merged lse differs");
        free(want), free(lse), free(lse_wide);
        for (int k = 0; k < 3; k++) he_free(&parts[k]), free(lses[k]);
        he_free(&out);
    }
}

/* A paged decode step over a half-precision pool (shuffled, shared pages, keys in use shorter than
 * the capacity): the float call on the widened pool, rounded once. The pages are widened as they
 * are gathered, into the same tiles a float pool is copied into. */
/* nq query rows a sequence: 1, a decode step, which reads the pool in place; 6, which on AMX tiles
 * takes the bf16 dot-product path (its pages copied, not widened, into bf16 tiles). */
static void he_paged(int64_t nq)
{
    enum { SEQS = 3, PAGES = 7, PAGE = 5, PER_SEQ = 4, HQ = 4, HKV = 2, D = 24, DV = 40 };
    static const int32_t table[SEQS * PER_SEQ] = {3, 0, 6, 2, 5, 5, 1, 4, 0, 2, 3, 6}; /* page 5 twice */
    static const int64_t used[SEQS] = {17, 11, 20};
    fa_seqs seqs = FA_SEQS_INIT;
    seqs.batch = SEQS;
    seqs.seqused_k = used;
    seqs.block_table = table;
    seqs.pages_per_seq = PER_SEQ;
    const int64_t rows = nq == 1 ? HQ / HKV : nq; /* a decode step groups a kv head's query heads */
    for (size_t c = 0; c < sizeof he_combos / sizeof he_combos[0]; c++) {
        tu_rng rng = tu_rng_make(tu_test_seed() + c);
        const he_types *ty = &he_combos[c];
        he_tensor q = he_make(ty->q_type, SEQS, HQ, nq, D), out = he_make(ty->q_type, SEQS, HQ, nq, DV);
        he_tensor k = he_make(ty->kv_type, PAGES, HKV, PAGE, D),
                  v = he_make(ty->kv_type, PAGES, HKV, PAGE, DV);
        he_fill(&q, &rng, 2.0), he_fill(&k, &rng, 2.0), he_fill(&v, &rng, 1.0);
        float lse[SEQS * HQ * 6], lse_wide[SEQS * HQ * 6];
        const size_t lse_bytes = (size_t)(SEQS * HQ * nq) * sizeof(float);
        fa_params p = FA_PARAMS_INIT;
        p.causal = FA_CAUSAL_BOTTOM_RIGHT;
        p.seqs = &seqs;
        cr_assert_eq(fa_forward(NULL, &p, &q.t, &k.t, &v.t, &out.t, lse), FA_OK, "%s: %s", ty->name,
                     fa_last_error());
        cr_assert_eq(fa_forward(NULL, &p, &q.wide, &k.wide, &v.wide, &out.wide, lse_wide), FA_OK, "%s",
                     fa_last_error());
        if (!hu_on_dot_units(NULL, ty->q_type, ty->kv_type, D, rows)) {
            he_expect_rounded(&out, out.wide_data, "out", ty->name,
                              nq == 1 ? "paged decode" : "paged, 6 rows");
            cr_assert_eq(memcmp(lse, lse_wide, lse_bytes), 0, "%s: paged lse differs from the float call's",
                         ty->name);
        }
        /* every path: the paged call is bitwise the same cache laid out contiguously */
        he_tensor kc = he_make(ty->kv_type, SEQS, HKV, PAGE * PER_SEQ, D),
                  vc = he_make(ty->kv_type, SEQS, HKV, PAGE * PER_SEQ, DV),
                  oc = he_make(ty->q_type, SEQS, HQ, nq, DV);
        size_t kv_elem = ty->kv_type == FA_F32 ? 4 : 2;
        for (int sq = 0; sq < SEQS; sq++)
            for (int g = 0; g < PER_SEQ; g++)
                for (int h = 0; h < HKV; h++) {
                    int64_t page = table[sq * PER_SEQ + g];
                    memcpy((char *)kc.data +
                               (((int64_t)sq * HKV + h) * PAGE * PER_SEQ + (int64_t)g * PAGE) * D * kv_elem,
                           (char *)k.data + ((page * HKV + h) * PAGE) * D * kv_elem,
                           (size_t)(PAGE * D) * kv_elem);
                    memcpy((char *)vc.data +
                               (((int64_t)sq * HKV + h) * PAGE * PER_SEQ + (int64_t)g * PAGE) * DV * kv_elem,
                           (char *)v.data + ((page * HKV + h) * PAGE) * DV * kv_elem,
                           (size_t)(PAGE * DV) * kv_elem);
                }
        fa_seqs contiguous = FA_SEQS_INIT;
        contiguous.batch = SEQS;
        contiguous.seqused_k = used;
        float lse_c[SEQS * HQ * 6];
        p.seqs = &contiguous;
        cr_assert_eq(fa_forward(NULL, &p, &q.t, &kc.t, &vc.t, &oc.t, lse_c), FA_OK, "%s: %s", ty->name,
                     fa_last_error());
        cr_assert_eq(memcmp(out.data, oc.data, (size_t)out.n * (ty->q_type == FA_F32 ? 4 : 2)), 0,
                     "%s: the paged out differs from the contiguous cache's", ty->name);
        cr_assert_eq(memcmp(lse, lse_c, lse_bytes), 0,
                     "%s: the paged lse differs from the contiguous cache's", ty->name);
        he_free(&q), he_free(&out), he_free(&k), he_free(&v), he_free(&kc), he_free(&vc), he_free(&oc);
    }
}

Test(half_equivalence, paged_half_cache_is_the_float_pool_widened)
{
    he_paged(1);
    he_paged(6);
}
