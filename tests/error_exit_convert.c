/* SPDX-License-Identifier: BSD-3-Clause */
/* The error-exit fixture's fa_convert rows (see error_exit.h): dst is the valid call's dq and src its
 * q, both [B][Hq][N][D] of the world's dtype, so fa_convert(dq, q) is a valid copy that each row
 * breaks in one place, with the status and the argument include/flashattn.h documents:
 *   NULL    dst or src NULL, then the data of either NULL, and both NULL (dst named);
 *   DTYPE   an unknown dtype of either, a quantized dst (a quantized src is valid: converted
 *           exactly), both unknown (dst named);
 *   SHAPE   a negative size of either on each axis, dst's size other than src's (both named);
 *   STRIDE  negative and overflowing strides of either, data misaligned or wrapping the address
 *           space, a dst that overlaps itself (a src may: it broadcasts);
 *   ALIAS   dst over src, whole, last element on the first, first on the last. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "error_exit.h"

static void both_null(const ee_world *w, ee_args *a)
{
    (void)w;
    a->null_t[EE_DQ] = a->null_t[EE_Q] = 1;
}

static void both_unknown(const ee_world *w, ee_args *a)
{
    (void)w;
    a->t[EE_DQ].dtype = a->t[EE_Q].dtype = (fa_dtype)99;
}

void ee_add_convert_cases(ee_table *t)
{
    static const struct {
        const char *name;
        int slot;
    } side[2] = {{"dst", EE_DQ}, {"src", EE_Q}};
    static const ee_named unknown[] = {{"7 (past the last)", 7}, {"-1", -1}, {"99", 99}};
    static const ee_named quantized[] = {
        {"FA_I8", FA_I8}, {"FA_F8_E4M3", FA_F8_E4M3}, {"FA_F8_E5M2", FA_F8_E5M2}};
    static const ee_named sizes[] = {{"-1", -1}, {"INT64_MIN", INT64_MIN}};
    static const ee_named strides[] = {{"-1", -1},
                                       {"INT64_MIN", INT64_MIN},
                                       {"INT64_MAX (offset overflows)", INT64_MAX},
                                       {"2^61 (byte offset overflows)", INT64_C(1) << 61}};
    static const ee_named misaligned[] = {{"1 byte past an element boundary", 1},
                                          {"half an element past an element boundary", EE_HALF_ELEM}};
    static const char *const size_name[4] = {"batch", "heads", "seq", "dim"};
    static const char *const stride_name[3] = {"stride_batch", "stride_head", "stride_seq"};
    char param[48];
    ee_case *c;
    for (int x = 0; x < 2; x++) {
        const char *n = side[x].name;
        c = ee_add(t, EE_CONVERT, n, "NULL", FA_ERR_NULL, EE_OP_NULL_TENSOR);
        c->ti = side[x].slot;
        snprintf(param, sizeof param, "%s->data", n);
        ee_add(t, EE_CONVERT, param, "NULL", FA_ERR_NULL, EE_OP_NULL_DATA)->ti = side[x].slot;
        snprintf(param, sizeof param, "%s->dtype", n);
        for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++) {
            c = ee_add(t, EE_CONVERT, param, unknown[i].name, FA_ERR_DTYPE, EE_OP_DTYPE);
            c->ti = side[x].slot;
            c->i[0] = unknown[i].x;
        }
        for (size_t i = 0; x == 0 && i < sizeof quantized / sizeof *quantized; i++) {
            c = ee_add(t, EE_CONVERT, param, quantized[i].name, FA_ERR_DTYPE, EE_OP_DTYPE);
            c->ti = side[x].slot;
            c->i[0] = quantized[i].x;
            snprintf(c->phrase, sizeof c->phrase, "a source only");
        }
        for (int axis = 0; axis < 4; axis++) {
            snprintf(param, sizeof param, "%s->%s", n, size_name[axis]);
            for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
                c = ee_add(t, EE_CONVERT, param, sizes[i].name, FA_ERR_SHAPE, EE_OP_SIZE);
                c->ti = side[x].slot, c->field = axis, c->i[0] = sizes[i].x;
            }
            c = ee_add(t, EE_CONVERT, param, "+1 (the other's differs)", FA_ERR_SHAPE, EE_OP_SIZE);
            c->ti = side[x].slot, c->field = axis, c->i[0] = EE_PLUS_ONE;
            snprintf(c->names, sizeof c->names, "dst.%s src.%s", size_name[axis], size_name[axis]);
        }
        for (int axis = 0; axis < 3; axis++) {
            snprintf(param, sizeof param, "%s->%s", n, stride_name[axis]);
            for (size_t i = 0; i < sizeof strides / sizeof *strides; i++) {
                c = ee_add(t, EE_CONVERT, param, strides[i].name, FA_ERR_STRIDE, EE_OP_STRIDE);
                c->ti = side[x].slot, c->field = axis, c->i[0] = strides[i].x;
            }
        }
        snprintf(param, sizeof param, "%s->stride_seq", n);
        if (x == 0) { /* an output may not overlap itself; src may (a broadcast) */
            c = ee_add(t, EE_CONVERT, param, "contiguous - 1 (one element shared)", FA_ERR_STRIDE,
                       EE_OP_STRIDE);
            c->ti = side[x].slot, c->field = 2, c->i[0] = EE_JUST_BELOW;
        }
        snprintf(param, sizeof param, "%s->data", n);
        c = ee_add(t, EE_CONVERT, param, "64 bytes below the top of the address space (its range wraps)",
                   FA_ERR_STRIDE, EE_OP_DATA_TOP);
        c->ti = side[x].slot, c->i[0] = 64;
        for (size_t i = 0; i < sizeof misaligned / sizeof *misaligned; i++) {
            c = ee_add(t, EE_CONVERT, param, misaligned[i].name, FA_ERR_STRIDE, EE_OP_MISALIGN);
            c->ti = side[x].slot, c->i[0] = misaligned[i].x;
        }
    }
    static const char *const overlap[3] = {"over src", "its last element on src's first",
                                           "its first element on src's last"};
    for (int mode = 0; mode < 3; mode++) {
        c = ee_add(t, EE_CONVERT, "dst->data", overlap[mode], FA_ERR_ALIAS, EE_OP_ALIAS);
        c->ti = EE_DQ, c->field = EE_Q, c->mode = mode;
        snprintf(c->names, sizeof c->names, "dst src");
    }
    /* two problems of one class: dst's is found first (the header's order) */
    c = ee_add(t, EE_CONVERT, "dst, src", "both NULL", FA_ERR_NULL, EE_OP_FN);
    c->fn = both_null;
    snprintf(c->names, sizeof c->names, "dst");
    snprintf(c->not_named, sizeof c->not_named, "src");
    c = ee_add(t, EE_CONVERT, "dst->dtype, src->dtype", "both 99", FA_ERR_DTYPE, EE_OP_FN);
    c->fn = both_unknown;
    snprintf(c->names, sizeof c->names, "dst.dtype");
    snprintf(c->not_named, sizeof c->not_named, "src.dtype");
}
