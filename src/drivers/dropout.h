/* SPDX-License-Identifier: BSD-3-Clause */
/* Dropout's keep mask (flashattn.h, fa_params "Dropout"), applied to probability tiles between the
 * softmax and the products that read them: the forward's P before P·V, the backward's P before dV
 * and dP before dS. The mask of an element is computed from its indices alone (kernels/philox.h),
 * so every thread, block size, table and layout drops the same probabilities. */
#ifndef FA_DROPOUT_H
#define FA_DROPOUT_H

#include <stdint.h>

#include "kernels/kernels.h"
#include "plan/problem.h"

/* round((1 - p) · 2^16) in double, ties up: the threshold of a keep (flashattn.h says it so). */
uint32_t fa_dropout_threshold(double p);

/* The stream of batch entry b (the caller's index: a sequence's with seqs) and query head h of Hq. */
fa_dropout_stream fa_dropout_stream_of(uint64_t seed, uint64_t offset, double p, int64_t heads, int64_t b,
                                       int64_t h);

/* mask[r·ld + c] = 1 when row i0 + r keeps key j0 + c of the stream, else 0 (rows, cols >= 0). */
void fa_dropout_keep_bytes(const fa_dropout_stream *st, int64_t i0, int64_t j0, int64_t rows, int64_t cols,
                           uint8_t *mask, int64_t ld);

/* The forward: on the transposed probability tile s[c][r] (row stride ld) of query rows row0..
 * (rows of them) of (batch, q_head) and keys col0.. of a problem with dropout, each probability
 * times 1/(1 - p) if kept, times 0 if dropped (the set's dropout_probs). */
void fa_dropout_probs_f32(const fa_kernels_f32 *k, const fa_problem *p, int64_t batch, int64_t q_head,
                          int64_t row0, int64_t rows, int64_t col0, int64_t cols, float *s, int64_t ld);
void fa_dropout_probs_f64(const fa_kernels_f64 *k, const fa_problem *p, int64_t batch, int64_t q_head,
                          int64_t row0, int64_t rows, int64_t col0, int64_t cols, double *s, int64_t ld);

/* The backward's score gradient with dropout, in place of the set's score_grad over the whole tile
 * (ld rows): the set's dropout_score_grad (kernels.h says what it computes). */
void fa_dropout_score_grad_f32(const fa_kernels_f32 *k, const fa_problem *p, int64_t batch, int64_t q_head,
                               int64_t row0, int64_t rows, int64_t col0, int64_t cols, float *pt, float *ds,
                               const float *delta, int64_t ld);
void fa_dropout_score_grad_f64(const fa_kernels_f64 *k, const fa_problem *p, int64_t batch, int64_t q_head,
                               int64_t row0, int64_t rows, int64_t col0, int64_t cols, double *pt, double *ds,
                               const double *delta, int64_t ld);

#endif
