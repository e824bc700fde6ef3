/* SPDX-License-Identifier: BSD-3-Clause */
// Unfused attention on OpenBLAS. Written as a user would write it, not tuned: full-width gemms
// even under a causal mask (gemm cannot skip the masked part of a row), expf/exp from libm.
#include "blas_baseline.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

// Query rows per block in row-blocks mode: large enough for gemm to run near its speed, small
// enough that N=512 heads still give a team several blocks each.
#define ROW_BLOCK 128

const char *bench_blas_describe(void)
{
    static char text[96];
    if (!text[0]) {
        const char *core = openblas_get_corename();
#ifdef OPENBLAS_VERSION
        // Debian's header has " OpenBLAS 0.3.21 ": trimmed here.
        const char *version = OPENBLAS_VERSION;
        while (*version == ' ') version++;
        int len = (int)strlen(version);
        while (len > 0 && version[len - 1] == ' ') len--;
        snprintf(text, sizeof text, "%.*s (core %s)", len, version, core ? core : "?");
#else
        snprintf(text, sizeof text, "OpenBLAS (core %s)", core ? core : "?");
#endif
    }
    return text;
}

// Cores whose kernels predate AVX2 and FMA, as openblas_get_corename() spells them (DYNAMIC_ARCH
// builds capitalise, others do not: compared without case). OpenBLAS falls back to one of these on a
// CPU its version does not know: 0.3.21 calls Sapphire and Granite Rapids Xeons "Prescott" and runs
// SSE3 kernels there, which made the baseline 1.8x slower than with SkylakeX's.
static const char *const outdated_cores[] = {
    "unknown",     "generic", "katmai",    "coppermine",    "northwood",   "prescott",
    "banias",      "yonah",   "atom",      "core2",         "penryn",      "dunnington",
    "nehalem",     "athlon",  "opteron",   "opteron(sse3)", "barcelona",   "nano",
    "sandybridge", "bobcat",  "bulldozer", "piledriver",    "steamroller", NULL};

const char *bench_blas_core_warning(void)
{
    static char text[256];
    static int done;
    if (done) return text;
    done = 1;
    const char *suggest = NULL;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    // SkylakeX's kernels need the AVX-512 subsets Skylake servers have, not only the foundation.
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        suggest = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        suggest = "Haswell";
#endif
    const char *core = openblas_get_corename();
    if (!suggest || !core) return text;
    for (const char *const *c = outdated_cores; *c; c++) {
        if (strcasecmp(core, *c) == 0) {
            snprintf(text, sizeof text,
                     "OpenBLAS runs its %s kernels on a CPU with %s: the baseline is slower than it should "
                     "be and 'x BLAS' too high; set OPENBLAS_CORETYPE=%s in the benchmark's command",
                     core, strcmp(suggest, "SkylakeX") == 0 ? "AVX-512" : "AVX2 and FMA", suggest);
            break;
        }
    }
    return text;
}

static int fits_int(int64_t x)
{
    return x >= 0 && x <= INT_MAX;
}

static size_t elem(const bench_blas *b)
{
    return b->pb->shape.dtype == FA_F64 ? sizeof(double) : sizeof(float);
}

static int64_t block_rows(const bench_shape *s)
{
    return s->nq < ROW_BLOCK ? s->nq : ROW_BLOCK;
}

int bench_blas_init(bench_blas *b, const bench_problem *pb, const fa_params *p, int max_threads)
{
    memset(b, 0, sizeof *b);
    const bench_shape *s = &pb->shape;
    b->pb = pb;
    b->causal = p->causal;
    b->scale = p->scale != 0.0 ? p->scale : 1.0 / sqrt((double)s->d);
    b->mode = BENCH_BLAS_ROW_BLOCKS;
    b->threads = 1;
    b->max_threads = max_threads < 1 ? 1 : max_threads;
    if (!fits_int(s->nq) || !fits_int(s->nk) || !fits_int(pb->q.stride_seq) || !fits_int(pb->k.stride_seq) ||
        !fits_int(pb->v.stride_seq) || (double)s->nq * (double)s->nk > (double)INT_MAX) {
        fprintf(stderr, "fa-bench: BLAS baseline skipped: the shape does not fit BLAS's int sizes\n");
        return -1;
    }
    size_t e = elem(b);
    size_t whole = (size_t)s->nq * (size_t)s->nk * e;
    size_t blocks = (size_t)b->max_threads * (size_t)block_rows(s) * (size_t)s->nk * e;
    b->scores_bytes = whole > blocks ? whole : blocks;
    b->out_bytes = (size_t)s->b * (size_t)s->hq * (size_t)s->nq * (size_t)s->dv * e;
    b->scores = aligned_alloc(64, (b->scores_bytes + 63) / 64 * 64);
    b->out = b->scores ? aligned_alloc(64, (b->out_bytes + 63) / 64 * 64) : NULL;
    if (!b->out) {
        fprintf(stderr, "fa-bench: BLAS baseline skipped: cannot allocate its %.1f MiB score buffer\n",
                (double)b->scores_bytes / 1048576.0);
        bench_blas_free(b);
        return -1;
    }
    return 0;
}

void bench_blas_free(bench_blas *b)
{
    free(b->scores);
    free(b->out);
    b->scores = b->out = NULL;
}

void bench_blas_configure(bench_blas *b, bench_blas_mode mode, int threads)
{
    b->mode = mode;
    b->threads = threads;
    openblas_set_num_threads(mode == BENCH_BLAS_GEMM_THREADS ? threads : 1);
}

// Keys row i may see: [0, visible).
static int64_t visible_keys(fa_causal causal, int64_t i, int64_t nq, int64_t nk)
{
    int64_t last = causal == FA_CAUSAL_TOP_LEFT ? i : causal == FA_CAUSAL_BOTTOM_RIGHT ? i + nk - nq : nk - 1;
    if (last >= nk) last = nk - 1;
    return last < 0 ? 0 : last + 1;
}

// Softmax of rows [i0, i0 + m) in place (row r of scores is query i0 + r); masked and fully
// masked entries become exact zeros. threads > 1 splits the rows over an OpenMP team. Written once
// for float (expf) and double (exp).
#define DEFINE_SOFTMAX(T, SFX, EXP)                                                                         \
    static void softmax_##SFX(T *scores, int64_t i0, int64_t m, int64_t nq, int64_t nk, fa_causal causal,   \
                              int threads)                                                                  \
    {                                                                                                       \
        _Pragma("omp parallel for if (threads > 1) num_threads(threads) schedule(static)") for (int64_t r = \
                                                                                                    0;      \
                                                                                                r < m; r++) \
        {                                                                                                   \
            T *row = scores + r * nk;                                                                       \
            int64_t n = visible_keys(causal, i0 + r, nq, nk);                                               \
            T max = -INFINITY, sum = 0;                                                                     \
            for (int64_t j = 0; j < n; j++) max = row[j] > max ? row[j] : max;                              \
            for (int64_t j = 0; j < n; j++) sum += row[j] = EXP(row[j] - max);                              \
            for (int64_t j = 0; j < n; j++) row[j] /= sum;                                                  \
            for (int64_t j = n; j < nk; j++) row[j] = 0;                                                    \
        }                                                                                                   \
    }
DEFINE_SOFTMAX(float, f32, expf)
DEFINE_SOFTMAX(double, f64, exp)
#undef DEFINE_SOFTMAX

// Query rows [i0, i0 + m) of head (bi, h): two gemms around a softmax, scores m x Nk.
static void attend_rows(const bench_blas *b, int64_t bi, int64_t h, int64_t i0, int64_t m, void *scores,
                        int softmax_threads)
{
    const bench_problem *pb = b->pb;
    const bench_shape *s = &pb->shape;
    int rows = (int)m, nk = (int)s->nk, d = (int)s->d, dv = (int)s->dv;
    int ldq = (int)pb->q.stride_seq, ldk = (int)pb->k.stride_seq, ldv = (int)pb->v.stride_seq;
    int64_t kvh = h / (s->hq / s->hkv);
    int64_t q_off = bi * pb->q.stride_batch + h * pb->q.stride_head + i0 * pb->q.stride_seq;
    int64_t k_off = bi * pb->k.stride_batch + kvh * pb->k.stride_head;
    int64_t v_off = bi * pb->v.stride_batch + kvh * pb->v.stride_head;
    int64_t o_off = ((bi * s->hq + h) * s->nq + i0) * s->dv;
    if (s->dtype == FA_F64) {
        double *sc = scores;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, nk, d, b->scale,
                    (const double *)pb->q.data + q_off, ldq, (const double *)pb->k.data + k_off, ldk, 0.0, sc,
                    nk);
        softmax_f64(sc, i0, m, s->nq, s->nk, b->causal, softmax_threads);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, dv, nk, 1.0, sc, nk,
                    (const double *)pb->v.data + v_off, ldv, 0.0, (double *)b->out + o_off, dv);
    } else {
        float *sc = scores;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, nk, d, (float)b->scale,
                    (const float *)pb->q.data + q_off, ldq, (const float *)pb->k.data + k_off, ldk, 0.0f, sc,
                    nk);
        softmax_f32(sc, i0, m, s->nq, s->nk, b->causal, softmax_threads);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, dv, nk, 1.0f, sc, nk,
                    (const float *)pb->v.data + v_off, ldv, 0.0f, (float *)b->out + o_off, dv);
    }
}

fa_status bench_blas_call(void *arg)
{
    const bench_blas *b = arg;
    const bench_shape *s = &b->pb->shape;
    if (b->mode == BENCH_BLAS_GEMM_THREADS) {
        for (int64_t bi = 0; bi < s->b; bi++)
            for (int64_t h = 0; h < s->hq; h++) attend_rows(b, bi, h, 0, s->nq, b->scores, b->threads);
        return FA_OK;
    }
    int64_t rows = block_rows(s), per_head = (s->nq + rows - 1) / rows;
    int64_t items = s->b * s->hq * per_head;
    size_t block_bytes = (size_t)rows * (size_t)s->nk * elem(b);
    int threads = b->threads < b->max_threads ? b->threads : b->max_threads;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) default(none) \
    shared(b, s, rows, per_head, items, block_bytes)
    for (int64_t it = 0; it < items; it++) {
        int64_t head = it / per_head, i0 = (it % per_head) * rows;
        int64_t m = s->nq - i0 < rows ? s->nq - i0 : rows;
        void *scores = (char *)b->scores + (size_t)omp_get_thread_num() * block_bytes;
        attend_rows(b, head / s->hq, head % s->hq, i0, m, scores, 1);
    }
    return FA_OK;
}

double bench_blas_difference(const bench_blas *b)
{
    const bench_problem *pb = b->pb;
    const bench_shape *s = &pb->shape;
    const fa_tensor *o = &pb->out;
    double diff = 0.0, ref_max = 0.0;
    for (int64_t bi = 0; bi < s->b; bi++)
        for (int64_t h = 0; h < s->hq; h++)
            for (int64_t i = 0; i < s->nq; i++) {
                int64_t lib = bi * o->stride_batch + h * o->stride_head + i * o->stride_seq;
                int64_t mine = ((bi * s->hq + h) * s->nq + i) * s->dv;
                for (int64_t c = 0; c < s->dv; c++) {
                    double want = s->dtype == FA_F64 ? ((const double *)o->data)[lib + c]
                                                     : (double)((const float *)o->data)[lib + c];
                    double got = s->dtype == FA_F64 ? ((const double *)b->out)[mine + c]
                                                    : (double)((const float *)b->out)[mine + c];
                    double d = fabs(got - want);
                    if (!(d <= diff)) diff = isnan(d) ? INFINITY : d;
                    if (fabs(want) > ref_max) ref_max = fabs(want);
                }
            }
    return ref_max > 0.0 ? diff / ref_max : diff;
}
