/* SPDX-License-Identifier: BSD-3-Clause */
/* A ragged case (--varlen, --decode-batch) from start to finish, as case.h runs a dense one: build the
 * batch, and for each thread count create one context, run each of the case's calls once, check
 * them (the float64 oracle, the bitwise promises of fa_seqs), then time them in turn with the same
 * timing as every case; then the probes and the table (ragged_report.h). */
#ifndef FA_BENCH_RAGGED_CASE_H
#define FA_BENCH_RAGGED_CASE_H

#include "identity.h"
#include "machine.h"
#include "options.h"
#include "results.h"

/* bench_run_case (case.h) for a case whose shape.ragged.kind is not NONE. */
int bench_run_ragged_case(const bench_options *o, int index, int round, const bench_identity *id,
                          bench_machine *m, bench_case_result *r);

#endif
