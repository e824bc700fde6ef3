/* Writes the seed corpus of the fuzz target: one file per seed, named after what it reaches.
 *
 *   fa-fuzz-make-corpus tests/fuzz/corpus
 *
 * The seeds start from one valid problem and change what their name says, so between them they
 * reach every computing path (f32 and f64, each causal mode, GQA and MQA, every layout, packed
 * QKV and dQKV, broadcast inputs, split-KV decode shapes, empty shapes, D = 512, Dv != D, every
 * kind of context, NaN/Inf inputs) and every error class (NULL, ARG, DTYPE, SHAPE, STRIDE,
 * ALIAS, UNSUPPORTED, a refused fa_context_create) and the harness's poisoning of wild views.
 * The format is fuzz_input.h's; FA_FUZZ_VERBOSE=1 fa-fuzz-replay DIR shows each seed's statuses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"

static const char *g_dir;
static int g_count;

static void emit(const char *name, const fz_input *in)
{
    uint8_t buf[1024];
    size_t n = fz_encode(in, buf, sizeof buf);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
    g_count++;
}

/* Sizes as the harness decodes them (fuzz_input.h): small values directly, large ones with bit 15. */
static void dims(fz_input *in, int b, int hkv, int group, int nq, int nk, int d, int dv)
{
    in->batch = (fz_u8)b;
    in->kv_heads = (fz_u8)hkv;
    in->group = (fz_u8)(group - 1);
    in->q_len = (fz_u16)(nq < 80 ? nq : 0x8000 | nq);
    in->kv_len = (fz_u16)(nk < 160 ? nk : 0x8000 | nk);
    in->dim = (fz_u16)(d <= 40 ? d - 1 : 0x8000 | (d - 1));
    in->dim_v = (fz_u16)(dv <= 40 ? dv - 1 : 0x8000 | (dv - 1));
}

/* A selector byte >= lo whose value % mod is want. */
static fz_u8 sel(int lo, int mod, int want)
{
    for (int v = lo; v < 256; v++)
        if (v % mod == want) return (fz_u8)v;
    abort();
}

static void layout_all(fz_input *in, int layout)
{
    for (int i = 0; i < FZ_VIEWS; i++) in->view[i].layout = (fz_u8)layout;
}

/* q[B=2][Hq=4][Nq=13][D=16], k, v [2][2][29][16], f32, premade 1-thread context, forward then
 * backward, each call repeated on the twin context. */
static fz_input base(void)
{
    fz_input in;
    memset(&in, 0, sizeof in);
    in.ctx = 1;
    in.calls = 1 | 2;
    in.dtype = 0;
    dims(&in, 2, 2, 2, 13, 29, 16, 16);
    in.seed = 12345;
    in.amp = 1; /* values in [-1, 1] */
    in.gap = 1;
    return in;
}

enum { LAY_BHSD, LAY_BSHD, LAY_PAD_BHSD, LAY_PAD_BSHD, LAY_B0, LAY_H0, LAY_S0, LAY_RAW, LAY_PACKED };

static void valid_seeds(void)
{
    fz_input in = base();
    emit("ok_f32_bhsd_ctx1", &in);

    in = base();
    in.dtype = 1;
    in.ctx = 2;
    emit("ok_f64_bhsd_ctx2", &in);

    in = base();
    in.causal = 1;
    in.ctx = 3;
    emit("ok_f32_causal_top_left_blocks16", &in);

    in = base();
    in.dtype = 1;
    in.causal = 2;
    in.ctx = 4;
    dims(&in, 1, 2, 2, 40, 20, 8, 8); /* Nq > Nk: the first 20 rows see no key */
    emit("ok_f64_causal_bottom_right_masked_rows", &in);

    in = base();
    dims(&in, 2, 2, 3, 17, 23, 12, 12);
    layout_all(&in, LAY_BSHD);
    in.ctx = 5;
    emit("ok_f32_gqa_bshd_ref_7x20", &in);

    in = base();
    in.dtype = 1;
    dims(&in, 1, 1, 4, 9, 31, 5, 5);
    layout_all(&in, LAY_PAD_BHSD);
    for (int i = 0; i < FZ_VIEWS; i++)
        in.view[i].pad_seq = 3, in.view[i].pad_head = 5, in.view[i].pad_batch = 7;
    in.view[FZ_OUT].layout = LAY_PAD_BSHD;
    in.ctx = 6;
    emit("ok_f64_mqa_padded_ref_2threads", &in);

    in = base();
    dims(&in, 2, 1, 2, 21, 21, 8, 6);
    layout_all(&in, LAY_PACKED);
    in.ctx = 7;
    emit("ok_f32_packed_qkv_and_dqkv_avx2", &in);

    in = base();
    in.dtype = 1;
    in.view[FZ_K].layout = LAY_B0;
    in.view[FZ_V].layout = LAY_H0;
    in.view[FZ_Q].layout = LAY_S0;
    in.view[FZ_DOUT].layout = LAY_B0;
    in.ctx = 8;
    emit("ok_f64_broadcast_inputs", &in);

    in = base();
    dims(&in, 1, 1, 1, 1, 1500, 64, 64);
    in.ctx = 3;
    emit("ok_f32_split_kv_decode_blocks16", &in);

    in = base();
    in.dtype = 1;
    dims(&in, 1, 2, 1, 3, 1000, 16, 24);
    in.ctx = 4;
    in.causal = 2;
    emit("ok_f64_split_kv_bottom_right", &in);

    in = base();
    dims(&in, 0, 2, 2, 13, 29, 16, 16);
    emit("ok_f32_empty_batch", &in);

    in = base();
    in.dtype = 1;
    dims(&in, 2, 2, 2, 13, 0, 16, 16);
    emit("ok_f64_no_keys_every_row_masked", &in);

    in = base();
    dims(&in, 2, 2, 2, 13, 0, 16, 16);
    static const int key_views[] = {FZ_K, FZ_V, FZ_DK, FZ_DV};
    for (int j = 0; j < 4; j++) { /* no keys: these views' strides are never checked */
        int i = key_views[j];
        in.view[i].layout = LAY_RAW;
        in.view[i].raw_batch = 1 << 30;
        in.view[i].raw_head = 1 << 30;
        in.view[i].raw_seq = 16;
        in.view[i].raw_scale = 3 | 3 << 2; /* x 2^45: a head's offset in bytes overflows int64 */
    }
    emit("ok_f32_no_keys_wild_kv_strides", &in); /* found by the fuzzer: UBSan overflow in fa_view_at */

    in = base();
    dims(&in, 1, 2, 2, 0, 29, 16, 16);
    emit("ok_f32_no_queries_backward_zero_dk_dv", &in);

    in = base();
    dims(&in, 1, 1, 2, 5, 9, 512, 7);
    emit("ok_f32_dim_512_dv_7", &in);

    in = base();
    in.dtype = 1;
    in.causal = 1;
    dims(&in, 1, 3, 1, 19, 19, 33, 17);
    in.ctx = 0;
    emit("ok_f64_dv_ne_d_null_ctx", &in);

    in = base();
    in.ctx = 0;
    emit("ok_f32_null_ctx_twin", &in);

    in = base();
    in.ctx = 9;
    in.fresh_threads = 1; /* 2 threads */
    in.fresh_bq = 1;
    in.fresh_bk = 1;
    in.fresh_isa = 1; /* ref */
    dims(&in, 1, 1, 2, 9, 11, 4, 4);
    emit("ok_f32_fresh_ctx_blocks_1x1_ref", &in);

    in = base();
    in.dtype = 1;
    in.ctx = 9;
    in.fresh_bq = 33;
    in.fresh_bk = 65;
    in.fresh_isa = 3; /* avx512 where the CPU has it */
    in.fresh_bind = 3;
    dims(&in, 1, 2, 2, 70, 140, 24, 24);
    emit("ok_f64_fresh_ctx_avx512_odd_blocks_spread", &in);

    in = base();
    in.lse_mode = sel(0xC0, 4, 0); /* lse = NULL */
    in.calls = 2;
    emit("ok_f32_forward_without_lse", &in);

    in = base();
    in.params_null = 0xF0;
    emit("ok_f32_params_null", &in);

    in = base();
    in.causal = 1;
    in.specials = 2;
    in.special[0] = (fz_special_bytes){FZ_K, 40, 0};  /* NaN in a key row */
    in.special[1] = (fz_special_bytes){FZ_V, 500, 1}; /* +inf in a value row */
    emit("ok_f32_nan_in_k_inf_in_v", &in);

    in = base();
    in.dtype = 1;
    in.specials = 3;
    in.special[0] = (fz_special_bytes){FZ_Q, 7, 2};    /* -inf in q */
    in.special[1] = (fz_special_bytes){FZ_K, 77, 3};   /* 1e300 in k */
    in.special[2] = (fz_special_bytes){FZ_DOUT, 5, 0}; /* NaN in dout */
    emit("ok_f64_inf_huge_and_nan_dout", &in);

    in = base();
    in.scale_mode = 0x80; /* raw / 64 */
    in.scale_raw = -100;
    emit("ok_f32_negative_scale", &in);

    in = base();
    in.gap = 0;
    in.amp = 3; /* values in [-4, 4] */
    emit("ok_f32_adjacent_regions", &in);

    in = base();
    dims(&in, 2, 1, 3, 16, 16, 8, 8);
    for (int i = FZ_DQ; i <= FZ_DV; i++) in.view[i].layout = LAY_PACKED;
    in.view[FZ_Q].layout = LAY_BSHD;
    in.dtype = 1;
    emit("ok_f64_packed_dqkv_only", &in);
}

/* The base problem, with the backward called even when the forward is refused. */
static fz_input base_err(void)
{
    fz_input in = base();
    in.calls |= 4;
    return in;
}

static void error_seeds(void)
{
    fz_input in = base_err();
    in.view[FZ_V].layout = 0xF8;
    emit("err_null_tensor_v", &in);

    in = base_err();
    in.view[FZ_K].place = sel(0xC0, 10, 8);
    emit("err_null_data_k", &in);

    in = base_err();
    in.calls = 1 | 4;
    in.lse_mode = sel(0xC0, 4, 0);
    emit("err_null_lse_backward", &in);

    in = base_err();
    in.scale_mode = sel(0x80, 8, 1);
    emit("err_arg_nan_scale", &in);

    in = base_err();
    in.causal = 0xC5;
    emit("err_arg_unknown_causal", &in);

    in = base_err();
    in.window = 0xC0;
    in.window_left = -5;
    in.window_right = -1;
    emit("err_arg_window_below_minus_1", &in);

    in = base_err();
    in.softcap = sel(0xC0, 6, 1);
    emit("err_arg_negative_softcap", &in);

    in = base_err();
    in.dtype = sel(0xC0, 8, 4);
    emit("err_dtype_unknown", &in);

    in = base_err();
    in.view[FZ_K].dtype_override = sel(0xF0, 8, 1);
    emit("err_dtype_mixed_k_f64", &in);

    in = base_err();
    in.view[FZ_Q].size_field = sel(0xE0, 5, 2);
    in.view[FZ_Q].size_value = 3;
    in.view[FZ_OUT].size_field = sel(0xE0, 5, 2);
    in.view[FZ_OUT].size_value = 3;
    emit("err_shape_hq_not_multiple_of_hkv", &in);

    in = base_err();
    in.view[FZ_Q].size_field = sel(0xE0, 5, 4);
    in.view[FZ_Q].size_value = 0;
    in.view[FZ_K].size_field = sel(0xE0, 5, 4);
    in.view[FZ_K].size_value = 0;
    emit("err_shape_dim_0", &in);

    in = base_err();
    in.view[FZ_V].size_field = sel(0xE0, 5, 4);
    in.view[FZ_V].size_value = 513;
    in.view[FZ_OUT].size_field = sel(0xE0, 5, 4);
    in.view[FZ_OUT].size_value = 513;
    emit("err_shape_dv_513", &in);

    in = base_err();
    in.view[FZ_K].size_field = sel(0xE0, 5, 3);
    in.view[FZ_K].size_value = -1;
    emit("err_shape_negative_kv_len", &in);

    in = base_err();
    in.view[FZ_V].layout = LAY_RAW;
    in.view[FZ_V].raw_batch = 2 * 29 * 16;
    in.view[FZ_V].raw_head = -16;
    in.view[FZ_V].raw_seq = 16;
    emit("err_stride_negative", &in);

    in = base_err();
    in.view[FZ_K].layout = LAY_RAW;
    in.view[FZ_K].raw_batch = 1 << 30;
    in.view[FZ_K].raw_head = 1 << 30;
    in.view[FZ_K].raw_seq = 16;
    in.view[FZ_K].raw_scale = 3 | 3 << 2; /* x 2^45: offsets overflow int64 */
    emit("err_stride_offsets_overflow", &in);

    in = base_err();
    in.view[FZ_OUT].layout = LAY_H0;
    emit("err_stride_output_overlaps_itself", &in);

    in = base_err();
    in.view[FZ_OUT].layout = LAY_RAW;
    in.view[FZ_OUT].raw_batch = 4 * 13 * 16;
    in.view[FZ_OUT].raw_head = 13 * 16;
    in.view[FZ_OUT].raw_seq = 8; /* rows of 16 elements 8 apart */
    emit("err_stride_output_rows_overlap", &in);

    in = base_err();
    in.view[FZ_Q].place = sel(0xC0, 10, 9);
    in.view[FZ_Q].shift = 1; /* q's data 2 bytes past an element boundary */
    emit("err_stride_misaligned_q", &in);

    in = base_err();
    in.dtype = 1;
    in.lse_mode = (fz_u8)(0xC0 | FZ_OUT << 2 | 3); /* lse_shift in bytes */
    in.lse_shift = 4 * 13 * 16 * 8 + 4;
    emit("err_stride_misaligned_lse", &in);

    in = base_err();
    in.view[FZ_OUT].place = sel(0xC0, 10, FZ_Q);
    in.view[FZ_OUT].shift = 5;
    emit("err_alias_out_on_q", &in);

    in = base_err();
    in.lse_mode = (fz_u8)(0xC0 | FZ_K << 2 | 1);
    in.lse_shift = 3;
    emit("err_alias_lse_on_k", &in);

    in = base_err();
    in.view[FZ_DQ].place = sel(0xC0, 10, FZ_DK);
    in.view[FZ_DQ].shift = 1;
    emit("err_alias_dq_on_dk", &in);

    in = base_err();
    in.view[FZ_DV].place = sel(0xC0, 10, FZ_DOUT);
    emit("err_alias_dv_on_dout", &in);

    in = base_err();
    in.dtype = sel(0xC0, 8, 2);
    emit("err_unsupported_bf16", &in);

    in = base_err();
    in.dtype = sel(0xC0, 8, 3);
    emit("err_unsupported_f16", &in);

    in = base_err();
    in.window = 0xC0;
    in.window_left = 3;
    in.window_right = -1;
    emit("err_unsupported_window", &in);

    in = base_err();
    in.softcap = sel(0xC0, 6, 0);
    emit("err_unsupported_softcap", &in);

    in = base_err();
    in.extras = 0xF3;
    emit("err_unsupported_alibi_and_bias", &in);

    in = base_err();
    in.ctx = 9;
    in.fresh_threads = 0xF5;
    emit("err_context_negative_threads", &in);

    in = base_err();
    in.ctx = 9;
    in.fresh_isa = 4;
    emit("err_context_bogus_isa", &in);

    in = base_err();
    in.ctx = 9;
    in.fresh_bind = 0xD0;
    emit("err_context_unknown_bind", &in);

    in = base_err();
    in.view[FZ_K].layout = LAY_RAW; /* valid strides whose extent leaves the pool: poisoned */
    in.view[FZ_K].raw_batch = 1 << 20;
    in.view[FZ_K].raw_head = 1 << 12;
    in.view[FZ_K].raw_seq = 16;
    in.view[FZ_K].raw_scale = 2;
    emit("poisoned_wild_k_view", &in);

    in = base_err();
    dims(&in, 1, 1, 1, 13, 1 << 10, 16, 16);
    for (int i = FZ_K; i <= FZ_V; i++) { /* Nk = 2^32 on stride-0 views: valid, but over the work budget */
        in.view[i].size_field = sel(0xE0, 5, 3);
        in.view[i].size_value = 1 << 16;
        in.view[i].size_scale = 1;
        in.view[i].layout = LAY_S0;
    }
    emit("poisoned_over_work_budget", &in);

    in = base();
    dims(&in, 1, 1, 1, 0, 1 << 10, 16, 16);
    for (int i = FZ_K; i <= FZ_V; i++) { /* Nk = 2^32 on stride-0 views and no query: valid, no work */
        in.view[i].size_field = sel(0xE0, 5, 3);
        in.view[i].size_value = 1 << 16;
        in.view[i].size_scale = 1;
        in.view[i].layout = LAY_S0;
    }
    emit("ok_f32_no_queries_2_32_broadcast_keys", &in);

    in = base_err();
    in.calls = 1 | 8;
    emit("backward_only_on_unwritten_out_and_lse", &in);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR   (writes the seed corpus into DIR)\n", argv[0]);
        return 2;
    }
    g_dir = argv[1];
    valid_seeds();
    error_seeds();
    printf("fa-fuzz-make-corpus: %d seeds of %zu bytes in %s\n", g_count,
           fz_encode(&(fz_input){0}, (uint8_t[1024]){0}, 1024), g_dir);
    return 0;
}
