/* SPDX-License-Identifier: BSD-3-Clause */
/* The thread-local diagnostic behind fa_last_error(): one line per failing call, naming the call,
 * the argument and its values. Every public call that returns an fa_status starts with
 * fa_diag_clear(), says what is wrong with fa_diag_fail() where it finds it, and ends with
 * fa_diag_finish(). */
#ifndef FA_DIAGNOSTIC_H
#define FA_DIAGNOSTIC_H

#include "flashattn.h"

/* Writes "<call>: <formatted text>" and returns st, so a check reads
 *   return fa_diag_fail(FA_ERR_SHAPE, call, "k.dim = %lld but q.dim = %lld", ...); */
__attribute__((format(printf, 3, 4))) fa_status fa_diag_fail(fa_status st, const char *call, const char *fmt,
                                                             ...);

/* The first step of every public call: no earlier call's text survives into this one's. */
void fa_diag_clear(void);

/* The last step of every public call: FA_OK leaves the diagnostic empty; a failure that said
 * nothing more precise (a runtime failure deep inside) gets "<call>: <fa_status_str(st)>". */
fa_status fa_diag_finish(fa_status st, const char *call);

#endif
