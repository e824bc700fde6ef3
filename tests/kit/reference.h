/* SPDX-License-Identifier: BSD-3-Clause */
/* The float64 oracle: naive attention, one row at a time, straight from the definition in
 * include/flashattn.h (fa_params, "Score modifiers"): every index mask (causal, window) and every
 * value modifier (softcap, ALiBi, bias) of fa_params, and the attention sinks.
 * It shares no code with the library on purpose; tests and fa-bench both judge against it. */
#ifndef FA_REFERENCE_H
#define FA_REFERENCE_H

#include <stdint.h>

#include "flashattn.h"

/* Reads element (b, h, s, d) of an f32, f64, bf16 or f16 tensor as a double (half elements widened
 * exactly, by the kit's own conversions, dtype.h). Every oracle below reads its inputs through it,
 * so each runs on half tensors as stored: the rounded values, in double (or float) arithmetic. */
double ref_load(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d);

/* Whether query row i may see key j under causal mode c alone (Nq, Nk: sequence lengths). */
int ref_visible(fa_causal c, int64_t nq, int64_t nk, int64_t i, int64_t j);

/* Whether query row i sees key j under every index mask of p (NULL: defaults): the causal mask
 * and the window, both measured from the diagonal j = i + d0 (d0 = 0 under FA_CAUSAL_TOP_LEFT,
 * Nk - Nq otherwise). A -inf bias is not an index mask: this does not look at the bias. */
int ref_sees(const fa_params *p, int64_t nq, int64_t nk, int64_t i, int64_t j);

/* bias(b, h, i, j) of p as a double, 0 when p has no bias. An axis of size 1 broadcasts. */
double ref_bias(const fa_params *p, int64_t b, int64_t h, int64_t i, int64_t j);

/* The value modifiers of p applied, in the header's order, to the scaled score s = scale·q_i·k_j of
 * (batch b, query head h, row i, key j): softcap, then ALiBi, then bias. With dmod non-NULL,
 * *dmod = d(modified)/ds, the softcap's 1 - tanh² (1 without a softcap). In double. */
double ref_modify(const fa_params *p, int64_t nq, int64_t nk, int64_t b, int64_t h, int64_t i, int64_t j,
                  double s, double *dmod);

/* The same in float arithmetic (tanhf; the slope, the distance and the bias as floats), for the f32
 * yardsticks. */
float ref_modify_f32(const fa_params *p, int64_t nq, int64_t nk, int64_t b, int64_t h, int64_t i, int64_t j,
                     float s, float *dmod);

/* One output row in float64: out_row[0..Dv) and *lse for (batch b, query head h, query i).
 * p NULL means defaults. out_i = sum_j e^(s_ij) v_j / (sum_j e^(s_ij) [+ e^(sinks[h])]) over the keys
 * j row i sees, lse_i the log of that denominator. A row that sees no key, or whose scores are all
 * -inf, gets zeros and lse = -INFINITY (sinks[h] with sinks).
 * Uses the two-pass max-subtracted softmax (the max taken over the scores and the sink), all in
 * double. */
void ref_forward_row(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                     int64_t b, int64_t h, int64_t i, double *out_row, double *lse);

/* The whole forward in float64: out is [B][Hq][Nq][Dv] contiguous, lse [B][Hq][Nq]; either may be NULL. */
void ref_forward(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v, double *out,
                 double *lse);

/* The same with dropout (flashattn.h, fa_params "Dropout") given its mask: keep [B][Hq][Nq][Nk]
 * (contiguous; 1 kept, 0 dropped; the tests take it from fa_dropout_mask), NULL for none.
 * out_i = sum_j keep_ij / (1 - p->dropout_p) · P_ij v_j, lse undropped. */
void ref_forward_dropout(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                         const uint8_t *keep, double *out, double *lse);

/* The same naive algorithm carried out in float32 arithmetic (sequential dot products, tanhf, expf):
 * the yardstick for how much error an f32 implementation may have. Same layout as ref_forward. */
void ref_forward_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                           double *out, double *lse);
/* The same with dropout given its mask (as ref_forward_dropout), in float: the yardstick for a
 * dropout call's error in f32 and, rounded, in bf16 and f16. */
void ref_forward_dropout_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                   const fa_tensor *v, const uint8_t *keep, double *out, double *lse);

/* One row of ref_forward_naive_f32 (the same float32 arithmetic), for tests that check a sample of
 * rows. Same conventions as ref_forward_row. */
void ref_forward_row_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                               int64_t b, int64_t h, int64_t i, double *out_row, double *lse);

#endif
