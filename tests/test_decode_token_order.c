/* SPDX-License-Identifier: BSD-3-Clause */
/* A decode step's heads of one sequence run as a group that reads its key tiles in token order
 * (src/drivers/forward_attend.h, attend_tokens_: every head's part of a run of keys before the next
 * run, so a [token][head][dim] cache streams token row after token row). Grouping must change no bit:
 * each kv head's out and lse are, byte for byte, those of a call given that kv head alone (its
 * views: a group of one, read tile by tile, head after head). Over f32, bf16 and int8 caches (int8
 * with a scale per token and head), contiguous and paged (pages of 1 and 5 keys, shuffled), one
 * query head per kv head and four (GQA: four rows an item), with and without a causal mask and a
 * softcap (the modifiers run between the runs), key counts that end inside a tile, at 1 and 3
 * threads. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "util.h"

/* D: rows long enough for token order in every type on every CPU (int8's D bytes: 256, the longest
 * shortest row, plan/block_sizes.c), and no whole number of vectors */
enum { B = 2, HKV = 5, NK = 197, D = 264, DV = 40 };

typedef struct {
    fa_dtype kv;
    int64_t group, page_size; /* query heads per kv head; 0: a contiguous cache */
    int causal, softcap;
} token_case;

/* The call's tensors: bshd (token-major) q, k, v, out; lse [B][Hq][1]; a quantized cache's scales
 * [B or pages][HKV][NK or P][1]; with pages, pools of NK keys a sequence in shuffled pages. */
typedef struct {
    fa_tensor q, k, v, out, k_scale, v_scale;
    float *lse;
    int32_t *table;
    int64_t pages_per_seq;
    fa_seqs seqs;
} token_call;

static void fill(fa_tensor *t, tu_rng *rng, double lo, double hi)
{
    const int64_t n = t->batch * t->seq * t->heads * t->dim;
    for (int64_t i = 0; i < n; i++)
        kit_store(t->dtype, t->data, i,
                  t->dtype == FA_I8 ? (double)(tu_rng_below(rng, 255) - 127) : tu_rng_uniform(rng, lo, hi));
}

static void make_call(token_call *c, const token_case *tc, tu_rng *rng)
{
    const int64_t hq = HKV * tc->group, p = tc->page_size;
    const int64_t kv_batch = p ? B * ((NK + p - 1) / p) : B, kv_seq = p ? p : NK;
    memset(c, 0, sizeof *c);
    c->q = fa_tensor_bshd(calloc((size_t)(B * hq * D), 4), FA_F32, B, 1, hq, D);
    c->out = fa_tensor_bshd(calloc((size_t)(B * hq * DV), 4), FA_F32, B, 1, hq, DV);
    c->lse = calloc((size_t)(B * hq), 4);
    const size_t e = kit_dtype_size(tc->kv);
    c->k = fa_tensor_bshd(calloc((size_t)(kv_batch * kv_seq * HKV * D), e), tc->kv, kv_batch, kv_seq, HKV, D);
    c->v =
        fa_tensor_bshd(calloc((size_t)(kv_batch * kv_seq * HKV * DV), e), tc->kv, kv_batch, kv_seq, HKV, DV);
    cr_assert(c->q.data && c->out.data && c->lse && c->k.data && c->v.data);
    fill(&c->q, rng, -1, 1), fill(&c->k, rng, -1, 1), fill(&c->v, rng, -1, 1);
    if (tc->kv == FA_I8) {
        c->k_scale =
            fa_tensor_bhsd(calloc((size_t)(kv_batch * HKV * kv_seq), 4), FA_F32, kv_batch, HKV, kv_seq, 1);
        c->v_scale =
            fa_tensor_bhsd(calloc((size_t)(kv_batch * HKV * kv_seq), 4), FA_F32, kv_batch, HKV, kv_seq, 1);
        cr_assert(c->k_scale.data && c->v_scale.data);
        fill(&c->k_scale, rng, 0.001, 0.02), fill(&c->v_scale, rng, 0.001, 0.02);
    }
    c->seqs = (fa_seqs)FA_SEQS_INIT;
    if (!p) return;
    /* every page in use once, in a shuffled order */
    c->pages_per_seq = (NK + p - 1) / p;
    c->table = malloc(sizeof *c->table * (size_t)kv_batch);
    cr_assert(c->table);
    for (int64_t i = 0; i < kv_batch; i++) c->table[i] = (int32_t)i;
    for (int64_t i = kv_batch - 1; i > 0; i--) {
        int64_t j = tu_rng_below(rng, i + 1);
        int32_t x = c->table[i];
        c->table[i] = c->table[j], c->table[j] = x;
    }
    c->seqs.batch = B;
    c->seqs.block_table = c->table;
    c->seqs.pages_per_seq = c->pages_per_seq;
}

static void free_call(token_call *c)
{
    free(c->q.data), free(c->out.data), free(c->lse), free(c->k.data), free(c->v.data);
    free(c->k_scale.data), free(c->v_scale.data), free(c->table);
}

/* heads [h0, h0 + n) of a view (heads are its second-innermost axis in bshd, a stride of dim). */
static fa_tensor heads_of(const fa_tensor *t, int64_t h0, int64_t n)
{
    fa_tensor v = *t;
    v.data = (char *)t->data + (size_t)(h0 * t->stride_head) * kit_dtype_size(t->dtype);
    v.heads = n;
    return v;
}

static fa_status run(fa_context *ctx, const token_case *tc, token_call *c, const fa_tensor *q,
                     const fa_tensor *k, const fa_tensor *v, const fa_tensor *ks, const fa_tensor *vs,
                     const fa_tensor *out, float *lse)
{
    fa_params p = FA_PARAMS_INIT;
    p.causal = tc->causal ? FA_CAUSAL_BOTTOM_RIGHT : FA_CAUSAL_NONE;
    p.softcap = tc->softcap ? 5.0 : 0.0;
    if (tc->kv == FA_I8) p.k_scale = ks, p.v_scale = vs;
    if (tc->page_size) p.seqs = &c->seqs;
    return fa_forward(ctx, &p, q, k, v, out, lse);
}

Test(decode_token_order, a_group_of_heads_gives_each_head_the_bits_of_the_head_alone)
{
    static const fa_dtype kvs[] = {FA_F32, FA_BF16, FA_I8};
    static const int64_t pages[] = {0, 1, 5}, groups[] = {1, 4};
    tu_rng rng = tu_rng_make(tu_test_seed());
    for (int threads = 1; threads <= 3; threads += 2) {
        fa_context *ctx = tu_context(threads, 0, 0);
        for (size_t ki = 0; ki < sizeof kvs / sizeof *kvs; ki++)
            for (size_t pi = 0; pi < sizeof pages / sizeof *pages; pi++)
                for (size_t gi = 0; gi < sizeof groups / sizeof *groups; gi++)
                    for (int mods = 0; mods < 2; mods++) {
                        const token_case tc = {kvs[ki], groups[gi], pages[pi], mods, mods};
                        token_call c;
                        make_call(&c, &tc, &rng);
                        const int64_t g = tc.group, hq = HKV * g;
                        cr_assert_eq(
                            run(ctx, &tc, &c, &c.q, &c.k, &c.v, &c.k_scale, &c.v_scale, &c.out, c.lse), FA_OK,
                            "%s", fa_last_error());
                        float out[B * 4 * DV], lse[B * 4];
                        for (int64_t h = 0; h < HKV; h++) {
                            const fa_tensor q = heads_of(&c.q, h * g, g), k = heads_of(&c.k, h, 1),
                                            v = heads_of(&c.v, h, 1);
                            fa_tensor ks = {0}, vs = {0};
                            if (tc.kv == FA_I8) { /* bhsd: a head is stride_head floats on */
                                ks = c.k_scale, vs = c.v_scale;
                                ks.data = (float *)ks.data + h * ks.stride_head, ks.heads = 1;
                                vs.data = (float *)vs.data + h * vs.stride_head, vs.heads = 1;
                            }
                            const fa_tensor o1 = fa_tensor_bshd(out, FA_F32, B, 1, g, DV);
                            cr_assert_eq(run(ctx, &tc, &c, &q, &k, &v, &ks, &vs, &o1, lse), FA_OK, "%s",
                                         fa_last_error());
                            for (int64_t b = 0; b < B; b++)
                                for (int64_t r = 0; r < g; r++) {
                                    const float *want = (const float *)c.out.data + (b * hq + h * g + r) * DV;
                                    cr_expect(
                                        memcmp(out + (b * g + r) * DV, want, sizeof(float) * DV) == 0 &&
                                            memcmp(&lse[b * g + r], &c.lse[b * hq + h * g + r], 4) == 0,
                                        "%s cache, pages of %lld, %lld query heads a kv head, causal and "
                                        "softcap %d, %d threads: sequence %lld, kv head %lld, row %lld "
                                        "differs from the head alone",
                                        tc.kv == FA_F32    ? "f32"
                                        : tc.kv == FA_BF16 ? "bf16"
                                                           : "int8",
                                        (long long)tc.page_size, (long long)g, mods, threads, (long long)b,
                                        (long long)h, (long long)r);
                                }
                        }
                        free_call(&c);
                    }
        fa_context_destroy(ctx);
    }
}
