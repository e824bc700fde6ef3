/* SPDX-License-Identifier: BSD-3-Clause */
/* Scratch planned once: the function that carves an item's regions out of its arena is the one
 * that sizes them. Called with a sizer (no arena) it only counts the bytes, which is what a call
 * reserves in every thread's arena (the plan); called with a carver in an item, it hands out the
 * same regions in the same order. So the size a call plans and the bytes its items take cannot
 * drift apart (zstd sizes and carves its workspace the same way), and a carve that ever took more
 * than its call planned stops at an assertion (fa_scratch_take) in every build that keeps them. */
#ifndef FA_SCRATCH_H
#define FA_SCRATCH_H

#include <stddef.h>

#include "runtime/arena.h"

typedef struct {
    fa_arena *arena; /* NULL: sizing only */
    size_t bytes;    /* taken so far, each region rounded up to the arena's 64 bytes */
} fa_scratch;

static inline fa_scratch fa_scratch_sizer(void)
{
    fa_scratch s = {NULL, 0};
    return s;
}

static inline fa_scratch fa_scratch_carver(fa_arena *arena)
{
    fa_scratch s = {arena, 0};
    return s;
}

/* A region of rows × cols elements of elem bytes, 64-byte aligned: counted, and carved from the
 * arena when there is one (NULL while sizing). Saturates at SIZE_MAX, which no arena reserves. */
void *fa_scratch_take(fa_scratch *s, size_t rows, size_t cols, size_t elem);

/* The larger of two plans: a call whose items are of several kinds reserves the largest. */
static inline size_t fa_scratch_max(size_t a, size_t b)
{
    return a > b ? a : b;
}

#endif
