/* SPDX-License-Identifier: BSD-3-Clause */
/* Forward tile driver: online softmax over key tiles for one (batch, head, query block). */
#ifndef FA_FORWARD_H
#define FA_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/context.h"
#include "plan/problem.h"

/* The most query rows the float kernels take at once: an item of more rows runs as query blocks
 * of this many, all of them over one key tile before the next (forward_item.h), so the tile is
 * read from memory once for the item while each block's score tile stays in L1. A multiple of
 * every padding unit. */
#define FA_FORWARD_SUB_ROWS 64

/* The same for the bf16 dot-product path (forward_pairs.h): the rows of one query block on the
 * units, whose packed Vᵀ tile then serves every block of an item. A multiple of 16. */
#define FA_PAIRS_SUB_ROWS 128

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

/* Arena bytes one forward item needs: the transposed query block, the transposed score tile, the
 * output accumulator, row max and row sum, each rounded up to 64 bytes (see forward.c). The
 * README's memory formula is this function. */
size_t fa_forward_scratch_bytes(int64_t block_q, int64_t block_k, int64_t dim, int64_t dim_v, size_t elem);

/* What an item stages in its arena on top of that, in the accumulation type (elem bytes): the
 * query block's rows widened from half precision (q_rows: bq·D), and the key and value tiles
 * (kv_tiles: bk·D + bk·Dv) that paged or half-precision keys are copied or widened into. */
size_t fa_forward_tile_bytes(int64_t block_q, int64_t block_k, int64_t dim, int64_t dim_v, size_t elem,
                             int q_rows, int kv_tiles);

/* The tiles of the bf16 dot-product path (forward_pairs.h), in bytes, for a set padding its
 * operands to pad_k along k (ld = block_q rounded up to 16 rows, sld = min(ld, FA_PAIRS_SUB_ROWS)):
 * the query block in pairs (D up to pad_k × ld bf16), P in pairs (bk up to pad_k × sld bf16), Vᵀ
 * (Dv × (bk up to pad_k, plus pad_k) bf16), the transposed accumulator (Dv × ld floats). */
typedef struct {
    size_t queries, probabilities, values_t, accumulator_t;
} fa_pairs_tiles;

fa_pairs_tiles fa_pairs_tiles_of(int64_t pad_k, int64_t block_q, int64_t block_k, int64_t dim, int64_t dim_v);

/* Arena bytes one item of the bf16 dot-product path needs: the tiles above, each rounded up to 64
 * bytes, the float score tile of one query block (bk × sld), and the output rows, row max and row
 * sum of fa_forward_scratch_bytes (with no transposed float queries); paged keys add their bf16 K
 * and V tiles (bk·D and bk·Dv). */
size_t fa_forward_pairs_scratch_bytes(int64_t pad_k, int64_t block_q, int64_t block_k, int64_t dim, int64_t dim_v,
                                      int paged);

/* Runs a validated problem on ctx (which the caller holds). */
fa_status fa_forward_run(fa_context *ctx, const fa_problem *p);

#endif
