/* SPDX-License-Identifier: BSD-3-Clause */
// Benchmark inputs and outputs: aligned allocation, seeded fill, tensor views.
#include "problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtypes.h"
#include "huge_pages.h"
#include "modifiers.h"
#include "rng.h"
#include "tensors.h"

// Cache-line alignment, as the library's own arenas use: no tensor starts mid-line.
#define BENCH_ALIGN 64

// The kit's keyed draws give q, k, v and dout streams 1 to 4 of the seed (tests/kit/tensors.h), so a
// quantized k and v are drawn from the same streams as an f32 run's; modifiers.c has the next ones.
enum { STREAM_K = 2, STREAM_V = 3 };

static double sample(bench_dist dist, uint64_t key, uint64_t index)
{
    if (dist == BENCH_DIST_UNIFORM) return 2.0 * kit_unit_uniform(key, index) - 1.0;
    if (dist == BENCH_DIST_PEAKY) return 10.0 * (2.0 * kit_unit_uniform(key, index) - 1.0);
    return kit_unit_normal(key, index);
}

size_t bench_checked_bytes(int64_t a, int64_t b, int64_t c, int64_t d, size_t size)
{
    int64_t dims[4] = {a, b, c, d};
    uint64_t n = size;
    for (int i = 0; i < 4; i++) {
        if (dims[i] != 0 && n > (UINT64_MAX / 2) / (uint64_t)dims[i]) return 0;
        n *= (uint64_t)dims[i];
    }
    if (n > SIZE_MAX - BENCH_ALIGN) return 0;
    return (size_t)n;
}

double bench_sample(bench_dist dist, uint64_t seed, uint64_t stream, uint64_t index)
{
    return sample(dist, kit_stream_key(seed, stream), index);
}

void *bench_alloc_aligned(size_t bytes, const char *what)
{
    void *p = bench_alloc_buffer(bytes ? bytes : 1, BENCH_ALIGN); // huge pages where asked (huge_pages.h)
    if (!p) fprintf(stderr, "fa-bench: cannot allocate %s (%.1f MiB)\n", what, (double)bytes / 1048576.0);
    return p;
}

static fa_tensor make_view(void *data, fa_dtype t, const bench_shape *s, int64_t heads, int64_t seq,
                           int64_t dim)
{
    if (s->layout == BENCH_LAYOUT_BSHD) return fa_tensor_bshd(data, t, s->b, seq, heads, dim);
    return fa_tensor_bhsd(data, t, s->b, heads, seq, dim);
}

int bench_fill_quantized(const fa_tensor *codes, const fa_tensor *scale, bench_dist dist, uint64_t seed,
                         uint64_t stream, const int64_t *used)
{
    const fa_tensor t = *codes, sc = *scale;
    int64_t rows = t.batch * t.heads * t.seq, dim = t.dim;
    int failed = 0;
#pragma omp parallel reduction(| : failed)
    {
        float *x = malloc(sizeof(float) * (size_t)dim); // the row as an f32 run holds it
        if (!x) failed = 1;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++) {
            if (!x) continue;
            int64_t s = r % t.seq, h = r / t.seq % t.heads, b = r / t.seq / t.heads;
            uint8_t *row = (uint8_t *)t.data + b * t.stride_batch + h * t.stride_head + s * t.stride_seq;
            float *row_scale =
                (float *)sc.data + b * sc.stride_batch + h * sc.stride_head + s * sc.stride_seq;
            if (used && s >= used[b]) {
                memset(row, 0, (size_t)dim);
                *row_scale = NAN;
                continue;
            }
            for (int64_t d = 0; d < dim; d++)
                x[d] = (float)bench_sample(dist, seed, stream, (uint64_t)(r * dim + d));
            *row_scale = kit_quantize_row(t.dtype, x, dim, row);
        }
        free(x);
    }
    if (failed) fprintf(stderr, "fa-bench: out of memory while quantizing a cache\n");
    return failed ? -1 : 0;
}

float bench_quantized_load(const fa_tensor *codes, const fa_tensor *scale, int64_t b, int64_t h, int64_t s,
                           int64_t d)
{
    const uint8_t *row = (const uint8_t *)codes->data + b * codes->stride_batch + h * codes->stride_head +
                         s * codes->stride_seq;
    float sc = ((const float *)
                    scale->data)[b * scale->stride_batch + h * scale->stride_head + s * scale->stride_seq];
    return kit_quant_value(codes->dtype, row, d, sc);
}

// *oracle = t itself for f32 and f64; for a half type, an f32 tensor of the same sizes and layout
// holding t's values widened (exactly), for a quantized one holding scale * code (its scales in
// *scale), its buffer kept in *copy. Returns 0, or -1 after a message.
static int make_oracle_view(const fa_tensor *t, const fa_tensor *scale, const bench_shape *s,
                            fa_tensor *oracle, void **copy, const char *what)
{
    *oracle = *t;
    int quantized = kit_dtype_is_quantized(t->dtype);
    if (!kit_dtype_is_half(t->dtype) && !quantized) return 0;
    size_t bytes = bench_checked_bytes(t->batch, t->heads, t->seq, t->dim, sizeof(float));
    if (!bytes) {
        fprintf(stderr, "fa-bench: %s is too large to allocate\n", what);
        return -1;
    }
    if (!(*copy = bench_alloc_aligned(bytes, what))) return -1;
    *oracle = make_view(*copy, FA_F32, s, t->heads, t->seq, t->dim);
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t x = 0; x < t->seq; x++) {
                int64_t from = b * t->stride_batch + h * t->stride_head + x * t->stride_seq;
                int64_t to = b * oracle->stride_batch + h * oracle->stride_head + x * oracle->stride_seq;
                for (int64_t d = 0; d < t->dim; d++)
                    ((float *)*copy)[to + d] = quantized ? bench_quantized_load(t, scale, b, h, x, d)
                                                         : (float)kit_load(t->dtype, t->data, from + d);
            }
    return 0;
}

// The kit's keyed draws: (seed, dist) names the same values in every layout and in fa-bench-mpi.
static kit_problem_opts kit_opts(const bench_shape *s, bench_dist dist, uint64_t seed, int with_gradients)
{
    double amp = dist == BENCH_DIST_PEAKY ? 10.0 : 1.0; // as sample() draws
    // --shared-kv: v is the first Dv dims of k's rows, k's memory (DeepSeek's MLA latent cache)
    kit_problem_opts o = {.gradients = with_gradients,
                          .shared_kv = s->shared_kv,
                          .align = BENCH_ALIGN,
                          .out_fill = KIT_POISON,
                          .draw = dist == BENCH_DIST_NORMAL ? KIT_DRAW_KEYED_NORMAL : KIT_DRAW_KEYED_UNIFORM,
                          .seed = seed,
                          .qk_amp = amp,
                          .v_amp = amp};
    return o;
}

// k's and v's scales for a quantized cache, filled with the codes. Returns 0, or -1 after a message.
static int init_quantized(bench_problem *p, bench_dist dist, uint64_t seed, size_t scale_bytes)
{
    const bench_shape *s = &p->shape;
    void *ks = bench_alloc_aligned(scale_bytes, "k's scales");
    void *vs = ks && !s->shared_kv ? bench_alloc_aligned(scale_bytes, "v's scales") : ks;
    p->k_scale = fa_tensor_bhsd(ks, FA_F32, s->b, s->hkv, s->nk, 1);
    p->v_scale = fa_tensor_bhsd(vs, FA_F32, s->b, s->hkv, s->nk, 1);
    if (!vs) return -1;
    if (bench_fill_quantized(&p->k, &p->k_scale, dist, seed, STREAM_K, NULL) != 0) return -1;
    return s->shared_kv ? 0 : bench_fill_quantized(&p->v, &p->v_scale, dist, seed, STREAM_V, NULL);
}

int bench_problem_init(bench_problem *p, const bench_shape *s, bench_dist dist, uint64_t seed,
                       int with_gradients)
{
    memset(p, 0, sizeof *p);
    p->shape = *s;
    // The sizes come from the command line: refuse what overflows before the kit multiplies them.
    size_t es = kit_dtype_size(s->dtype), kv_es = kit_dtype_size(s->kv_dtype);
    if (!bench_checked_bytes(s->b, s->hq, s->nq, s->d > s->dv ? s->d : s->dv, es) ||
        !bench_checked_bytes(s->b, s->hkv, s->nk, s->d > s->dv ? s->d : s->dv, kv_es) ||
        !bench_checked_bytes(s->b, s->hq, s->nq, 1, sizeof(double)) ||
        !bench_checked_bytes(s->b, s->hkv, s->nk, 1, sizeof(float))) {
        fprintf(stderr, "fa-bench: the shape is too large to allocate\n");
        return -1;
    }
    kit_shape ks = {s->dtype, s->kv_dtype, s->b, s->hq, s->hkv,
                    s->nq,    s->nk,       s->d, s->dv, s->layout == BENCH_LAYOUT_BSHD ? KIT_BSHD : KIT_BHSD};
    kit_problem_opts o = kit_opts(s, dist, seed, with_gradients);
    const char *failed = kit_problem_make(&p->io, &ks, &o);
    if (failed) {
        fprintf(stderr, "fa-bench: cannot allocate %s\n", failed);
        return -1;
    }
    const kit_problem *io = &p->io;
    p->q = io->q, p->k = io->k, p->v = io->v, p->out = io->out, p->lse = io->lse;
    p->dout = io->dout, p->dq = io->dq, p->dk = io->dk, p->dv = io->dv;
    p->has_gradients = with_gradients;
    p->out_bytes = io->buf[KIT_OUT].bytes;
    p->lse_bytes = io->lse_buf.bytes;
    p->dq_bytes = io->buf[KIT_DQ].bytes;
    p->dk_bytes = io->buf[KIT_DK].bytes;
    p->dv_bytes = io->buf[KIT_DV].bytes;
    if ((kit_dtype_is_quantized(s->kv_dtype) &&
         init_quantized(p, dist, seed, bench_checked_bytes(s->b, s->hkv, s->nk, 1, sizeof(float))) != 0) ||
        bench_modifiers_init(p, dist, seed) != 0 ||
        make_oracle_view(&p->q, NULL, s, &p->oracle_q, &p->oracle_copies[0], "q's oracle copy") != 0 ||
        make_oracle_view(&p->k, &p->k_scale, s, &p->oracle_k, &p->oracle_copies[1], "k's oracle copy") != 0 ||
        (!s->shared_kv && make_oracle_view(&p->v, &p->v_scale, s, &p->oracle_v, &p->oracle_copies[2],
                                           "v's oracle copy") != 0) ||
        (with_gradients && make_oracle_view(&p->dout, NULL, s, &p->oracle_dout, &p->oracle_copies[3],
                                            "dout's oracle copy") != 0)) {
        bench_problem_free(p);
        return -1;
    }
    if (s->shared_kv) {
        p->oracle_v = p->oracle_k;
        p->oracle_v.dim = s->dv;
    }
    bench_problem_poison_outputs(p); // the modifiers' outputs (dsinks, dbias) too
    return 0;
}

void bench_problem_kv_scales(const bench_problem *p, fa_params *params)
{
    params->k_scale = p->k_scale.data ? &p->k_scale : NULL;
    params->v_scale = p->v_scale.data ? &p->v_scale : NULL;
}

void bench_problem_poison_outputs(bench_problem *p)
{
    // All-ones bytes are a NaN in binary64, binary32, bfloat16 and binary16.
    memset(p->out.data, 0xff, p->out_bytes);
    memset(p->lse, 0xff, p->lse_bytes);
    if (!p->has_gradients) return;
    memset(p->dq.data, 0xff, p->dq_bytes);
    memset(p->dk.data, 0xff, p->dk_bytes);
    memset(p->dv.data, 0xff, p->dv_bytes);
    if (p->dsinks) memset(p->dsinks, 0xff, sizeof(float) * (size_t)p->shape.hq);
    if (p->dbias.data) memset(p->dbias.data, 0xff, p->bias_bytes);
}

void bench_problem_free(bench_problem *p)
{
    kit_problem_free(&p->io); // q, k, v, out, lse and the backward's tensors
    if (p->v_scale.data != p->k_scale.data) free(p->v_scale.data); // --shared-kv: one buffer
    free(p->k_scale.data);
    free(p->bias.data);
    free(p->alibi_slopes);
    free(p->sinks);
    free(p->dsinks);
    free(p->dbias.data);
    for (int i = 0; i < 4; i++) free(p->oracle_copies[i]);
    memset(p, 0, sizeof *p);
}

double bench_forward_flops(const bench_shape *s)
{
    double pairs = (double)s->b * (double)s->hq * (double)bench_visible_pairs(s);
    return 2.0 * pairs *
           (double)(s->d + s->dv); // Q·Kᵀ and P·V on each visible pair, one multiply-add = 2 FLOP
}

double bench_pass_flops(const bench_shape *s, bench_pass pass)
{
    // The backward recomputes Q·Kᵀ and adds dO·Vᵀ, Pᵀ·dO, dS·K and dSᵀ·Q: 2.5 forwards when Dv = D,
    // the convention FlashAttention's papers use, kept for every Dv so numbers stay comparable.
    double forward = bench_forward_flops(s);
    switch (pass) {
    case BENCH_PASS_BWD: return 2.5 * forward;
    case BENCH_PASS_FWDBWD: return 3.5 * forward;
    default: return forward;
    }
}
