/* SPDX-License-Identifier: BSD-3-Clause */
/* Machine-readable results: CSV and JSON with the same flat columns, one record per (case, thread
 * count), each record carrying every shape field so that plotting scripts can concatenate runs
 * and tell a preset's shapes apart. */
#ifndef FA_BENCH_EXPORT_H
#define FA_BENCH_EXPORT_H

#include "results.h"

/* Writes a header line and one line per row of every case. Returns 0, or -1 after printing why. */
int bench_export_csv(const char *path, const bench_case_result *cases, int n_cases);

/* Writes a JSON array of objects (numbers that are not finite become null). Returns 0 or -1 likewise. */
int bench_export_json(const char *path, const bench_case_result *cases, int n_cases);

#endif
