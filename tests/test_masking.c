/* SPDX-License-Identifier: BSD-3-Clause */
/* Fully masked rows and empty problems.
 * A row that sees no key gets exact zeros in out and lse = -INFINITY, never NaN; a problem with
 * B, Hq or Nq = 0 succeeds and writes nothing (there is nothing defined to write). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Every element of out and lse is checked: rows that see no key are exact zeros with lse -inf,
 * no value anywhere is NaN, the other rows match the oracle, padding is untouched. */
static void check_masked_problem(const char *what, uint64_t seed, tu_problem *pr, const fa_params *p,
                                 fa_context *ctx)
{
    char desc[256], msg[512];
    tu_shape_str(&pr->shape, p, desc, sizeof desc);
    tu_problem_fill_canary(pr);
    fa_status st = fa_forward(ctx, p, &pr->q, &pr->k, &pr->v, &pr->out, pr->lse);
    cr_assert_eq(st, FA_OK, "%s (%s), seed %llu: status %d (%s)", what, desc, (unsigned long long)seed, st,
                 fa_status_str(st));
    cr_expect(tu_problem_only_defined_written(pr), "%s (%s), seed %llu: bytes outside out/lse written", what,
              desc, (unsigned long long)seed);
    const tu_shape *s = &pr->shape;
    int64_t masked_rows = 0;
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t h = 0; h < s->q_heads; h++)
            for (int64_t i = 0; i < s->q_len; i++) {
                int64_t row = (b * s->q_heads + h) * s->q_len + i;
                int sees_none =
                    s->kv_len == 0 || (p->causal == FA_CAUSAL_BOTTOM_RIGHT && i < s->q_len - s->kv_len);
                double lse = tu_lse_get(pr, row);
                cr_expect(!isnan(lse), "%s (%s), seed %llu: lse of row %lld is NaN", what, desc,
                          (unsigned long long)seed, (long long)row);
                for (int64_t y = 0; y < s->dim_v; y++) {
                    double o = tu_get(&pr->out, b, h, i, y);
                    cr_expect(!isnan(o), "%s (%s), seed %llu: out[row %lld][%lld] is NaN", what, desc,
                              (unsigned long long)seed, (long long)row, (long long)y);
                    if (sees_none)
                        cr_expect(o == 0.0, "%s (%s), seed %llu: fully masked row %lld has out[%lld] = %g",
                                  what, desc, (unsigned long long)seed, (long long)row, (long long)y, o);
                }
                if (sees_none) {
                    masked_rows++;
                    cr_expect(isinf(lse) && lse < 0, "%s (%s), seed %llu: fully masked row %lld has lse %g",
                              what, desc, (unsigned long long)seed, (long long)row, lse);
                }
            }
    if (s->kv_len > 0 && p->causal == FA_CAUSAL_BOTTOM_RIGHT && s->q_len > s->kv_len)
        cr_assert_gt(masked_rows, 0, "the test problem has no fully masked row");
    int64_t *rows;
    int64_t n = tu_pick_rows(pr, p, INT64_MAX, &rows);
    cr_expect(tu_check_accuracy(pr, p, rows, n, 1e-12, msg, sizeof msg), "%s (%s), seed %llu: %s", what, desc,
              (unsigned long long)seed, msg);
    free(rows);
}

Test(masking, bottom_right_with_more_queries_than_keys_gives_zero_rows_and_minus_inf_lse)
{
    uint64_t seed = tu_test_seed();
    /* Automatic blocks, and small odd blocks so that tiles hold masked and unmasked rows together. */
    fa_context_opts opts[2] = {FA_CONTEXT_OPTS_INIT, FA_CONTEXT_OPTS_INIT};
    opts[1].block_q = 7;
    opts[1].block_k = 5;
    static const int64_t lens[][2] = {{50, 20}, {9, 1}, {130, 64}, {3, 2}};
    int c = 0;
    for (int o = 0; o < 2; o++) {
        fa_context *ctx;
        cr_assert_eq(fa_context_create(&ctx, &opts[o]), FA_OK);
        for (int t = 0; t < 2; t++)
            for (int x = 0; x < 4; x++, c++) {
                tu_shape s = {t ? FA_F64 : FA_F32, 2, 4, 2, lens[x][0], lens[x][1], 24, 16,
                              (tu_layout)(c % 3)};
                tu_rng rng = tu_rng_make(seed + (uint64_t)c);
                tu_problem pr;
                tu_problem_make(&pr, &s, &rng, 2.0);
                fa_params p = FA_PARAMS_INIT;
                p.causal = FA_CAUSAL_BOTTOM_RIGHT;
                check_masked_problem("bottom-right, Nq > Nk", seed, &pr, &p, ctx);
                tu_problem_free(&pr);
            }
        fa_context_destroy(ctx);
    }
}

Test(masking, zero_keys_gives_zero_rows_and_minus_inf_lse)
{
    uint64_t seed = tu_test_seed();
    int c = 0;
    for (int t = 0; t < 2; t++)
        for (int causal = 0; causal < 3; causal++, c++) {
            tu_shape s = {t ? FA_F64 : FA_F32, 2, 4, 2, 33, 0, 24, 16, (tu_layout)(c % 3)};
            tu_rng rng = tu_rng_make(seed + (uint64_t)c);
            tu_problem pr;
            tu_problem_make(&pr, &s, &rng, 2.0);
            fa_params p = FA_PARAMS_INIT;
            p.causal = (fa_causal)causal;
            check_masked_problem("Nk = 0", seed, &pr, &p, NULL);
            /* An empty k and v may have NULL data. */
            fa_tensor k = pr.k, v = pr.v;
            pr.k.data = NULL;
            pr.v.data = NULL;
            check_masked_problem("Nk = 0, k and v data NULL", seed, &pr, &p, NULL);
            pr.k = k;
            pr.v = v;
            tu_problem_free(&pr);
        }
}

/* B = 0, Hq = 0 (with Hkv 0 or not) and Nq = 0: the call succeeds and no byte of out or lse
 * storage changes, also with NULL data and with lse NULL. */
Test(masking, empty_batch_heads_or_queries_succeed_and_write_nothing)
{
    uint64_t seed = tu_test_seed();
    /* B, Hq, Hkv, Nq, Nk */
    static const int64_t shapes[][5] = {{0, 4, 2, 16, 16}, {2, 0, 0, 16, 16}, {2, 0, 2, 16, 16},
                                        {2, 4, 2, 0, 16},  {2, 4, 2, 0, 0},   {0, 0, 0, 0, 0}};
    int c = 0;
    for (int t = 0; t < 2; t++)
        for (int x = 0; x < 6; x++)
            for (int layout = 0; layout < 2; layout++, c++) {
                fa_dtype dt = t ? FA_F64 : FA_F32;
                size_t e = tu_dtype_size(dt);
                int64_t B = shapes[x][0], Hq = shapes[x][1], Hkv = shapes[x][2], Nq = shapes[x][3],
                        Nk = shapes[x][4], D = 8, Dv = 8;
                /* Storage for the non-empty version of every tensor, so wrong writes stay in bounds. */
                tu_buf qb = tu_buf_alloc(4 * 16 * 16 * D * e), kb = tu_buf_alloc(4 * 16 * 16 * D * e),
                       vb = tu_buf_alloc(4 * 16 * 16 * Dv * e), ob = tu_buf_alloc(4 * 16 * 16 * Dv * e),
                       lb = tu_buf_alloc(4 * 16 * 16 * e);
                tu_rng rng = tu_rng_make(seed + (uint64_t)c);
                unsigned char *in[3] = {tu_buf_data(&qb), tu_buf_data(&kb), tu_buf_data(&vb)};
                for (int i = 0; i < 3; i++)
                    for (size_t y = 0; y < qb.bytes; y++) in[i][y] = (unsigned char)tu_rng_next(&rng);
                fa_tensor (*make)(void *, fa_dtype, int64_t, int64_t, int64_t, int64_t) =
                    layout ? fa_tensor_bshd : fa_tensor_bhsd;
                fa_tensor q, k, v, out;
                if (layout) {
                    q = make(in[0], dt, B, Nq, Hq, D);
                    k = make(in[1], dt, B, Nk, Hkv, D);
                    v = make(in[2], dt, B, Nk, Hkv, Dv);
                    out = make(tu_buf_data(&ob), dt, B, Nq, Hq, Dv);
                } else {
                    q = make(in[0], dt, B, Hq, Nq, D);
                    k = make(in[1], dt, B, Hkv, Nk, D);
                    v = make(in[2], dt, B, Hkv, Nk, Dv);
                    out = make(tu_buf_data(&ob), dt, B, Hq, Nq, Dv);
                }
                unsigned char *snap[5] = {tu_buf_snapshot(&qb), tu_buf_snapshot(&kb), tu_buf_snapshot(&vb),
                                          tu_buf_snapshot(&ob), tu_buf_snapshot(&lb)};
                const char *dtn = t ? "f64" : "f32";
                for (int variant = 0; variant < 3; variant++) {
                    /* 0: data pointers set; 1: lse NULL; 2: every data pointer NULL (all empty). */
                    fa_tensor q2 = q, k2 = k, v2 = v, o2 = out;
                    void *lse = variant == 1 ? NULL : tu_buf_data(&lb);
                    if (variant == 2) {
                        q2.data = o2.data = NULL;
                        lse = NULL;
                        if (B == 0 || Hkv == 0 || Nk == 0) k2.data = v2.data = NULL;
                    }
                    fa_params p = FA_PARAMS_INIT;
                    p.causal = (fa_causal)((c + variant) % 3);
                    fa_status st = fa_forward(NULL, &p, &q2, &k2, &v2, &o2, lse);
                    cr_expect_eq(st, FA_OK,
                                 "%s B=%lld Hq=%lld Hkv=%lld Nq=%lld Nk=%lld layout %d variant %d, seed "
                                 "%llu: status %d (%s)",
                                 dtn, (long long)B, (long long)Hq, (long long)Hkv, (long long)Nq,
                                 (long long)Nk, layout, variant, (unsigned long long)seed, st,
                                 fa_status_str(st));
                    const tu_buf *bufs[5] = {&qb, &kb, &vb, &ob, &lb};
                    for (int i = 0; i < 5; i++)
                        cr_expect(
                            tu_buf_equals_snapshot(bufs[i], snap[i]),
                            "%s B=%lld Hq=%lld Hkv=%lld Nq=%lld Nk=%lld layout %d variant %d, seed %llu: "
                            "buffer %d (q, k, v, out, lse) changed",
                            dtn, (long long)B, (long long)Hq, (long long)Hkv, (long long)Nq, (long long)Nk,
                            layout, variant, (unsigned long long)seed, i);
                }
                for (int i = 0; i < 5; i++) free(snap[i]);
                tu_buf_free(&qb);
                tu_buf_free(&kb);
                tu_buf_free(&vb);
                tu_buf_free(&ob);
                tu_buf_free(&lb);
            }
}
