/* SPDX-License-Identifier: BSD-3-Clause */
/* What fa_mpi_forward / fa_mpi_backward must give, and the rules that judge a rank's rows.
 *
 * f64: against the single-process fa_forward / fa_backward on the whole sequence (computed on
 * every rank from the same global inputs): out and lse within 1e-12 of max|ref| over the rank's
 * rows; dq, dk and dv within 1e-11 of max(max|ref|, 1e-4·U) over the rank's rows, U the a-priori
 * bound of tests/util_backward.h (tub_grad_bounds; the floor only matters where the exact gradient
 * is about 0, e.g. a row that sees one key, where both results are rounding noise of order eps·U).
 * f32: the suite's rules (tests/util.c tu_check_accuracy, tests/util_backward.c
 * tub_check_accuracy) against the float64 oracle (tests/kit/reference.c, reference_backward.c) on the
 * rank's rows: out within 2x the naive f32 implementation's error + 1e-6, lse within 2x + 1e-6
 * relative, dq, dk and dv within 3x + 1e-5. The naive error is measured on the same rows.
 * dsinks (every rank gets all Hq): against the oracle's exact value, as tests/modifiers.c
 * tm_check_dsinks judges fa_backward's: f64 within half a float ulp + 1e-11·max|ref| (it is
 * rounded to float), f32 within 3x the naive f32 error + 1e-5; and the same bytes on every rank.
 * Non-finite values (lse = -inf of a row that sees no key) must match exactly. */
#ifndef FA_MPI_TEST_EXPECT_H
#define FA_MPI_TEST_EXPECT_H

#include "check.h"
#include "problem.h"

/* Results over the whole sequence as doubles, contiguous [B][H][N][D]; NULL when not computed. */
typedef struct {
    double *out, *lse;
    double *grad[3]; /* dq, dk, dv */
    double *dsinks;  /* Hq */
} mt_result;

/* Everything a case's rows are judged against. */
typedef struct {
    mt_result single; /* the single-process library calls */
    mt_result oracle; /* float64 oracle (f32 problems; f64: dsinks only) */
    mt_result naive;  /* naive f32 (f32 problems) */
    double bound[3];  /* U for dq, dk, dv */
    uint8_t *keep;    /* with dropout: its mask over the whole sequence, [B][Hq][N][N]; else NULL */
} mt_refs;

/* Computes the references of g on ctx (backward: the gradients and dsinks too). A failing
 * single-process call is reported as a failed check. */
void mt_refs_compute(mt_refs *r, fa_context *ctx, const mt_global *g, int backward);
void mt_refs_free(mt_refs *r);

/* Judges the rank's out (and lse unless without_lse) after a successful fa_mpi_forward, and that
 * nothing outside the rank's rows or around its buffers was written. */
void mt_expect_forward(const mt_global *g, const mt_shard *s, const mt_local *l, const mt_refs *r,
                       int without_lse);
/* Judges dq, dk, dv and dsinks after a successful fa_mpi_backward (collective: dsinks' bytes are
 * compared across ranks). */
void mt_expect_backward(const mt_env *env, const mt_global *g, const mt_shard *s, const mt_local *l,
                        const mt_refs *r);

#endif
