/* SPDX-License-Identifier: BSD-3-Clause */
/* Named sets of cases (--preset): the shapes the documentation's figures were measured on, so that
 * a campaign runs the same problems by name. Fields left at -1 follow the usual
 * defaults (Hkv = Hq, Nk = Nq, Dv = D), so an explicit --h or --nq on the command line carries
 * through to them. */
#ifndef FA_BENCH_PRESETS_H
#define FA_BENCH_PRESETS_H

#include <stdio.h>

#include "options.h"

typedef struct {
    const char *name;
    const char *what; /* one line for --help */
    int n_cases;
    bench_case cases[BENCH_MAX_CASES];
} bench_preset;

/* The preset called name, or NULL. */
const bench_preset *bench_preset_find(const char *name);

/* One line per preset ("  name  what"), for --help and for an unknown name. */
void bench_presets_print(FILE *f);

#endif
