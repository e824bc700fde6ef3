/* SPDX-License-Identifier: BSD-3-Clause */
/* fa-kernel-bench --decode (decode_kernels.h). The operands are what the forward driver hands a
 * decode step's kernels (drivers/forward_float.h): one query row, its scores key after key (ld 1,
 * tile_ld_), or with --decode-rows R the R rows of a grouped-query decode (the query heads of one kv
 * head: plan/grouped_rows.c), their scores R to a key (ld the 64-byte padding of R), each row
 * gathered once into 64-byte aligned vectors, 64 keys a tile (the decode tile on
 * every CPU: plan/block_sizes.c) whose K and V rows are listed with FA_STORED_AHEAD more entries,
 * and the prefetch the CPU takes for that cache type's rows (fa_decode_reads_for: the token order's
 * where a decode group reads its tiles so, the head-by-head one otherwise). The products are called
 * once a tile, or with --decode-run N on runs of N keys, as a group that reads its tiles in token
 * order calls them (drivers/forward_attend.h, FA_TOKEN_RUN: 8), which costs more a key. The tile's
 * rows stay in L1 and L2, so the figures are the kernels' cost without memory's. */
#include "decode_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/block_sizes.h"
#include "plan/problem.h"
#include "runtime/cpu_features.h"
#include "kernel_bench_util.h"
#include "timing.h"

#define TILE_KEYS DECODE_TILE_KEYS
#define TILES     64 /* tile steps a pass */

static const struct {
    fa_dtype type;
    const char *name;
} cache_types[] = {{FA_F32, "f32"}, {FA_BF16, "bf16"},    {FA_F16, "f16"},
                   {FA_I8, "int8"}, {FA_F8_E4M3, "e4m3"}, {FA_F8_E5M2, "e5m2"}};

typedef struct {
    const fa_kernels_f32 *k;
    fa_dtype type;
    int64_t rows, ld;    /* query rows, and the score tile's ld (tile_ld_: 1 for one row) */
    int64_t run;         /* keys a call of the products (TILE_KEYS: the tile in one call) */
    int64_t dim, stride; /* stride: q's and acc's row, padded to 64 bytes */
    fa_rows_prefetch prefetch;
    unsigned char *k_mem, *v_mem;
    const void *k_rows[TILE_KEYS + FA_STORED_AHEAD], *v_rows[TILE_KEYS + FA_STORED_AHEAD];
    float *q, *s, *acc, *scale;
    /* every row of ld (online_softmax steps them), aligned as the arena's */
    _Alignas(64) float row_max[FA_PAD_ELEMS_F32];
    _Alignas(64) float row_sum[FA_PAD_ELEMS_F32];
} decode_bench;

/* Element i of a row of `type` with a small, finite value (no NaN codes): the softmax's
 * exponentials stay normal and every lane takes the path a real cache's values take. */
static void fill_element(unsigned char *at, fa_dtype type, int64_t i)
{
    const unsigned r = (unsigned)((i * 7919) % 251);
    switch (type) {
    case FA_F32: {
        float f = (float)r / 251.0f - 0.5f;
        memcpy(at, &f, sizeof f);
        break;
    }
    case FA_BF16:
    case FA_F16: { /* bf16 1.0 (0x3F80) or f16 0.5 (0x3800), plus mantissa bits and a sign */
        uint16_t h =
            (uint16_t)((type == FA_BF16 ? 0x3F00u | (r & 0x7Fu) : 0x3800u | (r & 0x3FFu)) | (r & 1u) << 15);
        memcpy(at, &h, sizeof h);
        break;
    }
    case FA_I8: *at = (unsigned char)(r - 125); break;
    default: *at = (unsigned char)(r & 0x77u); break; /* FP8: exponents below the NaN and inf codes */
    }
}

static void decode_bench_free(decode_bench *b)
{
    free(b->k_mem), free(b->v_mem), free(b->q), free(b->s), free(b->acc), free(b->scale);
}

static int64_t pad_f32(int64_t n)
{
    return (n + FA_PAD_ELEMS_F32 - 1) / FA_PAD_ELEMS_F32 * FA_PAD_ELEMS_F32;
}

static int decode_bench_init(decode_bench *b, const fa_kernels_f32 *k, fa_dtype type, int64_t rows,
                             int64_t run, int64_t dim, fa_rows_prefetch prefetch)
{
    const size_t elem = fa_elem_size(type);
    memset(b, 0, sizeof *b);
    b->k = k, b->type = type, b->rows = rows, b->run = run, b->dim = dim, b->prefetch = prefetch;
    b->ld = rows == 1 ? 1 : pad_f32(rows);
    b->stride = pad_f32(dim);
    const size_t row = (size_t)dim * elem;
    b->k_mem = kernel_bench_zeroed(TILE_KEYS * row);
    b->v_mem = kernel_bench_zeroed(TILE_KEYS * row);
    b->q = kernel_bench_zeroed((size_t)(rows * b->stride) * sizeof(float));
    b->s = kernel_bench_zeroed((size_t)(TILE_KEYS * b->ld) * sizeof(float));
    b->acc = kernel_bench_zeroed((size_t)(rows * b->stride) * sizeof(float));
    b->scale = kernel_bench_zeroed(TILE_KEYS * sizeof(float));
    if (!b->k_mem || !b->v_mem || !b->q || !b->s || !b->acc || !b->scale) {
        decode_bench_free(b);
        return -1;
    }
    for (int64_t i = 0; i < TILE_KEYS * dim; i++) {
        fill_element(b->k_mem + i * (int64_t)elem, type, i);
        fill_element(b->v_mem + i * (int64_t)elem, type, i + 17);
    }
    for (int64_t r = 0; r < rows; r++) /* zero past dim, as the driver gathers them (kernels.h) */
        for (int64_t x = 0; x < dim; x++) b->q[r * b->stride + x] = (float)((x + r) % 13) / 13.0f * 0.1f;
    for (int c = 0; c < TILE_KEYS; c++) b->scale[c] = 0.01f + 0.0001f * (float)c;
    /* the ahead entries are the tile's own rows again: the next tile is this one */
    for (int c = 0; c < TILE_KEYS + FA_STORED_AHEAD; c++) {
        b->k_rows[c] = b->k_mem + (size_t)(c % TILE_KEYS) * row;
        b->v_rows[c] = b->v_mem + (size_t)(c % TILE_KEYS) * row;
    }
    return 0;
}

typedef enum { DECODE_SCORES, DECODE_SOFTMAX, DECODE_ACCUMULATE, DECODE_STEP, DECODE_KINDS } decode_kind;

/* The keys of the run from key c of the tile: b->run, or what the tile has left. */
static int64_t run_keys(const decode_bench *b, int64_t c)
{
    return TILE_KEYS - c < b->run ? TILE_KEYS - c : b->run;
}

static void decode_bench_pass(decode_bench *b, decode_kind what)
{
    const int quantized = b->type >= FA_I8;
    const float *scale = quantized ? b->scale : NULL;
    for (int64_t r = 0; r < b->ld; r++) b->row_max[r] = -INFINITY, b->row_sum[r] = 0;
    for (int t = 0; t < TILES; t++) {
        /* the runs' row lists start at their first key and keep FA_STORED_AHEAD entries past it */
        for (int64_t c = 0; (what == DECODE_SCORES || what == DECODE_STEP) && c < TILE_KEYS; c += b->run)
            b->k->scores_stored(b->rows, b->ld, run_keys(b, c), b->dim, b->q, b->stride, b->k_rows + c,
                                b->type, scale ? scale + c : NULL, b->prefetch, b->s + c * b->ld);
        if (what == DECODE_SOFTMAX || what == DECODE_STEP)
            b->k->online_softmax(b->rows, b->ld, TILE_KEYS, b->s, b->row_max, b->row_sum, b->acc, b->stride,
                                 b->stride);
        for (int64_t c = 0; (what == DECODE_ACCUMULATE || what == DECODE_STEP) && c < TILE_KEYS; c += b->run)
            b->k->accumulate_stored(b->rows, run_keys(b, c), b->dim, b->s + c * b->ld, b->ld, b->v_rows + c,
                                    b->type, scale ? scale + c : NULL, b->prefetch, b->acc, b->stride);
    }
}

/* ns a key of the fastest of `rounds` passes */
static double decode_bench_ns(decode_bench *b, decode_kind what, int rounds)
{
    double best = INFINITY;
    decode_bench_pass(b, what); /* warm-up: the scores the softmax and P·V read are a step's */
    for (int r = 0; r < rounds; r++) {
        double t0 = bench_now();
        decode_bench_pass(b, what);
        double dt = bench_now() - t0;
        if (dt < best) best = dt;
    }
    return best * 1e9 / (TILES * TILE_KEYS);
}

int decode_kernels_run(const fa_kernels_f32 *k, const int64_t *dims, int n_dims, int64_t rows, int64_t run,
                       int rounds, double fma_slot, double read_gbps)
{
    const fa_cpu_model cpu = fa_cpu_identify();
    static const char *const prefetch_names[] = {
        [FA_ROWS_PREFETCH_NEAR] = "near", [FA_ROWS_PREFETCH_FAR] = "far", [FA_ROWS_PREFETCH_NONE] = "none"};
    printf("Decode step, %lld query row%s, %d keys a tile in cache, the products called on runs of %lld\n"
           "keys, with the prefetches the library takes for the rows (token order or head by head);\n"
           "ns a key, the products' share of the FMA probe (4·rows·D FLOP a key), and the bytes of K\n"
           "and V the step consumes against the read probe (%.1f GB/s, 1 thread)\n",
           (long long)rows, rows == 1 ? "" : "s (a grouped-query kv head's)", TILE_KEYS, (long long)run,
           read_gbps);
    for (int d = 0; d < n_dims; d++) {
        const int64_t dim = dims[d];
        printf("D = Dv = %lld\n  %-6s %-14s %9s %9s %11s %9s %13s %7s %9s %7s\n", (long long)dim, "cache",
               "prefetch", "scores", "softmax", "accumulate", "step", "step (slots)", "% FMA", "GB/s",
               "% read");
        for (size_t c = 0; c < sizeof cache_types / sizeof *cache_types; c++) {
            const fa_decode_reads reads =
                fa_decode_reads_for(&cpu, dim * (int64_t)fa_elem_size(cache_types[c].type));
            const fa_rows_prefetch prefetch = reads.token_order ? reads.tokens : reads.rows;
            char mode[32];
            snprintf(mode, sizeof mode, "%s (%s)", prefetch_names[prefetch],
                     reads.token_order ? "token" : "head");
            decode_bench b;
            if (decode_bench_init(&b, k, cache_types[c].type, rows, run, dim, prefetch) != 0) {
                fprintf(stderr, "fa-kernel-bench: out of memory\n");
                return -1;
            }
            double ns[DECODE_KINDS];
            for (int w = 0; w < DECODE_KINDS; w++) ns[w] = decode_bench_ns(&b, (decode_kind)w, rounds);
            const double gbps =
                2.0 * (double)dim * (double)fa_elem_size(cache_types[c].type) / ns[DECODE_STEP];
            /* the products' FMAs a key: rows·D of the scores and rows·Dv of P·V, a lane each */
            const double product_slots = 2.0 * (double)(rows * dim) / k->traits.lanes;
            const double step_slots = ns[DECODE_STEP] * 1e-9 / fma_slot;
            printf("  %-6s %-14s %9.2f %9.2f %11.2f %9.2f %13.1f %6.0f%% %9.1f %6.0f%%\n",
                   cache_types[c].name, mode, ns[DECODE_SCORES], ns[DECODE_SOFTMAX], ns[DECODE_ACCUMULATE],
                   ns[DECODE_STEP], step_slots, 100.0 * product_slots / step_slots, gbps,
                   100.0 * gbps / read_gbps);
            decode_bench_free(&b);
        }
    }
    return 0;
}
