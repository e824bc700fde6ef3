/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_mpi_backward: the key/value shards travel the ring again, their dK/dV accumulators one step
 * behind them: each rank computes its blocks' gradients for the shard in hand into step buffers,
 * adds them to the shard's accumulator when it arrives from the previous rank, and passes it on;
 * after P steps every accumulator is back on its own rank. dq is summed locally in ring order.
 * The shards travel in the caller's dtype; the accumulators (which travel too), the steps' sums and
 * dq are in the accumulation type, rounded once to the caller's dtype when written. Each block is one
 * fa_backward on the caller's q, out, dout and the shard as they are, writing gradients of the
 * accumulation type (for half precision the f32 values its half gradients would be rounded from), so
 * that each block's dq, dK and dV reach the sums unrounded and a bf16 block runs on the kernels of a
 * one-process call, the bf16 dot-product units included. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ring.h"

enum { TAG_KV = 200, TAG_ACC = 300, TAG_HOME = 400 };

/* Where the backward's buffers lie in the communicator's buffer. */
typedef struct {
    char *kv[2], *acc[2], *step, *home, *dk_tmp, *dv_tmp;
    double *sink_sums; /* every rank's sums for the sinks' gradient: P·Hq values, then the rank's Hq */
    char *dq[2], *dq_tmp[2], *lse[2]; /* per query segment */
} layout_of_buffers;

static size_t carve(const fa_ring *r, const fa_ring_segments *mine, int64_t widest, char *buf,
                    layout_of_buffers *b)
{
    const fa_ring_shape *s = &r->shapes[r->rank];
    const size_t acc = fa_ring_elem(r->acc);
    size_t shard = fa_ring_round(fa_ring_shard_bytes(r, widest, r->dtype)), at = 0;
    size_t sums = fa_ring_round(fa_ring_shard_bytes(r, widest, r->acc));
    size_t dk = fa_ring_round((size_t)(s->batch * s->kv_heads * widest * s->dim) * acc);
    size_t dv = fa_ring_round((size_t)(s->batch * s->kv_heads * widest * s->dim_v) * acc);
#define TAKE(field, bytes) (buf ? (b->field = buf + at) : NULL, at += (bytes))
    TAKE(kv[0], shard), TAKE(kv[1], shard), TAKE(acc[0], sums), TAKE(acc[1], sums), TAKE(step, sums);
    TAKE(home, sums);
    TAKE(dk_tmp, dk), TAKE(dv_tmp, dv);
    if (buf) b->sink_sums = (double *)(buf + at);
    at += fa_ring_round((size_t)((r->size + 1) * s->q_heads) * sizeof(double));
    for (int g = 0; g < mine->count; g++) {
        int64_t len = mine->seg[g].len;
        size_t dq = fa_ring_round((size_t)(s->batch * s->q_heads * len * s->dim) * acc);
        TAKE(dq[g], dq), TAKE(dq_tmp[g], dq),
            TAKE(lse[g], fa_ring_round((size_t)(s->batch * s->q_heads * len) * acc));
    }
#undef TAKE
    return at;
}

/* to += from, element-wise over two views of one shape (compact or strided) of the accumulation
 * type (float or double). */
static void add_into(const fa_tensor *to, const fa_tensor *from)
{
    for (int64_t b = 0; b < from->batch; b++)
        for (int64_t h = 0; h < from->heads; h++)
            for (int64_t i = 0; i < from->seq; i++) {
                int64_t t = b * to->stride_batch + h * to->stride_head + i * to->stride_seq;
                int64_t f = b * from->stride_batch + h * from->stride_head + i * from->stride_seq;
                if (from->dtype == FA_F64) {
                    double *x = (double *)to->data + t;
                    const double *y = (const double *)from->data + f;
                    for (int64_t d = 0; d < from->dim; d++) x[d] += y[d];
                } else {
                    float *x = (float *)to->data + t;
                    const float *y = (const float *)from->data + f;
                    for (int64_t d = 0; d < from->dim; d++) x[d] += y[d];
                }
            }
}

typedef struct {
    const fa_tensor *q, *out, *dout;
} query_side;

/* The gradients of the blocks of the rank's queries against the shard of rank src (at kv, in the
 * caller's dtype): dq into the segments' accumulators, dK and dV into the step buffer (zeroed here),
 * all in the accumulation type. */
static fa_status shard_gradients(const fa_ring *r, fa_context *ctx, const fa_ring_segments *mine,
                                 const layout_of_buffers *lb, const query_side *qs_in, int src, char *kv,
                                 fa_ring_transfer *pending, int npending, char *reason, size_t size)
{
    const fa_ring_shape *s = &r->shapes[r->rank];
    fa_dtype dt = r->acc;
    int64_t n_src = r->shapes[src].rows;
    fa_tensor k, v, dk_step, dv_step;
    fa_ring_shard_halves(r, kv, n_src, r->dtype, &k, &v);
    fa_ring_shard_halves(r, lb->step, n_src, r->acc, &dk_step, &dv_step);
    memset(lb->step, 0, fa_ring_shard_bytes(r, n_src, r->acc));
    fa_ring_segments theirs = fa_ring_segments_of(r, src);
    for (int a = 0; a < mine->count; a++)
        for (int c = 0; c < theirs.count; c++) {
            const fa_ring_segment *qs = &mine->seg[a], *ks = &theirs.seg[c];
            if (!fa_ring_block_visible(&r->p, qs, ks)) continue;
            fa_tensor bias;
            fa_params bp = fa_ring_block_params(r, qs, ks, &bias);
            fa_tensor q = fa_ring_rows(qs_in->q, qs->row, qs->len);
            fa_tensor out = fa_ring_rows(qs_in->out, qs->row, qs->len);
            fa_tensor dout = fa_ring_rows(qs_in->dout, qs->row, qs->len);
            fa_tensor kb = fa_ring_rows(&k, ks->row, ks->len), vb = fa_ring_rows(&v, ks->row, ks->len);
            fa_tensor dq = fa_ring_compact(lb->dq_tmp[a], dt, s->batch, s->q_heads, qs->len, s->dim);
            fa_tensor dk = fa_ring_compact(lb->dk_tmp, dt, s->batch, s->kv_heads, ks->len, s->dim);
            fa_tensor dv = fa_ring_compact(lb->dv_tmp, dt, s->batch, s->kv_heads, ks->len, s->dim_v);
            fa_status st = fa_backward(ctx, &bp, &q, &kb, &vb, &out, &dout, lb->lse[a], &dq, &dk, &dv);
            if (st != FA_OK) {
                snprintf(reason, size, "%s", fa_last_error());
                return st;
            }
            fa_tensor dq_acc = fa_ring_compact(lb->dq[a], dt, s->batch, s->q_heads, qs->len, s->dim);
            fa_tensor dk_rows = fa_ring_rows(&dk_step, ks->row, ks->len);
            fa_tensor dv_rows = fa_ring_rows(&dv_step, ks->row, ks->len);
            add_into(&dq_acc, &dq);
            add_into(&dk_rows, &dk);
            add_into(&dv_rows, &dv);
            fa_ring_progress(pending, npending);
        }
    return FA_OK;
}

/* Bytes of each of out's and dout's rows held in the accumulation type at a time by sink_gradient:
 * at least one row (Dv <= FA_MAX_HEAD_DIM doubles). */
enum { SINK_ROWS_BYTES = 8192 };

/* Rows [i0, i0 + len) of batch entry b and head h of t, as a [1][1][len][dim] view. */
static fa_tensor head_rows(const fa_tensor *t, int64_t b, int64_t h, int64_t i0, int64_t len)
{
    fa_tensor v = *t;
    v.data = (char *)t->data + (b * t->stride_batch + h * t->stride_head + i0 * t->stride_seq) *
                                   (int64_t)fa_ring_elem(t->dtype);
    v.batch = v.heads = 1;
    v.seq = len;
    return v;
}

/* The sinks' gradient over the whole sequence: each rank's sum over its rows of
 * -exp(sink - lse)·rowsum(dout ∘ out), in double, then the ranks' sums added in rank order. out and
 * dout are read as the caller gave them (half precision: widened exactly by fa_convert), a few rows
 * at a time. */
static fa_status sink_gradient(fa_ring *r, const fa_tensor *out, const fa_tensor *dout, const void *lse,
                               double *sums)
{
    const fa_ring_shape *s = &r->shapes[r->rank];
    double *all = sums, *mine = sums + r->size * s->q_heads;
    _Alignas(8) unsigned char rows_of[2][SINK_ROWS_BYTES];
    const int64_t chunk = SINK_ROWS_BYTES / (s->dim_v * (int64_t)fa_ring_elem(r->acc));
    fa_status converted = FA_OK;
    for (int64_t h = 0; h < s->q_heads; h++) {
        double sum = 0.0, sink = (double)r->p.sinks[h];
        for (int64_t b = 0; b < s->batch; b++)
            for (int64_t i0 = 0; i0 < s->rows; i0 += chunk) {
                const int64_t len = s->rows - i0 < chunk ? s->rows - i0 : chunk;
                fa_tensor o_rows = head_rows(out, b, h, i0, len), g_rows = head_rows(dout, b, h, i0, len);
                fa_tensor o_acc = fa_tensor_bhsd(rows_of[0], r->acc, 1, 1, len, s->dim_v);
                fa_tensor g_acc = fa_tensor_bhsd(rows_of[1], r->acc, 1, 1, len, s->dim_v);
                if (converted == FA_OK && (converted = fa_convert(&o_acc, &o_rows)) == FA_OK)
                    converted = fa_convert(&g_acc, &g_rows);
                if (converted != FA_OK) continue; /* not seen: fa_backward_check accepted out and dout */
                for (int64_t i = 0; i < len; i++) {
                    double l = fa_ring_load(lse, (b * s->q_heads + h) * s->rows + i0 + i, r->acc);
                    double delta = 0.0;
                    for (int64_t y = 0; y < s->dim_v; y++)
                        delta += fa_ring_load(rows_of[0], i * s->dim_v + y, r->acc) *
                                 fa_ring_load(rows_of[1], i * s->dim_v + y, r->acc);
                    sum -= exp(sink - l) * delta;
                }
            }
        mine[h] = sum;
    }
    /* every rank takes part in the gather, whatever happened above, so that none waits forever */
    int rc = MPI_Allgather(mine, (int)s->q_heads, MPI_DOUBLE, all, (int)s->q_heads, MPI_DOUBLE, r->comm);
    if (rc == MPI_SUCCESS && converted == FA_OK)
        for (int64_t h = 0; h < s->q_heads; h++) {
            double sum = 0.0;
            for (int x = 0; x < r->size; x++) sum += all[x * s->q_heads + h];
            r->p.dsinks[h] = (float)sum;
        }
    return rc != MPI_SUCCESS ? FA_ERR_RUNTIME : converted;
}

fa_status fa_mpi_backward(MPI_Comm comm, fa_mpi_layout layout, fa_context *ctx, const fa_params *p,
                          const fa_tensor *q, const fa_tensor *k, const fa_tensor *v, const fa_tensor *out,
                          const fa_tensor *dout, const void *lse, const fa_tensor *dq, const fa_tensor *dk,
                          const fa_tensor *dv)
{
    static const char call[] = "fa_mpi_backward";
    fa_ring r;
    fa_status st = fa_ring_open(&r, call, comm, layout, p, q, k, v);
    if (st != FA_OK) return st;
    char reason[400] = "";
    st = fa_ring_check(&r, q, k, reason, sizeof reason);
    fa_ring_segments mine = fa_ring_segments_of(&r, r.rank);
    if (st == FA_OK && r.p.dbias) {
        st = FA_ERR_UNSUPPORTED;
        snprintf(reason, sizeof reason,
                 "p.dbias: the bias's gradient is not supported across ranks in this version");
    }
    if (st == FA_OK) { /* the rank's own shard as fa_backward would see it */
        fa_tensor bias;
        fa_params own = fa_ring_own_params(&r, q, &bias);
        st = fa_backward_check(&own, q, k, v, out, dout, lse, dq, dk, dv);
        if (st != FA_OK) snprintf(reason, sizeof reason, "%s", fa_last_error());
        if (st == FA_OK) st = fa_ring_refuse_mixed(q, k, reason, sizeof reason);
    }
    const fa_ring_shape *s = &r.shapes[r.rank];
    int64_t widest = fa_ring_widest(&r);
    layout_of_buffers lb;
    memset(&lb, 0, sizeof lb);
    char *buf = NULL;
    if (st == FA_OK) {
        buf = fa_ring_buffer(&r, carve(&r, &mine, widest, NULL, NULL));
        if (!buf) st = FA_ERR_NOMEM, snprintf(reason, sizeof reason, "no memory for the shard buffers");
    }
    if ((st = fa_ring_agree(&r, st, reason)) != FA_OK) return st;

    carve(&r, &mine, widest, buf, &lb);
    const fa_dtype dt = r.acc;
    const size_t acc_elem = fa_ring_elem(r.acc);
    for (int g = 0; g < mine.count; g++) { /* dq starts at 0; each segment's lse rows, contiguous */
        const fa_ring_segment *seg = &mine.seg[g];
        memset(lb.dq[g], 0, (size_t)(s->batch * s->q_heads * seg->len * s->dim) * acc_elem);
        for (int64_t bh = 0; bh < s->batch * s->q_heads; bh++)
            memcpy(lb.lse[g] + (size_t)(bh * seg->len) * acc_elem,
                   (const char *)lse + (size_t)(bh * s->rows + seg->row) * acc_elem,
                   (size_t)seg->len * acc_elem);
    }
    fa_status work = FA_OK;
    { /* the rank's own shard, compact, in the caller's dtype (fa_convert of one dtype copies) */
        fa_tensor kc, vc;
        fa_ring_shard_halves(&r, lb.kv[0], s->rows, r.dtype, &kc, &vc);
        if ((work = fa_convert(&kc, k)) != FA_OK || (work = fa_convert(&vc, v)) != FA_OK)
            snprintf(reason, sizeof reason, "%s", fa_last_error());
    }
    const query_side side = {q, out, dout};
    int next = (r.rank + 1) % r.size, prev = (r.rank + r.size - 1) % r.size, cur = 0;
    fa_ring_transfer acc_send = {{MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
    int in_flight = -1; /* the accumulator buffer acc_send is sending from, or -1 */
#define FAIL_ONCE(st_, ...)                                                            \
    do {                                                                               \
        if (work == FA_OK) work = (st_), snprintf(reason, sizeof reason, __VA_ARGS__); \
    } while (0)
    /* A shard travels only as far as the last rank that can see it (fa_ring_reach); its accumulator
     * travels with it and, from there, goes straight home. The rank's own comes from that rank. */
    int my_reach = fa_ring_reach(&r, r.rank);
    fa_ring_transfer home_recv = {{MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
    if (my_reach > 0 && fa_ring_post(&r, &home_recv, lb.home, fa_ring_shard_bytes(&r, s->rows, r.acc),
                                     (r.rank + my_reach) % r.size, TAG_HOME, 0) != FA_OK)
        FAIL_ONCE(FA_ERR_RUNTIME, "posting the returning accumulator's transfer failed");
    for (int step = 0; step < r.size; step++) {
        int src = (r.rank - step + r.size) % r.size, incoming = (src + r.size - 1) % r.size;
        int reach = fa_ring_reach(&r, src), holds = step <= reach;
        size_t src_bytes = fa_ring_shard_bytes(&r, r.shapes[src].rows, r.dtype); /* the shard */
        size_t sum_bytes = fa_ring_shard_bytes(&r, r.shapes[src].rows, r.acc);   /* its accumulator */
        /* the accumulator arrives in the buffer that is not still leaving with the last one sent */
        int mine_buf = in_flight == 0 ? 1 : 0;
        char *acc = lb.acc[mine_buf];
        fa_ring_transfer tx[3];
        int posted = 0;
        /* the next shard travels while this one is computed */
        if (step + 1 <= fa_ring_reach(&r, incoming) &&
            fa_ring_post(&r, &tx[posted++], lb.kv[1 - cur],
                         fa_ring_shard_bytes(&r, r.shapes[incoming].rows, r.dtype), prev, TAG_KV, 0) != FA_OK)
            FAIL_ONCE(FA_ERR_RUNTIME, "posting a shard transfer failed");
        if (holds && step < reach &&
            fa_ring_post(&r, &tx[posted++], lb.kv[cur], src_bytes, next, TAG_KV, 1) != FA_OK)
            FAIL_ONCE(FA_ERR_RUNTIME, "posting a shard transfer failed");
        if (holds && step > 0 && fa_ring_post(&r, &tx[posted++], acc, sum_bytes, prev, TAG_ACC, 0) != FA_OK)
            FAIL_ONCE(FA_ERR_RUNTIME, "posting the accumulator transfer failed");
        /* after a failure the rank still passes shards and accumulators on: no other rank waits forever */
        if (holds && work == FA_OK) {
            fa_status st2 = shard_gradients(&r, ctx, &mine, &lb, &side, src, lb.kv[cur], tx, posted, reason,
                                            sizeof reason);
            if (st2 != FA_OK) work = st2;
        } else if (holds) {
            memset(lb.step, 0, sum_bytes);
        }
        for (int x = 0; x < posted; x++)
            if (fa_ring_wait(&tx[x]) != FA_OK)
                FAIL_ONCE(FA_ERR_RUNTIME, "a shard or accumulator transfer failed");
        if (holds) {
            /* the shard's accumulator: this rank's step gradients, after those of the ranks before it */
            fa_tensor ak, av, sk, sv;
            fa_ring_shard_halves(&r, acc, r.shapes[src].rows, r.acc, &ak, &av);
            fa_ring_shard_halves(&r, lb.step, r.shapes[src].rows, r.acc, &sk, &sv);
            if (step == 0)
                memcpy(step < reach ? acc : lb.home, lb.step, sum_bytes); /* reach 0: it is home already */
            else
                add_into(&ak, &sk), add_into(&av, &sv);
            /* at most one accumulator in flight: the next arrives in the other buffer */
            if (fa_ring_wait(&acc_send) != FA_OK) FAIL_ONCE(FA_ERR_RUNTIME, "an accumulator transfer failed");
            in_flight = -1;
            if (step < reach) { /* on to the next rank, which sees the shard or passes it on */
                if (fa_ring_post(&r, &acc_send, acc, sum_bytes, next, TAG_ACC, 1) != FA_OK)
                    FAIL_ONCE(FA_ERR_RUNTIME, "posting the accumulator transfer failed");
                in_flight = mine_buf;
            } else if (step > 0) { /* the last rank that sees it: home */
                if (fa_ring_post(&r, &acc_send, acc, sum_bytes, src, TAG_HOME, 1) != FA_OK)
                    FAIL_ONCE(FA_ERR_RUNTIME, "posting the returning accumulator's transfer failed");
                in_flight = mine_buf;
            }
        }
        cur = 1 - cur;
    }
    if (fa_ring_wait(&acc_send) != FA_OK || fa_ring_wait(&home_recv) != FA_OK)
        FAIL_ONCE(FA_ERR_RUNTIME, "the returning accumulator's transfer failed");
    char *home = lb.home;
#undef FAIL_ONCE
    if ((st = fa_ring_agree(&r, work, reason)) != FA_OK) return st;
    if (r.p.sinks && r.p.dsinks && (st = sink_gradient(&r, out, dout, lse, lb.sink_sums)) != FA_OK)
        return fa_ring_fail(st, "%s: %s", call,
                            st == FA_ERR_RUNTIME ? "MPI_Allgather of the sinks' gradient sums failed"
                                                 : fa_last_error());
    /* the sums into the caller's gradients: copied, or (half precision) each rounded once. fa_convert
     * cannot refuse them (fa_backward_check accepted dq, dk and dv), but says so if it did */
    for (int g = 0; g < mine.count && st == FA_OK; g++) {
        const fa_ring_segment *seg = &mine.seg[g];
        fa_tensor from = fa_ring_compact(lb.dq[g], dt, s->batch, s->q_heads, seg->len, s->dim);
        fa_tensor to = fa_ring_rows(dq, seg->row, seg->len);
        st = fa_convert(&to, &from);
    }
    fa_tensor hk, hv;
    fa_ring_shard_halves(&r, home, s->rows, r.acc, &hk, &hv);
    if (st == FA_OK && (st = fa_convert(dk, &hk)) == FA_OK) st = fa_convert(dv, &hv);
    return st == FA_OK ? FA_OK : fa_ring_fail(st, "%s: %s", call, fa_last_error());
}
