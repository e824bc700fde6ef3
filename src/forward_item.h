/* One forward work item, written once for both element types: included by forward.c with FA_T,
 * FA_SFX (f32/f64: also the kernel-table member), FA_LOG, FA_VEC defined. */

#define FA_CAT2(a, b) a##b
#define FA_CAT(a, b) FA_CAT2(a, b)
#define FA_NAME(n) FA_CAT(n, FA_SFX)

static void FA_NAME(forward_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_forward_job *job = job_ptr;
    const fa_problem *p = job->problem;
    const FA_CAT(fa_kernels_, FA_SFX) *kern = job->kernels->FA_SFX;
    fa_q_item it = fa_q_schedule_item(&job->schedule, p, index);
    int64_t bk = job->block_k, ld = job->ld, dv = p->dim_v, dv_pad = fa_round_up(dv, FA_VEC);
    int64_t kv_head = it.q_head / p->group;

    FA_T *qt = fa_arena_alloc(arena, (size_t)(p->dim * ld) * sizeof(FA_T));
    FA_T *s = fa_arena_alloc(arena, (size_t)(bk * ld) * sizeof(FA_T));
    FA_T *acc = fa_arena_alloc(arena, (size_t)(job->schedule.block_q * dv_pad) * sizeof(FA_T));
    FA_T *row_max = fa_arena_alloc(arena, (size_t)ld * sizeof(FA_T));
    FA_T *row_sum = fa_arena_alloc(arena, (size_t)ld * sizeof(FA_T));

    const FA_T *q = (const FA_T *)p->q.data + it.batch * p->q.stride_batch + it.q_head * p->q.stride_head +
                    it.row0 * p->q.stride_seq;
    const FA_T *k = (const FA_T *)p->k.data + it.batch * p->k.stride_batch + kv_head * p->k.stride_head;
    const FA_T *v = (const FA_T *)p->v.data + it.batch * p->v.stride_batch + kv_head * p->v.stride_head;

    /* the scale folded into the queries: score tiles come out scaled */
    FA_CAT(fa_pack_transposed_, FA_SFX)(it.rows, p->dim, q, p->q.stride_seq, (FA_T)p->scale, qt, ld);
    for (int64_t r = 0; r < ld; r++) {
        row_max[r] = -(FA_T)INFINITY;
        row_sum[r] = 0;
    }
    for (int64_t x = 0; x < it.rows * dv_pad; x++) acc[x] = 0;

    /* Visible ranges are monotone in the row, so the block's first and last rows bound the keys it
     * needs; tiles outside that union are masked for every row and never computed. */
    int64_t key_begin = fa_visible_keys(p, it.row0).begin;
    int64_t key_end = fa_visible_keys(p, it.row0 + it.rows - 1).end;
    for (int64_t col0 = key_begin / bk * bk; col0 < key_end; col0 += bk) {
        int64_t cols = p->kv_len - col0 < bk ? p->kv_len - col0 : bk;
        kern->scores(ld, cols, p->dim, qt, k + col0 * p->k.stride_seq, p->k.stride_seq, s);
        if (!fa_tile_fully_visible(p, it.row0, it.rows, col0, cols))
            FA_CAT(fa_epilogue_, FA_SFX)(p, it.row0, it.rows, col0, cols, s, ld);
        kern->online_softmax(it.rows, ld, cols, s, row_max, row_sum, acc, dv_pad, dv_pad);
        FA_CAT(fa_accumulate_visible_, FA_SFX)(kern, p, it.row0, it.rows, col0, cols, dv, s, ld,
                                              v + col0 * p->v.stride_seq, p->v.stride_seq, acc, dv_pad);
    }

    FA_T *out = (FA_T *)p->out.data + it.batch * p->out.stride_batch + it.q_head * p->out.stride_head +
                it.row0 * p->out.stride_seq;
    FA_T *lse = p->lse ? (FA_T *)p->lse + (it.batch * p->q_heads + it.q_head) * p->q_len + it.row0 : NULL;
    for (int64_t r = 0; r < it.rows; r++) {
        FA_T *o = out + r * p->out.stride_seq;
        const FA_T *a = acc + r * dv_pad;
        FA_T l = row_sum[r];
        /* l == 0 exactly when the row saw no key: exact zeros and -inf, never 0/0. A NaN l is not
         * 0, so a row that saw a NaN stays NaN. */
        if (l == 0) {
            for (int64_t y = 0; y < dv; y++) o[y] = 0;
            if (lse) lse[r] = -(FA_T)INFINITY;
        } else {
            for (int64_t y = 0; y < dv; y++) o[y] = a[y] / l;
            if (lse) lse[r] = row_max[r] + FA_LOG(l);
        }
    }
}

#undef FA_NAME
#undef FA_CAT
#undef FA_CAT2
