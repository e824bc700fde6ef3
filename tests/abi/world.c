/* SPDX-License-Identifier: BSD-3-Clause */
/* The ABI test client's problems (client.h): inputs from a fixed generator, so every run of every
 * build computes the same thing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

static uint64_t state = 0x9E3779B97F4A7C15ULL;

static float next_value(void)
{
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(state >> 40) / 16777216.0 * 4.0 - 2.0); /* [-2, 2) */
}

static float *make(size_t n, int input)
{
    float *x = malloc(n * sizeof *x);
    if (!x) {
        fprintf(stderr, "abi-client: out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < n; i++) x[i] = input ? next_value() : 0.0f;
    return x;
}

#define N_A_Q  ((size_t)A_B * A_HQ * A_NQ * A_D)
#define N_A_K  ((size_t)A_B * A_HKV * A_NK * A_D)
#define N_A_V  ((size_t)A_B * A_HKV * A_NK * A_DV)
#define N_A_O  ((size_t)A_B * A_HQ * A_NQ * A_DV)
#define N_A_L  ((size_t)A_B * A_HQ * A_NQ)
#define N_S_Q  ((size_t)S_TQ * S_H * S_D)
#define N_S_K  ((size_t)S_TK * S_H * S_D)
#define N_C_Q  ((size_t)S_COUNT * S_H * S_D)
#define N_C_KV ((size_t)PAGES * PAGE * S_H * S_D)

void abi_world_make(abi_world *w)
{
    memset(w, 0, sizeof *w);
    /* A: GQA, Nq < Nk, Dv != D; a bottom-right causal mask, a left window, softcap, ALiBi, a
     * key-padding bias, sinks (and dsinks in the backward) */
    w->qa = make(N_A_Q, 1), w->ka = make(N_A_K, 1), w->va = make(N_A_V, 1), w->douta = make(N_A_O, 1);
    w->outa = make(N_A_O, 0), w->lsea = make(N_A_L, 0), w->dqa = make(N_A_Q, 0), w->dka = make(N_A_K, 0);
    w->dva = make(N_A_V, 0);
    w->bias = make((size_t)A_B * A_NK, 0);
    for (int b = 0; b < A_B; b++)
        for (int j = 0; j < A_NK; j++) w->bias[b * A_NK + j] = j >= A_NK - 3 * b ? -INFINITY : 0.0f;
    for (int h = 0; h < A_HQ; h++) w->slopes[h] = 0.125f * (float)(h + 1), w->sinks[h] = next_value();
    w->q = fa_tensor_bhsd(w->qa, FA_F32, A_B, A_HQ, A_NQ, A_D);
    w->k = fa_tensor_bhsd(w->ka, FA_F32, A_B, A_HKV, A_NK, A_D);
    w->v = fa_tensor_bhsd(w->va, FA_F32, A_B, A_HKV, A_NK, A_DV);
    w->out = fa_tensor_bhsd(w->outa, FA_F32, A_B, A_HQ, A_NQ, A_DV);
    w->dout = fa_tensor_bhsd(w->douta, FA_F32, A_B, A_HQ, A_NQ, A_DV);
    w->dq = fa_tensor_bhsd(w->dqa, FA_F32, A_B, A_HQ, A_NQ, A_D);
    w->dk = fa_tensor_bhsd(w->dka, FA_F32, A_B, A_HKV, A_NK, A_D);
    w->dv = fa_tensor_bhsd(w->dva, FA_F32, A_B, A_HKV, A_NK, A_DV);
    w->bias_view = fa_tensor_bhsd(w->bias, FA_F32, A_B, 1, 1, A_NK);
    w->p = (fa_params)FA_PARAMS_INIT;
    w->p.causal = FA_CAUSAL_BOTTOM_RIGHT;
    w->p.window_left = 12;
    w->p.softcap = 8.0;
    w->p.alibi_slopes = w->slopes;
    w->p.bias = &w->bias_view;
    w->p.sinks = w->sinks;
    w->p.dsinks = w->dsinks;

    /* B: three packed sequences of 5, 0 and 9 query rows over 7, 3 and 11 keys (6, 3, 11 in use),
     * token-major [1][total][H][D] */
    static const int64_t cu_q[S_COUNT + 1] = {0, 5, 5, 14}, cu_k[S_COUNT + 1] = {0, 7, 10, 21};
    static const int64_t used[S_COUNT] = {6, 3, 11};
    memcpy(w->cu_q, cu_q, sizeof cu_q), memcpy(w->cu_k, cu_k, sizeof cu_k),
        memcpy(w->used, used, sizeof used);
    w->qs = make(N_S_Q, 1), w->ks = make(N_S_K, 1), w->vs = make(N_S_K, 1);
    w->outs = make(N_S_Q, 0), w->lses = make((size_t)S_H * S_TQ, 0);
    w->sq = fa_tensor_bshd(w->qs, FA_F32, 1, S_TQ, S_H, S_D);
    w->sk = fa_tensor_bshd(w->ks, FA_F32, 1, S_TK, S_H, S_D);
    w->sv = fa_tensor_bshd(w->vs, FA_F32, 1, S_TK, S_H, S_D);
    w->sout = fa_tensor_bshd(w->outs, FA_F32, 1, S_TQ, S_H, S_D);
    w->seqs = (fa_seqs)FA_SEQS_INIT;
    w->seqs.batch = S_COUNT;
    w->seqs.cu_seqlens_q = w->cu_q;
    w->seqs.cu_seqlens_k = w->cu_k;
    w->seqs.seqused_k = w->used;
    w->ps = (fa_params)FA_PARAMS_INIT;
    w->ps.causal = FA_CAUSAL_TOP_LEFT;
    w->ps.seqs = &w->seqs;

    /* C: a decode step of the three sequences over a page pool, pages shared and out of order */
    static const int32_t table[S_COUNT * PAGES_PER_SEQ] = {5, 2, 7, 0, 3, 1, 6, 4, 2};
    static const int64_t used_c[S_COUNT] = {9, 4, 12};
    memcpy(w->table, table, sizeof table), memcpy(w->used_c, used_c, sizeof used_c);
    w->qc = make(N_C_Q, 1), w->kc = make(N_C_KV, 1), w->vc = make(N_C_KV, 1);
    w->outc = make(N_C_Q, 0), w->lsec = make((size_t)S_COUNT * S_H, 0);
    w->cq = fa_tensor_bshd(w->qc, FA_F32, S_COUNT, 1, S_H, S_D);
    w->ck = fa_tensor_bshd(w->kc, FA_F32, PAGES, PAGE, S_H, S_D);
    w->cv = fa_tensor_bshd(w->vc, FA_F32, PAGES, PAGE, S_H, S_D);
    w->cout = fa_tensor_bshd(w->outc, FA_F32, S_COUNT, 1, S_H, S_D);
    w->paged = (fa_seqs)FA_SEQS_INIT;
    w->paged.batch = S_COUNT;
    w->paged.seqused_k = w->used_c;
    w->paged.block_table = w->table;
    w->paged.pages_per_seq = PAGES_PER_SEQ;
    w->pc = (fa_params)FA_PARAMS_INIT;
    w->pc.causal = FA_CAUSAL_BOTTOM_RIGHT;
    w->pc.sinks = w->sinks;
    w->pc.seqs = &w->paged;
    abi_world_reset(w);
}

int abi_world_outputs(abi_world *w, void **at, size_t *bytes, const char **names, int cap)
{
    void *const a[] = {w->outa,   w->lsea, w->dqa,  w->dka,  w->dva,
                       w->dsinks, w->outs, w->lses, w->outc, w->lsec};
    const size_t n[] = {
        N_A_O, N_A_L, N_A_Q, N_A_K, N_A_V, A_HQ, N_S_Q, (size_t)S_H * S_TQ, N_C_Q, (size_t)S_COUNT * S_H};
    static const char *const name[] = {"A out",    "A lse", "A dq",  "A dk",  "A dv",
                                       "A dsinks", "B out", "B lse", "C out", "C lse"};
    int count = (int)(sizeof a / sizeof *a);
    for (int i = 0; i < count && i < cap; i++)
        at[i] = a[i], bytes[i] = n[i] * sizeof(float), names[i] = name[i];
    return count < cap ? count : cap;
}

void abi_world_reset(abi_world *w)
{
    void *at[16];
    size_t bytes[16];
    const char *names[16];
    int n = abi_world_outputs(w, at, bytes, names, 16);
    for (int i = 0; i < n; i++) memset(at[i], ABI_CANARY, bytes[i]);
}

int abi_all_canary(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != ABI_CANARY) return 0;
    return 1;
}

void abi_world_free(abi_world *w)
{
    float *all[] = {w->qa, w->ka, w->va, w->outa, w->lsea, w->douta, w->dqa, w->dka, w->dva,  w->bias,
                    w->qs, w->ks, w->vs, w->outs, w->lses, w->qc,    w->kc,  w->vc,  w->outc, w->lsec};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}
