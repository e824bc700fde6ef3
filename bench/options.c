/* SPDX-License-Identifier: BSD-3-Clause */
// fa-bench command line parsing (getopt_long) and the --help text.
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtypes.h"
#include "presets.h"
#include "timing.h" // BENCH_MAX_SAMPLES bounds --reps

// Head dims the library accepts (flashattn.h); checked here so a typo gets a CLI message, not a status.
#define BENCH_MAX_DIM FA_MAX_HEAD_DIM

static const char help_intro[] =
    "usage: fa-bench [options]\n"
    "\n"
    "Times flashattn on one shape, or on each shape of a preset, for one or more thread counts: the\n"
    "forward pass, the backward pass, or both (--pass). Before timing, each thread count's outputs are\n"
    "checked against a float64 oracle on a sample of rows, and every later output must be bitwise\n"
    "identical to the first (the library's determinism contract). In the same run it measures the\n"
    "machine (an FMA peak probe, and a read-bandwidth probe for decode shapes) and, when built with\n"
    "OpenBLAS and asked to (--blas-reps), times an unfused BLAS attention on the same inputs.\n"
    "Progress lines (case, thread count, seconds since the start) go to stderr; stdout has the\n"
    "tables, and --csv/--json files one row per (case, thread count), each naming the machine and\n"
    "the build (see 'Rows' below), so rows from many nodes and builds can be concatenated.\n"
    "\n"
    "presets (--preset NAME; one table per shape, the CSV/JSON rows carry the shape):\n";

// After the preset list (bench_presets_print); printf format.
static const char help_text[] =
    "  Shape options given with a preset replace that field in every shape of it (e.g. --preset\n"
    "  prefill --nq 1024 for a quick run, --preset scaling --pass fwdbwd); Nk, Hkv and Dv still follow\n"
    "  Nq, Hq and D unless the preset or the command line sets them.\n"
    "\n"
    "what is timed:\n"
    "  --pass P           fwd | bwd | fwdbwd (default fwd). fwd: one fa_forward per call. bwd: one\n"
    "                     fa_backward per call; its out and lse come from one fa_forward on the same\n"
    "                     context before timing, dout is drawn like the inputs (stream of its own).\n"
    "                     fwdbwd: fa_forward followed by fa_backward per call\n"
    "\n"
    "shape:\n"
    "  --b B              batch size (default 1)\n"
    "  --h Hq             query heads (default 8)\n"
    "  --hkv Hkv          key/value heads, Hq %% Hkv == 0 (default Hq)\n"
    "  --nq Nq            query length (default 1024)\n"
    "  --nk Nk            key length (default Nq)\n"
    "  --d D              query/key head dim, 1..%d (default 64)\n"
    "  --dv Dv            value head dim, 1..%d (default D)\n"
    "  --dtype T          f32 | f64 | bf16 | f16: q, out and, with a backward, dout and dq; also k, v, dk\n"
    "                     and dv unless --kv-dtype says otherwise (default f32). bf16 and f16 compute in\n"
    "                     f32 (lse is a float) and round each output once; their inputs are the f32\n"
    "                     run's values of the same seed, rounded to nearest even\n"
    "  --kv-dtype T       bf16 | f16 | i8 | f8e4m3 | f8e5m2 (or f32 | f64, the same as --dtype): k, v, dk\n"
    "                     and dv, with --dtype f32 (a KV cache under f32 queries, outputs and dq).\n"
    "                     Default: --dtype. FLOP and %% peak are counted as for f32; KV bytes (decode\n"
    "                     shapes) count the type's 2 or 1 bytes per element. i8, f8e4m3 and f8e5m2\n"
    "                     are quantized caches, forward only (not --varlen): k and v each with f32\n"
    "                     scales per token and head ([B][Hkv][Nk][1] memory, as serving stacks keep\n"
    "                     them; paged: [pages][Hkv][P][1] through the same block_table), made from\n"
    "                     the f32 run's values of the seed: scale = the row's max|x| / the largest\n"
    "                     code (127, 448, 57344), code = x/scale rounded to nearest (even), FP8\n"
    "                     saturating. The oracle reads scale * code, as the library does; KV bytes add\n"
    "                     the scales' 4 bytes per row\n"
    "  --kv-scales L      separate | inline: where --decode-batch's quantized caches keep their scales:\n"
    "                     arrays of their own (default), or each right after its row's codes in the\n"
    "                     cache's memory (rows padded to 4 bytes; the scale views alias the caches),\n"
    "                     one place a key and head instead of two\n"
    "  --shared-kv        v is a view of the first Dv dims of k's memory (same data pointer and\n"
    "                     strides; Dv <= D): one latent cache, as DeepSeek's MLA keeps it (preset mla).\n"
    "                     A quantized v shares k's scales; KV bytes count k's rows once. Dense\n"
    "                     shapes only\n"
    "  --causal C         none | top-left | bottom-right (default none)\n"
    "  --layout L         bhsd | bshd: memory order of q, k, v, out and their gradients (default bhsd)\n"
    "  --dist X           normal | uniform | peaky: q, k, v and dout drawn from N(0,1), U(-1,1) or\n"
    "                     U(-10,10) (default normal). peaky's scores have a standard deviation of\n"
    "                     100/3 after the 1/sqrt(D) scale, at any D (normal's: 1), so softmax rows are\n"
    "                     nearly one-hot and many probabilities fall below FLT_MIN, into the subnormal\n"
    "                     range some CPUs compute slowly; compare its time with normal's\n"
    "  --seed S           input seed (default 1); values depend on (b, h, s, d), not on the layout\n"
    "\n"
    "score modifiers (fa_params; flashattn.h, 'Score modifiers'; off by default, each a column of the "
    "rows):\n"
    "  --window-left N    keys before the diagonal a row sees, -1 = unbounded (default -1)\n"
    "  --window-right N   keys after the diagonal a row sees, -1 = unbounded (default -1)\n"
    "  --window L,R       both at once, e.g. --window 256,0 (with --causal top-left: a sliding window)\n"
    "  --softcap C        s = C*tanh(s/C) after the scale (Gemma 2: 50); 0 = off (default)\n"
    "  --alibi            ALiBi: s -= slope_h*|i + d0 - j|, slope_h = 2^(-8(h+1)/Hq) (BLOOM's slopes)\n"
    "  --bias KIND        none | keypad | full (default none). keypad: a [B][1][1][Nk] bias, 0 for the\n"
    "                     first keys and -inf for the last tenth (rounded up), like a key-padding mask;\n"
    "                     full: a [B][Hq][Nq][Nk] bias drawn like the inputs (N(0,1) for normal), its\n"
    "                     own stream of the seed. A full bias's bytes are read once per call: its rows\n"
    "                     report them against the read-bandwidth probe (bias GB/s, %% bw)\n"
    "  --sinks            one attention-sink logit per query head, drawn like the inputs; bwd and\n"
    "                     fwdbwd also ask for dsinks (fa_params.dsinks) and check it\n"
    "  --dbias            bwd and fwdbwd also ask for the bias's gradient (fa_params.dbias, the bias's\n"
    "                     shape; needs --bias). Timed, not checked here: its check against the\n"
    "                     float64 oracle is tests/test_bias_gradient.c's (compare with the same case\n"
    "                     without it: preset bias-grad)\n"
    "  --dropout P        time dense cases with fa_params.dropout_p = P (0 <= P < 1; 0 = off): the call\n"
    "                     without dropout is checked against the oracle, the dropout call bitwise\n"
    "                     across thread counts; both are timed, and 'dropout P: ... ratio' lines give\n"
    "                     with/without per thread count (same run, same context)\n"
    "  Modifiers given with a preset apply to every case of it. The oracle computes every modifier\n"
    "  from the header's definition (tests/kit/reference.c), so the check before timing covers them.\n"
    "  The BLAS baseline does not run for cases with a modifier, nor for bf16 or f16.\n"
    "\n"
    "ragged batches (fa_params.seqs; flashattn.h, fa_seqs; forward only, no --bias):\n"
    "  --varlen N:LO-HI   N packed prompts whose lengths are drawn uniformly from LO..HI (N:L: all L)\n"
    "                     with --seed; q, k, v and out are [total][H][D] memory (--layout bhsd:\n"
    "                     [H][total][D]), cu_seqlens_q = cu_seqlens_k. Each thread count (and round)\n"
    "                     times, in turn, on one context: (a) the packed call; (b) one dense call of\n"
    "                     B = N sequences of one length L_eq with the same work: the L whose N*V(L)\n"
    "                     is nearest the sum of V(L_b), V(L) the visible pairs of one head of L\n"
    "                     tokens (L(L+1)/2 causal, L^2 without a mask, so about sqrt(mean L_b^2));\n"
    "                     (c) one dense fa_forward per sequence, on views of (a)'s buffers. GFLOP/s\n"
    "                     count each call's visible pairs (for a and c the real tokens', causal-\n"
    "                     aware); the rows give a/b and a/c, and the issue's targets follow the table\n"
    "                     (a/b >= 0.90; a/c >= 1.5 at 2 threads)\n"
    "  --decode-batch N:LO-HI\n"
    "                     one decode step (Nq = 1) of N sequences whose caches hold LO..HI keys\n"
    "                     (drawn with --seed): a contiguous cache [N][cap][Hkv][D] (cap = the\n"
    "                     longest; bhsd: [N][Hkv][cap][D]) with seqused_k = those lengths and, with\n"
    "                     --page-size, a pool [pages][P][Hkv][D] of the same keys whose pages are\n"
    "                     handed out in a shuffled order (block_table), timed in turn. KV GB/s =\n"
    "                     the K and V bytes of the keys the queries see (all keys in use without a\n"
    "                     window), sum_b used_b*Hkv*(D+Dv)*sizeof(kv-dtype), / min time; %% bw = that /\n"
    "                     the read-bandwidth probe; p/c = paged / contiguous min time. Targets after\n"
    "                     the table: paged (contiguous without pages) >= 60%% of the probe, p/c <= 1.10\n"
    "  --page-size P      keys per page of --decode-batch's pool; 0 = the contiguous cache only\n"
    "                     (default 0)\n"
    "  With either, the layout is bshd unless --layout says otherwise, and --b, --nq and --nk do\n"
    "  not apply. Checks before timing, each failure exits 1: the packed (contiguous) rows against\n"
    "  the float64 oracle run on each sequence alone, as are (c)'s; (c)'s rows bitwise equal to\n"
    "  (a)'s for each sequence whose dense call took (a)'s block sizes and cannot split its keys,\n"
    "  the others within the tolerance below (a context picks a call's blocks from its shape: a\n"
    "  short sequence alone may get smaller query blocks; a dense call with fewer than 128 query\n"
    "  items and >= 4*block_k keys may split them; a bf16 or f16 out is rounded once on each side,\n"
    "  so its bound there is f32's + 2u); the paged out and lse bitwise equal to the contiguous\n"
    "  ones; no NaN left in any output (keys beyond seqused_k and unused page rows are NaN, so a\n"
    "  read of them shows; a quantized cache's unused rows have NaN scales). --dtype and --kv-dtype\n"
    "  apply as to dense shapes: --decode-batch --kv-dtype bf16 is a bf16 paged KV cache under f32\n"
    "  queries, KV bytes 2 per element; --kv-dtype i8 an int8 one with a pool of its scales read\n"
    "  through the same block_table, KV bytes 1 per element and 4 per row. The oracle reads the\n"
    "  quantized caches as scale * code. Preset decode-kv sweeps every cache type and page size.\n"
    "\n"
    "execution:\n"
    "  --threads LIST     comma-separated thread counts, e.g. 1,2,4 (default: 1 and omp_get_max_threads())\n"
    "  --bind P           auto | none | core | spread (default auto)\n"
    "  --isa I            ref | avx2 | avx512 | avx512_bf16 | amx | auto: kernel table of every context "
    "(sets\n"
    "                     FLASHATTN_ISA before fa_context_create; auto unsets it). A table this build or CPU "
    "lacks\n"
    "                     is refused by the library (FA_ERR_UNSUPPORTED) and fa-bench exits 1.\n"
    "                     Default: FLASHATTN_ISA as the environment has it, else the library's choice\n"
    "  --block-q N        query rows per work item (default: the library chooses)\n"
    "  --block-k N        keys per tile (default: the library chooses)\n"
    "\n"
    "measurement:\n"
    "  --warmup W         untimed calls before timing (default 1)\n"
    "  --reps R           timed calls (default 5)\n"
    "  --min-time S       keep timing past R calls until S seconds of calls are timed (default 0)\n"
    "  --rounds N         run the whole list of cases N times, interleaved (1, 2, ..., 1, 2, ...), and\n"
    "                     report each (case, thread count) from its fastest round (default 1). Every\n"
    "                     round verifies before it times; probes and the BLAS baseline run in the last.\n"
    "                     On a shared machine a neighbour's burst then cannot land on one side of a\n"
    "                     comparison only (the %% ref of the window and modifiers presets); the closing\n"
    "                     lines also give each %% ref's range within one round, how far the load moves it\n"
    "  --probe-time S     seconds per thread count of each in-run probe (default 0.2; 0 = no probes)\n"
    "  --huge-pages       buffers of 2 MiB and more (caches, pools, the read probe's array) on 2 MiB\n"
    "                     boundaries with madvise(MADV_HUGEPAGE): transparent huge pages where the\n"
    "                     kernel's mode (printed) allows; default: the allocator's pages\n"
    "  --blas-reps R      timed calls of the BLAS baseline, per mode (default 0: no baseline; it\n"
    "                     takes far longer than the library's own rows, 1 to 3 is enough for its min)\n"
    "  --blas-mode M      best | row-blocks | gemm-threads: how the baseline is threaded (default best:\n"
    "                     both, the faster is reported; see below)\n"
    "  --check-rows N     rows checked against the oracle, spread over (b, h, i), first and last\n"
    "                     included (default 64); bwd and fwdbwd check as many rows of dq, spread over\n"
    "                     (b, h, i), and of dk and dv, spread over (b, kv head, j)\n"
    "  --csv FILE         write one row per (shape, thread count) (overwrites FILE)\n"
    "  --json FILE        write a JSON array with one object per (shape, thread count) (overwrites FILE)\n"
    "  -h, --help         this text\n"
    "\n"
    "Speed: GFLOP/s = FLOP / min time, with forward FLOP = 2*B*Hq*V*(D+Dv), where V is the exact\n"
    "number of (query i, key j) pairs of one head visible under the causal mask and the window (the\n"
    "header's definition, summed row by row): Nq*Nk without either (4*B*H*N^2*D when Dv = D and\n"
    "Nk = Nq), N(N+1)/2 for a square causal mask, about (W+1)*N for a causal window of W keys. Keys a\n"
    "bias masks with -inf count: the library computes their scores. Backward FLOP = 2.5 x\n"
    "forward (it recomputes Q*K^T and adds four products: dO*V^T, P^T*dO, dS*K, dS^T*Q), so fwdbwd\n"
    "FLOP = 3.5 x forward and its GFLOP/s is the combined throughput of the pair. Speedup and\n"
    "efficiency are against the 1-thread row of the same run, when the list has one. Backward rows\n"
    "name the plan the library took (fa_stats.backward_plan: fused, wavefront or split; README,\n"
    "Performance): it follows the thread count and changes the speed, never the bytes.\n"
    "\n"
    "In-run probes and the columns they add:\n"
    "  %% peak     GFLOP/s / the FMA peak probe at the same thread count, for the kernel table in use\n"
    "             (avx512: AVX-512F, avx2: AVX2+FMA, ref: portable 16-byte vectors) and the dtype. The\n"
    "             probe runs a register-resident loop of 16 (AVX-512) or 12 independent FMA chains\n"
    "             (multiply then add for the portable one)\n"
    "             on every thread (OpenMP, pinned like the library's threads were): the best of\n"
    "             2 ms timings of the whole team over --probe-time seconds.\n"
    "  KV GB/s,   decode shapes only (Nq <= 16): bytes of K and V one call must read,\n"
    "  %% bw       B*Hkv*Nk*(D+Dv)*sizeof(kv-dtype), / min time, and that / the read-bandwidth probe at\n"
    "             the same thread count: every thread sums its own slice of an array of 4x the L3\n"
    "             (at least 128 MiB) with vector loads, in address order and as 8 runs read side by\n"
    "             side (more misses in flight): the best pass of either over --probe-time seconds.\n"
    "  page GB/s, --decode-batch with --page-size: the page probe reads the paged call's own bytes\n"
    "  %% page     where they lie, each sequence's pages in block-table order (K's rows, V's, their\n"
    "             scales), a team's share each thread: a page at a time, and 8 or 32 at once (a\n"
    "             64-byte line of each in turn), the fastest; %% page: the paged KV GB/s / that.\n"
    "  BLAS GF/s, an unfused attention: for a block of query rows of one (b, h), S = scale*Q*K^T\n"
    "  x BLAS,    (cblas_?gemm into a rows x Nk buffer, full width even when causal), a row softmax\n"
    "  blas       with the causal mask (expf), O = P*V (gemm); forward pass only. Two threadings:\n"
    "             gemm  (gemm-threads) all Nq rows of a head per block, OpenBLAS threads each gemm\n"
    "                   (openblas_set_num_threads(threads)), OpenMP threads the softmax rows;\n"
    "             rows  (row-blocks) 128-row blocks of every head over an OpenMP team, one-thread\n"
    "                   gemms. gemm-threads hands the cores from one thread pool to the other at\n"
    "                   each phase, and each pool spins after its phase (OMP_WAIT_POLICY=passive\n"
    "                   stops OpenMP's spin, for the library too).\n"
    "             Each mode's output must match the library's (normwise, the tolerance below) before\n"
    "             it is timed. 'x BLAS' = the faster mode's min time / flashattn's min time; 'blas'\n"
    "             names that mode. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, when set, make OpenBLAS\n"
    "             pick other kernels and blockings; fa-bench leaves the environment alone and prints\n"
    "             them in the header. Unset both for a benchmark, unless fa-bench warns that OpenBLAS\n"
    "             runs a core older than the CPU (some versions call a Sapphire Rapids Xeon\n"
    "             'Prescott' and run SSE3 kernels, which inflates 'x BLAS' about 1.8x): then set the\n"
    "             core the warning names for that command,\n"
    "               OPENBLAS_CORETYPE=SkylakeX fa-bench ...   (AVX-512 CPUs; Haswell for AVX2)\n"
    "             The warning is also in the rows' blas_warning column.\n"
    "\n"
    "Verification: normwise relative error max|x - ref| / max|ref| over the checked rows of out, and\n"
    "max|lse - ref| / max(1, max|ref|) for lse; it must be <= 1e-12 for f64 and <= 1e-4 for f32.\n"
    "A bf16 or f16 output is computed in f32 and rounded once to nearest, which moves it by at most\n"
    "u*max|ref| (u = 2^-8 for bf16, 2^-11 for f16): its bound is f32's plus u (lse stays a float,\n"
    "bound 1e-4). The oracle reads the rounded inputs the library read (as f32 copies), so the\n"
    "inputs' rounding is no part of the error.\n"
    "bwd and fwdbwd also check out and lse, then dq, dk and dv against a float64 row-level oracle\n"
    "(tests/kit/reference_backward.h) computed from q, k, v and dout alone, never from the library's out\n"
    "or lse: normwise error max|g - ref| / max|ref| per gradient, <= 1e-11 for f64 and <= 1e-3 for\n"
    "f32, plus u for a bf16 or f16 gradient (dq: --dtype's; dk, dv: --kv-dtype's). With a bf16 or\n"
    "f16 --dtype, delta_i = dout_i*out_i comes from the out the backward was handed (the header's\n"
    "definition), once that out has passed its check: rounded to half, it moves delta, and so dq and\n"
    "dk, by up to u relative, which no implementation can undo. A dk/dv row\n"
    "sums over every query row that sees its key, so the oracle first computes the softmax\n"
    "normaliser of every query row of each (batch, kv head) the sample touches: about one float64\n"
    "forward of those heads (every head when B*Hkv <= --check-rows), once per shape, shared by all\n"
    "thread counts. Lower --check-rows to touch fewer heads of a very large problem. With --sinks,\n"
    "dsinks is checked on every head against -sum over b, i of exp(sink - lse_i)*delta_i from the\n"
    "oracle's statistics of every query row (a float64 forward of the whole problem), within the\n"
    "gradients' f32 or f64 bound plus 2^-24 (dsinks is a float for every dtype).\n"
    "\n"
    "Rows (--csv, --json): the shape, the options and the figures above, then what identifies the\n"
    "machine and the build: host, cpu_model (/proc/cpuinfo or lscpu), allowed_cores (physical cores\n"
    "this process may use, as the library counts them), allowed_cpus (logical CPUs in its affinity\n"
    "mask), compiler, build_type, git_revision (git describe of the source at build time, -dirty\n"
    "with local changes, unknown outside a git checkout), run_utc (start of the run, ISO 8601), and\n"
    "blas_warning. library_version and isa (the kernel table in use) are earlier columns. Rows of\n"
    "--varlen and --decode-batch: b is the number of sequences, nq and nk the longest (decode: nq 1,\n"
    "nk the cache capacity); flop, min_s, gflops, kv_bytes and kv_gbps are the packed (paged) call's;\n"
    "then ragged (varlen or decode), seqs, len_lo, len_hi, len_total, len_min, len_mean, len_max, and\n"
    "for varlen l_eq, equal_flop, equal_min_s, equal_gflops, loop_min_s, loop_gflops, varlen_vs_equal,\n"
    "varlen_vs_loop, loop_seqs_bitwise, loop_seqs_other_blocks, loop_seqs_may_split, err_loop, for\n"
    "decode page_size, kv_capacity, num_pages, contiguous_min_s, contiguous_kv_gbps,\n"
    "contiguous_pct_read_bw, paged_over_contiguous (empty where they do not apply); then kv_dtype\n"
    "(k, v, dk and dv's type; dtype is q, out, dout and dq's), lse_tolerance and grad_kv_tolerance\n"
    "(dk's and dv's; grad_tolerance is dq's), kv_scales (token-head for a quantized cache,\n"
    "token-head-inline with --kv-scales inline, else empty), shared_kv (v a view of k's memory),\n"
    "probe_spread, disturbed, huge_pages, and for decode with pages page_read_gbps and\n"
    "pct_page_read_bw (the page probe, and the paged KV GB/s as its %%).\n"
    "\n"
    "Exit status: 0 success, 1 verification or library failure (no speed is reported), 2 bad arguments.\n";

enum {
    OPT_PASS = 256,
    OPT_B,
    OPT_H,
    OPT_HKV,
    OPT_NQ,
    OPT_NK,
    OPT_D,
    OPT_DV,
    OPT_DTYPE,
    OPT_CAUSAL,
    OPT_LAYOUT,
    OPT_DIST,
    OPT_SEED,
    OPT_THREADS,
    OPT_BIND,
    OPT_BLOCK_Q,
    OPT_BLOCK_K,
    OPT_WARMUP,
    OPT_REPS,
    OPT_MIN_TIME,
    OPT_CHECK_ROWS,
    OPT_CSV,
    OPT_JSON,
    OPT_PRESET,
    OPT_ISA,
    OPT_PROBE_TIME,
    OPT_HUGE_PAGES,
    OPT_BLAS_REPS,
    OPT_BLAS_MODE,
    OPT_WINDOW,
    OPT_WINDOW_LEFT,
    OPT_WINDOW_RIGHT,
    OPT_SOFTCAP,
    OPT_ALIBI,
    OPT_BIAS,
    OPT_SINKS,
    OPT_DBIAS,
    OPT_ROUNDS,
    OPT_VARLEN,
    OPT_DECODE_BATCH,
    OPT_PAGE_SIZE,
    OPT_KV_DTYPE,
    OPT_SHARED_KV,
    OPT_KV_SCALES,
    OPT_DROPOUT,
};

static const struct option long_options[] = {
    {"pass", required_argument, NULL, OPT_PASS},
    {"b", required_argument, NULL, OPT_B},
    {"h", required_argument, NULL, OPT_H},
    {"hkv", required_argument, NULL, OPT_HKV},
    {"nq", required_argument, NULL, OPT_NQ},
    {"nk", required_argument, NULL, OPT_NK},
    {"d", required_argument, NULL, OPT_D},
    {"dv", required_argument, NULL, OPT_DV},
    {"dtype", required_argument, NULL, OPT_DTYPE},
    {"kv-dtype", required_argument, NULL, OPT_KV_DTYPE},
    {"causal", required_argument, NULL, OPT_CAUSAL},
    {"layout", required_argument, NULL, OPT_LAYOUT},
    {"dist", required_argument, NULL, OPT_DIST},
    {"seed", required_argument, NULL, OPT_SEED},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"bind", required_argument, NULL, OPT_BIND},
    {"block-q", required_argument, NULL, OPT_BLOCK_Q},
    {"block-k", required_argument, NULL, OPT_BLOCK_K},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"reps", required_argument, NULL, OPT_REPS},
    {"min-time", required_argument, NULL, OPT_MIN_TIME},
    {"check-rows", required_argument, NULL, OPT_CHECK_ROWS},
    {"csv", required_argument, NULL, OPT_CSV},
    {"json", required_argument, NULL, OPT_JSON},
    {"preset", required_argument, NULL, OPT_PRESET},
    {"isa", required_argument, NULL, OPT_ISA},
    {"probe-time", required_argument, NULL, OPT_PROBE_TIME},
    {"huge-pages", no_argument, NULL, OPT_HUGE_PAGES},
    {"blas-reps", required_argument, NULL, OPT_BLAS_REPS},
    {"blas-mode", required_argument, NULL, OPT_BLAS_MODE},
    {"window", required_argument, NULL, OPT_WINDOW},
    {"window-left", required_argument, NULL, OPT_WINDOW_LEFT},
    {"window-right", required_argument, NULL, OPT_WINDOW_RIGHT},
    {"softcap", required_argument, NULL, OPT_SOFTCAP},
    {"alibi", no_argument, NULL, OPT_ALIBI},
    {"bias", required_argument, NULL, OPT_BIAS},
    {"sinks", no_argument, NULL, OPT_SINKS},
    {"dbias", no_argument, NULL, OPT_DBIAS},
    {"rounds", required_argument, NULL, OPT_ROUNDS},
    {"varlen", required_argument, NULL, OPT_VARLEN},
    {"decode-batch", required_argument, NULL, OPT_DECODE_BATCH},
    {"page-size", required_argument, NULL, OPT_PAGE_SIZE},
    {"shared-kv", no_argument, NULL, OPT_SHARED_KV},
    {"kv-scales", required_argument, NULL, OPT_KV_SCALES},
    {"dropout", required_argument, NULL, OPT_DROPOUT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

// Name tables: one place maps CLI words to enum values and back, so the report prints what was typed.
typedef struct {
    const char *name;
    int value;
} name_value;

// --dtype's words; --kv-dtype takes these and the quantized types, and names every type.
static const name_value dtype_names[] = {
    {"f32", FA_F32}, {"f64", FA_F64}, {"bf16", FA_BF16}, {"f16", FA_F16}, {NULL, 0}};
static const name_value kv_dtype_names[] = {{"f32", FA_F32},        {"f64", FA_F64}, {"bf16", FA_BF16},
                                            {"f16", FA_F16},        {"i8", FA_I8},   {"f8e4m3", FA_F8_E4M3},
                                            {"f8e5m2", FA_F8_E5M2}, {NULL, 0}};
static const name_value causal_names[] = {{"none", FA_CAUSAL_NONE},
                                          {"top-left", FA_CAUSAL_TOP_LEFT},
                                          {"bottom-right", FA_CAUSAL_BOTTOM_RIGHT},
                                          {NULL, 0}};
static const name_value layout_names[] = {
    {"bhsd", BENCH_LAYOUT_BHSD}, {"bshd", BENCH_LAYOUT_BSHD}, {NULL, 0}};
static const name_value bind_names[] = {{"auto", FA_BIND_AUTO},
                                        {"none", FA_BIND_NONE},
                                        {"core", FA_BIND_CORE},
                                        {"spread", FA_BIND_SPREAD},
                                        {NULL, 0}};
static const name_value dist_names[] = {
    {"normal", BENCH_DIST_NORMAL}, {"uniform", BENCH_DIST_UNIFORM}, {"peaky", BENCH_DIST_PEAKY}, {NULL, 0}};
static const name_value pass_names[] = {
    {"fwd", BENCH_PASS_FWD}, {"bwd", BENCH_PASS_BWD}, {"fwdbwd", BENCH_PASS_FWDBWD}, {NULL, 0}};
static const name_value blas_mode_names[] = {{"best", BENCH_BLAS_BEST},
                                             {"row-blocks", BENCH_BLAS_ROW_BLOCKS},
                                             {"gemm-threads", BENCH_BLAS_GEMM_THREADS},
                                             {NULL, 0}};
static const name_value bias_names[] = {
    {"none", BENCH_BIAS_NONE}, {"keypad", BENCH_BIAS_KEYPAD}, {"full", BENCH_BIAS_FULL}, {NULL, 0}};
static const name_value kv_scales_names[] = {{"separate", 0}, {"inline", 1}, {NULL, 0}};
// --isa values; the index only serves parse_choice, the name is what goes into FLASHATTN_ISA.
static const name_value isa_names[] = {{"ref", 0}, {"avx2", 1}, {"avx512", 2}, {"avx512_bf16", 3},
                                       {"amx", 4}, {"auto", 5}, {NULL, 0}};

static const char *name_of(const name_value *table, int value)
{
    for (; table->name; table++)
        if (table->value == value) return table->name;
    return "?";
}

const char *bench_dtype_name(fa_dtype t)
{
    return name_of(kv_dtype_names, (int)t);
}
const char *bench_causal_name(fa_causal c)
{
    return name_of(causal_names, (int)c);
}
const char *bench_layout_name(bench_layout l)
{
    return name_of(layout_names, (int)l);
}
const char *bench_bind_name(fa_bind b)
{
    return name_of(bind_names, (int)b);
}
const char *bench_dist_name(bench_dist d)
{
    return name_of(dist_names, (int)d);
}
const char *bench_pass_name(bench_pass p)
{
    return name_of(pass_names, (int)p);
}
const char *bench_blas_mode_name(bench_blas_mode m)
{
    return name_of(blas_mode_names, (int)m);
}
const char *bench_bias_name(bench_bias_kind k)
{
    return name_of(bias_names, (int)k);
}
const char *bench_ragged_name(bench_ragged_kind k)
{
    return k == BENCH_RAGGED_VARLEN ? "varlen" : k == BENCH_RAGGED_DECODE ? "decode" : "";
}

// Every parse helper prints its own message and returns -1, so the caller only propagates failure.
static int parse_choice(const char *opt, const char *arg, const name_value *table, int *out)
{
    for (const name_value *e = table; e->name; e++) {
        if (strcmp(arg, e->name) == 0) {
            *out = e->value;
            return 0;
        }
    }
    fprintf(stderr, "fa-bench: --%s: unknown value '%s' (expected", opt, arg);
    for (const name_value *e = table; e->name; e++)
        fprintf(stderr, "%s%s", e == table ? " " : " | ", e->name);
    fprintf(stderr, ")\n");
    return -1;
}

static int parse_int64(const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(arg, &end, 10);
    if (end == arg || *end != '\0' || errno == ERANGE) {
        fprintf(stderr, "fa-bench: --%s: '%s' is not an integer\n", opt, arg);
        return -1;
    }
    if (v < lo || v > hi) {
        fprintf(stderr, "fa-bench: --%s: %lld is outside %lld..%lld\n", opt, v, (long long)lo, (long long)hi);
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

static int parse_int(const char *opt, const char *arg, int lo, int hi, int *out)
{
    int64_t v;
    if (parse_int64(opt, arg, lo, hi, &v) != 0) return -1;
    *out = (int)v;
    return 0;
}

static int parse_seconds(const char *opt, const char *arg, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(arg, &end);
    if (end == arg || *end != '\0' || errno == ERANGE || !(v >= 0.0 && v <= 3600.0)) {
        fprintf(stderr, "fa-bench: --%s: '%s' is not a number of seconds in 0..3600\n", opt, arg);
        return -1;
    }
    *out = v;
    return 0;
}

// A softcap: finite and >= 0 (0 turns it off); the library refuses the rest, fa-bench says so first.
// A dropout probability: 0 <= P < 1, as fa_params.dropout_p.
static int parse_dropout(const char *arg, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(arg, &end);
    if (end == arg || *end != '\0' || errno == ERANGE || !(v >= 0.0 && v < 1.0)) {
        fprintf(stderr, "fa-bench: --dropout: '%s' is not a probability in [0, 1)\n", arg);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_softcap(const char *arg, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(arg, &end);
    if (end == arg || *end != '\0' || errno == ERANGE || !(v >= 0.0 && v <= 1e300)) {
        fprintf(stderr, "fa-bench: --softcap: '%s' is not a finite number >= 0 (0 = off)\n", arg);
        return -1;
    }
    *out = v;
    return 0;
}

// "L,R": two window sides, each >= -1 (-1 = unbounded).
static int parse_window(const char *arg, bench_mods *m)
{
    char *end = NULL;
    errno = 0;
    long long l = strtoll(arg, &end, 10);
    int ok = end != arg && *end == ',' && errno != ERANGE && l >= -1;
    long long r = -1;
    if (ok) {
        const char *p = end + 1;
        errno = 0;
        r = strtoll(p, &end, 10);
        ok = end != p && *end == '\0' && errno != ERANGE && r >= -1;
    }
    if (!ok) {
        fprintf(stderr, "fa-bench: --window: '%s' is not L,R with each side an integer >= -1\n", arg);
        return -1;
    }
    m->window_left = (int64_t)l;
    m->window_right = (int64_t)r;
    return 0;
}

// "N:LO-HI" or "N:L": N sequences (1..65536) of lengths drawn from LO..HI, 1 <= LO <= HI < 2^31.
static int parse_ragged(const char *opt, const char *arg, bench_ragged_kind kind, bench_ragged *r)
{
    char *end = NULL;
    errno = 0;
    long long n = strtoll(arg, &end, 10), lo = -1, hi = -1;
    int ok = end != arg && *end == ':' && errno != ERANGE && n >= 1 && n <= 65536;
    if (ok) {
        const char *p = end + 1;
        lo = strtoll(p, &end, 10);
        ok = end != p && errno != ERANGE && (*end == '-' || *end == '\0');
        hi = lo;
        if (ok && *end == '-') {
            p = end + 1;
            hi = strtoll(p, &end, 10);
            ok = end != p && *end == '\0' && errno != ERANGE;
        }
        ok = ok && lo >= 1 && lo <= hi && hi <= INT32_MAX;
    }
    if (!ok) {
        fprintf(stderr,
                "fa-bench: --%s: '%s' is not N:LO-HI (or N:L), N sequences in 1..65536 of lengths "
                "1 <= LO <= HI <= %d\n",
                opt, arg, INT32_MAX);
        return -1;
    }
    r->kind = kind;
    r->count = (int64_t)n;
    r->lo = (int64_t)lo;
    r->hi = (int64_t)hi;
    return 0;
}

static int parse_seed(const char *arg, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 0);
    if (end == arg || *end != '\0' || errno == ERANGE || arg[0] == '-') {
        fprintf(stderr, "fa-bench: --seed: '%s' is not a non-negative integer\n", arg);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

// "1,2,4": each count >= 1, duplicates kept (a user may want to see run-to-run noise).
static int parse_thread_list(const char *arg, bench_options *o)
{
    const char *p = arg;
    int n = 0;
    for (;;) {
        char *end = NULL;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno == ERANGE || v < 1 || v > 65536 || (*end != ',' && *end != '\0')) {
            fprintf(stderr, "fa-bench: --threads: '%s' is not a comma-separated list of counts >= 1\n", arg);
            return -1;
        }
        if (n == BENCH_MAX_THREAD_COUNTS) {
            fprintf(stderr, "fa-bench: --threads: more than %d counts\n", BENCH_MAX_THREAD_COUNTS);
            return -1;
        }
        o->thread_counts[n++] = (int)v;
        if (*end == '\0') break;
        p = end + 1;
    }
    o->n_thread_counts = n;
    return 0;
}

// The shape and pass fields a command line can set; those it did set override a preset's.
enum {
    SET_B = 1 << 0,
    SET_H = 1 << 1,
    SET_HKV = 1 << 2,
    SET_NQ = 1 << 3,
    SET_NK = 1 << 4,
    SET_D = 1 << 5,
    SET_DV = 1 << 6,
    SET_DTYPE = 1 << 7,
    SET_CAUSAL = 1 << 8,
    SET_LAYOUT = 1 << 9,
    SET_PASS = 1 << 10,
    SET_WINDOW_LEFT = 1 << 11,
    SET_WINDOW_RIGHT = 1 << 12,
    SET_SOFTCAP = 1 << 13,
    SET_ALIBI = 1 << 14,
    SET_BIAS = 1 << 15,
    SET_SINKS = 1 << 16,
    SET_RAGGED = 1 << 17,
    SET_PAGE_SIZE = 1 << 18,
    SET_KV_DTYPE = 1 << 19,
    SET_SHARED_KV = 1 << 20,
    SET_DBIAS = 1 << 21,
    SET_KV_SCALES = 1 << 22,
};

static unsigned field_set_by(int option)
{
    switch (option) {
    case OPT_B: return SET_B;
    case OPT_H: return SET_H;
    case OPT_HKV: return SET_HKV;
    case OPT_NQ: return SET_NQ;
    case OPT_NK: return SET_NK;
    case OPT_D: return SET_D;
    case OPT_DV: return SET_DV;
    case OPT_DTYPE: return SET_DTYPE;
    case OPT_KV_DTYPE: return SET_KV_DTYPE;
    case OPT_CAUSAL: return SET_CAUSAL;
    case OPT_LAYOUT: return SET_LAYOUT;
    case OPT_PASS: return SET_PASS;
    case OPT_WINDOW: return SET_WINDOW_LEFT | SET_WINDOW_RIGHT;
    case OPT_WINDOW_LEFT: return SET_WINDOW_LEFT;
    case OPT_WINDOW_RIGHT: return SET_WINDOW_RIGHT;
    case OPT_SOFTCAP: return SET_SOFTCAP;
    case OPT_ALIBI: return SET_ALIBI;
    case OPT_BIAS: return SET_BIAS;
    case OPT_SINKS: return SET_SINKS;
    case OPT_DBIAS: return SET_DBIAS;
    case OPT_VARLEN:
    case OPT_DECODE_BATCH: return SET_RAGGED;
    case OPT_PAGE_SIZE: return SET_PAGE_SIZE;
    case OPT_SHARED_KV: return SET_SHARED_KV;
    case OPT_KV_SCALES: return SET_KV_SCALES;
    default: return 0;
    }
}

static void set_defaults(bench_options *o, bench_case *c)
{
    memset(o, 0, sizeof *o);
    memset(c, 0, sizeof *c);
    c->shape.b = 1;
    c->shape.hq = 8;
    c->shape.hkv = -1; // -1: follow hq, nq, d once all options are read
    c->shape.nq = 1024;
    c->shape.nk = -1;
    c->shape.d = 64;
    c->shape.dv = -1;
    c->shape.dtype = FA_F32;
    c->shape.kv_dtype = FA_F32; // follows dtype unless --kv-dtype is given (finish)
    c->shape.causal = FA_CAUSAL_NONE;
    c->shape.layout = BENCH_LAYOUT_BHSD;
    c->shape.mods = (bench_mods){-1, -1, 0.0, 0, BENCH_BIAS_NONE, 0, 0};
    c->pass = BENCH_PASS_FWD;
    c->reference = -1;
    o->dist = BENCH_DIST_NORMAL;
    o->seed = 1;
    o->bind = FA_BIND_AUTO;
    o->warmup = 1;
    o->reps = 5;
    o->rounds = 1;
    o->check_rows = 64;
    o->probe_time = 0.2;
    o->blas_reps = 0; // the baseline is opt-in: at 55 s a shape it dwarfed the library's 4 s
}

// The fields of from that the command line set, written over to.
static void apply_overrides(bench_case *to, const bench_case *from, unsigned set)
{
    const bench_shape *f = &from->shape;
    bench_shape *t = &to->shape;
    if (set & SET_B) t->b = f->b;
    if (set & SET_H) t->hq = f->hq;
    if (set & SET_HKV) t->hkv = f->hkv;
    if (set & SET_NQ) t->nq = f->nq;
    if (set & SET_NK) t->nk = f->nk;
    if (set & SET_D) t->d = f->d;
    if (set & SET_DV) t->dv = f->dv;
    if (set & SET_DTYPE) t->dtype = f->dtype;
    if (set & SET_KV_DTYPE) t->kv_dtype = f->kv_dtype;
    if (set & SET_CAUSAL) t->causal = f->causal;
    if (set & SET_LAYOUT) t->layout = f->layout;
    if (set & SET_PASS) to->pass = from->pass;
    if (set & SET_WINDOW_LEFT) t->mods.window_left = f->mods.window_left;
    if (set & SET_WINDOW_RIGHT) t->mods.window_right = f->mods.window_right;
    if (set & SET_SOFTCAP) t->mods.softcap = f->mods.softcap;
    if (set & SET_ALIBI) t->mods.alibi = f->mods.alibi;
    if (set & SET_BIAS) t->mods.bias = f->mods.bias;
    if (set & SET_SINKS) t->mods.sinks = f->mods.sinks;
    if (set & SET_DBIAS) t->mods.dbias = f->mods.dbias;
    if (set & SET_RAGGED) {
        t->ragged.kind = f->ragged.kind;
        t->ragged.count = f->ragged.count;
        t->ragged.lo = f->ragged.lo;
        t->ragged.hi = f->ragged.hi;
    }
    if (set & SET_PAGE_SIZE) t->ragged.page_size = f->ragged.page_size;
    if (set & SET_KV_SCALES) t->ragged.inline_scales = f->ragged.inline_scales;
    if (set & SET_SHARED_KV) t->shared_kv = f->shared_kv;
}

// A ragged case's fixed fields and the options that do not apply to it (a preset's --kv-scales inline
// to its quantized caches only). Returns 0, or -1 after a message.
static int finish_ragged(bench_case *c, unsigned set, int from_preset)
{
    bench_shape *s = &c->shape;
    bench_ragged *r = &s->ragged;
    if (r->kind == BENCH_RAGGED_NONE) {
        if (r->page_size != 0 || r->inline_scales) {
            fprintf(stderr, "fa-bench: %s applies to --decode-batch only\n",
                    r->page_size != 0 ? "--page-size" : "--kv-scales inline");
            return -1;
        }
        return 0;
    }
    const char *opt = r->kind == BENCH_RAGGED_VARLEN ? "--varlen" : "--decode-batch";
    if (s->shared_kv) {
        fprintf(stderr, "fa-bench: --shared-kv applies to dense shapes, not to %s\n", opt);
        return -1;
    }
    if (r->kind == BENCH_RAGGED_VARLEN && kit_dtype_is_quantized(s->kv_dtype)) {
        fprintf(stderr,
                "fa-bench: --varlen with --kv-dtype %s: fa-bench measures quantized caches on decode "
                "shapes (a dense shape or --decode-batch)\n",
                bench_dtype_name(s->kv_dtype));
        return -1;
    }
    if (set & (SET_B | SET_NQ | SET_NK)) {
        fprintf(stderr, "fa-bench: --b, --nq and --nk do not apply to %s: its SPEC gives the lengths\n", opt);
        return -1;
    }
    if ((r->page_size != 0 || r->inline_scales) && r->kind != BENCH_RAGGED_DECODE) {
        fprintf(stderr, "fa-bench: %s applies to --decode-batch only\n",
                r->page_size != 0 ? "--page-size" : "--kv-scales inline");
        return -1;
    }
    if (r->inline_scales && !kit_dtype_is_quantized(s->kv_dtype)) {
        if (from_preset) { // a preset's f32 and half caches have no scales to place
            r->inline_scales = 0;
        } else {
            fprintf(
                stderr,
                "fa-bench: --kv-scales inline: a %s cache has no scales (--kv-dtype i8, f8e4m3 or f8e5m2)\n",
                bench_dtype_name(s->kv_dtype));
            return -1;
        }
    }
    if (c->pass != BENCH_PASS_FWD) {
        fprintf(stderr, "fa-bench: %s times the forward only (--pass fwd)\n", opt);
        return -1;
    }
    if (s->mods.bias != BENCH_BIAS_NONE) {
        fprintf(stderr, "fa-bench: %s: the library has no per-sequence bias (--bias none)\n", opt);
        return -1;
    }
    s->b = r->count;
    s->nq = r->kind == BENCH_RAGGED_VARLEN ? r->hi : 1;
    s->nk = r->hi;
    if (!(set & SET_LAYOUT)) s->layout = BENCH_LAYOUT_BSHD; // FlashAttention's and vLLM's token-major memory
    return 0;
}

// The kv group's type (k, v, dk, dv) follows --dtype unless --kv-dtype is given (or the preset gives
// one: a preset's case with a kv_dtype other than its dtype keeps it, the mla preset's bf16 cache),
// and the pair must be one flashattn.h accepts; ragged cases take the same pairs (varlen.c,
// decode_batch.c). Returns 0, or -1 after a message.
static int finish_dtypes(bench_case *c, unsigned set, int from_preset)
{
    bench_shape *s = &c->shape;
    if (!(set & SET_KV_DTYPE) && (!from_preset || (set & SET_DTYPE))) s->kv_dtype = s->dtype;
    if (!bench_dtype_pair_ok(s->dtype, s->kv_dtype)) {
        fprintf(stderr,
                "fa-bench: --kv-dtype %s with --dtype %s: flashattn takes k and v of q's type, or bf16, f16, "
                "i8, f8e4m3 or f8e5m2 k and v under f32 queries (--dtype f32 --kv-dtype ...)\n",
                bench_dtype_name(s->kv_dtype), bench_dtype_name(s->dtype));
        return -1;
    }
    if (kit_dtype_is_quantized(s->kv_dtype) && c->pass != BENCH_PASS_FWD) {
        fprintf(
            stderr,
            "fa-bench: --kv-dtype %s: flashattn reads quantized caches in the forward only (--pass fwd)\n",
            bench_dtype_name(s->kv_dtype));
        return -1;
    }
    return 0;
}

// Defaults that depend on other options, and the checks that involve more than one option.
static int finish(bench_options *o, const bench_case *command_line, unsigned set)
{
    if (o->preset) {
        const bench_preset *p = bench_preset_find(o->preset);
        o->n_cases = p->n_cases;
        for (int i = 0; i < p->n_cases; i++) {
            o->cases[i] = p->cases[i];
            if ((set & SET_RAGGED) && p->cases[i].shape.ragged.kind != command_line->shape.ragged.kind) {
                fprintf(stderr, "fa-bench: --%s does not apply to preset %s\n",
                        command_line->shape.ragged.kind == BENCH_RAGGED_VARLEN ? "varlen" : "decode-batch",
                        o->preset);
                return -1;
            }
            apply_overrides(&o->cases[i], command_line, set);
        }
    } else {
        o->n_cases = 1;
        o->cases[0] = *command_line;
    }
    for (int i = 0; i < o->n_cases; i++) {
        bench_shape *s = &o->cases[i].shape;
        if (finish_dtypes(&o->cases[i], set, o->preset != NULL) != 0) return -1;
        if (finish_ragged(&o->cases[i], set, o->preset != NULL) != 0) return -1;
        if (o->cases[i].shape.mods.dbias && o->cases[i].shape.mods.bias == BENCH_BIAS_NONE) {
            fprintf(stderr,
                    "fa-bench: --dbias asks for the bias's gradient: give a bias (--bias keypad|full)\n");
            return -1;
        }
        if (s->hkv < 0) s->hkv = s->hq;
        if (s->nk < 0) s->nk = s->nq;
        if (s->dv < 0) s->dv = s->d;
        if (s->shared_kv && s->dv > s->d) {
            fprintf(stderr,
                    "fa-bench: --shared-kv: v is the first Dv dims of k's rows, so Dv (%lld) <= D (%lld)\n",
                    (long long)s->dv, (long long)s->d);
            return -1;
        }
        if (s->hq % s->hkv != 0) {
            fprintf(stderr, "fa-bench: --h %lld is not a multiple of --hkv %lld\n", (long long)s->hq,
                    (long long)s->hkv);
            return -1;
        }
    }
    if (o->n_thread_counts == 0) {
        o->thread_counts[o->n_thread_counts++] = 1;
        int max_threads = omp_get_max_threads();
        if (max_threads > 1) o->thread_counts[o->n_thread_counts++] = max_threads;
    }
    return 0;
}

static int parse_preset(const char *arg, bench_options *o)
{
    if (bench_preset_find(arg)) {
        o->preset = arg;
        return 0;
    }
    fprintf(stderr, "fa-bench: --preset: unknown preset '%s'; the presets are:\n", arg);
    bench_presets_print(stderr);
    return -1;
}

bench_parse_result bench_parse_options(int argc, char **argv, bench_options *o)
{
    bench_case cl; // the shape options as given, before a preset takes them
    set_defaults(o, &cl);
    unsigned set = 0;
    int rc = 0, choice = 0;
    for (;;) {
        int c = getopt_long(argc, argv, "h", long_options, NULL);
        if (c == -1) break;
        const char *arg = optarg;
        switch (c) {
        case 'h':
            fputs(help_intro, stdout);
            bench_presets_print(stdout);
            printf(help_text, BENCH_MAX_DIM, BENCH_MAX_DIM);
            return BENCH_PARSE_HELP;
        case OPT_PASS:
            rc = parse_choice("pass", arg, pass_names, &choice);
            cl.pass = (bench_pass)choice;
            break;
        case OPT_B: rc = parse_int64("b", arg, 1, INT32_MAX, &cl.shape.b); break;
        case OPT_H: rc = parse_int64("h", arg, 1, INT32_MAX, &cl.shape.hq); break;
        case OPT_HKV: rc = parse_int64("hkv", arg, 1, INT32_MAX, &cl.shape.hkv); break;
        case OPT_NQ: rc = parse_int64("nq", arg, 1, INT32_MAX, &cl.shape.nq); break;
        case OPT_NK: rc = parse_int64("nk", arg, 1, INT32_MAX, &cl.shape.nk); break;
        case OPT_D: rc = parse_int64("d", arg, 1, BENCH_MAX_DIM, &cl.shape.d); break;
        case OPT_DV: rc = parse_int64("dv", arg, 1, BENCH_MAX_DIM, &cl.shape.dv); break;
        case OPT_DTYPE:
            rc = parse_choice("dtype", arg, dtype_names, &choice);
            cl.shape.dtype = (fa_dtype)choice;
            break;
        case OPT_KV_DTYPE:
            rc = parse_choice("kv-dtype", arg, kv_dtype_names, &choice);
            cl.shape.kv_dtype = (fa_dtype)choice;
            break;
        case OPT_CAUSAL:
            rc = parse_choice("causal", arg, causal_names, &choice);
            cl.shape.causal = (fa_causal)choice;
            break;
        case OPT_LAYOUT:
            rc = parse_choice("layout", arg, layout_names, &choice);
            cl.shape.layout = (bench_layout)choice;
            break;
        case OPT_DIST:
            rc = parse_choice("dist", arg, dist_names, &choice);
            o->dist = (bench_dist)choice;
            break;
        case OPT_SEED: rc = parse_seed(arg, &o->seed); break;
        case OPT_THREADS: rc = parse_thread_list(arg, o); break;
        case OPT_BIND:
            rc = parse_choice("bind", arg, bind_names, &choice);
            o->bind = (fa_bind)choice;
            break;
        case OPT_ISA:
            rc = parse_choice("isa", arg, isa_names, &choice);
            o->isa = isa_names[choice].name;
            break;
        case OPT_PRESET: rc = parse_preset(arg, o); break;
        case OPT_BLOCK_Q: rc = parse_int("block-q", arg, 1, 1 << 20, &o->block_q); break;
        case OPT_BLOCK_K: rc = parse_int("block-k", arg, 1, 1 << 20, &o->block_k); break;
        case OPT_WARMUP: rc = parse_int("warmup", arg, 0, 1000000, &o->warmup); break;
        case OPT_REPS: rc = parse_int("reps", arg, 1, BENCH_MAX_SAMPLES, &o->reps); break;
        case OPT_MIN_TIME: rc = parse_seconds("min-time", arg, &o->min_time); break;
        case OPT_ROUNDS: rc = parse_int("rounds", arg, 1, 1000, &o->rounds); break;
        case OPT_PROBE_TIME: rc = parse_seconds("probe-time", arg, &o->probe_time); break;
        case OPT_HUGE_PAGES: o->huge_pages = 1; break;
        case OPT_BLAS_REPS: rc = parse_int("blas-reps", arg, 0, BENCH_MAX_SAMPLES, &o->blas_reps); break;
        case OPT_BLAS_MODE:
            rc = parse_choice("blas-mode", arg, blas_mode_names, &choice);
            o->blas_mode = (bench_blas_mode)choice;
            break;
        case OPT_WINDOW: rc = parse_window(arg, &cl.shape.mods); break;
        case OPT_WINDOW_LEFT:
            rc = parse_int64("window-left", arg, -1, INT64_MAX, &cl.shape.mods.window_left);
            break;
        case OPT_WINDOW_RIGHT:
            rc = parse_int64("window-right", arg, -1, INT64_MAX, &cl.shape.mods.window_right);
            break;
        case OPT_SOFTCAP: rc = parse_softcap(arg, &cl.shape.mods.softcap); break;
        case OPT_ALIBI: cl.shape.mods.alibi = 1; break;
        case OPT_BIAS:
            rc = parse_choice("bias", arg, bias_names, &choice);
            cl.shape.mods.bias = (bench_bias_kind)choice;
            break;
        case OPT_SINKS: cl.shape.mods.sinks = 1; break;
        case OPT_DBIAS: cl.shape.mods.dbias = 1; break;
        case OPT_DROPOUT: rc = parse_dropout(arg, &o->dropout); break;
        case OPT_SHARED_KV: cl.shape.shared_kv = 1; break;
        case OPT_KV_SCALES:
            rc = parse_choice("kv-scales", arg, kv_scales_names, &choice);
            cl.shape.ragged.inline_scales = choice;
            break;
        case OPT_VARLEN:
        case OPT_DECODE_BATCH:
            if ((set & SET_RAGGED) &&
                cl.shape.ragged.kind != (c == OPT_VARLEN ? BENCH_RAGGED_VARLEN : BENCH_RAGGED_DECODE)) {
                fprintf(stderr, "fa-bench: --varlen and --decode-batch are two runs, not one\n");
                return BENCH_PARSE_ERROR;
            }
            rc = parse_ragged(c == OPT_VARLEN ? "varlen" : "decode-batch", arg,
                              c == OPT_VARLEN ? BENCH_RAGGED_VARLEN : BENCH_RAGGED_DECODE, &cl.shape.ragged);
            break;
        case OPT_PAGE_SIZE:
            rc = parse_int64("page-size", arg, 0, INT32_MAX, &cl.shape.ragged.page_size);
            break;
        case OPT_CHECK_ROWS: rc = parse_int64("check-rows", arg, 1, INT64_MAX, &o->check_rows); break;
        case OPT_CSV: o->csv_path = arg; break;
        case OPT_JSON: o->json_path = arg; break;
        default: // getopt_long has already named the bad option
            fprintf(stderr, "fa-bench: try 'fa-bench --help'\n");
            return BENCH_PARSE_ERROR;
        }
        if (rc != 0) return BENCH_PARSE_ERROR;
        set |= field_set_by(c);
    }
    if (optind < argc) {
        fprintf(stderr, "fa-bench: unexpected argument '%s' (options only; try 'fa-bench --help')\n",
                argv[optind]);
        return BENCH_PARSE_ERROR;
    }
    return finish(o, &cl, set) == 0 ? BENCH_PARSE_RUN : BENCH_PARSE_ERROR;
}
