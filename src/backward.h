/* Backward tile drivers: a delta pre-pass, then dK/dV items and dQ items. */
#ifndef FA_BACKWARD_H
#define FA_BACKWARD_H

#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "problem.h"

/* Arena bytes one backward item needs: the query block's packs (Q and dO transposed, lse, delta),
 * the probability and score-gradient tiles, and the larger of a dK/dV item's accumulators and a
 * dQ item's, each region rounded up to 64 bytes (see backward.c). The README's memory formula is
 * this function. */
size_t fa_backward_scratch_bytes(int64_t block_q, int64_t block_k, int64_t dim, int64_t dim_v, size_t elem);

/* Runs a validated backward problem on ctx (which the caller holds). */
fa_status fa_backward_run(fa_context *ctx, const fa_problem *p);

#endif
