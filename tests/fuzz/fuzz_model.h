/* SPDX-License-Identifier: BSD-3-Clause */
/* What include/flashattn.h lets a call return, worked out from its arguments alone.
 *
 * For each status class, in the header's order (NULL, ARG, DTYPE, SHAPE, STRIDE, ALIAS,
 * UNSUPPORTED, BUSY), the model says whether the arguments certainly have a problem of that
 * class (PRESENT: the header documents the refusal), may have one (MAYBE: the library's test is
 * documented as only sufficient, e.g. self-overlap of unusual strides, or the harness cannot tell
 * because a view lies outside its buffers), or certainly not (ABSENT). The call must then return
 * the first PRESENT class or a MAYBE class before it, and FA_OK only when no class is PRESENT.
 *
 * The rules are written from the header's text, not from src/api/validate.c: where they disagree, the
 * fuzzer reports it. The score modifiers' arguments are judged like the tensors: the bias is an
 * input view ([B|1][Hq|1][Nq|1][Nk], of the accumulation type: f64 for f64 q, else f32),
 * alibi_slopes and sinks are inputs of Hq floats, dsinks an output of Hq floats that fa_forward ignores
 * and fa_backward refuses without sinks.
 * A batch of sequences (fa_seqs) changes the batch axes' rules, brings its arrays as inputs (read
 * from the pool: the offsets, the keys in use and the pages in use must fit) and makes a bias
 * and, in the backward, paged keys FA_ERR_UNSUPPORTED. A quantized cache (k and v FA_I8, FA_F8_E4M3
 * or FA_F8_E5M2 under f32 q and out) needs p.k_scale and p.v_scale, f32 views shaped like k and v
 * with dim 1 (each other size k's or 1), inputs like the bias; scales with any other k are
 * FA_ERR_ARG, and its backward FA_ERR_UNSUPPORTED. p.dbias is an output of fa_backward shaped like
 * the bias, of its dtype, that needs the bias and broadcasts (stride 0) where the bias does; on those
 * axes it is one element, written once (its "written view"). fa_merge has rules of its own
 * (fuzz_model_merge.c). */
#ifndef FA_FUZZ_MODEL_H
#define FA_FUZZ_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"
#include "fuzz_input.h"

/* One call's arguments. The bias, the per-head arrays and the sequences are p's. fa_merge (merge
 * set): n parts outs[k] with lses[k], merged into t[FZ_OUT] and lse (lse_out set). fa_convert
 * (convert set): t[FZ_Q] converted into t[FZ_OUT]. */
typedef struct {
    int backward, merge, convert;
    const fa_params *p;
    int n; /* 4 (fa_forward: q k v out) or 8 (fa_backward: q k v out dout dq dk dv) */
    const fa_tensor *t[FZ_VIEWS];
    int is_out[FZ_VIEWS]; /* out in the forward; dq, dk, dv in the backward */
    int raw[FZ_VIEWS];    /* strides from the raw layout: the self-overlap test may refuse more */
    int dbias_raw;        /* the same of p.dbias */
    const void *lse;
    int lse_out; /* the forward writes lse, the backward reads it */
    int parts;   /* fa_merge's n */
    const fa_tensor *outs;
    const void *const *lses;
} fz_call;

/* The one allocation every view of the harness lives in. */
typedef struct {
    const unsigned char *base;
    size_t bytes;
} fz_pool;

enum { FZ_ABSENT = 0, FZ_MAYBE = 1, FZ_PRESENT = 2 };
#define FZ_CLASSES 8
/* Bits of the element map: the views use bits 0..7 (FZ_Q..FZ_DV), then these, then the arrays of
 * the sequences. fa_merge numbers its own: part k (k < 8) bit k, its lse bit FZ_MERGE_LSES + k,
 * then out and the merged lse. */
enum {
    FZ_BIAS_BIT = FZ_BIAS,
    FZ_LSE_BIT,
    FZ_SLOPES_BIT,
    FZ_SINKS_BIT,
    FZ_DSINKS_BIT,
    FZ_CUQ_BIT,
    FZ_CUK_BIT,
    FZ_USED_BIT,
    FZ_TABLE_BIT,
    FZ_KSCALE_BIT, /* p.k_scale and p.v_scale: input views, like the bias */
    FZ_VSCALE_BIT,
    FZ_DBIAS_BIT, /* p.dbias: an output view of fa_backward (fa_forward ignores it) */
    FZ_CALL_BITS
};
enum { FZ_MERGE_LSES = 8, FZ_MERGE_OUT_BIT = 16, FZ_MERGE_LSE_BIT, FZ_MERGE_BITS };
enum { FZ_CONVERT_SRC_BIT = 0, FZ_CONVERT_DST_BIT = 1 }; /* fa_convert's two views */
#define FZ_BITS FZ_CALL_BITS                             /* the larger of the two */
_Static_assert((int)FZ_CALL_BITS >= (int)FZ_MERGE_BITS && (int)FZ_CALL_BITS <= 32, "FZ_BITS: the map's bits");
#define FZ_MERGE_SEEN 8 /* parts with bits of their own; later ones repeat them */

typedef struct {
    int state[FZ_CLASSES];
    int refused;   /* some class is PRESENT: the call must not succeed */
    int all_fit;   /* every non-empty view, and the lse, lies inside the pool */
    double work;   /* the score pairs times (D+Dv) (B·Hq·Nq·Nk·(D+Dv) for a dense batch), when the
                      shapes are consistent */
    char why[200]; /* the first PRESENT class and its reason, for failure messages */
    /* the element map, in units of 4 bytes (2 when a view is bf16 or f16), the float arrays' size
     * and a divisor of every element size: bit i = argument i (FZ_BITS) covers it */
    uint32_t *map;
    size_t units, unit;
    int marked[FZ_BITS]; /* argument i was marked in the map */
    uint32_t out_bits;   /* the bits of the call's outputs */
    int outputs_mapped;  /* every non-empty output is marked (a successful call may write only there) */
    int reads_outside;   /* the library would read entries of the sequences' arrays the pool does not
                            hold (more sequences than the harness wrote): the call must not be made */
} fz_model;

extern const fa_status fz_class_status[FZ_CLASSES];

/* Fills m for call c on pool; m->map is malloc'ed (free it with fz_model_free). */
void fz_model_call(const fz_call *c, const fz_pool *pool, fz_model *m);
void fz_model_free(fz_model *m);
/* 1 when the model lets the call return st. */
int fz_status_allowed(const fz_model *m, fa_status st);
/* The allowed statuses, as text, for failure messages. */
void fz_model_describe(const fz_model *m, char *buf, size_t size);

/* ---- geometry, shared with the harness ---- */

size_t fz_dtype_bytes(fa_dtype t);  /* 8, 4, 2, 2, 1 for f64, f32, bf16, f16, quantized; 0 unknown */
int fz_dtype_quantized(fa_dtype t); /* FA_I8, FA_F8_E4M3, FA_F8_E5M2: a KV cache's storage only */
int fz_view_empty(const fa_tensor *t);
/* Elements from the first to one past the last element of a non-empty view with sizes and strides
 * >= 0, in elements; -1 if that overflows int64. */
int64_t fz_view_span(const fa_tensor *t);
/* 1 when the view is non-empty, its data aligned to its element size, and every element of it
 * lies inside the pool. */
int fz_view_fits(const fz_pool *pool, const fa_tensor *t);
/* Bytes of the lse for q: B·Hq·Nq values of the accumulation type (0 when q is empty or invalid). */
size_t fz_lse_bytes(const fa_tensor *q);
/* Bytes of a per-head array for q: Hq floats (0 when Hq <= 0). */
size_t fz_array_bytes(const fa_tensor *q);
/* Entries the library reads of the sequences' array `which` (0 cu_seqlens_q, 1 cu_seqlens_k,
 * 2 seqused_k, 3 block_table; 0 when it is NULL or the counts are invalid) and their bytes. */
int64_t fz_seqs_entries(const fa_seqs *s, int which);
size_t fz_seqs_elem(int which);

/* What the header's reading rule (ABI section) says of the size-tagged struct at s whose first
 * layout has min bytes and this build's own bytes: FA_OK, FA_ERR_ARG (struct_size not min plus whole
 * 8-byte fields, or out of range) or FA_ERR_UNSUPPORTED (a nonzero byte past this build's struct).
 * fuzz_struct.c. */
fa_status fz_abi_read_status(const void *s, size_t min, size_t own);

/* ---- shared by fuzz_model.c and fuzz_model_merge.c ---- */

/* Byte range [begin, end) an argument spans; begin == end when it is empty or its extent is not
 * valid. */
typedef struct {
    uintptr_t begin, end;
} fz_range;

enum { FZ_C_NULL, FZ_C_ARG, FZ_C_DTYPE, FZ_C_SHAPE, FZ_C_STRIDE, FZ_C_ALIAS, FZ_C_UNSUPPORTED, FZ_C_BUSY };
void fz_set_class(fz_model *m, int c, int state, const char *why_fmt, const char *what);
void fz_maybe(fz_model *m, int c);
fz_range fz_view_range(const fa_tensor *t);
fz_range fz_plain_range(const void *at, size_t bytes);
int fz_ranges_meet(fz_range a, fz_range b);
int fz_range_fits(const fz_pool *pool, fz_range r);
/* Allocates the element map for element size es. */
void fz_map_alloc(fz_model *m, const fz_pool *pool, size_t es);
int fz_mark_view(fz_model *m, const fz_pool *pool, const fa_tensor *t, int bit, int collapse, int *dup);
int fz_mark_range(fz_model *m, const fz_pool *pool, fz_range r, int bit);
/* For every bit, the other bits that share a unit with it. */
void fz_shared_bits(const fz_model *m, unsigned shared[FZ_BITS]);
int fz_interleaved_disjoint(const fa_tensor *a, const fa_tensor *b);
/* The stride step's refusals of one view of known dtype: a negative stride; for a non-empty one, data
 * not aligned to its element size, offsets or byte offsets overflowing int64, a range that may wrap. */
void fz_view_strides(fz_model *m, const fa_tensor *t);
/* The alias rule between two views whose ranges meet (what, e.g. "out/q", for the reason). */
void fz_alias_views(fz_model *m, const fa_tensor *a, const fa_tensor *b, int known, int share,
                    const char *what);
/* fa_merge's model (fuzz_model_merge.c). */
void fz_model_merge(const fz_call *c, const fz_pool *pool, fz_model *m);
/* fa_convert's model (fuzz_model_convert.c). */
void fz_model_convert(const fz_call *c, const fz_pool *pool, fz_model *m);

#endif
