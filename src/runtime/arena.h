/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-thread scratch arena: one 64-byte-aligned block, bump allocation, high-water mark. */
#ifndef FA_ARENA_H
#define FA_ARENA_H

#include <stddef.h>

#define FA_ARENA_ALIGN ((size_t)64)

typedef struct {
    unsigned char *base;
    size_t capacity; /* bytes in base */
    size_t used;     /* bytes handed out since the last fa_arena_reset */
    size_t peak;     /* largest `used` since creation or fa_arena_clear_peak */
    size_t plan;     /* bytes the running call planned for one item (plan/scratch.h): no item takes more */
} fa_arena;

/* Bytes that fa_arena_alloc(bytes) consumes: rounded up to the alignment. SIZE_MAX stays SIZE_MAX. */
size_t fa_arena_round(size_t bytes);

/* a·b·c, or SIZE_MAX when that overflows: scratch sizes from huge block sizes then fail to
 * allocate (FA_ERR_NOMEM) instead of wrapping around to a small, wrong size. */
size_t fa_size_mul3(size_t a, size_t b, size_t c);

/* a + b, saturating at SIZE_MAX. */
size_t fa_size_add(size_t a, size_t b);

/* Arena bytes of a rows × cols tile of elem-byte elements (rounded; saturating). */
size_t fa_arena_tile(size_t rows, size_t cols, size_t elem);

/* Makes sure the arena holds at least `bytes`, the plan of the call about to run its items; grows
 * (and first-touches) only when it must. Must be called by the thread that owns the arena. Returns
 * 0 on success, -1 on allocation failure (the arena is then unchanged and still usable). */
int fa_arena_reserve(fa_arena *a, size_t bytes);

/* Starts a new item: everything handed out so far is free again. */
void fa_arena_reset(fa_arena *a);

/* Hands out `bytes` (64-byte aligned). The caller reserved enough beforehand; NULL otherwise. */
void *fa_arena_alloc(fa_arena *a, size_t bytes);

void fa_arena_clear_peak(fa_arena *a);
void fa_arena_free(fa_arena *a);

#endif
