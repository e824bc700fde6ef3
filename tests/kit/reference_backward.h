/* SPDX-License-Identifier: BSD-3-Clause */
/* The float64 oracle for the backward pass: the analytic gradients, naively. */
#ifndef FA_REFERENCE_BACKWARD_H
#define FA_REFERENCE_BACKWARD_H

#include "reference.h"

/* Gradients of L = sum(dout ∘ out) with out = attention(q, k, v) under every score modifier of p
 * (include/flashattn.h, fa_params), all in double.
 * dq [B][Hq][Nq][D], dk [B][Hkv][Nk][D], dv [B][Hkv][Nk][Dv], contiguous; any may be NULL.
 * Probabilities come from the oracle's own forward (not from the library's lse): for row i,
 * P_ij = e^(s_ij) / (sum_j' e^(s_ij') [+ e^(sinks[h])]) over the keys row i sees (s the modified
 * score), dP_ij = dout_i·v_j, delta_i = sum_j P_ij·dP_ij, dS_ij = P_ij·(dP_ij - delta_i)·m'_ij with
 * m' the derivative of the value modifiers (the softcap's 1 - tanh², else 1: ALiBi and bias are
 * constants); dq = scale·dS·K, dk = scale·dSᵀ·Q, dv = Pᵀ·dO. A row that sees no key, or whose
 * scores are all -inf, contributes nothing and gets dq = 0. */
void ref_backward(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                  const fa_tensor *dout, double *dq, double *dk, double *dv);

/* The same with dropout given its mask (see ref_forward_dropout): keep [B][Hq][Nq][Nk], M_ij =
 * keep_ij / (1 - p->dropout_p); out = (P∘M)·V, dP_ij = (dout_i·v_j)·M_ij, delta_i = sum_j P_ij·dP_ij
 * (= dout_i·out_i), dS = P∘(dP - delta)∘m', dv = (P∘M)ᵀ·dO. */
void ref_backward_dropout(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                          const fa_tensor *dout, const uint8_t *keep, double *dq, double *dk, double *dv);

/* The same algorithm in float32 arithmetic (tanhf, expf): the yardstick for an f32 backward's
 * error. */
void ref_backward_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                            const fa_tensor *dout, double *dq, double *dk, double *dv);

/* The f32 yardstick of a backward handed a rounded out (bf16, f16): the algorithm of
 * ref_backward_naive_f32 from the inputs fa_backward gets, with delta_i = dout_i·out_i computed in
 * float from the given out (as the header defines fa_backward's delta) instead of from its own P.
 * An out rounded to half carries a relative error up to 2^-8 (bf16) or 2^-11 (f16) into delta and
 * so into dS, dq and dk; an implementation judged against the exact oracle cannot do better than
 * that, so the yardstick starts from the same out. dsinks (Hq values, summed in float) as
 * ref_backward_dsinks_naive_f32 with that delta. Any output may be NULL. */
void ref_backward_naive_f32_given_out(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                      const fa_tensor *v, const fa_tensor *out, const fa_tensor *dout,
                                      double *dq, double *dk, double *dv, double *dsinks);
/* The same with dropout given its mask (as ref_backward_dropout); out NULL: delta from its own P. */
void ref_backward_dropout_naive_f32_given_out(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                              const fa_tensor *v, const fa_tensor *out, const fa_tensor *dout,
                                              const uint8_t *keep, double *dq, double *dk, double *dv,
                                              double *dsinks);

/* The gradient of L with respect to the sink logits, dsinks[0..Hq) (all 0 without p->sinks), in
 * double, by the algorithm of ref_backward: the sink is one more logit of row i, with probability
 * P_i,sink = e^(sinks[h]) / (that row's denominator) and a zero value row, so
 *   dsinks[h] = -sum over b, then i, of P_(b,h,i),sink · delta_(b,h,i).
 * Rows that see no key contribute nothing (their out is 0, so delta is 0). It is not rounded to
 * float, unlike fa_backward's. Cost: that of the whole ref_backward; for a sample of a large
 * problem, ref_backward_row_stats gives each row's lse and delta, and P_sink = e^(sinks[h] - lse). */
void ref_backward_dsinks(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                         const fa_tensor *dout, double *dsinks);

/* The same in float32 arithmetic, summed in float: the yardstick for an f32 dsinks' error. */
void ref_backward_dsinks_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                   const fa_tensor *v, const fa_tensor *dout, double *dsinks);

/* The bias's gradient as the oracle lays it out: contiguous [batch][heads][seq][Nk] with every axis
 * the bias broadcasts over (size 1 or stride 0) of size 1, the others the problem's (B, Hq, Nq). */
typedef struct {
    int64_t batch, heads, seq;
} ref_dbias_shape;
ref_dbias_shape ref_dbias_shape_of(const fa_params *p, const fa_tensor *q);
/* The row of that layout that query row (b, h, i) adds to. */
int64_t ref_dbias_at(const ref_dbias_shape *s, int64_t b, int64_t h, int64_t i);

/* dL/dbias in double by the algorithm of ref_backward: dS_ij = P_ij·(dP_ij - delta_i), the gradient of
 * the modified score (before the softcap's derivative), summed over the broadcast axes b-major, then
 * h, then i; 0 for the keys a row does not see and for rows that see none. All 0 without p->bias. */
void ref_backward_dbias(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                        const fa_tensor *dout, double *dbias);

/* The same in float32 arithmetic, summed in float: the yardstick for an f32 dbias's error. */
void ref_backward_dbias_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                  const fa_tensor *v, const fa_tensor *dout, double *dbias);

/* The f32 yardstick of a backward handed a rounded out (bf16, f16), as
 * ref_backward_naive_f32_given_out: delta_i = dout_i·out_i in float from the given out. */
void ref_backward_dbias_naive_f32_given_out(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                            const fa_tensor *v, const fa_tensor *out, const fa_tensor *dout,
                                            double *dbias);

/* Row-level oracles: a deterministic sample of gradient rows, checked without the whole problem
 * (fa-bench). Same definitions as ref_backward, in double, straight from them: for query row i of
 * head h, s_ij = scale·q_i·k_j over the keys j that row i sees, P_i = softmax(s_i),
 * dP_ij = dout_i·v_j, delta_i = Σ_j P_ij·dP_ij, dS_ij = P_ij·(dP_ij − delta_i). They never use the
 * library's out or lse. A row that sees no key has P_i = 0: it contributes nothing and its dq is 0. */

/* What every dk/dv row needs from query row (b, h, i): *lse = log (Σ_j exp(s_ij) [+ exp(sinks[h])])
 * over the visible j (−INFINITY when none, sinks[h] with sinks) and *delta = delta_i (0 when none).
 * Cost O(Nk·(D + Dv)). */
void ref_backward_row_stats(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                            const fa_tensor *dout, int64_t b, int64_t h, int64_t i, double *lse,
                            double *delta);

/* Row i of dq for (batch b, query head h): dq_row[0..D) = scale·Σ_j dS_ij·k_j. Cost O(Nk·(2D + Dv)). */
void ref_backward_dq_row(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                         const fa_tensor *dout, int64_t b, int64_t h, int64_t i, double *dq_row);

/* Row j of dk and dv for (batch b, kv head kvh): dk_row[0..D) = scale·Σ dS_ij·q_i and
 * dv_row[0..Dv) = Σ P_ij·dout_i, summed over the query heads h = kvh·G .. kvh·G + G − 1 of the group
 * (G = Hq / Hkv), in that order, and over the rows i that see key j, in increasing order. Either
 * output may be NULL. Computes every query row's normaliser itself: O(G·Nq·Nk·(D + Dv)), fine for
 * small problems; for a sample of rows of a large one use ref_backward_dkdv_row_stats. */
void ref_backward_dkdv_row(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                           const fa_tensor *dout, int64_t b, int64_t kvh, int64_t j, double *dk_row,
                           double *dv_row);

/* The same row from row statistics computed once per (b, kvh): lse and delta hold G·Nq values each,
 * [g][i] for query head kvh·G + g, as ref_backward_row_stats returns them. Cost O(G·Nq·(2D + 2Dv)). */
void ref_backward_dkdv_row_stats(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                 const fa_tensor *v, const fa_tensor *dout, int64_t b, int64_t kvh, int64_t j,
                                 const double *lse, const double *delta, double *dk_row, double *dv_row);

#endif
