/* SPDX-License-Identifier: BSD-3-Clause */
/* fa-bench-mpi's command line: the global problem, the ranks' threads, the measurement. Every rank
 * parses the same argv, so every rank holds the same options. */
#ifndef FA_BENCH_MPI_OPTIONS_H
#define FA_BENCH_MPI_OPTIONS_H

#include <stdint.h>

#include "flashattn_mpi.h"

enum { BM_PASS_FWD = 1, BM_PASS_BWD = 2 }; /* bits of bm_options.passes */

typedef struct {
    int64_t n, b, hq, hkv, d, dv; /* the global problem: N positions, split over the ranks */
    fa_dtype dtype;
    fa_causal causal; /* FA_CAUSAL_NONE or FA_CAUSAL_TOP_LEFT (Nq = Nk: both alignments coincide) */
    fa_mpi_layout layout;
    int passes;      /* BM_PASS_* bits */
    int threads;     /* per rank: each rank's context has this many */
    int ref_threads; /* the one-process reference's; 0: ranks x threads */
    fa_bind bind;    /* every context's policy (see bm_cpusets: AUTO becomes NONE where ranks share CPUs) */
    int bind_given;  /* --bind was on the command line */
    int warmup, reps, rounds;
    uint64_t seed;
    const char *csv; /* NULL: no CSV */
} bm_options;

/* Fills o from argv. Returns 0 to run, 1 after --help (printed by rank 0), -1 after an error
 * (printed by rank 0). */
int bm_options_parse(int argc, char **argv, int rank, bm_options *o);

const char *bm_causal_name(fa_causal c);
const char *bm_layout_name(fa_mpi_layout l);
const char *bm_bind_name(fa_bind b);
const char *bm_dtype_name(fa_dtype t);

#endif
