/* SPDX-License-Identifier: BSD-3-Clause */
/* Gradients into one packed dQKV buffer, the layout of a fused QKV projection in training:
 * [B][S][Hq·D + Hkv·D + Hkv·Dv] with dq, dk, dv as interleaved slices. Their address ranges
 * meet but no element is shared, so fa_backward must accept them and write exactly what it
 * writes into separate buffers; a slice shifted into its neighbour's columns must be refused. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "flashattn.h"
#include "util.h"

enum { B = 2, S = 37, HQ = 4, HKV = 2, D = 24, DV = 16 };
#define W (HQ * D + HKV * D + HKV * DV) /* one packed row */

typedef struct {
    float *qkv, *out, *dout, *lse;
    fa_tensor q, k, v, o, d_o;
} inputs;

static fa_tensor slice(float *base, int64_t col, int64_t heads, int64_t dim)
{
    fa_tensor t = {.data = base + col,
                   .dtype = FA_F32,
                   .batch = B,
                   .heads = heads,
                   .seq = S,
                   .dim = dim,
                   .stride_batch = (int64_t)S * W,
                   .stride_head = dim,
                   .stride_seq = W};
    return t;
}

static void make_inputs(inputs *in, uint64_t seed)
{
    tu_rng rng = tu_rng_make(seed);
    in->qkv = malloc(sizeof(float) * B * S * W);
    in->out = malloc(sizeof(float) * B * HQ * S * DV);
    in->dout = malloc(sizeof(float) * B * HQ * S * DV);
    in->lse = malloc(sizeof(float) * B * HQ * S);
    for (int64_t i = 0; i < (int64_t)B * S * W; i++) in->qkv[i] = (float)tu_rng_uniform(&rng, -2, 2);
    for (int64_t i = 0; i < (int64_t)B * HQ * S * DV; i++) in->dout[i] = (float)tu_rng_uniform(&rng, -1, 1);
    in->q = slice(in->qkv, 0, HQ, D);
    in->k = slice(in->qkv, HQ * D, HKV, D);
    in->v = slice(in->qkv, HQ * D + HKV * D, HKV, DV);
    in->o = fa_tensor_bhsd(in->out, FA_F32, B, HQ, S, DV);
    in->d_o = fa_tensor_bhsd(in->dout, FA_F32, B, HQ, S, DV);
}

static void free_inputs(inputs *in)
{
    free(in->qkv);
    free(in->out);
    free(in->dout);
    free(in->lse);
}

Test(packed_gradients, dqkv_slices_of_one_buffer_equal_separate_buffers_bitwise)
{
    uint64_t seed = tu_test_seed();
    inputs in;
    make_inputs(&in, seed);
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_TOP_LEFT;
    cr_assert_eq(fa_forward(NULL, &p, &in.q, &in.k, &in.v, &in.o, in.lse), FA_OK);

    float *dq = malloc(sizeof(float) * B * HQ * S * D), *dk = malloc(sizeof(float) * B * HKV * S * D),
          *dv = malloc(sizeof(float) * B * HKV * S * DV);
    fa_tensor tdq = fa_tensor_bhsd(dq, FA_F32, B, HQ, S, D), tdk = fa_tensor_bhsd(dk, FA_F32, B, HKV, S, D),
              tdv = fa_tensor_bhsd(dv, FA_F32, B, HKV, S, DV);
    cr_assert_eq(fa_backward(NULL, &p, &in.q, &in.k, &in.v, &in.o, &in.d_o, in.lse, &tdq, &tdk, &tdv), FA_OK);

    float *dqkv = malloc(sizeof(float) * B * S * W);
    fa_tensor pdq = slice(dqkv, 0, HQ, D), pdk = slice(dqkv, HQ * D, HKV, D),
              pdv = slice(dqkv, HQ * D + HKV * D, HKV, DV);
    fa_status st = fa_backward(NULL, &p, &in.q, &in.k, &in.v, &in.o, &in.d_o, in.lse, &pdq, &pdk, &pdv);
    cr_assert_eq(st, FA_OK, "seed %llu: packed dQKV refused with %s", (unsigned long long)seed,
                 fa_status_str(st));

    const float *sep[3] = {dq, dk, dv};
    const fa_tensor *packed[3] = {&pdq, &pdk, &pdv};
    for (int t = 0; t < 3; t++) {
        const fa_tensor *v = packed[t];
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < v->heads; h++)
                for (int64_t s = 0; s < S; s++) {
                    const float *got =
                        (const float *)v->data + b * v->stride_batch + h * v->stride_head + s * v->stride_seq;
                    const float *want = sep[t] + ((b * v->heads + h) * S + s) * v->dim;
                    cr_assert(memcmp(got, want, sizeof(float) * (size_t)v->dim) == 0,
                              "seed %llu: gradient %d differs at b=%lld h=%lld s=%lld",
                              (unsigned long long)seed, t, (long long)b, (long long)h, (long long)s);
                }
    }
    free(dq);
    free(dk);
    free(dv);
    free(dqkv);
    free_inputs(&in);
}

Test(packed_gradients, a_slice_shifted_into_its_neighbour_is_refused_and_nothing_is_written)
{
    uint64_t seed = tu_test_seed();
    inputs in;
    make_inputs(&in, seed);
    cr_assert_eq(fa_forward(NULL, NULL, &in.q, &in.k, &in.v, &in.o, in.lse), FA_OK);
    float *dqkv = malloc(sizeof(float) * B * S * W);
    memset(dqkv, 0x5a, sizeof(float) * B * S * W);
    /* dk starts one column early: its first column is dq's last. */
    fa_tensor pdq = slice(dqkv, 0, HQ, D), pdk = slice(dqkv, HQ * D - 1, HKV, D),
              pdv = slice(dqkv, HQ * D + HKV * D, HKV, DV);
    cr_expect_eq(fa_backward(NULL, NULL, &in.q, &in.k, &in.v, &in.o, &in.d_o, in.lse, &pdq, &pdk, &pdv),
                 FA_ERR_ALIAS);
    /* dv's columns reaching into the next row's dq (w columns wrap): refused too. */
    fa_tensor wide = slice(dqkv, HQ * D + HKV * D, HKV, DV);
    wide.stride_head = DV + 1; /* the last head ends one column past the row */
    fa_tensor pdk_ok = slice(dqkv, HQ * D, HKV, D);
    cr_expect_eq(fa_backward(NULL, NULL, &in.q, &in.k, &in.v, &in.o, &in.d_o, in.lse, &pdq, &pdk_ok, &wide),
                 FA_ERR_ALIAS);
    for (int64_t i = 0; i < (int64_t)B * S * W; i++) {
        uint32_t bits;
        memcpy(&bits, &dqkv[i], sizeof bits);
        cr_assert_eq(bits, 0x5a5a5a5au, "seed %llu: element %lld written by a refused call",
                     (unsigned long long)seed, (long long)i);
    }
    free(dqkv);
    free_inputs(&in);
}
