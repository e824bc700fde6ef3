/* SPDX-License-Identifier: BSD-3-Clause */
/* fa-bench command line: what one run measures, and the names of its enum values.
 * A run is a list of cases (shape and pass), one from the shape options or several from a preset
 * (presets.h); everything else applies to every case. */
#ifndef FA_BENCH_OPTIONS_H
#define FA_BENCH_OPTIONS_H

#include <stdint.h>

#include "flashattn.h"

/* More thread counts than any sweep needs; a fixed array keeps the options a plain value. */
#define BENCH_MAX_THREAD_COUNTS 64
/* More cases than any preset has. */
#define BENCH_MAX_CASES 16

typedef enum { BENCH_LAYOUT_BHSD = 0, BENCH_LAYOUT_BSHD = 1 } bench_layout;
/* Input distributions: N(0,1), U(-1,1), and U(-10,10) (peaky: scores large enough that most
 * probabilities are subnormal or zero in f32). */
typedef enum { BENCH_DIST_NORMAL = 0, BENCH_DIST_UNIFORM = 1, BENCH_DIST_PEAKY = 2 } bench_dist;

/* What one timed call is: fa_forward, fa_backward (its out and lse computed once beforehand), or
 * fa_forward followed by fa_backward. */
typedef enum { BENCH_PASS_FWD = 0, BENCH_PASS_BWD = 1, BENCH_PASS_FWDBWD = 2 } bench_pass;

/* The bias a case adds to its scores (fa_params.bias). KEYPAD: [B][1][1][Nk], 0 for the first keys
 * and -inf for the last tenth (rounded up), a key-padding mask broadcast over heads and rows; FULL:
 * [B][Hq][Nq][Nk], drawn like the inputs, every element read once per call. */
typedef enum { BENCH_BIAS_NONE = 0, BENCH_BIAS_KEYPAD = 1, BENCH_BIAS_FULL = 2 } bench_bias_kind;

/* The score modifiers of a case, with fa_params' meanings; all off is -1, -1, 0, 0, NONE, 0. */
typedef struct {
    int64_t window_left, window_right; /* -1: unbounded */
    double softcap;                    /* 0: off */
    int alibi;                         /* 1: slopes 2^(-8(h+1)/Hq), ALiBi's (BLOOM's) geometric sequence */
    bench_bias_kind bias;
    int sinks; /* 1: one sink logit per query head, drawn like the inputs; with a backward, dsinks too */
    int dbias; /* 1: a backward also asks for the bias's gradient (fa_params.dbias); needs a bias */
} bench_mods;

/* A batch of sequences of different lengths (fa_params.seqs): none (a dense batch), packed prompts
 * (--varlen) or one decode step over per-sequence KV caches (--decode-batch). */
typedef enum { BENCH_RAGGED_NONE = 0, BENCH_RAGGED_VARLEN = 1, BENCH_RAGGED_DECODE = 2 } bench_ragged_kind;

/* count sequences whose lengths (varlen: tokens; decode: keys in the cache) are drawn uniformly from
 * lo..hi on a stream of the run's seed (lengths.h); page_size: decode's paged cache, tokens per
 * page, 0 = the contiguous cache only; inline_scales: decode over a quantized cache, each row's
 * scale stored right after its codes in the cache's own memory (--kv-scales inline). */
typedef struct {
    bench_ragged_kind kind;
    int64_t count, lo, hi;
    int64_t page_size;
    int inline_scales;
} bench_ragged;

/* The problem, independent of how it is run. A ragged case keeps b = count, Nq = Nk = hi (varlen)
 * or Nq = 1, Nk = hi (decode) here: bounds, the lengths themselves are drawn when it runs. */
typedef struct {
    int64_t b, hq, hkv, nq, nk, d, dv;
    fa_dtype dtype;    /* q, out, dout, dq */
    fa_dtype kv_dtype; /* k, v, dk, dv: dtype, or under f32 queries bf16/f16, or i8/f8e4m3/f8e5m2 with
                          per-row scales (--kv-dtype; dtypes.h, tests/kit/dtype.h) */
    fa_causal causal;
    bench_layout layout;
    bench_mods mods;
    bench_ragged ragged;
    int shared_kv; /* 1: v is a view of the first Dv dims of k's rows (same data and strides; DeepSeek's
                      MLA latent cache, --shared-kv); a quantized v then shares k's scales too */
} bench_shape;

/* How the BLAS baseline (blas_baseline.h) is threaded; BEST times both and keeps the faster. */
typedef enum { BENCH_BLAS_BEST = 0, BENCH_BLAS_ROW_BLOCKS = 1, BENCH_BLAS_GEMM_THREADS = 2 } bench_blas_mode;

/* One table of the report: a shape and the pass timed on it. A preset may name an earlier case as the
 * reference of this one (the same problem without a modifier): the run then reports this case's
 * GFLOP/s as a share of the reference's at each thread count, both measured in the same run. */
typedef struct {
    bench_shape shape;
    bench_pass pass;
    int reference; /* index of the reference case in the run, or -1 */
} bench_case;

typedef struct {
    const char *preset; /* NULL: one case from the shape options */
    bench_case cases[BENCH_MAX_CASES];
    int n_cases;
    bench_dist dist;
    uint64_t seed;
    int thread_counts[BENCH_MAX_THREAD_COUNTS];
    int n_thread_counts;
    fa_bind bind;
    const char *isa; /* FLASHATTN_ISA for the contexts fa-bench creates; "auto" unsets it; NULL leaves it */
    int block_q, block_k; /* 0 = the library chooses */
    int warmup, reps;     /* reps is a minimum: min_time may add more */
    double min_time;      /* seconds of timed calls to reach at least; 0 = exactly reps */
    int rounds;           /* times the whole list of cases is run, interleaved; each row keeps its fastest */
    int64_t check_rows;
    double probe_time; /* seconds per thread count of each in-run probe (peak.h, stream.h); 0 = none */
    int huge_pages;    /* --huge-pages: large buffers in transparent huge pages (huge_pages.h) */
    int blas_reps;     /* timed calls of the BLAS baseline; 0 (the default) = no baseline */
    bench_blas_mode blas_mode;
    const char *csv_path, *json_path; /* NULL = not written */
    /* --dropout P: dense cases time fa_params.dropout_p = P, verified as the call without dropout is
     * (the oracle) plus bitwise across thread counts, and time that call too for the ratio; 0 = off */
    double dropout;
} bench_options;

/* What bench_parse_options decided; main turns it into the exit status. */
typedef enum {
    BENCH_PARSE_RUN = 0,  /* *o is complete and valid */
    BENCH_PARSE_HELP = 1, /* --help was printed to stdout: exit 0 */
    BENCH_PARSE_ERROR = 2 /* a message went to stderr: exit 2 */
} bench_parse_result;

bench_parse_result bench_parse_options(int argc, char **argv, bench_options *o);

const char *bench_dtype_name(fa_dtype t);
const char *bench_causal_name(fa_causal c);
const char *bench_layout_name(bench_layout l);
const char *bench_bind_name(fa_bind b);
const char *bench_dist_name(bench_dist d);
const char *bench_pass_name(bench_pass p);
const char *bench_blas_mode_name(bench_blas_mode m);
const char *bench_bias_name(bench_bias_kind k);
const char *bench_ragged_name(bench_ragged_kind k); /* "", "varlen", "decode" */

#endif
