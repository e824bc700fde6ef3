/* SPDX-License-Identifier: BSD-3-Clause */
/* The MPI result against the one-process call, over every element, by fa-bench's rules
 * (bench/verify.h): normwise errors, an infinity or NaN where the other side differs is an
 * infinite error. */
#ifndef FA_BENCH_MPI_VERIFY_H
#define FA_BENCH_MPI_VERIFY_H

#include "flashattn.h"

/* max|got - want| / max|want| over two compact tensors of one shape (absolute if every want is 0);
 * log_sum_exp: divided by max(1, max|want|) instead, as fa-bench scales lse. */
double bm_normwise_error(const fa_tensor *got, const fa_tensor *want, int log_sum_exp);

/* 1e-12 (f64) or 1e-4 (f32) for out and lse; 1e-11 or 1e-3 for the gradients (fa-bench's); bf16
 * and f16 add their rounding, more for bf16 where the calls run on dot-product units (dot_units:
 * bm_on_dot_units). */
double bm_tolerance(fa_dtype t, int gradient, int dot_units);

/* Whether a bf16 call of head dims d, dv on a context whose table is `isa` (fa_stats.isa) may run
 * on bf16 dot-product units (flashattn.h, fa_forward "dtype" and fa_backward): a table with them
 * and even head dims. */
int bm_on_dot_units(const char *isa, fa_dtype t, int64_t d, int64_t dv);

#endif
