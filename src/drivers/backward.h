/* SPDX-License-Identifier: BSD-3-Clause */
/* Backward tile drivers: a delta pre-pass, then the items of one of three plans (below). */
#ifndef FA_BACKWARD_H
#define FA_BACKWARD_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/context.h"
#include "plan/problem.h"

/* Arena bytes one backward item needs: the query block's packs (Q and dO transposed, lse, delta),
 * the probability and score-gradient tiles (and with a softcap its derivative's tile), and the
 * larger of a dK/dV item's accumulators and a dQ item's, each region rounded up to 64 bytes (see
 * backward.c). The README's memory formula is this function. */
size_t fa_backward_scratch_bytes(int64_t block_q, int64_t block_k, int64_t dim, int64_t dim_v, size_t elem,
                                 int softcap);

/* What an item widens into its arena on top of that, in float: the query block's Q and dO rows
 * when they are half precision (q_rows: bq·D + bq·Dv), the key block's K and V rows when they are
 * (kv_tiles: bk·D + bk·Dv). */
size_t fa_backward_tile_bytes(int64_t block_q, int64_t block_k, int64_t dim, int64_t dim_v, int q_rows,
                              int kv_tiles);

/* The regions of an item of the bf16 dot-product path (backward_pairs.h), in bytes, each rounded up
 * to 64, for a set padding its operands to pad_k along k (ld = block_q up to 16 rows, u(x) = x up to
 * 16): Q and dO in pairs (up(D, pad_k)·ld, up(Dv, pad_k)·ld bf16), in pairs of rows (ld·u(D),
 * ld·u(Dv) bf16), lse and delta (ld floats each), the P and dS tiles (bk·ld floats; with a softcap
 * its derivative's too), one bf16 tile for P or dS as rows or pairs (up(bk, pad_k)·ld), Kᵀ
 * (D·up(bk, pad_k) bf16), and the larger of the dK/dV accumulators (bk·u(D) + bk·u(Dv) floats) and
 * the transposed dQ (D·ld floats). */
typedef struct {
    size_t qp, dop, q_rp, do_rp, row, tile, dcap, ab, kt, acc;
} fa_backward_pairs_tiles;

fa_backward_pairs_tiles fa_backward_pairs_tiles_of(int64_t pad_k, int64_t block_q, int64_t block_k, int64_t dim,
                                                   int64_t dim_v, int softcap);
/* Their sum: what every item of the path reaches. */
size_t fa_backward_pairs_scratch_bytes(int64_t pad_k, int64_t block_q, int64_t block_k, int64_t dim,
                                       int64_t dim_v, int softcap);

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
