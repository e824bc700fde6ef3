/* SPDX-License-Identifier: BSD-3-Clause */
/* Batches of sequences in the fuzz target (fuzz_input.h, "Sequences"): the shapes of the views, the
 * arrays of fa_seqs written into the pool from the input (then corrupted or misplaced as it asks),
 * and the checks of a call that succeeded: each sequence's rows are those of the dense call of
 * that sequence alone (fuzz_values.c checks them against the float64 softmax), its gradients
 * likewise, dsinks sums every sequence's rows, and the rows of no sequence are left as they were
 * (out, lse and dq after the last packed query; dk and dv after the last packed key and beyond
 * each sequence's keys in use). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_case.h"

static const int q_like[4] = {FZ_Q, FZ_OUT, FZ_DOUT, FZ_DQ}, k_like[4] = {FZ_K, FZ_V, FZ_DK, FZ_DV};

int fz_seqs_wanted(const fz_input *in, int64_t *S)
{
    if (in->seqs.seqs < 0x80) return 0;
    if (S) *S = in->seqs.seqs_count < 0xE0 ? in->seqs.seqs_count % 9 : 2;
    return 1;
}

static int64_t view_dim(const fz_case *c, int i)
{
    return i == FZ_Q || i == FZ_DQ || i == FZ_K || i == FZ_DK ? c->D : c->Dv;
}

/* Keys a sequence can hold: its packed span, the dense Nk, or pages_per_seq pages. */
static int64_t capacity_of(const fz_case *c, int64_t b)
{
    const fz_seqs_case *sq = &c->sq;
    if (sq->keys == FZ_KEYS_PACKED) return sq->k_len[b];
    if (sq->keys == FZ_KEYS_DENSE) return c->Nk;
    return sq->pps >= 0 && sq->pps <= 6 ? sq->pps * sq->page_size : 0;
}

static int64_t rows_of_q(const fz_case *c, int64_t b)
{
    return c->sq.packed_q ? c->sq.q_len[b] : c->Nq;
}

void fz_seqs_shapes(fz_case *c, int64_t shape[FZ_ALL_VIEWS][4])
{
    fz_seqs_case *sq = &c->sq;
    const fz_seqs_bytes *sb = &c->in.seqs;
    static const int64_t pps_special[4] = {-1, INT64_MIN, (int64_t)1 << 61, INT64_MAX};
    sq->on = 1;
    sq->packed_q = sb->seqs & 1;
    sq->keys = ((sb->seqs >> 1) & 3) % 3;
    sq->used_on = (sb->seqs >> 3) & 1;
    sq->S = c->B;
    sq->page_size = 1 + sb->page_size % 16;
    sq->pool_pages = 1 + sb->pool_pages % 12;
    sq->pps = sb->pages_per_seq < 0xF0 ? sb->pages_per_seq % 7 : pps_special[sb->pages_per_seq % 4];
    for (int64_t b = 0; b < sq->S; b++) {
        sq->q_len[b] = c->in.seq[b].q_len % 20;
        sq->k_len[b] = c->in.seq[b].k_len % 40;
    }
    /* Cut the larger side until one call stays within the work and memory budgets. */
    for (int round = 0; round < 64; round++) {
        double pairs = 0.0;
        int64_t qmax = 0, kmax = 0, rows_q = 0, rows_k = 0;
        for (int64_t b = 0; b < sq->S; b++) {
            pairs += (double)rows_of_q(c, b) * (double)capacity_of(c, b);
            if (rows_of_q(c, b) > qmax) qmax = rows_of_q(c, b);
            if (capacity_of(c, b) > kmax) kmax = capacity_of(c, b);
            rows_q += sq->q_len[b];
            rows_k += sq->k_len[b];
        }
        const int64_t dmax = c->D > c->Dv ? c->D : c->Dv;
        const int64_t q_elems = (sq->packed_q ? rows_q + 3 : sq->S * c->Nq) * c->Hq * dmax;
        const int64_t k_elems = (sq->keys == FZ_KEYS_PACKED  ? rows_k + 3
                                 : sq->keys == FZ_KEYS_DENSE ? sq->S * c->Nk
                                                             : sq->pool_pages * sq->page_size) *
                                c->Hkv * dmax;
        if (pairs * (double)c->Hq * (double)(c->D + c->Dv) <= FZ_WORK_MAX && q_elems <= FZ_TENSOR_MAX &&
            k_elems <= FZ_TENSOR_MAX)
            break;
        if (kmax >= qmax && kmax > 1) {
            for (int64_t b = 0; b < sq->S; b++) sq->k_len[b] = (sq->k_len[b] + 1) / 2;
            if (sq->keys == FZ_KEYS_DENSE) c->Nk = (c->Nk + 1) / 2;
            if (sq->keys == FZ_KEYS_PAGED && sq->page_size > 1) sq->page_size = (sq->page_size + 1) / 2;
        } else if (qmax > 1) {
            for (int64_t b = 0; b < sq->S; b++) sq->q_len[b] = (sq->q_len[b] + 1) / 2;
            c->Nq = (c->Nq + 1) / 2;
        } else if (dmax > 1) {
            c->D = (c->D + 1) / 2, c->Dv = (c->Dv + 1) / 2;
        } else
            break;
    }
    sq->rows_q = sq->rows_k = c->in.seqs.spare_rows % 4;
    for (int64_t b = 0; b < sq->S; b++) sq->rows_q += sq->q_len[b], sq->rows_k += sq->k_len[b];
    for (int i = 0; i < 4; i++) {
        int64_t *sq_shape = shape[q_like[i]], *sk_shape = shape[k_like[i]];
        sq_shape[0] = sq->packed_q ? 1 : sq->S, sq_shape[1] = c->Hq;
        sq_shape[2] = sq->packed_q ? sq->rows_q : c->Nq, sq_shape[3] = view_dim(c, q_like[i]);
        sk_shape[0] = sq->keys == FZ_KEYS_PACKED ? 1 : sq->keys == FZ_KEYS_DENSE ? sq->S : sq->pool_pages;
        sk_shape[1] = c->Hkv;
        sk_shape[2] = sq->keys == FZ_KEYS_PACKED  ? sq->rows_k
                      : sq->keys == FZ_KEYS_DENSE ? c->Nk
                                                  : sq->page_size;
        sk_shape[3] = view_dim(c, k_like[i]);
    }
    /* a bias over the tensors as they are (refused as unsupported with sequences, not for its shape) */
    const int bcast = c->in.extras & 7;
    shape[FZ_BIAS][0] = bcast & 1 ? 1 : shape[FZ_Q][0];
    shape[FZ_BIAS][1] = bcast & 2 ? 1 : c->Hq;
    shape[FZ_BIAS][2] = bcast & 4 ? 1 : shape[FZ_Q][2];
    shape[FZ_BIAS][3] = shape[FZ_K][2];
}

/* Which arrays the input gives, and their entries. */
static void array_lengths(const fz_case *c, int64_t len[4])
{
    const fz_seqs_case *sq = &c->sq;
    const int64_t S = sq->S, pps = sq->pps >= 0 && sq->pps <= 6 ? sq->pps : 1;
    len[0] = sq->packed_q ? S + 1 : 0;
    len[1] = sq->keys == FZ_KEYS_PACKED || (sq->keys == FZ_KEYS_PAGED && (c->in.seqs.seqs & 16)) ? S + 1 : 0;
    len[2] = sq->used_on ? S : 0;
    len[3] = sq->keys == FZ_KEYS_PAGED ? S * pps : 0;
}

int64_t fz_seqs_regions(fz_case *c, int64_t cursor, int64_t gap)
{
    fz_seqs_case *sq = &c->sq;
    if (!sq->on) return cursor;
    int64_t len[4];
    array_lengths(c, len);
    const int given[4] = {sq->packed_q, len[1] > 0, sq->used_on, sq->keys == FZ_KEYS_PAGED};
    for (int which = 0; which < 4; which++) {
        sq->len[which] = len[which];
        sq->base[which] = -1;
        if (!given[which]) continue;
        cursor += gap;
        cursor = (cursor + 7) / 8 * 8;
        sq->base[which] = cursor;
        /* room for one entry at least (a valid address even for no entry) and for a move by 7 bytes */
        cursor += (len[which] > 0 ? len[which] : 1) * (int64_t)fz_seqs_elem(which) + 8;
    }
    return cursor;
}

/* Offsets from 0 by the spans. */
static void offsets(int64_t *cu, const int64_t *span, int64_t S)
{
    cu[0] = 0;
    for (int64_t b = 0; b < S; b++) cu[b + 1] = cu[b] + span[b];
}

static void put(unsigned char *at, int which, int64_t x)
{
    if (which == 3) {
        int32_t v = x > INT32_MAX ? INT32_MAX : x < INT32_MIN ? INT32_MIN : (int32_t)x;
        memcpy(at, &v, sizeof v);
    } else
        memcpy(at, &x, sizeof x);
}

void fz_seqs_write(fz_case *c)
{
    fz_seqs_case *sq = &c->sq;
    if (!sq->on) return;
    const fz_seqs_bytes *sb = &c->in.seqs;
    const int64_t S = sq->S;
    int64_t values[4][FZ_TABLE_MAX + FZ_SEQ_MAX + 1];
    offsets(values[0], sq->q_len, S);
    offsets(values[1], sq->k_len, S);
    for (int64_t b = 0; b < S; b++) values[2][b] = c->in.seq[b].used % (capacity_of(c, b) + 1);
    for (int64_t j = 0; j < sq->len[3]; j++) {
        const unsigned entry = j < FZ_TABLE_MAX ? c->in.table[j] : 0u;
        values[3][j] = entry < 0xF0 ? (int64_t)(entry % (unsigned)sq->pool_pages) : -1;
    }
    if (sb->corrupt >= 0xC0) { /* one element of one array: any value */
        const int which = sb->corrupt % 4;
        if (sq->len[which] > 0) {
            int64_t x = sb->corrupt_scale >= 0xF0
                            ? ((sb->corrupt_scale & 1) ? INT64_MAX : INT64_MIN)
                            : fz_sat_mul(sb->corrupt_value, (int64_t)1 << (16 * (sb->corrupt_scale % 4)));
            values[which][sb->corrupt_index % sq->len[which]] = x;
        }
    }
    const void *ptr[4] = {NULL, NULL, NULL, NULL};
    for (int which = 0; which < 4; which++) {
        if (sq->base[which] < 0) continue;
        unsigned char *at = c->pool + sq->base[which];
        for (int64_t j = 0; j < sq->len[which]; j++)
            put(at + j * (int64_t)fz_seqs_elem(which), which, values[which][j]);
        ptr[which] = at;
    }
    if (sb->arrays_place >= 0xC0) { /* one array misplaced */
        const int which = (sb->arrays_place >> 4) % 4;
        const size_t bytes = (size_t)sq->len[which] * fz_seqs_elem(which);
        if (ptr[which]) switch (sb->arrays_place % 6) {
            case 0: ptr[which] = NULL, sq->base[which] = -1; break;
            case 1: { /* values kept, 1..7 bytes in: misaligned */
                unsigned char *at = c->pool + sq->base[which];
                const int64_t skew = 1 + (sb->arrays_shift & 0x7fff) % 7;
                memmove(at + skew, at, bytes);
                ptr[which] = at + skew, sq->base[which] += skew;
                break;
            }
            case 2:
            case 3: { /* copied over a view's storage or the lse (inputs may hold it; outputs may not) */
                const int view = (sb->arrays_shift & 0x7fff) % 8;
                int64_t at = sb->arrays_place % 6 == 2 ? (c->layout[view] == L_NULL ? -1 : c->base[view])
                                                       : c->lse_base;
                if (at < 0 || bytes > c->pool_bytes) break;
                if (at + (int64_t)bytes > (int64_t)c->pool_bytes) at = (int64_t)(c->pool_bytes - bytes);
                at -= at % 8;
                memmove(c->pool + at, ptr[which], bytes);
                ptr[which] = c->pool + at, sq->base[which] = at;
                break;
            }
            case 4: /* at the top of the address space: its entries wrap */
                ptr[which] = (const void *)(uintptr_t)(UINTPTR_MAX - 7), sq->base[which] = -2;
                break;
            default: break;
            }
    }
    static const int64_t batch_special[8] = {
        3, 1, 0, -1, INT64_MIN, (int64_t)1 << 62, INT64_MAX, (int64_t)1 << 31};
    sq->batch = S;
    if (sb->seqs_count >= 0xE0) {
        /* a count the arrays do not cover only where a tensor's batch axis pins the count */
        const int pinned = !sq->packed_q || sq->keys == FZ_KEYS_DENSE;
        const int64_t x = batch_special[sb->seqs_count % 8];
        sq->batch = x < 0 || x <= S || pinned ? x : S;
    }
    fa_seqs *s = &sq->seqs;
    *s = (fa_seqs)FA_SEQS_INIT;
    s->batch = sq->batch;
    s->cu_seqlens_q = (const int64_t *)ptr[0];
    s->cu_seqlens_k = (const int64_t *)ptr[1];
    s->seqused_k = (const int64_t *)ptr[2];
    s->block_table = (const int32_t *)ptr[3];
    s->pages_per_seq = sq->keys == FZ_KEYS_PAGED ? sq->pps : (int64_t)(sb->pages_per_seq % 7);
    c->params.seqs = s;
}

int fz_seqs_describe(const fz_case *c, char *buf, size_t size)
{
    const fz_seqs_case *sq = &c->sq;
    if (!sq->on) return 0;
    static const char *const keys[3] = {"dense", "packed", "paged"};
    return snprintf(
        buf, size,
        " | seqs S=%lld batch=%lld q=%s k=%s used=%s pages=%lldx%lld pool=%lld arrays@%lld/%lld/%lld/%lld",
        (long long)sq->S, (long long)sq->batch, sq->packed_q ? "packed" : "dense", keys[sq->keys],
        sq->used_on ? "yes" : "no", (long long)sq->pps, (long long)sq->page_size, (long long)sq->pool_pages,
        (long long)sq->base[0], (long long)sq->base[1], (long long)sq->base[2], (long long)sq->base[3]);
}

/* ---- a successful call, sequence by sequence ------------------------------------------------ */

/* Entry i of array `which` as the call read it (aligned: the call succeeded). */
static int64_t entry(const fa_seqs *s, int which, int64_t i)
{
    if (which == 3) return s->block_table[i];
    return (which == 0 ? s->cu_seqlens_q : which == 1 ? s->cu_seqlens_k : s->seqused_k)[i];
}

/* Rows row0 .. row0 + n of batch b of a view, as a view of one batch. */
static fa_tensor rows_of(const fa_tensor *t, int64_t b, int64_t row0, int64_t n)
{
    fa_tensor x = *t;
    if (n > 0 && t->heads > 0 && t->dim > 0)
        x.data = (unsigned char *)t->data +
                 (b * t->stride_batch + row0 * t->stride_seq) * (int64_t)fz_dtype_bytes(t->dtype);
    x.batch = 1;
    x.seq = n;
    return x;
}

/* Sequence b as a dense problem: views, lse (*lse_one) and, for paged keys, k and v gathered into
 * *gathered (malloc'ed, the caller frees it). Only the views the call used are cut to the sequence
 * (q, out, k, v for a forward; dout, dq, dk, dv too for a backward): the strides of the others were
 * never checked and may be wild, so even forming their row pointers would overflow. */
static void sequence_case(const fz_case *c, const fa_seqs *s, int64_t b, const void *lse, int backward,
                          fz_case *one, const void **lse_one, void **gathered)
{
    const int views = backward ? 4 : 2; /* q_like and k_like list the forward's views first */
    memcpy(one, c, sizeof *one);
    const fa_tensor *q = &c->view[FZ_Q], *k = &c->view[FZ_K];
    int64_t qb = b, q0 = 0, nq = q->seq;
    if (s->cu_seqlens_q) qb = 0, q0 = entry(s, 0, b), nq = entry(s, 0, b + 1) - q0;
    for (int i = 0; i < views; i++) one->view[q_like[i]] = rows_of(&c->view[q_like[i]], qb, q0, nq);
    one->lse_head_stride = q->seq;
    const int64_t acc = q->dtype == FA_F64 ? 8 : 4;
    *lse_one = lse ? (const unsigned char *)lse + (qb * q->heads * q->seq + q0) * acc : NULL;
    int64_t kb = b, k0 = 0, capacity = k->seq;
    if (s->cu_seqlens_k) kb = 0, k0 = entry(s, 1, b), capacity = entry(s, 1, b + 1) - k0;
    if (s->block_table) capacity = s->pages_per_seq * k->seq;
    const int64_t used = s->seqused_k ? entry(s, 2, b) : capacity;
    *gathered = NULL;
    if (!s->block_table) {
        for (int i = 0; i < views; i++) one->view[k_like[i]] = rows_of(&c->view[k_like[i]], kb, k0, used);
        return;
    }
    /* paged: key t of the sequence is row t % page of page block_table[b][t / page] */
    const fa_tensor *v = &c->view[FZ_V];
    const size_t es = fz_dtype_bytes(k->dtype);
    const int64_t kn = k->heads * used * k->dim, vn = v->heads * used * v->dim;
    unsigned char *buf = malloc((size_t)(kn + vn + 1) * es);
    if (!buf) abort();
    const fa_tensor *pool_view[2] = {k, v};
    for (int w = 0; w < 2; w++) {
        const fa_tensor *t = pool_view[w];
        unsigned char *dst = buf + (w ? kn : 0) * (int64_t)es;
        for (int64_t g = 0; g < t->heads; g++)
            for (int64_t r = 0; r < used; r++) {
                int64_t page = entry(s, 3, b * s->pages_per_seq + r / t->seq), row = r % t->seq;
                const unsigned char *src =
                    (const unsigned char *)t->data +
                    (page * t->stride_batch + g * t->stride_head + row * t->stride_seq) * (int64_t)es;
                memcpy(dst + ((g * used + r) * t->dim) * (int64_t)es, src, (size_t)t->dim * es);
            }
        fa_tensor x = fa_tensor_bhsd(dst, t->dtype, 1, t->heads, used, t->dim);
        one->view[w ? FZ_V : FZ_K] = x;
    }
    *gathered = buf;
}

/* Element (b, h, s, 0..dim) of a view: the same bytes before (c->snap) and after the call. */
static void row_unchanged(const fz_case *c, const fa_tensor *t, int64_t b, int64_t h, int64_t s,
                          const char *what)
{
    const size_t es = fz_dtype_bytes(t->dtype);
    const size_t off = (size_t)((const unsigned char *)t->data - c->pool) +
                       (size_t)((b * t->stride_batch + h * t->stride_head + s * t->stride_seq) * (int64_t)es);
    FZ_CHECK(memcmp(c->pool + off, c->snap + off, (size_t)t->dim * es) == 0,
             "%s row (%lld,%lld,%lld) belongs to no sequence's rows but was written", what, (long long)b,
             (long long)h, (long long)s);
}

/* Query rows after the last sequence's (packed queries): out and lse, or dq. */
static void queries_unchanged(const fz_case *c, const fa_seqs *s, const void *lse, int backward)
{
    if (!s->cu_seqlens_q) return;
    const fa_tensor *q = &c->view[FZ_Q], *t = &c->view[backward ? FZ_DQ : FZ_OUT];
    const size_t acc = q->dtype == FA_F64 ? 8 : 4;
    for (int64_t r = entry(s, 0, s->batch); r < q->seq; r++)
        for (int64_t h = 0; h < q->heads; h++) {
            row_unchanged(c, t, 0, h, r, backward ? "dq" : "out");
            if (backward || !lse) continue;
            size_t off = (size_t)((const unsigned char *)lse - c->pool) + (size_t)(h * q->seq + r) * acc;
            FZ_CHECK(memcmp(c->pool + off, c->snap + off, acc) == 0,
                     "lse of row (%lld,%lld) after the sequences was written", (long long)h, (long long)r);
        }
}

void fz_seqs_check_forward(const fz_case *c, const fa_params *p, const void *lse)
{
    const fa_seqs *s = p->seqs;
    fa_params one_p = *p;
    one_p.seqs = NULL;
    fz_case *one = malloc(sizeof *one);
    if (!one) abort();
    for (int64_t b = 0; b < s->batch; b++) {
        const void *lse_one;
        void *gathered;
        sequence_case(c, s, b, lse, 0, one, &lse_one, &gathered);
        fz_check_forward_values(one, &one_p, lse_one);
        free(gathered);
    }
    free(one);
    queries_unchanged(c, s, lse, 0);
}

void fz_seqs_check_backward(const fz_case *c, const fa_params *p, const void *lse)
{
    const fa_seqs *s = p->seqs;
    const fa_tensor *k = &c->view[FZ_K];
    fa_params one_p = *p;
    one_p.seqs = NULL;
    const int64_t heads = c->view[FZ_Q].heads;
    double *sum = calloc((size_t)(3 * (heads > 0 ? heads : 1)), sizeof *sum);
    fz_case *one = malloc(sizeof *one);
    if (!one || !sum) abort();
    int clean = 1;
    for (int64_t b = 0; b < s->batch; b++) {
        const void *lse_one;
        void *gathered;
        sequence_case(c, s, b, lse, 1, one, &lse_one, &gathered);
        clean &= fz_check_backward_values(one, &one_p);
        if (one_p.sinks && one_p.dsinks && lse_one)
            fz_dsinks_terms(one, &one_p, lse_one, sum, sum + heads, sum + 2 * heads);
        free(gathered);
        /* dk and dv of the keys beyond those in use: left as they were */
        int64_t kb = b, k0 = 0, capacity = k->seq;
        if (s->cu_seqlens_k) kb = 0, k0 = entry(s, 1, b), capacity = entry(s, 1, b + 1) - k0;
        for (int64_t r = s->seqused_k ? entry(s, 2, b) : capacity; r < capacity; r++)
            for (int64_t g = 0; g < k->heads; g++) {
                row_unchanged(c, &c->view[FZ_DK], kb, g, k0 + r, "dk");
                row_unchanged(c, &c->view[FZ_DV], kb, g, k0 + r, "dv");
            }
    }
    if (clean && p->sinks && p->dsinks && lse)
        fz_dsinks_compare(p, heads, c->view[FZ_Q].dtype, sum, sum + heads, sum + 2 * heads);
    free(one);
    free(sum);
    queries_unchanged(c, s, lse, 1);
    if (s->cu_seqlens_k) /* key rows after the last sequence's */
        for (int64_t r = entry(s, 1, s->batch); r < k->seq; r++)
            for (int64_t g = 0; g < k->heads; g++) {
                row_unchanged(c, &c->view[FZ_DK], 0, g, r, "dk");
                row_unchanged(c, &c->view[FZ_DV], 0, g, r, "dv");
            }
}
