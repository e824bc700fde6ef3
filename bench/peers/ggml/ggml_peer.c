/* SPDX-License-Identifier: BSD-3-Clause */
// fa-ggml-peer: ggml's CPU ggml_flash_attn_ext on fa-bench's decode shapes, timed as fa-bench times
// (each call on its own, CLOCK_MONOTONIC; min and median of the reps after warmup calls; --rounds
// interleaves and keeps each row's fastest round), so its rows read beside fa-bench's. Built only by
// scripts/ggml_peer.sh against a ggml checkout the user names: flashattn, its tests and its CI never
// fetch or build ggml.
//
// Shapes (the same inputs as fa-bench's, value for value, from tests/kit/rng.h):
//   --decode-batch N:LO-HI (default 16:1024-32768, the decode-batch preset): one decode step of N
//     sequences whose caches hold LO..HI keys, drawn from --seed exactly as fa-bench draws them. ggml
//     has no per-sequence lengths: as llama.cpp runs a batch over split KV streams, K and V are
//     [N][cap][Hkv][D] (cap = the longest; token-major, llama.cpp's cache memory and fa-bench's bshd),
//     q [N][Hq][1][D], one ggml_flash_attn_ext over the N streams with a mask [N][1][cap] of f16 that is
//     0 for the keys in use and -inf beyond them (ggml skips a key whose mask is -inf).
//   --nk NK (the decode preset: 1 query over 32768 keys): one sequence, no mask, K and V [1][NK][Hkv][D].
// K and V: f16 (the f32 values rounded to nearest even, as fa-bench's --kv-dtype f16) and q8_0 (ggml's
// quantize_row_q8_0 of the f32 values: an f16 scale per block of 32 elements); q f32, scale 1/sqrt(D).
//
// Checked before it is timed (a sanity check, not fa-bench's bound): out on sampled (sequence, head)
// rows against a float64 oracle over the cache as stored (f16 widened, q8_0 dequantized by ggml's
// to_float), normwise error at most --tolerance (default 0.1). ggml rounds q to the cache's type and,
// over an f16 V, sums P·V in an f16 accumulator, whose error grows with the keys (about 2% normwise
// over the decode batch's caches of up to 30500 keys, 5% over 32768 keys in one sequence, on this
// project's 2-core test machine); a wrong mask or layout gives errors of order 1. Each row also says
// whether its out is bitwise the first thread count's (ggml splits a single sequence's keys by thread
// count, so the answer may be no there).
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rng.h" // the test kit's generator, fa-bench's input generator (tests/kit/rng.h)
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#define MAX_THREAD_COUNTS 16
#define MAX_SAMPLES       100000

// fa-bench's streams of the seed (bench/problem.c, bench/lengths.h): q, k, v of a dense shape; the
// lengths and the caches of a decode batch.
enum {
    STREAM_Q = 1,
    STREAM_K = 2,
    STREAM_V = 3,
    STREAM_LENGTHS = 7,
    STREAM_CACHE_K = 9,
    STREAM_CACHE_V = 10
};

typedef struct {
    int64_t seqs, lo, hi; // decode batch; seqs 0: one sequence of nk keys
    int64_t nk, hq, hkv, d;
    uint64_t seed;
    int threads[MAX_THREAD_COUNTS], n_threads;
    enum ggml_type types[4];
    int n_types;
    int warmup, reps, rounds;
    int64_t check_rows;
    double tolerance;
    const char *csv, *source;
} options;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// bench_sample of fa-bench (bench/problem.c) for the normal and uniform distributions.
static double sample_normal(uint64_t seed, uint64_t stream, uint64_t index)
{
    return kit_unit_normal(kit_stream_key(seed, stream), index);
}

static void usage(FILE *f)
{
    fputs("usage: fa-ggml-peer [--decode-batch N:LO-HI | --nk NK] [--h Hq] [--hkv Hkv] [--d D]\n"
          "                    [--kv f16,q8_0] [--threads 1,2] [--warmup W] [--reps R] [--rounds N]\n"
          "                    [--seed S] [--check-rows N] [--tolerance T] [--csv FILE] [--source TEXT]\n"
          "Times ggml's CPU ggml_flash_attn_ext on fa-bench's decode shapes (default: the decode-batch\n"
          "preset, --decode-batch 16:1024-32768 --h 8 --d 128; --nk 32768 for the decode preset), with f16\n"
          "and q8_0 K/V, and prints rows with fa-bench's column names. Built by scripts/ggml_peer.sh.\n",
          f);
}

static int parse_list_int(const char *arg, int *out, int max, int *n)
{
    *n = 0;
    for (const char *p = arg;;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 1 || v > 4096 || (*end != ',' && *end) || *n == max) return -1;
        out[(*n)++] = (int)v;
        if (!*end) return 0;
        p = end + 1;
    }
}

static int parse_types(const char *arg, options *o)
{
    o->n_types = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->n_types == 4) return -1;
        if (strcmp(t, "f16") == 0)
            o->types[o->n_types++] = GGML_TYPE_F16;
        else if (strcmp(t, "q8_0") == 0)
            o->types[o->n_types++] = GGML_TYPE_Q8_0;
        else
            return -1;
    }
    return o->n_types > 0 ? 0 : -1;
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){.seqs = 16,
                   .lo = 1024,
                   .hi = 32768,
                   .nk = 0,
                   .hq = 8,
                   .hkv = -1,
                   .d = 128,
                   .seed = 1,
                   .threads = {1, 2},
                   .n_threads = 2,
                   .types = {GGML_TYPE_F16, GGML_TYPE_Q8_0},
                   .n_types = 2,
                   .warmup = 1,
                   .reps = 5,
                   .rounds = 1,
                   .check_rows = 64,
                   .tolerance = 0.1};
    static const struct option opts[] = {{"decode-batch", required_argument, NULL, 'b'},
                                         {"nk", required_argument, NULL, 'n'},
                                         {"h", required_argument, NULL, 'H'},
                                         {"hkv", required_argument, NULL, 'K'},
                                         {"d", required_argument, NULL, 'd'},
                                         {"kv", required_argument, NULL, 'k'},
                                         {"threads", required_argument, NULL, 't'},
                                         {"warmup", required_argument, NULL, 'w'},
                                         {"reps", required_argument, NULL, 'r'},
                                         {"rounds", required_argument, NULL, 'R'},
                                         {"seed", required_argument, NULL, 's'},
                                         {"check-rows", required_argument, NULL, 'c'},
                                         {"tolerance", required_argument, NULL, 'T'},
                                         {"csv", required_argument, NULL, 'o'},
                                         {"source", required_argument, NULL, 'S'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        long long a = 0, b = 0, n = 0;
        int ok = 1;
        switch (c) {
        case 'b':
            ok = sscanf(optarg, "%lld:%lld-%lld", &n, &a, &b) == 3 && n >= 1 && a >= 1 && a <= b;
            o->seqs = n, o->lo = a, o->hi = b, o->nk = 0;
            break;
        case 'n':
            o->nk = atoll(optarg), o->seqs = 0;
            ok = o->nk >= 1;
            break;
        case 'H': ok = (o->hq = atoll(optarg)) >= 1; break;
        case 'K': ok = (o->hkv = atoll(optarg)) >= 1; break;
        case 'd': ok = (o->d = atoll(optarg)) >= 1 && o->d % 32 == 0; break; // q8_0 blocks of 32
        case 'k': ok = parse_types(optarg, o) == 0; break;
        case 't': ok = parse_list_int(optarg, o->threads, MAX_THREAD_COUNTS, &o->n_threads) == 0; break;
        case 'w': ok = (o->warmup = atoi(optarg)) >= 0; break;
        case 'r': ok = (o->reps = atoi(optarg)) >= 1 && o->reps <= MAX_SAMPLES; break;
        case 'R': ok = (o->rounds = atoi(optarg)) >= 1; break;
        case 's': o->seed = strtoull(optarg, NULL, 0); break;
        case 'c': ok = (o->check_rows = atoll(optarg)) >= 1; break;
        case 'T': ok = (o->tolerance = atof(optarg)) > 0.0; break;
        case 'o': o->csv = optarg; break;
        case 'S': o->source = optarg; break;
        case 'h': usage(stdout); exit(0);
        default: ok = 0;
        }
        if (!ok) {
            fprintf(stderr, "fa-ggml-peer: bad value for an option (D must be a multiple of 32)\n");
            usage(stderr);
            return -1;
        }
    }
    if (o->hkv < 0) o->hkv = o->hq;
    if (o->hq % o->hkv != 0 || optind < argc) {
        usage(stderr);
        return -1;
    }
    return 0;
}

// The problem: q, the caches as f32 values (fa-bench's), and the lengths.
typedef struct {
    int64_t streams, cap, hq, hkv, d;
    int64_t *len; // keys in use per stream
    int64_t total, min, max;
    float *q;    // [streams][hq][d]
    float *kf32; // [streams][cap][hkv][d], 0 beyond the keys in use
    float *vf32;
    double kv_elements; // keys in use * hkv * d, for K (and for V)
} problem;

static int make_problem(const options *o, problem *p)
{
    memset(p, 0, sizeof *p);
    int batch = o->seqs > 0;
    p->streams = batch ? o->seqs : 1;
    p->hq = o->hq, p->hkv = o->hkv, p->d = o->d;
    p->len = malloc(sizeof *p->len * (size_t)p->streams);
    if (!p->len) return -1;
    p->min = INT64_MAX;
    for (int64_t b = 0; b < p->streams; b++) {
        p->len[b] =
            batch ? o->lo + kit_keyed_below(o->seed, STREAM_LENGTHS, (uint64_t)b, o->hi - o->lo + 1) : o->nk;
        p->total += p->len[b];
        if (p->len[b] < p->min) p->min = p->len[b];
        if (p->len[b] > p->max) p->max = p->len[b];
    }
    p->cap = p->max;
    size_t qn = (size_t)(p->streams * p->hq * p->d), kn = (size_t)(p->streams * p->cap * p->hkv * p->d);
    p->q = malloc(sizeof(float) * qn);
    p->kf32 = calloc(kn, sizeof(float));
    p->vf32 = calloc(kn, sizeof(float));
    if (!p->q || !p->kf32 || !p->vf32) return -1;
    // fa-bench's values: q (b, h, 0, x) at ((b*Hq + h)*1 + 0)*D + x of stream 1; a decode batch's caches
    // (b, h, key, x) at ((b*Hkv + h)*cap + key)*D + x of streams 9 and 10 (bench/decode_batch.c), a
    // dense shape's at ((b*Hkv + h)*Nk + key)*D + x of streams 2 and 3 (bench/problem.c).
    uint64_t sk = batch ? STREAM_CACHE_K : STREAM_K, sv = batch ? STREAM_CACHE_V : STREAM_V;
    for (int64_t i = 0; i < (int64_t)qn; i++) p->q[i] = (float)sample_normal(o->seed, STREAM_Q, (uint64_t)i);
    int64_t s_count = p->streams, cap = p->cap, hkv = p->hkv, d = p->d;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < s_count * hkv * cap; r++) {
        int64_t key = r % cap, h = r / cap % hkv, b = r / cap / hkv;
        if (key >= p->len[b]) continue;
        float *kr = p->kf32 + ((b * cap + key) * hkv + h) * d,
              *vr = p->vf32 + ((b * cap + key) * hkv + h) * d;
        for (int64_t x = 0; x < d; x++) {
            kr[x] = (float)sample_normal(o->seed, sk, (uint64_t)(r * d + x));
            vr[x] = (float)sample_normal(o->seed, sv, (uint64_t)(r * d + x));
        }
    }
    p->kv_elements = (double)p->total * (double)p->hkv * (double)p->d;
    return 0;
}

static void free_problem(problem *p)
{
    free(p->len), free(p->q), free(p->kf32), free(p->vf32);
}

// One graph: q, K, V (and the mask) in buffers of ours, out, the flash-attention node.
typedef struct {
    enum ggml_type type;
    struct ggml_context *ctx;
    struct ggml_cgraph *graph;
    struct ggml_tensor *out;
    void *q, *k, *v, *mask, *outbuf;
    size_t row_bytes; // one cache row of D elements
    size_t out_bytes;
} peer_graph;

// The caches in `type`, row by row: [streams][cap][hkv] rows of D.
static void *convert_cache(const problem *p, const float *src, enum ggml_type type, size_t row_bytes)
{
    int64_t rows = p->streams * p->cap * p->hkv;
    char *dst = aligned_alloc(64, ((size_t)rows * row_bytes + 63) / 64 * 64);
    if (!dst) return NULL;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        if (type == GGML_TYPE_F16)
            ggml_fp32_to_fp16_row(src + r * p->d, (ggml_fp16_t *)(dst + (size_t)r * row_bytes), p->d);
        else
            ggml_quantize_chunk(type, src + r * p->d, dst + (size_t)r * row_bytes, 0, 1, p->d, NULL);
    }
    return dst;
}

static int build_graph(const problem *p, int batch, enum ggml_type type, peer_graph *g)
{
    memset(g, 0, sizeof *g);
    g->type = type;
    g->row_bytes = ggml_row_size(type, p->d);
    struct ggml_init_params ip = {ggml_tensor_overhead() * 16 + ggml_graph_overhead(), NULL, true};
    if (!(g->ctx = ggml_init(ip))) return -1;
    int64_t S = p->streams, D = p->d;
    struct ggml_tensor *q = ggml_new_tensor_4d(g->ctx, GGML_TYPE_F32, D, 1, p->hq, S);
    // K and V memory [S][cap][Hkv][D] (token-major), viewed as ggml's [D][cap][Hkv][S] by a permute,
    // as llama.cpp views its cache
    struct ggml_tensor *k4 = ggml_new_tensor_4d(g->ctx, type, D, p->hkv, p->cap, S);
    struct ggml_tensor *v4 = ggml_new_tensor_4d(g->ctx, type, D, p->hkv, p->cap, S);
    struct ggml_tensor *mask = batch ? ggml_new_tensor_4d(g->ctx, GGML_TYPE_F16, p->cap, 1, 1, S) : NULL;
    g->q = q->data = aligned_alloc(64, (ggml_nbytes(q) + 63) / 64 * 64);
    g->k = k4->data = convert_cache(p, p->kf32, type, g->row_bytes);
    g->v = v4->data = convert_cache(p, p->vf32, type, g->row_bytes);
    if (!g->q || !g->k || !g->v) return -1;
    memcpy(q->data, p->q, ggml_nbytes(q));
    if (mask) {
        g->mask = mask->data = aligned_alloc(64, (ggml_nbytes(mask) + 63) / 64 * 64);
        if (!g->mask) return -1;
        ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f), hidden = ggml_fp32_to_fp16(-INFINITY);
        for (int64_t b = 0; b < S; b++)
            for (int64_t key = 0; key < p->cap; key++)
                ((ggml_fp16_t *)g->mask)[b * p->cap + key] = key < p->len[b] ? zero : hidden;
    }
    struct ggml_tensor *k = ggml_permute(g->ctx, k4, 0, 2, 1, 3), *v = ggml_permute(g->ctx, v4, 0, 2, 1, 3);
    g->out = ggml_flash_attn_ext(g->ctx, q, k, v, mask, 1.0f / sqrtf((float)D), 0.0f, 0.0f);
    ggml_flash_attn_ext_set_prec(g->out, GGML_PREC_F32); // as llama.cpp asks (the CPU runs one kernel)
    g->out_bytes = ggml_nbytes(g->out);
    g->outbuf = g->out->data = aligned_alloc(64, (g->out_bytes + 63) / 64 * 64);
    if (!g->outbuf) return -1;
    g->graph = ggml_new_graph(g->ctx);
    ggml_build_forward_expand(g->graph, g->out);
    return 0;
}

static void free_graph(peer_graph *g)
{
    free(g->q), free(g->k), free(g->v), free(g->mask), free(g->outbuf);
    if (g->ctx) ggml_free(g->ctx);
}

// out of (stream b, head h): [Dv][Hq][1][S] permuted, element x at (b*Hq + h)*D + x.
static const float *out_row(const peer_graph *g, const problem *p, int64_t b, int64_t h)
{
    return (const float *)g->outbuf + (b * p->hq + h) * p->d;
}

// Normwise error of out on sampled (stream, head) rows against a float64 oracle over the cache as
// stored: max|out - ref| / max|ref|.
static double check(const peer_graph *g, const problem *p, int64_t check_rows)
{
    int64_t rows = p->streams * p->hq, n = check_rows < rows ? check_rows : rows, group = p->hq / p->hkv;
    const ggml_to_float_t to_float = ggml_get_type_traits(g->type)->to_float;
    double worst = 0.0, scale = 0.0;
    float *kr = malloc(sizeof(float) * (size_t)p->d), *vr = malloc(sizeof(float) * (size_t)p->d);
    double *s = malloc(sizeof(double) * (size_t)p->cap), *acc = malloc(sizeof(double) * (size_t)p->d);
    if (!kr || !vr || !s || !acc) {
        free(kr), free(vr), free(s), free(acc);
        return INFINITY;
    }
    for (int64_t k = 0; k < n; k++) {
        int64_t row = n > 1 ? k * (rows - 1) / (n - 1) : 0, b = row / p->hq, h = row % p->hq, kvh = h / group;
        const float *q = p->q + (b * p->hq + h) * p->d;
        double m = -INFINITY, l = 0.0;
        for (int64_t key = 0; key < p->len[b]; key++) {
            to_float((const char *)g->k + (size_t)((b * p->cap + key) * p->hkv + kvh) * g->row_bytes, kr,
                     p->d);
            double dot = 0.0;
            for (int64_t x = 0; x < p->d; x++) dot += (double)q[x] * (double)kr[x];
            s[key] = dot / sqrt((double)p->d);
            if (s[key] > m) m = s[key];
        }
        memset(acc, 0, sizeof(double) * (size_t)p->d);
        for (int64_t key = 0; key < p->len[b]; key++) {
            double w = exp(s[key] - m);
            l += w;
            to_float((const char *)g->v + (size_t)((b * p->cap + key) * p->hkv + kvh) * g->row_bytes, vr,
                     p->d);
            for (int64_t x = 0; x < p->d; x++) acc[x] += w * (double)vr[x];
        }
        const float *got = out_row(g, p, b, h);
        for (int64_t x = 0; x < p->d; x++) {
            double want = acc[x] / l, diff = fabs((double)got[x] - want);
            if (!(diff <= worst)) worst = isnan(diff) ? INFINITY : diff;
            if (fabs(want) > scale) scale = fabs(want);
        }
    }
    free(kr), free(vr), free(s), free(acc);
    return worst / (scale > 0.0 ? scale : 1.0);
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    double min_s, median_s;
    int reps;
} timing;

// warmup untimed calls, then reps calls each timed on its own (fa-bench's bench_time_calls).
static int time_graph(peer_graph *g, struct ggml_cplan *plan, int warmup, int reps, timing *t)
{
    for (int i = 0; i < warmup; i++)
        if (ggml_graph_compute(g->graph, plan) != GGML_STATUS_SUCCESS) return -1;
    double *samples = malloc(sizeof(double) * (size_t)reps);
    if (!samples) return -1;
    for (int i = 0; i < reps; i++) {
        double start = now();
        enum ggml_status st = ggml_graph_compute(g->graph, plan);
        samples[i] = now() - start;
        if (st != GGML_STATUS_SUCCESS) {
            free(samples);
            return -1;
        }
    }
    qsort(samples, (size_t)reps, sizeof(double), compare_double);
    t->min_s = samples[0];
    t->median_s = reps % 2 ? samples[reps / 2] : 0.5 * (samples[reps / 2 - 1] + samples[reps / 2]);
    t->reps = reps;
    free(samples);
    return 0;
}

static void cpu_model(char *out, size_t size)
{
    snprintf(out, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon) continue;
        colon += 2;
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(out, size, "%s", colon);
        break;
    }
    fclose(f);
}

// The CPU backend's features as ggml reports them ("AVX2 AVX512 ... OPENMP ..."); *openmp set when its
// threads are an OpenMP team (GGML_OPENMP) rather than ggml's own threadpool.
static void cpu_features(char *out, size_t size, int *openmp)
{
    *openmp = 0;
    snprintf(out, size, "?");
    void *sym = ggml_backend_reg_get_proc_address(ggml_backend_cpu_reg(), "ggml_backend_get_features");
    ggml_backend_get_features_t get;
    if (!sym) return;
    memcpy(&get, &sym, sizeof get); // a function's address, handed out as a void *
    size_t n = 0;
    out[0] = '\0';
    for (struct ggml_backend_feature *f = get(ggml_backend_cpu_reg()); f && f->name; f++) {
        if (strcmp(f->name, "OPENMP") == 0) *openmp = 1;
        int w = snprintf(out + n, size - n, "%s%s", n ? " " : "", f->name);
        if (w < 0 || (size_t)w >= size - n) break;
        n += (size_t)w;
    }
}

typedef struct {
    timing t;
    double err, kv_bytes;
    int bitwise_first; // out bitwise equal to the first thread count's
    int measured;
} cell;

int main(int argc, char **argv)
{
    options o;
    if (parse(argc, argv, &o) != 0) return 2;
    ggml_cpu_init();
    problem p;
    if (make_problem(&o, &p) != 0) {
        fprintf(stderr, "fa-ggml-peer: out of memory building the inputs\n");
        return 1;
    }
    int batch = o.seqs > 0;
    char cpu[256], host[256] = "?", utc[32], features[512];
    int openmp;
    cpu_model(cpu, sizeof cpu);
    cpu_features(features, sizeof features, &openmp);
    gethostname(host, sizeof host);
    time_t wall = time(NULL);
    strftime(utc, sizeof utc, "%Y-%m-%dT%H:%M:%SZ", gmtime(&wall));
    printf("fa-ggml-peer: ggml %s (commit %s%s%s), CPU ggml_flash_attn_ext, ", ggml_version(), ggml_commit(),
           o.source ? "; source " : "", o.source ? o.source : "");
    if (batch)
        printf("decode batch: %lld sequences, Nq=1, caches of %lld..%lld keys", (long long)o.seqs,
               (long long)o.lo, (long long)o.hi);
    else
        printf("decode: B=1 Nq=1 Nk=%lld", (long long)o.nk);
    printf(", Hq=%lld Hkv=%lld D=Dv=%lld\n", (long long)p.hq, (long long)p.hkv, (long long)p.d);
    if (batch)
        printf(
            "  keys in use (seed %llu): %lld in all, min %lld, mean %.1f, max %lld (fa-bench's lengths of "
            "this seed)\n"
            "  one call over %lld streams: q [S][Hq][1][D] f32, K and V [S][cap][Hkv][D], cap = %lld, a mask "
            "[S][1][cap] f16, -inf beyond each sequence's keys\n",
            (unsigned long long)o.seed, (long long)p.total, (long long)p.min,
            (double)p.total / (double)p.streams, (long long)p.max, (long long)p.streams, (long long)p.cap);
    printf("  %s, %s; run started %s; warmup %d, reps %d, rounds %d\n  ggml CPU backend: %s; threads: %s\n",
           host, cpu, utc, o.warmup, o.reps, o.rounds, features,
           openmp ? "an OpenMP team (GGML_OPENMP), placed as OMP_PROC_BIND/OMP_PLACES say (unset: unpinned)"
                  : "ggml's threadpool, unpinned");
    printf(
        "  KV GB/s: the K and V bytes of the keys in use (f16: 2 bytes an element; q8_0: 34 per block of 32) "
        "/ min time\n");
    fflush(stdout);

    peer_graph graphs[4];
    memset(graphs, 0, sizeof graphs);
    cell cells[4][MAX_THREAD_COUNTS];
    memset(cells, 0, sizeof cells);
    void *first_out[4] = {NULL};
    int rc = 0;
    for (int ty = 0; ty < o.n_types && rc == 0; ty++) {
        if (build_graph(&p, batch, o.types[ty], &graphs[ty]) != 0) {
            fprintf(stderr, "fa-ggml-peer: cannot build the %s graph (out of memory)\n",
                    ggml_type_name(o.types[ty]));
            rc = 1;
        }
    }
    // The f32 values are in the graphs' caches now (and the oracle reads those): gigabytes freed.
    free(p.kf32), free(p.vf32);
    p.kf32 = p.vf32 = NULL;
    for (int round = 0; round < o.rounds && rc == 0; round++) {
        for (int ti = 0; ti < o.n_threads && rc == 0; ti++) {
            int nt = o.threads[ti];
            struct ggml_threadpool_params tpp = ggml_threadpool_params_default(nt);
            struct ggml_threadpool *tp = ggml_threadpool_new(&tpp);
            for (int ty = 0; ty < o.n_types && rc == 0; ty++) {
                peer_graph *g = &graphs[ty];
                struct ggml_cplan plan = ggml_graph_plan(g->graph, nt, tp);
                plan.work_data = plan.work_size ? malloc(plan.work_size) : NULL;
                memset(g->outbuf, 0xff, g->out_bytes); // NaN: a row not written fails the check
                if ((plan.work_size && !plan.work_data) ||
                    ggml_graph_compute(g->graph, &plan) != GGML_STATUS_SUCCESS) {
                    fprintf(stderr, "fa-ggml-peer: ggml_graph_compute failed\n");
                    rc = 1;
                }
                double err = rc ? INFINITY : check(g, &p, o.check_rows);
                if (rc == 0 && !(err <= o.tolerance)) {
                    fprintf(stderr,
                            "fa-ggml-peer: %s, %d threads: out differs from the float64 oracle by %.3g "
                            "(normwise) > %g: not timed\n",
                            ggml_type_name(g->type), nt, err, o.tolerance);
                    rc = 1;
                }
                if (rc == 0 && !first_out[ty] && (first_out[ty] = malloc(g->out_bytes)))
                    memcpy(first_out[ty], g->outbuf, g->out_bytes);
                int same = first_out[ty] && memcmp(first_out[ty], g->outbuf, g->out_bytes) == 0;
                timing t;
                if (rc == 0 && time_graph(g, &plan, o.warmup, o.reps, &t) != 0) {
                    fprintf(stderr, "fa-ggml-peer: ggml_graph_compute failed while timing\n");
                    rc = 1;
                }
                cell *c = &cells[ty][ti];
                if (rc == 0 && (!c->measured || t.min_s < c->t.min_s)) {
                    c->t = t;
                    c->err = err;
                    c->bitwise_first = same;
                    c->kv_bytes = 2.0 * p.kv_elements / (double)p.d * (double)g->row_bytes;
                    c->measured = 1;
                }
                free(plan.work_data);
            }
            ggml_threadpool_free(tp);
        }
    }
    if (rc == 0) {
        printf("\n%7s %-6s %10s %10s %9s %14s %9s %s\n", "threads", "kv", "min ms", "median ms", "KV GB/s",
               "K+V bytes", "err out", "out = 1st threads'");
        for (int ty = 0; ty < o.n_types; ty++)
            for (int ti = 0; ti < o.n_threads; ti++) {
                const cell *c = &cells[ty][ti];
                printf("%7d %-6s %10.3f %10.3f %9.2f %14.0f %9.2e %s\n", o.threads[ti],
                       ggml_type_name(o.types[ty]), 1e3 * c->t.min_s, 1e3 * c->t.median_s,
                       c->kv_bytes / c->t.min_s / 1e9, c->kv_bytes, c->err, c->bitwise_first ? "yes" : "no");
            }
    }
    if (rc == 0 && o.csv) {
        FILE *f = fopen(o.csv, "w");
        if (!f) {
            fprintf(stderr, "fa-ggml-peer: cannot write %s\n", o.csv);
            rc = 1;
        } else {
            fprintf(
                f,
                "peer,library_version,ragged,seqs,len_lo,len_hi,len_total,len_min,len_mean,len_max,b,hq,hkv,"
                "nq,nk,d,dv,kv_dtype,threads,warmup,reps,rounds,min_s,median_s,kv_bytes,kv_gbps,err_out,"
                "bitwise_identical,seed,host,cpu_model,run_utc,ggml_features\n");
            for (int ty = 0; ty < o.n_types; ty++)
                for (int ti = 0; ti < o.n_threads; ti++) {
                    const cell *c = &cells[ty][ti];
                    fprintf(f,
                            "ggml,%s,%s,%lld,%lld,%lld,%lld,%lld,%.1f,%lld,"  // peer .. len_max
                            "%lld,%lld,%lld,1,%lld,%lld,%lld,%s,%d,%d,%d,%d," // b .. rounds
                            "%.9g,%.9g,%.9g,%.9g,%.3e,%s,%llu,%s,\"%s\",%s,\"%s\"\n",
                            ggml_version(), batch ? "decode" : "", (long long)(batch ? o.seqs : 0),
                            (long long)(batch ? o.lo : 0), (long long)(batch ? o.hi : 0), (long long)p.total,
                            (long long)p.min, (double)p.total / (double)p.streams, (long long)p.max,
                            (long long)p.streams, (long long)p.hq, (long long)p.hkv, (long long)p.cap,
                            (long long)p.d, (long long)p.d, ggml_type_name(o.types[ty]), o.threads[ti],
                            o.warmup, c->t.reps, o.rounds, c->t.min_s, c->t.median_s, c->kv_bytes,
                            c->kv_bytes / c->t.min_s / 1e9, c->err, c->bitwise_first ? "true" : "false",
                            (unsigned long long)o.seed, host, cpu, utc, features);
                }
            if (fclose(f) != 0) rc = 1;
        }
    }
    for (int ty = 0; ty < 4; ty++) {
        free_graph(&graphs[ty]);
        free(first_out[ty]);
    }
    free_problem(&p);
    return rc;
}
