/* SPDX-License-Identifier: BSD-3-Clause */
/* Fully masked rows and empty problems, forward and backward (include/flashattn.h, fa_backward: "A
 * row that was fully masked contributes nothing and gets dq = 0").
 *
 * Forward: a row that sees no key gets exact zeros in out and lse = -INFINITY, never NaN; a problem
 * with B, Hq or Nq = 0 succeeds and writes nothing (there is nothing defined to write).
 * Backward (each with f32 and f64, the automatic blocks on a 1-thread context and small odd blocks on
 * 3 threads, query blocks that mix masked and visible rows, and only the gradient views written):
 * - BOTTOM_RIGHT with Nq > Nk: query rows i < Nq - Nk see no key. Their dq is exactly 0, no value
 *   of dq, dk or dv is NaN or infinite, and the rest matches the oracle (tub_check_accuracy).
 * - TOP_LEFT with Nq < Nk: keys j >= Nq are seen by no row, so their dk and dv are exactly 0.
 * - Nk = 0: every row is fully masked: dq is exactly 0 everywhere.
 * - Nq = 0: nothing reads any key: dk = dv = 0 exactly.
 * - B = 0 or Hq = Hkv = 0: the call succeeds and writes no byte.
 * A property both passes promise is one test that runs the forward's check, then the backward's. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "util_backward.h"

/* ---- forward -------------------------------------------------------------------------------- */

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
                    double o = kit_tensor_load(&pr->out, b, h, i, y);
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
    cr_expect(tu_check_picked_accuracy(pr, p, INT64_MAX, 1e-12, msg, sizeof msg), "%s (%s), seed %llu: %s",
              what, desc, (unsigned long long)seed, msg);
}

static void forward_fully_masked_rows(void)
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
static void forward_zero_keys(void)
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
static void forward_empty_problem(void)
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
                kit_buf qb = kit_buf_alloc(4 * 16 * 16 * D * e), kb = kit_buf_alloc(4 * 16 * 16 * D * e),
                        vb = kit_buf_alloc(4 * 16 * 16 * Dv * e), ob = kit_buf_alloc(4 * 16 * 16 * Dv * e),
                        lb = kit_buf_alloc(4 * 16 * 16 * e);
                tu_rng rng = tu_rng_make(seed + (uint64_t)c);
                unsigned char *in[3] = {kit_buf_data(&qb), kit_buf_data(&kb), kit_buf_data(&vb)};
                for (int i = 0; i < 3; i++)
                    for (size_t y = 0; y < qb.bytes; y++) in[i][y] = (unsigned char)tu_rng_next(&rng);
                fa_tensor (*make)(void *, fa_dtype, int64_t, int64_t, int64_t, int64_t) =
                    layout ? fa_tensor_bshd : fa_tensor_bhsd;
                fa_tensor q, k, v, out;
                if (layout) {
                    q = make(in[0], dt, B, Nq, Hq, D);
                    k = make(in[1], dt, B, Nk, Hkv, D);
                    v = make(in[2], dt, B, Nk, Hkv, Dv);
                    out = make(kit_buf_data(&ob), dt, B, Nq, Hq, Dv);
                } else {
                    q = make(in[0], dt, B, Hq, Nq, D);
                    k = make(in[1], dt, B, Hkv, Nk, D);
                    v = make(in[2], dt, B, Hkv, Nk, Dv);
                    out = make(kit_buf_data(&ob), dt, B, Hq, Nq, Dv);
                }
                unsigned char *snap[5] = {kit_buf_snapshot(&qb), kit_buf_snapshot(&kb), kit_buf_snapshot(&vb),
                                          kit_buf_snapshot(&ob), kit_buf_snapshot(&lb)};
                const char *dtn = t ? "f64" : "f32";
                for (int variant = 0; variant < 3; variant++) {
                    /* 0: data pointers set; 1: lse NULL; 2: every data pointer NULL (all empty). */
                    fa_tensor q2 = q, k2 = k, v2 = v, o2 = out;
                    void *lse = variant == 1 ? NULL : kit_buf_data(&lb);
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
                    const kit_buf *bufs[5] = {&qb, &kb, &vb, &ob, &lb};
                    for (int i = 0; i < 5; i++)
                        cr_expect(
                            kit_buf_equals_snapshot(bufs[i], snap[i]),
                            "%s B=%lld Hq=%lld Hkv=%lld Nq=%lld Nk=%lld layout %d variant %d, seed %llu: "
                            "buffer %d (q, k, v, out, lse) changed",
                            dtn, (long long)B, (long long)Hq, (long long)Hkv, (long long)Nq, (long long)Nk,
                            layout, variant, (unsigned long long)seed, i);
                }
                for (int i = 0; i < 5; i++) free(snap[i]);
                kit_buf_free(&qb);
                kit_buf_free(&kb);
                kit_buf_free(&vb);
                kit_buf_free(&ob);
                kit_buf_free(&lb);
            }
}
/* ---- backward ------------------------------------------------------------------------------- */

typedef struct {
    int threads, block_q, block_k;
} ctx_cfg;

static const ctx_cfg configs[] = {{1, 0, 0}, {3, 5, 3}, {2, 8, 16}};
#define N_CONFIGS ((int)(sizeof configs / sizeof configs[0]))

static fa_context *make_ctx(const ctx_cfg *c)
{
    return tu_context(c->threads, c->block_q, c->block_k);
}

/* Elements of t in sequence positions [s0, s1) (every batch and head) that are not exactly 0;
 * the first one's position goes to *where. */
static int64_t nonzero_in_rows(const fa_tensor *t, int64_t s0, int64_t s1, int64_t *where)
{
    int64_t n = 0;
    *where = -1;
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t s = s0; s < s1; s++)
                for (int64_t d = 0; d < t->dim; d++)
                    if (!(kit_tensor_load(t, b, h, s, d) == 0.0) && n++ == 0) *where = s;
    return n;
}

/* Forward then backward on a fresh problem; checks what holds for every case (status, only the
 * gradient views written, every gradient finite, oracle agreement) and returns the problem. */
static void run_case(fa_context *ctx, const tu_shape *s, const fa_params *p, uint64_t seed, const ctx_cfg *c,
                     tub_problem *bp, char *desc, size_t desc_size)
{
    tu_rng rng = tu_rng_make(seed);
    tub_make(bp, s, &rng, 2.5);
    tub_desc(bp, p, c->block_q, c->block_k, desc, desc_size);
    cr_assert_eq(tub_forward(ctx, p, bp), FA_OK, "%s, seed %llu", desc, (unsigned long long)seed);
    fa_status st = tub_backward(ctx, p, bp);
    cr_assert_eq(st, FA_OK, "%s, seed %llu: backward status %d (%s)", desc, (unsigned long long)seed, st,
                 fa_status_str(st));
    cr_expect(tub_grads_only_defined_written(bp), "%s, seed %llu: a byte outside dq/dk/dv was written", desc,
              (unsigned long long)seed);
    static const char *names[3] = {"dq", "dk", "dv"};
    for (int g = 0; g < 3; g++) {
        int64_t first;
        int64_t bad = tub_count_nonfinite(&bp->grad[g], &first);
        cr_expect_eq(bad, 0, "%s, seed %llu: %lld non-finite values in %s, first at flat index %lld", desc,
                     (unsigned long long)seed, (long long)bad, names[g], (long long)first);
    }
    char msg[512];
    tub_ref oracle, naive;
    tub_ref_compute(&oracle, bp, p);
    if (s->dtype == FA_F32) tub_ref_compute_naive_f32(&naive, bp, p);
    cr_expect(tub_check_accuracy(bp, p, &oracle, s->dtype == FA_F32 ? &naive : NULL, 1e-11, msg, sizeof msg),
              "%s, seed %llu: %s", desc, (unsigned long long)seed, msg);
    tub_ref_free(&oracle);
    if (s->dtype == FA_F32) tub_ref_free(&naive);
}

static void backward_fully_masked_rows(void)
{
    uint64_t seed = tu_test_seed();
    /* Nq - Nk masked rows: 31 (crossing several query blocks), and 39 with a single key. */
    static const tu_shape shapes[] = {
        {FA_F32, 2, 4, 2, 50, 19, 12, 9, TU_BHSD},
        {FA_F64, 2, 4, 2, 50, 19, 12, 9, TU_PACKED},
        {FA_F32, 1, 2, 1, 40, 1, 7, 7, TU_BSHD},
        {FA_F64, 1, 2, 1, 40, 1, 7, 7, TU_BHSD},
    };
    for (int c = 0; c < N_CONFIGS; c++) {
        fa_context *ctx = make_ctx(&configs[c]);
        for (int x = 0; x < (int)(sizeof shapes / sizeof shapes[0]); x++) {
            fa_params p = FA_PARAMS_INIT;
            p.causal = FA_CAUSAL_BOTTOM_RIGHT;
            tub_problem bp;
            char desc[320];
            uint64_t case_seed = seed + (uint64_t)(c * 16 + x);
            run_case(ctx, &shapes[x], &p, case_seed, &configs[c], &bp, desc, sizeof desc);
            int64_t masked = shapes[x].q_len - shapes[x].kv_len, where;
            /* The forward's side of the contract, which the backward relies on. */
            for (int64_t r = 0; r < tu_problem_rows(&bp.fw); r++)
                if (r % shapes[x].q_len < masked)
                    cr_assert(tu_lse_get(&bp.fw, r) == -INFINITY, "%s: lse of masked row %lld is %g", desc,
                              (long long)r, tu_lse_get(&bp.fw, r));
            int64_t n = nonzero_in_rows(&bp.grad[TUB_DQ], 0, masked, &where);
            cr_expect_eq(n, 0,
                         "%s, seed %llu: %lld dq values of fully masked rows are not 0 (first in row %lld)",
                         desc, (unsigned long long)case_seed, (long long)n, (long long)where);
            /* And the visible rows did get gradients (the case is not vacuous). */
            cr_expect_gt(nonzero_in_rows(&bp.grad[TUB_DQ], masked, shapes[x].q_len, &where) +
                             nonzero_in_rows(&bp.grad[TUB_DV], 0, shapes[x].kv_len, &where),
                         0, "%s: every gradient is 0", desc);
            tub_free(&bp);
        }
        fa_context_destroy(ctx);
    }
}
/* An empty sequence, Nk = 0 (no_keys) or Nq = 0: every causal mode, f32 and f64, each layout, on
 * each context configuration; the gradients of the other side (dq without keys, dk and dv without
 * queries) must be exact zeros. */
static void check_empty_sequence(int no_keys)
{
    uint64_t seed = tu_test_seed();
    static const fa_causal causal[3] = {FA_CAUSAL_NONE, FA_CAUSAL_TOP_LEFT, FA_CAUSAL_BOTTOM_RIGHT};
    static const char *grad_name[3] = {"dq", "dk", "dv"};
    int first = no_keys ? TUB_DQ : TUB_DK, last = no_keys ? TUB_DQ : TUB_DV;
    for (int c = 0; c < N_CONFIGS; c++) {
        fa_context *ctx = make_ctx(&configs[c]);
        for (int x = 0; x < 6; x++) {
            tu_shape s = {x % 2 ? FA_F64 : FA_F32, 2, 4, 2, no_keys ? 17 : 0, no_keys ? 0 : 23, 8, 5,
                          (tu_layout)(x % 3)};
            fa_params p = FA_PARAMS_INIT;
            p.causal = causal[x / 2];
            tub_problem bp;
            char desc[320];
            uint64_t case_seed = seed + (uint64_t)(c * 16 + x);
            run_case(ctx, &s, &p, case_seed, &configs[c], &bp, desc, sizeof desc);
            for (int g = first; g <= last; g++) {
                int64_t where, n = nonzero_in_rows(&bp.grad[g], 0, g == TUB_DQ ? s.q_len : s.kv_len, &where);
                cr_expect_eq(n, 0, "%s, seed %llu: %lld %s values are not 0 with no %s (first in row %lld)",
                             desc, (unsigned long long)case_seed, (long long)n, grad_name[g],
                             no_keys ? "keys" : "queries", (long long)where);
            }
            tub_free(&bp);
        }
        fa_context_destroy(ctx);
    }
}

static void backward_zero_keys(void)
{
    check_empty_sequence(1);
}

/* B = 0 and Hq = Hkv = 0: nothing to compute; the call succeeds and writes no byte. */
static void backward_empty_problem(void)
{
    uint64_t seed = tu_test_seed();
    static const tu_shape shapes[] = {
        {FA_F32, 0, 2, 1, 9, 11, 4, 3, TU_BHSD},
        {FA_F64, 2, 0, 0, 9, 11, 4, 3, TU_BSHD},
    };
    for (int x = 0; x < 2; x++) {
        tu_rng rng = tu_rng_make(seed + (uint64_t)x);
        tub_problem bp;
        tub_make(&bp, &shapes[x], &rng, 1.0);
        fa_params p = FA_PARAMS_INIT;
        cr_assert_eq(tub_forward(NULL, &p, &bp), FA_OK, "shape %d", x);
        fa_status st = tub_backward(NULL, &p, &bp);
        cr_expect_eq(st, FA_OK, "shape %d: status %d (%s)", x, st, fa_status_str(st));
        cr_expect(tub_grads_only_defined_written(&bp), "shape %d: a gradient byte was written", x);
        tub_free(&bp);
    }
}

/* ---- both directions: each property, the forward's check and then the backward's --------------- */

Test(masking, fully_masked_rows_give_zero_out_minus_inf_lse_and_exactly_zero_dq)
{
    forward_fully_masked_rows();
    backward_fully_masked_rows();
}

Test(masking, zero_keys_give_zero_rows_minus_inf_lse_and_exactly_zero_dq)
{
    forward_zero_keys();
    backward_zero_keys();
}

Test(masking, empty_batch_heads_or_queries_succeed_and_write_nothing_forward_and_backward)
{
    forward_empty_problem();
    backward_empty_problem();
}

/* ---- backward only -------------------------------------------------------------------------- */

Test(masking, keys_no_query_sees_get_exactly_zero_dk_and_dv)
{
    uint64_t seed = tu_test_seed();
    static const tu_shape shapes[] = {
        {FA_F32, 2, 4, 1, 19, 50, 12, 9, TU_BSHD},
        {FA_F64, 1, 4, 2, 19, 50, 12, 9, TU_BHSD},
        {FA_F64, 1, 1, 1, 1, 30, 5, 3, TU_PACKED},
    };
    for (int c = 0; c < N_CONFIGS; c++) {
        fa_context *ctx = make_ctx(&configs[c]);
        for (int x = 0; x < (int)(sizeof shapes / sizeof shapes[0]); x++) {
            fa_params p = FA_PARAMS_INIT;
            p.causal = FA_CAUSAL_TOP_LEFT;
            tub_problem bp;
            char desc[320];
            uint64_t case_seed = seed + (uint64_t)(c * 16 + x);
            run_case(ctx, &shapes[x], &p, case_seed, &configs[c], &bp, desc, sizeof desc);
            int64_t where, nq = shapes[x].q_len, nk = shapes[x].kv_len;
            for (int g = TUB_DK; g <= TUB_DV; g++) {
                int64_t n = nonzero_in_rows(&bp.grad[g], nq, nk, &where);
                cr_expect_eq(n, 0,
                             "%s, seed %llu: %lld %s values of keys no query sees are not 0 (first key %lld)",
                             desc, (unsigned long long)case_seed, (long long)n, g == TUB_DK ? "dk" : "dv",
                             (long long)where);
            }
            tub_free(&bp);
        }
        fa_context_destroy(ctx);
    }
}

Test(masking, no_queries_gives_exactly_zero_dk_and_dv)
{
    check_empty_sequence(0);
}
