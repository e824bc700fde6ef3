/* SPDX-License-Identifier: BSD-3-Clause */
/* One measured row per thread count, what is the same for every row of a case, and a case's
 * results. The terminal table (report.h) and the CSV/JSON files (export.h) are both written from
 * these, so a column is added here once and printed by both. */
#ifndef FA_BENCH_RESULTS_H
#define FA_BENCH_RESULTS_H

#include <stdint.h>

#include "flashattn.h"
#include "identity.h"
#include "options.h"
#include "timing.h"

/* A row was disturbed (other processes, or its own surplus threads, took its cores for part of the
 * run) when one of its timings has a median over this many times its min, or an in-run probe a median
 * timing over this many times its best: the report says so in words, since its speedups and ratios
 * are then not reliable. */
#define BENCH_DISTURBED_RATIO 1.10

/* Query lengths up to this are decode-shaped: K and V are read once per call for a few queries,
 * so memory bandwidth, not the FMA peak, bounds the speed and the table reports % of it. */
#define BENCH_DECODE_MAX_NQ 16

/* What a ragged case (--varlen, --decode-batch; shape.ragged) adds to its run: the lengths drawn
 * (varlen: tokens of each prompt; decode: keys in use of each cache) and what was built on them. */
typedef struct {
    int64_t total, min, max; /* of the lengths */
    double mean;
    int64_t l_eq;                     /* varlen: the length of the equal-work dense batch (lengths.h) */
    double equal_flops;               /* varlen: FLOP of one call of that batch */
    int64_t capacity;                 /* decode: keys per sequence of the contiguous cache (the longest) */
    int64_t num_pages, pages_per_seq; /* decode with pages: the pool, the block table's row */
} bench_ragged_info;

typedef struct {
    const bench_options *opt;
    const char *version; /* fa_version() of the library actually linked */
    int case_index;      /* position in opt->cases, from 0 */
    bench_shape shape;
    bench_pass pass;
    double flops;             /* FLOP of one timed call of pass, by the formulas in --help */
    int64_t visible_pairs;    /* (i, j) pairs of one (batch, head) the causal mask and window let through */
    double bias_bytes;        /* bias bytes one call must read (modifiers.h); 0 without a bias */
    int bias_bandwidth;       /* a full bias: rows report bias_bytes against the read-bandwidth probe */
    int reference;            /* the case this one is compared with (bench_case.reference), or -1 */
    double kv_bytes;          /* bytes of K and V one call must read: B*Hkv*Nk*(D+Dv)*sizeof(kv_dtype), plus
                                 4 per row of a quantized cache's scales; with shared_kv K's rows only */
    int decode;               /* Nq <= BENCH_DECODE_MAX_NQ: rows report % of the read-bandwidth probe */
    double tolerance;         /* normwise verification bound of out (of the q group's dtype) */
    double lse_tolerance;     /* of lse (f64 or f32: the accumulation type's) */
    double grad_tolerance;    /* normwise bound of dq; NAN for --pass fwd */
    double grad_kv_tolerance; /* of dk and dv (the kv group's dtype); NAN for --pass fwd */
    double grad_oracle_s;     /* seconds the gradient oracle took (all its runs); NAN for --pass fwd */
    int grad_oracle_runs;     /* 1, or (half q: from each different out handed) more; 0 for --pass fwd */
    int omp_max_threads;
    const char *blas; /* the BLAS baseline's library and core ("OpenBLAS 0.3.21 (core Haswell)"), or why
                         there is none ("not built (CMake found no OpenBLAS)") */
    int blas_runs;    /* 1: the baseline is built, asked for, and this case is a forward */
    const char *blas_warning;       /* why the baseline's figures may mislead (OpenBLAS runs kernels older
                                 than the CPU, blas_baseline.h), or "" */
    const bench_identity *identity; /* the machine and the build, the same for every case of a run */
    bench_ragged_info ragged;       /* shape.ragged.kind != NONE only; flops, visible_pairs (summed over
                                       the sequences) and kv_bytes (keys in use) are the packed or paged
                                       call's there */
} bench_run_info;

/* What a ragged row adds: the calls it is compared with, timed in the same rounds at the same thread
 * count on the same context (the row's own timing is the packed call, or the paged one; the contiguous
 * one when there are no pages). Each keeps its fastest round, as the row does. NAN: not measured. */
typedef struct {
    bench_timing equal, loop;      /* varlen: one dense call over equal lengths; one call per sequence */
    double equal_gflops;           /* equal_flops / equal.min_s / 1e9 */
    double loop_gflops;            /* flops / loop.min_s / 1e9: the packed call's work */
    double vs_equal, vs_loop;      /* gflops / equal_gflops, gflops / loop_gflops */
    bench_timing contiguous;       /* decode with pages: the contiguous cache */
    double contiguous_kv_gbps;     /* kv_bytes / contiguous.min_s / 1e9 */
    double contiguous_pct_read_bw; /* 100 * contiguous_kv_gbps / read_gbps */
    double paged_over_contiguous;  /* timing.min_s / contiguous.min_s */
    int64_t seqs_bitwise;          /* varlen: sequences whose loop rows were bitwise the packed ones */
    int64_t seqs_other_blocks;     /* varlen: compared within the tolerance, other block sizes */
    int64_t seqs_may_split;        /* varlen: compared within the tolerance, their dense call may split */
    double err_loop;               /* the worst normwise difference of those; 0 when there are none */
    double page_read_gbps;         /* decode with pages: the page probe, the paged call's bytes where
                                      they lie, in its order (decode_batch.h) */
    double pct_page_read_bw;       /* 100 * kv_gbps / page_read_gbps */
} bench_ragged_row;

typedef struct {
    int threads;
    fa_stats stats; /* read after the timed calls: resolved bind, bound threads, blocks, scratch */
    char isa[32];   /* stats.isa copied: the string belongs to the context, destroyed after the row */
    char plan[16];  /* stats.backward_plan copied ("fused", "wavefront", "split"); "-" for --pass fwd */
    bench_timing timing;
    double gflops;     /* flops / timing.min_s / 1e9 */
    double speedup;    /* 1-thread min / this min; NAN when the case has no 1-thread row */
    double efficiency; /* speedup / threads; NAN likewise */
    int64_t rows_checked;
    double err_out, err_lse;
    int64_t rows_checked_dq, rows_checked_dkdv; /* 0 for --pass fwd */
    double err_dq, err_dk, err_dv;              /* NAN for --pass fwd */
    double err_dsinks;     /* normwise error of dsinks; NAN without sinks or for --pass fwd */
    int bitwise_identical; /* 1: out, lse (and dq, dk, dv) equal, byte for byte, to the case's first
                              verified outputs across all timed repetitions; -1: not compared (block
                              sizes differed) */
    /* In-run probes (machine.h) at this thread count; NAN where not measured. */
    char peak_isa[16];   /* the FMA probe matching isa: "avx512", "avx2" or "portable" */
    double peak_gflops;  /* FMA peak probe for peak_isa and the case's accumulation type (f32 for half) */
    double pct_peak;     /* 100 * gflops / peak_gflops */
    double read_gbps;    /* read-bandwidth probe, GB/s (1e9 bytes); decode cases only */
    double kv_gbps;      /* kv_bytes / timing.min_s / 1e9; decode cases only */
    double pct_read_bw;  /* 100 * kv_gbps / read_gbps */
    double bias_gbps;    /* bias_bytes / timing.min_s / 1e9; full-bias cases only */
    double pct_bias_bw;  /* 100 * bias_gbps / read_gbps */
    double probe_spread; /* the probes' median timing / their best (the larger of the two where both ran) */
    /* The reference case's row at the same thread count, measured earlier in the same run. */
    double reference_gflops; /* its GFLOP/s; NAN without a reference */
    double pct_of_reference; /* 100 * gflops / reference_gflops */
    /* The same share within each round, this round's call against the reference's of the same round:
     * its lowest and highest over the rounds (NAN without a reference). Where they span more than a
     * target's margin, the machine's load, not the code, decides the kept ratio. */
    double pct_of_reference_lo, pct_of_reference_hi;
    double round_gflops; /* flops over this round's min time (the row keeps its fastest round's) */
    /* The unfused BLAS baseline (blas_baseline.h) at this thread count; NAN where it did not run. */
    bench_blas_mode blas_mode; /* the mode reported (the faster with --blas-mode best); BEST: none */
    double blas_mode_min_s[3]; /* min time of each mode timed, by bench_blas_mode; NAN: not timed */
    bench_timing blas_timing;  /* of blas_mode */
    double blas_gflops;        /* flops / blas_timing.min_s / 1e9 */
    double speedup_vs_blas;    /* blas_timing.min_s / timing.min_s */
    double blas_err;           /* normwise difference of its out from the library's */
    bench_ragged_row ragged;   /* ragged cases only; NAN elsewhere */
    /* With --dropout: the same call without dropout, timed after the row's (NAN without) */
    bench_timing plain_timing;
} bench_row;

/* Everything measured for one case. */
typedef struct {
    bench_run_info info;
    bench_row rows[BENCH_MAX_THREAD_COUNTS];
    int n_rows; /* rows measured; the options' thread-count list once the case succeeded */
} bench_case_result;

/* Fills speedup and efficiency from the first 1-thread row of rows[0..n), wherever it is. */
void bench_rows_compute_scaling(bench_row *rows, int n);

/* Sets every probe, baseline, compared-call and gradient-error field of a row to "not measured". */
void bench_row_clear_extras(bench_row *row);

/* Whether the row was disturbed (BENCH_DISTURBED_RATIO). *median_over_min: the largest median / min
 * of its timings (its own calls' and those it is compared with), *which: "" for its own calls, else
 * the words naming the others ("the BLAS baseline"); *probe_spread: its probes' (row.probe_spread).
 * Either figure is NAN where nothing was measured. */
int bench_row_disturbed(const bench_row *row, double *median_over_min, const char **which,
                        double *probe_spread);

#endif
