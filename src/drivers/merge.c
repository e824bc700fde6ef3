/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_merge: partial attention results over disjoint key sets, combined exactly, row by row. */
#include "drivers/merge.h"

#include <math.h>

#include "drivers/half_rows.h"
#include "plan/scratch.h"
#include "runtime/arena.h"
#include "runtime/team.h"

/* Rows per work item: enough to amortize an item, few enough to feed every thread. */
#define MERGE_ROWS 64

typedef struct {
    const fa_merge_problem *problem;
    int64_t row_blocks; /* items per (batch, head) */
} fa_merge_job;

#define FA_T   float
#define FA_SFX f32
#define FA_EXP expf
#define FA_LOG logf
#include "drivers/merge_item.h"
#undef FA_T
#undef FA_SFX
#undef FA_EXP
#undef FA_LOG

#define FA_T   double
#define FA_SFX f64
#define FA_EXP exp
#define FA_LOG log
#include "drivers/merge_item.h"
#undef FA_T
#undef FA_SFX
#undef FA_EXP
#undef FA_LOG

static void merge_item_f32(const void *job, fa_arena *arena, int64_t index)
{
    merge_rows_f32(job, arena, index);
}

static void merge_item_f64(const void *job, fa_arena *arena, int64_t index)
{
    merge_rows_f64(job, arena, index);
}

fa_status fa_merge_run(fa_context *ctx, const fa_merge_problem *mp)
{
    const fa_tensor *out = mp->out;
    int f64 = out->dtype == FA_F64;
    fa_merge_job job = {mp, (out->seq + MERGE_ROWS - 1) / MERGE_ROWS};
    int64_t items = out->batch * out->heads * job.row_blocks; /* dim >= 1: validated */
    fa_team_work work = {
        .scratch_bytes = f64 ? merge_plan_f64(mp) : merge_plan_f32(mp),
        .job = &job,
        .phases = 1,
        .phase = {{items, f64 ? merge_item_f64 : merge_item_f32}},
    };
    return fa_team_run(ctx, &work);
}
