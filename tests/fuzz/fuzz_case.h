/* SPDX-License-Identifier: BSD-3-Clause */
/* One decoded fuzz input (fz_case) and what the harness's files share: fuzz_api.c (decoding, the
 * calls and their generic checks), fuzz_values.c (the values of a successful fa_forward or
 * fa_backward), fuzz_seqs.c (batches of sequences) and fuzz_merge.c (fa_merge). */
#ifndef FA_FUZZ_CASE_H
#define FA_FUZZ_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"
#include "fuzz_input.h"
#include "fuzz_model.h"

#define FZ_WORK_MAX    2.0e6              /* B·Hq·Nq·Nk·(D+Dv) of one call: about a millisecond */
#define FZ_TENSOR_MAX  ((int64_t)1 << 17) /* elements of one tensor before the sizes are cut */
#define FZ_REGION_MAX  ((int64_t)1 << 19) /* bytes of one view's region; larger views are left wild */
#define FZ_WILD_REGION ((int64_t)64)      /* bytes given to a view too large for a region */

#define FZ_CHECK(cond, ...)                                           \
    do {                                                              \
        if (!(cond)) fz_fail(__LINE__, __FILE__, #cond, __VA_ARGS__); \
    } while (0)

__attribute__((format(printf, 4, 5), noreturn)) void fz_fail(int line, const char *file, const char *cond,
                                                             const char *fmt, ...);

enum {
    L_BHSD,
    L_BSHD,
    L_PAD_BHSD,
    L_PAD_BSHD,
    L_BCAST_BATCH,
    L_BCAST_HEAD,
    L_BCAST_SEQ,
    L_RAW,
    L_PACKED,
    L_NULL
};

#define FZ_ALL_VIEWS (FZ_VIEWS + 1) /* the eight tensors and the bias (FZ_BIAS) */

/* The keys of a batch of sequences. */
enum { FZ_KEYS_DENSE, FZ_KEYS_PACKED, FZ_KEYS_PAGED };

/* A batch of sequences as the harness built it (fuzz_seqs.c). */
typedef struct {
    int on;                      /* p.seqs set */
    int packed_q, keys, used_on; /* packed queries, FZ_KEYS_*, seqused_k given */
    int64_t S;                   /* sequences the arrays describe (and the tensors' batch where dense) */
    int64_t batch;               /* p.seqs.batch */
    int64_t q_len[FZ_SEQ_MAX], k_len[FZ_SEQ_MAX]; /* packed spans (dense: Nq, Nk) */
    int64_t rows_q, rows_k;                       /* packed token axes: the spans and spare rows */
    int64_t page_size, pool_pages, pps;
    int64_t len[4];  /* entries written of cu_seqlens_q, cu_seqlens_k, seqused_k, block_table */
    int64_t base[4]; /* their byte offsets in the pool; -1: NULL, -2: at the top of the address space */
    fa_seqs seqs;
} fz_seqs_case;

/* A size-tagged struct resized as the input asks (fuzz_struct.c): room for the largest struct_size
 * a call accepts. */
typedef union {
    fa_params p;
    fa_seqs s;
    fa_context_opts o;
    unsigned char bytes[FA_STRUCT_SIZE_MAX];
} fz_struct_bytes;

/* fa_merge's arguments (fuzz_merge.c). */
typedef struct {
    int on, n;                       /* called; its n */
    int outs_null, lses_null;        /* pass NULL for the arrays */
    int64_t lse_base[FZ_MERGE_SEEN]; /* the parts' lse: byte offsets in the pool; -1: NULL */
    fa_tensor *outs;                 /* n parts (malloc'ed) */
    const void **lses;
} fz_merge_case;

typedef struct {
    fz_input in;
    fa_dtype dtype;
    int64_t B, Hkv, Hq, Nq, Nk, D, Dv;
    double amp;
    fa_tensor view[FZ_ALL_VIEWS];
    int layout[FZ_ALL_VIEWS];      /* the bias's L_NULL: no bias */
    int64_t base[FZ_ALL_VIEWS];    /* byte offset in the pool; -1 = data NULL */
    int own[FZ_ALL_VIEWS];         /* has a region of its own */
    int64_t array_base[FZ_ARRAYS]; /* alibi_slopes, sinks, dsinks: byte offset in the pool; -1 = NULL */
    int64_t lse_base;              /* -1 = NULL */
    int64_t lse_head_stride;       /* lse values between two heads: q's seq (the value checks' sequences
                                      set their own) */
    unsigned char *pool, *snap;
    size_t pool_bytes;
    fa_params params;
    int params_null;
    fa_context *ctx, *twin, *fresh[2];
    int ctx_threads; /* threads of ctx (0 = unknown: the default context) */
    int ctx_bq, ctx_bk;
    fz_seqs_case sq;
    fz_merge_case mg;
    fz_struct_bytes abi; /* the struct the input resizes (fuzz_struct.c) */
    /* p.k_scale, p.v_scale of a quantized cache: views like the others' (layout L_NULL: the
     * pointer is NULL), each in its own region unless placed on a view's */
    fa_tensor scale[2];
    int scale_layout[2];
    int64_t scale_base[2]; /* byte offset in the pool; -1 = data NULL */
    int scale_own[2];
    /* p.dbias (fuzz_input.h, FZ_DBIAS_FIELDS): a view like the scales (layout L_NULL: no dbias) */
    fa_tensor dbias;
    int dbias_layout;
    int64_t dbias_base; /* byte offset in the pool; -1 = data NULL */
    int dbias_own;
} fz_case;

/* ---- fuzz_struct.c ---- */

enum { FZ_ABI_P, FZ_ABI_SEQS, FZ_ABI_OPTS };
/* The struct the input resizes (FZ_ABI_*), or -1 for none (no input asks, or p is NULL). */
int fz_abi_target(const fz_case *c);
/* Copies the struct at s (own bytes: this build's sizeof) into buf with the size and bytes the input
 * asks for; returns buf. */
void *fz_abi_resize(const fz_input *in, const void *s, size_t own, fz_struct_bytes *buf);

/* ---- fuzz_api.c ---- */

int64_t fz_sat_mul(int64_t a, int64_t b);
int64_t fz_sat_add(int64_t a, int64_t b);
/* A uniform double in [-1, 1) from the test kit's generator (splitmix64, tests/kit/rng.h). */
double fz_uniform(uint64_t *s);

typedef fa_status (*fz_invoke)(fa_context *ctx, const fz_call *call);
/* Runs one call with every generic check (the model's status, nothing written on refusal, only the
 * outputs' elements on success, the twin context's bytes); returns its status. */
fa_status fz_run_call(fz_case *c, fz_call call, fz_invoke invoke, const char *name);

/* ---- fuzz_values.c ---- */

/* Element (b, h, s, d) of a view as a double (bf16 and f16 decoded exactly from their bits). */
double fz_ld(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d);
/* The rounding of a result stored once into dtype t (round to nearest even, flashattn.h): at most
 * unit·|x| + floor_abs, floor_abs being half the smallest subnormal; 0 for f32 and f64, the types
 * calls accumulate in, whose rounding the value checks' tolerances already hold. */
void fz_store_rounding(fa_dtype t, double *unit, double *floor_abs);
double fz_ld_lse(const void *lse, fa_dtype t, int64_t row);
int fz_ordinary(double x, double amp);
/* The values of a successful fa_forward (fa_backward) of a dense batch: c's views, lse with
 * c->lse_head_stride values between heads. The backward's returns 1 when its inputs were ordinary
 * and every gradient was checked (dsinks may then be compared with the header's formula). */
void fz_check_forward_values(const fz_case *c, const fa_params *pp, const void *lse);
int fz_check_backward_values(const fz_case *c, const fa_params *pp);
/* dsinks: the terms of c's rows added to want[h], mag[h], flushed[h]; then the comparison. */
void fz_dsinks_terms(const fz_case *c, const fa_params *p, const void *lse, double *want, double *mag,
                     double *flushed);
void fz_dsinks_compare(const fa_params *p, int64_t heads, fa_dtype dtype, const double *want,
                       const double *mag, const double *flushed);

/* A quantized element's value from its code (FA_I8, FA_F8_E4M3, FA_F8_E5M2), decoded here from the
 * formats' definitions, not by the library's conversions. */
/* The dequantized cache of a successful quantized call: a copy of c whose k and v are f32 views
 * (contiguous, in k's and v's own index space, so packed and paged layouts read as before) of
 * float(element) · float(its row's scale), one float multiplication as the header says; the
 * buffer is *buf (free it, and the copy). NULL when the views are too large to copy (the value
 * checks skip such calls). */
fz_case *fz_dequantized(const fz_case *c, const fa_params *p, void **buf);

/* ---- fuzz_seqs.c ---- */

/* Whether the input asks for sequences, and how many the arrays describe (the tensors' batch). */
int fz_seqs_wanted(const fz_input *in, int64_t *S);
/* The shapes of the views with sequences (shape[i] = batch, heads, seq, dim), cut to the budget. */
void fz_seqs_shapes(fz_case *c, int64_t shape[FZ_ALL_VIEWS][4]);
/* Regions for the arrays from cursor on (gap bytes before each); returns the new cursor. */
int64_t fz_seqs_regions(fz_case *c, int64_t cursor, int64_t gap);
/* Writes the arrays into the pool, places them, and points p.seqs at them. */
void fz_seqs_write(fz_case *c);
/* The value checks of a successful call with sequences, sequence by sequence, and the rows outside
 * the sequences left as they were (against c->snap, the pool before the call). */
void fz_seqs_check_forward(const fz_case *c, const fa_params *p, const void *lse);
void fz_seqs_check_backward(const fz_case *c, const fa_params *p, const void *lse);
int fz_seqs_describe(const fz_case *c, char *buf, size_t size);

/* ---- fuzz_merge.c ---- */

int fz_merge_wanted(const fz_input *in);
int64_t fz_merge_regions(fz_case *c, int64_t cursor, int64_t gap);
void fz_merge_write(fz_case *c);
/* Calls fa_merge with every generic check and, on success, the header's formula. */
void fz_merge_run(fz_case *c, const char **said);
/* fa_convert on two of the views, when the input asks (fuzz_convert.c). */
void fz_convert_run(fz_case *c, const char **said);
void fz_merge_free(fz_case *c);

#endif
