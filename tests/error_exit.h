/* SPDX-License-Identifier: BSD-3-Clause */
/* The error-exit fixture of test_error_exit.c, in the style of reference BLAS's error-exit tests:
 * a table of (parameter, bad value, documented status) cases for fa_forward and fa_backward, built
 * at run time from loops over every argument and every field, and a runner that makes each call
 * and checks the status and that no byte of any tensor, of lse or of the context's stats changed.
 *
 * Every tensor of both calls, lse, one "packed" region and the score modifiers' arguments (bias,
 * alibi_slopes, sinks, dsinks) live in one guarded pool with a spare region before and after, so a
 * view re-pointed onto another (the alias cases) stays inside memory the test owns, and one
 * comparison against the pool's initial bytes checks everything. */
#ifndef FA_TEST_ERROR_EXIT_H
#define FA_TEST_ERROR_EXIT_H

#include <stdint.h>

#include "util.h"

/* The valid problem: every axis has at least two elements, so every stride matters. */
enum { EE_B = 2, EE_HQ = 4, EE_HKV = 2, EE_N = 6, EE_DIM = 4, EE_DIM_V = 3 };

/* Tensor slots (the order of fa_backward's tensor arguments), lse, the packed region, then the
 * score modifiers' arguments: the bias [B][Hq][N][N] (a tensor of the call's dtype) and three
 * arrays of Hq floats (alibi_slopes and sinks, inputs; dsinks, an output of fa_backward). */
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
    EE_REGIONS
};

typedef enum { EE_FORWARD, EE_BACKWARD } ee_call;

typedef struct {
    fa_dtype dt;
    size_t e;
    tu_buf pool;
    unsigned char *initial; /* the pool's bytes before every call */
    fa_context *ctx;        /* own context (2 threads) */
    uint64_t seed;
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
    void *lse;
    int helper_broken; /* a fa_tensor_* helper broke its own documented promise */
} ee_args;

typedef struct {
    ee_call call;
    char param[64]; /* e.g. "fa_backward dq->stride_head" */
    char value[64]; /* e.g. "INT64_MAX" */
    char names[32]; /* the argument(s) fa_last_error() must name, space-separated: "dq.stride_head",
                       "out q" (out overlapping q); see ee_names_argument */
    fa_status want;
    int f32_only; /* the value is valid for f64 tensors (a double beyond float's range): run on f32 only */
    int op, ti, field, mode;
    int64_t i[3];
    double d;
} ee_case;

typedef struct {
    ee_case *v;
    int n, cap;
} ee_table;

/* The world of one dtype: pool filled (inputs random, gradients and spares canary), own context,
 * and a check that the unbroken calls and the valid packed layouts succeed. */
void ee_world_make(ee_world *w, fa_dtype dt, uint64_t seed);
void ee_world_free(ee_world *w);
/* Puts the pool back to its initial bytes. */
void ee_world_restore(ee_world *w);
/* 1 when the pool (guards included) holds its initial bytes. */
int ee_world_unchanged(const ee_world *w);

/* Valid arguments for either call: bhsd views in their regions, own context, and every field of
 * fa_params in use (BOTTOM_RIGHT, a window, softcap, ALiBi, a full bias, sinks, and dsinks, which
 * fa_forward ignores), so each case breaks one field while all the others are live. */
void ee_valid_args(const ee_world *w, ee_args *a);
/* Element `el` of region r (elements of the world's dtype). */
unsigned char *ee_region(const ee_world *w, int r, int64_t el);
/* Runs the call on a (taking and releasing the context when a->busy). */
fa_status ee_call_run(ee_call call, ee_args *a);

/* Whether a diagnostic is what fa_last_error() promises for a refusal of `call` that `names`:
 * "<call>: ..." naming that argument as a whole word ("k" matches "k.seq = 3" and "k overlaps q",
 * not "kv" or "dk"). */
int ee_names_argument(const char *diag, const char *call, const char *names);

/* Every fa_forward and fa_backward case. */
void ee_build_table(ee_table *t);
void ee_table_free(ee_table *t);
/* Applies case c to valid arguments. */
void ee_apply(const ee_case *c, const ee_world *w, ee_args *a);

#endif
