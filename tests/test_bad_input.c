/* SPDX-License-Identifier: BSD-3-Clause */
/* Bad input, part 1: NULL pointers, sizes, views built from bad sizes, strides, and the same for
 * the score modifiers' arguments (the bias as a tensor, misaligned alibi_slopes and sinks). Every
 * invalid argument gets its own status and the call writes no byte anywhere (canary-filled out and
 * lse unchanged, inputs unchanged). Part 2 is test_bad_args.c. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bad_input.h"

/* ---- FA_ERR_NULL ---------------------------------------------------------------------------- */
static void q_tensor_null(fixture *f)
{
    f->qp = NULL;
}
static void k_tensor_null(fixture *f)
{
    f->kp = NULL;
}
static void v_tensor_null(fixture *f)
{
    f->vp = NULL;
}
static void out_tensor_null(fixture *f)
{
    f->outp = NULL;
}
static void q_data_null(fixture *f)
{
    f->q.data = NULL;
}
static void k_data_null(fixture *f)
{
    f->k.data = NULL;
}
static void v_data_null(fixture *f)
{
    f->v.data = NULL;
}
static void out_data_null(fixture *f)
{
    f->out.data = NULL;
}

Test(bad_input, null_tensors_or_data_return_err_null_and_write_nothing)
{
    static const bad_case cases[] = {
        CASE(q_tensor_null, FA_ERR_NULL), CASE(k_tensor_null, FA_ERR_NULL),
        CASE(v_tensor_null, FA_ERR_NULL), CASE(out_tensor_null, FA_ERR_NULL),
        CASE(q_data_null, FA_ERR_NULL),   CASE(k_data_null, FA_ERR_NULL),
        CASE(v_data_null, FA_ERR_NULL),   CASE(out_data_null, FA_ERR_NULL),
    };
    bi_run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- FA_ERR_SHAPE --------------------------------------------------------------------------- */
static void q_batch_negative(fixture *f)
{
    f->q.batch = -1;
}
static void all_batches_negative(fixture *f)
{
    f->q.batch = f->k.batch = f->v.batch = f->out.batch = -1;
}
static void q_and_out_heads_negative(fixture *f)
{
    f->q.heads = f->out.heads = -4;
}
static void k_and_v_seq_negative(fixture *f)
{
    f->k.seq = f->v.seq = -1;
}
static void q_and_k_dim_negative(fixture *f)
{
    f->q.dim = f->k.dim = -8;
}
static void v_and_out_dim_negative(fixture *f)
{
    f->v.dim = f->out.dim = -6;
}
static void k_batch_differs_from_q(fixture *f)
{
    f->k.batch = 1;
}
static void v_batch_differs_from_k(fixture *f)
{
    f->v.batch = 3;
}
static void out_batch_differs_from_q(fixture *f)
{
    f->out.batch = 1;
}
static void v_heads_differ_from_k(fixture *f)
{
    f->v.heads = 1;
}
static void out_heads_differ_from_q(fixture *f)
{
    f->out.heads = 2;
}
static void v_seq_differs_from_k(fixture *f)
{
    f->v.seq = NK - 1;
}
static void out_seq_differs_from_q(fixture *f)
{
    f->out.seq = NQ + 1;
}
static void k_dim_differs_from_q(fixture *f)
{
    f->k = fa_tensor_bhsd(f->k.data, f->dt, B, HKV, NK, D + 1);
}
static void out_dim_differs_from_v(fixture *f)
{
    f->out = fa_tensor_bhsd(f->out.data, f->dt, B, HQ, NQ, DV + 1);
}
static void q_heads_not_multiple_of_kv_heads(fixture *f)
{
    f->k = fa_tensor_bhsd(f->k.data, f->dt, B, 3, NK, D);
    f->v = fa_tensor_bhsd(f->v.data, f->dt, B, 3, NK, DV);
}
static void kv_heads_zero_with_q_heads(fixture *f)
{
    f->k = fa_tensor_bhsd(f->k.data, f->dt, B, 0, NK, D);
    f->v = fa_tensor_bhsd(f->v.data, f->dt, B, 0, NK, DV);
}
static void head_dim_zero(fixture *f)
{
    f->q = fa_tensor_bhsd(f->q.data, f->dt, B, HQ, NQ, 0);
    f->k = fa_tensor_bhsd(f->k.data, f->dt, B, HKV, NK, 0);
}
static void value_dim_zero(fixture *f)
{
    f->v = fa_tensor_bhsd(f->v.data, f->dt, B, HKV, NK, 0);
    f->out = fa_tensor_bhsd(f->out.data, f->dt, B, HQ, NQ, 0);
}
static void head_dim_past_max(fixture *f)
{
    f->q = fa_tensor_bhsd(f->q.data, f->dt, B, HQ, NQ, MAXD);
    f->k = fa_tensor_bhsd(f->k.data, f->dt, B, HKV, NK, MAXD);
}
static void value_dim_past_max(fixture *f)
{
    f->v = fa_tensor_bhsd(f->v.data, f->dt, B, HKV, NK, MAXD);
    f->out = fa_tensor_bhsd(f->out.data, f->dt, B, HQ, NQ, MAXD);
}

Test(bad_input, bad_sizes_return_err_shape_and_write_nothing)
{
    static const bad_case cases[] = {
        CASE(q_batch_negative, FA_ERR_SHAPE),
        CASE(all_batches_negative, FA_ERR_SHAPE),
        CASE(q_and_out_heads_negative, FA_ERR_SHAPE),
        CASE(k_and_v_seq_negative, FA_ERR_SHAPE),
        CASE(q_and_k_dim_negative, FA_ERR_SHAPE),
        CASE(v_and_out_dim_negative, FA_ERR_SHAPE),
        CASE(k_batch_differs_from_q, FA_ERR_SHAPE),
        CASE(v_batch_differs_from_k, FA_ERR_SHAPE),
        CASE(out_batch_differs_from_q, FA_ERR_SHAPE),
        CASE(v_heads_differ_from_k, FA_ERR_SHAPE),
        CASE(out_heads_differ_from_q, FA_ERR_SHAPE),
        CASE(v_seq_differs_from_k, FA_ERR_SHAPE),
        CASE(out_seq_differs_from_q, FA_ERR_SHAPE),
        CASE(k_dim_differs_from_q, FA_ERR_SHAPE),
        CASE(out_dim_differs_from_v, FA_ERR_SHAPE),
        CASE(q_heads_not_multiple_of_kv_heads, FA_ERR_SHAPE),
        CASE(kv_heads_zero_with_q_heads, FA_ERR_SHAPE),
        CASE(head_dim_zero, FA_ERR_SHAPE),
        CASE(value_dim_zero, FA_ERR_SHAPE),
        CASE(head_dim_past_max, FA_ERR_SHAPE),
        CASE(value_dim_past_max, FA_ERR_SHAPE),
    };
    bi_run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- views from fa_tensor_bhsd/bshd with bad sizes ------------------------------------------ */
static void q_view_with_negative_seq(fixture *f)
{
    f->q = fa_tensor_bhsd(f->q.data, f->dt, B, HQ, -NQ, D);
}
static void k_view_with_negative_heads(fixture *f)
{
    f->k = fa_tensor_bshd(f->k.data, f->dt, B, NK, -HKV, D);
}
static void out_view_with_negative_batch(fixture *f)
{
    f->out = fa_tensor_bhsd(f->out.data, f->dt, -B, HQ, NQ, DV);
}
static void q_view_with_overflowing_strides(fixture *f)
{
    f->q = fa_tensor_bshd(f->q.data, f->dt, B, (int64_t)1 << 40, (int64_t)1 << 30, D);
}
static void k_and_v_views_with_overflowing_strides(fixture *f)
{
    f->k = fa_tensor_bhsd(f->k.data, f->dt, B, HKV, INT64_MAX / 4, D);
    f->v = fa_tensor_bhsd(f->v.data, f->dt, B, HKV, INT64_MAX / 4, DV);
}
static void out_view_with_overflowing_strides(fixture *f)
{
    f->out = fa_tensor_bhsd(f->out.data, f->dt, B, (int64_t)1 << 62, NQ, DV);
}

Test(bad_input, views_built_from_bad_sizes_are_refused)
{
    /* The header: such a view "carries negative strides, so any call given it returns
     * FA_ERR_SHAPE or FA_ERR_STRIDE". */
    static const int64_t sizes[][4] = {
        {-1, 2, 3, 4},
        {1, -2, 3, 4},
        {1, 2, -3, 4},
        {1, 2, 3, -4},
        {2, (int64_t)1 << 40, (int64_t)1 << 30, 8},
        {2, 4, INT64_MAX / 4, 8},
        {INT64_MAX, INT64_MAX, INT64_MAX, 512},
    };
    char dummy[64];
    for (int i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++)
        for (int l = 0; l < 2; l++) {
            fa_tensor t =
                l ? fa_tensor_bshd(dummy, FA_F32, sizes[i][0], sizes[i][1], sizes[i][2], sizes[i][3])
                  : fa_tensor_bhsd(dummy, FA_F32, sizes[i][0], sizes[i][1], sizes[i][2], sizes[i][3]);
            cr_expect(t.stride_batch < 0 || t.stride_head < 0 || t.stride_seq < 0,
                      "fa_tensor_%s(%lld, %lld, %lld, %lld): strides %lld %lld %lld, none negative",
                      l ? "bshd" : "bhsd", (long long)sizes[i][0], (long long)sizes[i][1],
                      (long long)sizes[i][2], (long long)sizes[i][3], (long long)t.stride_batch,
                      (long long)t.stride_head, (long long)t.stride_seq);
        }
    static const bad_case cases[] = {
        CASE2(q_view_with_negative_seq, FA_ERR_SHAPE, FA_ERR_STRIDE),
        CASE2(k_view_with_negative_heads, FA_ERR_SHAPE, FA_ERR_STRIDE),
        CASE2(out_view_with_negative_batch, FA_ERR_SHAPE, FA_ERR_STRIDE),
        CASE2(q_view_with_overflowing_strides, FA_ERR_SHAPE, FA_ERR_STRIDE),
        CASE2(k_and_v_views_with_overflowing_strides, FA_ERR_SHAPE, FA_ERR_STRIDE),
        CASE2(out_view_with_overflowing_strides, FA_ERR_SHAPE, FA_ERR_STRIDE),
    };
    bi_run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- FA_ERR_STRIDE -------------------------------------------------------------------------- */
static void q_stride_seq_negative(fixture *f)
{
    f->q.stride_seq = -D;
}
static void k_stride_head_negative(fixture *f)
{
    f->k.stride_head = -NK * D;
}
static void v_stride_batch_negative(fixture *f)
{
    f->v.stride_batch = -1;
}
static void out_stride_seq_negative(fixture *f)
{
    f->out.stride_seq = -DV;
}
static void out_rows_overlap(fixture *f)
{
    f->out.stride_seq = DV - 1;
}
static void out_heads_share_memory(fixture *f)
{
    f->out.stride_head = 0;
}
static void out_batches_share_memory(fixture *f)
{
    f->out.stride_batch = 0;
}
static void out_last_row_of_a_head_is_first_row_of_next(fixture *f)
{
    f->out.stride_head = (NQ - 1) * DV;
}
static void out_heads_interleave_with_rows(fixture *f)
{
    /* Head h row i starts at h·Dv + i·2Dv: head 2 row 0 is head 0 row 1. */
    f->out.stride_head = DV;
    f->out.stride_seq = 2 * DV;
    f->out.stride_batch = (NQ + 1) * 2 * DV + 2 * DV;
}
static void q_batch_offset_overflows(fixture *f)
{
    f->q.stride_batch = INT64_MAX - 10;
}
static void k_seq_offset_overflows(fixture *f)
{
    f->k.stride_seq = INT64_MAX / 5;
}
static void out_head_offset_overflows(fixture *f)
{
    f->out.stride_head = INT64_MAX / 2;
}
static void q_byte_offset_overflows(fixture *f)
{
    f->q.stride_batch = INT64_MAX / 2;
}
static void v_offset_sum_overflows(fixture *f)
{
    /* Each product fits, their sum does not. */
    f->v.stride_batch = INT64_MAX / 2;
    f->v.stride_head = INT64_MAX / 2;
}

Test(bad_input, bad_strides_return_err_stride_and_write_nothing)
{
    static const bad_case cases[] = {
        CASE(q_stride_seq_negative, FA_ERR_STRIDE),
        CASE(k_stride_head_negative, FA_ERR_STRIDE),
        CASE(v_stride_batch_negative, FA_ERR_STRIDE),
        CASE(out_stride_seq_negative, FA_ERR_STRIDE),
        CASE(out_rows_overlap, FA_ERR_STRIDE),
        CASE(out_heads_share_memory, FA_ERR_STRIDE),
        CASE(out_batches_share_memory, FA_ERR_STRIDE),
        CASE(out_last_row_of_a_head_is_first_row_of_next, FA_ERR_STRIDE),
        CASE(out_heads_interleave_with_rows, FA_ERR_STRIDE),
        CASE(q_batch_offset_overflows, FA_ERR_STRIDE),
        CASE(k_seq_offset_overflows, FA_ERR_STRIDE),
        CASE(out_head_offset_overflows, FA_ERR_STRIDE),
        CASE(q_byte_offset_overflows, FA_ERR_STRIDE),
        CASE(v_offset_sum_overflows, FA_ERR_STRIDE),
    };
    bi_run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- the score modifiers' arguments: the bias as a tensor, alibi_slopes and sinks ------------ */
static void use_bias(fixture *f)
{
    f->params.bias = &f->bias;
}
static void bias_data_null(fixture *f)
{
    use_bias(f);
    f->bias.data = NULL;
}

Test(bad_input, bias_with_null_data_returns_err_null_and_writes_nothing)
{
    static const bad_case cases[] = {CASE(bias_data_null, FA_ERR_NULL)};
    bi_run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* Each of batch, heads and seq must be the problem's (B, HQ, NQ) or 1; dim must be NK. */
static void bias_batch_3(fixture *f)
{
    use_bias(f);
    f->bias.batch = B + 1;
}
static void bias_batch_0(fixture *f)
{
    use_bias(f);
    f->bias.batch = 0;
}
static void bias_heads_2_neither_hq_nor_1(fixture *f)
{
    use_bias(f);
    f->bias.heads = 2;
}
static void bias_heads_of_k(fixture *f)
{
    use_bias(f); /* one bias per kv head is not a broadcast the header allows */
    f->bias.heads = HKV;
}
static void bias_seq_nq_plus_1(fixture *f)
{
    use_bias(f);
    f->bias.seq = NQ + 1;
}
static void bias_seq_nk(fixture *f)
{
    use_bias(f);
    f->bias.seq = NK;
}
static void bias_dim_nk_plus_1(fixture *f)
{
    use_bias(f);
    f->bias.dim = NK + 1;
}
static void bias_dim_nq(fixture *f)
{
    use_bias(f);
    f->bias.dim = NQ;
}
/* fa_tensor has no stride for dim, so a "broadcast stride on the key axis" is not expressible; its
 * nearest form, one column for all NK keys, is a shape error: the key axis does not broadcast. */
static void bias_dim_1_as_a_broadcast_key_axis(fixture *f)
{
    use_bias(f);
    f->bias = fa_tensor_bhsd(f->bias.data, f->dt, B, HQ, NQ, 1);
}
static void bias_dim_0(fixture *f)
{
    use_bias(f);
    f->bias.dim = 0;
}
static void bias_batch_negative(fixture *f)
{
    use_bias(f);
    f->bias.batch = -1;
}
static void bias_seq_int64_min(fixture *f)
{
    use_bias(f);
    f->bias.seq = INT64_MIN;
}
static void bias_dim_negative(fixture *f)
{
    use_bias(f);
    f->bias.dim = -NK;
}

Test(bad_input, bias_of_the_wrong_shape_returns_err_shape_and_writes_nothing)
{
    static const bad_case cases[] = {
        CASE(bias_batch_3, FA_ERR_SHAPE),
        CASE(bias_batch_0, FA_ERR_SHAPE),
        CASE(bias_heads_2_neither_hq_nor_1, FA_ERR_SHAPE),
        CASE(bias_heads_of_k, FA_ERR_SHAPE),
        CASE(bias_seq_nq_plus_1, FA_ERR_SHAPE),
        CASE(bias_seq_nk, FA_ERR_SHAPE),
        CASE(bias_dim_nk_plus_1, FA_ERR_SHAPE),
        CASE(bias_dim_nq, FA_ERR_SHAPE),
        CASE(bias_dim_1_as_a_broadcast_key_axis, FA_ERR_SHAPE),
        CASE(bias_dim_0, FA_ERR_SHAPE),
        CASE(bias_batch_negative, FA_ERR_SHAPE),
        CASE(bias_seq_int64_min, FA_ERR_SHAPE),
        CASE(bias_dim_negative, FA_ERR_SHAPE),
    };
    bi_run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

static void bias_stride_seq_negative(fixture *f)
{
    use_bias(f);
    f->bias.stride_seq = -NK;
}
static void bias_stride_head_int64_min(fixture *f)
{
    use_bias(f);
    f->bias.stride_head = INT64_MIN;
}
static void bias_batch_offset_overflows(fixture *f)
{
    use_bias(f);
    f->bias.stride_batch = INT64_MAX - 10;
}
static void bias_byte_offset_overflows(fixture *f)
{
    use_bias(f);
    f->bias.stride_seq = INT64_MAX / 16;
}
static void bias_data_one_byte_past_an_element(fixture *f)
{
    use_bias(f);
    f->bias.data = (unsigned char *)f->bias.data + 1;
}
static void bias_data_half_an_element_past(fixture *f)
{
    use_bias(f);
    f->bias.data = (unsigned char *)f->bias.data + f->e / 2;
}
static void alibi_slopes_misaligned(fixture *f)
{
    f->params.alibi_slopes = (const float *)(const void *)((const unsigned char *)f->alibi + 1);
}
static void sinks_misaligned(fixture *f)
{
    f->params.sinks = (const float *)(const void *)((const unsigned char *)f->sinks + 2);
}
static void sinks_wrap_around_the_address_space(fixture *f)
{
    f->params.sinks = (const float *)(uintptr_t)(UINTPTR_MAX - 7); /* 4 floats from 8 bytes below the top */
}

Test(bad_input, bad_bias_strides_or_misaligned_modifier_data_return_err_stride_and_write_nothing)
{
    static const bad_case cases[] = {
        CASE(bias_stride_seq_negative, FA_ERR_STRIDE),
        CASE(bias_stride_head_int64_min, FA_ERR_STRIDE),
        CASE(bias_batch_offset_overflows, FA_ERR_STRIDE),
        CASE(bias_byte_offset_overflows, FA_ERR_STRIDE),
        CASE(bias_data_one_byte_past_an_element, FA_ERR_STRIDE),
        CASE(bias_data_half_an_element_past, FA_ERR_STRIDE),
        CASE(alibi_slopes_misaligned, FA_ERR_STRIDE),
        CASE(sinks_misaligned, FA_ERR_STRIDE),
        CASE(sinks_wrap_around_the_address_space, FA_ERR_STRIDE),
    };
    bi_run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}
