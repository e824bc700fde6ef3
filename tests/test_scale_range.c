/* SPDX-License-Identifier: BSD-3-Clause */
/* A scale must be finite in the type the scores accumulate in: with f32 tensors a finite double
 * beyond float's range would make every score inf and every output NaN, so it is refused
 * (FA_ERR_ARG, nothing written); with f64 tensors the same scale is valid. The softcap has the
 * same kind of rule (below). */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flashattn.h"
#include "util.h"
#include "util_backward.h"

Test(scale_range, a_scale_beyond_float_range_is_refused_for_f32_and_accepted_for_f64)
{
    float q[8] = {0.5f, -0.25f, 0, 1, 0.125f, 0.75f, -1, 0.5f}, o[8], lse[2];
    memset(o, 0x5a, sizeof o);
    memset(lse, 0x5a, sizeof lse);
    float o_before[8], lse_before[2];
    memcpy(o_before, o, sizeof o);
    memcpy(lse_before, lse, sizeof lse);
    fa_tensor t = fa_tensor_bhsd(q, FA_F32, 1, 1, 2, 4), to = fa_tensor_bhsd(o, FA_F32, 1, 1, 2, 4);
    fa_params p = FA_PARAMS_INIT;
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

/* A softcap must likewise lie in float's normal range when the scores are float (src/api/validate.c;
 * s/softcap and softcap·tanh are float products): below FLT_MIN or above FLT_MAX it is refused for
 * f32 (FA_ERR_ARG, nothing written, forward and backward) and valid for f64. The edges of the range
 * are valid for f32. A softcap far below every |score| caps them all to about ±softcap, so every
 * key gets the same weight and out is the mean of the value rows; one far above every |score|
 * leaves the scores as they are (tanh x = x for tiny x), so out is the plain call's. */
static const double softcap_f32_bad[] = {FLT_MIN / 2.0, 1e-300, DBL_MIN, DBL_TRUE_MIN,
                                         3.4028236e38,  1e300,  DBL_MAX};

/* Largest |out - mean of v over the keys| (non-causal: every row sees every key), and largest
 * |out - other| when other is not NULL. */
static double max_dev(const tu_problem *pr, const tu_problem *other)
{
    const fa_tensor *o = &pr->out, *v = &pr->v;
    const int64_t group = pr->q.heads / pr->k.heads;
    double worst = 0.0;
    for (int64_t b = 0; b < o->batch; b++)
        for (int64_t h = 0; h < o->heads; h++)
            for (int64_t i = 0; i < o->seq; i++)
                for (int64_t d = 0; d < o->dim; d++) {
                    double want = 0.0;
                    if (other)
                        want = kit_tensor_load(&other->out, b, h, i, d);
                    else {
                        for (int64_t j = 0; j < v->seq; j++) want += kit_tensor_load(v, b, h / group, j, d);
                        want /= (double)v->seq;
                    }
                    double dev = fabs(kit_tensor_load(o, b, h, i, d) - want);
                    if (!(dev <= worst)) worst = dev; /* NaN wins */
                }
    return worst;
}

Test(scale_range, a_softcap_outside_float_normal_range_is_refused_for_f32_and_valid_for_f64)
{
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++) {
        fa_dtype dt = t ? FA_F64 : FA_F32;
        tu_shape s = {dt, 2, 4, 2, 5, 7, 8, 6, TU_BHSD};
        tu_rng rng = tu_rng_make(seed + (uint64_t)t);
        tub_problem plain, bp;
        tub_make(&plain, &s, &rng, 1.0);
        rng = tu_rng_make(seed + (uint64_t)t);
        tub_make(&bp, &s, &rng, 1.0);
        tu_problem *pr = &bp.fw;
        cr_assert_eq(tub_forward(NULL, NULL, &plain), FA_OK);
        /* f64: 1e-14 of |v| <= 1; f32: the float rounding of s/softcap, subnormal at FLT_MAX */
        const double tol = t ? 1e-14 : 1e-5;
        for (size_t c = 0; c < sizeof softcap_f32_bad / sizeof *softcap_f32_bad + 2; c++) {
            const int edge = c >= sizeof softcap_f32_bad / sizeof *softcap_f32_bad; /* FLT_MIN, FLT_MAX */
            const double cap = edge ? (c % 2 ? (double)FLT_MAX : (double)FLT_MIN) : softcap_f32_bad[c];
            fa_params p = FA_PARAMS_INIT;
            p.softcap = cap;
            tu_problem_fill_canary(pr);
            unsigned char *out_snap = kit_buf_snapshot(&pr->out_buf),
                          *lse_snap = kit_buf_snapshot(&pr->lse_buf);
            fa_status st = tub_forward(NULL, &p, &bp);
            if (dt == FA_F32 && !edge) {
                cr_expect_eq(st, FA_ERR_ARG, "f32, softcap %g, seed %llu: fa_forward: %s, not FA_ERR_ARG",
                             cap, (unsigned long long)seed, fa_status_str(st));
                cr_expect(strstr(fa_last_error(), "p.softcap") != NULL,
                          "f32, softcap %g: fa_last_error() is \"%s\"", cap, fa_last_error());
                cr_expect(kit_buf_equals_snapshot(&pr->out_buf, out_snap) &&
                              kit_buf_equals_snapshot(&pr->lse_buf, lse_snap),
                          "f32, softcap %g: refused, but out or lse was written", cap);
                tub_fill_grad_canary(&bp);
                unsigned char *grad_snap[3];
                for (int g = 0; g < 3; g++) grad_snap[g] = kit_buf_snapshot(&bp.grad_buf[g]);
                st = tub_backward(NULL, &p, &bp);
                cr_expect_eq(st, FA_ERR_ARG, "f32, softcap %g, seed %llu: fa_backward: %s, not FA_ERR_ARG",
                             cap, (unsigned long long)seed, fa_status_str(st));
                for (int g = 0; g < 3; g++) {
                    cr_expect(kit_buf_equals_snapshot(&bp.grad_buf[g], grad_snap[g]),
                              "f32, softcap %g: fa_backward refused, but gradient %d was written", cap, g);
                    free(grad_snap[g]);
                }
            } else {
                cr_expect_eq(st, FA_OK, "%s, softcap %g, seed %llu: status %s", t ? "f64" : "f32", cap,
                             (unsigned long long)seed, fa_status_str(st));
                if (st == FA_OK) {
                    int below = cap < 1e-3; /* far below every |score|: the mean of v */
                    double dev = max_dev(pr, below ? NULL : &plain.fw);
                    cr_expect(dev <= tol, "%s, softcap %g, seed %llu: out is %g from %s", t ? "f64" : "f32",
                              cap, (unsigned long long)seed, dev,
                              below ? "the mean of v" : "the call without softcap");
                    st = tub_backward(NULL, &p, &bp);
                    cr_expect_eq(st, FA_OK, "%s, softcap %g: fa_backward: %s", t ? "f64" : "f32", cap,
                                 fa_status_str(st));
                }
            }
            free(out_snap);
            free(lse_snap);
        }
        tub_free(&bp);
        tub_free(&plain);
    }
}
