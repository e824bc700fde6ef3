/* SPDX-License-Identifier: BSD-3-Clause */
/* The forward driver: online softmax over key tiles for one (batch, head, query block) item. */
#ifndef FA_FORWARD_H
#define FA_FORWARD_H

#include <stdint.h>

#include "plan/problem.h"
#include "plan/schedule.h" /* FA_FLOAT_BLOCK_ROWS, FA_DOT_BLOCK_ROWS */
#include "runtime/context.h"

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

/* One work item of a forward call, as fa_forward_run hands it to the team: what it computes, for a
 * model of its cost (the schedule simulator, bench/schedule/). */
typedef struct {
    int run;   /* the team run it belongs to: a batch of sequences runs its waves one after another */
    int phase; /* 0: attention items; 1: the merges of split-KV, after every phase-0 item of its run */
    int64_t batch, q_head, heads; /* its first query head and how many it runs (a decode step's group) */
    int64_t row0, rows;           /* query rows of the problem it runs (a GQA decode step's grouped one) */
    int64_t key_lo, key_hi;       /* its key chunk (all keys unsplit) */
    int64_t tiles, pairs;         /* phase 0: key tiles and (row, key) pairs computed, all heads together */
    int64_t splits;               /* phase 1: chunks merged */
    int64_t dim, dim_v;
} fa_forward_item_info;

/* Calls visit for every work item fa_forward_run would run for p on ctx, run by run and phase by
 * phase, each phase in the order the team hands its items out; computes nothing. FA_ERR_NOMEM if
 * the context's row buffer cannot hold a batch of sequences' plan. */
fa_status fa_forward_items(fa_context *ctx, const fa_problem *p,
                           void (*visit)(void *user, const fa_forward_item_info *item), void *user);

#endif
