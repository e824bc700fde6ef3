/* SPDX-License-Identifier: BSD-3-Clause */
/* The forward driver: online softmax over key tiles for one (batch, head, query block) item. */
#ifndef FA_FORWARD_H
#define FA_FORWARD_H

#include <stdint.h>

#include "plan/problem.h"
#include "runtime/context.h"

/* The most query rows the table's float kernels take at once: an item of more rows runs as query
 * blocks of this many, all of them over one key tile before the next (forward_attend.h), so the
 * tile is read from memory once for the item while each block's score tile stays in L1. A
 * multiple of every padding unit. */
#define FA_FLOAT_BLOCK_ROWS 64

/* The same on bf16 dot-product units (forward_dot.h): the rows of one query block there, whose
 * packed Vᵀ tile then serves every block of an item. A multiple of 16. */
#define FA_DOT_BLOCK_ROWS 128

/* The most query items a group walks the key tiles together (forward_attend.h, attend_group_): a
 * decode step's heads of one batch entry, so that a cache stored token by token is read a whole
 * token row (of as many heads) at a time. The group's scratch grows with it (README, Memory). */
#define FA_GROUP_ITEMS 8

/* Query block g of an item of `rows` rows cut into blocks of `width` (one of the two above): its
 * rows, and the leading dimension of a tile of one block in an item whose tiles are ld wide. */
static inline int64_t fa_query_block_rows(int64_t rows, int64_t g, int64_t width)
{
    return rows - g * width < width ? rows - g * width : width;
}
static inline int64_t fa_query_block_ld(int64_t ld, int64_t width)
{
    return ld < width ? ld : width;
}

/* Runs a validated problem on ctx (which the caller holds). */
fa_status fa_forward_run(fa_context *ctx, const fa_problem *p);

#endif
