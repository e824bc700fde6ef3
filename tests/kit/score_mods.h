/* SPDX-License-Identifier: BSD-3-Clause */
/* What the suites, fa-bench and the MPI tests make alike for the score modifiers of flashattn.h:
 * ALiBi's slopes and the count of (query, key) pairs that a causal mask and a window let through. */
#ifndef FA_KIT_SCORE_MODS_H
#define FA_KIT_SCORE_MODS_H

#include <stdint.h>

#include "flashattn.h"

/* ALiBi's geometric sequence into slopes[0..heads): 2^(-8(h+1)/heads), so 2^(-8/heads), ..., 2^-8
 * (BLOOM's slopes for a power-of-two head count), each rounded to float once. */
void kit_alibi_slopes(float *slopes, int64_t heads);

/* The (i, j) pairs, i < nq, j < nk, that flashattn.h's causal mask (top-left, or bottom-right with
 * d0 = nk - nq; diagonal_shift 0) and window (window_left/right < 0: unbounded) leave visible; no
 * overflow for windows up to INT64_MAX. One row at a time: O(nq). */
int64_t kit_visible_pairs(fa_causal causal, int64_t nq, int64_t nk, int64_t window_left,
                          int64_t window_right);

/* The keys [*first, *end) that query row i of those sees (*first == *end: none). */
void kit_visible_keys(fa_causal causal, int64_t nq, int64_t nk, int64_t window_left, int64_t window_right,
                      int64_t i, int64_t *first, int64_t *end);

#endif
