/* SPDX-License-Identifier: BSD-3-Clause */
/* The score epilogue: everything between the two tile products, in one place, computed from
 * indices. Forward and backward both use it, in two parts:
 * - the value modifiers (softcap, ALiBi, bias), applied to every score a driver computes by the
 *   kernel table's `modify` from the fa_score_mods this file describes for each tile;
 * - the index masks (causal, window), which define the visible key range of every row: drivers
 *   visit only tiles some row sees, trim them to the columns some row sees, and mask element-wise
 *   only the tiles that are not fully visible.
 * The scale (alone: log2 e is not folded in, see kernels/kernels.h) is folded into the packed
 * queries, so score tiles arrive scaled. */
#ifndef FA_EPILOGUE_H
#define FA_EPILOGUE_H

#include <stdint.h>

#include "kernels/kernels.h"
#include "plan/mask.h"
#include "plan/problem.h"

/* The value modifiers of the tile of query rows [row0, row0 + rows) of (batch, q_head) against keys
 * col0.. (elem: bytes per element of the problem's dtype), for the kernel table's `modify`. */
fa_score_mods fa_score_mods_of(const fa_problem *p, size_t elem, int64_t batch, int64_t q_head, int64_t row0,
                               int64_t rows, int64_t col0);

/* On the transposed score tile s[c][r] (row stride ld) whose corner is (query row0, key col0):
 * entries the masks hide become -inf. Only tiles that are not fully visible need it. */
void fa_epilogue_f32(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols, float *s,
                     int64_t ld);
void fa_epilogue_f64(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols, double *s,
                     int64_t ld);

/* The same positions set to 0: the backward applies it to the score gradient on a mask's edge,
 * where p = 0 but the dO·Vᵀ term may hold a NaN from a key the row does not see. */
void fa_zero_masked_f32(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols, float *t,
                        int64_t ld);
void fa_zero_masked_f64(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                        double *t, int64_t ld);

#endif
