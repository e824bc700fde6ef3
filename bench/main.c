/* SPDX-License-Identifier: BSD-3-Clause */
// fa-bench: parse the command line, apply --isa, run each case (case.h), then write the CSV and
// JSON files with every case's rows.
#include <stdio.h>
#include <stdlib.h>

#include "case.h"
#include "export.h"
#include "huge_pages.h"
#include "identity.h"
#include "isa.h"
#include "machine.h"
#include "options.h"
#include "progress.h"
#include "report.h"
#include "results.h"

int main(int argc, char **argv)
{
    bench_options o;
    switch (bench_parse_options(argc, argv, &o)) {
    case BENCH_PARSE_HELP: return 0;
    case BENCH_PARSE_ERROR: return 2;
    case BENCH_PARSE_RUN: break;
    }
    bench_progress_start();
    bench_identity identity;
    bench_identity_init(&identity);
    if (bench_isa_apply(o.isa) != 0) return 1;
    if (o.huge_pages) bench_huge_pages_ask(); /* before any buffer, the probe's included */

    int max_threads = 1;
    for (int t = 0; t < o.n_thread_counts; t++)
        if (o.thread_counts[t] > max_threads) max_threads = o.thread_counts[t];
    bench_machine machine;
    bench_machine_init(&machine, o.probe_time, max_threads);

    bench_case_result *results = calloc((size_t)o.n_cases, sizeof *results);
    if (!results) {
        fprintf(stderr, "fa-bench: out of memory\n");
        bench_machine_free(&machine);
        return 1;
    }
    // Rounds interleave the cases (1, 2, ..., n, 1, 2, ...) and keep each row's fastest round, so
    // that a neighbour's burst on a shared machine cannot fall on one case of a comparison only.
    int rc = 0, done = 0;
    for (int round = 0; round < o.rounds && rc == 0; round++) {
        done = 0;
        for (int c = 0; c < o.n_cases && rc == 0; c++) {
            if (c > 0 && round == o.rounds - 1) fputc('\n', stdout);
            // A reference is an earlier case (presets.c), already measured in this round: its rows are
            // compared as this case's come in.
            int ref = o.cases[c].reference;
            const bench_case_result *reference = ref >= 0 && ref < c ? &results[ref] : NULL;
            if (bench_run_case(&o, c, round, &identity, &machine, reference, &results[c]) != 0)
                rc = 1;
            else
                done++;
        }
    }
    if (rc == 0) bench_report_summary(stdout, results, done);
    // Files only for a run whose every case passed: a file never mixes verified and missing cases.
    if (rc == 0) {
        if (o.csv_path && bench_export_csv(o.csv_path, results, done) != 0) rc = 1;
        if (o.json_path && bench_export_json(o.json_path, results, done) != 0) rc = 1;
    }
    int rows = 0;
    for (int c = 0; c < done; c++) rows += results[c].n_rows;
    if (done < o.n_cases)
        bench_progress("run stopped at case %d of %d after %.1f s%s", done + 1, o.n_cases,
                       bench_progress_elapsed(), o.csv_path || o.json_path ? ": no CSV or JSON written" : "");
    else
        bench_progress("run %s: %d case%s, %d row%s in %.1f s",
                       rc == 0 ? "done" : "done, results file failed", done, done == 1 ? "" : "s", rows,
                       rows == 1 ? "" : "s", bench_progress_elapsed());
    free(results);
    bench_machine_free(&machine);
    return rc;
}
