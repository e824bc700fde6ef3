/* SPDX-License-Identifier: BSD-3-Clause */
/* Verification of dq, dk and dv against the float64 row-level oracle (tests/kit/reference_backward.h) on a
 * deterministic sample of rows. For f32 and f64 the oracle's rows depend on the problem only, so they
 * are computed once per run, before any timing, and every thread count's gradients are compared with
 * them. With a bf16 or f16 q they start from the out the backward was handed (given_out.h), so they
 * are computed after the first verified forward and again only for a thread count whose out differs
 * (other block sizes). */
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
    double seconds;        /* wall time the oracle took, every computation summed */
    int runs;              /* computations so far */
    void *given_out;       /* half q: a copy of the out its delta came from; else NULL */
    size_t given_out_bytes;
} bench_backward_oracle;

/* Samples rows as the forward check does (verify.h: first and last included, evenly spread), each
 * gradient on its own flattened index, and computes the oracle's values in parallel over rows.
 * With sinks, dsinks too, by the header's definition from the oracle's row statistics:
 * dsinks[h] = -sum over b, then i, of exp(sinks[h] - lse_i) * delta_i. It sums over every row, so it
 * costs one float64 forward of the whole problem. With a half q, delta_i is dout_i·pb->out_i (pb->out
 * must hold the forward's result) and a copy of that out is kept; a computed oracle is recomputed.
 * A zeroed oracle may be freed. Returns 0, or -1 if memory ran out. */
int bench_backward_oracle_compute(bench_backward_oracle *o, const bench_problem *pb, const fa_params *p,
                                  int64_t check_rows);

void bench_backward_oracle_free(bench_backward_oracle *o);

/* Whether the oracle must be computed before it judges pb's gradients: never computed, or (half q)
 * computed from another out than the one pb's backward was handed. */
int bench_backward_oracle_stale(const bench_backward_oracle *o, const bench_problem *pb);

typedef struct {
    int64_t rows_dq, rows_dkdv;
    double tolerance;              /* dq's: bench_verify_gradient_tolerance of the q group's type */
    double tolerance_kv;           /* dk's and dv's: the same of the kv group's type */
    double err_dq, err_dk, err_dv; /* max|g - ref| / max|ref| over the checked rows of each gradient
                                      (absolute when every checked ref is 0) */
    double err_dsinks;             /* the same over all Hq entries of dsinks; NAN without sinks */
    double dsinks_tolerance;       /* bench_verify_dsinks_tolerance of q's dtype */
    int passed; /* all three <= their tolerance (a NaN where the oracle has a number fails) */
    /* The entry with the largest error after that scaling, for the failure message. */
    const char *worst_name;                       /* "dq", "dk" or "dv" */
    int64_t worst_b, worst_h, worst_s, worst_col; /* h: query head for dq, kv head for dk and dv */
    double worst_got, worst_want;
} bench_verify_backward_result;

/* The normwise bound of a gradient of type t: 1e-11 for f64, 1e-3 for f32 (a flash backward is
 * typically ~1e-6 in f32). bf16 and f16 gradients are accumulated in f32 and rounded once, so f32's
 * bound plus the type's unit roundoff u (2^-8, 2^-11), as for out (verify.h). */
double bench_verify_gradient_tolerance(fa_dtype t);
/* The bound of a gradient of type t in a backward of shape s: bench_verify_gradient_tolerance, with
 * 3u instead of u where an all-bf16 backward runs on bf16 dot-product units (include/flashattn.h,
 * fa_backward: P and dS rounded to bf16, held to 3 naive roundings of the exact result). */
double bench_shape_gradient_tolerance(const bench_shape *s, fa_dtype t);

/* dsinks' bound for a call whose q has type q: the bound of a gradient of the accumulation type
 * (1e-11 f64, 1e-3 otherwise; dsinks is never half) plus 2^-24, as dsinks is rounded to float once
 * for every dtype. */
double bench_verify_dsinks_tolerance(fa_dtype q);

/* Compares pb's dq, dk and dv with the oracle's rows. */
void bench_verify_backward(const bench_problem *pb, const bench_backward_oracle *o,
                           bench_verify_backward_result *r);

/* Prints the worst entry and the three errors to f. */
void bench_verify_backward_print_worst(FILE *f, const bench_verify_backward_result *r);

#endif
