/* SPDX-License-Identifier: BSD-3-Clause */
/* The reading rule of the size-tagged public structs (flashattn.h, "ABI"), in one place: every entry
 * point that takes fa_params, fa_seqs, fa_context_opts or fa_stats turns the caller's struct into the
 * library's full copy through these, or refuses it. Depends on the public header and the diagnostic
 * only, so the runtime's entry points (fa_context_create, fa_context_stats) use it too. */
#ifndef FA_PARAMS_H
#define FA_PARAMS_H

#include "flashattn.h"

/* A call's parameters as the library's full copies: p, whose seqs points at `seqs` when the caller
 * gave sequences. It must outlive the problem built from it (fa_problem.seqs points into it). */
typedef struct {
    fa_params p;
    fa_seqs seqs;
} fa_params_copy;

/* Reads p (NULL: every default) and p->seqs into *copy. FA_ERR_ARG for a struct_size out of range,
 * FA_ERR_UNSUPPORTED for a nonzero byte past this library's sizeof, each naming "p" or "p.seqs" under
 * `call`; *copy is then unusable. */
fa_status fa_params_read(const char *call, const fa_params *p, fa_params_copy *copy);

/* The same for fa_context_create's opts (NULL: every default), named "opts". */
fa_status fa_context_opts_read(const char *call, const fa_context_opts *opts, fa_context_opts *copy);

/* Whether fa_context_stats may write *out (not NULL): rules 1 and 3 of the reading rule, naming "out". */
fa_status fa_stats_check(const char *call, const fa_stats *out);

/* Writes the first min(out->struct_size, sizeof *all) bytes of *all into *out (checked by
 * fa_stats_check), keeping out->struct_size. */
void fa_stats_write(fa_stats *out, const fa_stats *all);

#endif
