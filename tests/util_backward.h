/* SPDX-License-Identifier: BSD-3-Clause */
/* Backward-pass test helpers, on top of tests/util.h: a problem with dout and the three gradient
 * views (dq, dk, dv) in the layout of its inputs, canaries around and between them, whole-tensor
 * copies and comparisons, and the accuracy rule of the backward tests against the analytic oracle
 * (tests/reference_backward.c). Nothing here judges the library by itself. */
#ifndef FA_TEST_UTIL_BACKWARD_H
#define FA_TEST_UTIL_BACKWARD_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"
#include "util.h"

/* ---- problems --------------------------------------------------------------------------- */

enum { TUB_DQ = 0, TUB_DK = 1, TUB_DV = 2 };

typedef struct {
    tu_problem fw;     /* q, k, v, out, lse (tests/util.h) */
    fa_tensor dout;    /* shape of out, filled uniform in [-1, 1) */
    fa_tensor grad[3]; /* dq, dk, dv: shapes of q, k, v */
    kit_buf dout_buf, grad_buf[3];
} tub_problem;

/* tu_problem_make, plus dout and the gradients in the same layout family: contiguous [B][H][S][D]
 * for TU_BHSD, [B][S][H][D] for TU_BSHD, and for TU_PACKED [B][S][H][D] views with gaps between
 * heads, rows and batches (each tensor its own gaps). Gradient storage (gaps and guards included)
 * is filled with KIT_CANARY. */
void tub_make(tub_problem *bp, const tu_shape *s, tu_rng *rng, double qk_amp);
void tub_free(tub_problem *bp);
/* Refills the whole gradient storage (gaps and guards) with KIT_CANARY. */
void tub_fill_grad_canary(tub_problem *bp);

/* fa_forward into bp's out and lse, then fa_backward from them into bp's gradients. */
fa_status tub_forward(fa_context *ctx, const fa_params *p, tub_problem *bp);
fa_status tub_backward(fa_context *ctx, const fa_params *p, tub_problem *bp);

/* 1 when every byte of the gradients' storage that is not an element of its view (gaps, guards)
 * still holds KIT_CANARY. */
int tub_grads_only_defined_written(const tub_problem *bp);

/* ---- views ------------------------------------------------------------------------------ */

int64_t tub_numel(const fa_tensor *t);
/* The elements of t as doubles, contiguous [B][H][S][D] (malloc'ed; one spare element). */
double *tub_view_copy(const fa_tensor *t);
/* 1 when the elements of two views of one shape and dtype hold identical bytes; otherwise the
 * flat [B][H][S][D] index of the first difference goes to *where. */
int tub_views_bitwise_equal(const fa_tensor *a, const fa_tensor *b, int64_t *where);
/* Elements of t that are NaN or infinite; the flat index of the first goes to *first (if any). */
int64_t tub_count_nonfinite(const fa_tensor *t, int64_t *first);
/* Largest |x| over the elements of t (NaN ignored). */
double tub_max_abs(const fa_tensor *t);

/* ---- oracle ----------------------------------------------------------------------------- */

/* dq, dk, dv in double, contiguous [B][H][S][D] (layout of ref_backward). */
typedef struct {
    double *grad[3];
} tub_ref;

/* ref_backward (float64 oracle) or ref_backward_naive_f32 (the f32 yardstick) on bp's inputs. */
void tub_ref_compute(tub_ref *r, const tub_problem *bp, const fa_params *p);
void tub_ref_compute_naive_f32(tub_ref *r, const tub_problem *bp, const fa_params *p);
void tub_ref_free(tub_ref *r);

typedef struct {
    double max_err; /* max |lib - ref| over the elements */
    double max_ref; /* max |ref| */
    int64_t worst;  /* flat index of max_err (-1 if none) */
    double worst_lib, worst_ref;
    int64_t mismatches; /* elements where lib or ref is not finite and they are not the same value */
    int64_t first_mismatch;
} tub_err;

/* A view against a contiguous reference of its shape; two contiguous references of n values. With
 * a mask (NULL: every element), only the elements whose flat index i has mask[i] != 0 count. */
tub_err tub_compare_view(const fa_tensor *lib, const double *ref, const unsigned char *mask);
tub_err tub_compare_arrays(const double *x, const double *ref, int64_t n, const unsigned char *mask);

/* A-priori bounds on |dq|, |dk|, |dv| from the inputs alone (see tub_check_accuracy):
 *   |dS_ij| <= P_ij · 2·Dv·max|dout|·max|v|, sum_j P_ij <= 1, and a key is seen by at most G·Nq
 *   query rows of its kv head (G = Hq/Hkv), so
 *   |dq| <= U_dq = scale · 2·Dv·max|dout|·max|v| · max|k|
 *   |dk| <= U_dk = scale · 2·Dv·max|dout|·max|v| · max|q| · G·Nq
 *   |dv| <= U_dv = max|dout| · G·Nq                                                             */
void tub_grad_bounds(const tub_problem *bp, const fa_params *p, double bound[3]);

/* The backward tests' accuracy rule, per tensor (dq, dk, dv); every value must be finite and
 * finite-for-finite (non-finite values must match the oracle's):
 *   f64: max|lib - ref| <= rel_tol · max(max|ref|, 1e-4 · U), U from tub_grad_bounds. The floor
 *        only matters where the exact gradient is (nearly) zero - e.g. a row that sees one key has
 *        P = 1 and dS = dP - delta = 0 exactly - so both sides are rounding noise of order eps·U.
 *   f32: max|lib - ref| <= 3 · max|naive_f32 - ref| + 1e-5 (both against the f64 oracle).
 * naive may be NULL for f64. Returns 1 when it holds; otherwise explains in msg. */
int tub_check_accuracy(const tub_problem *bp, const fa_params *p, const tub_ref *oracle, const tub_ref *naive,
                       double rel_tol, char *msg, size_t msg_size);
/* The same rule on the elements selected by mask[g] (flat [B][H][S][D] index) of each gradient. */
int tub_check_accuracy_masked(const tub_problem *bp, const fa_params *p, const tub_ref *oracle,
                              const tub_ref *naive, unsigned char *const mask[3], double rel_tol, char *msg,
                              size_t msg_size);

/* Shape string (tu_shape_str) plus block sizes, for messages. */
void tub_desc(const tub_problem *bp, const fa_params *p, int block_q, int block_k, char *buf, size_t size);

/* ---- directions ------------------------------------------------------------------------- */

/* Forward and backward as one axis of a test table: a property both passes promise is one test
 * over a table with a direction column (or a loop over TUB_DIRECTIONS), not two mirrored files. */
typedef enum { TUB_FORWARD = 0, TUB_BACKWARD = 1, TUB_DIRECTIONS = 2 } tub_direction;

/* "forward" or "backward", for messages. */
const char *tub_direction_name(tub_direction d);

#endif
