/* SPDX-License-Identifier: BSD-3-Clause */
/* Decode with grouped-query attention: the query heads that share a key/value head run as the rows
 * of one item (FlashAttention's "seqlen_q x ngroups" swap), so each key and value row is read once
 * per group instead of once per query head, and a group of many heads (DeepSeek's MLA: 128 over one
 * latent cache) runs on the kernels' full tiles, not as many few-row items. With several query rows
 * a head (speculative decoding) the rows go position by position: the group's heads at position 0,
 * then at position 1, so that the masks, which depend on the position alone, stay monotone in the
 * row. */
#include "plan/problem.h"

int fa_problem_group_rows(const fa_problem *p, fa_problem *grouped)
{
    /* A decode step (few query rows a head) and nothing that differs between the heads of a group
     * (ALiBi slopes, a bias, sinks, dropout's mask): then every score of a grouped row is what the
     * problem of its head alone computes for that row, with the same tiles. */
    if (p->group < 2 || p->q_len < 1 || p->q_len > FA_GROUPED_ROWS_MAX_LEN || p->alibi_slopes ||
        p->bias.data || p->sinks || p->dropout_p != 0.0)
        return 0;
    *grouped = *p;
    grouped->q_heads = p->kv_heads;
    grouped->group = 1;
    grouped->q_len = p->q_len * p->group;
    grouped->row_group = p->group;
    /* row r of kv head g: position r / group of query head g·group + r % group */
    grouped->q_sub_stride = p->q.stride_head;
    grouped->q.stride_head = p->q.stride_head * p->group;
    grouped->out_sub_stride = p->out.stride_head;
    grouped->out.stride_head = p->out.stride_head * p->group;
    grouped->lse_sub_stride = p->lse_head_stride;
    grouped->lse_head_stride = p->lse_head_stride * p->group;
    return 1;
}
