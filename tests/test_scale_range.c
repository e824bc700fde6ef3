/* SPDX-License-Identifier: BSD-3-Clause */
/* A scale must be finite in the type the scores accumulate in: with f32 tensors a finite double
 * beyond float's range would make every score inf and every output NaN, so it is refused
 * (FA_ERR_ARG, nothing written); with f64 tensors the same scale is valid. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "flashattn.h"

Test(scale_range, a_scale_beyond_float_range_is_refused_for_f32_and_accepted_for_f64)
{
    float q[8] = {0.5f, -0.25f, 0, 1, 0.125f, 0.75f, -1, 0.5f}, o[8], lse[2];
    memset(o, 0x5a, sizeof o);
    memset(lse, 0x5a, sizeof lse);
    float o_before[8], lse_before[2];
    memcpy(o_before, o, sizeof o);
    memcpy(lse_before, lse, sizeof lse);
    fa_tensor t = fa_tensor_bhsd(q, FA_F32, 1, 1, 2, 4), to = fa_tensor_bhsd(o, FA_F32, 1, 1, 2, 4);
    fa_params p = fa_params_default();
    p.scale = 1e300;
    cr_expect_eq(fa_forward(NULL, &p, &t, &t, &t, &to, lse), FA_ERR_ARG);
    cr_expect(memcmp(o, o_before, sizeof o) == 0 && memcmp(lse, lse_before, sizeof lse) == 0,
              "a refused call wrote its outputs");
    p.scale = -1e39; /* just past FLT_MAX, negative */
    cr_expect_eq(fa_forward(NULL, &p, &t, &t, &t, &to, lse), FA_ERR_ARG);
    p.scale = 3e38; /* within float's range: valid */
    cr_expect_eq(fa_forward(NULL, &p, &t, &t, &t, &to, NULL), FA_OK);

    double qd[8], od[8], lsed[2];
    for (int i = 0; i < 8; i++) qd[i] = q[i];
    fa_tensor td = fa_tensor_bhsd(qd, FA_F64, 1, 1, 2, 4), tod = fa_tensor_bhsd(od, FA_F64, 1, 1, 2, 4);
    p.scale = 1e300;
    cr_expect_eq(fa_forward(NULL, &p, &td, &td, &td, &tod, lsed), FA_OK);
    for (int i = 0; i < 8; i++) cr_expect(isfinite(od[i]), "f64 out[%d] = %g with scale 1e300", i, od[i]);
}
