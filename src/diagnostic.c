/* SPDX-License-Identifier: BSD-3-Clause */
/* The thread-local diagnostic; see diagnostic.h. */
#include "diagnostic.h"

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
