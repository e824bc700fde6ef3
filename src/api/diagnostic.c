/* SPDX-License-Identifier: BSD-3-Clause */
/* The thread-local diagnostic (diagnostic.h) and the status strings: what went wrong, in words. Depends
 * on nothing but the public header, so every layer may name a failure through it. */
#include "api/diagnostic.h"

#include <stdarg.h>
#include <stdio.h>

/* Long enough for a call name, two argument names and two int64 values, with room to spare;
 * vsnprintf truncates anything longer. */
static _Thread_local char diag[256];

const char *fa_last_error(void)
{
    return diag;
}

fa_status fa_diag_fail(fa_status st, const char *call, const char *fmt, ...)
{
    int n = snprintf(diag, sizeof diag, "%s: ", call);
    if (n < 0 || (size_t)n >= sizeof diag) return st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(diag + n, sizeof diag - (size_t)n, fmt, ap);
    va_end(ap);
    return st;
}

void fa_diag_clear(void)
{
    diag[0] = '\0';
}

fa_status fa_diag_finish(fa_status st, const char *call)
{
    if (st == FA_OK)
        fa_diag_clear();
    else if (diag[0] == '\0')
        fa_diag_fail(st, call, "%s", fa_status_str(st));
    return st;
}

const char *fa_status_str(fa_status s)
{
    switch (s) {
    case FA_OK: return "success";
    case FA_ERR_NULL: return "a required pointer is NULL";
    case FA_ERR_SHAPE: return "invalid or inconsistent tensor sizes";
    case FA_ERR_STRIDE: return "invalid strides (negative, self-overlapping output, or offset overflow)";
    case FA_ERR_DTYPE: return "unknown or mismatched element types";
    case FA_ERR_ALIAS: return "an output overlaps an input or another output";
    case FA_ERR_ARG: return "invalid scalar or enum argument";
    case FA_ERR_NOMEM: return "out of memory";
    case FA_ERR_UNSUPPORTED: return "not supported by this build";
    case FA_ERR_BUSY: return "context is busy with another call";
    case FA_ERR_RUNTIME: return "threading or topology runtime failure";
    }
    return "unknown status";
}
