/* SPDX-License-Identifier: BSD-3-Clause */
/* The forward's tile products on a table's bf16 dot-product units (kernels.h, "bf16 on
 * dot-product units": AMX tiles, vdpbf16ps), the set forward_attend.h runs for an all-bf16 call
 * that takes them (forward.c, takes_dot). Included by forward_item.h in its float instantiation
 * (FA_T = float), before forward_attend.h with FA_SET = dot.
 *
 * Per key tile: the key and value rows where they lie (or their bf16 copies from a paged pool),
 * and Vᵀ packed from the value rows once for every query block of the item. Per query block (at
 * most FA_DOT_BLOCK_ROWS rows): S = K·Qᵀ on the dot (A = the key rows, B = the block's queries
 * packed in pairs once per item), then, after the shared modifiers and masks, the online softmax
 * with the block's accumulator transposed (acc_t[y·ld + r]) writing P rounded to bf16 in pairs of
 * keys, and acc_t += Vᵀ·P on the dot. At the end each acc_t is transposed into the rows that
 * write_rows_ reads. The tiles' layouts and padding are the set's (pad_k). */

#define FA_SET_ROWS   FA_DOT_BLOCK_ROWS
#define FA_SET_TOKENS 0 /* no token order (forward_attend.h): the dot set stages its tiles */

/* acc_t += P·V over the keys each row sees only, one element at a time: an edge tile whose values
 * hold an Inf or NaN, which a whole-tile product would hand (as 0·Inf) to rows that do not see it
 * (visible_products.h). P is the pairs the dot would read, so the rows that see every key of the
 * tile sum the same rounded weights, in another order. */
static void dot_accumulate_visible_(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0,
                                    int64_t cols, const uint16_t *pp, int64_t ld, const uint16_t *v,
                                    int64_t v_stride, float *acc_t)
{
    for (int64_t r = 0; r < rows; r++) {
        fa_key_range keys = fa_visible_keys(p, row0 + r);
        int64_t lo = keys.begin - col0 < 0 ? 0 : keys.begin - col0,
                hi = keys.end - col0 > cols ? cols : keys.end - col0;
        for (int64_t c = lo; c < hi; c++) {
            float w = fa_bf16_to_f32(pp[(c / 2) * 2 * ld + 2 * r + c % 2]);
            for (int64_t y = 0; y < p->dim_v; y++)
                acc_t[y * ld + r] += w * fa_bf16_to_f32(v[c * v_stride + y]);
        }
    }
}

/* The regions the items of a group share (forward_attend.h): one block's score tile and P in
 * pairs, the tile's Vᵀ, and a paged pool's rows (NULL otherwise). */
typedef struct {
    float *s;
    uint16_t *pp, *vt;
    uint16_t *k_tile, *v_tile;
} FA_SET_NAME(shared_);

/* One item's scratch and what it reads. */
typedef struct {
    uint16_t *qp;              /* every query block in pairs, up(D, pad_k) × FA_SET_ROWS apart */
    float *s;                  /* the group's score tile (f32) */
    uint16_t *pp;              /* the group's P in pairs of keys */
    uint16_t *vt;              /* the group's Vᵀ of the tile, packed once for every block */
    float *acc_t;              /* the transposed accumulator, Dv × ld */
    FA_NAME(rows_state_) st;   /* the output rows (at the end), row max and row sum */
    uint16_t *k_tile, *v_tile; /* the group's copies of a paged pool's rows (NULL otherwise) */
    const uint16_t *k, *v;     /* the kv head's rows in the caller's cache (NULL when paged) */
    int64_t kv_head, k_stride, v_stride;
    int scale_first; /* the scale in the product (1) or in the softmax's FMA (0) */
} FA_SET_NAME(item_);

/* A key tile as the blocks read it: key rows kt (key col0 first), the value rows vr, and Vᵀ packed
 * from them, its rows vt_stride apart: the columns rounded up to pad_k and pad_k more, zero past
 * cols, so that a block's columns read from any offset within the tile stay inside its row.
 * finite: no Inf or NaN among the values. */
typedef struct {
    const uint16_t *kt, *vr;
    int64_t col0, cols, vt_stride;
    int finite;
} FA_SET_NAME(tile_);

/* The group's regions, then each item's, in this order (sizing and carving alike, plan/scratch.h). */
static void FA_SET_NAME(carve_shared_)(fa_scratch *sc, const fa_forward_job *job, FA_SET_NAME(shared_) * sh)
{
    const fa_problem *p = job->problem;
    const size_t h = sizeof(uint16_t), f = sizeof(float);
    const int64_t pad_k = job->kernels->bf16->pad_k, bk = job->block_k;
    const int64_t sub_ld = fa_query_block_ld(job->ld, FA_SET_ROWS), bk_k = fa_round_up(bk, pad_k);
    sh->s = fa_scratch_take(sc, (size_t)bk, (size_t)sub_ld, f);
    sh->pp = fa_scratch_take(sc, (size_t)bk_k, (size_t)sub_ld, h);
    sh->vt = fa_scratch_take(sc, (size_t)p->dim_v, (size_t)(bk_k + pad_k), h);
    sh->k_tile = sh->v_tile = NULL;
    if (job->paged) {
        sh->k_tile = fa_scratch_take(sc, (size_t)bk, (size_t)p->dim, h);
        sh->v_tile = fa_scratch_take(sc, (size_t)bk, (size_t)p->dim_v, h);
    }
}

static void FA_SET_NAME(carve_)(fa_scratch *sc, const fa_forward_job *job, const FA_SET_NAME(shared_) * sh,
                                FA_SET_NAME(item_) * item)
{
    const fa_problem *p = job->problem;
    const size_t h = sizeof(uint16_t), f = sizeof(float);
    const int64_t pad_k = job->kernels->bf16->pad_k, ld = job->ld, dv = p->dim_v;
    item->s = sh->s, item->pp = sh->pp, item->vt = sh->vt;
    item->k_tile = sh->k_tile, item->v_tile = sh->v_tile;
    item->qp = fa_scratch_take(sc, (size_t)fa_round_up(p->dim, pad_k), (size_t)ld, h);
    item->acc_t = fa_scratch_take(sc, (size_t)dv, (size_t)ld, f);
    item->st.acc_stride = fa_round_up(dv, FA_PAD_ELEMS);
    item->st.acc = fa_scratch_take(sc, (size_t)job->schedule.block_q, (size_t)item->st.acc_stride, f);
    item->st.row_max = fa_scratch_take(sc, 1, (size_t)ld, f);
    item->st.row_sum = fa_scratch_take(sc, 1, (size_t)ld, f);
}

static void FA_SET_NAME(item_begin_)(FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                     const fa_q_item *it)
{
    const fa_problem *p = job->problem;
    item->kv_head = it->q_head / p->group;
    item->k = item->v = NULL;
    if (!p->pages) {
        item->k = fa_view_at(&p->k, 2, it->batch, item->kv_head, 0);
        item->v = fa_view_at(&p->v, 2, it->batch, item->kv_head, 0);
    }
    item->k_stride = p->pages ? p->dim : p->k.stride_seq;
    item->v_stride = p->pages ? p->dim_v : p->v.stride_seq;
    /* the scale: in the softmax's FMA when it is positive (the max of the raw scores is then the
     * max of the scores), else first, as the modifiers need the scores themselves anyway */
    item->scale_first = fa_problem_modifies_scores(p) || !(p->scale > 0);
}

static void *FA_SET_NAME(block_queries_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                         int64_t r0)
{
    /* every block before it is FA_SET_ROWS wide */
    return item->qp + r0 * fa_round_up(job->problem->dim, job->kernels->bf16->pad_k);
}

static float *FA_SET_NAME(block_acc_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job, int64_t r0)
{
    return item->acc_t + r0 * job->problem->dim_v;
}

/* The block's queries in pairs, unscaled (the scale goes into the product or the softmax). */
static void FA_SET_NAME(pack_block_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                     const fa_q_item *it, const FA_NAME(query_block_) * b)
{
    (void)item;
    const fa_problem *p = job->problem;
    /* the block's rows evenly apart: a grouped problem of one position, or none (takes_dot) */
    const uint16_t *head = fa_view_at(&p->q, 2, it->batch, it->q_head, 0);
    const int64_t stride = fa_rows_stride(p, b->row0, b->rows, p->q.stride_seq, p->q_sub_stride);
    job->kernels->bf16->pack_pairs(b->rows, p->dim,
                                   head + fa_row_offset(p, b->row0, p->q.stride_seq, p->q_sub_stride), stride,
                                   (uint16_t *)b->queries, b->ld);
}

static void FA_SET_NAME(zero_acc_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                   const fa_q_item *it)
{
    (void)it;
    for (int64_t x = 0; x < job->problem->dim_v * job->ld; x++) item->acc_t[x] = 0;
}

/* The keys [col0, col0 + cols) of a tile: their rows (a paged pool's copied as bf16 rows), and Vᵀ
 * packed once for every block. */
static void FA_SET_NAME(stage_tile_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                     const fa_q_item *it, int64_t col0, int64_t cols, FA_SET_NAME(tile_) * t)
{
    (void)it;
    const fa_problem *p = job->problem;
    const fa_kernels_bf16 *kb = job->kernels->bf16;
    t->kt = item->k_tile;
    t->vr = item->v_tile;
    if (p->pages) FA_NAME(gather_pages_)
    (job->kernels->f32, p, 1, item->kv_head, col0, cols, item->k_tile, item->v_tile);
    else t->kt = item->k + col0 * item->k_stride, t->vr = item->v + col0 * item->v_stride;
    t->col0 = col0;
    t->cols = cols;
    t->vt_stride = fa_round_up(cols, kb->pad_k) + kb->pad_k;
    t->finite = kb->pack_rows_t(cols, p->dim_v, t->vr, item->v_stride, item->vt, t->vt_stride);
}

/* S = K·Qᵀ for the block over keys [col0, col0 + cols) of the tile, scaled when scale_first. */
static void FA_SET_NAME(scores_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                 const FA_NAME(query_block_) * b, const FA_SET_NAME(tile_) * t, int64_t col0,
                                 int64_t cols, int full)
{
    (void)full;
    const fa_problem *p = job->problem;
    job->kernels->bf16->dot(cols, b->ld, p->dim, t->kt + (col0 - t->col0) * item->k_stride, item->k_stride,
                            (const uint16_t *)b->queries, b->ld, item->s, b->ld,
                            item->scale_first ? (float)p->scale : 1.0f, 0);
}

/* The online softmax writing P in pairs, then acc_t += Vᵀ·P on the dot. The block's columns of
 * the tile's Vᵀ, cols_k of them: past cols they hold other blocks' values (or zeros), which meet
 * P's zero padding. With values that are not all finite that gives NaN (0·Inf), so then the
 * product takes only what each row sees, unless the block's columns are the tile's (zeros past
 * them) and it sees them all. */
static void FA_SET_NAME(softmax_accumulate_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                             const fa_q_item *it, const FA_NAME(query_block_) * b,
                                             const FA_SET_NAME(tile_) * t, int64_t col0, int64_t cols,
                                             int full)
{
    (void)it; /* no dropout here: a dropout forward widens (forward.c, rows_take_dot) */
    const fa_problem *p = job->problem;
    const fa_kernels_bf16 *kb = job->kernels->bf16;
    const int64_t dv = p->dim_v, ld = b->ld, off = col0 - t->col0;
    kb->online_softmax_pairs(b->rows, ld, cols, item->scale_first ? 1.0f : (float)p->scale, item->s,
                             b->row_max, b->row_sum, b->acc, dv, item->pp);
    if (!t->finite && (!full || off != 0 || cols != t->cols)) {
        dot_accumulate_visible_(p, b->row0, b->rows, col0, cols, item->pp, ld, t->vr + off * item->v_stride,
                                item->v_stride, b->acc);
        return;
    }
    kb->dot(dv, ld, fa_round_up(cols, kb->pad_k), item->vt + off, t->vt_stride, item->pp, ld, b->acc, ld,
            1.0f, 1);
}

/* The units released, and each block's acc_t (Dv rows of ld) transposed into its rows of st.acc
 * by the float set's pack (a copy: 1·x is x), 16 × 16 in registers. */
static FA_NAME(rows_state_)
    FA_SET_NAME(item_end_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job, const fa_q_item *it)
{
    job->kernels->bf16->release();
    const int64_t blocks = (it->rows + FA_SET_ROWS - 1) / FA_SET_ROWS;
    for (int64_t g = 0; g < blocks; g++) {
        const int64_t r0 = g * FA_SET_ROWS, rows = fa_query_block_rows(it->rows, g, FA_SET_ROWS);
        job->kernels->f32->pack_transposed(job->problem->dim_v, rows, FA_SET_NAME(block_acc_)(item, job, r0),
                                           fa_round_up(rows, FA_PAD_ELEMS), 1.0f,
                                           item->st.acc + r0 * item->st.acc_stride, item->st.acc_stride);
    }
    return item->st;
}
