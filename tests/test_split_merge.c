/* SPDX-License-Identifier: BSD-3-Clause */
/* Split-KV against fa_merge. The header says a split forward's partial results are "merged as
 * fa_merge merges", summed in part order k = 0..n-1: so a forward whose keys the library splits
 * gives, bit for bit, fa_merge of the forwards over its chunks, each a call over that chunk's keys
 * alone (same block sizes: the same tiles in the same order). The chunks are the library's own
 * choice, read from fa_forward_items (white box); each chunk call is checked to run unsplit, so the
 * comparison is between the split's merge and fa_merge's, nothing else. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "api/params.h"
#include "api/validate.h"
#include "drivers/forward.h"
#include "util.h"

typedef struct {
    int64_t lo[64], hi[64];
    int n;     /* distinct chunks of phase 0, in key order */
    int split; /* a phase-1 (merge) item was seen */
} chunks_t;

static void add_chunk(void *user, const fa_forward_item_info *it)
{
    chunks_t *c = user;
    if (it->phase == 1) {
        c->split = 1;
        return;
    }
    for (int i = 0; i < c->n; i++)
        if (c->lo[i] == it->key_lo) return;
    cr_assert_lt(c->n, 64);
    int i = c->n++;
    for (; i > 0 && c->lo[i - 1] > it->key_lo; i--) c->lo[i] = c->lo[i - 1], c->hi[i] = c->hi[i - 1];
    c->lo[i] = it->key_lo, c->hi[i] = it->key_hi;
}

/* The chunks fa_forward would cut the keys of (q, k, v, out) into on ctx. */
static chunks_t chunks_of(fa_context *ctx, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                          const fa_tensor *out)
{
    fa_params p = FA_PARAMS_INIT;
    fa_params_copy copy;
    fa_problem prob;
    chunks_t c = {{0}, {0}, 0, 0};
    cr_assert_eq(fa_params_read("test", &p, &copy), FA_OK);
    cr_assert_eq(fa_validate_forward("test", &copy.p, q, k, v, out, NULL, &prob), FA_OK, "%s",
                 fa_last_error());
    cr_assert_eq(fa_forward_items(ctx, &prob, add_chunk, &c), FA_OK);
    return c;
}

static void fill(void *data, fa_dtype t, int64_t n, tu_rng *rng)
{
    for (int64_t i = 0; i < n; i++) {
        double x = tu_rng_uniform(rng, -2.0, 2.0);
        if (t == FA_F64)
            ((double *)data)[i] = x;
        else
            ((float *)data)[i] = (float)x;
    }
}

/* A view of keys [lo, hi) of a contiguous [B][H][Nk][D] tensor. */
static fa_tensor keys_view(const fa_tensor *t, int64_t lo, int64_t hi)
{
    fa_tensor c = *t;
    c.data = (char *)t->data + lo * t->stride_seq * (int64_t)tu_dtype_size(t->dtype);
    c.seq = hi - lo;
    return c;
}

Test(split_merge, a_split_forward_is_fa_merge_of_the_forwards_over_its_chunks_bit_for_bit)
{
    /* decode-shaped (few query items): the library splits the keys; odd Nk gives a shorter last chunk */
    static const int64_t shapes[][5] = {{1, 1, 1, 1000, 32}, {2, 2, 3, 777, 16}, {1, 3, 4, 2049, 8}};
    static const fa_dtype types[] = {FA_F32, FA_F64};
    tu_rng rng = tu_rng_make(tu_test_seed());
    for (size_t ti = 0; ti < 2; ti++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            const fa_dtype t = types[ti];
            const int64_t b = shapes[s][0], h = shapes[s][1], nq = shapes[s][2], nk = shapes[s][3],
                          d = shapes[s][4];
            const size_t e = tu_dtype_size(t);
            void *q = malloc((size_t)(b * h * nq * d) * e), *k = malloc((size_t)(b * h * nk * d) * e),
                 *v = malloc((size_t)(b * h * nk * d) * e), *out = malloc((size_t)(b * h * nq * d) * e),
                 *lse = malloc((size_t)(b * h * nq) * e), *merged = malloc((size_t)(b * h * nq * d) * e),
                 *merged_lse = malloc((size_t)(b * h * nq) * e);
            cr_assert(q && k && v && out && lse && merged && merged_lse);
            fill(q, t, b * h * nq * d, &rng);
            fill(k, t, b * h * nk * d, &rng);
            fill(v, t, b * h * nk * d, &rng);
            fa_tensor tq = fa_tensor_bhsd(q, t, b, h, nq, d), tk = fa_tensor_bhsd(k, t, b, h, nk, d),
                      tv = fa_tensor_bhsd(v, t, b, h, nk, d), to = fa_tensor_bhsd(out, t, b, h, nq, d),
                      tm = fa_tensor_bhsd(merged, t, b, h, nq, d);
            fa_context *ctx;
            cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
            chunks_t c = chunks_of(ctx, &tq, &tk, &tv, &to);
            cr_assert(c.split && c.n >= 2, "shape %zu: the keys are not split (%d chunks)", s, c.n);
            cr_assert_eq(c.lo[0], 0);
            fa_params p = FA_PARAMS_INIT;
            cr_assert_eq(fa_forward(ctx, &p, &tq, &tk, &tv, &to, lse), FA_OK, "%s", fa_last_error());

            fa_tensor outs[64];
            void *lses[64];
            for (int i = 0; i < c.n; i++) {
                const int64_t hi = c.hi[i] < nk ? c.hi[i] : nk;
                cr_assert_eq(c.lo[i], i == 0 ? 0 : c.hi[i - 1], "chunks are contiguous");
                fa_tensor ck = keys_view(&tk, c.lo[i], hi), cv = keys_view(&tv, c.lo[i], hi);
                outs[i] = fa_tensor_bhsd(malloc((size_t)(b * h * nq * d) * e), t, b, h, nq, d);
                lses[i] = malloc((size_t)(b * h * nq) * e);
                cr_assert(outs[i].data && lses[i]);
                chunks_t inner = chunks_of(ctx, &tq, &ck, &cv, &outs[i]);
                cr_assert(!inner.split, "shape %zu: chunk %d is split again", s, i);
                cr_assert_eq(fa_forward(ctx, &p, &tq, &ck, &cv, &outs[i], lses[i]), FA_OK, "%s",
                             fa_last_error());
            }
            cr_assert_eq(fa_merge(ctx, c.n, outs, (const void *const *)lses, &tm, merged_lse), FA_OK, "%s",
                         fa_last_error());
            cr_expect(memcmp(out, merged, (size_t)(b * h * nq * d) * e) == 0,
                      "%s shape %zu (%d chunks): out differs from fa_merge of the chunks",
                      t == FA_F64 ? "f64" : "f32", s, c.n);
            cr_expect(memcmp(lse, merged_lse, (size_t)(b * h * nq) * e) == 0,
                      "%s shape %zu (%d chunks): lse differs from fa_merge of the chunks",
                      t == FA_F64 ? "f64" : "f32", s, c.n);
            for (int i = 0; i < c.n; i++) free(outs[i].data), free(lses[i]);
            fa_context_destroy(ctx);
            free(q), free(k), free(v), free(out), free(lse), free(merged), free(merged_lse);
        }
}
