/* SPDX-License-Identifier: BSD-3-Clause */
// Normwise errors between the MPI and the one-process results.
#include "verify.h"

#include <math.h>

#include "kernels/half.h" /* src/: the library's bf16/f16 widening */

static double at(const fa_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case FA_F64: return ((const double *)t->data)[i];
    case FA_BF16: return (double)fa_bf16_to_f32(((const uint16_t *)t->data)[i]);
    case FA_F16: return (double)fa_f16_to_f32(((const uint16_t *)t->data)[i]);
    default: return (double)((const float *)t->data)[i];
    }
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
    /* bf16, f16 (fa-bench's rule, bench/verify.c): f32's plus one rounding of each output, at most u
     * of max|ref| (u = 2^-8, 2^-11) */
    double rounding = t == FA_BF16 ? 0x1p-8 : t == FA_F16 ? 0x1p-11 : 0.0;
    return (gradient ? 1e-3 : 1e-4) + rounding;
}
