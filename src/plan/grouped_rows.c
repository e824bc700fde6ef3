/* SPDX-License-Identifier: BSD-3-Clause */
/* Decode with grouped-query attention: the query heads that share a key/value head, one query row
 * each, run as the rows of one item (FlashAttention's "seqlen_q x ngroups" swap), so each key and
 * value row is read once per group instead of once per query head. */
#include "plan/mask.h"
#include "plan/problem.h"

int fa_problem_group_rows(const fa_problem *p, fa_problem *grouped)
{
    /* One query row that sees every key, and nothing that differs between the heads of a group
     * (ALiBi slopes, a bias, sinks): then the group's rows are the rows of one problem without
     * masks, and every score is what the problem of each head alone computes. */
    if (p->group < 2 || p->q_len != 1 || p->alibi_slopes || p->bias.data || p->sinks) return 0;
    fa_key_range seen = fa_visible_keys(p, 0);
    if (seen.begin != 0 || seen.end != p->kv_len) return 0;
    *grouped = *p;
    grouped->q_heads = p->kv_heads;
    grouped->group = 1;
    grouped->q_len = p->group;
    grouped->causal = FA_CAUSAL_NONE;
    grouped->diag_offset = 0;
    grouped->window_left = grouped->window_right = -1;
    /* row r of kv head g is query head g·group + r: the seq axis steps over heads */
    grouped->q.stride_seq = p->q.stride_head;
    grouped->q.stride_head = p->q.stride_head * p->group;
    grouped->out.stride_seq = p->out.stride_head;
    grouped->out.stride_head = p->out.stride_head * p->group;
    grouped->lse_row_stride = p->lse_head_stride;
    grouped->lse_head_stride = p->lse_head_stride * p->group;
    return 1;
}
