/* Backward tile drivers: a delta pre-pass, then either dK/dV items and dQ items (split plan) or
 * one item per (batch, kv head) that computes all three (fused plan). */
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

/* The two ways to cut a backward into items. They make the same kernel calls on the same tiles in
 * the same order for every output element, so their results are bitwise identical; only the cost
 * differs, which is why the choice may follow the thread count (fa_backward_plan_for). */
typedef enum {
    FA_BACKWARD_PLAN_AUTO = 0,
    FA_BACKWARD_PLAN_FUSED, /* B·Hkv items; dQ summed on the way: 10 FLOPs for 10 */
    FA_BACKWARD_PLAN_SPLIT, /* dK/dV items per key block + dQ items per query block: 14 FLOPs for 10 */
} fa_backward_plan;

/* The plan AUTO resolves to for `head_items` = batch·kv_heads on `threads` threads: fused when its
 * rounds of whole heads cost less than the split plan's extra work spread evenly. */
fa_backward_plan fa_backward_plan_for(int64_t head_items, int threads);

/* Runs a validated backward problem on ctx (which the caller holds). */
fa_status fa_backward_run(fa_context *ctx, const fa_problem *p);

#endif
