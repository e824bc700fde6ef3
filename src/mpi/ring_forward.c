/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_mpi_forward: the key/value shards travel the ring; every rank attends its queries to each
 * shard it can see and merges the block results into running rows, in ring order. The shards
 * travel in the caller's dtype; the running rows, the blocks' results and their merge are in the
 * accumulation type, rounded once to the caller's dtype when they are written. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ring.h"

enum { TAG_KV = 100 };

/* One segment of the rank's queries: the running rows (two, so a merge never writes its input)
 * and one block's partial result, each compact [B][Hq][len][Dv] with lse [B][Hq][len]. */
typedef struct {
    fa_tensor out[2], part;
    void *lse[2], *part_lse;
    int cur;
} segment_rows;

/* Carves the segments' rows out of buf after the two shard buffers; returns the bytes used (buf
 * NULL: only counts). */
static size_t carve(const fa_ring *r, const fa_ring_segments *mine, size_t kv_bytes, char *buf,
                    segment_rows *rows)
{
    const fa_ring_shape *s = &r->shapes[r->rank];
    const size_t acc = fa_ring_elem(r->acc);
    size_t at = 2 * fa_ring_round(kv_bytes);
    for (int g = 0; g < mine->count; g++) {
        int64_t len = mine->seg[g].len;
        size_t out_bytes = fa_ring_round((size_t)(s->batch * s->q_heads * len * s->dim_v) * acc);
        size_t lse_bytes = fa_ring_round((size_t)(s->batch * s->q_heads * len) * acc);
        for (int x = 0; x < 3; x++) {
            fa_tensor t = fa_ring_compact(buf ? buf + at : NULL, r->acc, s->batch, s->q_heads, len, s->dim_v);
            void *l = buf ? buf + at + out_bytes : NULL;
            if (buf && x < 2) rows[g].out[x] = t, rows[g].lse[x] = l;
            if (buf && x == 2) rows[g].part = t, rows[g].part_lse = l;
            at += out_bytes + lse_bytes;
        }
        if (buf) rows[g].cur = 0;
    }
    return at;
}

/* No key seen yet: out 0, lse -inf (a merge then takes the first block's rows as they are). */
static void start_rows(segment_rows *g, fa_dtype acc)
{
    int64_t rows = g->out[0].batch * g->out[0].heads * g->out[0].seq;
    memset(g->out[0].data, 0, (size_t)(rows * g->out[0].dim) * fa_ring_elem(acc));
    for (int64_t i = 0; i < rows; i++) fa_ring_store(g->lse[0], i, acc, -INFINITY);
}

/* Writes a segment's merged rows to the caller's out and lse, with the sink of each head entering
 * once: lse' = log(e^lse + e^sink) (the larger of the two subtracted first), out' = out·e^(lse - lse'),
 * made in the accumulation type in place (the rows are not read again). out then gets those values
 * through fa_convert: copied, or (half precision) each rounded once, as fa_forward rounds its out. */
static fa_status write_rows(const fa_ring *r, const segment_rows *g, const fa_ring_segment *seg,
                            const fa_tensor *out, void *lse)
{
    const fa_tensor *src = &g->out[g->cur];
    const void *src_lse = g->lse[g->cur];
    const int64_t n = r->shapes[r->rank].rows;
    for (int64_t b = 0; b < src->batch; b++)
        for (int64_t h = 0; h < src->heads; h++)
            for (int64_t i = 0; i < src->seq; i++) {
                int64_t at = (b * src->heads + h) * src->seq + i;
                double l = fa_ring_load(src_lse, at, r->acc);
                if (r->p.sinks) {
                    double sink = (double)r->p.sinks[h], big = l > sink ? l : sink;
                    double total = big + log(exp(l - big) + exp(sink - big));
                    double w = l == -INFINITY ? 0.0 : exp(l - total);
                    l = total;
                    for (int64_t y = 0; y < src->dim; y++)
                        fa_ring_store(src->data, at * src->dim + y, r->acc,
                                      fa_ring_load(src->data, at * src->dim + y, r->acc) * w);
                }
                if (lse) fa_ring_store(lse, (b * src->heads + h) * n + seg->row + i, r->acc, l);
            }
    fa_tensor dst = fa_ring_rows(out, seg->row, seg->len);
    return fa_convert(&dst, src);
}

/* Attends the rank's query segments (q: the caller's) to the shard of rank src (K then V, compact,
 * in the caller's dtype, at kv) and merges each visible block into the running rows. Each block is
 * one fa_forward whose out is the accumulation type (for half q, k, v the f32 rows the half call
 * would round: its kernels, the bf16 dot-product units included), as it must be to merge.
 * FA_OK or the first failure, with its message in reason. */
static fa_status attend_shard(const fa_ring *r, fa_context *ctx, const fa_ring_segments *mine,
                              segment_rows *rows, int src, void *kv, const fa_tensor *q,
                              fa_ring_transfer *pending, int npending, char *reason, size_t size)
{
    int64_t n_src = r->shapes[src].rows;
    fa_tensor k, v;
    fa_ring_shard_halves(r, kv, n_src, r->dtype, &k, &v);
    fa_ring_segments theirs = fa_ring_segments_of(r, src);
    for (int a = 0; a < mine->count; a++)
        for (int c = 0; c < theirs.count; c++) {
            const fa_ring_segment *qs = &mine->seg[a], *ks = &theirs.seg[c];
            if (!fa_ring_block_visible(&r->p, qs, ks)) continue;
            fa_tensor bias, qv = fa_ring_rows(q, qs->row, qs->len);
            fa_tensor kv_k = fa_ring_rows(&k, ks->row, ks->len), kv_v = fa_ring_rows(&v, ks->row, ks->len);
            fa_params bp = fa_ring_block_params(r, qs, ks, &bias);
            segment_rows *g = &rows[a];
            fa_status st = fa_forward(ctx, &bp, &qv, &kv_k, &kv_v, &g->part, g->part_lse);
            if (st == FA_OK) {
                const fa_tensor parts[2] = {g->out[g->cur], g->part};
                const void *lses[2] = {g->lse[g->cur], g->part_lse};
                st = fa_merge(ctx, 2, parts, lses, &g->out[1 - g->cur], g->lse[1 - g->cur]);
            }
            if (st != FA_OK) {
                snprintf(reason, size, "%s", fa_last_error());
                return st;
            }
            g->cur = 1 - g->cur;
            fa_ring_progress(pending, npending);
        }
    return FA_OK;
}

fa_status fa_mpi_forward(MPI_Comm comm, fa_mpi_layout layout, fa_context *ctx, const fa_params *p,
                         const fa_tensor *q, const fa_tensor *k, const fa_tensor *v, const fa_tensor *out,
                         void *lse)
{
    static const char call[] = "fa_mpi_forward";
    fa_ring r;
    fa_status st = fa_ring_open(&r, call, comm, layout, p, q, k, v);
    if (st != FA_OK) return st;
    char reason[400] = "";
    st = fa_ring_check(&r, q, k, reason, sizeof reason);
    fa_ring_segments mine = fa_ring_segments_of(&r, r.rank);
    if (st == FA_OK) { /* the rank's own shard as fa_forward would see it */
        fa_tensor bias;
        fa_params own = fa_ring_own_params(&r, q, &bias);
        st = fa_forward_check(&own, q, k, v, out, lse);
        if (st != FA_OK) snprintf(reason, sizeof reason, "%s", fa_last_error());
        if (st == FA_OK) st = fa_ring_refuse_mixed(q, k, reason, sizeof reason);
    }
    const fa_ring_shape *s = &r.shapes[r.rank];
    int64_t widest = fa_ring_widest(&r);
    size_t kv_bytes = st == FA_OK ? fa_ring_shard_bytes(&r, widest, r.dtype) : 0;
    segment_rows rows[2];
    char *buf = NULL;
    if (st == FA_OK) {
        buf = fa_ring_buffer(&r, carve(&r, &mine, kv_bytes, NULL, NULL));
        if (!buf) st = FA_ERR_NOMEM, snprintf(reason, sizeof reason, "no memory for the shard buffers");
    }
    if ((st = fa_ring_agree(&r, st, reason)) != FA_OK) return st;

    carve(&r, &mine, kv_bytes, buf, rows);
    for (int g = 0; g < mine.count; g++) start_rows(&rows[g], r.acc);
    char *kv[2] = {buf, buf + fa_ring_round(kv_bytes)};
    fa_status work = FA_OK;
    { /* the rank's own shard, compact, in the caller's dtype (fa_convert of one dtype copies) */
        fa_tensor kc, vc;
        fa_ring_shard_halves(&r, kv[0], s->rows, r.dtype, &kc, &vc);
        if ((work = fa_convert(&kc, k)) != FA_OK || (work = fa_convert(&vc, v)) != FA_OK)
            snprintf(reason, sizeof reason, "%s", fa_last_error());
    }
    int next = (r.rank + 1) % r.size, prev = (r.rank + r.size - 1) % r.size, cur = 0;
    for (int step = 0; step < r.size; step++) {
        /* At step s the rank holds the shard of rank r - s, if it travels that far (fa_ring_reach):
         * a shard stops at the last rank that can see it, so no other rank is sent it. */
        int src = (r.rank - step + r.size) % r.size, incoming = (src + r.size - 1) % r.size;
        int reach = fa_ring_reach(&r, src), holds = step <= reach;
        fa_ring_transfer tx[2];
        int posted = 0;
        /* the next shard travels while this one is computed */
        if (step + 1 <= fa_ring_reach(&r, incoming) &&
            fa_ring_post(&r, &tx[posted++], kv[1 - cur],
                         fa_ring_shard_bytes(&r, r.shapes[incoming].rows, r.dtype), prev, TAG_KV,
                         0) != FA_OK &&
            work == FA_OK)
            work = FA_ERR_RUNTIME, snprintf(reason, sizeof reason, "posting a shard transfer failed");
        if (holds && step < reach &&
            fa_ring_post(&r, &tx[posted++], kv[cur], fa_ring_shard_bytes(&r, r.shapes[src].rows, r.dtype),
                         next, TAG_KV, 1) != FA_OK &&
            work == FA_OK)
            work = FA_ERR_RUNTIME, snprintf(reason, sizeof reason, "posting a shard transfer failed");
        /* after a failure the rank still passes the shards on, so that no other rank waits forever */
        if (holds && work == FA_OK)
            work = attend_shard(&r, ctx, &mine, rows, src, kv[cur], q, tx, posted, reason, sizeof reason);
        for (int x = 0; x < posted; x++)
            if (fa_ring_wait(&tx[x]) != FA_OK && work == FA_OK)
                work = FA_ERR_RUNTIME, snprintf(reason, sizeof reason, "a shard transfer failed");
        cur = 1 - cur;
    }
    if ((st = fa_ring_agree(&r, work, reason)) != FA_OK) return st;
    /* fa_convert cannot refuse out here (fa_forward_check accepted it), but says so if it did */
    for (int g = 0; g < mine.count; g++)
        if (mine.seg[g].len > 0 && (st = write_rows(&r, &rows[g], &mine.seg[g], out, lse)) != FA_OK)
            return fa_ring_fail(st, "%s: %s", call, fa_last_error());
    return FA_OK;
}
