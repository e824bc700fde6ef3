/* SPDX-License-Identifier: BSD-3-Clause */
/* The automatic key-tile length (block_k = 0): a small table of what was measured on each
 * microarchitecture, and the cache-size rule for the rest (block_sizes.c). */
#ifndef FA_BLOCK_SIZES_H
#define FA_BLOCK_SIZES_H

#include <stddef.h>
#include <stdint.h>

#include "plan/problem.h"
#include "runtime/context.h"
#include "runtime/cpu_features.h"

typedef enum { FA_PASS_FORWARD, FA_PASS_BACKWARD } fa_pass;

/* What the choice depends on: the CPU, the kernel table in use, the L2 size (0: unknown), the
 * context's thread count, and the problem's head dims, query block, query rows, key rows, heads (batch ·
 * query heads: the items one query block index makes; 0 for a batch of sequences, whose shorter
 * sequences make fewer) and element size (of the accumulation type). */
typedef struct {
    fa_cpu_model cpu;
    const char *table; /* fa_kernels.name */
    size_t l2;
    int64_t dim, dim_v, block_q, q_len, kv_len, heads;
    size_t elem;
    int pairs;    /* an all-bf16 forward on the table's bf16 dot-product units (forward_dot.h) */
    int row_bias; /* a bias with a row of its own per query row, which an item streams from memory */
    int threads;  /* the team: wide items leave FA_ITEMS_PER_THREAD items per thread */
} fa_block_inputs;

/* The largest automatic key tile of each pass. The backward's is smaller: a dK/dV item holds
 * block_k·(dim + dim_v) accumulators besides its three tiles, and more key blocks keep every thread
 * busy on a single long sequence. Over long rows on AMD it takes up to the forward's
 * (FA_BACKWARD_LONG_ROWS_KEY_BLOCKS, block_sizes.c). */
#define FA_FORWARD_MAX_BLOCK_K  512
#define FA_BACKWARD_MAX_BLOCK_K 128

/* Key blocks a row of keys keeps at least when the backward widens its tiles past
 * FA_BACKWARD_MAX_BLOCK_K (AMD): items enough for the wavefront plan's pipeline on one sequence. */
#define FA_BACKWARD_LONG_ROWS_KEY_BLOCKS 64

/* A decode step's forward key tile (at most FA_DECODE_ROWS query rows, every CPU). Its tiles are a
 * few rows wide, so nothing is reused from L2 and a short tile costs little more per key; it is what
 * lets the split cut a cache into chunks of two tiles, 128 keys, many enough to feed 256 threads
 * from one long sequence (schedule.h). */
#define FA_DECODE_BLOCK_K 64

/* How a decode step reads key rows of row_bytes (D elements of the cache's type): whether a group of
 * items reads its tiles in token order (drivers/forward_attend.h, attend_tokens_), and how the
 * kernels prefetch the rows of their lists (kernels.h, fa_rows_prefetch) in tiles read head by head
 * (`rows`) and in token order (`tokens`). Where `rows` is FAR a contiguous f32 cache is also read
 * through lists, instead of by the plain kernels, whose prefetches are near ones into L1 within a
 * tile. The bits are the same whatever they are; the choice is measured per CPU (block_sizes.c). */
typedef struct {
    int token_order;
    fa_rows_prefetch rows, tokens;
} fa_decode_reads;
fa_decode_reads fa_decode_reads_for(const fa_cpu_model *cpu, int64_t row_bytes);

/* block_q for `pass` of a problem no narrow window governs (context.c takes 32 under one): 64, or
 * the table's row for it, which takes items of more rows (blocks of FA_FLOAT_BLOCK_ROWS or
 * FA_DOT_BLOCK_ROWS) only while they leave at least FA_SPLIT_TARGET_ITEMS items (fewer would split
 * the keys: schedule.h; half as many on AMX tiles) and FA_ITEMS_PER_THREAD per thread: the width
 * follows the thread count, which changes no byte. block_k for `pass`: a multiple of 16 in [16, the
 * pass's maximum], from the block of one step (in->block_q, at most the set's block rows in the
 * forward), never from the item's width, so that it stays the same at every thread count.
 * Functions of their inputs only. */
int64_t fa_block_q_automatic(fa_pass pass, const fa_block_inputs *in);
int64_t fa_block_k_automatic(fa_pass pass, const fa_block_inputs *in);

/* Block sizes of `pass` for a problem (`pairs`: a forward on the table's bf16 dot-product units):
 * the configured ones, or the automatic ones of block_sizes.c's table (the CPU, the kernel table,
 * the caches, the head dims and the path), block_q 32 under a narrow window; either way no larger
 * than the problem (q_len rows, kv_len keys), which changes no result (one block covers the same
 * rows or keys either way) but bounds the scratch by the problem. Depends on the machine and the
 * problem, never on the thread count. */
void fa_blocks_for(const fa_context *ctx, const fa_problem *p, size_t elem, fa_pass pass, int pairs,
                   int64_t *block_q, int64_t *block_k);

#endif
