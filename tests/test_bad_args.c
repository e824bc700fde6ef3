/* SPDX-License-Identifier: BSD-3-Clause */
/* Bad input, part 2: dtypes, aliasing outputs, scalar and enum arguments, features this build
 * lacks, several problems at once (the first class in the order NULL, ARG, DTYPE, SHAPE, STRIDE,
 * ALIAS, UNSUPPORTED wins), the context and stats calls, each also for the score modifiers'
 * arguments; and valid edge cases that must not be refused (those of the score modifiers are in
 * test_modifier_edges.c). Part 1 is test_bad_input.c. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bad_input.h"

/* ---- FA_ERR_DTYPE --------------------------------------------------------------------------- */
static void all_dtypes_unknown(fixture *f)
{
    f->q.dtype = f->k.dtype = f->v.dtype = f->out.dtype = (fa_dtype)7;
}
static void all_dtypes_negative(fixture *f)
{
    f->q.dtype = f->k.dtype = f->v.dtype = f->out.dtype = (fa_dtype)-1;
}
static void q_dtype_unknown(fixture *f)
{
    f->q.dtype = (fa_dtype)4;
}
static void q_dtype_differs(fixture *f)
{
    f->q.dtype = f->dt == FA_F32 ? FA_F64 : FA_F32;
}
static void v_dtype_differs(fixture *f)
{
    f->v.dtype = f->dt == FA_F32 ? FA_F64 : FA_F32;
}
static void out_dtype_differs(fixture *f)
{
    f->out.dtype = f->dt == FA_F32 ? FA_F64 : FA_F32;
}
static void k_bf16_with_others_not(fixture *f)
{
    f->k.dtype = FA_BF16;
}
static void bias_dtype_differs(fixture *f)
{
    f->params.bias = &f->bias; /* the bias has the dtype of q */
    f->bias.dtype = f->dt == FA_F32 ? FA_F64 : FA_F32;
}
static void bias_dtype_unknown(fixture *f)
{
    f->params.bias = &f->bias;
    f->bias.dtype = (fa_dtype)5;
}
static void bias_bf16_with_others_not(fixture *f)
{
    f->params.bias = &f->bias;
    f->bias.dtype = FA_BF16;
}

/* The half-precision contract (flashattn.h, fa_forward): q and out share q's dtype, k and v share
 * k's; (q, k) is one type, or f32 q over bf16/f16 k; the bias is the accumulation type (f32 unless
 * q is f64). Every dtype below is set, so the fixture's own dtype does not matter. */
static void set_dtypes(fixture *f, fa_dtype q, fa_dtype k)
{
    f->q.dtype = f->out.dtype = q;
    f->k.dtype = f->v.dtype = k;
    f->bias.dtype = q == FA_F64 ? FA_F64 : FA_F32;
}
static void q_bf16_k_f16(fixture *f)
{
    set_dtypes(f, FA_BF16, FA_F16);
}
static void q_f16_k_f32(fixture *f)
{
    set_dtypes(f, FA_F16, FA_F32);
}
static void q_f64_k_bf16(fixture *f)
{
    set_dtypes(f, FA_F64, FA_BF16);
}
static void q_bf16_k_f32(fixture *f) /* the reverse of the allowed f32 q over a bf16 k */
{
    set_dtypes(f, FA_BF16, FA_F32);
}
static void out_f64_with_q_bf16(fixture *f) /* f32 is allowed in the forward: partial results */
{
    set_dtypes(f, FA_BF16, FA_BF16);
    f->out.dtype = FA_F64;
}
static void out_bf16_with_q_f32_k_bf16(fixture *f)
{
    set_dtypes(f, FA_F32, FA_BF16);
    f->out.dtype = FA_BF16;
}
static void v_f32_with_k_f16(fixture *f)
{
    set_dtypes(f, FA_F32, FA_F16);
    f->v.dtype = FA_F32;
}
static void v_bf16_with_k_f16(fixture *f)
{
    set_dtypes(f, FA_F16, FA_F16);
    f->v.dtype = FA_BF16;
}
static void bias_bf16_with_q_bf16(fixture *f)
{
    set_dtypes(f, FA_BF16, FA_BF16);
    f->params.bias = &f->bias;
    f->bias.dtype = FA_BF16; /* q's dtype, not the accumulation type */
}
static void bias_f16_with_q_f32_k_f16(fixture *f)
{
    set_dtypes(f, FA_F32, FA_F16);
    f->params.bias = &f->bias;
    f->bias.dtype = FA_F16;
}

Test(bad_input, half_precision_dtype_mixes_outside_the_contract_return_err_dtype_and_write_nothing)
{
    static const bad_case cases[] = {
        CASE(q_bf16_k_f16, FA_ERR_DTYPE),          CASE(q_f16_k_f32, FA_ERR_DTYPE),
        CASE(q_f64_k_bf16, FA_ERR_DTYPE),          CASE(q_bf16_k_f32, FA_ERR_DTYPE),
        CASE(out_f64_with_q_bf16, FA_ERR_DTYPE),   CASE(out_bf16_with_q_f32_k_bf16, FA_ERR_DTYPE),
        CASE(v_f32_with_k_f16, FA_ERR_DTYPE),      CASE(v_bf16_with_k_f16, FA_ERR_DTYPE),
        CASE(bias_bf16_with_q_bf16, FA_ERR_DTYPE), CASE(bias_f16_with_q_f32_k_f16, FA_ERR_DTYPE),
    };
    bi_run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

Test(bad_input, unknown_or_mixed_dtypes_return_err_dtype_and_write_nothing)
{
    static const bad_case cases[] = {
        CASE(all_dtypes_unknown, FA_ERR_DTYPE),     CASE(all_dtypes_negative, FA_ERR_DTYPE),
        CASE(q_dtype_unknown, FA_ERR_DTYPE),        CASE(q_dtype_differs, FA_ERR_DTYPE),
        CASE(v_dtype_differs, FA_ERR_DTYPE),        CASE(out_dtype_differs, FA_ERR_DTYPE),
        CASE(k_bf16_with_others_not, FA_ERR_DTYPE), CASE(bias_dtype_differs, FA_ERR_DTYPE),
        CASE(bias_dtype_unknown, FA_ERR_DTYPE),     CASE(bias_bf16_with_others_not, FA_ERR_DTYPE),
    };
    bi_run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- FA_ERR_ALIAS --------------------------------------------------------------------------- */
static int64_t out_span(void)
{
    return (int64_t)B * HQ * NQ * DV;
}
static void out_is_q(fixture *f)
{
    f->out.data = f->q.data;
}
static void out_inside_k(fixture *f)
{
    f->out.data = (unsigned char *)f->k.data + 5 * f->e;
}
static void out_overlaps_v_start(fixture *f)
{
    f->out.data = (unsigned char *)f->v.data;
}
static void out_ends_on_first_element_of_q(fixture *f)
{
    f->out.data = (unsigned char *)f->q.data - (out_span() - 1) * (int64_t)f->e;
}
static void out_starts_on_last_element_of_q(fixture *f)
{
    f->out.data = (unsigned char *)f->q.data + ((int64_t)B * HQ * NQ * D - 1) * (int64_t)f->e;
}
static void lse_inside_q(fixture *f)
{
    f->lse = (unsigned char *)f->q.data + 4 * f->e;
}
static void lse_inside_k(fixture *f)
{
    f->lse = f->k.data;
}
static void lse_inside_v(fixture *f)
{
    f->lse = (unsigned char *)f->v.data + 17 * f->e;
}
static void lse_inside_out(fixture *f)
{
    f->lse = (unsigned char *)f->out.data + 8 * f->e;
}
static void lse_ends_on_first_element_of_out(fixture *f)
{
    f->out.data = (unsigned char *)f->out.data + 1024 * f->e;
    f->lse = (unsigned char *)f->out.data - ((int64_t)B * HQ * NQ - 1) * (int64_t)f->e;
}
/* The bias, alibi_slopes and sinks are inputs: an output must not overlap them. */
static void out_on_bias(fixture *f)
{
    f->params.bias = &f->bias;
    f->out.data = f->bias.data;
}
static void out_ends_on_first_element_of_bias(fixture *f)
{
    f->params.bias = &f->bias;
    f->bias.data = (unsigned char *)f->out.data + (out_span() - 1) * (int64_t)f->e;
}
static void lse_inside_bias(fixture *f)
{
    f->params.bias = &f->bias;
    f->lse = (unsigned char *)f->bias.data + 100 * f->e;
}
static void out_on_a_broadcast_bias_row(fixture *f)
{
    f->params.bias = &f->bias; /* [1][1][1][NK]: one row, still an input */
    f->bias = fa_tensor_bhsd((unsigned char *)f->out.data + 7 * f->e, f->dt, 1, 1, 1, NK);
}
static void alibi_slopes_inside_out(fixture *f)
{
    f->params.alibi_slopes = (const float *)(const void *)((unsigned char *)f->out.data + 8 * f->e);
}
static void sinks_on_lse(fixture *f)
{
    f->params.sinks = (const float *)f->lse;
}
static void sinks_last_on_first_element_of_out(fixture *f)
{
    f->params.sinks = (const float *)(const void *)((unsigned char *)f->out.data - (HQ - 1) * sizeof(float));
}
Test(bad_input, outputs_overlapping_inputs_or_each_other_return_err_alias_and_write_nothing)
{
    static const bad_case cases[] = {
        CASE(out_is_q, FA_ERR_ALIAS),
        CASE(out_inside_k, FA_ERR_ALIAS),
        CASE(out_overlaps_v_start, FA_ERR_ALIAS),
        CASE(out_ends_on_first_element_of_q, FA_ERR_ALIAS),
        CASE(out_starts_on_last_element_of_q, FA_ERR_ALIAS),
        CASE(lse_inside_q, FA_ERR_ALIAS),
        CASE(lse_inside_k, FA_ERR_ALIAS),
        CASE(lse_inside_v, FA_ERR_ALIAS),
        CASE(lse_inside_out, FA_ERR_ALIAS),
        CASE(lse_ends_on_first_element_of_out, FA_ERR_ALIAS),
        CASE(out_on_bias, FA_ERR_ALIAS),
        CASE(out_ends_on_first_element_of_bias, FA_ERR_ALIAS),
        CASE(lse_inside_bias, FA_ERR_ALIAS),
        CASE(out_on_a_broadcast_bias_row, FA_ERR_ALIAS),
        CASE(alibi_slopes_inside_out, FA_ERR_ALIAS),
        CASE(sinks_on_lse, FA_ERR_ALIAS),
        CASE(sinks_last_on_first_element_of_out, FA_ERR_ALIAS),
    };
    bi_run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- FA_ERR_ARG ----------------------------------------------------------------------------- */
static void scale_nan(fixture *f)
{
    f->params.scale = NAN;
}
static void scale_plus_inf(fixture *f)
{
    f->params.scale = INFINITY;
}
static void scale_minus_inf(fixture *f)
{
    f->params.scale = -INFINITY;
}
static void causal_3(fixture *f)
{
    f->params.causal = (fa_causal)3;
}
static void causal_negative(fixture *f)
{
    f->params.causal = (fa_causal)-1;
}
static void window_left_minus_2(fixture *f)
{
    f->params.window_left = -2;
}
static void window_right_minus_5(fixture *f)
{
    f->params.window_right = -5;
}
static void window_left_int64_min(fixture *f)
{
    f->params.window_left = INT64_MIN;
}
static void softcap_nan(fixture *f)
{
    f->params.softcap = NAN;
}
static void softcap_negative(fixture *f)
{
    f->params.softcap = -1.0;
}
static void softcap_minus_inf(fixture *f)
{
    f->params.softcap = -INFINITY;
}
static void softcap_plus_inf(fixture *f)
{
    f->params.softcap = INFINITY;
}
static void softcap_minus_nan(fixture *f)
{
    f->params.softcap = -NAN;
}
static void softcap_minus_dbl_min(fixture *f)
{
    f->params.softcap = -DBL_MIN;
}
static void window_right_int64_min(fixture *f)
{
    f->params.window_right = INT64_MIN;
}
static void windows_both_minus_2_with_causal(fixture *f)
{
    f->params.causal = FA_CAUSAL_TOP_LEFT;
    f->params.window_left = f->params.window_right = -2;
}

Test(bad_input, invalid_scalars_and_enums_return_err_arg_and_write_nothing)
{
    static const bad_case cases[] = {
        CASE(scale_nan, FA_ERR_ARG),
        CASE(scale_plus_inf, FA_ERR_ARG),
        CASE(scale_minus_inf, FA_ERR_ARG),
        CASE(causal_3, FA_ERR_ARG),
        CASE(causal_negative, FA_ERR_ARG),
        CASE(window_left_minus_2, FA_ERR_ARG),
        CASE(window_right_minus_5, FA_ERR_ARG),
        CASE(window_left_int64_min, FA_ERR_ARG),
        CASE(softcap_nan, FA_ERR_ARG),
        CASE(softcap_negative, FA_ERR_ARG),
        CASE(softcap_minus_inf, FA_ERR_ARG),
        CASE(softcap_plus_inf, FA_ERR_ARG),
        CASE(softcap_minus_nan, FA_ERR_ARG),
        CASE(softcap_minus_dbl_min, FA_ERR_ARG),
        CASE(window_right_int64_min, FA_ERR_ARG),
        CASE(windows_both_minus_2_with_causal, FA_ERR_ARG),
    };
    bi_run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- FA_ERR_UNSUPPORTED --------------------------------------------------------------------- */
/* A batch of sequences with dense queries and keys (one per batch entry, no arrays): valid alone,
 * but a bias with sequences is not supported (flashattn.h, fa_seqs). */
static fa_seqs dense_seqs = FA_SEQS_INIT;
static void bias_with_seqs(fixture *f)
{
    dense_seqs.batch = B;
    f->params.seqs = &dense_seqs;
    f->params.bias = &f->bias;
}
/* The same with a valid half-precision call (bf16 throughout, the bias of the accumulation type):
 * the dtypes pass, the request is still refused, and refused as unsupported, not for its dtype. */
static void bias_with_seqs_bf16(fixture *f)
{
    bias_with_seqs(f);
    set_dtypes(f, FA_BF16, FA_BF16);
}
static void bias_with_seqs_f32_over_f16(fixture *f)
{
    bias_with_seqs(f);
    set_dtypes(f, FA_F32, FA_F16);
}
Test(bad_input, features_not_in_this_build_return_err_unsupported_and_write_nothing)
{
    static const bad_case cases[] = {CASE(bias_with_seqs, FA_ERR_UNSUPPORTED),
                                     CASE(bias_with_seqs_bf16, FA_ERR_UNSUPPORTED),
                                     CASE(bias_with_seqs_f32_over_f16, FA_ERR_UNSUPPORTED)};
    bi_run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- several problems at once: the first class in the documented order wins ----------------- */
static void null_and_arg(fixture *f)
{
    f->q.data = NULL; /* NULL */
    scale_nan(f);
}
static void arg_and_dtype(fixture *f)
{
    causal_3(f);
    all_dtypes_unknown(f);
}
static void dtype_and_shape(fixture *f)
{
    q_dtype_differs(f);
    f->out.seq = NQ + 1; /* SHAPE */
}
static void shape_and_stride(fixture *f)
{
    f->v.seq = NK - 1;          /* SHAPE */
    f->out.stride_seq = DV - 1; /* STRIDE */
}
static void stride_and_alias(fixture *f)
{
    f->k.stride_head = -NK * D; /* STRIDE */
    lse_inside_q(f);
}
static void alias_and_unsupported(fixture *f)
{
    bias_with_seqs(f);
    out_is_q(f);
}
static void arg_and_unsupported(fixture *f)
{
    bias_with_seqs(f);
    softcap_negative(f);
}
static void dtype_and_unsupported(fixture *f)
{
    bias_with_seqs(f);
    q_dtype_unknown(f);
}
static void half_mix_and_unsupported(fixture *f)
{
    bias_with_seqs(f);
    q_bf16_k_f16(f); /* DTYPE */
}
static void half_mix_and_shape(fixture *f)
{
    q_f16_k_f32(f);    /* DTYPE */
    f->v.seq = NK - 1; /* SHAPE */
}
static void bias_null_data_and_softcap_nan(fixture *f)
{
    softcap_nan(f); /* ARG */
    f->params.bias = &f->bias;
    f->bias.data = NULL; /* NULL */
}
static void softcap_inf_and_bias_dtype(fixture *f)
{
    bias_dtype_differs(f); /* DTYPE */
    softcap_plus_inf(f);
}
static void bias_dtype_and_bias_dim(fixture *f)
{
    bias_dtype_unknown(f);
    f->bias.dim = NK + 1; /* SHAPE */
}
static void bias_dim_and_misaligned_sinks(fixture *f)
{
    f->params.sinks = (const float *)(const void *)((const unsigned char *)f->sinks + 1); /* STRIDE */
    f->params.bias = &f->bias;
    f->bias.dim = 1; /* SHAPE */
}
static void misaligned_slopes_and_out_on_bias(fixture *f)
{
    out_on_bias(f); /* ALIAS */
    f->params.alibi_slopes = (const float *)(const void *)((const unsigned char *)f->alibi + 3);
}
static void out_on_sinks_and_bias_with_seqs(fixture *f)
{
    bias_with_seqs(f);
    f->params.sinks = (const float *)f->out.data; /* ALIAS */
}

Test(bad_input, several_problems_report_the_first_class_in_documented_order)
{
    static const bad_case cases[] = {
        CASE(null_and_arg, FA_ERR_NULL),
        CASE(arg_and_dtype, FA_ERR_ARG),
        CASE(dtype_and_shape, FA_ERR_DTYPE),
        CASE(shape_and_stride, FA_ERR_SHAPE),
        CASE(stride_and_alias, FA_ERR_STRIDE),
        CASE(alias_and_unsupported, FA_ERR_ALIAS),
        CASE(arg_and_unsupported, FA_ERR_ARG),
        CASE(dtype_and_unsupported, FA_ERR_DTYPE),
        CASE(half_mix_and_unsupported, FA_ERR_DTYPE),
        CASE(half_mix_and_shape, FA_ERR_DTYPE),
        CASE(bias_null_data_and_softcap_nan, FA_ERR_NULL),
        CASE(softcap_inf_and_bias_dtype, FA_ERR_ARG),
        CASE(bias_dtype_and_bias_dim, FA_ERR_DTYPE),
        CASE(bias_dim_and_misaligned_sinks, FA_ERR_SHAPE),
        CASE(misaligned_slopes_and_out_on_bias, FA_ERR_STRIDE),
        CASE(out_on_sinks_and_bias_with_seqs, FA_ERR_ALIAS),
    };
    bi_run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- valid views that sit right next to each other are not aliases ---------------------------- */
Test(bad_input, adjacent_but_disjoint_views_are_accepted_and_correct)
{
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++) {
        fa_dtype dt = t ? FA_F64 : FA_F32;
        size_t e = tu_dtype_size(dt);
        int64_t nq_el = (int64_t)B * HQ * NQ * D, nk_el = (int64_t)B * HKV * NK * D,
                nv_el = (int64_t)B * HKV * NK * DV, no_el = (int64_t)B * HQ * NQ * DV,
                nl_el = (int64_t)B * HQ * NQ;
        /* One block: q | k | v | out | lse, each starting where the previous one ends. */
        tu_buf all = tu_buf_alloc((size_t)(nq_el + nk_el + nv_el + no_el + nl_el) * e);
        unsigned char *base = tu_buf_data(&all);
        tu_problem pr;
        memset(&pr, 0, sizeof pr);
        tu_shape s = {dt, B, HQ, HKV, NQ, NK, D, DV, TU_BHSD};
        pr.shape = s;
        pr.q = fa_tensor_bhsd(base, dt, B, HQ, NQ, D);
        pr.k = fa_tensor_bhsd(base + nq_el * (int64_t)e, dt, B, HKV, NK, D);
        pr.v = fa_tensor_bhsd(base + (nq_el + nk_el) * (int64_t)e, dt, B, HKV, NK, DV);
        pr.out = fa_tensor_bhsd(base + (nq_el + nk_el + nv_el) * (int64_t)e, dt, B, HQ, NQ, DV);
        pr.lse = base + (nq_el + nk_el + nv_el + no_el) * (int64_t)e;
        tu_rng rng = tu_rng_make(seed + (uint64_t)t);
        for (int64_t x = 0; x < nq_el + nk_el + nv_el; x++) {
            double val = tu_rng_uniform(&rng, -2, 2);
            if (dt == FA_F64)
                ((double *)base)[x] = val;
            else
                ((float *)base)[x] = (float)val;
        }
        fa_status st = fa_forward(NULL, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
        cr_expect_eq(st, FA_OK, "%s, seed %llu: adjacent q|k|v|out|lse refused with %d (%s)",
                     t ? "f64" : "f32", (unsigned long long)seed, st, fa_status_str(st));
        cr_expect(tu_buf_guards_intact(&all), "wrote outside the block");
        if (st == FA_OK) {
            char msg[512];
            int64_t *rows;
            int64_t n = tu_pick_rows(&pr, NULL, INT64_MAX, &rows);
            cr_expect(tu_check_accuracy(&pr, NULL, rows, n, 1e-12, msg, sizeof msg), "seed %llu: %s",
                      (unsigned long long)seed, msg);
            free(rows);
        }
        tu_buf_free(&all);
    }
}

/* ---- context and stats calls ---------------------------------------------------------------- */
Test(bad_input, context_create_refuses_bad_options_and_leaves_ctx_unchanged)
{
    tu_test_seed();
    cr_expect_eq(fa_context_create(NULL, NULL), FA_ERR_NULL);
    fa_context_opts good = FA_CONTEXT_OPTS_INIT;
    cr_expect_eq(fa_context_create(NULL, &good), FA_ERR_NULL);
    static const struct {
        const char *name;
        int num_threads, bind, block_q, block_k;
    } bad[] = {
        {"num_threads -1", -1, FA_BIND_AUTO, 0, 0},
        {"num_threads INT_MIN", -2147483647 - 1, FA_BIND_AUTO, 0, 0},
        {"block_q -1", 0, FA_BIND_AUTO, -1, 0},
        {"block_k -3", 0, FA_BIND_AUTO, 0, -3},
        {"bind 4", 0, 4, 0, 0},
        {"bind -1", 0, -1, 0, 0},
    };
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        static int marker;
        fa_context *ctx = (fa_context *)(void *)&marker;
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.num_threads = bad[i].num_threads;
        o.bind = (fa_bind)bad[i].bind;
        o.block_q = bad[i].block_q;
        o.block_k = bad[i].block_k;
        fa_status st = fa_context_create(&ctx, &o);
        cr_expect_eq(st, FA_ERR_ARG, "%s: status %d (%s)", bad[i].name, st, fa_status_str(st));
        cr_expect(ctx == (fa_context *)(void *)&marker, "%s: *ctx was written", bad[i].name);
    }
}

Test(bad_input, context_stats_refuses_null_and_writes_nothing)
{
    tu_test_seed();
    fa_stats st;
    memset(&st, TU_CANARY, sizeof st);
    fa_stats copy = st;
    cr_expect_eq(fa_context_stats(NULL, &st), FA_ERR_NULL);
    cr_expect(memcmp(&st, &copy, sizeof st) == 0, "fa_context_stats(NULL, &st) wrote st");
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    cr_expect_eq(fa_context_stats(ctx, NULL), FA_ERR_NULL);
    cr_expect_eq(fa_context_stats(NULL, NULL), FA_ERR_NULL);
    fa_context_destroy(ctx);
}

/* A stride only matters where its axis has more than one element: huge strides on axes of size 1
 * form no offset at all, so nothing overflows and the call is valid. */
Test(bad_input, huge_strides_on_axes_of_size_one_are_accepted_and_correct)
{
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++) {
        tu_shape s = {t ? FA_F64 : FA_F32, 1, 2, 1, 5, 7, 4, 3, TU_BHSD};
        tu_rng rng = tu_rng_make(seed + (uint64_t)t);
        tu_problem pr;
        tu_problem_make(&pr, &s, &rng, 2.0);
        pr.q.stride_batch = INT64_MAX;
        pr.k.stride_batch = INT64_MAX;
        pr.k.stride_head = INT64_MAX;
        pr.v.stride_batch = INT64_MAX / 3;
        pr.v.stride_head = INT64_MAX - 1;
        pr.out.stride_batch = INT64_MAX;
        fa_status st = fa_forward(NULL, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
        cr_expect_eq(st, FA_OK, "%s, seed %llu: status %d (%s)", t ? "f64" : "f32", (unsigned long long)seed,
                     st, fa_status_str(st));
        if (st == FA_OK) {
            char msg[512];
            int64_t *rows;
            int64_t n = tu_pick_rows(&pr, NULL, INT64_MAX, &rows);
            cr_expect(tu_check_accuracy(&pr, NULL, rows, n, 1e-12, msg, sizeof msg), "seed %llu: %s",
                      (unsigned long long)seed, msg);
            free(rows);
        }
        tu_problem_free(&pr);
    }
}
