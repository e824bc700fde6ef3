/* SPDX-License-Identifier: BSD-3-Clause */
// Comparison rules; see compare.h.
#include "compare.h"

#include <math.h>

// An lse of -inf (a masked row) equals the oracle's -inf; a NaN the oracle does not have is an
// infinite error, so that it can never pass a tolerance.
double kit_abs_diff(double got, double want)
{
    if (got == want) return 0.0;
    if (isnan(got) && isnan(want)) return 0.0;
    double d = fabs(got - want);
    return isnan(d) ? INFINITY : d;
}

int64_t kit_sample_count(int64_t check_rows, int64_t total)
{
    int64_t n = check_rows < total ? check_rows : total;
    return n < 2 && total >= 2 ? 2 : n; // first and last are always in the sample
}

// floor(k * (total - 1) / (n - 1)), strictly increasing because n <= total; k = 0 gives the first
// row and k = n - 1 the last. Computed in double when the product could overflow int64 (only for
// absurd sizes; the order is kept).
int64_t kit_sample_row(int64_t k, int64_t n, int64_t total)
{
    if (n <= 1) return 0;
    if (k != 0 && total - 1 > INT64_MAX / k)
        return (int64_t)((double)k * (double)(total - 1) / (double)(n - 1));
    return k * (total - 1) / (n - 1);
}
