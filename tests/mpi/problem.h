/* SPDX-License-Identifier: BSD-3-Clause */
/* The problems of fa-mpi-tests. Every rank draws the same global sequence from the case's seed
 * (q, k, v, dout, the bias, the ALiBi slopes and the sinks), computes the single-process results on
 * it, and passes the rows of its own shard to fa_mpi_*: as strided views into the global tensors
 * (CONTIGUOUS) or as copies (ZIGZAG, whose two chunks are not one run, or when a case asks), with
 * every output in a guarded buffer filled with canary bytes, so that a test can tell which bytes
 * a call wrote. */
#ifndef FA_MPI_TEST_PROBLEM_H
#define FA_MPI_TEST_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "tensors.h" /* the kit's guarded blocks (kit_buf) */
#include "flashattn_mpi.h"

/* ---- cases ------------------------------------------------------------------------------- */

typedef enum {
    MT_BIAS_NONE = 0,
    MT_BIAS_FULL,   /* [B][Hq][N][N], the rank passing its query rows: [B][Hq][n_local][N] */
    MT_BIAS_MASKED, /* the same with -inf entries, and whole rows of -inf (rows that see no key) */
    MT_BIAS_ROW     /* [1][Hq][1][N]: one row broadcast over batches and query rows, on every rank */
} mt_bias;

typedef enum {
    MT_SPLIT_EVEN = 0,    /* CONTIGUOUS runs as equal as they can be */
    MT_SPLIT_UNEVEN,      /* CONTIGUOUS runs of lengths growing with the rank (r + 1 parts of P(P+1)/2) */
    MT_SPLIT_EMPTY_FIRST, /* rank 0 holds no row, the others split N evenly (P = 1: rank 0 holds all) */
    MT_SPLIT_EMPTY_LAST   /* rank P-1 holds no row (P = 1: rank 0 holds all) */
} mt_split;

/* One problem: its shape, score modifiers, layout and how the shard is passed. */
typedef struct {
    const char *name;
    fa_mpi_layout layout;
    mt_split split; /* CONTIGUOUS only */
    int64_t batch, q_heads, kv_heads, len, dim, dim_v;
    fa_causal causal;
    int windowed; /* 0: window_left and window_right are -1 whatever they say */
    int64_t window_left, window_right;
    int64_t diagonal_shift;
    double softcap;
    int alibi, sinks;
    mt_bias bias;
    int bshd;         /* tensors [B][S][H][D] (global and local) instead of [B][H][S][D] */
    int copy;         /* CONTIGUOUS: pass copies instead of views into the global tensors */
    int no_lse;       /* the forward gets lse = NULL (and no backward runs) */
    double dropout_p; /* 0: off; else dropout with a seed and offset drawn from the case's seed */
} mt_case;

/* "name f64 zigzag B=.. Hq=.. ..." for messages. */
void mt_case_str(const mt_case *c, fa_dtype dtype, int size, char *buf, size_t n);

/* ---- the global problem ------------------------------------------------------------------ */

typedef struct {
    mt_case c;
    fa_dtype dtype;
    int64_t n; /* N, the global sequence length */
    fa_tensor q, k, v, dout;
    fa_tensor bias; /* valid when c.bias != MT_BIAS_NONE */
    float *slopes, *sinks;
    fa_params p; /* the parameters of the whole sequence: p.bias points at this struct's bias */
    kit_buf mem[5];
} mt_global;

/* Draws the global problem of case c from seed: q, k in [-2, 2), v and dout in [-1, 1) (rounded to
 * the dtype: bf16 and f16 hold the values the oracles read), bias (the accumulation type) in
 * [-2, 2) (MASKED: about 1 in 8 entries -inf and, in head 0, every row i with i % 11 == 3 all -inf),
 * slopes 2^(-8(h+1)/Hq), sinks in [-1, 3). The same bytes on every rank. g must stay where it is
 * (g->p.bias points into it). */
void mt_global_make(mt_global *g, const mt_case *c, fa_dtype dtype, uint64_t seed);
void mt_global_free(mt_global *g);

/* ---- shards ------------------------------------------------------------------------------ */

/* The rows rank `rank` of `size` holds: n rows, local row i at global position pos[i]; for
 * CONTIGUOUS one run from `start`. */
typedef struct {
    int64_t n, start;
    int64_t *pos;
} mt_shard;

void mt_shard_make(mt_shard *s, const mt_case *c, int64_t n_global, int rank, int size);
void mt_shard_free(mt_shard *s);

/* ---- a rank's arguments ------------------------------------------------------------------ */

typedef struct {
    int view; /* inputs are views into the global tensors, outputs views into global-sized buffers */
    fa_tensor q, k, v, dout, bias;
    fa_tensor out, dq, dk, dv;
    void *lse;          /* contiguous [B][Hq][n] of the accumulation type */
    fa_tensor lse_view; /* the same as a [B][Hq][n][1] tensor, for comparisons */
    fa_params p;        /* g's parameters with this rank's bias rows, and dsinks (Hq floats) with sinks */
    kit_buf in[5], out_buf, lse_buf, grad_buf[3], dsinks_buf;
} mt_local;

/* The rank's arguments for shard s of g, every output buffer filled with canary bytes. l must stay
 * where it is (l->p.bias points into it). */
void mt_local_make(mt_local *l, const mt_global *g, const mt_shard *s);
void mt_local_free(mt_local *l);
void mt_local_fill_canary(mt_local *l);      /* out, lse, gradients and dsinks */
void mt_local_fill_grad_canary(mt_local *l); /* gradients and dsinks only */

/* ---- elements ---------------------------------------------------------------------------- */

/* Sizes, the accumulation type, rounding, loads and stores are the test kit's (tests/kit/dtype.h). */
const char *mt_dtype_name(fa_dtype t);
/* A [B][H][S][D] tensor over data, [B][S][H][D] with bshd. */
fa_tensor mt_tensor(void *data, fa_dtype t, int64_t b, int64_t h, int64_t s, int64_t d, int bshd);
/* Rows [start, start + n) of t, as a view. */
fa_tensor mt_rows_view(const fa_tensor *t, int64_t start, int64_t n);
/* The elements of t as doubles, [B][H][S][D] contiguous (malloc'ed). */
double *mt_values(const fa_tensor *t);
/* Largest |x| over the elements of t. */
double mt_max_abs(const fa_tensor *t);

#endif
