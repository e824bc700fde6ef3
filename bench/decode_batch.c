/* SPDX-License-Identifier: BSD-3-Clause */
// --decode-batch: contiguous and paged KV caches of one decode step, their calls and checks.
#include "decode_batch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtypes.h"
#include "modifiers.h"
#include "reference.h"
#include "rng.h"
#include "score_mods.h"

// A cache or a pool: k or v, of the kv group's type (a bf16 or f16 cache under f32 queries, dtypes.h).
static fa_tensor make_view(void *data, const bench_shape *s, int64_t batch, int64_t seq, int64_t dim)
{
    if (s->layout == BENCH_LAYOUT_BSHD) return fa_tensor_bshd(data, s->kv_dtype, batch, seq, s->hkv, dim);
    return fa_tensor_bhsd(data, s->kv_dtype, batch, s->hkv, seq, dim);
}

static char *row_of(const fa_tensor *t, int64_t b, int64_t h, int64_t s)
{
    return (char *)t->data +
           (size_t)(b * t->stride_batch + h * t->stride_head + s * t->stride_seq) * kit_dtype_size(t->dtype);
}

// --kv-scales inline: a row's codes padded to 4 bytes, then its f32 scale.
static int64_t inline_codes(int64_t dim)
{
    return (dim + 3) / 4 * 4;
}

// A cache or a pool, [batch][Hkv][seq][dim] in the shape's layout, and a quantized one's f32 scales
// [batch][Hkv][seq][1] (data NULL otherwise): an array of their own, or (inline) views into the
// cache's memory, each scale after its row's codes. Returns 0, or -1 after a message naming what.
static int alloc_cache(fa_tensor *t, fa_tensor *scale, const bench_shape *s, int64_t batch, int64_t seq,
                       int64_t dim, const char *what)
{
    *t = *scale = (fa_tensor){0};
    int quantized = kit_dtype_is_quantized(s->kv_dtype), inline_scales = quantized && s->ragged.inline_scales;
    int64_t pitch = inline_scales ? inline_codes(dim) + 4 : dim; // elements (bytes when inline) a row
    size_t bytes = bench_checked_bytes(batch, s->hkv, seq, pitch, kit_dtype_size(s->kv_dtype));
    void *data = bytes ? bench_alloc_aligned(bytes, what) : NULL;
    if (!data) {
        if (!bytes) fprintf(stderr, "fa-bench: %s is too large to allocate\n", what);
        return -1;
    }
    *t = make_view(data, s, batch, seq, dim);
    if (inline_scales) { // rows `pitch` bytes apart; the scales' strides are the codes' over 4
        int bshd = s->layout == BENCH_LAYOUT_BSHD;
        t->stride_seq = bshd ? s->hkv * pitch : pitch;
        t->stride_head = bshd ? pitch : seq * pitch;
        t->stride_batch = seq * s->hkv * pitch;
        *scale = fa_tensor_bhsd((char *)data + inline_codes(dim), FA_F32, batch, s->hkv, seq, 1);
        scale->stride_seq = t->stride_seq / 4;
        scale->stride_head = t->stride_head / 4;
        scale->stride_batch = t->stride_batch / 4;
        return 0;
    }
    if (!quantized) return 0;
    size_t scale_bytes = bench_checked_bytes(batch, s->hkv, seq, 1, sizeof(float));
    void *scales = scale_bytes ? bench_alloc_aligned(scale_bytes, what) : NULL;
    if (!scales) {
        if (!scale_bytes) fprintf(stderr, "fa-bench: %s's scales are too large to allocate\n", what);
        return -1;
    }
    *scale = fa_tensor_bhsd(scales, FA_F32, batch, s->hkv, seq, 1);
    return 0;
}

// Frees a cache and its scales (inline ones live in its memory).
static void free_cache(fa_tensor *t, fa_tensor *scale, int inline_scales)
{
    if (!inline_scales) free(scale->data);
    free(t->data);
    *t = *scale = (fa_tensor){0};
}

// A cache of count sequences: the keys in use drawn from (seed, stream), the rest NaN, so that a read
// beyond seqused_k reaches the outputs and fails the checks. Rows in parallel (values depend on the
// index only). A half cache holds the f32 cache's values of the seed, rounded to nearest even
// (kit_store), as dense half runs do; a quantized one those values quantized row by row, with its
// scales in *scale (NaN beyond the keys in use: a read of them then shows too).
static int init_cache(fa_tensor *t, fa_tensor *scale, const bench_decode *d, const bench_shape *s,
                      int64_t dim, bench_dist dist, uint64_t seed, uint64_t stream, const char *what)
{
    int64_t count = d->used.count, cap = d->capacity, hkv = s->hkv;
    if (alloc_cache(t, scale, s, count, cap, dim, what) != 0) return -1;
    if (scale->data) return bench_fill_quantized(t, scale, dist, seed, stream, d->used.len);
    const fa_tensor view = *t;
    const int64_t *used = d->used.len;
    int64_t rows = count * hkv * cap;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        int64_t key = r % cap, h = r / cap % hkv, b = r / cap / hkv;
        char *row = row_of(&view, b, h, key);
        for (int64_t y = 0; y < dim; y++)
            kit_store(view.dtype, row, y,
                      key < used[b] ? bench_sample(dist, seed, stream, (uint64_t)(r * dim + y)) : NAN);
    }
    return 0;
}

// The pages: a shuffled pool (Fisher-Yates on the seed's page stream) handed out to the sequences in
// order, as many as each one's keys in use fill.
static int init_table(bench_decode *d, uint64_t seed)
{
    int64_t count = d->used.count, p = d->page_size;
    d->pages_per_seq = (d->capacity + p - 1) / p;
    d->num_pages = 0;
    for (int64_t b = 0; b < count; b++) d->num_pages += (d->used.len[b] + p - 1) / p;
    int32_t *order = malloc(sizeof *order * (size_t)(d->num_pages > 0 ? d->num_pages : 1));
    d->table = malloc(sizeof *d->table * (size_t)(count * d->pages_per_seq));
    if (!order || !d->table || d->num_pages > INT32_MAX) {
        fprintf(stderr, "fa-bench: cannot allocate the block table of %lld pages\n", (long long)d->num_pages);
        free(order);
        return -1;
    }
    for (int64_t i = 0; i < d->num_pages; i++) order[i] = (int32_t)i;
    for (int64_t i = d->num_pages - 1; i > 0; i--) {
        int64_t j = kit_keyed_below(seed, BENCH_STREAM_PAGES, (uint64_t)i, i + 1);
        int32_t x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    int64_t next = 0;
    for (int64_t b = 0; b < count; b++)
        for (int64_t j = 0; j < d->pages_per_seq; j++)
            d->table[b * d->pages_per_seq + j] = j * p < d->used.len[b] ? order[next++] : -1;
    free(order);
    return 0;
}

// Scale (b, h, s) of a [batch][Hkv][seq][1] scale tensor.
static float *scale_of(const fa_tensor *t, int64_t b, int64_t h, int64_t s)
{
    return (float *)t->data + b * t->stride_batch + h * t->stride_head + s * t->stride_seq;
}

// A pool of pages holding the keys of the contiguous cache c, row for row (so paged and contiguous
// calls read the same values), NaN elsewhere; a quantized cache's pool of scales likewise from
// c_scale (NaN scales, code 0, in the rows no key fills).
static int init_pool(fa_tensor *t, fa_tensor *scale, const fa_tensor *c, const fa_tensor *c_scale,
                     const bench_decode *d, const bench_shape *s, const char *what)
{
    int64_t dim = c->dim, p = d->page_size, hkv = s->hkv;
    size_t e = kit_dtype_size(s->kv_dtype);
    if (alloc_cache(t, scale, s, d->num_pages, p, dim, what) != 0) return -1;
    const fa_tensor pool = *t, cache = *c, pool_scale = *scale, cache_scale = *c_scale;
    int quantized = pool_scale.data != NULL;
    int64_t rows = d->num_pages * hkv * p;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        int64_t page = r / p / hkv, h = r / p % hkv, key = r % p;
        char *row = row_of(&pool, page, h, key);
        if (quantized) {
            memset(row, 0, (size_t)dim);
            *scale_of(&pool_scale, page, h, key) = NAN;
            continue;
        }
        for (int64_t y = 0; y < dim; y++) kit_store(pool.dtype, row, y, NAN);
    }
    int64_t count = d->used.count;
#pragma omp parallel for schedule(dynamic)
    for (int64_t b = 0; b < count; b++)
        for (int64_t key = 0; key < d->used.len[b]; key++) {
            int64_t page = d->table[b * d->pages_per_seq + key / p];
            for (int64_t h = 0; h < hkv; h++) {
                memcpy(row_of(&pool, page, h, key % p), row_of(&cache, b, h, key), (size_t)dim * e);
                if (quantized) *scale_of(&pool_scale, page, h, key % p) = *scale_of(&cache_scale, b, h, key);
            }
        }
    return 0;
}

static int same_mods(const bench_mods *a, const bench_mods *b)
{
    return a->window_left == b->window_left && a->window_right == b->window_right &&
           a->softcap == b->softcap && a->alibi == b->alibi && a->bias == b->bias && a->sinks == b->sinks;
}

// Whether caches built for (a, dist, seed) serve shape b: everything but the page size is the same.
static int same_caches(const bench_decode *d, const bench_shape *b, bench_dist dist, uint64_t seed)
{
    const bench_shape *a = &d->built_shape;
    return d->built && d->built_dist == dist && d->built_seed == seed && a->hq == b->hq && a->hkv == b->hkv &&
           a->d == b->d && a->dv == b->dv && a->dtype == b->dtype && a->kv_dtype == b->kv_dtype &&
           a->causal == b->causal && a->layout == b->layout && same_mods(&a->mods, &b->mods) &&
           a->ragged.kind == b->ragged.kind && a->ragged.count == b->ragged.count &&
           a->ragged.lo == b->ragged.lo && a->ragged.hi == b->ragged.hi &&
           a->ragged.inline_scales == b->ragged.inline_scales;
}

static void free_pages(bench_decode *d)
{
    free_cache(&d->kp, &d->kp_scale, d->inline_scales);
    free_cache(&d->vp, &d->vp_scale, d->inline_scales);
    free(d->paged_out.data);
    free(d->paged_lse);
    free(d->table);
    d->paged_out = (fa_tensor){0};
    d->paged_lse = NULL;
    d->table = NULL;
    d->page_size = d->pages_per_seq = d->num_pages = 0;
    d->paged_seqs = (fa_seqs)FA_SEQS_INIT;
    d->paged_params = (fa_params)FA_PARAMS_INIT;
}

static int init_pages(bench_decode *d, const bench_shape *s, int64_t page_size, uint64_t seed)
{
    d->page_size = page_size;
    if (page_size == 0) return 0;
    d->paged_out = d->pb.out;
    d->paged_out.data = bench_alloc_aligned(d->pb.out_bytes, "the paged call's out");
    d->paged_lse = d->paged_out.data ? bench_alloc_aligned(d->pb.lse_bytes, "the paged call's lse") : NULL;
    if (!d->paged_lse || init_table(d, seed) != 0 ||
        init_pool(&d->kp, &d->kp_scale, &d->kc, &d->kc_scale, d, s, "the K page pool") != 0 ||
        init_pool(&d->vp, &d->vp_scale, &d->vc, &d->vc_scale, d, s, "the V page pool") != 0)
        return -1;
    d->paged_seqs = (fa_seqs)FA_SEQS_INIT;
    d->paged_seqs.batch = d->used.count;
    d->paged_seqs.seqused_k = d->used.len;
    d->paged_seqs.block_table = d->table;
    d->paged_seqs.pages_per_seq = d->pages_per_seq;
    d->paged_params = d->dense_params;
    d->paged_params.seqs = &d->paged_seqs;
    d->paged_params.k_scale = d->kp_scale.data ? &d->kp_scale : NULL;
    d->paged_params.v_scale = d->vp_scale.data ? &d->vp_scale : NULL;
    return 0;
}

static int init_caches(bench_decode *d, const bench_shape *s, bench_dist dist, uint64_t seed)
{
    d->inline_scales = kit_dtype_is_quantized(s->kv_dtype) && s->ragged.inline_scales;
    if (bench_lengths_draw(&d->used, &s->ragged, seed) != 0) return -1;
    d->capacity = d->used.max;
    int64_t count = d->used.count;

    bench_shape small = *s;
    small.b = count;
    small.nq = small.nk = 1;
    small.ragged = (bench_ragged){BENCH_RAGGED_NONE, 0, 0, 0, 0, 0};
    if (bench_problem_init(&d->pb, &small, dist, seed, 0) != 0 ||
        init_cache(&d->kc, &d->kc_scale, d, s, s->d, dist, seed, BENCH_STREAM_CACHE_K,
                   "the contiguous K cache") != 0 ||
        init_cache(&d->vc, &d->vc_scale, d, s, s->dv, dist, seed, BENCH_STREAM_CACHE_V,
                   "the contiguous V cache") != 0)
        return -1;
    d->dense_params = (fa_params)FA_PARAMS_INIT;
    bench_modifiers_params(&d->pb, &d->dense_params);
    d->contiguous_seqs = (fa_seqs)FA_SEQS_INIT;
    d->contiguous_seqs.batch = count;
    d->contiguous_seqs.seqused_k = d->used.len;
    d->contiguous_params = d->dense_params;
    d->contiguous_params.seqs = &d->contiguous_seqs;
    d->contiguous_params.k_scale = d->kc_scale.data ? &d->kc_scale : NULL;
    d->contiguous_params.v_scale = d->vc_scale.data ? &d->vc_scale : NULL;

    d->keys_seen = 0;
    for (int64_t b = 0; b < count; b++) d->keys_seen += bench_sequence_pairs(s, 1, d->used.len[b]);
    double seen = (double)d->keys_seen;
    d->flops = 2.0 * (double)s->hq * seen * (double)(s->d + s->dv);
    d->kv_bytes = seen * (double)s->hkv *
                  (bench_kv_row_bytes(s->kv_dtype, s->d) + bench_kv_row_bytes(s->kv_dtype, s->dv));
    d->built = 1;
    d->built_shape = *s;
    d->built_dist = dist;
    d->built_seed = seed;
    return 0;
}

int bench_decode_prepare(bench_decode *d, const bench_shape *s, bench_dist dist, uint64_t seed)
{
    if (!same_caches(d, s, dist, seed)) {
        bench_decode_free(d);
        if (init_caches(d, s, dist, seed) != 0) {
            bench_decode_free(d);
            return -1;
        }
    }
    if (d->page_size != s->ragged.page_size || (d->page_size > 0 && !d->table)) {
        free_pages(d);
        if (init_pages(d, s, s->ragged.page_size, seed) != 0) {
            bench_decode_free(d);
            return -1;
        }
    }
    bench_decode_poison(d);
    return 0;
}

void bench_decode_free(bench_decode *d)
{
    free_pages(d);
    bench_problem_free(&d->pb);
    free_cache(&d->kc, &d->kc_scale, d->inline_scales);
    free_cache(&d->vc, &d->vc_scale, d->inline_scales);
    bench_lengths_free(&d->used);
    memset(d, 0, sizeof *d);
}

void bench_decode_poison(bench_decode *d)
{
    bench_problem_poison_outputs(&d->pb);
    if (d->paged_out.data) memset(d->paged_out.data, 0xff, d->pb.out_bytes); // NaN, as problem.c's
    if (d->paged_lse) memset(d->paged_lse, 0xff, d->pb.lse_bytes);
}

fa_status bench_decode_call_contiguous(void *arg)
{
    const bench_decode_call *c = arg;
    const bench_decode *d = c->d;
    return fa_forward(c->ctx, &d->contiguous_params, &d->pb.q, &d->kc, &d->vc, &d->pb.out, d->pb.lse);
}

fa_status bench_decode_call_paged(void *arg)
{
    const bench_decode_call *c = arg;
    const bench_decode *d = c->d;
    return fa_forward(c->ctx, &d->paged_params, &d->pb.q, &d->kp, &d->vp, &d->paged_out, d->paged_lse);
}

// Sequence b of a [count][H][S][dim] view, as a batch of one, its first `seq` rows.
static fa_tensor one_sequence(const fa_tensor *t, int64_t b, int64_t seq)
{
    fa_tensor one = *t;
    one.data = (char *)t->data + (size_t)(b * t->stride_batch) * kit_dtype_size(t->dtype);
    one.batch = 1;
    one.seq = seq;
    return one;
}

// Kv head h of sequence b of a quantized cache, its first n keys, dequantized (scale * code, as the
// library reads them) into buf [n][dim], viewed as every kv head (stride 0) of a batch of one, so that
// the oracle, which picks the kv head of its query head, reads these rows for any of them.
static fa_tensor dequantized_head(const fa_tensor *cache, const fa_tensor *scale, int64_t b, int64_t h,
                                  int64_t n, float *buf)
{
    for (int64_t key = 0; key < n; key++)
        for (int64_t y = 0; y < cache->dim; y++)
            buf[key * cache->dim + y] = bench_quantized_load(cache, scale, b, h, key, y);
    fa_tensor t = fa_tensor_bhsd(buf, FA_F32, 1, cache->heads, n, cache->dim);
    t.stride_head = 0;
    return t;
}

int bench_decode_verify(const bench_decode *d, int64_t check_rows, bench_verify_result *r)
{
    const bench_shape *s = &d->pb.shape;
    int64_t rows = d->used.count * s->hq, n = kit_sample_count(check_rows, rows);
    int quantized = kit_dtype_is_quantized(s->kv_dtype);
    bench_row_check *checks = calloc((size_t)(n > 0 ? n : 1), sizeof *checks);
    if (!checks) return -1;
    int failed_alloc = 0;
#pragma omp parallel reduction(| : failed_alloc)
    {
        double *want = malloc(sizeof(double) * (size_t)s->dv);
        // a quantized sequence's kv head, dequantized: its keys in use, at most the capacity
        float *kbuf = quantized ? malloc(sizeof(float) * (size_t)(d->capacity * s->d)) : NULL;
        float *vbuf = quantized ? malloc(sizeof(float) * (size_t)(d->capacity * s->dv)) : NULL;
        if (!want || (quantized && (!kbuf || !vbuf))) failed_alloc = 1;
#pragma omp for schedule(dynamic)
        for (int64_t k = 0; k < n; k++) {
            if (!want || (quantized && (!kbuf || !vbuf))) continue;
            int64_t row = kit_sample_row(k, n, rows), b = row / s->hq, h = row % s->hq, used = d->used.len[b];
            // q's oracle view (an exact f32 copy of a half q, problem.h); the caches as they are: the
            // oracle widens a half key exactly as it reads it (tests/kit/reference.c, ref_load), and reads
            // each key once per checked row: an f32 copy of the whole cache would cost more than it saves.
            // A quantized cache: the row's kv head dequantized, the values the library reads.
            fa_tensor q = one_sequence(&d->pb.oracle_q, b, 1), kk, vv;
            if (quantized) {
                int64_t kvh = h / (s->hq / s->hkv);
                kk = dequantized_head(&d->kc, &d->kc_scale, b, kvh, used, kbuf);
                vv = dequantized_head(&d->vc, &d->vc_scale, b, kvh, used, vbuf);
            } else {
                kk = one_sequence(&d->kc, b, used);
                vv = one_sequence(&d->vc, b, used);
            }
            double lse_want, lse_got = kit_load(kit_accum_dtype(s->dtype), d->pb.lse, row);
            ref_forward_row(&d->dense_params, &q, &kk, &vv, 0, h, 0, want, &lse_want);
            bench_row_check_fill(&checks[k], &d->pb.out, b, h, 0, want, lse_got, lse_want);
            checks[k].b = b;
            checks[k].h = h;
            checks[k].i = 0;
        }
        free(want);
        free(kbuf);
        free(vbuf);
    }
    if (!failed_alloc) bench_verify_reduce(checks, n, s->dtype, r);
    free(checks);
    return failed_alloc ? -1 : 0;
}

static int any_nan(const void *data, size_t bytes, fa_dtype t)
{
    size_t n = bytes / kit_dtype_size(t);
    for (size_t i = 0; i < n; i++)
        if (isnan(kit_load(t, data, (int64_t)i))) return 1;
    return 0;
}

const char *bench_decode_check_outputs(const bench_decode *d)
{
    fa_dtype t = d->pb.shape.dtype;
    if (any_nan(d->pb.out.data, d->pb.out_bytes, t))
        return "the contiguous call's out has a NaN (a row not written)";
    if (any_nan(d->pb.lse, d->pb.lse_bytes, kit_accum_dtype(t)))
        return "the contiguous call's lse has a NaN (a row not written)";
    if (d->page_size == 0) return NULL;
    if (memcmp(d->paged_out.data, d->pb.out.data, d->pb.out_bytes) != 0)
        return "the paged call's out differs bitwise from the contiguous call's";
    if (memcmp(d->paged_lse, d->pb.lse, d->pb.lse_bytes) != 0)
        return "the paged call's lse differs bitwise from the contiguous call's";
    return NULL;
}

typedef struct {
    bench_span *at;
    size_t n, cap;
} span_list;

// Appends [p, p + bytes), or lengthens the last span when p continues it. Returns 0, or -1.
static int span_add(span_list *l, const void *p, size_t bytes)
{
    if (l->n > 0 && (const char *)l->at[l->n - 1].data + l->at[l->n - 1].bytes == (const char *)p) {
        l->at[l->n - 1].bytes += bytes;
        return 0;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 1024;
        bench_span *at = realloc(l->at, sizeof *at * cap);
        if (!at) return -1;
        l->at = at;
        l->cap = cap;
    }
    l->at[l->n++] = (bench_span){p, bytes};
    return 0;
}

// Keys [k0, k1) of a page of pool t (or of its scales), every kv head: one span where a page holds
// its keys' rows of all heads together ([page][key][head][dim]), else one a head.
static int add_page_rows(span_list *l, const fa_tensor *t, int64_t page, int64_t k0, int64_t k1)
{
    size_t row = (size_t)t->dim * kit_dtype_size(t->dtype);
    if (t->stride_head == t->dim && t->stride_seq == t->heads * t->dim)
        return span_add(l, row_of(t, page, 0, k0), (size_t)(k1 - k0) * (size_t)t->heads * row);
    for (int64_t h = 0; h < t->heads; h++) {
        if (t->stride_seq == t->dim) {
            if (span_add(l, row_of(t, page, h, k0), (size_t)(k1 - k0) * row) != 0) return -1;
            continue;
        }
        for (int64_t key = k0; key < k1; key++)
            if (span_add(l, row_of(t, page, h, key), row) != 0) return -1;
    }
    return 0;
}

// Keys [k0, k1) of a page of pool t whose scales are inline: each row, then its scale, in address
// order (one span a page where the codes fill their 4 bytes).
static int add_inline_rows(span_list *l, const fa_tensor *t, const fa_tensor *scale, int64_t page, int64_t k0,
                           int64_t k1)
{
    int key_major = t->stride_head < t->stride_seq; // [page][key][head][dim]
    int64_t outer = key_major ? k1 - k0 : t->heads, inner = key_major ? t->heads : k1 - k0;
    for (int64_t i = 0; i < outer; i++)
        for (int64_t j = 0; j < inner; j++) {
            int64_t key = k0 + (key_major ? i : j), h = key_major ? j : i;
            if (span_add(l, row_of(t, page, h, key), (size_t)t->dim) != 0 ||
                span_add(l, row_of(scale, page, h, key), sizeof(float)) != 0)
                return -1;
        }
    return 0;
}

int bench_decode_page_spans(const bench_decode *d, bench_span **spans, size_t *n)
{
    *spans = NULL;
    *n = 0;
    if (d->page_size == 0) return 0;
    const bench_shape *s = &d->built_shape;
    const fa_tensor *pools[4] = {&d->kp, &d->vp, &d->kp_scale, &d->vp_scale};
    span_list l = {0};
    int64_t p = d->page_size;
    for (int64_t b = 0; b < d->used.count; b++) {
        int64_t key, end;
        kit_visible_keys(s->causal, 1, d->used.len[b], s->mods.window_left, s->mods.window_right, 0, &key,
                         &end);
        while (key < end) {
            int64_t j = key / p, k1 = end - j * p < p ? end - j * p : p,
                    page = d->table[b * d->pages_per_seq + j];
            int failed = 0;
            if (d->inline_scales)
                failed = add_inline_rows(&l, &d->kp, &d->kp_scale, page, key - j * p, k1) != 0 ||
                         add_inline_rows(&l, &d->vp, &d->vp_scale, page, key - j * p, k1) != 0;
            for (int t = 0; t < 4 && !d->inline_scales && !failed; t++)
                failed = pools[t]->data && add_page_rows(&l, pools[t], page, key - j * p, k1) != 0;
            if (failed) {
                free(l.at);
                return -1;
            }
            key = j * p + k1;
        }
    }
    *spans = l.at;
    *n = l.n;
    return 0;
}
