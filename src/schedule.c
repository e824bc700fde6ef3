/* Work decomposition for the forward pass: one item per (batch, head, query block). */
#include "schedule.h"

fa_q_schedule fa_q_schedule_make(const fa_problem *p, int64_t block_q)
{
    fa_q_schedule s;
    s.block_q = block_q;
    s.q_blocks = (p->q_len + block_q - 1) / block_q;
    s.count = p->batch * p->q_heads * s.q_blocks;
    return s;
}

fa_q_item fa_q_schedule_item(const fa_q_schedule *s, const fa_problem *p, int64_t index)
{
    fa_q_item it;
    /* Under a causal mask later query blocks see more keys; handing them out first lets the
     * dynamic loop finish with the cheap ones, so threads end together. Order only: every item is
     * still computed the same way by whichever thread takes it. */
    int64_t block = index % s->q_blocks;
    if (p->causal != FA_CAUSAL_NONE) block = s->q_blocks - 1 - block;
    int64_t bh = index / s->q_blocks;
    it.q_head = bh % p->q_heads;
    it.batch = bh / p->q_heads;
    it.row0 = block * s->block_q;
    it.rows = p->q_len - it.row0 < s->block_q ? p->q_len - it.row0 : s->block_q;
    return it;
}
