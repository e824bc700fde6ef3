/* SPDX-License-Identifier: BSD-3-Clause */
/* The score modifiers' inputs and visible pairs; see score_mods.h. */
#include "score_mods.h"

#include <math.h>

void kit_alibi_slopes(float *slopes, int64_t heads)
{
    for (int64_t h = 0; h < heads; h++) slopes[h] = (float)exp2(-8.0 * (double)(h + 1) / (double)heads);
}

void kit_visible_keys(fa_causal causal, int64_t nq, int64_t nk, int64_t window_left, int64_t window_right,
                      int64_t i, int64_t *first, int64_t *end)
{
    int64_t diag = i + (causal == FA_CAUSAL_TOP_LEFT ? 0 : nk - nq), lo = 0, hi = nk - 1; /* [lo, hi] */
    if (causal != FA_CAUSAL_NONE && diag < hi) hi = diag;
    /* Compared as differences: a window of up to INT64_MAX keys must not overflow diag ± window. */
    if (window_left >= 0 && window_left < diag - lo) lo = diag - window_left;
    if (window_right >= 0 && window_right < hi - diag) hi = diag + window_right;
    *first = lo;
    *end = hi >= lo ? hi + 1 : lo;
}

int64_t kit_visible_pairs(fa_causal causal, int64_t nq, int64_t nk, int64_t window_left, int64_t window_right)
{
    int64_t pairs = 0;
    for (int64_t i = 0; i < nq; i++) {
        int64_t first, end;
        kit_visible_keys(causal, nq, nk, window_left, window_right, i, &first, &end);
        pairs += end - first;
    }
    return pairs;
}
