/* SPDX-License-Identifier: BSD-3-Clause */
/* fa-kernel-bench: one kernel table's f32 forward tile kernels on one thread, without the driver,
 * against the FMA probe of the same run (bench/README.md, "The kernels alone"). The question it
 * answers is the one a forward below the FMA peak raises: is the gap in the kernels (their
 * instruction mix on this core), or in what the driver and memory add around them? */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_kernels.h"
#include "identity.h"
#include "kernel_bench_util.h"
#include "kernels/kernels.h"
#include "runtime/dispatch.h"
#include "peak.h"
#include "placement.h"
#include "port_costs.h"
#include "stream.h"
#include "timing.h"

#define ROWS 64 /* one query block of the float kernels (FA_FLOAT_BLOCK_ROWS) */

typedef enum { STEP_SCORES, STEP_SOFTMAX, STEP_ACCUMULATE, STEP_TILE } step_kind;
static const char *const step_names[] = {"Q.K^T (scores)", "online softmax", "P.V (accumulate)",
                                         "all three (one tile step)"};

typedef struct {
    const fa_kernels_f32 *k;
    int64_t dim, dim_pad, keys, block_k; /* dim_pad: accumulator rows padded to 64 bytes, as the forward's */
    float *qt, *s, *acc, *row_max, *row_sum, *kmat, *vmat;
} tile_bench;

static float *aligned_floats(size_t n)
{
    return kernel_bench_zeroed(n * sizeof(float));
}

static int tile_bench_init(tile_bench *b, const fa_kernels_f32 *k, int64_t dim, int64_t keys, int64_t block_k)
{
    b->k = k, b->dim = dim, b->dim_pad = (dim + 15) / 16 * 16, b->keys = keys, b->block_k = block_k;
    b->qt = aligned_floats((size_t)(dim * ROWS));
    b->s = aligned_floats((size_t)(block_k * ROWS));
    b->acc = aligned_floats((size_t)(ROWS * b->dim_pad));
    b->row_max = aligned_floats(ROWS);
    b->row_sum = aligned_floats(ROWS);
    b->kmat = aligned_floats((size_t)(keys * dim));
    b->vmat = aligned_floats((size_t)(keys * dim));
    if (!b->qt || !b->s || !b->acc || !b->row_max || !b->row_sum || !b->kmat || !b->vmat) return -1;
    /* scores of a few units, as a scaled Q.K^T gives: the softmax's exponentials stay normal */
    for (int64_t i = 0; i < keys * dim; i++) {
        b->kmat[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
        b->vmat[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    }
    for (int64_t i = 0; i < dim * ROWS; i++) b->qt[i] = (float)(i % 97) / 97.0f * 0.2f;
    return 0;
}

static void tile_bench_free(tile_bench *b)
{
    free(b->qt), free(b->s), free(b->acc), free(b->row_max), free(b->row_sum), free(b->kmat), free(b->vmat);
}

/* One pass of `what` over the b->keys keys (walk) or over the first tile b->keys / block_k times
 * (in cache): the same work, the same tile count. */
static void tile_bench_pass(const tile_bench *b, step_kind what, int walk)
{
    for (int64_t r = 0; r < ROWS; r++) b->row_max[r] = -INFINITY, b->row_sum[r] = 0;
    for (int64_t c0 = 0; c0 + b->block_k <= b->keys; c0 += b->block_k) {
        const float *kt = b->kmat + (walk ? c0 : 0) * b->dim, *vt = b->vmat + (walk ? c0 : 0) * b->dim;
        if (what == STEP_SCORES || what == STEP_TILE)
            b->k->scores(ROWS, ROWS, b->block_k, b->dim, b->qt, kt, b->dim, b->s);
        if (what == STEP_SOFTMAX || what == STEP_TILE)
            b->k->online_softmax(ROWS, ROWS, b->block_k, b->s, b->row_max, b->row_sum, b->acc, b->dim_pad,
                                 b->dim_pad);
        if (what == STEP_ACCUMULATE || what == STEP_TILE)
            b->k->accumulate(ROWS, b->block_k, b->dim, b->s, ROWS, vt, b->dim, b->acc, b->dim_pad);
    }
}

/* The fastest of `rounds` passes, in seconds. */
static double tile_bench_time(const tile_bench *b, step_kind what, int walk, int rounds)
{
    double best = INFINITY;
    tile_bench_pass(b, what, walk); /* warm-up */
    for (int r = 0; r < rounds; r++) {
        double t0 = bench_now();
        tile_bench_pass(b, what, walk);
        double dt = bench_now() - t0;
        if (dt < best) best = dt;
    }
    return best;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fa-kernel-bench [--isa NAME] [--d D[,D...]] [--keys N] [--block-k BK] [--rounds R]\n"
            "\n"
            "Times one kernel table's f32 forward kernels on this thread, without the driver: Q.K^T,\n"
            "the online softmax and P.V of a %d-row query block against tiles of BK keys (default 64),\n"
            "and the three in sequence; first on one tile again and again (operands in cache), then\n"
            "walking N keys of K and V (default 4096) as an item of the forward does. Products in\n"
            "GFLOP/s and %% of the FMA probe (bench/peak.c) taken in the same run; the softmax in\n"
            "FMA-probe slots (one FMA of the table's vector width) per vector of scores. On AVX-512 it\n"
            "also times the avx512 score kernel's step with and without its loads and broadcasts:\n"
            "what they cost beside the FMAs on this core.\n"
            "  --isa NAME     ref | avx2 | avx512 | amx | avx512_bf16 (default: the library's choice)\n"
            "  --d LIST       head dims, D = Dv (default 64,128)\n"
            "  --keys N       keys walked (default 4096; a multiple of BK is taken)\n"
            "  --block-k BK   keys a tile (default 64)\n"
            "  --rounds R     timings per figure, the fastest reported (default 200)\n"
            "  --decode       instead: a decode step's kernels (one query row over stored K and V\n"
            "                 rows of each cache type, in cache), ns a key and the bytes they consume\n"
            "                 against the read probe of the same run\n"
            "  --decode-rows R  with --decode: R query rows (1..%d) a tile, the query heads of\n"
            "                 one kv head in a grouped-query decode (default 1)\n"
            "  --decode-run N   with --decode: the products called on runs of N keys (1..%d,\n"
            "                 default the whole tile), as the token order calls them (8)\n",
            ROWS, DECODE_MAX_ROWS, DECODE_TILE_KEYS);
}

/* --decode: the read probe at 1 thread, then the decode kernels against it */
static int decode_run(const fa_kernels_f32 *k, const int64_t *dims, int n_dims, int64_t rows, int64_t run,
                      int rounds, double fma_slot)
{
    bench_placement *placement = bench_placement_create();
    bench_stream stream = {0};
    if (bench_stream_init(&stream, bench_placement_l3_bytes(placement), 1) != 0) {
        bench_placement_destroy(placement);
        return 1;
    }
    const double read_gbps = bench_stream_read_gbps(&stream, 1, NULL, 1.0, NULL);
    bench_stream_free(&stream);
    bench_placement_destroy(placement);
    return decode_kernels_run(k, dims, n_dims, rows, run, rounds, fma_slot, read_gbps) == 0 ? 0 : 1;
}

/* A --decode option's value in [1, max], and given only with --decode (it means nothing without). */
static int decode_option_ok(const char *name, int64_t value, int64_t max, int given, int decode)
{
    if (value >= 1 && value <= max && (!given || decode)) return 1;
    fprintf(stderr, "fa-kernel-bench: expected 1 <= --%s <= %lld, and --decode with it\n", name,
            (long long)max);
    return 0;
}

int main(int argc, char **argv)
{
    const char *isa = NULL, *dim_list = "64,128";
    int64_t keys = 4096, block_k = 64, decode_rows = 1, decode_run_keys = DECODE_TILE_KEYS;
    int rounds = 200, decode = 0, decode_rows_given = 0, decode_run_given = 0;
    static const struct option long_opts[] = {{"isa", required_argument, NULL, 'i'},
                                              {"d", required_argument, NULL, 'd'},
                                              {"keys", required_argument, NULL, 'n'},
                                              {"block-k", required_argument, NULL, 'k'},
                                              {"rounds", required_argument, NULL, 'r'},
                                              {"decode", no_argument, NULL, 'D'},
                                              {"decode-rows", required_argument, NULL, 'R'},
                                              {"decode-run", required_argument, NULL, 'N'},
                                              {"help", no_argument, NULL, 'h'},
                                              {NULL, 0, NULL, 0}};
    for (int c; (c = getopt_long(argc, argv, "", long_opts, NULL)) != -1;) {
        switch (c) {
        case 'i': isa = optarg; break;
        case 'd': dim_list = optarg; break;
        case 'n': keys = atoll(optarg); break;
        case 'k': block_k = atoll(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        case 'D': decode = 1; break;
        case 'R': decode_rows = atoll(optarg), decode_rows_given = 1; break;
        case 'N': decode_run_keys = atoll(optarg), decode_run_given = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (keys < 1 || block_k < 1 || block_k > keys || rounds < 1) {
        fprintf(stderr, "fa-kernel-bench: expected 1 <= --block-k <= --keys and --rounds >= 1\n");
        return 2;
    }
    if (!decode_option_ok("decode-rows", decode_rows, DECODE_MAX_ROWS, decode_rows_given, decode) ||
        !decode_option_ok("decode-run", decode_run_keys, DECODE_TILE_KEYS, decode_run_given, decode))
        return 2;
    int64_t dims[KERNEL_BENCH_MAX_DIMS];
    const int n_dims = kernel_bench_parse_dims(dim_list, dims);
    if (n_dims < 0) {
        fprintf(stderr, "fa-kernel-bench: bad --d list '%s' (at most %d head dims of 1..%d)\n", dim_list,
                KERNEL_BENCH_MAX_DIMS, FA_MAX_HEAD_DIM);
        return 2;
    }
    fa_kernels_resolved table;
    if (isa) {
        const fa_kernels *t = fa_kernels_named(isa);
        if (!t || !fa_kernels_cpu_runs(t)) {
            fprintf(stderr, "fa-kernel-bench: kernel table '%s' is not in this build or this CPU lacks it\n",
                    isa);
            return 2;
        }
        fa_kernels_resolve(t, &table);
    } else if (fa_kernels_select("fa-kernel-bench", &table) != 0) {
        fprintf(stderr, "fa-kernel-bench: %s\n", fa_last_error());
        return 1;
    }
    bench_identity id;
    bench_identity_init(&id);
    bench_probe_isa probe_isa = bench_probe_isa_for_table(table.table.name);
    double peak = bench_peak_gflops(probe_isa, FA_F32, 1, NULL, 0.5, NULL);
    printf("fa-kernel-bench: kernel table %s, 1 thread; %s; %s %s build, source %s\n", table.table.name,
           id.cpu_model, id.compiler, id.build_type, id.git_revision);
    printf("FMA probe (%s, f32, 1 thread): %.1f GFLOP/s\n\n", bench_probe_isa_name(probe_isa), peak);

    /* seconds of one FMA of the table's vector width at the probe's rate (2 FLOP a lane) */
    const int lanes = table.table.f32->traits.lanes;
    const double fma_slot = 2.0 * lanes / (peak * 1e9);
    if (decode)
        return decode_run(table.table.f32, dims, n_dims, decode_rows, decode_run_keys, rounds, fma_slot);
    for (int d = 0; d < n_dims; d++) {
        const int64_t dim = dims[d];
        tile_bench b;
        if (tile_bench_init(&b, table.table.f32, dim, keys / block_k * block_k, block_k) != 0) {
            fprintf(stderr, "fa-kernel-bench: out of memory\n");
            return 1;
        }
        int64_t tiles = b.keys / block_k;
        double product_flop = 2.0 * ROWS * (double)block_k * (double)dim * (double)tiles;
        printf("D = Dv = %lld, %d rows x %lld keys a tile, %lld tiles\n", (long long)dim, ROWS,
               (long long)block_k, (long long)tiles);
        printf("  %-27s %22s %22s\n", "kernel", "one tile, in cache", "walking K and V");
        for (int w = STEP_SCORES; w <= STEP_TILE; w++) {
            double t[2];
            for (int walk = 0; walk < 2; walk++) t[walk] = tile_bench_time(&b, (step_kind)w, walk, rounds);
            printf("  %-27s", step_names[w]);
            for (int walk = 0; walk < 2; walk++) {
                if (w == STEP_SOFTMAX) {
                    double vectors = (double)ROWS / lanes * (double)block_k * (double)tiles;
                    printf(" %13.1f slots/vec", t[walk] / fma_slot / vectors);
                } else {
                    double flop = w == STEP_TILE ? 2 * product_flop : product_flop;
                    double gf = flop / t[walk] * 1e-9;
                    printf(" %9.1f GF/s %5.1f%%", gf, 100.0 * gf / peak);
                }
            }
            printf("\n");
        }
        printf("\n");
        tile_bench_free(&b);
    }
    if (port_costs_run_here()) {
        double peak512 = probe_isa == BENCH_PROBE_AVX512
                             ? peak
                             : bench_peak_gflops(BENCH_PROBE_AVX512, FA_F32, 1, NULL, 0.5, NULL);
        printf("What loads and broadcasts cost beside 512-bit FMAs (the avx512 score kernel's 6 x 4 step, in "
               "L1;\n"
               "the avx512 FMA probe %.1f GFLOP/s):\n",
               peak512);
        double base = port_costs_gflops(PORT_FMA_ONLY, 5);
        for (int v = 0; v < PORT_VARIANTS; v++) {
            double gf = v == PORT_FMA_ONLY ? base : port_costs_gflops((port_variant)v, 5);
            printf("  %-52s %7.1f GF/s %5.1f%% of the probe, %5.1f%% of registers only\n",
                   port_variant_name((port_variant)v), gf, 100.0 * gf / peak512, 100.0 * gf / base);
        }
    }
    return 0;
}
