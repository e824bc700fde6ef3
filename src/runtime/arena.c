/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-thread scratch arena.
 *
 * Layout: one block of `capacity` bytes, 64-byte aligned, owned by one thread of a context.
 * A work item calls fa_arena_reset() and then carves its tiles with fa_arena_alloc(), each
 * region starting on a 64-byte boundary (a cache line, and a full AVX-512 vector) so that
 * no two regions share a line. Nothing is ever freed individually: the next item resets.
 *
 * The block is allocated by its owning thread after that thread has been placed, and is
 * written once right away, so that its pages are first touched (and so placed) on the NUMA
 * node of the core that will use them. It only grows when a call needs more than it holds;
 * a call that fits allocates nothing.
 */
#include "runtime/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t fa_arena_round(size_t bytes)
{
    if (bytes > SIZE_MAX - FA_ARENA_ALIGN) return SIZE_MAX;
    return (bytes + FA_ARENA_ALIGN - 1) & ~(FA_ARENA_ALIGN - 1);
}

size_t fa_size_mul3(size_t a, size_t b, size_t c)
{
    size_t ab, abc;
    if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc)) return SIZE_MAX;
    return abc;
}

size_t fa_size_add(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

size_t fa_arena_tile(size_t rows, size_t cols, size_t elem)
{
    return fa_arena_round(fa_size_mul3(rows, cols, elem));
}

int fa_arena_reserve(fa_arena *a, size_t bytes)
{
    if (bytes <= a->capacity) {
        a->plan = bytes;
        return 0;
    }
    if (bytes == SIZE_MAX) return -1; /* a saturated size: no allocation could hold it */
    size_t capacity = fa_arena_round(bytes);
    unsigned char *block = aligned_alloc(FA_ARENA_ALIGN, capacity);
    if (!block) return -1;
    memset(block, 0, capacity); /* first touch, from the owning (placed) thread */
    free(a->base);
    a->base = block;
    a->capacity = capacity;
    a->used = 0;
    a->plan = bytes;
    return 0;
}

void fa_arena_reset(fa_arena *a)
{
    a->used = 0;
}

void *fa_arena_alloc(fa_arena *a, size_t bytes)
{
    size_t size = fa_arena_round(bytes);
    if (size > a->capacity - a->used) return NULL;
    void *p = a->base + a->used;
    a->used += size;
    if (a->used > a->peak) a->peak = a->used;
    return p;
}

void fa_arena_clear_peak(fa_arena *a)
{
    a->peak = 0;
}

void fa_arena_free(fa_arena *a)
{
    free(a->base);
    a->base = NULL;
    a->capacity = a->used = a->peak = a->plan = 0;
}
