/* SPDX-License-Identifier: BSD-3-Clause */
/* Scratch planned once (scratch.h). */
#include "plan/scratch.h"

#include <assert.h>

void *fa_scratch_take(fa_scratch *s, size_t rows, size_t cols, size_t elem)
{
    size_t bytes = fa_arena_tile(rows, cols, elem);
    s->bytes = fa_size_add(s->bytes, bytes);
    if (!s->arena) return NULL;
    void *region = fa_arena_alloc(s->arena, bytes);
    /* The call reserved its plan (the same carve, sized) in every arena before any item ran, so a
     * region past it is a carve that differs from its sizing: a bug, stopped here rather than
     * written past the plan. */
    assert(region != NULL && s->arena->used <= s->arena->plan);
    return region;
}
