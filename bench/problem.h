/* SPDX-License-Identifier: BSD-3-Clause */
/* The tensors one benchmark run works on: allocated once, 64-byte aligned, filled from a seed.
 * The backward pass's tensors (dout, dq, dk, dv) exist only when the run times a backward.
 * q, out, dout and dq have shape.dtype, k, v, dk and dv shape.kv_dtype (dtypes.h); a quantized k and
 * v come with their scales (tests/kit/dtype.h). With shape.shared_kv, v is a view of k's memory. */
#ifndef FA_BENCH_PROBLEM_H
#define FA_BENCH_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"
#include "options.h"
#include "tensors.h"

typedef struct {
    bench_shape shape;
    kit_problem io;         /* the test kit's problem (tests/kit/tensors.h): owns q .. dv and lse */
    fa_tensor q, k, v, out; /* io's views, in the requested layout */
    void *lse;              /* contiguous [B][Hq][Nq] of double (f64) or float (f32, bf16, f16) */
    size_t out_bytes, lse_bytes;
    int has_gradients;          /* 1: the four tensors below exist; 0: their data is NULL */
    fa_tensor dout, dq, dk, dv; /* dout shaped like out, dq/dk/dv like q/k/v, same layout */
    size_t dq_bytes, dk_bytes, dv_bytes;
    /* The score modifiers' tensors (modifiers.h), present as shape.mods asks: */
    fa_tensor bias;      /* data NULL without a bias; else bhsd, [B][1][1][Nk] or [B][Hq][Nq][Nk] */
    size_t bias_bytes;   /* its allocation */
    float *alibi_slopes; /* Hq slopes, or NULL */
    float *sinks;        /* Hq sink logits, or NULL */
    float *dsinks;       /* Hq floats, with sinks and gradients (poisoned like the outputs), or NULL */
    fa_tensor dbias;     /* --dbias, gradients: the bias's shape, poisoned like the outputs; else no data */
    /* A quantized k and v's scales (fa_params.k_scale, v_scale): f32 [B][Hkv][Nk][1], contiguous in
     * that order whatever the layout, one per token and head; data NULL for other types. With
     * shared_kv, v_scale is k_scale (the same memory). */
    fa_tensor k_scale, v_scale;
    /* The inputs as the float64 oracles (tests/kit/reference.h) read them. An f32 or f64 input is its own
     * view; a bf16 or f16 one gets an f32 copy of its rounded values (exact: every half value is a
     * float), which any oracle written for f32 reads, each element once converted rather than at every
     * one of its Nq or Nk reads; a quantized one an f32 copy of scale * code, the float product the
     * library reads. So the oracle judges the library on the very values it was given. dout's exists
     * with gradients only. With shared_kv, oracle_v is a view of oracle_k's memory as v is of k's. */
    fa_tensor oracle_q, oracle_k, oracle_v, oracle_dout;
    void *oracle_copies[4]; /* the copies' buffers (NULL for an input that is its own view) */
} bench_problem;

/* Allocates and fills q, k, v (and, with_gradients, dout) from (seed, dist), and their oracle views;
 * out, lse (and dq, dk, dv) are filled with NaN (all-ones bytes, a NaN in all four types) so that a
 * value the library never writes cannot pass verification.
 * Returns 0, or -1 after printing why to stderr. */
int bench_problem_init(bench_problem *p, const bench_shape *s, bench_dist dist, uint64_t seed,
                       int with_gradients);

/* Refills every output (out, lse, and dq, dk, dv when present) with NaN, before a call whose output is
 * about to be verified. */
void bench_problem_poison_outputs(bench_problem *p);

/* Frees every buffer; a zeroed or half-initialized problem is fine. */
void bench_problem_free(bench_problem *p);

/* Sets params->k_scale and v_scale to the problem's scales (NULL when k and v are not quantized). */
void bench_problem_kv_scales(const bench_problem *p, fa_params *params);

/* Fills a quantized cache row by row (kit_quantize_row): row (b, h, s) of `codes` from the values an f32
 * tensor of the same sizes gets from (seed, stream) (bench_sample at ((b*H + h)*S + s)*dim + d, as
 * problem.c's fill and decode_batch.c's caches draw them), its scale into scale(b, h, s). With used
 * non-NULL, rows s >= used[b] (keys beyond a sequence's keys in use) get code 0 and a NaN scale
 * instead, so that a read of them shows in the outputs. Rows in parallel. Returns 0, or -1 if memory
 * ran out. */
int bench_fill_quantized(const fa_tensor *codes, const fa_tensor *scale, bench_dist dist, uint64_t seed,
                         uint64_t stream, const int64_t *used);

/* The dequantized value scale(b, h, s) * code(b, h, s, d) of a quantized cache, as the library reads it. */
float bench_quantized_load(const fa_tensor *codes, const fa_tensor *scale, int64_t b, int64_t h, int64_t s,
                           int64_t d);

/* Value index of tensor stream `stream` drawn from (seed, dist): the generator every input of a run is
 * filled from (counter-based: a value depends on these four numbers only). */
double bench_sample(bench_dist dist, uint64_t seed, uint64_t stream, uint64_t index);

/* A 64-byte aligned buffer of at least bytes bytes (freed with free()), or NULL after a message naming
 * what. */
void *bench_alloc_aligned(size_t bytes, const char *what);

/* a*b*c*d elements of size bytes, or 0 when that overflows (sizes come from the command line). */
size_t bench_checked_bytes(int64_t a, int64_t b, int64_t c, int64_t d, size_t size);

/* Forward FLOP of one call: 2*B*Hq*V*(D+Dv) with V the (i, j) pairs of one head visible under the
 * causal mask and the window (bench_visible_pairs, modifiers.h; see --help). */
double bench_forward_flops(const bench_shape *s);

/* FLOP of one timed call of a pass: forward x 1, x 2.5 (bwd) or x 3.5 (fwdbwd). */
double bench_pass_flops(const bench_shape *s, bench_pass pass);

#endif
