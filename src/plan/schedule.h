/* SPDX-License-Identifier: BSD-3-Clause */
/* Work decomposition. The list of work items and each item's internal order are functions of
 * the problem (and the block sizes chosen for it) only, never of the thread count: that is what
 * makes every output bitwise identical on 1 thread and on 64. */
#ifndef FA_SCHEDULE_H
#define FA_SCHEDULE_H

#include <stdint.h>

#include "plan/problem.h"

/* One forward work item: query rows [row0, row0 + rows) of (batch, q_head). */
typedef struct {
    int64_t batch, q_head, row0, rows;
} fa_q_item;

typedef struct {
    int64_t q_blocks; /* query blocks per (batch, head) */
    int64_t block_q;
    int64_t count; /* batch · q_heads · q_blocks */
} fa_q_schedule;

fa_q_schedule fa_q_schedule_make(const fa_problem *p, int64_t block_q);

/* Split-KV for problems with few query items (decode, few heads): the keys are cut into `splits`
 * chunks of `chunk` keys (a multiple of block_k), each (query item, chunk) is its own work item,
 * and the partial results are merged in chunk order. Chosen from the shape alone, so the output
 * stays bitwise independent of the thread count. splits == 1 means no split. */
typedef struct {
    int64_t splits, chunk;
} fa_kv_split;

/* The most query rows the table's float kernels take at once: an item of more rows runs as query
 * blocks of this many, all of them over one key tile before the next (drivers/forward_attend.h), so
 * the tile is read from memory once for the item while each block's score tile stays in L1, and
 * each block gives the bytes an item of its rows would: an item's width changes no result. A
 * multiple of every padding unit. */
#define FA_FLOAT_BLOCK_ROWS 64

/* The same on bf16 dot-product units (drivers/forward_dot.h): the rows of one query block there,
 * whose packed Vᵀ tile then serves every block of an item. A multiple of 16. */
#define FA_DOT_BLOCK_ROWS 128

/* Wide items leave at least this many items per thread of the team, so that the dynamic schedule
 * has the costliest-first order to even out (fa-schedule's predictions, bench/README.md). */
#define FA_ITEMS_PER_THREAD 4

/* A split aims for this many items, enough to feed the cores of a large node with dynamic
 * scheduling; so no split has more chunks. */
#define FA_SPLIT_TARGET_ITEMS 128

/* Query rows at or below which a problem is a decode step here (a GQA step's grouped rows count). */
#define FA_DECODE_ROWS 16

/* A decode step aims for this many items: its chunks are all the work there is, and a batch of
 * sequences splits each sequence as a dense call of it alone would, so one long sequence feeds 256
 * threads and a batch many more, with enough items a thread that they end together. */
#define FA_SPLIT_DECODE_ITEMS 256

/* Partial results of one split problem together stay within this many bytes. */
#define FA_SPLIT_MAX_PARTIAL_BYTES ((size_t)16 << 20)

/* units: the items the split cuts into chunks (the query items, or the groups of heads a decode
 * step runs together). partial_bytes_per_row: bytes one query row's partial result takes in one
 * chunk, rounded up, so that every item's partials together stay within FA_SPLIT_MAX_PARTIAL_BYTES. */
fa_kv_split fa_kv_split_make(const fa_problem *p, const fa_q_schedule *s, int64_t units, int64_t block_k,
                             size_t partial_bytes_per_row);

/* Item `index` (0 <= index < count). Without a causal mask, items are numbered batch-major, then
 * head, then block. Under one, block-major, the costliest block index first, then batch and head:
 * every head's costliest items are handed out before any head's cheaper ones, so that on many
 * threads the cheap items fill in behind the costly ones (longest first). */
fa_q_item fa_q_schedule_item(const fa_q_schedule *s, const fa_problem *p, int64_t index);

#endif
