/* SPDX-License-Identifier: BSD-3-Clause */
// Normwise errors between the MPI and the one-process results.
#include "verify.h"

#include <math.h>
#include <string.h>

#include "compare.h" /* the test kit's rules */
#include "dtype.h"   /* the test kit's bf16/f16 widening */
#include "tables.h"  /* the test kit's list of tables with bf16 dot-product units */

double bm_normwise_error(const fa_tensor *got, const fa_tensor *want, int log_sum_exp)
{
    int64_t n = got->batch * got->heads * got->seq * got->dim;
    double worst = 0.0, scale = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = kit_abs_diff(kit_load(got->dtype, got->data, i), kit_load(want->dtype, want->data, i));
        double w = fabs(kit_load(want->dtype, want->data, i));
        if (d > worst) worst = d;
        if (isfinite(w) && w > scale) scale = w;
    }
    if (log_sum_exp) return worst / (scale > 1.0 ? scale : 1.0);
    return scale > 0.0 ? worst / scale : worst;
}

double bm_tolerance(fa_dtype t, int gradient, int dot_units)
{
    if (t == FA_F64) return gradient ? 1e-11 : 1e-12;
    /* bf16, f16 (fa-bench's rule, bench/verify.c): f32's plus one rounding of each output, at most u
     * of max|ref| (u = 2^-8, 2^-11) */
    double rounding = t == FA_BF16 ? 0x1p-8 : t == FA_F16 ? 0x1p-11 : 0.0;
    /* On bf16 dot-product units the two sides round P (and dS) where their blocks fall, not in the
     * same places: each is only within the header's bound of the exact result, 3 naive roundings
     * (3u of max|ref|), so they are within 6u of each other. */
    if (dot_units && t == FA_BF16) rounding = 6 * 0x1p-8;
    return (gradient ? 1e-3 : 1e-4) + rounding;
}

int bm_on_dot_units(const char *isa, fa_dtype t, int64_t d, int64_t dv)
{
    return t == FA_BF16 && d % 2 == 0 && dv % 2 == 0 && kit_table_multiplies_bf16(isa);
}
