/* SPDX-License-Identifier: BSD-3-Clause */
/* Backward tile drivers: a delta pre-pass, then the items of one of three plans (below). */
#ifndef FA_BACKWARD_H
#define FA_BACKWARD_H

#include <stdint.h>

#include "plan/problem.h"
#include "runtime/context.h"

/* The three ways to cut a backward into items. They make the same kernel calls on the same tiles
 * in the same order for every output element, so their results are bitwise identical; only the
 * cost differs, which is why the choice may follow the thread count (fa_backward_plan_for).
 *   FUSED:     one item per (batch, kv head): its key blocks in order, adding each tile's dS·K to
 *              dQ on the way. 10 tile FLOPs for 10; B·Hkv items.
 *   WAVEFRONT: one item per (batch, kv head, key block), adding its dS·K to dQ too: the tiles of
 *              a query block must add in key-block order, so a tile waits (an integer counter per
 *              query block, acquire/release; never on floating-point data) until the previous key
 *              block's item has added. Items are handed out in index order (team.h), so the oldest
 *              running item never waits and the pipeline always moves. 10 FLOPs for 10, fine
 *              items, but a waiting thread spins: only for teams with a core per thread.
 *   SPLIT:     dK/dV items per key block, and dQ items per query block that recompute P and dS:
 *              14 FLOPs for 10, fine items, no waiting. */
typedef enum {
    FA_BACKWARD_PLAN_AUTO = 0,
    FA_BACKWARD_PLAN_FUSED,
    FA_BACKWARD_PLAN_SPLIT,
    FA_BACKWARD_PLAN_WAVEFRONT,
} fa_backward_plan;

/* The plan AUTO resolves to for `head_items` = batch·kv_heads on `threads` threads, with `cores`
 * cores allowed to the process: fused when its rounds of whole heads leave at most a tenth of the
 * team idle, else wavefront when every thread has a core, else the cheaper of fused and split. */
fa_backward_plan fa_backward_plan_for(int64_t head_items, int threads, int cores);

/* "fused", "wavefront", "split" (fa_stats.backward_plan); "auto" for AUTO. */
const char *fa_backward_plan_name(fa_backward_plan plan);

/* The tests' seam (tests/test_backward_plans.c runs every plan on the same problem): every later
 * backward on ctx takes `plan`, or the automatic choice again for AUTO. Nothing in the library
 * calls it, and like every internal name it is hidden, so no shipped library exports it; a test
 * build links the library's internal objects and reaches it without a test-only global or a
 * separately compiled object. */
void fa_backward_force_plan(fa_context *ctx, fa_backward_plan plan);

/* Runs a validated backward problem on ctx (which the caller holds). */
fa_status fa_backward_run(fa_context *ctx, const fa_problem *p);

#endif
