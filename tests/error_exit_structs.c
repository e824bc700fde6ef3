/* SPDX-License-Identifier: BSD-3-Clause */
/* The error-exit fixture's size tags (include/flashattn.h, "ABI"; see error_exit.h): the sizes and
 * bytes the reading rule refuses, for every size-tagged struct, and the fa_forward / fa_backward
 * cases of p and p.seqs. A struct_size that is not the 0.4.0 size plus a multiple of 8, at most
 * FA_STRUCT_SIZE_MAX, is FA_ERR_ARG naming <argument>.struct_size; a larger struct with a byte of a field
 * this library does not know
 * set is FA_ERR_UNSUPPORTED naming the argument and the field's byte offset. Both come before every
 * other check of the call (the cases start from a call with every field of p in use). */
#include <stdio.h>
#include <string.h>

#include "error_exit.h"

int ee_struct_cases(size_t min, size_t own, ee_struct_case *out, int cap)
{
    const struct {
        const char *name;
        size_t size, byte;
    } sizes[] = {
        {"0", 0, 0},
        {"8 (the size field alone)", sizeof(size_t), 0},
        {"the first layout's - 1", min - 1, 0},
        {"the first layout's - 8 (a field short)", min - 8, 0},
        {"the first layout's + 4 (between layouts)", min + 4, 0},
        {"FA_STRUCT_SIZE_MAX + 1", FA_STRUCT_SIZE_MAX + 1, 0},
        {"SIZE_MAX", SIZE_MAX, 0},
        /* the bytes past this build's struct: a later version's fields, which must be zero */
        {"its size + 8, the first byte past it set", own + 8, own},
        {"its size + 16, a byte of its second unknown field set", own + 16, own + 9},
        {"FA_STRUCT_SIZE_MAX, its last byte set", FA_STRUCT_SIZE_MAX, FA_STRUCT_SIZE_MAX - 1},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes && n < cap; i++, n++) {
        ee_struct_case *k = &out[n];
        memset(k, 0, sizeof *k);
        k->size = sizes[i].size;
        k->byte = sizes[i].byte;
        k->want = k->byte ? FA_ERR_UNSUPPORTED : FA_ERR_ARG;
        k->field = k->byte ? own + (k->byte - own) / 8 * 8 : 0;
        snprintf(k->value, sizeof k->value, "struct_size %s", sizes[i].name);
    }
    return n;
}

void *ee_struct_apply(const ee_struct_case *k, const void *s, size_t own, unsigned char *bytes)
{
    memset(bytes, 0, FA_STRUCT_SIZE_MAX);
    memcpy(bytes, s, own);
    memcpy(bytes, &k->size, sizeof k->size);
    if (k->byte) bytes[k->byte] = 0x5A;
    return bytes;
}

/* The names a case's diagnostic must hold: "p.struct_size", or "p" and the field's offset. */
static void struct_names(char *names, size_t size, const char *arg, const ee_struct_case *k)
{
    if (k->byte)
        snprintf(names, size, "%s %zu", arg, k->field);
    else
        snprintf(names, size, "%s.struct_size", arg);
}

void ee_add_struct_cases(ee_table *t)
{
    ee_struct_case cases[16];
    for (int call = 0; call < 2; call++)
        for (int which = 0; which < 2; which++) {
            const size_t own = which ? sizeof(fa_seqs) : sizeof(fa_params);
            const size_t min = which ? FA_SEQS_SIZE_MIN : FA_PARAMS_SIZE_MIN;
            const char *arg = which ? "p.seqs" : "p";
            int n = ee_struct_cases(min, own, cases, 16);
            for (int i = 0; i < n; i++) {
                ee_case *c = ee_add(t, (ee_call)call, which ? "p->seqs->struct_size" : "p->struct_size",
                                    cases[i].value, cases[i].want, EE_OP_STRUCT);
                c->layout = which ? EE_SEQ_PACKED : EE_DENSE;
                c->ti = which;
                c->i[0] = (int64_t)i;
                struct_names(c->names, sizeof c->names, arg, &cases[i]);
            }
        }
}

void ee_apply_struct(const ee_case *c, ee_args *a)
{
    ee_struct_case cases[16];
    const size_t own = c->ti ? sizeof(fa_seqs) : sizeof(fa_params);
    ee_struct_cases(c->ti ? FA_SEQS_SIZE_MIN : FA_PARAMS_SIZE_MIN, own, cases, 16);
    const ee_struct_case *k = &cases[c->i[0]];
    if (c->ti)
        a->p.seqs = ee_struct_apply(k, &a->seqs, own, a->larger.bytes);
    else
        a->pp = ee_struct_apply(k, &a->p, own, a->larger.bytes);
}
