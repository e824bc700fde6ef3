/* SPDX-License-Identifier: BSD-3-Clause */
/* Ragged batches for the fa_seqs tests; see seqs_util.h. */
#include "seqs_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "reference_backward.h"

/* ---- building a batch -------------------------------------------------------------------- */

/* A [B][H][S][dim] view in a fresh buffer: [B][S][H][dim] memory, or [B][H][S][dim] when
 * head_major, with `gap` spare elements after each row of each head. */
static fa_tensor make_view(kit_buf *buf, fa_dtype dt, int64_t B, int64_t H, int64_t S, int64_t dim,
                           int head_major, int64_t gap)
{
    int64_t row = dim + gap, sh, ss, sb;
    if (head_major)
        ss = row, sh = S * row, sb = H * sh;
    else
        sh = row, ss = H * row, sb = S * ss;
    *buf = kit_buf_alloc((size_t)(B * sb) * tu_dtype_size(dt));
    fa_tensor v = {.data = kit_buf_data(buf),
                   .dtype = dt,
                   .batch = B,
                   .heads = H,
                   .seq = S,
                   .dim = dim,
                   .stride_batch = sb,
                   .stride_head = sh,
                   .stride_seq = ss};
    return v;
}

static void fill_nan(const kit_buf *buf, fa_dtype dt)
{
    size_t n = buf->bytes / tu_dtype_size(dt);
    for (size_t i = 0; i < n; i++)
        if (dt == FA_F64)
            ((double *)kit_buf_data(buf))[i] = NAN;
        else
            ((float *)kit_buf_data(buf))[i] = NAN;
}

static void copy_view(const fa_tensor *dst, const fa_tensor *src)
{
    for (int64_t b = 0; b < src->batch; b++)
        for (int64_t h = 0; h < src->heads; h++)
            for (int64_t s = 0; s < src->seq; s++)
                for (int64_t d = 0; d < src->dim; d++)
                    kit_tensor_store(dst, b, h, s, d, kit_tensor_load(src, b, h, s, d));
}

/* Paged: the contiguous keys (kc, vc) of every sequence copied into the pages its table names. */
static void scatter_pages(const ts_batch *t)
{
    const ts_spec *s = &t->s;
    for (int64_t b = 0; b < s->batch; b++) {
        fa_tensor kc = ts_seq_view(t, TS_K, b), vc = ts_seq_view(t, TS_V, b);
        for (int64_t key = 0; key < t->used[b]; key++) {
            int64_t page = t->block_table[b * s->pages_per_seq + key / s->page_size],
                    row = key % s->page_size;
            for (int64_t h = 0; h < s->kv_heads; h++) {
                for (int64_t d = 0; d < s->dim; d++)
                    kit_tensor_store(&t->t[TS_K], page, h, row, d, kit_tensor_load(&kc, 0, h, key, d));
                for (int64_t d = 0; d < s->dim_v; d++)
                    kit_tensor_store(&t->t[TS_V], page, h, row, d, kit_tensor_load(&vc, 0, h, key, d));
            }
        }
    }
}

/* Lengths, offsets, pages and storage; every input NaN and every output KIT_CANARY. */
static void layout(ts_batch *t, const ts_spec *spec, tu_rng *rng)
{
    memset(t, 0, sizeof *t);
    t->s = *spec;
    const ts_spec *s = &t->s;
    cr_assert(s->batch >= 0 && s->batch <= TS_MAX_SEQS, "ts_make: batch %lld", (long long)s->batch);
    fa_dtype dt = s->dtype;
    int64_t B = s->batch, Hq = s->q_heads, Hkv = s->kv_heads, D = s->dim, Dv = s->dim_v;
    t->cu_q[0] = t->cu_k[0] = t->cu_used[0] = 0;
    for (int64_t b = 0; b < B; b++) {
        t->q_len[b] = s->packed_q ? s->q_len[b] : s->q_len[0];
        int64_t capacity = s->keys == TS_KEYS_PACKED  ? s->k_len[b]
                           : s->keys == TS_KEYS_DENSE ? s->k_len[0]
                                                      : s->pages_per_seq * s->page_size;
        t->used[b] = s->seqused ? s->k_used[b] : capacity;
        cr_assert(t->used[b] >= 0 && t->used[b] <= capacity, "ts_make: sequence %lld uses %lld of %lld keys",
                  (long long)b, (long long)t->used[b], (long long)capacity);
        t->seqused_k[b] = t->used[b];
        t->cu_q[b + 1] = t->cu_q[b] + t->q_len[b];
        t->cu_k[b + 1] = t->cu_k[b] + capacity;
        t->cu_used[b + 1] = t->cu_used[b] + t->used[b];
    }
    int64_t q_batch = s->packed_q ? 1 : B, q_rows = s->packed_q ? t->cu_q[B] + s->spare_rows : s->q_len[0];
    int64_t k_batch = B, k_rows = s->k_len[0];
    if (s->keys == TS_KEYS_PACKED) k_batch = 1, k_rows = t->cu_k[B] + s->spare_rows;
    if (s->keys == TS_KEYS_PAGED) {
        /* each sequence's pages in use, drawn from a shuffled pool; -1 in the entries beyond them */
        int64_t in_use = 0;
        for (int64_t b = 0; b < B; b++) {
            int64_t need = s->page_size > 0 ? (t->used[b] + s->page_size - 1) / s->page_size : 0;
            cr_assert(need <= s->pages_per_seq, "ts_make: sequence %lld needs %lld pages", (long long)b,
                      (long long)need);
            in_use += need;
        }
        t->num_pages = in_use + s->spare_pages;
        int64_t *perm = malloc(sizeof(int64_t) * (size_t)(t->num_pages + 1));
        for (int64_t x = 0; x < t->num_pages; x++) perm[x] = x;
        for (int64_t x = t->num_pages - 1; x > 0; x--) {
            int64_t y = tu_rng_below(rng, x + 1), tmp = perm[x];
            perm[x] = perm[y], perm[y] = tmp;
        }
        t->block_table = malloc(sizeof(int32_t) * (size_t)(B * s->pages_per_seq + 1));
        int64_t next = 0;
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < s->pages_per_seq; j++)
                t->block_table[b * s->pages_per_seq + j] =
                    j * s->page_size < t->used[b] ? (int32_t)perm[next++] : -1;
        free(perm);
        k_batch = t->num_pages, k_rows = s->page_size;
        t->kc = make_view(&t->kc_buf, dt, 1, Hkv, t->cu_used[B], D, s->head_major, 0);
        t->vc = make_view(&t->vc_buf, dt, 1, Hkv, t->cu_used[B], Dv, s->head_major, 0);
    }
    const int64_t shape[TS_TENSORS][4] = {{q_batch, Hq, q_rows, D},   {k_batch, Hkv, k_rows, D},
                                          {k_batch, Hkv, k_rows, Dv}, {q_batch, Hq, q_rows, Dv},
                                          {q_batch, Hq, q_rows, Dv},  {q_batch, Hq, q_rows, D},
                                          {k_batch, Hkv, k_rows, D},  {k_batch, Hkv, k_rows, Dv}};
    for (int x = 0; x < TS_TENSORS; x++) {
        int output = x == TS_OUT || x == TS_DQ || x == TS_DK || x == TS_DV;
        t->t[x] = make_view(&t->buf[x], dt, shape[x][0], shape[x][1], shape[x][2], shape[x][3], s->head_major,
                            output ? 1 : 0);
        if (!output) fill_nan(&t->buf[x], dt);
    }
    if (s->keys == TS_KEYS_PAGED) fill_nan(&t->kc_buf, dt), fill_nan(&t->vc_buf, dt);
    t->lse_rows = q_rows;
    t->buf[TS_TENSORS] = kit_buf_alloc((size_t)(q_batch * Hq * q_rows) * tu_dtype_size(dt));
    t->lse = kit_buf_data(&t->buf[TS_TENSORS]);
    t->seqs = (fa_seqs)FA_SEQS_INIT;
    t->seqs.batch = B;
    t->seqs.cu_seqlens_q = s->packed_q ? t->cu_q : NULL;
    t->seqs.cu_seqlens_k = s->keys == TS_KEYS_PACKED ? t->cu_k : NULL;
    t->seqs.seqused_k = s->seqused ? t->seqused_k : NULL;
    t->seqs.block_table = t->block_table;
    t->seqs.pages_per_seq = s->keys == TS_KEYS_PAGED ? s->pages_per_seq : 0;
}

void ts_spec_draw(ts_spec *s, tu_rng *rng, int64_t max_q, int64_t max_k, int edges)
{
    int packed_k = s->keys == TS_KEYS_PACKED;
    if (!s->packed_q) s->q_len[0] = 1 + tu_rng_below(rng, max_q);
    if (s->keys == TS_KEYS_DENSE) s->k_len[0] = max_k;
    for (int64_t b = 0; b < s->batch; b++) {
        if (s->packed_q) s->q_len[b] = tu_rng_below(rng, max_q + 1);
        if (packed_k) s->k_len[b] = tu_rng_below(rng, max_k + 1);
        int64_t cap = packed_k                   ? s->k_len[b]
                      : s->keys == TS_KEYS_DENSE ? max_k
                                                 : s->pages_per_seq * s->page_size;
        s->k_used[b] = tu_rng_below(rng, cap + 1);
        if (!edges) continue;
        int64_t nq = s->packed_q ? s->q_len[b] : s->q_len[0];
        switch (b) {
        case 0: /* no query */
            if (s->packed_q) s->q_len[b] = 0;
            break;
        case 1: /* one query, one key */
            if (s->packed_q) s->q_len[b] = 1;
            if (packed_k) s->k_len[b] = 1;
            s->k_used[b] = cap > 0 ? 1 : 0;
            break;
        case 2: /* no key */
            if (packed_k) s->k_len[b] = 0;
            s->k_used[b] = 0;
            break;
        case 3: /* more queries than keys */
            if (s->packed_q) s->q_len[b] = nq = max_q;
            if (packed_k) s->k_len[b] = s->k_len[b] < nq / 2 ? s->k_len[b] : nq / 2;
            if (s->k_used[b] > nq / 2) s->k_used[b] = nq / 2;
            if (s->k_used[b] > (packed_k ? s->k_len[b] : cap)) s->k_used[b] = packed_k ? s->k_len[b] : cap;
            break;
        case 4: /* every key of the capacity in use; paged: a whole number of pages */
            if (packed_k) s->k_len[b] = max_k;
            s->k_used[b] = packed_k ? max_k : cap;
            if (s->keys == TS_KEYS_PAGED && s->page_size > 0 && s->pages_per_seq > 1)
                s->k_used[b] = (s->pages_per_seq - 1) * s->page_size;
            break;
        default: break;
        }
    }
}

void ts_make(ts_batch *t, const ts_spec *s, tu_rng *rng, double qk_amp)
{
    layout(t, s, rng);
    for (int64_t b = 0; b < s->batch; b++) {
        fa_tensor q = ts_seq_view(t, TS_Q, b), k = ts_seq_view(t, TS_K, b), v = ts_seq_view(t, TS_V, b);
        fa_tensor dout = ts_seq_view(t, TS_DOUT, b);
        kit_fill_uniform(&q, &rng->state, -qk_amp, qk_amp);
        kit_fill_uniform(&k, &rng->state, -qk_amp, qk_amp);
        kit_fill_uniform(&v, &rng->state, -1.0, 1.0);
        kit_fill_uniform(&dout, &rng->state, -1.0, 1.0);
    }
    if (s->keys == TS_KEYS_PAGED) scatter_pages(t);
}

void ts_make_twin(ts_batch *twin, const ts_batch *t, ts_keys twin_keys, int64_t dense_capacity)
{
    ts_spec s = t->s;
    s.keys = twin_keys;
    s.seqused = twin_keys != TS_KEYS_PACKED;
    for (int64_t b = 0; b < s.batch; b++) {
        s.k_len[b] = twin_keys == TS_KEYS_DENSE ? dense_capacity : t->used[b];
        s.k_used[b] = t->used[b];
    }
    tu_rng rng = tu_rng_make(0x5eed); /* the twin's pages: another order than t's */
    layout(twin, &s, &rng);
    for (int64_t b = 0; b < s.batch; b++)
        for (int x = TS_Q; x <= TS_DOUT; x++) {
            if (x == TS_OUT) continue;
            fa_tensor dst = ts_seq_view(twin, x, b), src = ts_seq_view(t, x, b);
            copy_view(&dst, &src);
        }
    if (twin_keys == TS_KEYS_PAGED) scatter_pages(twin);
}

void ts_free(ts_batch *t)
{
    for (int x = 0; x <= TS_TENSORS; x++) kit_buf_free(&t->buf[x]);
    kit_buf_free(&t->kc_buf);
    kit_buf_free(&t->vc_buf);
    free(t->block_table);
    t->block_table = NULL;
}

void ts_fill_canary(ts_batch *t)
{
    const int outputs[5] = {TS_OUT, TS_DQ, TS_DK, TS_DV, TS_TENSORS};
    for (int x = 0; x < 5; x++)
        memset(t->buf[outputs[x]].base, KIT_CANARY, t->buf[outputs[x]].bytes + 2 * KIT_GUARD);
}

fa_status ts_forward(fa_context *ctx, const fa_params *p, ts_batch *t)
{
    fa_params pp = *p;
    pp.seqs = &t->seqs;
    return fa_forward(ctx, &pp, &t->t[TS_Q], &t->t[TS_K], &t->t[TS_V], &t->t[TS_OUT], t->lse);
}

fa_status ts_backward(fa_context *ctx, const fa_params *p, ts_batch *t)
{
    fa_params pp = *p;
    pp.seqs = &t->seqs;
    return fa_backward(ctx, &pp, &t->t[TS_Q], &t->t[TS_K], &t->t[TS_V], &t->t[TS_OUT], &t->t[TS_DOUT], t->lse,
                       &t->t[TS_DQ], &t->t[TS_DK], &t->t[TS_DV]);
}

/* ---- one sequence ------------------------------------------------------------------------ */

static fa_tensor rows_of(const fa_tensor *base, int64_t batch, int64_t row, int64_t n)
{
    fa_tensor v = *base;
    v.data = (char *)base->data +
             (batch * base->stride_batch + row * base->stride_seq) * (int64_t)tu_dtype_size(base->dtype);
    v.batch = 1;
    v.seq = n;
    return v;
}

fa_tensor ts_seq_view(const ts_batch *t, int which, int64_t b)
{
    const ts_spec *s = &t->s;
    if (which == TS_Q || which == TS_OUT || which == TS_DOUT || which == TS_DQ)
        return s->packed_q ? rows_of(&t->t[which], 0, t->cu_q[b], t->q_len[b])
                           : rows_of(&t->t[which], b, 0, t->q_len[b]);
    if (s->keys == TS_KEYS_PAGED) {
        cr_assert(which == TS_K || which == TS_V, "ts_seq_view: paged keys have no dk, dv");
        return rows_of(which == TS_K ? &t->kc : &t->vc, 0, t->cu_used[b], t->used[b]);
    }
    if (s->keys == TS_KEYS_PACKED) return rows_of(&t->t[which], 0, t->cu_k[b], t->used[b]);
    return rows_of(&t->t[which], b, 0, t->used[b]);
}

void *ts_seq_lse(const ts_batch *t, int64_t b, int64_t h)
{
    int64_t at = t->s.packed_q ? h * t->lse_rows + t->cu_q[b] : (b * t->s.q_heads + h) * t->lse_rows;
    return (char *)t->lse + at * (int64_t)tu_dtype_size(t->s.dtype);
}

void ts_seq_problem(const ts_batch *t, int64_t b, tub_problem *bp)
{
    const ts_spec *s = &t->s;
    memset(bp, 0, sizeof *bp);
    tu_shape shape = {s->dtype,   1,      s->q_heads, s->kv_heads, t->q_len[b],
                      t->used[b], s->dim, s->dim_v,   TU_BHSD};
    bp->fw.shape = shape;
    bp->fw.q = ts_seq_view(t, TS_Q, b);
    bp->fw.k = ts_seq_view(t, TS_K, b);
    bp->fw.v = ts_seq_view(t, TS_V, b);
    bp->fw.out = ts_seq_view(t, TS_OUT, b);
    size_t e = tu_dtype_size(s->dtype), row_bytes = (size_t)t->q_len[b] * e;
    bp->fw.lse = malloc((size_t)s->q_heads * row_bytes + e);
    for (int64_t h = 0; h < s->q_heads; h++)
        memcpy((char *)bp->fw.lse + (size_t)h * row_bytes, ts_seq_lse(t, b, h), row_bytes);
    bp->dout = ts_seq_view(t, TS_DOUT, b);
    if (s->keys != TS_KEYS_PAGED)
        for (int g = 0; g < 3; g++) bp->grad[g] = ts_seq_view(t, TS_DQ + g, b);
}

void ts_seq_free(tub_problem *bp)
{
    free(bp->fw.lse);
    bp->fw.lse = NULL;
}

/* ---- checks ------------------------------------------------------------------------------ */

static void prefix(char *msg, size_t size, int64_t b, const ts_batch *t)
{
    char rest[768];
    snprintf(rest, sizeof rest, "%s", msg);
    snprintf(msg, size, "sequence %lld (Nq %lld, Nk %lld): %s", (long long)b, (long long)t->q_len[b],
             (long long)t->used[b], rest);
}

int ts_check_forward(const ts_batch *t, const fa_params *p, char *msg, size_t size)
{
    fa_params alone = *p;
    alone.seqs = NULL;
    for (int64_t b = 0; b < t->s.batch; b++) {
        tub_problem bp;
        ts_seq_problem(t, b, &bp);
        int64_t *rows = NULL, n = tu_pick_rows(&bp.fw, &alone, INT64_MAX / 4, &rows);
        int ok = n == 0 || tu_check_accuracy(&bp.fw, &alone, rows, n, 1e-12, msg, size);
        free(rows);
        ts_seq_free(&bp);
        if (!ok) {
            prefix(msg, size, b, t);
            return 0;
        }
    }
    return 1;
}

int ts_check_backward(const ts_batch *t, const fa_params *p, char *msg, size_t size)
{
    fa_params alone = *p;
    alone.seqs = NULL;
    alone.dsinks = NULL;
    for (int64_t b = 0; b < t->s.batch; b++) {
        tub_problem bp;
        ts_seq_problem(t, b, &bp);
        tub_ref oracle, naive;
        tub_ref_compute(&oracle, &bp, &alone);
        int f32 = t->s.dtype == FA_F32;
        if (f32) tub_ref_compute_naive_f32(&naive, &bp, &alone);
        int ok = tub_check_accuracy(&bp, &alone, &oracle, f32 ? &naive : NULL, 1e-11, msg, size);
        tub_ref_free(&oracle);
        if (f32) tub_ref_free(&naive);
        ts_seq_free(&bp);
        if (!ok) {
            prefix(msg, size, b, t);
            return 0;
        }
    }
    return 1;
}

int ts_check_dsinks(const ts_batch *t, const fa_params *p, const float *dsinks, char *msg, size_t size)
{
    fa_params alone = *p;
    alone.seqs = NULL;
    alone.dsinks = NULL;
    int64_t H = t->s.q_heads;
    int f32 = t->s.dtype == FA_F32;
    double *ref = calloc((size_t)H + 1, sizeof(double)), *one = calloc((size_t)H + 1, sizeof(double));
    float *naive = calloc((size_t)H + 1, sizeof(float));
    for (int64_t b = 0; b < t->s.batch; b++) {
        tub_problem bp;
        ts_seq_problem(t, b, &bp);
        ref_backward_dsinks(&alone, &bp.fw.q, &bp.fw.k, &bp.fw.v, &bp.dout, one);
        for (int64_t h = 0; h < H; h++) ref[h] += one[h];
        if (f32) { /* the yardstick sums in float, sequence after sequence */
            ref_backward_dsinks_naive_f32(&alone, &bp.fw.q, &bp.fw.k, &bp.fw.v, &bp.dout, one);
            for (int64_t h = 0; h < H; h++) naive[h] += (float)one[h];
        }
        ts_seq_free(&bp);
    }
    double max_ref = 0.0, naive_err = 0.0;
    for (int64_t h = 0; h < H; h++) {
        max_ref = fmax(max_ref, fabs(ref[h]));
        if (f32) naive_err = fmax(naive_err, fabs((double)naive[h] - ref[h]));
    }
    int ok = 1;
    for (int64_t h = 0; h < H && ok; h++) {
        double lib = (double)dsinks[h];
        /* f64: fa_backward rounds the sum to float once: half an ulp, or half the smallest subnormal */
        double limit = f32 ? 3.0 * naive_err + 1e-5 : 0x1p-24 * fabs(ref[h]) + 0x1p-150 + 1e-11 * max_ref;
        ok = isfinite(lib) && fabs(lib - ref[h]) <= limit;
        if (!ok)
            snprintf(msg, size,
                     "dsinks[%lld]: lib %.9g, oracle (sum over sequences) %.17g: |diff| %.3e > limit %.3e",
                     (long long)h, lib, ref[h], fabs(lib - ref[h]), limit);
    }
    free(ref), free(one), free(naive);
    return ok;
}

static int lse_rows_equal(const ts_batch *t, int64_t b, const void *other, int64_t *head)
{
    size_t bytes = (size_t)t->q_len[b] * tu_dtype_size(t->s.dtype);
    for (int64_t h = 0; h < t->s.q_heads; h++)
        if (memcmp(ts_seq_lse(t, b, h), (const char *)other + (size_t)h * bytes, bytes) != 0) {
            *head = h;
            return 0;
        }
    return 1;
}

int ts_forward_equals_dense_calls(fa_context *ctx, const fa_params *p, const ts_batch *t, char *msg,
                                  size_t size)
{
    const ts_spec *s = &t->s;
    fa_params alone = *p;
    alone.seqs = NULL;
    size_t e = tu_dtype_size(s->dtype);
    for (int64_t b = 0; b < s->batch; b++) {
        /* dropout's stream of sequence b is that of batch entry 0 of a call of it alone whose offset
         * is b·Hq further (flashattn.h, fa_params "Dropout") */
        alone.dropout_offset = p->dropout_offset + (uint64_t)(b * s->q_heads);
        fa_tensor q = ts_seq_view(t, TS_Q, b), k = ts_seq_view(t, TS_K, b), v = ts_seq_view(t, TS_V, b);
        fa_tensor mine = ts_seq_view(t, TS_OUT, b);
        void *out_mem = malloc((size_t)(s->q_heads * t->q_len[b] * s->dim_v) * e + e);
        void *lse = malloc((size_t)(s->q_heads * t->q_len[b]) * e + e);
        fa_tensor out = fa_tensor_bhsd(out_mem, s->dtype, 1, s->q_heads, t->q_len[b], s->dim_v);
        fa_status st = fa_forward(ctx, &alone, &q, &k, &v, &out, lse);
        int64_t where = -1, head = -1;
        int ok =
            st == FA_OK && tub_views_bitwise_equal(&out, &mine, &where) && lse_rows_equal(t, b, lse, &head);
        if (!ok)
            snprintf(
                msg, size,
                "sequence %lld (Nq %lld, Nk %lld) alone: status %d (%s); first differing out element %lld, "
                "lse head %lld",
                (long long)b, (long long)t->q_len[b], (long long)t->used[b], (int)st, fa_last_error(),
                (long long)where, (long long)head);
        free(out_mem), free(lse);
        if (!ok) return 0;
    }
    return 1;
}

int ts_backward_equals_dense_calls(fa_context *ctx, const fa_params *p, const ts_batch *t, char *msg,
                                   size_t size)
{
    const ts_spec *s = &t->s;
    fa_params alone = *p;
    alone.seqs = NULL;
    alone.dsinks = NULL;
    size_t e = tu_dtype_size(s->dtype);
    static const char *const names[3] = {"dq", "dk", "dv"};
    for (int64_t b = 0; b < s->batch; b++) {
        alone.dropout_offset = p->dropout_offset + (uint64_t)(b * s->q_heads); /* as the forward's */
        tub_problem bp; /* the sequence's views, and a contiguous copy of its lse rows */
        ts_seq_problem(t, b, &bp);
        void *mem[3];
        fa_tensor g[3];
        for (int x = 0; x < 3; x++) {
            const fa_tensor *like = x == 0 ? &bp.fw.q : x == 1 ? &bp.fw.k : &bp.fw.v;
            mem[x] = malloc((size_t)tub_numel(like) * e + e);
            g[x] = fa_tensor_bhsd(mem[x], s->dtype, 1, like->heads, like->seq, like->dim);
        }
        fa_status st = fa_backward(ctx, &alone, &bp.fw.q, &bp.fw.k, &bp.fw.v, &bp.fw.out, &bp.dout, bp.fw.lse,
                                   &g[0], &g[1], &g[2]);
        int ok = st == FA_OK;
        if (!ok)
            snprintf(msg, size, "sequence %lld alone: status %d (%s)", (long long)b, (int)st,
                     fa_last_error());
        for (int x = 0; x < 3 && ok; x++) {
            int64_t where = -1;
            ok = tub_views_bitwise_equal(&g[x], &bp.grad[x], &where);
            if (!ok)
                snprintf(msg, size, "sequence %lld (Nq %lld, Nk %lld) alone: %s differs at element %lld",
                         (long long)b, (long long)t->q_len[b], (long long)t->used[b], names[x],
                         (long long)where);
        }
        for (int x = 0; x < 3; x++) free(mem[x]);
        ts_seq_free(&bp);
        if (!ok) return 0;
    }
    return 1;
}

int ts_outputs_bitwise_equal(const ts_batch *a, const ts_batch *b, int grads, char *msg, size_t size)
{
    static const int which[4] = {TS_OUT, TS_DQ, TS_DK, TS_DV};
    static const char *const names[4] = {"out", "dq", "dk", "dv"};
    for (int64_t s = 0; s < a->s.batch; s++) {
        for (int x = 0; x < (grads ? 4 : 1); x++) {
            fa_tensor va = ts_seq_view(a, which[x], s), vb = ts_seq_view(b, which[x], s);
            int64_t where = -1;
            if (!tub_views_bitwise_equal(&va, &vb, &where)) {
                snprintf(msg, size, "sequence %lld: %s differs at element %lld", (long long)s, names[x],
                         (long long)where);
                return 0;
            }
        }
        size_t bytes = (size_t)a->q_len[s] * tu_dtype_size(a->s.dtype);
        for (int64_t h = 0; h < a->s.q_heads; h++)
            if (memcmp(ts_seq_lse(a, s, h), ts_seq_lse(b, s, h), bytes) != 0) {
                snprintf(msg, size, "sequence %lld: lse of head %lld differs", (long long)s, (long long)h);
                return 0;
            }
    }
    return 1;
}

static void mark_view(unsigned char *mark, const kit_buf *buf, const fa_tensor *v)
{
    size_t e = tu_dtype_size(v->dtype);
    for (int64_t h = 0; h < v->heads; h++)
        for (int64_t s = 0; s < v->seq; s++) {
            size_t at = (size_t)((const char *)v->data - (const char *)kit_buf_data(buf)) +
                        (size_t)(h * v->stride_head + s * v->stride_seq) * e;
            memset(mark + at, 1, (size_t)v->dim * e);
        }
}

int ts_only_sequence_rows_written(const ts_batch *t, int grads, char *msg, size_t size)
{
    static const int which[5] = {TS_OUT, TS_DQ, TS_DK, TS_DV, TS_TENSORS};
    static const char *const names[5] = {"out", "dq", "dk", "dv", "lse"};
    size_t e = tu_dtype_size(t->s.dtype);
    for (int x = 0; x < 5; x++) {
        const kit_buf *buf = &t->buf[which[x]];
        unsigned char *mark = calloc(buf->bytes + 1, 1);
        int defined = which[x] == TS_OUT || which[x] == TS_TENSORS || (grads && t->s.keys != TS_KEYS_PAGED);
        for (int64_t b = 0; b < t->s.batch && defined; b++) {
            if (which[x] == TS_TENSORS) {
                for (int64_t h = 0; h < t->s.q_heads; h++)
                    memset(mark + ((char *)ts_seq_lse(t, b, h) - (char *)t->lse), 1, (size_t)t->q_len[b] * e);
            } else {
                fa_tensor v = ts_seq_view(t, which[x], b);
                mark_view(mark, buf, &v);
            }
        }
        const unsigned char *data = kit_buf_data(buf);
        int64_t first = -1;
        for (size_t i = 0; i < buf->bytes && first < 0; i++)
            if (!mark[i] && data[i] != KIT_CANARY) first = (int64_t)i;
        free(mark);
        if (first >= 0 || !kit_buf_guards_intact(buf)) {
            snprintf(msg, size,
                     "%s: a byte outside every sequence's rows was written (byte %lld of %zu, or a guard)",
                     names[x], (long long)first, buf->bytes);
            return 0;
        }
    }
    return 1;
}

void ts_desc(const ts_batch *t, const fa_params *p, char *buf, size_t size)
{
    static const char *const keys[3] = {"dense", "packed", "paged"};
    static const char *const causal[3] = {"none", "top-left", "bottom-right"};
    const ts_spec *s = &t->s;
    int n = snprintf(buf, size, "%s %s-q %s-k%s", s->dtype == FA_F64 ? "f64" : "f32",
                     s->packed_q ? "packed" : "dense", keys[s->keys], s->seqused ? "+seqused" : "");
    if (s->keys == TS_KEYS_PAGED && n >= 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n, "(page %lld x %lld, pool %lld)", (long long)s->page_size,
                      (long long)s->pages_per_seq, (long long)t->num_pages);
    if (n >= 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n,
                      " %s B=%lld Hq=%lld Hkv=%lld D=%lld Dv=%lld Nq,Nk=", s->head_major ? "bhsd" : "bshd",
                      (long long)s->batch, (long long)s->q_heads, (long long)s->kv_heads, (long long)s->dim,
                      (long long)s->dim_v);
    for (int64_t b = 0; b < s->batch && n >= 0 && (size_t)n < size; b++)
        n += snprintf(buf + n, size - (size_t)n, "%s%lld/%lld", b ? "," : "", (long long)t->q_len[b],
                      (long long)t->used[b]);
    if (p && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " causal=%s window=%lld/%lld%s%s%s",
                 (p->causal >= 0 && p->causal <= 2) ? causal[p->causal] : "?", (long long)p->window_left,
                 (long long)p->window_right, p->alibi_slopes ? " alibi" : "", p->sinks ? " sinks" : "",
                 p->softcap > 0 ? " softcap" : "");
}

ts_spec ts_spec_of(const ts_layout_case *l, fa_dtype dt, int64_t dim, int64_t dim_v)
{
    ts_spec s = {0};
    s.dtype = dt;
    s.batch = l->batch, s.q_heads = l->q_heads, s.kv_heads = l->kv_heads, s.dim = dim, s.dim_v = dim_v;
    s.packed_q = l->packed_q, s.keys = l->keys, s.seqused = l->seqused, s.head_major = l->head_major;
    s.spare_rows = 3;
    return s;
}

fa_params ts_mask_params(const ts_mask_case *m)
{
    fa_params p = FA_PARAMS_INIT;
    p.causal = m->causal;
    p.window_left = m->left;
    p.window_right = m->right;
    return p;
}

int ts_forward_same_bytes_on(fa_context *const *ctx, int n, const fa_params *p, ts_batch *t, char *msg,
                             size_t size)
{
    cr_assert_eq(ts_forward(ctx[0], p, t), FA_OK, "%s", fa_last_error());
    unsigned char *out = kit_buf_snapshot(&t->buf[TS_OUT]), *lse = kit_buf_snapshot(&t->buf[TS_TENSORS]);
    int same = 1;
    for (int x = 1; x < n && same; x++) {
        ts_fill_canary(t);
        cr_assert_eq(ts_forward(ctx[x], p, t), FA_OK, "%s", fa_last_error());
        same = kit_buf_equals_snapshot(&t->buf[TS_OUT], out) &&
               kit_buf_equals_snapshot(&t->buf[TS_TENSORS], lse);
        if (!same) snprintf(msg, size, "context %d's out or lse bytes differ from context 0's", x);
    }
    free(out), free(lse);
    return same;
}
