/* SPDX-License-Identifier: BSD-3-Clause */
/* What rank 0 prints: the header (machine, MPI, problem, placement, checks), one line per pass
 * (MPI against the one process), where each rank's time went, the messages alone and the overlap;
 * and the CSV rows. */
#ifndef FA_BENCH_MPI_REPORT_H
#define FA_BENCH_MPI_REPORT_H

#include <stdio.h>

#include "identity.h"
#include "job.h"
#include "measure.h"

/* One rank's figures in the fastest MPI rep of a pass, gathered on rank 0. */
typedef struct {
    double own;               /* the rank's time of the call */
    double seconds[BM_PARTS]; /* profile.h's parts */
    double calls[BM_PARTS];
} bm_rank_figures;

/* One reported pass: its results and every rank's figures. */
typedef struct {
    const bm_pass_result *result;
    const bm_rank_figures *ranks;
} bm_pass_report;

void bm_report(FILE *f, const bm_job *j, const bm_identity *id, const bm_pass_report *passes, int n);

/* Writes the CSV (header and one row per pass); 0, or -1 after a message. */
int bm_report_csv(const char *path, const bm_job *j, const bm_identity *id, const bm_pass_report *passes,
                  int n);

#endif
