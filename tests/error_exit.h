/* SPDX-License-Identifier: BSD-3-Clause */
/* The error-exit fixture of test_error_exit.c, in the style of reference BLAS's error-exit tests:
 * a table of (parameter, bad value, documented status) cases for fa_forward, fa_backward (dense
 * batches and the three batches of sequences: packed, a KV cache with keys in use, paged keys) and
 * fa_merge, built at run time from loops over every argument and every field, and a runner that
 * makes each call and checks the status and that no byte of any tensor, of lse, of the sequences'
 * arrays or of the context's stats changed.
 *
 * Every tensor of the calls, lse, one "packed" region, the score modifiers' arguments (bias,
 * alibi_slopes, sinks, dsinks), the arrays of fa_seqs and the parts of fa_merge live in one
 * guarded pool with a spare region before and after, so a view re-pointed onto another (the alias
 * cases) stays inside memory the test owns, and one comparison against the pool's bytes before
 * the call checks everything. In builds with AddressSanitizer the bytes after each fa_seqs array
 * are poisoned during the call, so a read past an array's end is reported. error_exit.c holds the
 * world and the dense cases; error_exit_ragged.c the sequences' and fa_merge's; error_exit_structs.c
 * the size tags of p and p.seqs (include/flashattn.h, "ABI"), and the bad sizes every size-tagged
 * struct is given; error_exit_quantized.c the quantized KV caches (k and v of FA_I8, FA_F8_E4M3 or
 * FA_F8_E5M2 with p.k_scale and p.v_scale, whose regions are in the pool too); error_exit_convert.c
 * fa_convert's. */
#ifndef FA_TEST_ERROR_EXIT_H
#define FA_TEST_ERROR_EXIT_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* The valid problem: every axis has at least two elements, so every stride matters. */
enum { EE_B = 2, EE_HQ = 4, EE_HKV = 2, EE_N = 6, EE_DIM = 4, EE_DIM_V = 3 };

/* Tensor slots (the order of fa_backward's tensor arguments), lse, the packed region, then the
 * score modifiers' arguments: the bias [B][Hq][N][N] (a tensor of the accumulation type, the
 * world's f32 or f64) and three
 * arrays of Hq floats (alibi_slopes and sinks, inputs; dsinks, an output of fa_backward), then the
 * region of the fa_seqs arrays, then the two scale views of a quantized cache. After the regions, slots
 * that are arguments but no region of their
 * own: the four fa_seqs arrays (in the EE_SEQS region) and fa_merge's parts and their lse (in the
 * regions of q, k, v and of dout, dq, dk). */
enum {
    EE_Q,
    EE_K,
    EE_V,
    EE_OUT,
    EE_DOUT,
    EE_DQ,
    EE_DK,
    EE_DV,
    EE_NT,
    EE_LSE = EE_NT,
    EE_PACKED,
    EE_BIAS,
    EE_SLOPES,
    EE_SINKS,
    EE_DSINKS,
    EE_SEQS,
    EE_KSCALE, /* a quantized cache's scales: f32 [B][Hkv][N][1] views, p.k_scale and p.v_scale */
    EE_VSCALE,
    EE_DBIAS, /* p.dbias (fa_backward's output, the bias's shape), set by the cases that break it */
    EE_REGIONS,
    EE_CU_Q = EE_REGIONS,
    EE_CU_K,
    EE_USED,
    EE_TABLE,
    EE_OUTS0,
    EE_LSES0 = EE_OUTS0 + 3,
    EE_SLOTS = EE_LSES0 + 3
};

/* fa_merge's parts, and the problem the many-parts case passes (every part valid but the last). */
enum { EE_PARTS = 3, EE_MANY_PARTS = 4096 };

/* fa_convert's rows convert the valid call's q (src) into its dq (dst): error_exit_convert.c. */
typedef enum { EE_FORWARD, EE_BACKWARD, EE_MERGE, EE_CONVERT } ee_call;

/* The batch of a call: dense (fa_params.seqs NULL), or sequences (error_exit_ragged.c has their
 * shapes): packed queries and keys with keys in use; a dense KV cache with keys in use; dense
 * queries with paged keys, a block table and keys in use (fa_backward refuses paged keys). */
enum { EE_DENSE, EE_SEQ_PACKED, EE_SEQ_CACHE, EE_SEQ_PAGED, EE_LAYOUTS };

typedef struct {
    fa_dtype dt;
    size_t e;
    kit_buf pool;
    unsigned char *initial; /* the pool's bytes as made */
    unsigned char *armed;   /* the pool's bytes before the call at hand (ee_world_arm) */
    fa_context *ctx;        /* own context (2 threads) */
    uint64_t seed;
    fa_tensor *many_outs; /* EE_MANY_PARTS parts, the last with one query row more */
    const void **many_lses;
} ee_world;

/* The arguments of one call. */
typedef struct {
    fa_context *ctx;
    int busy; /* hold ctx during the call (white box: fa_context_acquire) */
    fa_params p;
    const fa_params *pp;
    fa_tensor t[EE_NT];
    int null_t[EE_NT]; /* pass NULL instead of &t[i] */
    fa_tensor bias;    /* p.bias points here */
    fa_tensor dbias;   /* p.dbias points here in the cases of its slot (ee_apply); NULL otherwise */
    /* p.k_scale and p.v_scale point here in the quantized cases (ee_quant_start); NULL otherwise */
    fa_tensor k_scale, v_scale;
    void *lse;         /* fa_forward's, fa_backward's and fa_merge's lse */
    int helper_broken; /* a fa_tensor_* helper broke its own documented promise */
    const ee_world *world;
    /* sequences: p.seqs points at seqs for every layout but EE_DENSE; the arrays live in the pool's
     * EE_SEQS region, seqs_len[i] entries each (cu_seqlens_q, cu_seqlens_k, seqused_k, block_table:
     * the bytes after them are poisoned during the call under ASan) */
    fa_seqs seqs;
    int layout;
    int64_t seqs_len[4];
    /* fa_merge: n parts; outs and lses point at parts and part_lse (or elsewhere, or NULL); the
     * merged result is t[EE_OUT] and lse */
    int n;
    fa_tensor parts[EE_PARTS];
    const void *part_lse[EE_PARTS];
    const fa_tensor *outs;
    const void *const *lses;
    /* p or p.seqs copied into a struct larger than this build's (error_exit_structs.c): the size
     * tag's cases point pp or p.seqs here */
    union {
        fa_params p;
        fa_seqs seqs;
        unsigned char bytes[FA_STRUCT_SIZE_MAX];
    } larger;
} ee_args;

typedef struct {
    ee_call call;
    char param[64];     /* e.g. "fa_backward dq->stride_head" */
    char value[96];     /* e.g. "INT64_MAX" */
    char names[64];     /* the argument(s) fa_last_error() must name, space-separated: "dq.stride_head",
                       "out q" (out overlapping q); see ee_names_argument */
    char names_f64[64]; /* on the f64 world, when not empty: what it must name there instead (a dtype
                           the f32 world pairs with k but the f64 world does not) */
    char not_named[32]; /* when not empty: a word the diagnostic must not hold (of two refusals of one
                           class, the later in the documented order) */
    char phrase[64];    /* when not empty: text the diagnostic must hold as written ("out overlaps q") */
    fa_status want;
    int f32_only; /* the value is valid for f64 tensors (a double beyond float's range): run on f32 only */
    int layout;   /* the batch the case starts from (EE_DENSE, EE_SEQ_*) */
    int isolate;  /* run in a child process: a library that reads the bad pointer crashes */
    int op, ti, field, mode;
    int64_t i[3];
    double d;
    int dt[EE_NT + 1]; /* EE_OP_DTYPES: the dtype of q..dv and of the bias (index EE_NT) */
    /* error_exit_quantized.c: before the operation, k, v, dk and dv get dtype kv_dt (0: the world's)
     * and p.k_scale (bit 0 of scales), p.v_scale (bit 1) point at views shaped like k and v */
    int kv_dt, scales;
    /* EE_OP_FN: breaks the valid arguments itself (error_exit_composed.c) */
    void (*fn)(const ee_world *w, ee_args *a);
} ee_case;

typedef struct {
    ee_case *v;
    int n, cap;
} ee_table;

/* The world of one dtype: pool filled (inputs random, gradients and spares canary), own context,
 * and a check that the unbroken calls and the valid packed layouts succeed. */
void ee_world_make(ee_world *w, fa_dtype dt, uint64_t seed);
void ee_world_free(ee_world *w);
/* Puts the pool back to its initial bytes (and arms it there). */
void ee_world_restore(ee_world *w);
/* Records the pool's bytes as they are now, for ee_world_unchanged (a case may write the arrays
 * of its sequences into the pool before the call). */
void ee_world_arm(ee_world *w);
/* 1 when the pool (guards included) holds the bytes it held when last armed. */
int ee_world_unchanged(const ee_world *w);

/* Valid arguments for either call: bhsd views in their regions, own context, and every field of
 * fa_params in use (BOTTOM_RIGHT, a window, softcap, ALiBi, a full bias, sinks, and dsinks, which
 * fa_forward ignores), so each case breaks one field while all the others are live. */
void ee_valid_args(const ee_world *w, ee_args *a);
/* Element `el` of region r (elements of the world's dtype). */
unsigned char *ee_region(const ee_world *w, int r, int64_t el);
/* Runs the call on a (taking and releasing the context when a->busy). */
fa_status ee_call_run(ee_call call, ee_args *a);
/* Runs fa_forward_check or fa_backward_check on a's arguments (they take no context); -3 for
 * fa_merge, which has no check. */
fa_status ee_check_run(ee_call call, ee_args *a);
/* "fa_forward", "fa_backward", "fa_merge". */
const char *ee_call_name(ee_call call);

/* Whether a diagnostic is what fa_last_error() promises for a refusal of `call` that `names`:
 * "<call>: ..." naming that argument as a whole word ("k" matches "k.seq = 3" and "k overlaps q",
 * not "kv" or "dk"). */
int ee_names_argument(const char *diag, const char *call, const char *names);

/* Every fa_forward, fa_backward and fa_merge case. */
void ee_build_table(ee_table *t);
void ee_table_free(ee_table *t);
/* Applies case c to valid arguments (first its batch of sequences, if it has one). */
void ee_apply(const ee_case *c, const ee_world *w, ee_args *a);

/* ---- shared by error_exit.c and error_exit_ragged.c (the fixture's own parts) --------------- */

/* What a case does to the valid arguments. */
enum {
    EE_OP_BUSY,
    EE_OP_NULL_TENSOR,
    EE_OP_NULL_DATA,
    EE_OP_NULL_LSE,
    EE_OP_DATA_TOP,
    EE_OP_DTYPE,
    EE_OP_SIZE,
    EE_OP_STRIDE,
    EE_OP_SCALE,
    EE_OP_CAUSAL,
    EE_OP_WINDOW,
    EE_OP_SHIFT,
    EE_OP_SOFTCAP,
    EE_OP_DROPOUT,
    EE_OP_ORIGIN, /* field 0: p.dropout_row0, 1: p.dropout_key0 */
    EE_OP_NULL_SINKS,
    EE_OP_MISALIGN,
    EE_OP_ALIAS,
    EE_OP_ROLES,
    EE_OP_PACKED,
    EE_OP_HELPER,
    EE_OP_DTYPES, /* every tensor's dtype and the bias's as c->dt says */
    /* p's (ti 0) or p.seqs's (ti 1) struct_size i[0], one byte i[1] set (error_exit_structs.c) */
    EE_OP_STRUCT,
    EE_OP_NULL_BIAS,                /* p.bias NULL with p.dbias set */
    EE_OP_FN,                       /* c->fn (error_exit_composed.c) */
    EE_OP_RAGGED,                   /* the first of error_exit_ragged.c's own operations */
    EE_OP_QUANT = EE_OP_RAGGED + 32 /* the first of error_exit_quantized.c's (ragged has fewer) */
};

/* Sentinels for values that depend on the world. */
#define EE_OTHER_DTYPE (INT64_C(1) << 40) /* the other of f32/f64 */
#define EE_PLUS_ONE    (INT64_C(1) << 41) /* the valid size + 1 */
#define EE_JUST_BELOW  (INT64_C(1) << 42) /* the valid (contiguous) stride - 1: shares one element */
#define EE_MINUS_ONE   (INT64_C(1) << 43) /* the valid size - 1 */
#define EE_HALF_ELEM   (INT64_C(1) << 44) /* half an element, in bytes */

typedef struct {
    const char *name;
    int64_t x;
} ee_named;

/* The bad values every tensor's fields are tried with (error_exit.c defines them): dtypes, sizes and
 * strides that no call takes, strides that make an output's elements overlap, data addresses off an
 * element boundary; and the fields' names as a parameter spells them. */
extern const ee_named ee_bad_dtypes[5];
extern const ee_named ee_bad_sizes[5];
extern const ee_named ee_bad_strides[5];
extern const ee_named ee_overlapping_strides[2];
extern const ee_named ee_misaligned[2];
extern const char *const ee_size_names[4];
extern const char *const ee_stride_names[3];

/* Appends a case; its names default to the parameter with "->" written ".". */
ee_case *ee_add(ee_table *t, ee_call call, const char *param, const char *value, fa_status want, int op);
/* The argument a parameter's diagnostic names by default: "q->stride_seq" names "q.stride_seq". */
void ee_default_names(char *names, size_t size, const char *param);
/* A slot's name as a parameter ("p->seqs->seqused_k", "outs[1]"). */
const char *ee_slot_name(int s);
/* The tensor of a slot (q..dv, the bias, fa_merge's parts), or NULL. */
fa_tensor *ee_tensor_at(ee_args *a, int s);
/* The first byte of a slot's elements, their count and the bytes of one. */
unsigned char *ee_slot_first(ee_args *a, int s);
int64_t ee_slot_elems(ee_args *a, int s);
int64_t ee_slot_elem_bytes(const ee_world *w, int s);
/* Points slot s at `at`. */
void ee_set_slot(ee_args *a, int s, unsigned char *at);
/* The element count of the valid problem's views: [B][Hq][N] lse values. */
int64_t ee_lse_rows(void);

/* error_exit_ragged.c: the sequences' layouts and cases, fa_merge's cases. */
void ee_seqs_layout(const ee_world *w, ee_args *a, int layout);
void ee_merge_args(const ee_world *w, ee_args *a);
void ee_add_seqs_cases(ee_table *t);
void ee_add_merge_cases(ee_table *t);
/* Applies one of error_exit_ragged.c's operations (op >= EE_OP_RAGGED). */
void ee_apply_ragged(const ee_case *c, const ee_world *w, ee_args *a);
/* Poisons (1) or unpoisons (0) the bytes after the sequences' arrays of a, under ASan. */
void ee_poison_seqs(const ee_args *a, int poison);

/* error_exit_quantized.c: the quantized caches' cases; the start every such case makes (the case's
 * kv_dt and scales, after its batch of sequences); its own operations (op >= EE_OP_QUANT); and the
 * valid quantized calls every world must accept (asserted in ee_world_make, f32 world). */
void ee_add_quant_cases(ee_table *t);
void ee_quant_start(const ee_case *c, const ee_world *w, ee_args *a);
void ee_apply_quant(const ee_case *c, const ee_world *w, ee_args *a);
void ee_quant_check_valid(ee_world *w);

/* error_exit_convert.c: fa_convert's rows. */
void ee_add_convert_cases(ee_table *t);

/* error_exit_structs.c: the size tag's refusals (include/flashattn.h, "ABI"). */
typedef struct {
    char value[64]; /* e.g. "struct_size = 0", "a byte at 97 set (struct_size 104)" */
    size_t size;    /* struct_size */
    size_t byte;    /* the byte set to nonzero past the struct (0: none) */
    fa_status want; /* FA_ERR_ARG (size out of range) or FA_ERR_UNSUPPORTED (a field unknown here) */
    size_t field;   /* with a byte: the field's offset the diagnostic names */
} ee_struct_case;
/* The bad sizes of a struct whose first layout has `min` bytes and this build's `own` bytes: 0, the
 * size field alone, one byte and one field short of the first layout, a size between layouts, one
 * byte over FA_STRUCT_SIZE_MAX, SIZE_MAX; then larger structs with one byte of a field this library
 * does not know set. Returns the count. */
int ee_struct_cases(size_t min, size_t own, ee_struct_case *out, int cap);
/* Puts case k's size and byte into the struct of `own` bytes at s, copied into `bytes` (at least
 * FA_STRUCT_SIZE_MAX), and returns bytes. */
void *ee_struct_apply(const ee_struct_case *k, const void *s, size_t own, unsigned char *bytes);
/* p's and p.seqs's cases of fa_forward and fa_backward, and their operation (EE_OP_STRUCT). */
void ee_add_struct_cases(ee_table *t);
void ee_apply_struct(const ee_case *c, ee_args *a);

/* error_exit_composed.c: rows written one by one (several arguments broken at once, where the first
 * class in the documented order wins; places and shapes the generated rows do not reach). */
void ee_add_composed_cases(ee_table *t);
/* Moves the sequences' array of slot s (EE_CU_Q..EE_TABLE) `bytes` further, its values with it. */
void ee_move_array(const ee_world *w, ee_args *a, int s, int64_t bytes);

#endif
