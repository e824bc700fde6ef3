/* SPDX-License-Identifier: BSD-3-Clause */
// Normwise errors between the MPI and the one-process results.
#include "verify.h"

#include <math.h>

static double at(const fa_tensor *t, int64_t i)
{
    return t->dtype == FA_F64 ? ((const double *)t->data)[i] : (double)((const float *)t->data)[i];
}

// bench/verify.h's bench_abs_diff: equal infinities and NaN against NaN agree.
static double difference(double got, double want)
{
    if (isnan(got) || isnan(want)) return isnan(got) && isnan(want) ? 0.0 : INFINITY;
    if (got == want) return 0.0;
    return fabs(got - want);
}

double bm_normwise_error(const fa_tensor *got, const fa_tensor *want, int log_sum_exp)
{
    int64_t n = got->batch * got->heads * got->seq * got->dim;
    double worst = 0.0, scale = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = difference(at(got, i), at(want, i)), w = fabs(at(want, i));
        if (d > worst) worst = d;
        if (isfinite(w) && w > scale) scale = w;
    }
    if (log_sum_exp) return worst / (scale > 1.0 ? scale : 1.0);
    return scale > 0.0 ? worst / scale : worst;
}

double bm_tolerance(fa_dtype t, int gradient)
{
    if (t == FA_F64) return gradient ? 1e-11 : 1e-12;
    return gradient ? 1e-3 : 1e-4;
}
