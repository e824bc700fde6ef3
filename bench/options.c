// fa-bench command line parsing (getopt_long) and the --help text.
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h" // BENCH_MAX_SAMPLES bounds --reps

// Head dims the library accepts (flashattn.h); checked here so a typo gets a CLI message, not a status.
#define BENCH_MAX_DIM 512

static const char help_text[] =
    "usage: fa-bench [options]\n"
    "\n"
    "Times flashattn on one shape for one or more thread counts: the forward pass, the backward pass,\n"
    "or both (--pass). Before timing, each thread count's outputs are checked against a float64 oracle\n"
    "on a sample of rows, and every later output must be bitwise identical to the first (the library's\n"
    "determinism contract).\n"
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
    "  --dtype T          f32 | f64 (default f32)\n"
    "  --causal C         none | top-left | bottom-right (default none)\n"
    "  --layout L         bhsd | bshd: memory order of q, k, v, out and their gradients (default bhsd)\n"
    "  --dist X           normal | uniform: N(0,1) or U(-1,1) inputs and dout (default normal)\n"
    "  --seed S           input seed (default 1); values depend on (b, h, s, d), not on the layout\n"
    "\n"
    "execution:\n"
    "  --threads LIST     comma-separated thread counts, e.g. 1,2,4 (default: 1 and omp_get_max_threads())\n"
    "  --bind P           auto | none | core | spread (default auto)\n"
    "  --block-q N        query rows per work item (default: the library chooses)\n"
    "  --block-k N        keys per tile (default: the library chooses)\n"
    "\n"
    "measurement:\n"
    "  --warmup W         untimed calls before timing (default 1)\n"
    "  --reps R           timed calls (default 5)\n"
    "  --min-time S       keep timing past R calls until S seconds of calls are timed (default 0)\n"
    "  --check-rows N     rows checked against the oracle, spread over (b, h, i), first and last\n"
    "                     included (default 64); bwd and fwdbwd check as many rows of dq, spread over\n"
    "                     (b, h, i), and of dk and dv, spread over (b, kv head, j)\n"
    "  --csv FILE         write one row per thread count (overwrites FILE)\n"
    "  --json FILE        write a JSON array with one object per thread count (overwrites FILE)\n"
    "  -h, --help         this text\n"
    "\n"
    "Speed: GFLOP/s = FLOP / min time, with forward FLOP = 2*B*Hq*Nq*Nk*(D+Dv) (= 4*B*H*N^2*D when\n"
    "Dv = D and Nk = Nq), halved for either causal mode. The halving is the usual convention, not a\n"
    "count of visible pairs (bottom-right with Nk > Nq sees more than half). Backward FLOP = 2.5 x\n"
    "forward (it recomputes Q*K^T and adds four products: dO*V^T, P^T*dO, dS*K, dS^T*Q), so fwdbwd\n"
    "FLOP = 3.5 x forward and its GFLOP/s is the combined throughput of the pair. Speedup and\n"
    "efficiency are against the 1-thread row of the same run, when the list has one.\n"
    "\n"
    "Verification: normwise relative error max|x - ref| / max|ref| over the checked rows of out, and\n"
    "max|lse - ref| / max(1, max|ref|) for lse; it must be <= 1e-12 for f64 and <= 1e-4 for f32.\n"
    "bwd and fwdbwd also check out and lse, then dq, dk and dv against a float64 row-level oracle\n"
    "(tests/reference_backward.h) computed from q, k, v and dout alone, never from the library's out\n"
    "or lse: normwise error max|g - ref| / max|ref| per gradient, <= 1e-11 for f64 and <= 1e-3 for\n"
    "f32. A dk/dv row sums over every query row that sees its key, so the oracle first computes the\n"
    "softmax normaliser of every query row of each (batch, kv head) the sample touches: about one\n"
    "float64 forward of those heads (every head when B*Hkv <= --check-rows), once per run, shared by\n"
    "all thread counts. Lower --check-rows to touch fewer heads of a very large problem.\n"
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
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

// Name tables: one place maps CLI words to enum values and back, so the report prints what was typed.
typedef struct {
    const char *name;
    int value;
} name_value;

static const name_value dtype_names[] = {{"f32", FA_F32}, {"f64", FA_F64}, {NULL, 0}};
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
    {"normal", BENCH_DIST_NORMAL}, {"uniform", BENCH_DIST_UNIFORM}, {NULL, 0}};
static const name_value pass_names[] = {
    {"fwd", BENCH_PASS_FWD}, {"bwd", BENCH_PASS_BWD}, {"fwdbwd", BENCH_PASS_FWDBWD}, {NULL, 0}};

static const char *name_of(const name_value *table, int value)
{
    for (; table->name; table++)
        if (table->value == value) return table->name;
    return "?";
}

const char *bench_dtype_name(fa_dtype t)
{
    return name_of(dtype_names, (int)t);
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

static void set_defaults(bench_options *o)
{
    memset(o, 0, sizeof *o);
    o->shape.b = 1;
    o->shape.hq = 8;
    o->shape.hkv = -1; // -1: follow hq, nq, d once all options are read
    o->shape.nq = 1024;
    o->shape.nk = -1;
    o->shape.d = 64;
    o->shape.dv = -1;
    o->shape.dtype = FA_F32;
    o->shape.causal = FA_CAUSAL_NONE;
    o->shape.layout = BENCH_LAYOUT_BHSD;
    o->pass = BENCH_PASS_FWD;
    o->dist = BENCH_DIST_NORMAL;
    o->seed = 1;
    o->bind = FA_BIND_AUTO;
    o->warmup = 1;
    o->reps = 5;
    o->check_rows = 64;
}

// Defaults that depend on other options, and the checks that involve more than one option.
static int finish(bench_options *o)
{
    bench_shape *s = &o->shape;
    if (s->hkv < 0) s->hkv = s->hq;
    if (s->nk < 0) s->nk = s->nq;
    if (s->dv < 0) s->dv = s->d;
    if (s->hq % s->hkv != 0) {
        fprintf(stderr, "fa-bench: --h %lld is not a multiple of --hkv %lld\n", (long long)s->hq,
                (long long)s->hkv);
        return -1;
    }
    if (o->n_thread_counts == 0) {
        o->thread_counts[o->n_thread_counts++] = 1;
        int max_threads = omp_get_max_threads();
        if (max_threads > 1) o->thread_counts[o->n_thread_counts++] = max_threads;
    }
    return 0;
}

bench_parse_result bench_parse_options(int argc, char **argv, bench_options *o)
{
    set_defaults(o);
    int rc = 0, choice = 0;
    for (;;) {
        int c = getopt_long(argc, argv, "h", long_options, NULL);
        if (c == -1) break;
        const char *arg = optarg;
        switch (c) {
        case 'h': printf(help_text, BENCH_MAX_DIM, BENCH_MAX_DIM); return BENCH_PARSE_HELP;
        case OPT_PASS:
            rc = parse_choice("pass", arg, pass_names, &choice);
            o->pass = (bench_pass)choice;
            break;
        case OPT_B: rc = parse_int64("b", arg, 1, INT32_MAX, &o->shape.b); break;
        case OPT_H: rc = parse_int64("h", arg, 1, INT32_MAX, &o->shape.hq); break;
        case OPT_HKV: rc = parse_int64("hkv", arg, 1, INT32_MAX, &o->shape.hkv); break;
        case OPT_NQ: rc = parse_int64("nq", arg, 1, INT32_MAX, &o->shape.nq); break;
        case OPT_NK: rc = parse_int64("nk", arg, 1, INT32_MAX, &o->shape.nk); break;
        case OPT_D: rc = parse_int64("d", arg, 1, BENCH_MAX_DIM, &o->shape.d); break;
        case OPT_DV: rc = parse_int64("dv", arg, 1, BENCH_MAX_DIM, &o->shape.dv); break;
        case OPT_DTYPE:
            rc = parse_choice("dtype", arg, dtype_names, &choice);
            o->shape.dtype = (fa_dtype)choice;
            break;
        case OPT_CAUSAL:
            rc = parse_choice("causal", arg, causal_names, &choice);
            o->shape.causal = (fa_causal)choice;
            break;
        case OPT_LAYOUT:
            rc = parse_choice("layout", arg, layout_names, &choice);
            o->shape.layout = (bench_layout)choice;
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
        case OPT_BLOCK_Q: rc = parse_int("block-q", arg, 1, 1 << 20, &o->block_q); break;
        case OPT_BLOCK_K: rc = parse_int("block-k", arg, 1, 1 << 20, &o->block_k); break;
        case OPT_WARMUP: rc = parse_int("warmup", arg, 0, 1000000, &o->warmup); break;
        case OPT_REPS: rc = parse_int("reps", arg, 1, BENCH_MAX_SAMPLES, &o->reps); break;
        case OPT_MIN_TIME: rc = parse_seconds("min-time", arg, &o->min_time); break;
        case OPT_CHECK_ROWS: rc = parse_int64("check-rows", arg, 1, INT64_MAX, &o->check_rows); break;
        case OPT_CSV: o->csv_path = arg; break;
        case OPT_JSON: o->json_path = arg; break;
        default: // getopt_long has already named the bad option
            fprintf(stderr, "fa-bench: try 'fa-bench --help'\n");
            return BENCH_PARSE_ERROR;
        }
        if (rc != 0) return BENCH_PARSE_ERROR;
    }
    if (optind < argc) {
        fprintf(stderr, "fa-bench: unexpected argument '%s' (options only; try 'fa-bench --help')\n",
                argv[optind]);
        return BENCH_PARSE_ERROR;
    }
    return finish(o) == 0 ? BENCH_PARSE_RUN : BENCH_PARSE_ERROR;
}
