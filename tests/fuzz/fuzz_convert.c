/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_convert on two of the input's views (fuzz_input.h, FZ_CONVERT_FIELDS): the status the model
 * allows, nothing written when refused, only dst's elements written when not (fz_run_call), and then
 * every element of dst against the test kit's decoding of src: the value itself, or rounded once to
 * dst's dtype (the kit rounds an f64 through float; fa_convert rounds it once, so from f64 to a half
 * type dst must be at least as near as the kit's value). */
#include <math.h>
#include <string.h>

#include "dtype.h"
#include "fuzz_case.h"

static fa_status invoke_convert(fa_context *ctx, const fz_call *c)
{
    (void)ctx;
    return fa_convert(c->t[FZ_OUT], c->t[FZ_Q]);
}

static void check_element(const fa_tensor *dst, const fa_tensor *src, int64_t b, int64_t h, int64_t s,
                          int64_t d)
{
    const double x = fz_ld(src, b, h, s, d), got = fz_ld(dst, b, h, s, d), near = kit_round(dst->dtype, x);
    if (isnan(x)) {
        FZ_CHECK(isnan(got), "convert (%lld, %lld, %lld, %lld): NaN became %.17g", (long long)b, (long long)h,
                 (long long)s, (long long)d, got);
        return;
    }
    const int once = src->dtype != FA_F64 || dst->dtype == FA_F64 || dst->dtype == FA_F32;
    const int same = got == near && !!signbit(got) == !!signbit(near);
    FZ_CHECK(same || (!once && fabs(got - x) <= fabs(near - x)),
             "convert (%lld, %lld, %lld, %lld): %.17g from %.17g, the kit's rounding %.17g", (long long)b,
             (long long)h, (long long)s, (long long)d, got, x, near);
}

void fz_convert_run(fz_case *c, const char **said)
{
    const fz_convert_bytes *cv = &c->in.convert;
    fa_tensor dst_view = c->view[cv->convert_dst % 8];
    const fa_tensor *src = c->layout[cv->convert_src % 8] == L_NULL ? NULL : &c->view[cv->convert_src % 8];
    if (cv->convert & 1 && src) { /* src's sizes, dst's own strides */
        dst_view.batch = src->batch, dst_view.heads = src->heads;
        dst_view.seq = src->seq, dst_view.dim = src->dim;
    }
    fz_call call;
    memset(&call, 0, sizeof call);
    call.convert = 1;
    call.n = 2;
    call.t[FZ_Q] = src;
    call.t[FZ_OUT] = c->layout[cv->convert_dst % 8] == L_NULL ? NULL : &dst_view;
    call.is_out[FZ_OUT] = 1;
    call.raw[FZ_OUT] = c->layout[cv->convert_dst % 8] == L_RAW || (cv->convert & 1);
    fa_status st = fz_run_call(c, call, invoke_convert, "fa_convert");
    *said = fa_status_str(st);
    if (st != FA_OK) return; /* (a call the harness poisoned is refused) */
    const fa_tensor *dst = &dst_view;
    for (int64_t b = 0; b < dst->batch; b++)
        for (int64_t h = 0; h < dst->heads; h++)
            for (int64_t s = 0; s < dst->seq; s++)
                for (int64_t d = 0; d < dst->dim; d++) check_element(dst, src, b, h, s, d);
}
