/* SPDX-License-Identifier: BSD-3-Clause */
/* Bad input for fa_backward (include/flashattn.h: "Refused, with nothing written"): every case
 * returns its own status and leaves every byte of dq, dk, dv, dsinks (canary-filled) and of every
 * input unchanged.
 *
 * All nine tensors, lse and the score modifiers' arguments (a bias [B][Hq][Nq][Nk], alibi_slopes,
 * sinks and dsinks, Hq floats each) live back to back in one guarded pool, followed by a
 * canary-filled spare region as large as the largest tensor, so a view re-pointed into any other
 * (the alias cases) stays inside memory the test owns, and one snapshot of the pool checks every
 * byte. The unmodified calls, without and with every modifier, succeed (adjacent views are not
 * aliases). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference_backward.h"
#include "util.h"
#include "util_backward.h"

enum { Q, K, V, OUT, DOUT, DQ, DK, DV, N_T };
static const char *tname[N_T] = {"q", "k", "v", "out", "dout", "dq", "dk", "dv"};

typedef struct {
    fa_params p; /* p.bias is ignored: the call passes &bias when use_bias is set */
    fa_tensor t[N_T];
    const void *lse;
    int null_tensor; /* -1, or the tensor passed as NULL */
    fa_tensor bias;
    int use_bias;
} bwd_args;

typedef struct {
    fa_dtype dt;
    size_t e;
    tu_buf pool;
    unsigned char *lse_at, *grads_at; /* lse region; first byte of dq (grads, dsinks, spare follow) */
    size_t grads_bytes;               /* dq, dk, dv, dsinks and the spare region */
    bwd_args valid;                   /* no score modifier */
    bwd_args modified;                /* every score modifier, dsinks too */
    fa_context *ctx;
    uint64_t seed;
} bad_setup;

enum { HQ = 4 }; /* query heads: the length of alibi_slopes, sinks and dsinks */

static void setup(bad_setup *b, fa_dtype dt)
{
    memset(b, 0, sizeof *b);
    b->seed = tu_test_part_seed(dt == FA_F64 ? "f64" : "f32");
    b->dt = dt;
    b->e = tu_dtype_size(dt);
    const int64_t B = 2, Hq = 4, Hkv = 2, Nq = 9, Nk = 11, D = 6, Dv = 5;
    const int64_t shape[N_T][3] = {{Hq, Nq, D},  {Hkv, Nk, D}, {Hkv, Nk, Dv}, {Hq, Nq, Dv},
                                   {Hq, Nq, Dv}, {Hq, Nq, D},  {Hkv, Nk, D},  {Hkv, Nk, Dv}};
    int64_t size[N_T], largest = 0, total = B * Hq * Nq; /* lse */
    for (int i = 0; i < N_T; i++) {
        size[i] = B * shape[i][0] * shape[i][1] * shape[i][2];
        total += size[i];
        if (size[i] > largest) largest = size[i];
    }
    const int64_t bias_size = B * Hq * Nq * Nk, heads_bytes = Hq * (int64_t)sizeof(float);
    total += bias_size + largest; /* the bias, the spare */
    b->pool = tu_buf_alloc((size_t)total * b->e + 3 * (size_t)heads_bytes);
    unsigned char *at = tu_buf_data(&b->pool), *slopes = NULL, *sinks = NULL;
    fa_tensor bias = {0};
    for (int i = 0; i < N_T; i++) {
        if (i == DQ) { /* lse and the modifiers' inputs sit between the inputs and the gradients */
            b->lse_at = at;
            at += (size_t)(B * Hq * Nq) * b->e;
            bias = fa_tensor_bhsd(at, dt, B, Hq, Nq, Nk);
            at += (size_t)bias_size * b->e;
            slopes = at;
            sinks = at + heads_bytes;
            at += 2 * heads_bytes; /* still aligned to an f64 element */
            b->grads_at = at;
        }
        b->valid.t[i] = fa_tensor_bhsd(at, dt, B, shape[i][0], shape[i][1], shape[i][2]);
        at += (size_t)size[i] * b->e;
    }
    unsigned char *dsinks = at;
    at += heads_bytes;
    b->grads_bytes = (size_t)(at - b->grads_at) + (size_t)largest * b->e;
    b->valid.lse = b->lse_at;
    b->valid.p = (fa_params)FA_PARAMS_INIT;
    b->valid.p.causal = FA_CAUSAL_BOTTOM_RIGHT;
    b->valid.null_tensor = -1;
    b->valid.bias = bias;
    tu_rng rng = tu_rng_make(b->seed);
    const int inputs[4] = {Q, K, V, DOUT};
    for (int x = 0; x < 4; x++) {
        const fa_tensor *t = &b->valid.t[inputs[x]];
        for (int64_t i = 0; i < tub_numel(t); i++) tu_set(t, 0, 0, 0, i, tu_rng_uniform(&rng, -1.0, 1.0));
    }
    for (int64_t i = 0; i < bias_size; i++) tu_set(&bias, 0, 0, 0, i, tu_rng_uniform(&rng, -1.0, 1.0));
    for (int h = 0; h < Hq; h++) {
        float x[2] = {(float)tu_rng_uniform(&rng, 0.0, 0.5), (float)tu_rng_uniform(&rng, -1.0, 1.0)};
        memcpy(slopes + h * (int64_t)sizeof(float), &x[0], sizeof(float));
        memcpy(sinks + h * (int64_t)sizeof(float), &x[1], sizeof(float));
    }
    b->modified = b->valid;
    b->modified.p.window_left = 4;
    b->modified.p.window_right = 2;
    b->modified.p.softcap = 20.0;
    b->modified.p.alibi_slopes = (const float *)(const void *)slopes;
    b->modified.p.sinks = (const float *)(const void *)sinks;
    b->modified.p.dsinks = (float *)(void *)dsinks;
    b->modified.use_bias = 1;
    cr_assert_eq(fa_context_create(&b->ctx, NULL), FA_OK);
    cr_assert_eq(fa_forward(b->ctx, &b->valid.p, &b->valid.t[Q], &b->valid.t[K], &b->valid.t[V],
                            &b->valid.t[OUT], b->lse_at),
                 FA_OK);
}

static void teardown(bad_setup *b)
{
    fa_context_destroy(b->ctx);
    tu_buf_free(&b->pool);
}

static fa_status call(const bad_setup *b, const bwd_args *a)
{
    const fa_tensor *t[N_T];
    for (int i = 0; i < N_T; i++) t[i] = a->null_tensor == i ? NULL : &a->t[i];
    fa_params p = a->p;
    p.bias = a->use_bias ? &a->bias : NULL;
    return fa_backward(b->ctx, &p, t[Q], t[K], t[V], t[OUT], t[DOUT], a->lse, t[DQ], t[DK], t[DV]);
}

static void expect_refused(const bad_setup *b, const bwd_args *a, fa_status want, const char *what)
{
    unsigned char *snap = tu_buf_snapshot(&b->pool);
    fa_status st = call(b, a);
    cr_expect_eq(st, want, "%s, %s, seed %llu: status %d (%s), expected %d (%s)",
                 b->dt == FA_F64 ? "f64" : "f32", what, (unsigned long long)b->seed, st, fa_status_str(st),
                 want, fa_status_str(want));
    cr_expect(tu_buf_equals_snapshot(&b->pool, snap),
              "%s, %s, seed %llu: a byte of the tensors changed (status %d)", b->dt == FA_F64 ? "f64" : "f32",
              what, (unsigned long long)b->seed, st);
    free(snap);
}

/* The valid calls (without and with every modifier) succeed and write only dq, dk, dv, dsinks;
 * then the gradients get their canaries back. */
static void valid_call_succeeds(bad_setup *b)
{
    for (int m = 0; m < 2; m++) {
        unsigned char *snap = tu_buf_snapshot(&b->pool);
        fa_status st = call(b, m ? &b->modified : &b->valid);
        cr_assert_eq(st, FA_OK, "the unmodified call %s modifiers, seed %llu: %s", m ? "with" : "without",
                     (unsigned long long)b->seed, fa_status_str(st));
        size_t before = (size_t)(b->grads_at - b->pool.base);
        cr_expect(memcmp(snap, b->pool.base, before) == 0, "the valid call changed an input byte");
        free(snap);
        memset(b->grads_at, TU_CANARY, b->grads_bytes);
    }
}

static unsigned char *last_element(const bad_setup *b, const fa_tensor *t)
{
    return (unsigned char *)t->data + (size_t)(tub_numel(t) - 1) * b->e;
}

static void run_bad_input(fa_dtype dt, void (*cases)(const bad_setup *))
{
    bad_setup b;
    setup(&b, dt);
    valid_call_succeeds(&b);
    cases(&b);
    teardown(&b);
}

/* ---- NULL ---------------------------------------------------------------------------------- */

static void null_cases(const bad_setup *b)
{
    bwd_args a = b->valid;
    a.lse = NULL;
    expect_refused(b, &a, FA_ERR_NULL, "lse NULL");
    for (int i = 0; i < N_T; i++) {
        char what[64];
        a = b->valid;
        a.null_tensor = i;
        snprintf(what, sizeof what, "%s NULL", tname[i]);
        expect_refused(b, &a, FA_ERR_NULL, what);
        a = b->valid;
        a.t[i].data = NULL;
        snprintf(what, sizeof what, "%s.data NULL", tname[i]);
        expect_refused(b, &a, FA_ERR_NULL, what);
    }
}

Test(backward_bad_input, null_lse_tensor_or_data_is_refused_and_nothing_written)
{
    run_bad_input(FA_F64, null_cases);
    run_bad_input(FA_F32, null_cases);
}

/* ---- ARG ----------------------------------------------------------------------------------- */

static void arg_cases(const bad_setup *b)
{
    bwd_args a = b->valid;
    a.p.scale = NAN;
    expect_refused(b, &a, FA_ERR_ARG, "scale NaN");
    a = b->valid;
    a.p.scale = INFINITY;
    expect_refused(b, &a, FA_ERR_ARG, "scale +inf");
    a = b->valid;
    a.p.causal = (fa_causal)7;
    expect_refused(b, &a, FA_ERR_ARG, "causal 7");
    a = b->valid;
    a.p.window_left = -2;
    expect_refused(b, &a, FA_ERR_ARG, "window_left -2");
}

Test(backward_bad_input, bad_params_are_refused_and_nothing_written)
{
    run_bad_input(FA_F64, arg_cases);
    run_bad_input(FA_F32, arg_cases);
}

/* ---- DTYPE --------------------------------------------------------------------------------- */

static void dtype_cases(const bad_setup *b)
{
    fa_dtype other = b->dt == FA_F64 ? FA_F32 : FA_F64;
    for (int i = 0; i < N_T; i++) {
        char what[64];
        bwd_args a = b->valid;
        a.t[i].dtype = other;
        snprintf(what, sizeof what, "%s of the other dtype", tname[i]);
        expect_refused(b, &a, FA_ERR_DTYPE, what);
        a = b->valid;
        a.t[i].dtype = (fa_dtype)9;
        snprintf(what, sizeof what, "%s of unknown dtype 9", tname[i]);
        expect_refused(b, &a, FA_ERR_DTYPE, what);
    }
}

/* The half-precision contract (flashattn.h, fa_backward): q, out, dout and dq share q's dtype; k,
 * v, dk and dv share k's; (q, k) is one type or f32 q over bf16/f16 k; the bias is the
 * accumulation type. Every dtype is set here, so the setup's own dtype does not matter. */
static void set_groups(bwd_args *a, fa_dtype q, fa_dtype k)
{
    for (int i = 0; i < N_T; i++) a->t[i].dtype = i == K || i == V || i == DK || i == DV ? k : q;
    a->bias.dtype = q == FA_F64 ? FA_F64 : FA_F32;
}

static void half_dtype_cases(const bad_setup *b)
{
    static const fa_dtype refused[][2] = {
        {FA_BF16, FA_F16}, {FA_F16, FA_F32}, {FA_F64, FA_BF16}, {FA_BF16, FA_F32}, {FA_F16, FA_F64}};
    static const char *const name[4] = {"f32", "f64", "bf16", "f16"};
    char what[96];
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        bwd_args a = b->modified; /* the bias in use too */
        set_groups(&a, refused[i][0], refused[i][1]);
        snprintf(what, sizeof what, "q group %s, k group %s", name[refused[i][0]], name[refused[i][1]]);
        expect_refused(b, &a, FA_ERR_DTYPE, what);
    }
    /* over each allowed pair, each of the nine tensors but the leaders off its group's dtype, and
     * the bias off the accumulation type */
    static const fa_dtype allowed[][2] = {
        {FA_BF16, FA_BF16}, {FA_F16, FA_F16}, {FA_F32, FA_BF16}, {FA_F32, FA_F16}};
    for (size_t p = 0; p < sizeof allowed / sizeof *allowed; p++) {
        for (int i = 0; i < N_T; i++) {
            if (i == Q || i == K) continue;
            bwd_args a = b->modified;
            set_groups(&a, allowed[p][0], allowed[p][1]);
            fa_dtype own = a.t[i].dtype;
            a.t[i].dtype = own == FA_F32 ? allowed[p][1] : FA_F32;
            snprintf(what, sizeof what, "q group %s, k group %s, %s %s", name[allowed[p][0]],
                     name[allowed[p][1]], tname[i], name[a.t[i].dtype]);
            expect_refused(b, &a, FA_ERR_DTYPE, what);
        }
        bwd_args a = b->modified;
        set_groups(&a, allowed[p][0], allowed[p][1]);
        a.bias.dtype = allowed[p][1]; /* a half bias: q's dtype or k's, never the accumulation type */
        snprintf(what, sizeof what, "q group %s, k group %s, bias %s", name[allowed[p][0]],
                 name[allowed[p][1]], name[a.bias.dtype]);
        expect_refused(b, &a, FA_ERR_DTYPE, what);
    }
}

Test(backward_bad_input, half_precision_dtypes_outside_the_contract_are_refused_and_nothing_written)
{
    run_bad_input(FA_F64, half_dtype_cases);
    run_bad_input(FA_F32, half_dtype_cases);
}

Test(backward_bad_input, dtype_mismatch_is_refused_and_nothing_written)
{
    run_bad_input(FA_F64, dtype_cases);
    run_bad_input(FA_F32, dtype_cases);
}

/* ---- SHAPE --------------------------------------------------------------------------------- */

static int64_t *size_field(fa_tensor *t, int f)
{
    return f == 0 ? &t->batch : f == 1 ? &t->heads : f == 2 ? &t->seq : &t->dim;
}

static void shape_cases(const bad_setup *b)
{
    static const char *fname[4] = {"batch", "heads", "seq", "dim"};
    /* Every size of every tensor, one at a time, one smaller and one larger than its partner's
     * (dout/out, dq/q, dk/k, dv/v; and q, k, v, out among themselves as in the forward). */
    for (int i = 0; i < N_T; i++)
        for (int f = 0; f < 4; f++)
            for (int delta = -1; delta <= 1; delta += 2) {
                bwd_args a = b->valid;
                int64_t *x = size_field(&a.t[i], f);
                if (*x + delta < 1) continue; /* a 0 size would make the view empty, not mismatched */
                *x += delta;
                char what[64];
                snprintf(what, sizeof what, "%s.%s %+d", tname[i], fname[f], delta);
                expect_refused(b, &a, FA_ERR_SHAPE, what);
            }
    /* Sizes wrong for every tensor alike: Hq % Hkv != 0, D or Dv outside 1..FA_MAX_HEAD_DIM, negative. */
    bwd_args a = b->valid;
    a.t[K].heads = a.t[V].heads = a.t[DK].heads = a.t[DV].heads = 3;
    expect_refused(b, &a, FA_ERR_SHAPE, "Hq 4 with Hkv 3");
    a = b->valid;
    a.t[Q].dim = a.t[K].dim = a.t[DQ].dim = a.t[DK].dim = 0;
    expect_refused(b, &a, FA_ERR_SHAPE, "D 0");
    a = b->valid;
    a.t[V].dim = a.t[OUT].dim = a.t[DOUT].dim = a.t[DV].dim = FA_MAX_HEAD_DIM + 1;
    expect_refused(b, &a, FA_ERR_SHAPE, "Dv FA_MAX_HEAD_DIM + 1");
    a = b->valid;
    a.t[DQ].seq = -1;
    expect_refused(b, &a, FA_ERR_SHAPE, "dq.seq -1");
}

Test(backward_bad_input, shape_mismatch_between_partners_is_refused_and_nothing_written)
{
    run_bad_input(FA_F64, shape_cases);
    run_bad_input(FA_F32, shape_cases);
}

/* ---- STRIDE -------------------------------------------------------------------------------- */

static void stride_cases(const bad_setup *b)
{
    for (int i = DQ; i <= DV; i++) {
        char what[96];
        bwd_args a = b->valid;
        a.t[i].stride_seq = a.t[i].dim - 1; /* consecutive rows share an element */
        snprintf(what, sizeof what, "%s overlapping itself (stride_seq = dim - 1)", tname[i]);
        expect_refused(b, &a, FA_ERR_STRIDE, what);
        a = b->valid;
        a.t[i].stride_head = 0; /* every head on the same elements: fine for an input, not an output */
        snprintf(what, sizeof what, "%s broadcast over heads (stride_head 0)", tname[i]);
        expect_refused(b, &a, FA_ERR_STRIDE, what);
        a = b->valid;
        a.t[i].stride_batch = a.t[i].stride_head; /* batch 1 lands on head 1 */
        snprintf(what, sizeof what, "%s with batches interleaved into heads", tname[i]);
        expect_refused(b, &a, FA_ERR_STRIDE, what);
        a = b->valid;
        a.t[i].stride_seq = -a.t[i].dim;
        snprintf(what, sizeof what, "%s with a negative stride", tname[i]);
        expect_refused(b, &a, FA_ERR_STRIDE, what);
        a = b->valid;
        a.t[i].stride_batch = INT64_MAX / 2;
        snprintf(what, sizeof what, "%s with offsets overflowing int64", tname[i]);
        expect_refused(b, &a, FA_ERR_STRIDE, what);
    }
    bwd_args a = b->valid;
    a.t[DOUT].stride_seq = -1;
    expect_refused(b, &a, FA_ERR_STRIDE, "dout with a negative stride");
}

Test(backward_bad_input, self_overlapping_or_bad_strides_are_refused_and_nothing_written)
{
    run_bad_input(FA_F64, stride_cases);
    run_bad_input(FA_F32, stride_cases);
}

/* ---- ALIAS --------------------------------------------------------------------------------- */

static void alias_cases(const bad_setup *b)
{
    char what[96];
    /* Every gradient against every tensor input and every other gradient: re-pointed onto the
     * other's first element (full overlap) and onto its last element (one element shared), both
     * ways round (the gradient moved, or the other view moved onto the gradient). */
    for (int g = DQ; g <= DV; g++)
        for (int i = 0; i < N_T; i++) {
            if (i == g) continue;
            for (int partial = 0; partial < 2; partial++)
                for (int move_grad = 0; move_grad < 2; move_grad++) {
                    bwd_args a = b->valid;
                    int moved = move_grad ? g : i, onto = move_grad ? i : g;
                    a.t[moved].data = partial ? last_element(b, &b->valid.t[onto]) : b->valid.t[onto].data;
                    snprintf(what, sizeof what, "%s re-pointed onto the %s element of %s", tname[moved],
                             partial ? "last" : "first", tname[onto]);
                    expect_refused(b, &a, FA_ERR_ALIAS, what);
                }
        }
    /* Every gradient against lse, both ways round. */
    for (int g = DQ; g <= DV; g++)
        for (int partial = 0; partial < 2; partial++) {
            bwd_args a = b->valid;
            a.t[g].data = b->lse_at + (partial ? 3 * b->e : 0);
            snprintf(what, sizeof what, "%s re-pointed into lse (element %d)", tname[g], partial ? 3 : 0);
            expect_refused(b, &a, FA_ERR_ALIAS, what);
            a = b->valid;
            a.lse = partial ? last_element(b, &b->valid.t[g]) : b->valid.t[g].data;
            snprintf(what, sizeof what, "lse re-pointed onto the %s element of %s",
                     partial ? "last" : "first", tname[g]);
            expect_refused(b, &a, FA_ERR_ALIAS, what);
        }
}

Test(backward_bad_input, gradients_overlapping_any_input_or_each_other_are_refused_and_nothing_written)
{
    run_bad_input(FA_F64, alias_cases);
    run_bad_input(FA_F32, alias_cases);
}

/* ---- overlapping inputs are not aliases ----------------------------------------------------- */

/* Inputs may share memory (only outputs are judged): k on q's first elements, v on k's (shared
 * projections), dout on out (L = ½‖out‖²). The call succeeds and matches the oracle on the same
 * views (f64 rule of test 1). */
static void shared_input_case(const bad_setup *b)
{
    bwd_args a = b->valid;
    a.t[K].data = a.t[Q].data;
    a.t[V].data = a.t[K].data;
    a.t[DOUT].data = a.t[OUT].data;
    cr_assert_eq(fa_forward(b->ctx, &a.p, &a.t[Q], &a.t[K], &a.t[V], &a.t[OUT], b->lse_at), FA_OK);
    fa_status st = call(b, &a);
    cr_assert_eq(st, FA_OK, "seed %llu: overlapping inputs refused with status %d (%s)",
                 (unsigned long long)b->seed, st, fa_status_str(st));
    static const char *names[3] = {"dq", "dk", "dv"};
    double *ref[3];
    for (int g = 0; g < 3; g++) ref[g] = malloc(sizeof(double) * (size_t)(tub_numel(&a.t[DQ + g]) + 1));
    ref_backward(&a.p, &a.t[Q], &a.t[K], &a.t[V], &a.t[DOUT], ref[0], ref[1], ref[2]);
    for (int g = 0; g < 3; g++) {
        tub_err e = tub_compare_view(&a.t[DQ + g], ref[g], NULL);
        cr_expect(e.mismatches == 0 && e.max_err <= 1e-11 * e.max_ref,
                  "seed %llu: %s with overlapping inputs: max error %.3e, max |ref| %.3e, %lld non-finite "
                  "mismatches",
                  (unsigned long long)b->seed, names[g], e.max_err, e.max_ref, (long long)e.mismatches);
        free(ref[g]);
    }
}

Test(backward_bad_input, inputs_overlapping_each_other_are_accepted)
{
    run_bad_input(FA_F64, shared_input_case);
}

/* ---- the score modifiers' arguments ---------------------------------------------------------- */

static void modifier_null_arg_dtype_shape_cases(const bad_setup *b)
{
    bwd_args a = b->modified;
    a.p.sinks = NULL;
    expect_refused(b, &a, FA_ERR_NULL, "dsinks set, sinks NULL");
    a = b->modified;
    a.bias.data = NULL;
    expect_refused(b, &a, FA_ERR_NULL, "bias.data NULL");
    static const struct {
        const char *what;
        double x;
    } softcaps[] = {
        {"softcap NaN", NAN}, {"softcap +inf", INFINITY}, {"softcap -inf", -INFINITY}, {"softcap -1", -1.0}};
    for (size_t i = 0; i < sizeof softcaps / sizeof *softcaps; i++) {
        a = b->modified;
        a.p.softcap = softcaps[i].x;
        expect_refused(b, &a, FA_ERR_ARG, softcaps[i].what);
    }
    a = b->modified;
    a.p.window_right = INT64_MIN;
    expect_refused(b, &a, FA_ERR_ARG, "window_right INT64_MIN");
    a = b->modified;
    a.bias.dtype = b->dt == FA_F64 ? FA_F32 : FA_F64;
    expect_refused(b, &a, FA_ERR_DTYPE, "bias of the other dtype");
    a = b->modified;
    a.bias = fa_tensor_bhsd(a.bias.data, b->dt, a.bias.batch, a.bias.heads, a.bias.seq, 1);
    /* no stride for dim: the nearest form of a broadcast key axis, one column for all keys */
    expect_refused(b, &a, FA_ERR_SHAPE, "bias.dim 1 (a broadcast key axis)");
    a = b->modified;
    a.bias.heads = a.t[K].heads;
    expect_refused(b, &a, FA_ERR_SHAPE, "bias.heads Hkv");
    a = b->modified;
    a.bias.seq = a.t[Q].seq + 1;
    expect_refused(b, &a, FA_ERR_SHAPE, "bias.seq Nq + 1");
    a = b->modified;
    a.bias.batch = a.t[Q].batch + 1;
    expect_refused(b, &a, FA_ERR_SHAPE, "bias.batch B + 1");
}

Test(backward_bad_input, bad_modifier_arguments_are_refused_and_nothing_written)
{
    run_bad_input(FA_F64, modifier_null_arg_dtype_shape_cases);
    run_bad_input(FA_F32, modifier_null_arg_dtype_shape_cases);
}

static const float **array_field(bwd_args *a, int which)
{
    return which == 0 ? &a->p.alibi_slopes : &a->p.sinks;
}

static void modifier_stride_cases(const bad_setup *b)
{
    static const char *const array_name[3] = {"alibi_slopes", "sinks", "dsinks"};
    for (int which = 0; which < 3; which++)
        for (int off = 1; off < 4; off++) {
            bwd_args a = b->modified;
            if (which < 2) {
                const float **f = array_field(&a, which);
                *f = (const float *)(const void *)((const unsigned char *)*f + off);
            } else
                a.p.dsinks = (float *)(void *)((unsigned char *)a.p.dsinks + off);
            char what[64];
            snprintf(what, sizeof what, "%s %d bytes past a float boundary", array_name[which], off);
            expect_refused(b, &a, FA_ERR_STRIDE, what);
        }
    bwd_args a = b->modified;
    a.bias.data = (unsigned char *)a.bias.data + b->e / 2;
    expect_refused(b, &a, FA_ERR_STRIDE, "bias half an element past an element boundary");
    a = b->modified;
    a.bias.stride_head = -1;
    expect_refused(b, &a, FA_ERR_STRIDE, "bias with a negative stride");
    a = b->modified;
    a.bias.stride_batch = INT64_MAX / 2;
    expect_refused(b, &a, FA_ERR_STRIDE, "bias with offsets overflowing int64");
}

Test(backward_bad_input, misaligned_modifier_arrays_and_bad_bias_strides_are_refused_and_nothing_written)
{
    run_bad_input(FA_F64, modifier_stride_cases);
    run_bad_input(FA_F32, modifier_stride_cases);
}

/* The outputs are dq, dk, dv and dsinks; the bias, alibi_slopes and sinks are inputs. Every output
 * re-pointed onto the first and onto the last element of every modifier input, dsinks also onto
 * every tensor and lse, and every gradient onto dsinks. */
enum { M_BIAS, M_SLOPES, M_SINKS, M_DSINKS, M_TENSOR, M_LSE };

static unsigned char *first_of(const bad_setup *b, const bwd_args *a, int kind, int ti)
{
    switch (kind) {
    case M_BIAS: return a->bias.data;
    case M_SLOPES: return (unsigned char *)(uintptr_t)a->p.alibi_slopes;
    case M_SINKS: return (unsigned char *)(uintptr_t)a->p.sinks;
    case M_DSINKS: return (unsigned char *)a->p.dsinks;
    case M_LSE: return b->lse_at;
    default: return a->t[ti].data;
    }
}

static size_t bytes_of(const bad_setup *b, const bwd_args *a, int kind, int ti)
{
    switch (kind) {
    case M_BIAS: return (size_t)tub_numel(&a->bias) * b->e;
    case M_SLOPES:
    case M_SINKS:
    case M_DSINKS: return HQ * sizeof(float);
    case M_LSE: return (size_t)(a->t[Q].batch * a->t[Q].heads * a->t[Q].seq) * b->e;
    default: return (size_t)tub_numel(&a->t[ti]) * b->e;
    }
}

static const char *name_of(int kind, int ti)
{
    static const char *const names[6] = {"bias", "alibi_slopes", "sinks", "dsinks", NULL, "lse"};
    return kind == M_TENSOR ? tname[ti] : names[kind];
}

static void move_output(bwd_args *a, int kind, int ti, unsigned char *at)
{
    if (kind == M_DSINKS)
        a->p.dsinks = (float *)(void *)at;
    else
        a->t[ti].data = at;
}

static void modifier_alias_cases(const bad_setup *b)
{
    const int out_kind[4] = {M_TENSOR, M_TENSOR, M_TENSOR, M_DSINKS}, out_ti[4] = {DQ, DK, DV, -1};
    for (int o = 0; o < 4; o++) {
        const size_t moved_elem = out_kind[o] == M_DSINKS ? sizeof(float) : b->e;
        for (int x = 0; x < 3 + N_T + 2; x++) {
            /* onto: bias, slopes, sinks; then (dsinks only) the eight tensors and lse; and, for a
             * gradient, dsinks */
            int kind, ti = -1;
            if (x < 3)
                kind = x; /* M_BIAS, M_SLOPES, M_SINKS */
            else if (x < 3 + N_T) {
                kind = M_TENSOR, ti = x - 3;
                if (out_kind[o] != M_DSINKS) continue; /* gradients against tensors: alias_cases above */
            } else if (x == 3 + N_T) {
                kind = M_LSE;
                if (out_kind[o] != M_DSINKS) continue;
            } else {
                kind = M_DSINKS;
                if (out_kind[o] == M_DSINKS) continue;
            }
            for (int last = 0; last < 2; last++) {
                /* the output starts on onto's first element, or its first element holds onto's
                 * last byte (rounded down to the moved element size, so the case stays aligned) */
                bwd_args a = b->modified;
                unsigned char *at = first_of(b, &a, kind, ti);
                if (last) at += (bytes_of(b, &a, kind, ti) - 1) / moved_elem * moved_elem;
                move_output(&a, out_kind[o], out_ti[o], at);
                char what[96];
                snprintf(what, sizeof what, "%s re-pointed onto the %s element of %s",
                         name_of(out_kind[o], out_ti[o]), last ? "last" : "first", name_of(kind, ti));
                expect_refused(b, &a, FA_ERR_ALIAS, what);
            }
        }
    }
}

Test(backward_bad_input, outputs_overlapping_modifier_arguments_or_dsinks_overlapping_anything_are_refused)
{
    run_bad_input(FA_F64, modifier_alias_cases);
    run_bad_input(FA_F32, modifier_alias_cases);
}

/* The bias, alibi_slopes and sinks may overlap the backward's other inputs (q, k, v, out, dout,
 * lse): accepted, and read like copies of the same bytes (dq, dk, dv and dsinks bitwise equal). */
static void modifiers_on_inputs_case(const bad_setup *b)
{
    const int64_t Nk = b->valid.t[K].seq;
    for (int where = 0; where < 3; where++) {
        bwd_args a = b->modified, c;
        static const char *const name[3] = {"on out", "inside dout", "inside lse"};
        unsigned char *base = where == 0 ? a.t[OUT].data : where == 1 ? a.t[DOUT].data : b->lse_at;
        if (where == 0) a.bias = fa_tensor_bhsd(base, b->dt, a.t[Q].batch, 1, a.t[Q].seq, Nk);
        if (where == 1) a.bias = fa_tensor_bhsd(base + 3 * b->e, b->dt, 1, a.t[Q].heads, 1, Nk);
        if (where == 2) a.bias = fa_tensor_bhsd(base + b->e, b->dt, 1, 1, 1, Nk);
        a.p.alibi_slopes = (const float *)(const void *)(base + 2 * b->e);
        a.p.sinks = (const float *)(const void *)(base + 4 * b->e);
        /* c: the same bytes in memory of their own */
        size_t bias_bytes = (size_t)tub_numel(&a.bias) * b->e, heads = HQ * sizeof(float);
        tu_buf copy = tu_buf_alloc(bias_bytes + 2 * heads);
        unsigned char *cp = tu_buf_data(&copy);
        c = a;
        memcpy(cp, a.bias.data, bias_bytes);
        c.bias.data = cp;
        memcpy(cp + bias_bytes, a.p.alibi_slopes, heads);
        memcpy(cp + bias_bytes + heads, a.p.sinks, heads);
        c.p.alibi_slopes = (const float *)(const void *)(cp + bias_bytes);
        c.p.sinks = (const float *)(const void *)(cp + bias_bytes + heads);
        fa_status st = call(b, &a);
        cr_expect_eq(st, FA_OK, "%s, bias, slopes and sinks %s, seed %llu: refused with %s",
                     b->dt == FA_F64 ? "f64" : "f32", name[where], (unsigned long long)b->seed,
                     fa_status_str(st));
        unsigned char *first = malloc(b->grads_bytes);
        cr_assert(first);
        memcpy(first, b->grads_at, b->grads_bytes);
        memset(b->grads_at, TU_CANARY, b->grads_bytes);
        cr_assert_eq(call(b, &c), FA_OK);
        cr_expect(
            memcmp(first, b->grads_at, b->grads_bytes) == 0,
            "%s, bias, slopes and sinks %s, seed %llu: dq, dk, dv or dsinks differ from the call on copies",
            b->dt == FA_F64 ? "f64" : "f32", name[where], (unsigned long long)b->seed);
        memset(b->grads_at, TU_CANARY, b->grads_bytes);
        free(first);
        tu_buf_free(&copy);
    }
}

Test(backward_bad_input, modifier_arguments_overlapping_inputs_are_accepted_and_read_like_copies)
{
    run_bad_input(FA_F64, modifiers_on_inputs_case);
    run_bad_input(FA_F32, modifiers_on_inputs_case);
}
