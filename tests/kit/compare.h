/* SPDX-License-Identifier: BSD-3-Clause */
/* Comparison rules shared by fa-bench's checks and the suites: an absolute difference in which the
 * non-finite values that agree count as equal, and a deterministic sample of rows. */
#ifndef FA_KIT_COMPARE_H
#define FA_KIT_COMPARE_H

#include <stdint.h>

/* |got - want|; equal infinities and NaN against NaN agree, any other NaN is an infinite error. */
double kit_abs_diff(double got, double want);

/* How many of total rows a check of check_rows samples: min(check_rows, total), and at least 2 when
 * total >= 2 (first and last). */
int64_t kit_sample_count(int64_t check_rows, int64_t total);

/* The k-th of n sampled rows out of total, increasing in k, first and last included. */
int64_t kit_sample_row(int64_t k, int64_t n, int64_t total);

#endif
