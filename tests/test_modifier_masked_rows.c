/* SPDX-License-Identifier: BSD-3-Clause */
/* Rows that see no key through the score modifiers (include/flashattn.h, fa_params: "A row that
 * sees no key gets out = 0 and lse = sinks[h] with sinks, lse = -inf without (and zero gradients),
 * also when its scores are all -inf through the bias"): rows emptied by a window (with and without
 * a causal mask, Nq > Nk), by a bias of -inf on a whole row, by key padding of a whole sequence, and
 * by a window whose keys are all padding; each without and with sinks, f32 and f64, on small tiles
 * and automatic ones.
 * Which rows see nothing is worked out from the definitions (ref_sees, ref_bias). Then:
 *   forward: out of such a row is exactly 0, its lse exactly -inf (the sink's logit, as the dtype's
 *            value, with sinks); nothing is NaN; every row matches the oracle (test_modifiers.c's rule);
 *   backward: dq of such a row is exactly 0; dk and dv of a key that every row either does not see
 *            or sees through a -inf bias are exactly 0; nothing is NaN; the gradients and dsinks
 *            match the oracle (test_modifiers.c's backward rule). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "modifiers.h"
#include "reference.h"
#include "util.h"
#include "util_backward.h"

typedef enum { EMPTY_NONE, EMPTY_BIAS_ROWS, EMPTY_PADDED_SEQUENCE } empty_by;

typedef struct {
    const char *name;
    tu_shape shape; /* dtype set per run */
    tm_spec spec;   /* sinks set per run */
    empty_by extra; /* -inf written into the bias */
} masked_case;

static const masked_case cases[] = {
    {"window 0/0, bottom-right, Nq > Nk",
     {FA_F32, 2, 4, 2, 40, 25, 9, 7, TU_BHSD},
     {FA_CAUSAL_BOTTOM_RIGHT, 0, 0, 0.0, 0, TM_BIAS_OFF, 0},
     EMPTY_NONE},
    {"window 0/0, top-left, Nq > Nk",
     {FA_F32, 1, 3, 1, 40, 25, 16, 5, TU_BSHD},
     {FA_CAUSAL_TOP_LEFT, 0, 0, 1.5, 1, TM_BIAS_OFF, 0},
     EMPTY_NONE},
    {"window 2/1 without a causal mask, Nq > Nk",
     {FA_F32, 1, 2, 2, 40, 20, 8, 8, TU_PACKED},
     {FA_CAUSAL_NONE, 2, 1, 0.0, 1, TM_BIAS_OFF, 0},
     EMPTY_NONE},
    {"window -1/0 without a causal mask, Nq > Nk",
     {FA_F32, 2, 2, 1, 37, 16, 5, 9, TU_BHSD},
     {FA_CAUSAL_NONE, -1, 0, 0.0, 0, TM_BIAS_OFF, 0},
     EMPTY_NONE},
    {"bias rows of -inf",
     {FA_F32, 2, 3, 1, 30, 45, 12, 10, TU_BHSD},
     {FA_CAUSAL_NONE, -1, -1, 2.0, 0, TM_BIAS_FULL, 0},
     EMPTY_BIAS_ROWS},
    {"key padding of a whole sequence",
     {FA_F32, 2, 2, 2, 33, 29, 7, 11, TU_BSHD},
     {FA_CAUSAL_TOP_LEFT, -1, -1, 0.0, 1, TM_BIAS_KEY_PADDING, 0},
     EMPTY_PADDED_SEQUENCE},
    {"window 2/0 over padded keys",
     {FA_F32, 1, 2, 1, 30, 30, 6, 6, TU_BHSD},
     {FA_CAUSAL_BOTTOM_RIGHT, 2, 0, 0.0, 0, TM_BIAS_KEY_PADDING, 0},
     EMPTY_NONE},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

/* Row i of (b, h) has no visible key whose bias is not -inf. */
static int row_empty(const fa_params *p, const tu_shape *s, int64_t b, int64_t h, int64_t i)
{
    for (int64_t j = 0; j < s->kv_len; j++)
        if (ref_sees(p, s->q_len, s->kv_len, i, j) && ref_bias(p, b, h, i, j) != -INFINITY) return 0;
    return 1;
}

/* Key j of (b, kv head) has no probability in any row: every row of the group does not see it or
 * sees it through a -inf bias. */
static int key_unused(const fa_params *p, const tu_shape *s, int64_t b, int64_t kvh, int64_t j)
{
    int64_t group = s->q_heads / s->kv_heads;
    for (int64_t h = kvh * group; h < (kvh + 1) * group; h++)
        for (int64_t i = 0; i < s->q_len; i++)
            if (ref_sees(p, s->q_len, s->kv_len, i, j) && ref_bias(p, b, h, i, j) != -INFINITY) return 0;
    return 1;
}

static void write_empties(tm_mods *m, const tu_shape *s, empty_by extra)
{
    if (extra == EMPTY_BIAS_ROWS) /* a few whole rows of the full bias */
        for (int64_t b = 0; b < s->batch; b++)
            for (int64_t h = 0; h < s->q_heads; h++)
                for (int64_t i = (b + 2 * h) % 5; i < s->q_len; i += 7)
                    for (int64_t j = 0; j < s->kv_len; j++) kit_tensor_store(&m->bias, b, h, i, j, -INFINITY);
    if (extra == EMPTY_PADDED_SEQUENCE) /* batch 1 is all padding */
        for (int64_t j = 0; j < s->kv_len; j++) kit_tensor_store(&m->bias, 1, 0, 0, j, -INFINITY);
}

static void check_case(fa_context *ctx, const masked_case *mc, fa_dtype dtype, int sinks, uint64_t seed,
                       const char *blocks)
{
    tu_shape s = mc->shape;
    s.dtype = dtype;
    tm_spec spec = mc->spec;
    spec.sinks = sinks;
    tu_rng rng = tu_rng_make(seed);
    tub_problem bp;
    tub_make(&bp, &s, &rng, 2.0);
    tm_mods m;
    tm_mods_make(&m, &spec, &s, 0.0, &rng);
    write_empties(&m, &s, mc->extra);
    char desc[600], shape[512], msg[512];
    tm_desc(&s, &m, shape, sizeof shape);
    snprintf(desc, sizeof desc, "%s (%s), %s, seed %llu", mc->name, shape, blocks, (unsigned long long)seed);

    /* the case is what its name says: some rows see nothing, some see a key */
    int64_t empty = 0, rows = tu_problem_rows(&bp.fw);
    for (int64_t r = 0; r < rows; r++)
        empty += row_empty(&m.p, &s, r / (s.q_heads * s.q_len), (r / s.q_len) % s.q_heads, r % s.q_len);
    cr_assert(empty > 0 && empty < rows, "%s: %lld of %lld rows see no key", desc, (long long)empty,
              (long long)rows);

    cr_assert_eq(tub_forward(ctx, &m.p, &bp), FA_OK, "%s: forward", desc);
    int64_t *all;
    int64_t n = tu_pick_rows(&bp.fw, &m.p, INT64_MAX, &all);
    cr_expect(tu_check_accuracy(&bp.fw, &m.p, all, n, 1e-12, msg, sizeof msg), "%s: %s", desc, msg);
    free(all);
    for (int64_t b = 0; b < s.batch; b++)
        for (int64_t h = 0; h < s.q_heads; h++)
            for (int64_t i = 0; i < s.q_len; i++) {
                int64_t r = (b * s.q_heads + h) * s.q_len + i;
                double lse = tu_lse_get(&bp.fw, r);
                int is_empty = row_empty(&m.p, &s, b, h, i);
                double want = sinks ? (double)m.sinks[h] : -INFINITY; /* a float is exact in either dtype */
                cr_expect(!isnan(lse) && (!is_empty || lse == want),
                          "%s: row (b %lld, h %lld, i %lld)%s has lse %.17g", desc, (long long)b,
                          (long long)h, (long long)i, is_empty ? ", which sees no key," : "", lse);
                for (int64_t y = 0; y < s.dim_v; y++) {
                    double o = kit_tensor_load(&bp.fw.out, b, h, i, y);
                    cr_expect(!isnan(o) && (!is_empty || o == 0.0),
                              "%s: row (b %lld, h %lld, i %lld)%s has out[%lld] = %g", desc, (long long)b,
                              (long long)h, (long long)i, is_empty ? ", which sees no key," : "",
                              (long long)y, o);
                }
            }

    if (sinks) tm_mods_want_dsinks(&m);
    cr_assert_eq(tub_backward(ctx, &m.p, &bp), FA_OK, "%s: backward", desc);
    int64_t first;
    for (int g = 0; g < 3; g++)
        cr_expect_eq(tub_count_nonfinite(&bp.grad[g], &first), 0,
                     "%s: gradient %d has a non-finite value at %lld", desc, g, (long long)first);
    for (int64_t b = 0; b < s.batch; b++) {
        for (int64_t h = 0; h < s.q_heads; h++)
            for (int64_t i = 0; i < s.q_len; i++)
                for (int64_t x = 0; x < s.dim && row_empty(&m.p, &s, b, h, i); x++)
                    cr_expect(kit_tensor_load(&bp.grad[TUB_DQ], b, h, i, x) == 0.0,
                              "%s: dq of row (b %lld, h %lld, i %lld), which sees no key, is %g", desc,
                              (long long)b, (long long)h, (long long)i,
                              kit_tensor_load(&bp.grad[TUB_DQ], b, h, i, x));
        for (int64_t kvh = 0; kvh < s.kv_heads; kvh++)
            for (int64_t j = 0; j < s.kv_len; j++) {
                if (!key_unused(&m.p, &s, b, kvh, j)) continue;
                for (int64_t x = 0; x < s.dim; x++)
                    cr_expect(kit_tensor_load(&bp.grad[TUB_DK], b, kvh, j, x) == 0.0,
                              "%s: dk of key (b %lld, kv head %lld, j %lld), which no row uses, is %g", desc,
                              (long long)b, (long long)kvh, (long long)j,
                              kit_tensor_load(&bp.grad[TUB_DK], b, kvh, j, x));
                for (int64_t y = 0; y < s.dim_v; y++)
                    cr_expect(kit_tensor_load(&bp.grad[TUB_DV], b, kvh, j, y) == 0.0,
                              "%s: dv of key (b %lld, kv head %lld, j %lld), which no row uses, is %g", desc,
                              (long long)b, (long long)kvh, (long long)j,
                              kit_tensor_load(&bp.grad[TUB_DV], b, kvh, j, y));
            }
    }
    int f32 = dtype == FA_F32;
    tub_ref oracle, naive;
    tub_ref_compute(&oracle, &bp, &m.p);
    if (f32) tub_ref_compute_naive_f32(&naive, &bp, &m.p);
    cr_expect(tub_check_accuracy(&bp, &m.p, &oracle, f32 ? &naive : NULL, 1e-11, msg, sizeof msg), "%s: %s",
              desc, msg);
    if (sinks) cr_expect(tm_check_dsinks(&bp, &m, msg, sizeof msg), "%s: %s", desc, msg);
    tub_ref_free(&oracle);
    if (f32) tub_ref_free(&naive);
    tm_mods_free(&m);
    tub_free(&bp);
}

static void run(int sinks)
{
    uint64_t seed = tu_test_seed();
    static const int blocks[2][2] = {{0, 0}, {6, 8}};
    for (int bl = 0; bl < 2; bl++) {
        fa_context *ctx = tu_context(0, blocks[bl][0], blocks[bl][1]);
        char what[64];
        snprintf(what, sizeof what, "blocks %d/%d", blocks[bl][0], blocks[bl][1]);
        for (int t = 0; t < 2; t++)
            for (int c = 0; c < N_CASES; c++)
                check_case(ctx, &cases[c], t ? FA_F64 : FA_F32, sinks,
                           seed + (uint64_t)(100 * bl + 10 * t + c), what);
        fa_context_destroy(ctx);
    }
}

Test(modifier_masked_rows, rows_emptied_by_windows_or_bias_give_zeros_minus_inf_lse_and_zero_dq)
{
    run(0);
}

Test(modifier_masked_rows, rows_emptied_by_windows_or_bias_with_sinks_give_zeros_and_lse_of_the_sink)
{
    run(1);
}

/* No key at all (Nk = 0): every row is empty, with every modifier set. out = 0, lse = sinks[h]
 * (-inf without sinks), dq = 0 and dsinks = +0 (nothing to sum). */
Test(modifier_masked_rows, no_keys_at_all_give_zeros_lse_of_the_sink_and_zero_dsinks)
{
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++)
        for (int sinks = 0; sinks < 2; sinks++) {
            tu_shape s = {t ? FA_F64 : FA_F32, 2, 4, 2, 9, 0, 6, 5, TU_BSHD};
            tm_spec spec = {FA_CAUSAL_BOTTOM_RIGHT, 3, 1, 2.0, 1, TM_BIAS_FULL, sinks};
            tu_rng rng = tu_rng_make(seed + (uint64_t)(2 * t + sinks));
            tub_problem bp;
            tub_make(&bp, &s, &rng, 2.0);
            tm_mods m;
            tm_mods_make(&m, &spec, &s, 0.0, &rng);
            char desc[600];
            tm_desc(&s, &m, desc, sizeof desc);
            cr_assert_eq(tub_forward(NULL, &m.p, &bp), FA_OK, "%s", desc);
            if (sinks) tm_mods_want_dsinks(&m);
            cr_assert_eq(tub_backward(NULL, &m.p, &bp), FA_OK, "%s", desc);
            for (int64_t b = 0; b < s.batch; b++)
                for (int64_t h = 0; h < s.q_heads; h++)
                    for (int64_t i = 0; i < s.q_len; i++) {
                        double lse = tu_lse_get(&bp.fw, (b * s.q_heads + h) * s.q_len + i);
                        double want = sinks ? (double)m.sinks[h] : -INFINITY;
                        cr_expect(lse == want, "%s: lse of row (b %lld, h %lld, i %lld) is %g, expected %g",
                                  desc, (long long)b, (long long)h, (long long)i, lse, want);
                        for (int64_t y = 0; y < s.dim_v; y++)
                            cr_expect(kit_tensor_load(&bp.fw.out, b, h, i, y) == 0.0,
                                      "%s: out of row (b %lld, h %lld, i %lld) is %g", desc, (long long)b,
                                      (long long)h, (long long)i, kit_tensor_load(&bp.fw.out, b, h, i, y));
                        for (int64_t x = 0; x < s.dim; x++)
                            cr_expect(kit_tensor_load(&bp.grad[TUB_DQ], b, h, i, x) == 0.0,
                                      "%s: dq of row (b %lld, h %lld, i %lld) is %g", desc, (long long)b,
                                      (long long)h, (long long)i,
                                      kit_tensor_load(&bp.grad[TUB_DQ], b, h, i, x));
                    }
            for (int64_t h = 0; sinks && h < s.q_heads; h++)
                cr_expect(m.p.dsinks[h] == 0.0f && !signbit(m.p.dsinks[h]),
                          "%s: dsinks[%lld] is %g, expected +0", desc, (long long)h, (double)m.p.dsinks[h]);
            cr_expect(tub_grads_only_defined_written(&bp), "%s: wrote outside dq/dk/dv", desc);
            if (sinks) cr_expect(tm_dsinks_guards_intact(&m), "%s: wrote around dsinks", desc);
            tm_mods_free(&m);
            tub_free(&bp);
        }
}

/* A sink of -inf (the sink switched off for one head) with rows that see no key: such a row's lse
 * is -inf too, and its sink probability is 0, not exp(-inf + inf): dsinks stays finite and matches
 * the oracle. */
Test(modifier_masked_rows, a_sink_of_minus_inf_with_empty_rows_gives_a_finite_dsinks)
{
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++) {
        tu_shape s = {t ? FA_F64 : FA_F32, 1, 2, 1, 40, 25, 8, 8, TU_BSHD};
        tm_spec spec = tm_spec_none();
        spec.causal = FA_CAUSAL_BOTTOM_RIGHT; /* Nq > Nk: the first 15 rows see no key */
        spec.sinks = 1;
        tu_rng rng = tu_rng_make(seed + (uint64_t)t);
        tub_problem bp;
        tub_make(&bp, &s, &rng, 2.0);
        tm_mods m;
        tm_mods_make(&m, &spec, &s, 0.0, &rng);
        m.sinks[0] = -INFINITY;
        char desc[600], msg[512];
        tm_desc(&s, &m, desc, sizeof desc);
        cr_assert_eq(tub_forward(NULL, &m.p, &bp), FA_OK, "%s", desc);
        tm_mods_want_dsinks(&m);
        cr_assert_eq(tub_backward(NULL, &m.p, &bp), FA_OK, "%s", desc);
        for (int h = 0; h < 2; h++)
            cr_expect(isfinite(m.p.dsinks[h]), "%s: dsinks[%d] = %g", desc, h, (double)m.p.dsinks[h]);
        cr_expect(tm_check_dsinks(&bp, &m, msg, sizeof msg), "%s: %s", desc, msg);
        tm_mods_free(&m);
        tub_free(&bp);
    }
}
