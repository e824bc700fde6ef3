/* SPDX-License-Identifier: BSD-3-Clause */
/* One case of a run, dense or ragged, start to finish: build its batch (batch.h), and for each thread
 * count create a context, run each of its calls once, verify them against the float64 oracles and the
 * bitwise promises, and only then time them in turn; then the in-run probes for each row, then the BLAS
 * baseline (dense forwards); then print its table (report.h). */
#ifndef FA_BENCH_CASE_H
#define FA_BENCH_CASE_H

#include "identity.h"
#include "machine.h"
#include "options.h"
#include "results.h"

/* Runs o->cases[index] in round `round` (0 .. o->rounds - 1). *r holds the case's rows of the earlier
 * rounds (zeroed in round 0); each row of this round replaces the earlier one when it is faster.
 * reference: the results of the case it is compared with (an earlier case, measured in this round
 * already), or NULL. The header, the probes, the BLAS baseline and the table belong to the last
 * round. Returns 0 with *r filled, or -1 after printing why (a verification or library failure: no
 * speed of this case is reported). */
int bench_run_case(const bench_options *o, int index, int round, const bench_identity *id, bench_machine *m,
                   const bench_case_result *reference, bench_case_result *r);

#endif
