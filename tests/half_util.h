/* SPDX-License-Identifier: BSD-3-Clause */
/* Test helpers for bf16 and f16 (issue 13): problems whose tensors have the dtypes of one call,
 * q's group (q, out, dout, dq) in one type and k's group (k, v, dk, dv) in another, values rounded
 * to their type, and the accuracy rule of the half suites against the float64 oracles of
 * tests/kit/reference.c and tests/kit/reference_backward.c, which read half tensors as stored (ref_load).
 * Nothing here judges the library by itself. */
#ifndef FA_TEST_HALF_UTIL_H
#define FA_TEST_HALF_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"
#include "util.h"

/* ---- scalars ---------------------------------------------------------------------------- */

/* "f32", "f64", "bf16", "f16". */
const char *hu_dtype_name(fa_dtype t);
/* x rounded to t: exact for f64; f32 by the cast; bf16 and f16 through float, then the test kit's
 * round-to-nearest-even narrowing (kit/dtype.h, kit_round), widened back. A float x (every value
 * the f32 yardsticks produce) is rounded once. */
double hu_round(fa_dtype t, double x);
/* The spacing of t's values at magnitude m >= 0 (one ulp): 2^(e - p) for 2^(e-1) <= m < 2^e, with
 * p = 8 (bf16), 11 (f16), 24 (f32), 53 (f64) significant bits, never below the smallest subnormal. */
double hu_ulp(fa_dtype t, double m);

/* ---- problems --------------------------------------------------------------------------- */

/* The half suites' problems are the kit's (kit/tensors.h) with every tensor, gradients included:
 * q's group (q, out, dout, dq) of shape.q_dtype, k's group (k, v, dk, dv) of shape.kv_dtype, lse
 * float. */
/* Allocates every tensor in guarded storage: q, k uniform in [-qk_amp, qk_amp), v and dout in
 * [-1, 1), each rounded to its type; out, lse, dq, dk, dv filled with KIT_CANARY. */
void hu_make(kit_problem *pr, const kit_shape *s, tu_rng *rng, double qk_amp);
/* The storage bits of element (b, h, s, d): the bytes of one element, zero-extended. */
uint64_t hu_bits(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d);
/* Elements of a view, B·H·S·D. */
int64_t hu_numel(const fa_tensor *t);
/* The elements of t as doubles, contiguous [B][H][S][D] (malloc'ed, one spare element). */
double *hu_view_copy(const fa_tensor *t);
/* 1 when two views of one shape and dtype hold the same bytes in every element; else the flat
 * [B][H][S][D] index of the first difference goes to *where. */
int hu_views_bitwise_equal(const fa_tensor *a, const fa_tensor *b, int64_t *where);
/* Copies the bytes of rows src_s0 .. src_s0 + rows - 1 of batch src_b of src (every head, every
 * column) to rows dst_s0 .. of batch dst_b of dst: the same heads, dim and dtype. */
void hu_copy_rows(const fa_tensor *dst, int64_t dst_b, int64_t dst_s0, const fa_tensor *src, int64_t src_b,
                  int64_t src_s0, int64_t rows);
/* 1 when rows a_s0 .. a_s0 + rows - 1 of batch a_b of a hold the same bytes as rows b_s0 .. of
 * batch b_b of b (every head, every column); else the first difference as "head h row r col c". */
int hu_rows_bitwise_equal(const fa_tensor *a, int64_t a_b, int64_t a_s0, const fa_tensor *b, int64_t b_b,
                          int64_t b_s0, int64_t rows, char *where, size_t where_size);
/* fa_forward into pr's out and lse; fa_backward from pr's out, lse and dout into dq, dk, dv. */
/* Whether a forward with these types, head dim and query rows per head (the rows of a grouped
 * decode step: Nq times the group) runs on ctx's bf16 dot-product units (NULL: the calling thread's
 * default context) rather than widened: the header's rule (flashattn.h, "dtype"), an all-bf16 call
 * with an even D and more than 4 rows on the amx, avx512_bf16, neon_bf16 or sve_bf16 table. Such a forward is
 * not bitwise the widened float call, and reads bf16 subnormal inputs as zero. */
int hu_on_dot_units(fa_context *ctx, fa_dtype qt, fa_dtype kt, int64_t dim, int64_t q_rows);
/* The same for a backward: even D and Dv, any rows. */
int hu_backward_on_dot_units(fa_context *ctx, fa_dtype qt, fa_dtype kt, int64_t dim, int64_t dim_v);

fa_status hu_forward(fa_context *ctx, const fa_params *p, kit_problem *pr);
fa_status hu_backward(fa_context *ctx, const fa_params *p, kit_problem *pr);

/* "bf16/bf16 B=.. Hq=.. ..." for messages (q's type / k's type). */
void hu_desc(const kit_shape *s, const fa_params *p, char *buf, size_t size);

/* ---- the accuracy rule ------------------------------------------------------------------ */

typedef struct {
    double max_err; /* max |x - ref| over the elements where both are finite */
    double max_ref; /* max |ref| over the finite ref values */
    int64_t worst;  /* flat index of max_err (-1 if none) */
    double worst_x, worst_ref;
    int64_t mismatches; /* elements where x or ref is not finite and they are not the same value (NaN
                           matches NaN) */
    int64_t first_mismatch;
} hu_err;

hu_err hu_compare(const double *x, const double *ref, int64_t n);

/* The half suites' rule for one output quantity of type t (out, lse, dq, dk or dv), from the
 * library's values lib, the float64 oracle's oracle (on the same rounded inputs) and the naive f32
 * yardstick's naive, already rounded to t, n values each:
 *   max|lib - oracle| <= 3 · max|naive - oracle| + floor,  floor = max(f32_floor, ulp_t(max|oracle|))
 * and the non-finite values of lib must be those of the oracle. ulp_t(max|oracle|) is one ulp of
 * the output type at the largest magnitude: the yardstick's error is its rounding, at most half an
 * ulp per element, but may be ~0 by luck where every value lands near a representable one (a
 * single element, or P = 1 rows whose out is a v row), while the library rounds its own f32 result,
 * which may sit on the other side of a rounding boundary: up to half an ulp plus f32 error. f32_floor
 * is the f32 suite's floor for the same quantity (tests/util.c, util_backward.h), which is what
 * remains when t is f32 (the mixed mode's out and dq, and every lse). Returns 1 when it holds;
 * otherwise explains in msg. */
int hu_check(const char *what, fa_dtype t, const double *lib, const double *oracle, const double *naive,
             int64_t n, double f32_floor, char *msg, size_t msg_size);

#endif
