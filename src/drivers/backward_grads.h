/* SPDX-License-Identifier: BSD-3-Clause */
/* The backward's two kinds of item, written once for every set of tile products: a key block's dK
 * and dV (which also adds to dQ under the fused and wavefront plans), and a query block's dQ.
 * Included by backward_items.h after a set (backward_float.h, backward_dot.h) with FA_T, FA_SFX,
 * FA_PAD_ELEMS of the accumulation type and FA_SET (f32, f64, dot) defined. The set gives its
 * scratch, its two score products (S and dP), its accumulations of dK, dV and dQ, and the layout of
 * its dQ sums; everything between the products (modifiers, masks, probabilities, score gradient,
 * the softcap's derivative), the tiles each block meets and their order, and the stores are here,
 * once. */

/* The block's lse and delta, padded to ld rows (lse = -inf there, so padding rows give p = 0). */
static void FA_SET_NAME(row_stats_fill_)(FA_SET_NAME(grads_scratch_) * s, const fa_backward_job *job,
                                         int64_t batch, int64_t q_head, int64_t row0, int64_t rows)
{
    const fa_problem *p = job->problem;
    const int64_t at = (batch * p->q_heads + q_head) * p->lse_head_stride + row0;
    const FA_T *lse = (const FA_T *)p->lse + at, *delta = (const FA_T *)job->delta + at;
    for (int64_t r = 0; r < job->ld; r++) {
        s->lse[r] = r < rows ? lse[r] : -(FA_T)INFINITY;
        s->delta[r] = r < rows ? delta[r] : 0;
    }
}

/* P (into s->p) and dS, the gradient of the scores before any modifier (into s->ds), for the tile
 * of query rows row0.. of (batch, q_head) and keys col0.. (`key` of the rows kv_fill_ staged). With
 * `dbias` (element (row0, col0) of it; NULL: none), the gradient of the modified scores, which is
 * the bias's, is written there (dbias_add 0) or added (1) on the way, before the softcap's
 * derivative. */
static void FA_SET_NAME(probs_and_grads_)(FA_SET_NAME(grads_scratch_) * s, const fa_backward_job *job,
                                          int64_t batch, int64_t q_head, int64_t row0, int64_t rows,
                                          int64_t col0, int64_t cols, int64_t key, int full, FA_T *dbias,
                                          int dbias_add)
{
    const fa_problem *p = job->problem;
    const FA_CAT(fa_kernels_, FA_SFX) *kern = job->kernels->FA_SFX;
    const int64_t ld = job->ld;
    FA_SET_NAME(scores_)(s, job, row0, rows, col0, cols, key);
    if (fa_problem_modifies_scores(p)) {
        fa_score_mods mods = fa_score_mods_of(p, sizeof(FA_T), batch, q_head, row0, rows, col0);
        kern->modify(&mods, ld, cols, s->p, s->dcap);
    }
    if (!full) FA_CAT(fa_epilogue_, FA_SFX)(p, row0, rows, col0, cols, s->p, ld);
    kern->probabilities(ld, cols, s->p, s->lse);
    FA_SET_NAME(value_grads_)(s, job, row0, rows, col0, cols, key);
    if (p->dropout_p != 0.0) /* dS from the dropped dP, and s->p dropped for dV = Pᵀ·dO */
        FA_CAT(fa_dropout_score_grad_, FA_SFX)
    (kern, p, batch, q_head, row0, rows, col0, cols, s->p, s->ds, s->delta, ld);
    else kern->score_grad(ld, cols, s->p, s->ds, s->delta);
    if (!full) FA_CAT(fa_zero_masked_, FA_SFX)(p, row0, rows, col0, cols, s->ds, ld);
    if (dbias) FA_NAME(dbias_store_)(s->ds, ld, rows, cols, dbias, p->dbias.stride_seq, dbias_add);
    /* through the softcap: ALiBi and bias are constants, their derivative 1 */
    if (s->dcap) kern->scale_grad(ld, cols, s->ds, s->dcap);
}

/* dq rows [row0, row0 + rows) of (batch, q_head) from a query block's dQ sums: scaled, and rounded
 * once where dq is half precision. */
static void FA_SET_NAME(dq_store_)(const fa_backward_job *job, const FA_T *sums, int64_t batch,
                                   int64_t q_head, int64_t row0, int64_t rows)
{
    const fa_problem *p = job->problem;
    const FA_T scale = (FA_T)p->scale;
    const size_t dq_elem = fa_elem_size(p->dq_type);
    char *dq = fa_view_at(&p->dq, dq_elem, batch, q_head, row0);
    for (int64_t r = 0; r < rows; r++) {
        char *row = dq + r * p->dq.stride_seq * (int64_t)dq_elem;
        if (fa_dq_rounds(p)) /* rounded once, from the float sums */
            for (int64_t x = 0; x < p->dim; x++)
                fa_half_store(p->dq_type, row, x, (float)(scale * FA_SET_NAME(dq_at_)(sums, job, r, x)));
        else
            for (int64_t x = 0; x < p->dim; x++)
                ((FA_T *)(void *)row)[x] = scale * FA_SET_NAME(dq_at_)(sums, job, r, x);
    }
}

/* Under the fused and wavefront plans: the tile's dS·K (keys [col0, col0 + cols), `key` among the rows
 * kv_fill_ staged) added to the dQ sums of query rows [row0, row0 + rows) of (batch, q_head). The sums
 * live in the block's tile of the call's sums buffer (job->dq_sums: half-precision dq, rounded once,
 * or the dot set's transposed sums) or else in the caller's float dq rows. The query block's first
 * key block zeroes them and its last one ends them as a dQ item ends its own (scaled, and rounded
 * where dq is half); under the wavefront plan a tile first waits until the previous key block has
 * added (block - met.first key blocks so far), then counts itself. */
static void FA_SET_NAME(add_to_dq_)(FA_SET_NAME(grads_scratch_) * s, const fa_backward_job *job,
                                    fa_backward_plan plan, int64_t batch, int64_t q_head, int64_t row0,
                                    int64_t rows, int64_t col0, int64_t cols, int full, int64_t key,
                                    int64_t block, fa_key_blocks met)
{
    atomic_int *added = NULL;
    if (plan == FA_BACKWARD_PLAN_WAVEFRONT) {
        added = fa_backward_dq_progress(job, batch, q_head, row0);
        fa_team_wait_until(added, (int)(block - met.first));
    }
    if (job->dq_sums) {
        FA_T *sums = (FA_T *)fa_backward_dq_sums(job, batch, q_head, row0);
        if (block == met.first) FA_SET_NAME(dq_zero_)(sums, job, rows);
        FA_SET_NAME(accumulate_queries_)
        (s, job, row0, rows, col0, cols, full, key, sums, FA_SET_NAME(dq_sums_stride_)(job));
        if (block == met.end - 1) FA_SET_NAME(dq_store_)(job, sums, batch, q_head, row0, rows);
    } else {
#if FA_SET_DQ_IN_ROWS
        const fa_problem *p = job->problem;
        const int64_t stride = p->dq.stride_seq;
        FA_T *dq = (FA_T *)fa_view_at(&p->dq, sizeof(FA_T), batch, q_head, 0);
        if (block == met.first) FA_NAME(dq_rows_zero_)(dq, stride, row0, rows, p->dim);
        FA_SET_NAME(accumulate_queries_)
        (s, job, row0, rows, col0, cols, full, key, dq + row0 * stride, stride);
        if (block == met.end - 1) FA_NAME(dq_rows_scale_)(dq, stride, row0, rows, p->dim, (FA_T)p->scale);
#endif
    }
    if (added) atomic_store_explicit(added, (int)(block - met.first + 1), memory_order_release);
}

/* dK and dV of key block `block` of (batch, kv_head): every query head of the group and every query
 * block that sees the keys, in that fixed order, then scaled (dK) and stored once. Under the fused
 * plan (whose item walks the key blocks in order itself) and the wavefront plan (where the key blocks
 * run on different threads) each tile's dS·K is also added to its query block's dQ sums
 * (add_to_dq_). Either way these are the same kernel calls on the same tiles as a dQ item's, in the
 * same key order, so the same bits. */
static void FA_SET_NAME(grads_key_block_)(const fa_backward_job *job, FA_SET_NAME(grads_scratch_) * s,
                                          int64_t batch, int64_t kv_head, int64_t block,
                                          fa_backward_plan plan)
{
    const fa_problem *p = job->problem;
    const int64_t bq = job->q_schedule.block_q, bk = job->block_k, d = p->dim, dv = p->dim_v;
    const int64_t d_pad = fa_round_up(d, FA_PAD_ELEMS), dv_pad = fa_round_up(dv, FA_PAD_ELEMS);
    const int64_t block0 = block * bk, block_cols = p->kv_len - block0 < bk ? p->kv_len - block0 : bk;
    FA_T *dk_acc = s->acc, *dv_acc = s->acc + bk * d_pad;
    for (int64_t x = 0; x < block_cols * d_pad; x++) dk_acc[x] = 0;
    for (int64_t x = 0; x < block_cols * dv_pad; x++) dv_acc[x] = 0;
    FA_SET_NAME(kv_fill_)(s, job, batch, kv_head, block0, block_cols); /* staged once per key block */
    for (int64_t g = 0; g < p->group; g++) {
        const int64_t q_head = kv_head * p->group + g;
        for (int64_t row0 = 0; row0 < p->q_len; row0 += bq) {
            const int64_t rows = p->q_len - row0 < bq ? p->q_len - row0 : bq;
            fa_key_blocks met = fa_key_blocks_seen(p, row0, rows, bk);
            /* a dbias that sums nothing takes each dS here, where every plan computes it once, and
             * zeros where the masks leave no score: this walk meets every (row, key) of the head once */
            FA_T *dbias = p->dbias.data && !fa_dbias_sums(p)
                              ? (FA_T *)fa_view_at(&p->dbias, sizeof(FA_T), batch, q_head, row0) + block0
                              : NULL;
            if (block < met.first || block >= met.end) {
                if (dbias) FA_NAME(dbias_zero_)(dbias, p->dbias.stride_seq, rows, block_cols);
                continue;
            }
            /* only the columns some row of the query block sees: [col0, col0 + cols) */
            fa_key_range seen = fa_tile_cols_seen(p, row0, rows, block0, block_cols);
            const int64_t col0 = block0 + seen.begin,
                          cols = seen.end - seen.begin; /* >= 1: the block is met */
            if (dbias) {
                FA_NAME(dbias_zero_)(dbias, p->dbias.stride_seq, rows, seen.begin);
                FA_NAME(dbias_zero_)(dbias + seen.end, p->dbias.stride_seq, rows, block_cols - seen.end);
                dbias += seen.begin;
            }
            FA_SET_NAME(query_fill_)(s, job, batch, q_head, row0, rows, 1);
            FA_SET_NAME(row_stats_fill_)(s, job, batch, q_head, row0, rows);
            const int full = fa_tile_fully_visible(p, row0, rows, col0, cols);
            FA_SET_NAME(probs_and_grads_)
            (s, job, batch, q_head, row0, rows, col0, cols, seen.begin, full, dbias, 0);
            FA_SET_NAME(accumulate_keys_)
            (s, job, row0, rows, col0, cols, full, dk_acc + seen.begin * d_pad, dv_acc + seen.begin * dv_pad);
            if (plan != FA_BACKWARD_PLAN_SPLIT) FA_SET_NAME(add_to_dq_)
            (s, job, plan, batch, q_head, row0, rows, col0, cols, full, seen.begin, block, met);
        }
    }
    FA_SET_NAME(release_)(job);

    const FA_T scale = (FA_T)p->scale;
    const size_t dkv_elem = fa_elem_size(p->dkv_type);
    char *dk = fa_view_at(&p->dk, dkv_elem, batch, kv_head, block0),
         *dvo = fa_view_at(&p->dv, dkv_elem, batch, kv_head, block0);
    for (int64_t c = 0; c < block_cols; c++) {
        char *dk_row = dk + c * p->dk.stride_seq * (int64_t)dkv_elem,
             *dv_row = dvo + c * p->dv.stride_seq * (int64_t)dkv_elem;
        if (fa_dkv_rounds(p)) { /* rounded once, from the float sums */
            for (int64_t x = 0; x < d; x++)
                fa_half_store(p->dkv_type, dk_row, x, (float)(scale * dk_acc[c * d_pad + x]));
            for (int64_t y = 0; y < dv; y++)
                fa_half_store(p->dkv_type, dv_row, y, (float)dv_acc[c * dv_pad + y]);
            continue;
        }
        for (int64_t x = 0; x < d; x++) ((FA_T *)(void *)dk_row)[x] = scale * dk_acc[c * d_pad + x];
        for (int64_t y = 0; y < dv; y++) ((FA_T *)(void *)dv_row)[y] = dv_acc[c * dv_pad + y];
    }
}

/* dQ of one query block (the split plan): every key block it sees, in order, summed in the arena,
 * then scaled and stored once. */
static void FA_SET_NAME(grads_query_block_)(const fa_backward_job *job, FA_SET_NAME(grads_scratch_) * s,
                                            const fa_q_item *it)
{
    const fa_problem *p = job->problem;
    const int64_t bk = job->block_k, kv_head = it->q_head / p->group;
    FA_SET_NAME(dq_zero_)(s->acc, job, it->rows);
    FA_SET_NAME(query_fill_)(s, job, it->batch, it->q_head, it->row0, it->rows, 0);
    FA_SET_NAME(row_stats_fill_)(s, job, it->batch, it->q_head, it->row0, it->rows);
    fa_key_blocks met = fa_key_blocks_seen(p, it->row0, it->rows, bk);
    for (int64_t block0 = met.first * bk; block0 < met.end * bk; block0 += bk) {
        fa_key_range seen = fa_tile_cols_seen(p, it->row0, it->rows, block0,
                                              p->kv_len - block0 < bk ? p->kv_len - block0 : bk);
        const int64_t col0 = block0 + seen.begin, cols = seen.end - seen.begin;
        if (cols == 0) continue;
        FA_SET_NAME(kv_fill_)(s, job, it->batch, kv_head, col0, cols);
        const int full = fa_tile_fully_visible(p, it->row0, it->rows, col0, cols);
        FA_SET_NAME(probs_and_grads_)
        (s, job, it->batch, it->q_head, it->row0, it->rows, col0, cols, 0, full, NULL, 0);
        FA_SET_NAME(accumulate_queries_)
        (s, job, it->row0, it->rows, col0, cols, full, 0, s->acc, FA_SET_NAME(dq_sums_stride_)(job));
    }
    FA_SET_NAME(release_)(job);
    FA_SET_NAME(dq_store_)(job, s->acc, it->batch, it->q_head, it->row0, it->rows);
}

/* The split plan's items on this set (and the wavefront plan's, which has only the first kind):
 * all dK/dV items first (each walks a whole column of query blocks, so they are the long ones),
 * then the dQ items. */
static void FA_SET_NAME(grads_item_)(const fa_backward_job *job, fa_arena *arena, int64_t index)
{
    const fa_problem *p = job->problem;
    FA_SET_NAME(grads_scratch_) s;
    fa_scratch scratch = fa_scratch_carver(arena);
    FA_SET_NAME(grads_carve_)(&scratch, job, &s);
    if (index < job->kv_items) {
        const int64_t block = index % job->kv_blocks, bh = index / job->kv_blocks;
        FA_SET_NAME(grads_key_block_)(job, &s, bh / p->kv_heads, bh % p->kv_heads, block, job->plan);
        return;
    }
    fa_q_item it = fa_q_schedule_item(&job->q_schedule, p, index - job->kv_items);
    FA_SET_NAME(grads_query_block_)(job, &s, &it);
}

/* The fused plan's item `index` = batch · Hkv + kv head: its key blocks in order, each adding to the
 * dQ sums of the group's query heads, which no other item touches. */
static void FA_SET_NAME(grads_head_)(const fa_backward_job *job, fa_arena *arena, int64_t index)
{
    const fa_problem *p = job->problem;
    FA_SET_NAME(grads_scratch_) s;
    fa_scratch scratch = fa_scratch_carver(arena);
    FA_SET_NAME(grads_carve_)(&scratch, job, &s);
    for (int64_t block = 0; block < job->kv_blocks; block++) FA_SET_NAME(grads_key_block_)
    (job, &s, index / p->kv_heads, index % p->kv_heads, block, FA_BACKWARD_PLAN_FUSED);
}

/* A dbias that sums over batches, heads or rows (fa_dbias_sums): item (b', h', key block) of dbias's
 * own batches and heads owns that block's columns of every dbias row of (b', h'), zeroes them, then
 * adds the dS of every (batch, head, query block) that reads them: batch-major, then head, then
 * query row, in the accumulation type, so the order is the problem's and never the team's. S and dP
 * are recomputed here (no item of the plans owns such a row), on the same tiles as a key block's. */
static void FA_SET_NAME(grads_dbias_item_)(const fa_backward_job *job, fa_arena *arena, int64_t index)
{
    const fa_problem *p = job->problem;
    const int sum_b = fa_dbias_sums_batches(p), sum_h = fa_dbias_sums_heads(p);
    const int64_t heads = sum_h ? 1 : p->q_heads, rows_of_dbias = p->dbias.stride_seq == 0 ? 1 : p->q_len;
    const int64_t block = index % job->kv_blocks, bh = index / job->kv_blocks;
    const int64_t own_b = bh / heads, own_h = bh % heads, bq = job->q_schedule.block_q, bk = job->block_k;
    const int64_t block0 = block * bk, block_cols = p->kv_len - block0 < bk ? p->kv_len - block0 : bk;
    for (int64_t i = 0; i < rows_of_dbias; i++) {
        FA_T *row = (FA_T *)fa_view_at(&p->dbias, sizeof(FA_T), own_b, own_h, i) + block0;
        for (int64_t c = 0; c < block_cols; c++) row[c] = 0;
    }
    FA_SET_NAME(grads_scratch_) s;
    fa_scratch scratch = fa_scratch_carver(arena);
    FA_SET_NAME(grads_carve_)(&scratch, job, &s);
    for (int64_t batch = sum_b ? 0 : own_b; batch < (sum_b ? p->batch : own_b + 1); batch++) {
        int64_t staged = -1; /* the kv head whose key block kv_fill_ holds */
        for (int64_t q_head = sum_h ? 0 : own_h; q_head < (sum_h ? p->q_heads : own_h + 1); q_head++) {
            if (q_head / p->group != staged)
                FA_SET_NAME(kv_fill_)(&s, job, batch, staged = q_head / p->group, block0, block_cols);
            for (int64_t row0 = 0; row0 < p->q_len; row0 += bq) {
                const int64_t rows = p->q_len - row0 < bq ? p->q_len - row0 : bq;
                fa_key_blocks met = fa_key_blocks_seen(p, row0, rows, bk);
                if (block < met.first || block >= met.end) continue;
                fa_key_range seen = fa_tile_cols_seen(p, row0, rows, block0, block_cols);
                const int64_t col0 = block0 + seen.begin, cols = seen.end - seen.begin;
                FA_SET_NAME(query_fill_)(&s, job, batch, q_head, row0, rows, 1);
                FA_SET_NAME(row_stats_fill_)(&s, job, batch, q_head, row0, rows);
                const int full = fa_tile_fully_visible(p, row0, rows, col0, cols);
                FA_T *dbias = (FA_T *)fa_view_at(&p->dbias, sizeof(FA_T), batch, q_head, row0) + col0;
                FA_SET_NAME(probs_and_grads_)
                (&s, job, batch, q_head, row0, rows, col0, cols, seen.begin, full, dbias, 1);
            }
        }
    }
    FA_SET_NAME(release_)(job);
}

/* The arena bytes of an item on this set: its carve, sized. */
static size_t FA_SET_NAME(grads_plan_)(const fa_backward_job *job)
{
    FA_SET_NAME(grads_scratch_) s;
    fa_scratch sizer = fa_scratch_sizer();
    FA_SET_NAME(grads_carve_)(&sizer, job, &s);
    return sizer.bytes;
}

#undef FA_SET_DQ_IN_ROWS
