/* SPDX-License-Identifier: BSD-3-Clause */
/* Verification of a forward result against the float64 oracle (tests/kit/reference.h) on a sample of
 * rows. fa-bench runs it on every thread count's first output, before any timing. */
#ifndef FA_BENCH_VERIFY_H
#define FA_BENCH_VERIFY_H

#include <stdint.h>
#include <stdio.h>

#include "compare.h"
#include "flashattn.h"
#include "problem.h"

typedef struct {
    int64_t rows_checked;
    double tolerance;     /* out's: bench_verify_tolerance of its type */
    double tolerance_lse; /* lse's: bench_verify_lse_tolerance of the call */
    double err_out;       /* max|out - ref| / max|ref| over the checked rows (absolute if every ref is 0) */
    double err_lse;       /* max|lse - ref| / max(1, max|ref|): lse is a logarithm, so its absolute error is
                       the relative error of the softmax denominator; the floor keeps lse near 0 fair */
    int passed;           /* each error <= its tolerance (a NaN where the oracle has a number fails) */
    /* The row with the largest error (out or lse, each scaled as above), for the failure message. */
    int64_t worst_b, worst_h, worst_i;
    int64_t worst_col; /* column of out with the largest difference in that row */
    double worst_got, worst_want, worst_lse_got, worst_lse_want;
} bench_verify_result;

/* The normwise bound of out of type t: 1e-12 for f64 (the exactness mode), 1e-4 for f32 (a flash
 * forward is typically ~1e-6). bf16 and f16 outputs are computed in f32 and rounded once to nearest:
 * that rounding moves each element by at most u*|x| <= u*max|ref| (u = 2^-8 for bf16, 2^-11 for f16,
 * half an ulp), so their bound is f32's plus u: 1e-4 + 2^-8 and 1e-4 + 2^-11. The oracle reads the
 * same rounded inputs as the library, so the inputs' rounding is no part of the error. */
double bench_verify_tolerance(fa_dtype t);

/* lse's bound for a call whose q has type q: lse is f64 or f32 (a float for the half types, never
 * rounded to half), so the bound of its accumulation type. */
double bench_verify_lse_tolerance(fa_dtype q);

/* Checks min(check_rows, B*Hq*Nq) rows spread evenly over the flattened (b, h, i) index, always
 * including the first and the last, so the choice is deterministic and covers every batch and head
 * when enough rows are asked for. Returns 0 (see r->passed), or -1 if memory ran out. */
int bench_verify_forward(const bench_problem *pb, const fa_params *p, int64_t check_rows,
                         bench_verify_result *r);

/* What one checked row contributed: where it is (b, h, i, as reported; set by the caller), its
 * largest |got - want| and largest finite |want|, the column and values there, and its lse. */
typedef struct {
    int64_t b, h, i;
    double out_diff, out_ref_max;
    int64_t col;
    double got, want;
    double lse_got, lse_want;
} bench_row_check;

/* Fills c's differences from row (b, h, i) of out (read through the view, any dtype, out->dim columns)
 * against the oracle's want_row, and the two lse values; leaves c->b, c->h, c->i alone. */
void bench_row_check_fill(bench_row_check *c, const fa_tensor *out, int64_t b, int64_t h, int64_t i,
                          const double *want_row, double lse_got, double lse_want);

/* The verdict over n checked rows, by the rules above (normwise errors, worst row), reduced in row
 * order so that it does not depend on the team that checked them; dtype is out's (q's). */
void bench_verify_reduce(const bench_row_check *checks, int64_t n, fa_dtype dtype, bench_verify_result *r);

/* Prints the worst row of a failed (or passed) verification to f. */
void bench_verify_print_worst(FILE *f, const bench_verify_result *r);

/* The sampling and error rules above (kit_sample_count, kit_sample_row, kit_abs_diff) are the test
 * kit's (tests/kit/compare.h), shared with the gradient check (verify_backward.h). */

#endif
