/* SPDX-License-Identifier: BSD-3-Clause */
/* Runs lists of independent work items on the context's threads. */
#ifndef FA_TEAM_H
#define FA_TEAM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/arena.h"
#include "runtime/context.h"

#define FA_TEAM_MAX_PHASES 4

/* One list of items; every item of a phase completes before the next phase starts. */
typedef struct {
    int64_t items;
    /* Computes item `index` completely, using only `arena` for scratch. */
    void (*run)(const void *job, fa_arena *arena, int64_t index);
} fa_team_phase;

typedef struct {
    size_t scratch_bytes; /* arena bytes the largest item of any phase needs */
    const void *job;      /* passed to every run() */
    int phases;
    fa_team_phase phase[FA_TEAM_MAX_PHASES];
} fa_team_work;

/* Each thread is placed (per the context's policy), then reserves its arena; only if every
 * thread got its memory do the items run, so FA_ERR_NOMEM leaves every output untouched.
 * Items are handed out dynamically, in increasing index order (an OpenMP dynamic schedule takes
 * them from one shared counter; the serial fallback runs them in order): which thread runs an item
 * never changes what it computes, and an item may wait for an item of lower index of its phase,
 * which has always been handed out already. Every thread's affinity is restored before the call
 * returns. */
fa_status fa_team_run(fa_context *ctx, const fa_team_work *work);

/* Places every thread of the context and reserves its arena for `scratch_bytes`, running no item:
 * a driver that makes several fa_team_run calls for one user call (waves) makes this one first, so
 * that a later run, which may use more threads than the first, cannot fail with FA_ERR_NOMEM after
 * an earlier one wrote outputs. */
fa_status fa_team_reserve(fa_context *ctx, size_t scratch_bytes);

/* Waits until *counter == value (acquire), spinning briefly and then yielding the core, so that a
 * team on fewer cores than threads still moves. */
void fa_team_wait_until(atomic_int *counter, int value);

#endif
