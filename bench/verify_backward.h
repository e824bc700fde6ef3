/* SPDX-License-Identifier: BSD-3-Clause */
/* Verification of dq, dk and dv against the float64 row-level oracle (tests/reference_backward.h) on a
 * deterministic sample of rows. The oracle's rows depend on the problem only, so they are computed
 * once per run, before any timing, and every thread count's gradients are compared with them. */
#ifndef FA_BENCH_VERIFY_BACKWARD_H
#define FA_BENCH_VERIFY_BACKWARD_H

#include <stdint.h>
#include <stdio.h>

#include "flashattn.h"
#include "problem.h"

typedef struct {
    int64_t n_dq, n_kv;    /* sampled rows: of dq over (b, h, i), of dk and dv over (b, kv head, j) */
    double *dq, *dk, *dv;  /* the oracle's rows in sample order: n_dq x D, n_kv x D, n_kv x Dv */
    double *dsinks;        /* Hq values when the problem has sinks (never sampled: see below), else NULL */
    int64_t heads_touched; /* (b, kv head) pairs whose every query row's softmax was computed */
    double seconds;        /* wall time the oracle took */
} bench_backward_oracle;

/* Samples rows as the forward check does (verify.h: first and last included, evenly spread), each
 * gradient on its own flattened index, and computes the oracle's values in parallel over rows.
 * With sinks, dsinks too, by the header's definition from the oracle's row statistics:
 * dsinks[h] = -sum over b, then i, of exp(sinks[h] - lse_i) * delta_i. It sums over every row, so it
 * costs one float64 forward of the whole problem.
 * A zeroed oracle may be freed. Returns 0, or -1 if memory ran out. */
int bench_backward_oracle_compute(bench_backward_oracle *o, const bench_problem *pb, const fa_params *p,
                                  int64_t check_rows);

void bench_backward_oracle_free(bench_backward_oracle *o);

typedef struct {
    int64_t rows_dq, rows_dkdv;
    double tolerance;
    double err_dq, err_dk, err_dv; /* max|g - ref| / max|ref| over the checked rows of each gradient
                                      (absolute when every checked ref is 0) */
    double err_dsinks;             /* the same over all Hq entries of dsinks; NAN without sinks */
    double dsinks_tolerance;       /* bench_verify_dsinks_tolerance of the dtype */
    int passed;                    /* all three <= tolerance (a NaN where the oracle has a number fails) */
    /* The entry with the largest error after that scaling, for the failure message. */
    const char *worst_name;                       /* "dq", "dk" or "dv" */
    int64_t worst_b, worst_h, worst_s, worst_col; /* h: query head for dq, kv head for dk and dv */
    double worst_got, worst_want;
} bench_verify_backward_result;

/* 1e-11 for f64, 1e-3 for f32 (normwise; a flash backward is typically ~1e-6 in f32). */
double bench_verify_gradient_tolerance(fa_dtype t);

/* dsinks' bound: the gradients' plus 2^-24, as dsinks is rounded to float once for every dtype. */
double bench_verify_dsinks_tolerance(fa_dtype t);

/* Compares pb's dq, dk and dv with the oracle's rows. */
void bench_verify_backward(const bench_problem *pb, const bench_backward_oracle *o,
                           bench_verify_backward_result *r);

/* Prints the worst entry and the three errors to f. */
void bench_verify_backward_print_worst(FILE *f, const bench_verify_backward_result *r);

#endif
