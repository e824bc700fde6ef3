/* SPDX-License-Identifier: BSD-3-Clause */
/* The public entry points: validate, pick the context, dispatch to a driver. */
#include <stdint.h>
#include <string.h>

#include "drivers/backward.h"
#include "runtime/context.h"
#include "api/diagnostic.h"
#include "api/params.h"
#include "flashattn.h"
#include "drivers/forward.h"
#include "drivers/merge.h"
#include "api/validate.h"

#define FA_STR2(x) #x
#define FA_STR(x)  FA_STR2(x)

const char *fa_version(void)
{
    return FA_STR(FLASHATTN_VERSION_MAJOR) "." FA_STR(FLASHATTN_VERSION_MINOR) "." FA_STR(
        FLASHATTN_VERSION_PATCH);
}

unsigned fa_version_number(void)
{
    return FLASHATTN_VERSION;
}

/* Contiguous views. Sizes are multiplied in int64 with overflow checks; a bad size yields
 * strides of -1, which every call refuses (FA_ERR_SHAPE for the size, else FA_ERR_STRIDE). */
static fa_tensor contiguous(void *data, fa_dtype t, int64_t b, int64_t h, int64_t s, int64_t d,
                            int heads_inner)
{
    fa_tensor x = {.data = data,
                   .dtype = t,
                   .batch = b,
                   .heads = h,
                   .seq = s,
                   .dim = d,
                   .stride_batch = -1,
                   .stride_head = -1,
                   .stride_seq = -1};
    if (b < 0 || h < 0 || s < 0 || d < 0) return x;
    int64_t row, plane, whole;
    if (heads_inner) { /* [B][S][H][D] */
        if (__builtin_mul_overflow(h, d, &row) || __builtin_mul_overflow(s, row, &whole)) return x;
        x.stride_head = d;
        x.stride_seq = row;
        x.stride_batch = whole;
    } else { /* [B][H][S][D] */
        if (__builtin_mul_overflow(s, d, &plane) || __builtin_mul_overflow(h, plane, &whole)) return x;
        x.stride_seq = d;
        x.stride_head = plane;
        x.stride_batch = whole;
    }
    return x;
}

fa_tensor fa_tensor_bhsd(void *data, fa_dtype t, int64_t b, int64_t h, int64_t s, int64_t d)
{
    return contiguous(data, t, b, h, s, d, 0);
}

fa_tensor fa_tensor_bshd(void *data, fa_dtype t, int64_t b, int64_t s, int64_t h, int64_t d)
{
    return contiguous(data, t, b, h, s, d, 1);
}

/* The steps every computing call shares once its arguments are valid: the context (the thread's
 * default one for NULL), exclusive use of it, the run. */
static fa_status run_on_context(const char *call, fa_context *ctx, const fa_problem *prob,
                                fa_status (*run)(fa_context *, const fa_problem *))
{
    fa_status st;
    if (!ctx && (st = fa_default_context(call, &ctx)) != FA_OK) return st;
    if (!fa_context_acquire(ctx))
        return fa_diag_fail(FA_ERR_BUSY, call,
                            "ctx = %p is serving another call (one call at a time per context)", (void *)ctx);
    st = run(ctx, prob);
    fa_context_release(ctx);
    return st;
}

fa_status fa_forward(fa_context *ctx, const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                     const fa_tensor *v, const fa_tensor *out, void *lse)
{
    static const char call[] = "fa_forward";
    fa_diag_clear();
    fa_params_copy params;
    fa_problem prob;
    fa_status st = fa_params_read(call, p, &params);
    if (st == FA_OK) st = fa_validate_forward(call, &params.p, q, k, v, out, lse, &prob);
    if (st == FA_OK) st = run_on_context(call, ctx, &prob, fa_forward_run);
    return fa_diag_finish(st, call);
}

fa_status fa_backward(fa_context *ctx, const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                      const fa_tensor *v, const fa_tensor *out, const fa_tensor *dout, const void *lse,
                      const fa_tensor *dq, const fa_tensor *dk, const fa_tensor *dv)
{
    static const char call[] = "fa_backward";
    fa_diag_clear();
    fa_params_copy params;
    fa_problem prob;
    fa_status st = fa_params_read(call, p, &params);
    if (st == FA_OK) st = fa_validate_backward(call, &params.p, q, k, v, out, dout, lse, dq, dk, dv, &prob);
    if (st == FA_OK) st = run_on_context(call, ctx, &prob, fa_backward_run);
    return fa_diag_finish(st, call);
}

fa_status fa_forward_check(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                           const fa_tensor *out, const void *lse)
{
    static const char call[] = "fa_forward_check";
    fa_diag_clear();
    fa_params_copy params;
    fa_problem prob;
    fa_status st = fa_params_read(call, p, &params);
    if (st == FA_OK) st = fa_validate_forward(call, &params.p, q, k, v, out, lse, &prob);
    return fa_diag_finish(st, call);
}

fa_status fa_backward_check(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                            const fa_tensor *out, const fa_tensor *dout, const void *lse, const fa_tensor *dq,
                            const fa_tensor *dk, const fa_tensor *dv)
{
    static const char call[] = "fa_backward_check";
    fa_diag_clear();
    fa_params_copy params;
    fa_problem prob;
    fa_status st = fa_params_read(call, p, &params);
    if (st == FA_OK) st = fa_validate_backward(call, &params.p, q, k, v, out, dout, lse, dq, dk, dv, &prob);
    return fa_diag_finish(st, call);
}

fa_status fa_merge(fa_context *ctx, int n, const fa_tensor *outs, const void *const *lses,
                   const fa_tensor *out, void *lse)
{
    static const char call[] = "fa_merge";
    fa_diag_clear();
    fa_merge_problem mp;
    fa_status st = fa_validate_merge(call, n, outs, lses, out, lse, &mp);
    if (st == FA_OK) {
        if (!ctx) st = fa_default_context(call, &ctx);
        if (st == FA_OK && !fa_context_acquire(ctx))
            st = fa_diag_fail(FA_ERR_BUSY, call,
                              "ctx = %p is serving another call (one call at a time per context)",
                              (void *)ctx);
        else if (st == FA_OK) {
            st = fa_merge_run(ctx, &mp);
            fa_context_release(ctx);
        }
    }
    return fa_diag_finish(st, call);
}
