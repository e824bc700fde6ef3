/* SPDX-License-Identifier: BSD-3-Clause */
/* Tile products restricted to the keys each query row may see.
 *
 * Masked probabilities are exact zeros, but 0·NaN and 0·Inf are NaN: multiplying a whole tile on
 * a mask's edge would let a NaN or Inf in a value, key or query row reach rows that do not see
 * it. So a fully visible tile is one kernel call, and an edge tile is its largest rectangle that
 * every row sees (one kernel call) plus, row by row (or key by key), the visible rest, except
 * that accumulate_t_visible takes an edge tile whose weights and operand rows are all finite in
 * one call (its masked weights are then exact zeros: the callers' contract below).
 *
 * Callers pass weights w that are exactly 0 at masked entries whenever they are finite: the
 * probabilities of an epilogue-masked tile, or score gradients after fa_zero_masked_*. */
#ifndef FA_VISIBLE_PRODUCTS_H
#define FA_VISIBLE_PRODUCTS_H

#include <stdint.h>

#include "kernels/kernels.h"
#include "plan/problem.h"

/* s[c][r] = sum_x qt[x][r]·k[c][x] (the table's scores, with its bits) for the entries of rows that
 * see some key near them: on a mask's edge each register block of keys takes only the whole row
 * vectors that see one of its keys. The other entries, all masked, are left as they were, or with
 * `masked` set to -inf, as the epilogue leaves them (callers that read them before masking: the
 * modifiers); padding rows are 0, as scores leaves them. */
void fa_scores_visible_f32(const fa_kernels_f32 *k, const fa_problem *p, int64_t row0, int64_t rows,
                           int64_t col0, int64_t cols, int64_t dim, const float *qt, int64_t ld,
                           const float *kt, int64_t k_stride, float *s, int masked);
void fa_scores_visible_f64(const fa_kernels_f64 *k, const fa_problem *p, int64_t row0, int64_t rows,
                           int64_t col0, int64_t cols, int64_t dim, const double *qt, int64_t ld,
                           const double *kt, int64_t k_stride, double *s, int masked);

/* acc[r][0..dim) += sum over keys c visible to row row0 + r of w[c][r] · x[c][0..dim)
 * (w: transposed tile of stride ld; x points at key col0's row). */
void fa_accumulate_visible_f32(const fa_kernels_f32 *k, const fa_problem *p, int64_t row0, int64_t rows,
                               int64_t col0, int64_t cols, int64_t dim, const float *w, int64_t ld,
                               const float *x, int64_t x_stride, float *acc, int64_t acc_stride);
void fa_accumulate_visible_f64(const fa_kernels_f64 *k, const fa_problem *p, int64_t row0, int64_t rows,
                               int64_t col0, int64_t cols, int64_t dim, const double *w, int64_t ld,
                               const double *x, int64_t x_stride, double *acc, int64_t acc_stride);

/* acc[c][0..dim) += sum over rows r that see key col0 + c of w[c][r] · x[r][0..dim)
 * (x points at query row0's row; acc row c belongs to key col0 + c). */
void fa_accumulate_t_visible_f32(const fa_kernels_f32 *k, const fa_problem *p, int64_t row0, int64_t rows,
                                 int64_t col0, int64_t cols, int64_t dim, const float *w, int64_t ld,
                                 const float *x, int64_t x_stride, float *acc, int64_t acc_stride);
void fa_accumulate_t_visible_f64(const fa_kernels_f64 *k, const fa_problem *p, int64_t row0, int64_t rows,
                                 int64_t col0, int64_t cols, int64_t dim, const double *w, int64_t ld,
                                 const double *x, int64_t x_stride, double *acc, int64_t acc_stride);

#endif
