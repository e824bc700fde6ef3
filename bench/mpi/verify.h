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

/* 1e-12 (f64) or 1e-4 (f32) for out and lse; 1e-11 or 1e-3 for the gradients (fa-bench's). */
double bm_tolerance(fa_dtype t, int gradient);

#endif
