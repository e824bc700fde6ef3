/* SPDX-License-Identifier: BSD-3-Clause */
/* Writes the seed corpus of the fuzz target: one file per seed, named after what it reaches.
 *
 *   fa-fuzz-make-corpus tests/fuzz/corpus
 *
 * The seeds start from one valid problem and change what their name says, so between them they
 * reach every computing path (f32 and f64, each causal mode, GQA and MQA, every layout, packed
 * QKV and dQKV, broadcast inputs, split-KV decode shapes, empty shapes, D = 512, Dv != D, every
 * kind of context, NaN/Inf inputs, each score modifier alone and all together: windows, softcap,
 * ALiBi, biases of every broadcast, sinks and dsinks) and every error class (NULL, ARG, DTYPE,
 * SHAPE, STRIDE, ALIAS, UNSUPPORTED, a refused fa_context_create), each also through the
 * modifiers' arguments, and the harness's poisoning of wild views and arrays. Then batches of
 * sequences (packed, KV caches with keys in use, paged keys; forward and backward; each of
 * fa_seqs' refusals) and fa_merge (parts with -inf and NaN rows, many parts, each refusal); then
 * quantized KV caches (int8, E4M3, E5M2 with their scales: computing, and each refusal of theirs),
 * dropout, and the bias's gradient (every broadcast, and each refusal of dbias).
 * The format is fuzz_input.h's; FA_FUZZ_VERBOSE=1 fa-fuzz-replay DIR shows each seed's statuses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashattn.h" /* FA_MAX_HEAD_DIM */
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

/* A head dim's selector: d - 1 for small ones; else bit 15 set and the value % FA_MAX_HEAD_DIM
 * d - 1 (the harness's 1 + value % FA_MAX_HEAD_DIM; 2^15 is no multiple of 576, so not 0x8000 | d - 1). */
static fz_u16 dim_sel(int d)
{
    if (d <= 40) return (fz_u16)(d - 1);
    const int low = 0x8000 % FA_MAX_HEAD_DIM;
    return (fz_u16)(0x8000 + ((d - 1 - low) % FA_MAX_HEAD_DIM + FA_MAX_HEAD_DIM) % FA_MAX_HEAD_DIM);
}

/* Sizes as the harness decodes them (fuzz_input.h): small values directly, large ones with bit 15. */
static void dims(fz_input *in, int b, int hkv, int group, int nq, int nk, int d, int dv)
{
    in->batch = (fz_u8)b;
    in->kv_heads = (fz_u8)hkv;
    in->group = (fz_u8)(group - 1);
    in->q_len = (fz_u16)(nq < 80 ? nq : 0x8000 | nq);
    in->kv_len = (fz_u16)(nk < 160 ? nk : 0x8000 | nk);
    in->dim = dim_sel(d);
    in->dim_v = dim_sel(dv);
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

/* A place selector (>= 0xC0) naming value % 10. */
static fz_u8 place(int want)
{
    return sel(0xC0, 10, want);
}

/* Array modes: off, its own region, on the region of j (0..7 views, 8 the bias, 9 the lse),
 * misaligned in its own region. */
static fz_u8 array_own(void)
{
    return 0x80;
}
static fz_u8 array_on(int j)
{
    for (int v = 0x80; v < 256; v++)
        if (v % 4 == 2 && (v >> 2) % 10 == j) return (fz_u8)v;
    abort();
}
static fz_u8 array_misaligned(void)
{
    return 0x83;
}

/* The softcap selector of fuzz_input.h's entry `which` (0..3: (1 + raw) / 8 with raw). */
static void softcap(fz_input *in, int which, int raw)
{
    in->softcap = sel(0x80, 14, which);
    in->softcap_raw = (fz_u8)raw;
}

/* A bias of [B|1][Hq|1][Nq|1][Nk]: bits 0, 1, 2 of bcast make batch, heads, seq 1. */
static void bias(fz_input *in, int bcast)
{
    in->extras = (fz_u8)(0xA0 | bcast);
}

static void windows(fz_input *in, int left, int right)
{
    in->window = 0x80;
    in->window_left = (fz_i8)left;
    in->window_right = (fz_i8)right;
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

/* dtype and kv_dtype selectors (>= 0xC0) naming an entry of the harness's dtype table */
#define F32  sel(0xC0, 8, 0)
#define F64  sel(0xC0, 8, 1)
#define BF16 sel(0xC0, 8, 2)
#define F16  sel(0xC0, 8, 3)
/* A dtype_override selector (>= 0xF0) naming entry `want` of the dtype table. */
static fz_u8 override(int want)
{
    return sel(0xF0, 8, want);
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

/* Each score modifier alone, at its edges, and all together. */
static void modifier_seeds(void)
{
    fz_input in = base();
    windows(&in, 5, 2);
    emit("ok_f32_window_left_5_right_2", &in);

    in = base();
    in.dtype = 1;
    in.causal = 2;
    in.ctx = 4;
    windows(&in, 3, -1);
    dims(&in, 1, 2, 2, 40, 70, 8, 8);
    emit("ok_f64_window_3_bottom_right_ref_7x20", &in);

    in = base();
    in.causal = 1;
    in.ctx = 3;
    windows(&in, 0, 0); /* the diagonal alone */
    emit("ok_f32_window_0_top_left_blocks16", &in);

    in = base();
    windows(&in, 1, 1);
    in.window |= 3; /* both INT64_MAX: unbounded */
    dims(&in, 1, 2, 2, 29, 13, 16, 16);
    emit("ok_f32_windows_int64_max", &in);

    in = base();
    in.dtype = 1;
    windows(&in, 2, 0);
    dims(&in, 1, 1, 1, 40, 5, 8, 8); /* Nq > Nk: rows past the keys see none */
    emit("ok_f64_window_rows_without_keys", &in);

    in = base();
    softcap(&in, 0, 239); /* 30, Gemma 2's */
    emit("ok_f32_softcap_30", &in);

    in = base();
    in.dtype = 1;
    softcap(&in, 1, 0); /* 0.125: every score capped hard */
    in.amp = 3;
    emit("ok_f64_softcap_0_125", &in);

    in = base();
    softcap(&in, 9, 0);
    emit("ok_f32_softcap_flt_min", &in);

    in = base();
    softcap(&in, 10, 0);
    emit("ok_f32_softcap_flt_max", &in);

    in = base();
    in.dtype = 1;
    softcap(&in, 8, 0);
    emit("ok_f64_softcap_dbl_min", &in);

    in = base();
    in.dtype = 1;
    softcap(&in, 11, 0);
    emit("ok_f64_softcap_twice_flt_max", &in);

    in = base();
    softcap(&in, 7, 0);
    emit("ok_f32_softcap_minus_zero_off", &in);

    in = base();
    in.array[FZ_SLOPES] = (fz_heads_bytes){array_own(), 0, 2};
    emit("ok_f32_alibi", &in);

    in = base();
    in.dtype = 1;
    in.causal = 1;
    in.array[FZ_SLOPES] = (fz_heads_bytes){array_own(), 0, 7}; /* slopes up to 16 */
    emit("ok_f64_alibi_steep_top_left", &in);

    in = base();
    bias(&in, 0);
    emit("ok_f32_bias_full", &in);

    in = base();
    in.dtype = 1;
    bias(&in, 6);
    emit("ok_f64_bias_key_padding", &in);

    in = base();
    bias(&in, 1);
    in.bias.layout = LAY_BSHD;
    emit("ok_f32_bias_one_batch_bshd", &in);

    in = base();
    bias(&in, 0);
    in.bias.layout = LAY_S0; /* full seq with stride 0 */
    in.ctx = 5;
    emit("ok_f32_bias_seq_stride_0_ref", &in);

    in = base();
    in.dtype = 1;
    bias(&in, 0);
    in.bias.layout = LAY_PAD_BHSD;
    in.bias.pad_seq = 3, in.bias.pad_head = 1, in.bias.pad_batch = 9;
    emit("ok_f64_bias_padded", &in);

    in = base();
    bias(&in, 7);
    in.bias.place = place(FZ_Q); /* an input over another input */
    in.bias.shift = 3;
    emit("ok_f32_bias_row_on_q", &in);

    in = base();
    bias(&in, 7);
    dims(&in, 2, 2, 2, 13, 3, 16, 16);
    in.specials = 3; /* one bias row for all: every key -inf, every row fully masked */
    for (int i = 0; i < 3; i++) in.special[i] = (fz_special_bytes){FZ_BIAS, (fz_u16)i, 2};
    emit("ok_f32_bias_masks_every_row", &in);

    /* Two reproducers of a fuzzing run (commit e5d4902): a bias of -inf over both keys of every
     * row, and a NaN in a dout row. A row the bias hides entirely gets dq = NaN there (0 · NaN), as
     * the header says; the target asks dq = 0 of such rows only when the inputs are ordinary. */
    in = base();
    in.dtype = 1;
    bias(&in, 7);
    dims(&in, 2, 2, 2, 13, 2, 16, 16);
    in.specials = 3;
    in.special[0] = (fz_special_bytes){FZ_BIAS, 0, 2};
    in.special[1] = (fz_special_bytes){FZ_BIAS, 1, 2};
    in.special[2] = (fz_special_bytes){FZ_DOUT, 9, 0};
    emit("ok_f64_bias_masks_every_row_nan_dout", &in);
    in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 3};
    in.array[FZ_DSINKS] = (fz_heads_bytes){array_own(), 0, 0};
    emit("ok_f64_bias_masks_every_row_sinks_nan_dout", &in);

    in = base();
    in.dtype = 1;
    bias(&in, 6);
    in.specials = 2;
    in.special[0] = (fz_special_bytes){FZ_BIAS, 3, 2}; /* -inf: a padded key */
    in.special[1] = (fz_special_bytes){FZ_BIAS, 40, 2};
    emit("ok_f64_bias_minus_inf_keys", &in);

    /* Found by the fuzzer: a GQA decode step (one query row, 2 query heads per key/value head) on a
     * context with 16-row blocks reported block_q 2, its grouped rows, above the call's Nq. */
    in = base();
    in.ctx = 3;
    dims(&in, 2, 2, 2, 1, 29, 32, 32);
    emit("ok_f32_gqa_decode_stats_block_q", &in);

    in = base();
    in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 3};
    emit("ok_f32_sinks", &in);

    in = base();
    in.dtype = 1;
    in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 4};
    in.array[FZ_DSINKS] = (fz_heads_bytes){array_own(), 0, 0};
    emit("ok_f64_sinks_and_dsinks", &in);

    in = base();
    in.causal = 2;
    dims(&in, 2, 2, 2, 30, 9, 16, 16); /* 21 rows of each head see no key: lse = the sink */
    in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 3};
    in.array[FZ_DSINKS] = (fz_heads_bytes){array_own(), 0, 0};
    emit("ok_f32_sinks_on_masked_rows", &in);

    in = base();
    in.array[FZ_SINKS] = (fz_heads_bytes){array_on(FZ_K), 5, 0}; /* inputs may overlap */
    in.array[FZ_SLOPES] = (fz_heads_bytes){array_on(FZ_V), 1, 0};
    emit("ok_f32_sinks_and_slopes_inside_inputs", &in);

    in = base();
    in.calls = 2; /* forward only: dsinks ignored, also misaligned and without sinks */
    in.array[FZ_DSINKS] = (fz_heads_bytes){array_misaligned(), 1, 0};
    emit("ok_f32_forward_ignores_dsinks", &in);

    in = base();
    in.causal = 2;
    windows(&in, 6, 1);
    softcap(&in, 2, 79); /* 10 */
    in.array[FZ_SLOPES] = (fz_heads_bytes){array_own(), 0, 1};
    bias(&in, 6);
    in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 3};
    in.array[FZ_DSINKS] = (fz_heads_bytes){array_own(), 0, 0};
    emit("ok_f32_every_modifier", &in);

    in = base();
    in.dtype = 1;
    in.ctx = 6;
    dims(&in, 2, 2, 3, 45, 90, 24, 16);
    windows(&in, 20, 4);
    softcap(&in, 3, 39); /* 5 */
    in.array[FZ_SLOPES] = (fz_heads_bytes){array_own(), 0, 0};
    bias(&in, 2);
    in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 2};
    in.array[FZ_DSINKS] = (fz_heads_bytes){array_own(), 0, 0};
    emit("ok_f64_every_modifier_gqa_ref_2threads", &in);

    in = base(); /* found by the fuzzer: dsinks[h] far below float's range rounds to -0 (a model fix) */
    in.dtype = 1;
    in.ctx = 6;
    dims(&in, 2, 2, 3, 45, 90, 24, 16);
    in.scale_mode = 0x80; /* raw / 64: -166, scores in the hundreds */
    in.scale_raw = -10634;
    windows(&in, 98, 0);
    bias(&in, 2);
    in.view[FZ_Q].layout = LAY_B0;
    in.array[FZ_SLOPES] = (fz_heads_bytes){array_own(), 0, 0};
    in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 2};
    in.array[FZ_DSINKS] = (fz_heads_bytes){array_own(), 0, 0};
    emit("ok_f64_dsinks_underflow_to_zero", &in);

    in = base();
    dims(&in, 1, 1, 1, 1, 1500, 64, 64); /* split-KV with sinks and a key-padding bias */
    in.ctx = 3;
    bias(&in, 6);
    in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 3};
    emit("ok_f32_split_kv_bias_and_sinks", &in);
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
    softcap(&in, 4, 0);
    emit("err_arg_negative_softcap", &in);

    in = base_err();
    softcap(&in, 5, 0);
    emit("err_arg_nan_softcap", &in);

    in = base_err();
    softcap(&in, 13, 0);
    emit("err_arg_minus_inf_softcap", &in);

    in = base_err();
    softcap(&in, 8, 0); /* DBL_MIN: below float's normal range */
    emit("err_arg_f32_softcap_dbl_min", &in);

    in = base_err();
    softcap(&in, 11, 0);
    emit("err_arg_f32_softcap_twice_flt_max", &in);

    in = base_err();
    windows(&in, 4, -3);
    in.window |= 2; /* window_right INT64_MIN */
    emit("err_arg_window_right_int64_min", &in);

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
    in.view[FZ_V].size_value = FA_MAX_HEAD_DIM + 1;
    in.view[FZ_OUT].size_field = sel(0xE0, 5, 4);
    in.view[FZ_OUT].size_value = FA_MAX_HEAD_DIM + 1;
    emit("err_shape_dv_past_max", &in);

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

/* The score modifiers' arguments, refused. */
static void modifier_error_seeds(void)
{
    fz_input in = base_err();
    in.array[FZ_DSINKS] = (fz_heads_bytes){array_own(), 0, 0};
    emit("err_null_dsinks_without_sinks", &in);

    in = base_err();
    bias(&in, 0);
    in.bias.place = place(8);
    emit("err_null_bias_data", &in);

    in = base_err();
    bias(&in, 0);
    in.bias.dtype_override = sel(0xF0, 8, 1);
    emit("err_dtype_bias_f64", &in);

    in = base_err();
    bias(&in, 0);
    in.bias.size_field = sel(0xE0, 5, 4);
    in.bias.size_value = 1; /* one column for 29 keys: no broadcast key axis */
    emit("err_shape_bias_dim_1", &in);

    in = base_err();
    bias(&in, 0);
    in.bias.size_field = sel(0xE0, 5, 2);
    in.bias.size_value = 2; /* Hkv, not Hq or 1 */
    emit("err_shape_bias_heads_of_kv", &in);

    in = base_err();
    bias(&in, 4);
    in.bias.size_field = sel(0xE0, 5, 3);
    in.bias.size_value = 14;
    emit("err_shape_bias_seq_nq_plus_1", &in);

    in = base_err();
    bias(&in, 0);
    in.bias.layout = LAY_RAW;
    in.bias.raw_batch = 4 * 13 * 29;
    in.bias.raw_head = -13 * 29;
    in.bias.raw_seq = 29;
    emit("err_stride_bias_negative", &in);

    in = base_err();
    bias(&in, 0);
    in.bias.layout = LAY_RAW;
    in.bias.raw_batch = 1 << 30;
    in.bias.raw_head = 1 << 30;
    in.bias.raw_seq = 29;
    in.bias.raw_scale = 3 | 3 << 2;
    emit("err_stride_bias_offsets_overflow", &in);

    in = base_err();
    bias(&in, 0);
    in.bias.place = place(9);
    in.bias.shift = 2;
    emit("err_stride_bias_misaligned", &in);

    in = base_err();
    in.array[FZ_SINKS] = (fz_heads_bytes){array_misaligned(), 1, 0};
    emit("err_stride_sinks_misaligned", &in);

    in = base_err();
    in.dtype = 1;
    in.array[FZ_SLOPES] = (fz_heads_bytes){array_misaligned(), 0, 0};
    emit("err_stride_slopes_misaligned", &in);

    in = base_err();
    in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 0};
    in.array[FZ_DSINKS] = (fz_heads_bytes){array_misaligned(), 2, 0};
    emit("err_stride_dsinks_misaligned", &in);

    in = base_err();
    bias(&in, 0);
    in.bias.place = place(FZ_OUT);
    emit("err_alias_bias_on_out", &in);

    in = base_err();
    bias(&in, 6);
    in.bias.place = place(FZ_DQ);
    in.bias.shift = 7;
    emit("err_alias_bias_row_inside_dq", &in);

    in = base_err();
    in.array[FZ_SLOPES] = (fz_heads_bytes){array_on(FZ_OUT), 9, 0};
    emit("err_alias_slopes_inside_out", &in);

    in = base_err();
    in.array[FZ_SINKS] = (fz_heads_bytes){array_on(9), 0, 0};
    emit("err_alias_sinks_on_lse", &in);

    in = base_err();
    in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 0};
    in.array[FZ_DSINKS] = (fz_heads_bytes){array_on(FZ_DK), 3, 0};
    emit("err_alias_dsinks_inside_dk", &in);

    in = base_err();
    in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 0};
    in.array[FZ_DSINKS] = (fz_heads_bytes){array_on(FZ_Q), 0, 0};
    emit("err_alias_dsinks_on_q", &in);

    in = base_err();
    in.array[FZ_SINKS] = (fz_heads_bytes){array_on(8), 0, 0};
    in.array[FZ_DSINKS] = (fz_heads_bytes){array_on(8), 0, 0};
    bias(&in, 0);
    emit("err_alias_dsinks_on_sinks_and_bias", &in);

    in = base_err();
    bias(&in, 0);
    in.bias.layout = LAY_RAW; /* valid strides whose extent leaves the pool: poisoned */
    in.bias.raw_batch = 1 << 20;
    in.bias.raw_head = 1 << 12;
    in.bias.raw_seq = 29;
    in.bias.raw_scale = 2;
    emit("poisoned_wild_bias_view", &in);

    in = base_err();
    in.array[FZ_SINKS] = (fz_heads_bytes){array_on(9), 0x7fff, 0}; /* clamped to the pool's end */
    emit("poisoned_sinks_past_the_pool", &in);

    /* A wild k with no query row: no lse to point at q, so the forward is poisoned with misaligned
     * sinks (FA_ERR_STRIDE, after the views' strides); with no query head, an unknown causal mode. */
    in = base_err();
    dims(&in, 2, 2, 2, 0, 29, 16, 16);
    in.view[FZ_K].layout = LAY_RAW;
    in.view[FZ_K].raw_batch = 1 << 20;
    in.view[FZ_K].raw_head = 1 << 12;
    in.view[FZ_K].raw_seq = 16;
    in.view[FZ_K].raw_scale = 2;
    emit("poisoned_no_query_rows_wild_k", &in);

    in = base_err();
    for (int i = 0; i < FZ_VIEWS; i++) /* Hq = 0 in q, out, dout, dq */
        if (i == FZ_Q || i == FZ_OUT || i == FZ_DOUT || i == FZ_DQ) {
            in.view[i].size_field = sel(0xE0, 5, 2);
            in.view[i].size_value = 0;
        }
    in.view[FZ_K].layout = LAY_RAW;
    in.view[FZ_K].raw_batch = 1 << 20;
    in.view[FZ_K].raw_head = 1 << 12;
    in.view[FZ_K].raw_seq = 16;
    in.view[FZ_K].raw_scale = 2;
    emit("poisoned_no_query_heads_wild_k", &in);
}

/* ---- batches of sequences ---- */

enum { SEQ_PACKED_Q = 1, KEYS_DENSE = 0, KEYS_PACKED = 2, KEYS_PAGED = 4, SEQ_USED = 8, SEQ_CU_K_TOO = 16 };

/* Sequences on the base problem: seqs bits, S sequences with their query rows, keys and keys in
 * use (used % (capacity + 1)); paged keys: pages of page_size, pool_pages in the pool, pps each. */
static void seqs(fz_input *in, int bits, int S, const int *q_len, const int *k_len, const int *used)
{
    in->seqs.seqs = (fz_u8)(0x80 | bits);
    in->seqs.seqs_count = (fz_u8)S;
    for (int b = 0; b < S; b++) {
        in->seq[b].q_len = (fz_u8)(q_len ? q_len[b] : 0);
        in->seq[b].k_len = (fz_u8)(k_len ? k_len[b] : 0);
        in->seq[b].used = (fz_u8)(used ? used[b] : 0);
    }
}

/* arrays_place: array `which` (0 cu_seqlens_q .. 3 block_table) by operation op (fuzz_input.h). */
static fz_u8 place_array(int which, int op)
{
    for (int v = 0xC0; v < 256; v++)
        if ((v >> 4) % 4 == which && v % 6 == op) return (fz_u8)v;
    abort();
}

static void pages(fz_input *in, int page_size, int pool_pages, int pps, const int *table, int n)
{
    in->seqs.page_size = (fz_u8)(page_size - 1);
    in->seqs.pool_pages = (fz_u8)(pool_pages - 1);
    in->seqs.pages_per_seq = (fz_u8)pps;
    for (int j = 0; j < n; j++) in->table[j] = (fz_u8)table[j];
}

static void seqs_seeds(void)
{
    static const int q4[4] = {5, 1, 12, 0}, k4[4] = {17, 9, 30, 4}, u4[4] = {12, 9, 30, 0};
    fz_input in = base();
    in.causal = 2;
    seqs(&in, SEQ_PACKED_Q | KEYS_PACKED | SEQ_USED, 4, q4, k4, u4);
    emit("ok_f32_seqs_packed_bottom_right_used_keys", &in);

    in = base();
    in.dtype = 1;
    in.ctx = 4;
    in.causal = 1;
    windows(&in, 3, 1);
    seqs(&in, SEQ_PACKED_Q | KEYS_PACKED, 4, q4, k4, NULL);
    in.seqs.spare_rows = 3;
    emit("ok_f64_seqs_packed_window_top_left_spare_rows_ref", &in);

    static const int u3[3] = {40, 7, 0};
    in = base();
    in.dtype = 1;
    dims(&in, 2, 2, 3, 2, 40, 16, 8); /* GQA, 2 query rows per sequence, caches of 40 */
    in.causal = 2;
    seqs(&in, KEYS_DENSE | SEQ_USED, 3, NULL, NULL, u3);
    emit("ok_f64_seqs_kv_cache_used_gqa_backward", &in);

    /* Found by the fuzzer: a forward over packed queries and dense keys succeeded, and the harness
     * cut every view to each sequence, the gradients' too, whose wild strides (never checked by a
     * forward) overflowed the pointer (UBSan). It now cuts only the views the call used. */
    in = base();
    in.calls = 2; /* the forward alone, repeated on the twin context */
    seqs(&in, SEQ_PACKED_Q | KEYS_DENSE | SEQ_USED, 4, q4, NULL, u4);
    static const int grad_views[] = {FZ_DOUT, FZ_DQ, FZ_DK, FZ_DV};
    for (int j = 0; j < 4; j++) {
        int i = grad_views[j];
        in.view[i].layout = LAY_RAW;
        in.view[i].raw_batch = 1 << 30;
        in.view[i].raw_head = 1 << 30;
        in.view[i].raw_seq = 1 << 30;
        in.view[i].raw_scale = 3 | 3 << 2 | 3 << 4; /* x 2^45 each */
    }
    emit("regression_seqs_forward_wild_gradient_strides", &in);

    /* pages of 4: 20, 13 and 5 keys in use take 5, 4 and 2 pages; -1 after them; page 1 shared */
    static const int t3[18] = {9, 3, 0, 1, 7, 0xF0, 2, 5, 4, 8, 0xF0, 0xF0, 6, 1, 0xF0, 0xF0, 0xF0, 0xF0};
    static const int u3p[3] = {20, 13, 5};
    in = base();
    dims(&in, 2, 2, 2, 1, 29, 32, 32); /* decode: one query row per sequence */
    in.ctx = 3;
    in.calls = 1 | 2;
    seqs(&in, KEYS_PAGED | SEQ_USED, 3, NULL, NULL, u3p);
    pages(&in, 4, 10, 6, t3, 18);
    emit("ok_f32_seqs_paged_decode_shuffled_pages_blocks16", &in);

    static const int q2[2] = {7, 11}, t2[8] = {2, 0, 1, 0xF0, 3, 2, 0xF0, 0xF0};
    in = base();
    in.causal = 2;
    in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 3};
    seqs(&in, SEQ_PACKED_Q | KEYS_PAGED, 2, q2, NULL, NULL);
    pages(&in, 5, 4, 2, t2, 8);
    in.table[2] = 1, in.table[3] = 3; /* every page in use: pages 2, 0 and 1, 3 */
    emit("ok_f32_seqs_packed_queries_paged_keys_sinks", &in);

    in = base();
    in.dtype = 1;
    in.ctx = 6;
    in.causal = 2;
    in.softcap = sel(0x80, 14, 2);
    in.softcap_raw = 40;
    in.array[FZ_SLOPES] = (fz_heads_bytes){array_own(), 0, 1};
    in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 3};
    in.array[FZ_DSINKS] = (fz_heads_bytes){array_own(), 0, 0};
    seqs(&in, SEQ_PACKED_Q | KEYS_PACKED | SEQ_USED, 4, q4, k4, u4);
    emit("ok_f64_seqs_packed_backward_every_modifier_dsinks", &in);

    static const int z4q[4] = {0, 3, 2, 0}, z4k[4] = {6, 0, 5, 0}, z4u[4] = {0, 0, 5, 0};
    in = base();
    in.causal = 2;
    seqs(&in, SEQ_PACKED_Q | KEYS_PACKED | SEQ_USED, 4, z4q, z4k, z4u);
    emit("ok_f32_seqs_empty_sequences_no_keys_no_queries", &in);

    in = base();
    seqs(&in, SEQ_PACKED_Q | KEYS_PACKED, 0, NULL, NULL, NULL);
    emit("ok_f32_seqs_no_sequence", &in);

    in = base();
    in.ctx = 0;
    layout_all(&in, LAY_BSHD);
    seqs(&in, KEYS_DENSE | SEQ_USED, 2, NULL, NULL, (const int[]){29, 11});
    emit("ok_f32_seqs_kv_cache_bshd_null_ctx_backward", &in);

    /* refusals */
    in = base_err();
    seqs(&in, SEQ_PACKED_Q | KEYS_PACKED | SEQ_USED, 4, q4, k4, u4);
    in.seqs.seqs_count = sel(0xE0, 8, 3); /* -1 */
    emit("err_arg_seqs_negative_count", &in);

    in = base_err();
    seqs(&in, SEQ_PACKED_Q | KEYS_PAGED | SEQ_CU_K_TOO, 2, q2, (const int[]){5, 5}, NULL);
    pages(&in, 5, 4, 2, t2, 8);
    emit("err_arg_seqs_key_offsets_with_a_block_table", &in);

    in = base_err();
    seqs(&in, KEYS_PAGED, 2, NULL, NULL, NULL);
    pages(&in, 5, 4, 2, t2, 8);
    in.seqs.pages_per_seq = sel(0xF0, 4, 0); /* -1 */
    emit("err_arg_seqs_negative_pages_per_seq", &in);

    in = base_err();
    seqs(&in, KEYS_DENSE | SEQ_USED, 2, NULL, NULL, (const int[]){29, 11});
    in.seqs.seqs_count = sel(0xE0, 8, 0); /* 3 sequences over tensors of 2 */
    emit("err_shape_seqs_count_not_the_batch", &in);

    in = base_err();
    seqs(&in, SEQ_PACKED_Q | KEYS_PACKED | SEQ_USED, 4, q4, k4, u4);
    in.seqs.corrupt = sel(0xC0, 4, 0);
    in.seqs.corrupt_index = 2;
    in.seqs.corrupt_value = 1; /* cu_seqlens_q[2] = 1 < cu_seqlens_q[1] = 5 */
    emit("err_shape_seqs_query_offsets_decrease", &in);

    in = base_err();
    seqs(&in, SEQ_PACKED_Q | KEYS_PACKED | SEQ_USED, 4, q4, k4, u4);
    in.seqs.corrupt = sel(0xC0, 4, 1);
    in.seqs.corrupt_index = 4;
    in.seqs.corrupt_scale = 0xF1; /* cu_seqlens_k[4] = INT64_MAX: past the tensor */
    emit("err_shape_seqs_key_offsets_past_the_tensor", &in);

    in = base_err();
    seqs(&in, SEQ_PACKED_Q | KEYS_PACKED | SEQ_USED, 4, q4, k4, u4);
    in.seqs.corrupt = sel(0xC0, 4, 0);
    in.seqs.corrupt_index = 0;
    in.seqs.corrupt_value = 1; /* offsets start at 1 */
    emit("err_shape_seqs_offsets_not_from_0", &in);

    in = base_err();
    seqs(&in, KEYS_DENSE | SEQ_USED, 2, NULL, NULL, (const int[]){29, 11});
    in.seqs.corrupt = sel(0xC0, 4, 2);
    in.seqs.corrupt_index = 1;
    in.seqs.corrupt_value = 30; /* beyond the cache of 29 */
    emit("err_shape_seqs_used_beyond_the_cache", &in);

    in = base_err();
    seqs(&in, KEYS_PAGED | SEQ_USED, 3, NULL, NULL, u3p);
    pages(&in, 4, 10, 6, t3, 18);
    in.table[1] = 0xF0; /* sequence 0's second page, in use, is -1 */
    emit("err_shape_seqs_page_in_use_negative", &in);

    in = base_err();
    seqs(&in, KEYS_PAGED | SEQ_USED, 3, NULL, NULL, u3p);
    pages(&in, 4, 10, 6, t3, 18);
    in.seqs.corrupt = sel(0xC0, 4, 3);
    in.seqs.corrupt_index = 6;
    in.seqs.corrupt_value = 10; /* sequence 1's first page: the pool has 10 */
    emit("err_shape_seqs_page_outside_the_pool", &in);

    in = base_err();
    seqs(&in, KEYS_PAGED, 2, NULL, NULL, NULL);
    pages(&in, 5, 4, 2, t2, 8);
    in.seqs.pages_per_seq = sel(0xF0, 4, 2); /* 2^61: the table's bytes overflow */
    emit("err_shape_seqs_pages_per_seq_overflows", &in);

    in = base_err();
    seqs(&in, KEYS_DENSE | SEQ_USED, 2, NULL, NULL, (const int[]){29, 11});
    in.seqs.arrays_place = place_array(2, 1); /* seqused_k moved 1 + 2 bytes */
    in.seqs.arrays_shift = 2;
    emit("err_stride_seqs_used_misaligned", &in);

    /* Found by the fuzzer: a misaligned seqused_k (STRIDE) was reported before a wrong dout shape
     * (SHAPE), against the documented order; the backward now checks every shape first. */
    in.view[FZ_DOUT].size_field = sel(0xE0, 5, 4);
    in.view[FZ_DOUT].size_value = 15;
    emit("regression_seqs_misaligned_used_beside_a_wrong_dout_shape", &in);

    in = base_err();
    seqs(&in, SEQ_PACKED_Q | KEYS_PACKED | SEQ_USED, 4, q4, k4, u4);
    in.seqs.arrays_place = place_array(0, 2); /* cu_seqlens_q copied over out */
    in.seqs.arrays_shift = FZ_OUT;
    emit("err_alias_seqs_query_offsets_under_out", &in);

    in = base_err();
    seqs(&in, KEYS_PAGED | SEQ_USED, 3, NULL, NULL, u3p);
    pages(&in, 4, 10, 6, t3, 18);
    in.seqs.arrays_place = place_array(3, 3); /* the block table copied over the lse */
    emit("err_alias_seqs_block_table_under_lse", &in);

    in = base_err();
    seqs(&in, SEQ_PACKED_Q | KEYS_PACKED | SEQ_USED, 4, q4, k4, u4);
    bias(&in, 1 | 2 | 4);
    emit("err_unsupported_seqs_with_a_bias", &in);

    in = base_err();
    seqs(&in, KEYS_PAGED | SEQ_USED, 3, NULL, NULL, u3p);
    pages(&in, 4, 10, 6, t3, 18);
    emit("err_unsupported_seqs_paged_keys_backward", &in); /* the forward computes */

    in = base();
    dims(&in, 2, 4, 4, 60, 150, 256, 256); /* 16 heads of 256: the lengths are halved to the budget */
    seqs(&in, SEQ_PACKED_Q | KEYS_PACKED | SEQ_USED, 8, (const int[]){19, 19, 19, 19, 19, 19, 19, 19},
         (const int[]){39, 39, 39, 39, 39, 39, 39, 39}, (const int[]){39, 39, 39, 39, 39, 39, 39, 39});
    emit("ok_f32_seqs_cut_to_the_work_budget", &in);

    in = base_err();
    seqs(&in, KEYS_DENSE | SEQ_USED, 2, NULL, NULL, (const int[]){29, 11});
    in.view[FZ_V].layout = LAY_RAW; /* valid strides whose extent leaves the pool: poisoned */
    in.view[FZ_V].raw_batch = 1 << 20;
    in.view[FZ_V].raw_head = 1 << 12;
    in.view[FZ_V].raw_seq = 16;
    in.view[FZ_V].raw_scale = 2;
    emit("poisoned_seqs_wild_v_view", &in);
}

/* ---- fa_merge ---- */

/* fa_merge after the forward: n parts (views dout, dq, dk, dv again and again). */
static void merge(fz_input *in, int n_sel)
{
    in->merge.merge = 0x80;
    in->merge.merge_n = (fz_u8)n_sel;
}

static void merge_seeds(void)
{
    fz_input in = base();
    merge(&in, 2); /* 3 parts */
    emit("ok_f32_merge_3_parts", &in);

    in = base();
    in.dtype = 1;
    in.ctx = 2;
    merge(&in, 5); /* 6 parts */
    in.merge.merge_minf = 0x2D;
    in.merge.merge_mode = 1; /* row 0: no part saw it */
    in.view[FZ_DQ].layout = LAY_BSHD;
    in.view[FZ_DV].layout = LAY_PAD_BHSD;
    in.view[FZ_DV].pad_seq = 2;
    emit("ok_f64_merge_minus_inf_parts_and_a_row_no_part_saw", &in);

    in = base();
    merge(&in, 3);
    in.merge.merge_mode = 2 | 4; /* a NaN lse in part 0's row 1; lse values in [-100, 100] */
    in.specials = 2;
    in.special[0] = (fz_special_bytes){FZ_DK, 5, 0}; /* NaN in a part's out */
    in.special[1] = (fz_special_bytes){FZ_DOUT, 77, 1};
    in.merge.merge_minf = 0xFF;
    emit("ok_f32_merge_nan_lse_wide_lse_and_nan_outs", &in);

    in = base();
    in.dtype = 1;
    in.calls = 8 | 2;              /* fa_merge alone, on the twin context too */
    merge(&in, 7);                 /* 8 parts */
    in.lse_mode = sel(0xC0, 4, 0); /* no merged lse */
    emit("ok_f64_merge_8_parts_alone_without_lse", &in);

    in = base();
    in.ctx = 5;
    merge(&in, sel(0xF0, 4, 3)); /* 64 parts */
    in.merge.merge_minf = 0x81;
    emit("ok_f32_merge_64_parts_ref", &in);

    static const int q2[2] = {7, 11}, k2[2] = {20, 9};
    in = base();
    in.causal = 2;
    seqs(&in, SEQ_PACKED_Q | KEYS_PACKED, 2, q2, k2, NULL);
    merge(&in, 1);
    emit("ok_f32_merge_packed_views_after_a_ragged_forward", &in);

    in = base_err();
    merge(&in, sel(0xF0, 4, 0));
    emit("err_arg_merge_no_part", &in);

    in = base_err();
    merge(&in, sel(0xF0, 4, 2));
    emit("err_arg_merge_int_min_parts", &in);

    in = base_err();
    merge(&in, 2);
    in.merge.merge_lses = sel(0xC0, 5, 1);
    emit("err_null_merge_lses", &in);

    in = base_err();
    merge(&in, 2);
    in.merge.merge_lses = sel(0xC0, 5, 2);
    emit("err_null_merge_outs", &in);

    in = base_err();
    merge(&in, 2);
    for (int v = 0xC0; v < 256; v++) /* lses[1] NULL: v % 5 == 0 and (v >> 3) % 3 == 1 */
        if (v % 5 == 0 && (v >> 3) % 3 == 1) {
            in.merge.merge_lses = (fz_u8)v;
            break;
        }
    emit("err_null_merge_a_part_lse", &in);

    in = base_err();
    merge(&in, 2);
    in.view[FZ_DQ].place = sel(0xC0, 10, 8);
    emit("err_null_merge_a_part_data", &in);

    in = base_err();
    merge(&in, 2);
    in.view[FZ_DK].dtype_override = sel(0xF0, 8, 1);
    emit("err_dtype_merge_part_f64", &in);

    in = base_err();
    merge(&in, 2);
    in.view[FZ_DQ].size_field = sel(0xE0, 5, 3);
    in.view[FZ_DQ].size_value = 12;
    emit("err_shape_merge_part_of_another_length", &in);

    in = base_err();
    merge(&in, 2);
    in.view[FZ_OUT].layout = LAY_B0;
    emit("err_stride_merge_out_overlaps_itself", &in);

    in = base_err();
    merge(&in, 2);
    in.merge.merge_lses = sel(0xC0, 5, 4);
    in.merge.merge_shift = 2;
    emit("err_stride_merge_part_lse_misaligned", &in);

    in = base_err();
    merge(&in, 2);
    in.view[FZ_OUT].place = sel(0xC0, 10, FZ_DOUT);
    emit("err_alias_merge_out_on_a_part", &in);

    in = base_err();
    merge(&in, 2);
    in.merge.merge_lses = sel(0xC0, 5, 3);
    emit("err_alias_merge_part_lse_on_the_lse", &in);

    in = base();
    in.dtype = BF16;
    merge(&in, 2);
    in.merge.merge_minf = 0x2; /* part 1 -inf on every third row */
    emit("ok_bf16_merge_3_parts_minus_inf_rows", &in);
}

/* bf16 and f16 (flashattn.h, fa_forward): the whole call in one half type, or f32 q, out, dout and
 * dq over a bf16 or f16 k, v, dk and dv (kv_dtype); the bias in the accumulation type (f32); and
 * each way out of the contract: a (q, k) pair it refuses, a tensor off its group's dtype, a half
 * bias, views of two dtypes overlapping, a half view misaligned. */
static void half_seeds(void)
{
    static const char *const ok[4] = {"ok_bf16_bhsd_ctx1", "ok_f16_bhsd_ctx1", "ok_f32_q_bf16_kv",
                                      "ok_f32_q_f16_kv"};
    for (int i = 0; i < 4; i++) {
        fz_input in = base();
        in.dtype = i == 0 ? BF16 : i == 1 ? F16 : F32;
        if (i >= 2) in.dtypes.kv_dtype = i == 2 ? BF16 : F16;
        emit(ok[i], &in);
    }

    fz_input in = base();
    in.dtype = BF16;
    in.causal = 2;
    windows(&in, 6, 1);
    softcap(&in, 2, 79);
    in.array[FZ_SLOPES] = (fz_heads_bytes){array_own(), 0, 1};
    bias(&in, 6);
    in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 3};
    in.array[FZ_DSINKS] = (fz_heads_bytes){array_own(), 0, 0};
    emit("ok_bf16_every_modifier", &in);

    in.dtype = F32;
    in.dtypes.kv_dtype = F16;
    in.ctx = 6;
    dims(&in, 2, 2, 3, 45, 90, 24, 16);
    emit("ok_f32_q_f16_kv_every_modifier_gqa_ref_2threads", &in);

    in = base();
    in.dtype = F16;
    dims(&in, 2, 1, 4, 21, 21, 8, 6);
    layout_all(&in, LAY_PACKED);
    in.ctx = 7;
    emit("ok_f16_packed_qkv_and_dqkv_avx2", &in);

    in = base();
    in.dtype = F32;
    in.dtypes.kv_dtype = BF16;
    dims(&in, 1, 1, 1, 1, 1500, 64, 64); /* split-KV decode over a bf16 cache */
    in.ctx = 3;
    emit("ok_f32_q_bf16_kv_split_kv_decode_blocks16", &in);

    in = base();
    in.dtype = F16;
    in.amp = 3; /* values in [-4, 4]: the f16 gradients stay finite only where the bound says */
    dims(&in, 1, 1, 4, 60, 70, 64, 64);
    emit("ok_f16_gqa_wide_amp4", &in);

    in = base();
    in.dtype = F16;
    in.specials = 4;
    in.special[0] = (fz_special_bytes){FZ_K, 40, 0};   /* NaN in a key row */
    in.special[1] = (fz_special_bytes){FZ_V, 500, 3};  /* 6e4, near f16's largest finite */
    in.special[2] = (fz_special_bytes){FZ_Q, 7, 5};    /* f16's smallest subnormal */
    in.special[3] = (fz_special_bytes){FZ_DOUT, 5, 1}; /* +inf in dout */
    emit("ok_f16_nan_huge_subnormal_and_inf_dout", &in);

    static const int q4[4] = {5, 1, 12, 0}, k4[4] = {17, 9, 30, 4}, u4[4] = {12, 9, 30, 0};
    in = base();
    in.dtype = BF16;
    in.causal = 2;
    in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 3};
    in.array[FZ_DSINKS] = (fz_heads_bytes){array_own(), 0, 0};
    seqs(&in, SEQ_PACKED_Q | KEYS_PACKED | SEQ_USED, 4, q4, k4, u4);
    emit("ok_bf16_seqs_packed_backward_sinks_dsinks", &in);

    static const int t3[18] = {9, 3, 0, 1, 7, 0xF0, 2, 5, 4, 8, 0xF0, 0xF0, 6, 1, 0xF0, 0xF0, 0xF0, 0xF0};
    static const int u3p[3] = {20, 13, 5};
    in = base();
    in.dtype = F32;
    in.dtypes.kv_dtype = F16;
    dims(&in, 2, 2, 2, 1, 29, 32, 32);
    in.ctx = 3;
    in.calls = 1 | 2;
    seqs(&in, KEYS_PAGED | SEQ_USED, 3, NULL, NULL, u3p);
    pages(&in, 4, 10, 6, t3, 18);
    emit("ok_f32_q_f16_kv_seqs_paged_decode_blocks16", &in);

    /* refusals: (q, k) pairs, with every group consistent */
    static const struct {
        const char *name;
        int q, k; /* dtype table entries */
    } pairs[] = {{"err_dtype_q_bf16_k_f16", 2, 3},
                 {"err_dtype_q_f16_k_f32", 3, 0},
                 {"err_dtype_q_f64_k_bf16", 1, 2},
                 {"err_dtype_q_bf16_k_f32", 2, 0}};
    for (int i = 0; i < 4; i++) {
        in = base_err();
        in.dtype = sel(0xC0, 8, pairs[i].q);
        in.dtypes.kv_dtype = sel(0xC0, 8, pairs[i].k);
        emit(pairs[i].name, &in);
    }
    /* a tensor off its group's dtype, one per group member of the backward */
    static const struct {
        const char *name;
        int q, k, view, to;
    } off[] = {{"err_dtype_out_f64_q_bf16", 2, 2, FZ_OUT, 1},
               {"err_dtype_v_f32_k_bf16", 0, 2, FZ_V, 0},
               /* an f32 out under bf16 inputs: the forward's partial results; the backward refuses it */
               {"ok_forward_f32_out_q_bf16_backward_refused", 2, 2, FZ_OUT, 0},
               {"err_dtype_out_f16_q_f32_k_f16", 0, 3, FZ_OUT, 3},
               {"err_dtype_dout_f32_q_f16", 3, 3, FZ_DOUT, 0},
               {"err_dtype_dq_bf16_q_f32_k_bf16", 0, 2, FZ_DQ, 2},
               {"err_dtype_dk_f32_k_f16", 0, 3, FZ_DK, 0},
               {"err_dtype_dv_bf16_k_f16", 3, 3, FZ_DV, 2}};
    for (size_t i = 0; i < sizeof off / sizeof *off; i++) {
        in = base_err();
        in.dtype = sel(0xC0, 8, off[i].q);
        in.dtypes.kv_dtype = sel(0xC0, 8, off[i].k);
        in.view[off[i].view].dtype_override = override(off[i].to);
        emit(off[i].name, &in);
    }
    /* f32 dq, dk and dv under bf16 inputs: the backward's partial sums; f32 dq alone is refused at dk */
    in = base_err();
    in.dtype = BF16;
    for (int v = FZ_DQ; v <= FZ_DV; v++) in.view[v].dtype_override = override(0);
    emit("ok_backward_f32_gradients_q_bf16", &in);
    in = base_err();
    in.dtype = sel(0xC0, 8, 3);
    in.dtypes.kv_dtype = sel(0xC0, 8, 3);
    in.view[FZ_DQ].dtype_override = override(0);
    emit("err_dtype_dk_f16_dq_f32_q_f16", &in);
    in = base_err();
    in.dtype = BF16;
    bias(&in, 0);
    in.bias.dtype_override = override(2); /* q's dtype: not the accumulation type */
    emit("err_dtype_bias_bf16_q_bf16", &in);

    in = base_err();
    in.dtype = F32;
    in.dtypes.kv_dtype = F16;
    in.view[FZ_OUT].place = place(FZ_K); /* f32 out over the f16 k: two dtypes never interleave */
    emit("err_alias_f32_out_on_f16_k", &in);

    in = base_err();
    in.dtype = BF16;
    in.view[FZ_K].place = sel(0xC0, 10, 9); /* its own region, 1 + shift % 4 bytes in */
    in.view[FZ_K].shift = 0;
    emit("err_stride_bf16_k_misaligned", &in);

    in = base_err(); /* valid bf16 sequences, refused as unsupported with a bias */
    in.dtype = BF16;
    bias(&in, 0);
    seqs(&in, KEYS_DENSE, 2, NULL, NULL, NULL);
    emit("err_unsupported_bf16_bias_with_seqs", &in);

    in = base();
    in.dtype = F16;
    merge(&in, 7);               /* 8 parts */
    in.merge.merge_mode = 1 | 2; /* row 0 -inf in every part, a NaN lse on row 1 */
    emit("ok_f16_merge_8_parts_minus_inf_and_nan_rows", &in);

    in = base_err();
    in.dtype = BF16;
    merge(&in, 2);
    in.view[FZ_OUT].dtype_override = override(0); /* f32 out of bf16 parts: one dtype per merge */
    emit("err_dtype_merge_bf16_parts_f32_out", &in);
}

/* An abi selector (>= 0xC0) naming struct `which` (FZ_ABI_P, _SEQS, _OPTS) and mode `mode` (fuzz_input.h). */
static fz_u8 abi_sel(int which, int mode)
{
    for (int v = 0xC0; v < 256; v++)
        if ((v >> 3) % 3 == which && v % 6 == mode) return (fz_u8)v;
    abort();
}

/* The size-tagged structs (include/flashattn.h, "ABI"): each refusal of the reading rule on p,
 * p.seqs and a fresh context's opts, and a larger struct whose unknown bytes are zero, which computes. */
static void abi_seeds(void)
{
    static const char *const name[3] = {"p", "seqs", "opts"};
    static const int q2[2] = {7, 11}, k2[2] = {9, 13};
    for (int which = 0; which < 3; which++) {
        static const char *const mode_name[6] = {
            "err_%s_struct_size_0",    "err_%s_struct_size_too_small",       "err_%s_struct_size_above_4096",
            "err_%s_struct_size_huge", "ok_%s_struct_size_larger_zero_tail", "err_%s_unknown_field_set"};
        for (int mode = 0; mode < 6; mode++) {
            fz_input in = base();
            in.calls = 1; /* the backward too */
            if (which == 1) seqs(&in, SEQ_PACKED_Q | KEYS_PACKED, 2, q2, k2, NULL);
            if (which == 2) {
                in.ctx = 9;
                in.fresh_threads = 1;
            }
            in.abi.abi = abi_sel(which, mode);
            in.abi.abi_size = 3000;
            in.abi.abi_byte = 700;
            in.abi.abi_value = 0x80;
            char file[64];
            snprintf(file, sizeof file, mode_name[mode], name[which]);
            emit(file, &in);
        }
    }
    /* an earlier layout's size (the smallest): the fields past it are not read, so an invalid
     * dropout_p there (+inf) is ignored and the call computes without dropout (found by fuzzing) */
    fz_input in = base();
    in.abi.abi = abi_sel(0, 1); /* p */
    in.abi.abi_size = (fz_u16)FA_PARAMS_SIZE_MIN;
    in.dropout.dropout = 0xC7;
    emit("ok_p_earlier_struct_size_invalid_dropout_past_it", &in);
    /* the same with dropout on and its origins past the counter: not read, so not refused */
    in.dropout.dropout = 0xC1;
    in.origin.origin = sel(0xC0, 7, 3);
    in.origin.origin_row = 1000;
    emit("ok_p_earlier_struct_size_dropout_origins_past_it", &in);
}

/* ---- quantized KV caches (fuzz_input.h, quant) ---- */

static const char *const qname[3] = {"i8", "f8e4m3", "f8e5m2"};

/* k, v, dk and dv of quantized type q (0 int8, 1 E4M3, 2 E5M2), with both scales */
static fz_u8 quant(int q)
{
    return sel(0x80, 3, q);
}

static fz_u8 twist(int t)
{
    return sel(0xC0, 6, t);
}

/* A size override of a view: size f (1 batch, 2 heads, 3 seq, 4 dim) = x. */
static void size_to(fz_view_bytes *v, int f, int x)
{
    v->size_field = sel(0xE0, 5, f);
    v->size_value = x;
}

/* Dropout (fuzz_input.h, FZ_DROPOUT_FIELDS): each probability the selector has, with the forward
 * and the backward, and with every modifier on; the refused ones; p = 0 with a seed. */
static void dropout_seeds(void)
{
    static const struct {
        int which, dtype;
        const char *name;
    } cases[] = {{0, 0, "ok_f32_dropout_0_1"},  {1, 1, "ok_f64_dropout_0_5"},
                 {2, 0, "ok_f32_dropout_0_9"},  {3, 0, "ok_f32_dropout_off_with_a_seed"},
                 {4, 0, "err_arg_dropout_nan"}, {5, 1, "err_arg_dropout_negative"},
                 {6, 0, "err_arg_dropout_one"}, {7, 1, "err_arg_dropout_inf"}};
    for (size_t x = 0; x < sizeof cases / sizeof *cases; x++) {
        fz_input in = cases[x].which >= 4 ? base_err() : base();
        in.dtype = (fz_u8)cases[x].dtype;
        in.dropout.dropout = (fz_u8)(0xC0 + cases[x].which);
        in.dropout.dropout_seed = (fz_u8)(17 + x);
        emit(cases[x].name, &in);
    }
    fz_input in = base();
    in.causal = 2;
    windows(&in, 6, 1);
    softcap(&in, 2, 79);
    in.array[FZ_SLOPES] = (fz_heads_bytes){array_own(), 0, 1};
    in.dropout.dropout = 0xC1;
    in.dropout.dropout_seed = 99;
    emit("ok_f32_dropout_with_modifiers", &in);
    /* the origins (FZ_ORIGIN_FIELDS): each case of the selector, with dropout and without */
    static const struct {
        int which, dropout;
        const char *name;
    } origins[] = {{0, 1, "ok_f32_dropout_with_origins"},
                   {1, 1, "err_arg_dropout_row0_negative"},
                   {2, 0, "err_arg_dropout_key0_negative_without_dropout"},
                   {3, 1, "err_unsupported_dropout_row0_past_the_counter"},
                   {4, 1, "err_unsupported_dropout_key0_past_the_counter"},
                   {5, 0, "ok_f32_origins_past_the_counter_without_dropout"},
                   {6, 1, "ok_f32_dropout_origins_at_the_counters_edge"}};
    for (size_t x = 0; x < sizeof origins / sizeof *origins; x++) {
        in = origins[x].which >= 1 && origins[x].which <= 4 ? base_err() : base();
        in.dropout.dropout = origins[x].dropout ? 0xC1 : 0;
        in.dropout.dropout_seed = (fz_u8)(40 + x);
        in.origin.origin = sel(0xC0, 7, origins[x].which);
        in.origin.origin_row = 1000;
        in.origin.origin_key = 3001;
        emit(origins[x].name, &in);
    }
}

/* The bias's gradient (fuzz_input.h, FZ_DBIAS_FIELDS): every broadcast of the bias, half and f64
 * calls, and each of dbias's refusals; fa_forward ignoring it. */
static void dbias_seeds(void)
{
    static const struct {
        int bcast, dtype;
        const char *name;
    } ok[] = {{0, 0, "ok_f32_dbias_full"},
              {3, 1, "ok_f64_dbias_one_batch_one_head"},
              {4, 0, "ok_f32_dbias_one_row"},
              {7, 0, "ok_f32_dbias_one_row_for_all"}};
    for (size_t x = 0; x < sizeof ok / sizeof *ok; x++) {
        fz_input in = base();
        in.dtype = (fz_u8)ok[x].dtype;
        bias(&in, ok[x].bcast);
        in.dbias.dbias = 0xC0;
        emit(ok[x].name, &in);
    }
    fz_input in = base();
    in.dtype = BF16;
    in.causal = 2;
    bias(&in, 2);
    in.dbias.dbias = 0xC0;
    emit("ok_bf16_dbias_causal", &in);
    bias(&in, 0); /* every dS once, with the keys the masks hide */
    in.dtype = 0;
    in.causal = 1;
    windows(&in, 5, 2);
    emit("ok_f32_dbias_full_causal_window", &in);

    in = base(); /* the bias's rows by a stride of 0: dbias holds their one sum */
    bias(&in, 0);
    in.bias.layout = LAY_S0;
    in.dbias.dbias = 0xC0;
    in.dbias_view.layout = LAY_S0;
    emit("ok_f32_dbias_stride_0_where_the_bias_is", &in);
    in.dbias_view.layout = LAY_BHSD;
    emit("err_stride_dbias_not_broadcast_where_the_bias_is", &in);

    in = base();
    bias(&in, 0);
    in.dbias.dbias = 0xC0;
    in.dbias_view.layout = LAY_H0; /* two heads' sums on one element */
    emit("err_stride_dbias_overlaps_itself", &in);
    in.dbias_view.layout = LAY_BHSD;
    in.dbias_view.place = sel(0xC0, 11, 10);
    emit("err_stride_dbias_misaligned", &in);
    in.dbias_view.place = sel(0xC0, 11, 9);
    emit("err_null_dbias_data", &in);
    in.dbias_view.place = sel(0xC0, 11, FZ_BIAS);
    emit("err_alias_dbias_on_the_bias", &in);
    in.dbias_view.place = sel(0xC0, 11, FZ_DQ);
    emit("err_alias_dbias_on_dq", &in);
    in.dbias_view.place = 0;
    in.dbias_view.dtype_override = override(1);
    emit("err_dtype_dbias_f64_in_an_f32_call", &in);
    in.dbias_view.dtype_override = 0;
    size_to(&in.dbias_view, 3, 5);
    emit("err_shape_dbias_seq", &in);

    in = base();
    in.dbias.dbias = 0xC0; /* no bias */
    emit("err_null_dbias_without_bias", &in);
    in.calls = 2; /* forward only: dbias ignored */
    emit("ok_f32_forward_ignores_dbias", &in);
}

static void quant_seeds(void)
{
    char name[96];
    for (int q = 0; q < 3; q++) {
        fz_input in = base();
        in.quant.quant = quant(q);
        snprintf(name, sizeof name, "ok_f32_q_%s_kv", qname[q]);
        emit(name, &in); /* the backward: FA_ERR_UNSUPPORTED */

        in = base();
        in.calls = 2;
        in.causal = 2;
        windows(&in, 6, 1);
        softcap(&in, 2, 79);
        in.array[FZ_SLOPES] = (fz_heads_bytes){array_own(), 0, 1};
        bias(&in, 6);
        in.array[FZ_SINKS] = (fz_heads_bytes){array_own(), 0, 3};
        in.ctx = 6;
        dims(&in, 2, 2, 3, 45, 90, 24, 16);
        in.quant.quant = quant(q);
        snprintf(name, sizeof name, "ok_f32_q_%s_kv_every_modifier_gqa_ref_2threads", qname[q]);
        emit(name, &in);

        /* a decode step over a long cache (split keys, grouped GQA rows, the cache read in place):
         * one scale per head for k, one for the tensor for v */
        in = base();
        in.calls = 2;
        dims(&in, 2, 2, 4, 1, 300, 64, 64);
        in.quant.quant = quant(q);
        in.quant.k_bcast = 1 | 4;
        in.quant.v_bcast = 7;
        snprintf(name, sizeof name, "ok_f32_q_%s_kv_decode_split_gqa_scales_per_head_and_tensor", qname[q]);
        emit(name, &in);
    }
    /* pages of 4 with a pool of the pages' scales, read through the same table */
    static const int t3[18] = {9, 3, 0, 1, 7, 0xF0, 2, 5, 4, 8, 0xF0, 0xF0, 6, 1, 0xF0, 0xF0, 0xF0, 0xF0};
    static const int u3p[3] = {20, 13, 5};
    fz_input in = base();
    dims(&in, 2, 2, 2, 1, 29, 32, 32);
    in.ctx = 3;
    in.calls = 2;
    seqs(&in, KEYS_PAGED | SEQ_USED, 3, NULL, NULL, u3p);
    pages(&in, 4, 10, 6, t3, 18);
    in.quant.quant = quant(1);
    emit("ok_f32_q_f8e4m3_kv_seqs_paged_decode_blocks16", &in);
    in.quant.k_bcast = 2; /* one scale per page and token, for every head */
    in.quant.quant = quant(0);
    emit("ok_f32_q_i8_kv_seqs_paged_decode_scales_per_token", &in);

    static const int q4[4] = {5, 1, 12, 0}, k4[4] = {17, 9, 30, 4}, u4[4] = {12, 9, 30, 0};
    in = base();
    in.calls = 2;
    in.causal = 2;
    seqs(&in, SEQ_PACKED_Q | KEYS_PACKED | SEQ_USED, 4, q4, k4, u4);
    in.quant.quant = quant(2);
    emit("ok_f32_q_f8e5m2_kv_seqs_packed_used_keys", &in);

    in = base();
    in.calls = 2;
    dims(&in, 1, 1, 2, 2, 9, FA_MAX_HEAD_DIM, 512); /* MLA's head dims */
    in.quant.quant = quant(0);
    emit("ok_f32_q_i8_kv_d576_dv512", &in);

    in = base();
    in.calls = 2;
    in.quant.quant = quant(1);
    in.specials = 4;
    in.special[0] = (fz_special_bytes){FZ_K, 40, 0};  /* a NaN code in a key row */
    in.special[1] = (fz_special_bytes){FZ_V, 500, 6}; /* the largest code in a value row */
    in.special[2] = (fz_special_bytes){FZ_V, 77, 5};  /* a subnormal code */
    in.special[3] = (fz_special_bytes){FZ_K, 3, 4};   /* -0 */
    emit("ok_f32_q_f8e4m3_kv_nan_and_edge_codes", &in);
    in.quant.quant = quant(2);
    in.special[1] = (fz_special_bytes){FZ_V, 500, 1}; /* +inf in a value row */
    emit("ok_f32_q_f8e5m2_kv_nan_inf_codes", &in);

    in = base();
    in.calls = 2;
    in.quant.quant = quant(0);
    in.scale[0].layout = LAY_B0; /* broadcast by a stride of 0, the size kept */
    in.scale[1].layout = LAY_S0;
    emit("ok_f32_q_i8_kv_scales_stride0", &in);
    in.scale[0].layout = LAY_PAD_BSHD;
    in.scale[0].pad_head = 3;
    in.scale[1].layout = LAY_BSHD;
    emit("ok_f32_q_i8_kv_scales_padded_bshd", &in);
    in.scale[0] = in.scale[1] = (fz_view_bytes){0};
    in.scale[0].place = place(1); /* over k's bytes: inputs may overlap inputs */
    in.scale[1].place = place(0); /* over q's */
    emit("ok_f32_q_i8_kv_scales_over_inputs", &in);

    /* refusals, in the header's order of classes */
    in = base_err();
    in.quant.quant = quant(0);
    in.scale[0].layout = 0xF8;
    emit("err_null_quant_no_k_scale", &in);
    in = base_err();
    in.quant.quant = quant(1);
    in.scale[1].layout = 0xF8;
    emit("err_null_quant_no_v_scale", &in);
    in = base_err();
    in.quant.quant = quant(2);
    in.scale[0].place = place(8);
    emit("err_null_quant_k_scale_data", &in);

    in = base_err();
    in.quant.quant_twist = twist(4);
    emit("err_arg_scales_with_f32_kv", &in);
    in.dtypes.kv_dtype = F16;
    emit("err_arg_scales_with_f16_kv", &in);

    static const char *const twisted[6] = {"err_dtype_quant_v_other_type",
                                           "err_dtype_quant_q_and_out",
                                           "err_dtype_quant_out",
                                           "err_dtype_quant_v_f32",
                                           NULL,
                                           "err_dtype_quant_backward_dk_dv_f32"};
    for (int t = 0; t < 6; t++) {
        if (!twisted[t]) continue;
        in = base_err();
        in.quant.quant = quant(t % 3);
        in.quant.quant_twist = twist(t);
        emit(twisted[t], &in);
    }
    in = base_err();
    in.dtype = 1;
    in.quant.quant = quant(1);
    emit("err_dtype_quant_under_f64_q", &in);
    static const struct {
        int which, entry;
        const char *name;
    } scale_dtypes[3] = {{0, 1, "err_dtype_quant_k_scale_f64"},
                         {1, 2, "err_dtype_quant_v_scale_bf16"},
                         {0, 5, "err_dtype_quant_k_scale_unknown"}};
    for (int i = 0; i < 3; i++) {
        in = base_err();
        in.quant.quant = quant(i);
        in.scale[scale_dtypes[i].which].dtype_override = override(scale_dtypes[i].entry);
        emit(scale_dtypes[i].name, &in);
    }

    in = base_err();
    in.quant.quant = quant(0);
    size_to(&in.scale[0], 4, 2);
    emit("err_shape_quant_k_scale_dim_2", &in);
    in = base_err();
    in.quant.quant = quant(1);
    size_to(&in.scale[1], 1, 3);
    emit("err_shape_quant_v_scale_batch_3", &in);
    in = base_err();
    in.quant.quant = quant(2);
    size_to(&in.scale[0], 3, 28);
    emit("err_shape_quant_k_scale_seq_nk_minus_1", &in);
    in = base();
    dims(&in, 2, 2, 2, 1, 29, 32, 32);
    in.calls = 2;
    seqs(&in, KEYS_PAGED | SEQ_USED, 3, NULL, NULL, u3p);
    pages(&in, 4, 10, 6, t3, 18);
    in.quant.quant = quant(0);
    size_to(&in.scale[0], 1, 11); /* a pool of 11 pages' scales for 10 pages */
    emit("err_shape_quant_seqs_paged_k_scale_pool_larger", &in);

    in = base_err();
    in.quant.quant = quant(0);
    in.scale[0].layout = LAY_RAW;
    in.scale[0].raw_batch = 58;
    in.scale[0].raw_head = 29;
    in.scale[0].raw_seq = -1;
    emit("err_stride_quant_k_scale_negative", &in);
    in.scale[0].raw_seq = 1;
    in.scale[0].raw_batch = 1 << 30;
    in.scale[0].raw_scale = 3; /* x 2^45: the batch offset overflows int64 */
    emit("err_stride_quant_k_scale_offset_overflow", &in);
    in = base_err();
    in.quant.quant = quant(1);
    in.scale[1].place = place(9); /* its own region, 1 byte in */
    emit("err_stride_quant_v_scale_misaligned", &in);

    in = base_err();
    in.quant.quant = quant(2);
    in.scale[0].place = place(3); /* on out's region */
    emit("err_alias_quant_k_scale_under_out", &in);

    in = base();
    in.calls = 1; /* the forward computes, the backward is refused */
    in.quant.quant = quant(1);
    emit("err_unsupported_quant_backward", &in);

    in = base();
    in.quant.quant = quant(0);
    merge(&in, 3); /* parts dout, dq, dk, dv: dk and dv quantized */
    emit("err_dtype_quant_merge_parts", &in);
}

/* fa_convert (fuzz_input.h, FZ_CONVERT_FIELDS): copies, widening and narrowing between the four
 * float dtypes, a quantized source, and one seed per class of refusal. */
static void convert(fz_input *in, int dst, int src, int src_sizes)
{
    in->convert.convert = (fz_u8)(0xC0 | (src_sizes ? 1 : 0));
    in->convert.convert_dst = (fz_u8)dst;
    in->convert.convert_src = (fz_u8)src;
}

static void convert_seeds(void)
{
    static const struct {
        int dtype, dq_entry; /* the call's dtype entry, dq's dtype_override entry (-1: none) */
        const char *name;
    } pairs[] = {{0, -1, "ok_f32_convert_copy"},       {2, 0, "ok_bf16_convert_to_f32"},
                 {3, 0, "ok_f16_convert_to_f32"},      {0, 2, "ok_f32_convert_to_bf16"},
                 {1, 3, "ok_f64_convert_to_f16_once"}, {2, 3, "ok_bf16_convert_to_f16"},
                 {1, 0, "ok_f64_convert_to_f32"}};
    for (size_t x = 0; x < sizeof pairs / sizeof *pairs; x++) {
        fz_input in = base();
        in.dtype = sel(0xC0, 8, pairs[x].dtype);
        if (pairs[x].dq_entry >= 0) in.view[FZ_DQ].dtype_override = sel(0xF0, 8, pairs[x].dq_entry);
        in.view[FZ_Q].layout = LAY_PAD_BHSD;
        in.view[FZ_Q].pad_seq = 3;
        in.specials = 2; /* a NaN and an infinity to carry */
        in.special[0] = (fz_special_bytes){FZ_Q, 3, 0};
        in.special[1] = (fz_special_bytes){FZ_Q, 40, 1};
        convert(&in, FZ_DQ, FZ_Q, 0);
        emit(pairs[x].name, &in);
    }
    fz_input in = base();
    in.view[FZ_K].layout = LAY_B0; /* a broadcast source (stride 0 over the batch) */
    convert(&in, FZ_DK, FZ_K, 1);
    emit("ok_f32_convert_broadcast_source", &in);

    in = base();
    dims(&in, 2, 2, 1, 13, 13, 16, 16);
    in.quant.quant = 0x80; /* k FA_I8, with its scales; the forward alone (the backward refuses it) */
    in.calls = 2;
    convert(&in, FZ_DQ, FZ_K, 0);
    emit("ok_i8_convert_to_f32_without_scale", &in);

    in = base_err();
    in.quant.quant = 0x81;
    convert(&in, FZ_K, FZ_DQ, 1);
    emit("err_dtype_convert_quantized_dst", &in);

    in = base_err();
    in.view[FZ_V].layout = 0xF8;
    convert(&in, FZ_DQ, FZ_V, 0);
    emit("err_null_convert_src", &in);

    in = base_err();
    dims(&in, 2, 2, 2, 13, 29, 16, 8);
    convert(&in, FZ_OUT, FZ_Q, 0);
    emit("err_shape_convert_dim", &in);

    in = base_err();
    convert(&in, FZ_DQ, FZ_DQ, 0);
    emit("err_alias_convert_in_place", &in);

    in = base_err();
    in.view[FZ_DQ].layout = LAY_S0;
    convert(&in, FZ_DQ, FZ_Q, 1);
    emit("err_stride_convert_dst_overlaps_itself", &in);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR   (writes the seed corpus into DIR)\n", argv[0]);
        return 2;
    }
    g_dir = argv[1];
    valid_seeds();
    modifier_seeds();
    error_seeds();
    modifier_error_seeds();
    seqs_seeds();
    merge_seeds();
    half_seeds();
    abi_seeds();
    quant_seeds();
    dropout_seeds();
    dbias_seeds();
    convert_seeds();
    printf("fa-fuzz-make-corpus: %d seeds of %zu bytes in %s\n", g_count,
           fz_encode(&(fz_input){0}, (uint8_t[1024]){0}, 1024), g_dir);
    return 0;
}
