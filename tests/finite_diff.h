/* SPDX-License-Identifier: BSD-3-Clause */
/* Gradients against central finite differences of the library's own forward, for
 * test_backward_finite_diff.c and test_backward_modifiers_finite_diff.c: the scalar loss is
 * L = sum(dout ∘ out), out = fa_forward(q, k, v, p), with the problem's fixed random dout, and each
 * probed entry x of an input gives
 *     g ≈ [8·(L(x+h) - L(x-h)) - (L(x+2h) - L(x-2h))] / (12h),  h = 2^-10 · 2^ceil(log2 max(1, |x|))
 * (about 1e-3 relative), the fourth-order central stencil. Its truncation error is h^4/30 · |L'''''|
 * (h^4 ~ 1e-12) and its rounding error about 9·|error of ΔL| / (12h): each
 * ΔL = sum(dout ∘ (out(x+a) - out(x-a))) is summed from elementwise differences, so the outputs an
 * entry does not touch cancel exactly and the error is a few ulps of the outputs it does (~1e-15),
 * i.e. ~1e-12 in g. A plain two-point difference at h ~ 1e-6 would carry ~1e-9 of rounding error,
 * too close to the tolerance for gradient entries near 0.01.
 *
 * Tolerance per entry: |g - analytic| <= 1e-7 · max(|analytic|, floor), with
 * floor = max(1e-3 · (largest |analytic| of that tensor), 1e-4): entries that happen to be near zero
 * are judged against the tensor's scale, and a tensor that is zero in exact arithmetic (every row
 * sees one key: out = v_j whatever q and k are) allows 1e-11 of absolute noise. */
#ifndef FA_TEST_FINITE_DIFF_H
#define FA_TEST_FINITE_DIFF_H

#include <stdint.h>

#include "util.h"
#include "util_backward.h"

typedef struct {
    fa_context *ctx;
    tub_problem *bp;    /* forward and backward already run: its grad[] are the analytic gradients */
    const fa_params *p; /* the probing forwards' parameters (no dsinks) */
    double *dout;       /* bp's dout in tu_out_copy's order */
    int64_t n_out;
    const char *desc; /* the problem, for messages */
    uint64_t seed;
    int checked; /* entries compared so far */
} fd_run;

fd_run fd_run_make(fa_context *ctx, tub_problem *bp, const fa_params *p, const char *desc, uint64_t seed);
void fd_run_free(fd_run *r);

/* floor above: max(1e-3 · max |g[i]|, 1e-4). */
double fd_floor(const double *g, int64_t n);

/* dq, dk and dv at up to `samples` (>= 4) entries of each: all of a small tensor, else its first and
 * last entries, the first and last of its last row and random ones (rng). */
void fd_check_inputs(fd_run *r, tu_rng *rng, int samples);

/* dL/dx at the float *x (a sink logit) against `analytic`, as element `index` of `what`; x ± 2h must
 * be exact in float (asserted). */
void fd_check_float(fd_run *r, const char *what, int64_t index, float *x, double analytic, double floor_abs);

#endif
