/* SPDX-License-Identifier: BSD-3-Clause */
/* Problem building for every consumer of the kit: a shape (sizes, the dtypes of q's and k's groups,
 * a layout, whether gradients are wanted) becomes allocated buffers and fa_tensor views, with the
 * consumers' differences as options: alignment, canary guards around each buffer, the byte the
 * outputs are filled with, and the draw policy of the inputs (one sequence from a state, as the
 * suites draw; or keyed draws that give element (b, h, s, d) the same value in every layout and
 * in any order, as fa-bench and fa-bench-mpi draw). Guarded blocks (kit_buf) serve alone too. */
#ifndef FA_KIT_TENSORS_H
#define FA_KIT_TENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"

/* ---- guarded blocks ----------------------------------------------------------------------- */

#define KIT_GUARD  ((size_t)64)          /* the suites' guard on either side of a block */
#define KIT_CANARY ((unsigned char)0xA5) /* guards, and outputs whose writes a test inspects */
#define KIT_POISON ((unsigned char)0xFF) /* all-ones bytes: a NaN in f64, f32, bf16 and f16 */

typedef struct {
    unsigned char *base; /* allocation start (the leading guard); NULL for none */
    size_t bytes;        /* user bytes */
    size_t guard;        /* guard bytes on either side */
} kit_buf;

/* The suites' block: KIT_GUARD guards, malloc's alignment, every byte KIT_CANARY; aborts without
 * memory. */
kit_buf kit_buf_alloc(size_t bytes);
void kit_buf_free(kit_buf *b);
void *kit_buf_data(const kit_buf *b);
/* Every byte, guards included, = fill. */
void kit_buf_fill(kit_buf *b, unsigned char fill);
/* 1 when both guards still hold KIT_CANARY. */
int kit_buf_guards_intact(const kit_buf *b);
/* 1 when every byte, guards included, is still KIT_CANARY: nothing was written. */
int kit_buf_untouched(const kit_buf *b);
/* 1 when every byte of b (guards included) that is not an element of `view` (a view into b's user
 * bytes) is still KIT_CANARY: a call wrote only the elements it defines. */
int kit_buf_only_view_written(const kit_buf *b, const fa_tensor *view);
/* A copy of the whole block (guards included), for byte-exact "nothing changed" checks. */
unsigned char *kit_buf_snapshot(const kit_buf *b);
/* 1 when the block (guards included) equals the snapshot. */
int kit_buf_equals_snapshot(const kit_buf *b, const unsigned char *snapshot);

/* ---- problems ------------------------------------------------------------------------------- */

typedef enum { KIT_BHSD = 0, KIT_BSHD = 1 } kit_layout; /* every tensor [B][H][S][D] or [B][S][H][D] */

/* The tensors of a problem, in the order of kit_problem.t and .buf. */
enum { KIT_Q, KIT_K, KIT_V, KIT_OUT, KIT_DOUT, KIT_DQ, KIT_DK, KIT_DV, KIT_TENSORS };

typedef struct {
    fa_dtype q_dtype, kv_dtype; /* q's group: q, out, dout, dq; k's group: k, v, dk, dv */
    int64_t batch, q_heads, kv_heads, q_len, kv_len, dim, dim_v;
    kit_layout layout;
} kit_shape;

typedef enum {
    /* One kit_splitmix64 sequence from *state, tensor after tensor (q, k, v, dout), element after
     * element in (b, h, s, d) order: uniform in [-amp, amp), -amp + 2·amp·u. The suites' policy. */
    KIT_DRAW_SEQUENTIAL = 0,
    /* Element (b, h, s, d) of q, k, v, dout takes amp·(2u - 1), u = kit_unit_uniform(key, index) with
     * key = kit_stream_key(seed, 1, 2, 3, 4 respectively) and index its flat [B][H][S][D] position:
     * the same value in every layout and in any order. fa-bench's policy. */
    KIT_DRAW_KEYED_UNIFORM,
    /* The same keys, amp·kit_unit_normal(key, index). */
    KIT_DRAW_KEYED_NORMAL
} kit_draw;

typedef struct {
    int gradients;          /* 1: dout, dq, dk and dv too */
    int shared_kv;          /* 1: v is the first dim_v columns of k's rows, in k's memory (MLA's cache) */
    size_t align;           /* each block's user part at a multiple of this (a power of two dividing
                             guard, or guard 0); 0: malloc's */
    size_t guard;           /* KIT_CANARY guard bytes on either side of each block */
    unsigned char out_fill; /* every byte of out, lse, dq, dk, dv: KIT_CANARY or KIT_POISON */
    kit_draw draw;
    uint64_t *state; /* KIT_DRAW_SEQUENTIAL's sequence, advanced by one draw per element */
    uint64_t seed;   /* the keyed draws' */
    double qk_amp;   /* amplitude of q and k */
    double v_amp;    /* amplitude of v and dout */
} kit_problem_opts;

/* The suites' options: KIT_GUARD canary guards, malloc's alignment, canary outputs, sequential
 * draws from *state with q, k in [-qk_amp, qk_amp) and v, dout in [-1, 1). */
kit_problem_opts kit_suite_opts(uint64_t *state, double qk_amp);

typedef struct {
    kit_shape shape;
    union { /* by name or by index (KIT_Q ..): the gradients' data is NULL without opts.gradients */
        fa_tensor t[KIT_TENSORS];
        struct {
            fa_tensor q, k, v, out, dout, dq, dk, dv;
        };
    };
    kit_buf buf[KIT_TENSORS]; /* their storage; buf[KIT_V] is empty with opts.shared_kv */
    void *lse;                /* contiguous [B][Hq][Nq] of kit_accum_dtype(q_dtype) */
    kit_buf lse_buf;
} kit_problem;

/* Allocates every tensor of s (the gradients' with opts->gradients) and lse, the inputs q, k, v
 * (and dout) drawn as opts says, except a quantized k and v, which need a scale per row: their
 * codes are the caller's to fill. Returns NULL, or the name of the tensor ("q", "lse", ...) that
 * memory ran out for, with pr freed. */
const char *kit_problem_make(kit_problem *pr, const kit_shape *s, const kit_problem_opts *opts);
/* Frees every block; a zeroed problem is fine. */
void kit_problem_free(kit_problem *pr);
/* Refills every byte (guards included) of out and lse, or of dq, dk and dv, with fill. */
void kit_problem_fill_outputs(kit_problem *pr, unsigned char fill);
void kit_problem_fill_gradients(kit_problem *pr, unsigned char fill);
/* 1 when the guards of every block still hold KIT_CANARY. */
int kit_problem_guards_intact(const kit_problem *pr);

#endif
