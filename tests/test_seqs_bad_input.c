/* SPDX-License-Identifier: BSD-3-Clause */
/* Bad input of a batch of sequences (include/flashattn.h, fa_seqs; "Refused, with nothing written"):
 * offsets that do not start at 0, decrease or run past the tensor; keys in use beyond a sequence's
 * capacity or negative; pages outside the pool or negative among the pages in use; a batch axis
 * that disagrees with the sequences; packed key offsets together with a block table; misaligned
 * arrays; an output over one of the arrays; a bias with sequences and paged keys in the backward.
 * Each returns its own status, with fa_forward and fa_backward, on a context of its own and the
 * NULL context, names the argument in fa_last_error() and leaves every byte of every buffer (inputs,
 * outputs, the arrays, guards) as it was. The valid edges are accepted. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seqs_util.h"

enum { FIX_PACKED, FIX_DENSE, FIX_PAGED, N_FIX };
enum { FWD = 1, BWD = 2, BOTH = 3 };
enum { B = 4, HQ = 4, PPS = 3, META_BYTES = 1024 };

typedef struct {
    ts_batch t;  /* the valid batch: tensors, storage, the arrays' valid values */
    tu_buf meta; /* the arrays a call reads, sinks and dsinks, and spare room, guarded */
    int64_t *cu_q, *cu_k, *used;
    int32_t *table;
    float *sinks, *dsinks;
    unsigned char *spare; /* META_BYTES / 2 free bytes at the end of meta */
    tu_buf bias_buf;      /* room for PPS·k.seq values: a paged cache's capacity */
    fa_tensor bias;       /* a valid bias, broadcast over everything: [1][1][1][k.seq] */
    /* the call, as a case changes it */
    fa_seqs seqs;
    fa_params p;
    fa_tensor x[TS_TENSORS];
    void *lse;
} fixture;

static void fixture_make(fixture *f, int kind, fa_dtype dt, uint64_t seed)
{
    memset(f, 0, sizeof *f);
    ts_spec s = {0};
    s.dtype = dt;
    s.batch = B, s.q_heads = HQ, s.kv_heads = 2, s.dim = 8, s.dim_v = 6;
    s.seqused = 1;
    s.spare_rows = 2;
    const int64_t q_len[B] = {3, 5, 2, 4};
    memcpy(s.q_len, q_len, sizeof q_len);
    if (kind == FIX_PACKED) { /* keys in use: all, some, all, none */
        const int64_t k_len[B] = {6, 4, 7, 5}, used[B] = {6, 2, 7, 0};
        s.packed_q = 1, s.keys = TS_KEYS_PACKED;
        memcpy(s.k_len, k_len, sizeof k_len), memcpy(s.k_used, used, sizeof used);
    } else if (kind == FIX_DENSE) {
        const int64_t used[B] = {8, 3, 0, 5};
        s.keys = TS_KEYS_DENSE, s.k_len[0] = 8, s.head_major = 1;
        memcpy(s.k_used, used, sizeof used);
    } else { /* pages of 4: 3, 1, 0 and 3 pages in use; -1 beyond them; two spare pages */
        const int64_t used[B] = {9, 4, 0, 12};
        s.packed_q = 1, s.keys = TS_KEYS_PAGED, s.page_size = 4, s.pages_per_seq = PPS, s.spare_pages = 2;
        memcpy(s.k_used, used, sizeof used);
    }
    tu_rng rng = tu_rng_make(seed);
    ts_make(&f->t, &s, &rng, 2.0);
    f->meta = tu_buf_alloc(META_BYTES);
    unsigned char *m = tu_buf_data(&f->meta);
    f->cu_q = (int64_t *)(void *)m, f->cu_k = f->cu_q + B + 1, f->used = f->cu_k + B + 1;
    f->table = (int32_t *)(void *)(f->used + B);
    f->sinks = (float *)(void *)(f->table + B * PPS), f->dsinks = f->sinks + HQ;
    f->spare = m + META_BYTES / 2;
    cr_assert((unsigned char *)(f->dsinks + HQ) <= f->spare);
    f->bias = fa_tensor_bhsd(NULL, dt, 1, 1, 1, f->t.t[TS_K].seq);
    f->bias_buf = tu_buf_alloc((size_t)(PPS * f->bias.dim) * tu_dtype_size(dt) + 8);
    f->bias.data = tu_buf_data(&f->bias_buf);
}

static void fixture_free(fixture *f)
{
    ts_free(&f->t);
    tu_buf_free(&f->meta);
    tu_buf_free(&f->bias_buf);
}

/* The valid call: the batch's arguments with the arrays copied into meta. */
static void fixture_reset(fixture *f)
{
    const ts_batch *t = &f->t;
    memset(f->meta.base, TU_CANARY, f->meta.bytes + 2 * TU_GUARD);
    memcpy(f->cu_q, t->cu_q, sizeof(int64_t) * (B + 1));
    memcpy(f->cu_k, t->cu_k, sizeof(int64_t) * (B + 1));
    memcpy(f->used, t->seqused_k, sizeof(int64_t) * B);
    if (t->block_table) memcpy(f->table, t->block_table, sizeof(int32_t) * B * PPS);
    for (int h = 0; h < HQ; h++) f->sinks[h] = 0.25f * (float)h;
    f->seqs = t->seqs;
    f->seqs.cu_seqlens_q = t->seqs.cu_seqlens_q ? f->cu_q : NULL;
    f->seqs.cu_seqlens_k = t->seqs.cu_seqlens_k ? f->cu_k : NULL;
    f->seqs.seqused_k = t->seqs.seqused_k ? f->used : NULL;
    f->seqs.block_table = t->seqs.block_table ? f->table : NULL;
    f->p = (fa_params)FA_PARAMS_INIT;
    f->p.seqs = &f->seqs;
    memcpy(f->x, t->t, sizeof f->x);
    f->lse = t->lse;
    ts_fill_canary(&f->t);
}

static fa_status call(fa_context *ctx, const fixture *f, int backward)
{
    const fa_tensor *x = f->x;
    if (!backward) return fa_forward(ctx, &f->p, &x[TS_Q], &x[TS_K], &x[TS_V], &x[TS_OUT], f->lse);
    return fa_backward(ctx, &f->p, &x[TS_Q], &x[TS_K], &x[TS_V], &x[TS_OUT], &x[TS_DOUT], f->lse, &x[TS_DQ],
                       &x[TS_DK], &x[TS_DV]);
}

/* Every buffer a call may see: the batch's tensors and lse, the arrays, the bias. */
enum { N_SNAP = TS_TENSORS + 3 };

static const tu_buf *snap_buf(const fixture *f, int i)
{
    return i <= TS_TENSORS ? &f->t.buf[i] : i == TS_TENSORS + 1 ? &f->meta : &f->bias_buf;
}

typedef struct {
    const char *name;
    int kind, calls;
    fa_status want;
    const char *names; /* what fa_last_error() names */
    void (*mutate)(fixture *f);
} seqs_case;

static void run_cases(const seqs_case *cases, int n)
{
    fa_context *ctx = NULL;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    for (int dt = 0; dt < 2; dt++) {
        uint64_t seed = tu_test_part_seed(dt ? "f64" : "f32");
        fixture fix[N_FIX];
        for (int k = 0; k < N_FIX; k++) fixture_make(&fix[k], k, dt ? FA_F64 : FA_F32, seed + (uint64_t)k);
        for (int c = 0; c < n; c++)
            for (int backward = 0; backward < 2; backward++) {
                if (!(cases[c].calls & (backward ? BWD : FWD))) continue;
                const char *fn = backward ? "fa_backward" : "fa_forward";
                for (int own = 0; own < 2; own++) {
                    fixture *f = &fix[cases[c].kind];
                    fixture_reset(f);
                    cases[c].mutate(f);
                    unsigned char *snap[N_SNAP];
                    for (int i = 0; i < N_SNAP; i++) snap[i] = tu_buf_snapshot(snap_buf(f, i));
                    fa_status st = call(own ? ctx : NULL, f, backward);
                    const char *why = fa_last_error();
                    cr_expect_eq(st, cases[c].want, "%s, %s, %s: status %d (%s), want %d", cases[c].name, fn,
                                 dt ? "f64" : "f32", (int)st, why, (int)cases[c].want);
                    cr_expect(strstr(why, fn) && strstr(why, cases[c].names),
                              "%s, %s, %s: fa_last_error() \"%s\" does not name %s", cases[c].name, fn,
                              dt ? "f64" : "f32", why, cases[c].names);
                    for (int i = 0; i < N_SNAP; i++) {
                        cr_expect(tu_buf_equals_snapshot(snap_buf(f, i), snap[i]),
                                  "%s, %s, %s: buffer %d changed", cases[c].name, fn, dt ? "f64" : "f32", i);
                        free(snap[i]);
                    }
                }
            }
        /* the valid calls of every fixture still succeed on the same context */
        for (int k = 0; k < N_FIX; k++) {
            fixture_reset(&fix[k]);
            cr_expect_eq(call(ctx, &fix[k], 0), FA_OK, "fixture %d: %s", k, fa_last_error());
            if (k != FIX_PAGED)
                cr_expect_eq(call(ctx, &fix[k], 1), FA_OK, "fixture %d: %s", k, fa_last_error());
            fixture_free(&fix[k]);
        }
    }
    fa_context_destroy(ctx);
}

#define CASE(kind, calls, want, names, fn) \
    {                                      \
#fn, kind, calls, want, names, fn  \
    }

/* ---- offsets ------------------------------------------------------------------------------ */

static void cu_q_not_from_zero(fixture *f)
{
    f->cu_q[0] = 1;
}
static void cu_q_decreasing(fixture *f)
{
    f->cu_q[3] = f->cu_q[2] - 1;
}
static void cu_q_past_the_tensor(fixture *f)
{
    f->cu_q[B] = f->x[TS_Q].seq + 1;
}
static void cu_q_far_past_the_tensor(fixture *f)
{
    f->cu_q[B] = INT64_MAX;
}
static void cu_k_not_from_zero(fixture *f)
{
    f->cu_k[0] = -1;
}
static void cu_k_decreasing(fixture *f)
{
    f->cu_k[2] = f->cu_k[1] - 1;
}
static void cu_k_past_the_tensor(fixture *f)
{
    f->cu_k[B] = f->x[TS_K].seq + 1;
}

Test(seqs_bad_input, offsets_not_from_zero_decreasing_or_past_the_tensor_are_refused)
{
    static const seqs_case cases[] = {
        CASE(FIX_PACKED, BOTH, FA_ERR_SHAPE, "p.seqs.cu_seqlens_q[0]", cu_q_not_from_zero),
        CASE(FIX_PACKED, BOTH, FA_ERR_SHAPE, "p.seqs.cu_seqlens_q[3]", cu_q_decreasing),
        CASE(FIX_PACKED, BOTH, FA_ERR_SHAPE, "p.seqs.cu_seqlens_q[4]", cu_q_past_the_tensor),
        CASE(FIX_PAGED, BOTH, FA_ERR_SHAPE, "p.seqs.cu_seqlens_q[4]", cu_q_far_past_the_tensor),
        CASE(FIX_PACKED, BOTH, FA_ERR_SHAPE, "p.seqs.cu_seqlens_k[0]", cu_k_not_from_zero),
        CASE(FIX_PACKED, BOTH, FA_ERR_SHAPE, "p.seqs.cu_seqlens_k[2]", cu_k_decreasing),
        CASE(FIX_PACKED, BOTH, FA_ERR_SHAPE, "p.seqs.cu_seqlens_k[4]", cu_k_past_the_tensor),
    };
    run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- keys in use ---------------------------------------------------------------------------- */

static void seqused_beyond_dense_capacity(fixture *f)
{
    f->used[1] = f->x[TS_K].seq + 1;
}
static void seqused_beyond_packed_span(fixture *f)
{
    f->used[2] = f->cu_k[3] - f->cu_k[2] + 1;
}
static void seqused_beyond_pages(fixture *f)
{
    f->used[3] = PPS * f->x[TS_K].seq + 1;
}
static void seqused_negative(fixture *f)
{
    f->used[0] = -1;
}
static void seqused_most_negative(fixture *f)
{
    f->used[2] = INT64_MIN;
}

Test(seqs_bad_input, keys_in_use_beyond_the_capacity_or_negative_are_refused)
{
    static const seqs_case cases[] = {
        CASE(FIX_DENSE, BOTH, FA_ERR_SHAPE, "p.seqs.seqused_k[1]", seqused_beyond_dense_capacity),
        CASE(FIX_PACKED, BOTH, FA_ERR_SHAPE, "p.seqs.seqused_k[2]", seqused_beyond_packed_span),
        CASE(FIX_PAGED, BOTH, FA_ERR_SHAPE, "p.seqs.seqused_k[3]", seqused_beyond_pages),
        CASE(FIX_DENSE, BOTH, FA_ERR_SHAPE, "p.seqs.seqused_k[0]", seqused_negative),
        CASE(FIX_PAGED, BOTH, FA_ERR_SHAPE, "p.seqs.seqused_k[2]", seqused_most_negative),
    };
    run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- pages (a paged backward is refused as unsupported, after these: SHAPE comes first) ------- */

static void page_past_the_pool(fixture *f)
{
    f->table[1 * PPS + 0] = (int32_t)f->x[TS_K].batch;
}
static void page_negative_in_use(fixture *f)
{
    f->table[0 * PPS + 2] = -1;
}
static void page_most_negative(fixture *f)
{
    f->table[3 * PPS + 1] = INT32_MIN;
}
static void every_page_in_use_without_seqused(fixture *f)
{
    f->seqs.seqused_k = NULL; /* sequence 1 then uses all its pages, and its second entry is -1 */
}
static void page_past_a_shrunk_pool(fixture *f)
{
    int64_t last = 0; /* the pool shrunk to end just before the highest page in use */
    for (int64_t b = 0; b < B; b++)
        for (int64_t j = 0; j * f->x[TS_K].seq < f->used[b]; j++)
            if (f->table[b * PPS + j] > last) last = f->table[b * PPS + j];
    const int pools[4] = {TS_K, TS_V, TS_DK, TS_DV};
    for (int i = 0; i < 4; i++) f->x[pools[i]].batch = last;
}

/* A table so long that pages_per_seq·batch or pages_per_seq·page_size overflows int64: refused by
 * value, before anything multiplies it (UBSan would report the overflow). */
static void pages_per_seq_overflowing(fixture *f)
{
    f->seqs.pages_per_seq = INT64_MAX / 2;
    for (int b = 0; b < B; b++) f->used[b] = 0; /* no page in use: only the count is wrong */
    f->seqs.seqused_k = f->used;
}
static void pages_per_seq_overflowing_with_a_wrapped_table(fixture *f)
{
    f->seqs.pages_per_seq = (INT64_C(1) << 62) + 1;
    for (int b = 0; b < B; b++) f->used[b] = 0;
    f->seqs.seqused_k = f->used;
}

Test(seqs_bad_input, pages_outside_the_pool_or_negative_are_refused)
{
    static const seqs_case cases[] = {
        CASE(FIX_PAGED, BOTH, FA_ERR_SHAPE, "p.seqs.pages_per_seq", pages_per_seq_overflowing),
        CASE(FIX_PAGED, BOTH, FA_ERR_SHAPE, "p.seqs.pages_per_seq",
             pages_per_seq_overflowing_with_a_wrapped_table),
        CASE(FIX_PAGED, BOTH, FA_ERR_SHAPE, "p.seqs.block_table[1][0]", page_past_the_pool),
        CASE(FIX_PAGED, BOTH, FA_ERR_SHAPE, "p.seqs.block_table[0][2]", page_negative_in_use),
        CASE(FIX_PAGED, BOTH, FA_ERR_SHAPE, "p.seqs.block_table[3][1]", page_most_negative),
        CASE(FIX_PAGED, BOTH, FA_ERR_SHAPE, "p.seqs.block_table[1][1]", every_page_in_use_without_seqused),
        CASE(FIX_PAGED, BOTH, FA_ERR_SHAPE, "p.seqs.block_table", page_past_a_shrunk_pool),
    };
    run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- batch axes --------------------------------------------------------------------------- */

static void q_batch_not_one_when_packed(fixture *f)
{
    const int like_q[4] = {TS_Q, TS_OUT, TS_DOUT, TS_DQ};
    for (int i = 0; i < 4; i++) f->x[like_q[i]].batch = 2;
}
static void q_batch_not_the_sequence_count(fixture *f)
{
    f->seqs.batch = B - 1;
}
static void k_batch_not_one_when_packed(fixture *f)
{
    const int like_k[4] = {TS_K, TS_V, TS_DK, TS_DV};
    for (int i = 0; i < 4; i++) f->x[like_k[i]].batch = 2;
}
static void k_batch_not_the_sequence_count(fixture *f)
{
    const int like_k[4] = {TS_K, TS_V, TS_DK, TS_DV};
    for (int i = 0; i < 4; i++) f->x[like_k[i]].batch = B - 1;
}
static void v_batch_not_k_batch(fixture *f)
{
    f->x[TS_V].batch--, f->x[TS_DV].batch--;
}

Test(seqs_bad_input, batch_axes_that_disagree_with_the_sequences_are_refused)
{
    static const seqs_case cases[] = {
        CASE(FIX_PACKED, BOTH, FA_ERR_SHAPE, "q.batch", q_batch_not_one_when_packed),
        CASE(FIX_DENSE, BOTH, FA_ERR_SHAPE, "q.batch", q_batch_not_the_sequence_count),
        CASE(FIX_PACKED, BOTH, FA_ERR_SHAPE, "k.batch", k_batch_not_one_when_packed),
        CASE(FIX_DENSE, BOTH, FA_ERR_SHAPE, "k.batch", k_batch_not_the_sequence_count),
        CASE(FIX_DENSE, BOTH, FA_ERR_SHAPE, "v.batch", v_batch_not_k_batch),
        CASE(FIX_PAGED, BOTH, FA_ERR_SHAPE, "v.batch", v_batch_not_k_batch),
    };
    run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- arguments ------------------------------------------------------------------------------ */

static void packed_key_offsets_with_a_block_table(fixture *f)
{
    f->seqs.cu_seqlens_k = f->cu_k;
}
static void negative_batch(fixture *f)
{
    f->seqs.batch = -1;
}
static void negative_pages_per_seq(fixture *f)
{
    f->seqs.pages_per_seq = -1;
}

Test(seqs_bad_input, packed_key_offsets_with_a_block_table_or_negative_counts_return_err_arg)
{
    static const seqs_case cases[] = {
        CASE(FIX_PAGED, BOTH, FA_ERR_ARG, "p.seqs.cu_seqlens_k and p.seqs.block_table",
             packed_key_offsets_with_a_block_table),
        CASE(FIX_PACKED, BOTH, FA_ERR_ARG, "p.seqs.batch", negative_batch),
        CASE(FIX_PAGED, BOTH, FA_ERR_ARG, "p.seqs.pages_per_seq", negative_pages_per_seq),
    };
    run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- alignment and overlaps ----------------------------------------------------------------- */

/* The array moved to `at` (its values kept), returned for the case to point at. */
static void *moved(const void *from, size_t bytes, unsigned char *at)
{
    memmove(at, from, bytes);
    return at;
}

static void cu_q_misaligned(fixture *f)
{
    f->seqs.cu_seqlens_q = moved(f->cu_q, sizeof(int64_t) * (B + 1), f->spare + 4);
}
static void seqused_misaligned(fixture *f)
{
    f->seqs.seqused_k = moved(f->used, sizeof(int64_t) * B, f->spare + 1);
}
static void block_table_misaligned(fixture *f)
{
    f->seqs.block_table = moved(f->table, sizeof(int32_t) * B * PPS, f->spare + 2);
}

Test(seqs_bad_input, arrays_not_aligned_to_their_elements_return_err_stride)
{
    static const seqs_case cases[] = {
        CASE(FIX_PACKED, BOTH, FA_ERR_STRIDE, "p.seqs.cu_seqlens_q", cu_q_misaligned),
        CASE(FIX_DENSE, BOTH, FA_ERR_STRIDE, "p.seqs.seqused_k", seqused_misaligned),
        CASE(FIX_PAGED, FWD, FA_ERR_STRIDE, "p.seqs.block_table", block_table_misaligned),
    };
    run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* A wrong shape is refused as such even beside an array that cannot be read: the documented order
 * puts every shape (dout's and the gradients' included) before the arrays' alignment. */
static void dout_shorter_and_seqused_misaligned(fixture *f)
{
    seqused_misaligned(f);
    f->x[TS_DOUT].dim -= 1;
}
static void dq_fewer_heads_and_cu_q_misaligned(fixture *f)
{
    cu_q_misaligned(f);
    f->x[TS_DQ].heads -= 1;
}

Test(seqs_bad_input, a_wrong_gradient_shape_is_err_shape_beside_a_misaligned_array)
{
    static const seqs_case cases[] = {
        CASE(FIX_DENSE, BWD, FA_ERR_SHAPE, "dout", dout_shorter_and_seqused_misaligned),
        CASE(FIX_PACKED, BWD, FA_ERR_SHAPE, "dq", dq_fewer_heads_and_cu_q_misaligned),
    };
    run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* Element `x` of an output view's storage: inside the bytes the view spans. */
static unsigned char *inside(fixture *f, int which, int64_t x)
{
    return (unsigned char *)f->x[which].data + x * (int64_t)tu_dtype_size(f->t.s.dtype);
}
static void out_over_cu_seqlens_q(fixture *f)
{
    f->seqs.cu_seqlens_q = moved(f->cu_q, sizeof(int64_t) * (B + 1), inside(f, TS_OUT, 8));
}
static void lse_over_seqused_k(fixture *f)
{
    f->seqs.seqused_k = moved(f->used, sizeof(int64_t) * B, (unsigned char *)f->lse + 16);
}
static void out_over_block_table(fixture *f)
{
    f->seqs.block_table = moved(f->table, sizeof(int32_t) * B * PPS, inside(f, TS_OUT, 20));
}
static void dq_over_cu_seqlens_k(fixture *f)
{
    f->seqs.cu_seqlens_k = moved(f->cu_k, sizeof(int64_t) * (B + 1), inside(f, TS_DQ, 4));
}
static void dk_over_seqused_k(fixture *f)
{
    f->seqs.seqused_k = moved(f->used, sizeof(int64_t) * B, inside(f, TS_DK, 2));
}
static void dv_over_cu_seqlens_q(fixture *f)
{
    f->seqs.cu_seqlens_q = moved(f->cu_q, sizeof(int64_t) * (B + 1), inside(f, TS_DV, 6));
}
static void dsinks_over_cu_seqlens_q(fixture *f)
{
    f->p.sinks = f->sinks;
    f->p.dsinks = (float *)(void *)f->cu_q;
}

Test(seqs_bad_input, outputs_over_the_sequence_arrays_return_err_alias)
{
    static const seqs_case cases[] = {
        CASE(FIX_PACKED, FWD, FA_ERR_ALIAS, "out overlaps p.seqs.cu_seqlens_q", out_over_cu_seqlens_q),
        CASE(FIX_DENSE, FWD, FA_ERR_ALIAS, "lse overlaps p.seqs.seqused_k", lse_over_seqused_k),
        CASE(FIX_PAGED, FWD, FA_ERR_ALIAS, "out overlaps p.seqs.block_table", out_over_block_table),
        CASE(FIX_PACKED, BWD, FA_ERR_ALIAS, "dq overlaps p.seqs.cu_seqlens_k", dq_over_cu_seqlens_k),
        CASE(FIX_DENSE, BWD, FA_ERR_ALIAS, "dk overlaps p.seqs.seqused_k", dk_over_seqused_k),
        CASE(FIX_PACKED, BWD, FA_ERR_ALIAS, "dv overlaps p.seqs.cu_seqlens_q", dv_over_cu_seqlens_q),
        CASE(FIX_PACKED, BWD, FA_ERR_ALIAS, "p.dsinks overlaps p.seqs.cu_seqlens_q",
             dsinks_over_cu_seqlens_q),
    };
    run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- unsupported ---------------------------------------------------------------------------- */

static void bias_with_sequences(fixture *f)
{
    f->p.bias = &f->bias;
}
/* One column per key of a paged cache's capacity, not per key of a page (k.seq): refused for what it
 * is, a bias with sequences, never as a shape against the page size. */
static void bias_over_the_paged_capacity(fixture *f)
{
    f->bias.dim = PPS * f->x[TS_K].seq;
    f->p.bias = &f->bias;
}
static void paged_keys_in_the_backward(fixture *f)
{
    (void)f; /* the valid paged batch: fa_backward does not take it */
}

Test(seqs_bad_input, a_bias_with_sequences_and_paged_keys_in_the_backward_are_unsupported)
{
    static const seqs_case cases[] = {
        CASE(FIX_PACKED, BOTH, FA_ERR_UNSUPPORTED, "p.bias", bias_with_sequences),
        CASE(FIX_DENSE, BOTH, FA_ERR_UNSUPPORTED, "p.bias", bias_with_sequences),
        CASE(FIX_PAGED, BOTH, FA_ERR_UNSUPPORTED, "p.bias with p.seqs", bias_over_the_paged_capacity),
        CASE(FIX_PAGED, BWD, FA_ERR_UNSUPPORTED, "p.seqs.block_table", paged_keys_in_the_backward),
    };
    run_cases(cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- valid edges ---------------------------------------------------------------------------- */

/* No sequence at all; the arrays inside an input no sequence reads (inputs may overlap inputs);
 * no page in use with no table entry; the last page of the pool; offsets that end before the
 * tensor does (every fixture). Each succeeds and writes only its sequences' rows. */
Test(seqs_bad_input, valid_edges_are_accepted_and_write_only_the_sequences_rows)
{
    uint64_t seed = tu_test_seed();
    char msg[512];
    for (int dt = 0; dt < 2; dt++)
        for (int kind = 0; kind < N_FIX; kind++) {
            fixture f;
            fixture_make(&f, kind, dt ? FA_F64 : FA_F32, seed + (uint64_t)(dt * N_FIX + kind));
            for (int edge = 0; edge < 4; edge++) {
                fixture_reset(&f);
                const char *what = "the fixture";
                if (edge == 1) {
                    what = "no sequence";
                    f.seqs.batch = 0;
                    if (kind == FIX_DENSE) /* a dense batch of no sequence has batch axes of 0 */
                        for (int x = 0; x < TS_TENSORS; x++) f.x[x].batch = 0;
                    f.t.s.batch = 0; /* and so for ts_only_sequence_rows_written: no row is the sequences' */
                } else if (edge == 2) {
                    what = "the arrays inside q's rows after the last sequence";
                    if (kind != FIX_DENSE) {
                        unsigned char *q_spare = inside(&f, TS_Q, f.cu_q[B] * f.x[TS_Q].stride_seq);
                        f.seqs.cu_seqlens_q = moved(f.cu_q, sizeof(int64_t) * (B + 1), q_spare);
                    }
                } else if (edge == 3) {
                    what = "no page in use with no table entry, and the pool's last page";
                    if (kind == FIX_PAGED) { /* one entry per sequence: sequence b's is table[b] */
                        f.seqs.pages_per_seq = 1;
                        f.used[0] = f.used[1] = f.used[3] = 0;
                        f.used[2] = 1;
                        f.table[0] = f.table[1] = f.table[3] = -1;
                        f.table[2] = (int32_t)(f.x[TS_K].batch - 1);
                    }
                }
                fa_status st = call(NULL, &f, 0);
                cr_expect_eq(st, FA_OK, "%s, fixture %d, %s: %s", what, kind, dt ? "f64" : "f32",
                             fa_last_error());
                if (edge != 3) /* the batch's own description of its rows holds but for edge 3's changes */
                    cr_expect(ts_only_sequence_rows_written(&f.t, 0, msg, sizeof msg), "%s, fixture %d: %s",
                              what, kind, msg);
                if (kind != FIX_PAGED) {
                    cr_expect_eq(call(NULL, &f, 1), FA_OK, "%s, fixture %d, %s, backward: %s", what, kind,
                                 dt ? "f64" : "f32", fa_last_error());
                    if (edge != 3)
                        cr_expect(ts_only_sequence_rows_written(&f.t, 1, msg, sizeof msg),
                                  "%s, fixture %d: %s", what, kind, msg);
                }
                f.t.s.batch = B;
            }
            fixture_free(&f);
        }
}
