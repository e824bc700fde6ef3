/* Forward pass: cut the problem into query-block items and run them on the team. */
#include "forward.h"

#include <math.h>

#include "arena.h"
#include "epilogue.h"
#include "schedule.h"
#include "team.h"
#include "visible_products.h"

typedef struct {
    const fa_problem *problem;
    const fa_kernels *kernels;
    fa_q_schedule schedule;
    int64_t block_k;
} fa_forward_job;

#define FA_T float
#define FA_SFX f32
#define FA_LOG logf
#include "forward_item.h"
#undef FA_T
#undef FA_SFX
#undef FA_LOG

#define FA_T double
#define FA_SFX f64
#define FA_LOG log
#include "forward_item.h"
#undef FA_T
#undef FA_SFX
#undef FA_LOG

size_t fa_forward_scratch_bytes(int64_t block_q, int64_t block_k, int64_t dim_v, size_t elem)
{
    size_t bq = (size_t)block_q, bk = (size_t)block_k, dv = (size_t)dim_v;
    return fa_arena_round(bq * bk * elem) + fa_arena_round(bq * dv * elem) + 2 * fa_arena_round(bq * elem);
}

fa_status fa_forward_run(fa_context *ctx, const fa_problem *p)
{
    size_t elem = p->dtype == FA_F64 ? sizeof(double) : sizeof(float);
    int64_t block_q, block_k;
    fa_context_blocks(ctx, p->dim, p->dim_v, elem, 512, &block_q, &block_k);
    ctx->last_block_q = (int)block_q;
    ctx->last_block_k = (int)block_k;

    fa_forward_job job = {p, ctx->kernels, fa_q_schedule_make(p, block_q), block_k};
    fa_team_work work = {
        .scratch_bytes = fa_forward_scratch_bytes(block_q, block_k, p->dim_v, elem),
        .job = &job,
        .phases = 1,
        .phase = {{job.schedule.count, p->dtype == FA_F64 ? forward_item_f64 : forward_item_f32}},
    };
    return fa_team_run(ctx, &work);
}
