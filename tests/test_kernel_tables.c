/* SPDX-License-Identifier: BSD-3-Clause */
/* Every kernel table against the portable one and the oracle.
 *
 * The tables (ref, avx2, avx512; neon, neon_bf16, sve, sve_bf16) share one contract
 * (src/kernels/kernels.h); a table is chosen per context, here forced with FLASHATTN_ISA around
 * fa_context_create. On each table this CPU runs, forward and backward must meet the oracle rules
 * of the main grids and agree with the ref table's results within the same bounds, on shapes that
 * put every residue at the edge of a vector (D, Dv around multiples of 8 and 16 elements) and of a
 * tile (N around the block sizes). A table the CPU lacks must be refused with FA_ERR_UNSUPPORTED,
 * never replaced. FA_TEST_SIMD, when set, names the tables compared with ref (simd_tables.h,
 * st_table_wanted). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_facts.h"
#include "flashattn.h"
#include "runtime/dispatch.h"
#include "simd_tables.h"
#include "util.h"
#include "util_backward.h"

/* Every table, and whether this CPU runs it: decided independently of the library (cpu_facts.h). */
#define tables   cf_tables
#define N_TABLES CF_TABLES
#define cpu_runs cf_table_runs

/* A context on `table`; the caller's FLASHATTN_ISA is put back afterwards. */
static fa_status context_on(const char *table, int block_q, int block_k, fa_context **ctx)
{
    const char *old = getenv("FLASHATTN_ISA");
    char saved[32] = "";
    int had = old != NULL;
    if (had) snprintf(saved, sizeof saved, "%s", old);
    setenv("FLASHATTN_ISA", table, 1);
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.block_q = block_q;
    o.block_k = block_k;
    o.num_threads = 2;
    fa_status st = fa_context_create(ctx, &o);
    if (had)
        setenv("FLASHATTN_ISA", saved, 1);
    else
        unsetenv("FLASHATTN_ISA");
    return st;
}

Test(kernel_tables, each_table_is_used_where_the_cpu_runs_it_and_refused_elsewhere)
{
    for (int t = 0; t < N_TABLES; t++) {
        fa_context *ctx = NULL;
        fa_status st = context_on(tables[t], 0, 0, &ctx);
        if (!cpu_runs(tables[t])) {
            cr_expect_eq(st, FA_ERR_UNSUPPORTED, "table %s: this CPU lacks it, status %s", tables[t],
                         fa_status_str(st));
            /* the diagnostic names the variable and says it is the CPU, not the build, that lacks it */
            cr_expect(strstr(fa_last_error(), "FLASHATTN_ISA=") && strstr(fa_last_error(), "this CPU"),
                      "\"%s\"", fa_last_error());
            continue;
        }
        cr_assert_eq(st, FA_OK, "table %s: %s", tables[t], fa_status_str(st));
        fa_stats s = FA_STATS_INIT;
        cr_assert_eq(fa_context_stats(ctx, &s), FA_OK);
        cr_expect_str_eq(s.isa, tables[t]);
        fa_context_destroy(ctx);
    }
    fa_context *ctx = NULL;
    cr_expect_eq(context_on("sse9", 0, 0, &ctx), FA_ERR_ARG, "an unknown table name is an argument error");
    cr_expect_str_eq(fa_last_error(), "fa_context_create: FLASHATTN_ISA=sse9: expected ref, avx2, avx512, "
                                      "avx512_bf16, amx, neon, neon_bf16, "
                                      "sve, sve_bf16 or auto");
    /* "auto" is the automatic choice, as if the variable were unset */
    cr_assert_eq(context_on("auto", 0, 0, &ctx), FA_OK, "%s", fa_last_error());
    fa_stats s = FA_STATS_INIT;
    cr_assert_eq(fa_context_stats(ctx, &s), FA_OK);
    cr_expect_str_eq(s.isa, cf_best_table(), "FLASHATTN_ISA=auto picks the best table this CPU runs");
    fa_context_destroy(ctx);
}

/* The automatic choice as a function of the CPU (runtime/dispatch.h), for CPUs this machine is not:
 * AMD's Zen 4 and Zen 5 (families 25 and 26) with AVX512-BF16 take the bf16 dot-product table;
 * every Intel CPU keeps its choice, amx where the tiles run and avx512 otherwise, AVX512-BF16 or
 * not (on the Xeon measured vdpbf16ps ran at half the f32 kernels' rate); so does any other maker,
 * and an AMD family not measured. */
Test(kernel_tables, automatic_choice_takes_vdpbf16ps_on_amd_zen4_and_zen5_only)
{
    if (!fa_kernels_named("avx512_bf16")) cr_skip_test("this build has no x86-64 tables");
    const unsigned avx2 = FA_CPU_AVX2 | FA_CPU_FMA | FA_CPU_F16C,
                   avx512 = avx2 | FA_CPU_AVX512F | FA_CPU_AVX512DQ | FA_CPU_AVX512BW | FA_CPU_AVX512VL,
                   bf16 = avx512 | FA_CPU_AVX512BF16, amx = bf16 | FA_CPU_AMX_BF16;
    static const char *const shown[] = {"other", "Intel", "AMD"};
    const struct {
        fa_cpu_model cpu;
        unsigned features;
        const char *want;
    } rows[] = {
        {{FA_CPU_AMD, 25, 17}, bf16, "avx512_bf16"}, /* Zen 4, EPYC 9004 */
        {{FA_CPU_AMD, 25, 97}, bf16, "avx512_bf16"}, /* Zen 4, Ryzen 7000 */
        {{FA_CPU_AMD, 26, 2}, bf16, "avx512_bf16"},  /* Zen 5, EPYC 9005 */
        {{FA_CPU_AMD, 25, 17}, avx512, "avx512"},    /* a hypervisor hiding AVX512-BF16 */
        {{FA_CPU_AMD, 25, 1}, avx2, "avx2"},         /* Zen 3 */
        {{FA_CPU_AMD, 23, 49}, avx2, "avx2"},        /* Zen 2 */
        {{FA_CPU_AMD, 27, 0}, bf16, "avx512"},       /* not measured */
        {{FA_CPU_INTEL, 6, 143}, amx, "amx"},        /* Sapphire Rapids */
        {{FA_CPU_INTEL, 6, 167}, amx, "amx"},        /* the VM's Xeon, as its hypervisor names it */
        {{FA_CPU_INTEL, 6, 143}, bf16, "avx512"},    /* the same without the tile permission */
        {{FA_CPU_INTEL, 6, 85}, bf16, "avx512"},     /* Cooper Lake */
        {{FA_CPU_INTEL, 6, 106}, avx512, "avx512"},  /* Ice Lake */
        {{FA_CPU_INTEL, 6, 151}, avx2, "avx2"},      /* Alder Lake */
        {{FA_CPU_OTHER, 0, 0}, bf16, "avx512"},      /* another maker, or no CPUID */
        {{FA_CPU_AMD, 25, 17}, 0, "ref"},            /* nothing runs */
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        const fa_kernels *t = fa_kernels_automatic(rows[i].cpu, rows[i].features);
        cr_expect_str_eq(t->name, rows[i].want, "%s family %u model %u, features 0x%x: %s, want %s",
                         shown[rows[i].cpu.vendor], rows[i].cpu.family, rows[i].cpu.model, rows[i].features,
                         t->name, rows[i].want);
    }
    /* and on this machine, the context takes what the function gives for its CPU */
    fa_context *ctx = NULL;
    cr_assert_eq(context_on("auto", 0, 0, &ctx), FA_OK, "%s", fa_last_error());
    fa_stats s = FA_STATS_INIT;
    cr_assert_eq(fa_context_stats(ctx, &s), FA_OK);
    cr_expect_str_eq(s.isa, fa_kernels_automatic(fa_cpu_identify(), fa_cpu_features())->name);
    fa_context_destroy(ctx);
}

/* Residues: dims at 1, 7/8/9 (f64 vector of 8), 15/16/17 (f32 vector of 16), 33, 64;
 * lengths around the blocks; blocks 16/16 (whole vectors), 5/7 (odd), 17/33, and automatic. */
static const int64_t dims[] = {1, 7, 8, 9, 15, 16, 17, 33, 64};
static const int64_t dims_v[] = {1, 9, 16, 17, 31};
static const int64_t lens[] = {1, 7, 16, 17, 40};
static const int blocks[][2] = {{16, 16}, {5, 7}, {17, 33}, {0, 0}};
#define N_CASES 18

static void case_shape(int c, fa_dtype dtype, tu_shape *s, fa_params *p, int *bq, int *bk)
{
    /* strides through the value lists chosen so that the cases spread over every value of each */
    s->dtype = dtype;
    s->batch = 1 + c % 2;
    s->q_heads = 2;
    s->kv_heads = c % 3 == 0 ? 2 : 1;
    s->q_len = lens[c % 5];
    s->kv_len = lens[(c * 3 + 1) % 5];
    s->dim = dims[c % 9];
    s->dim_v = dims_v[(c * 2 + 1) % 5];
    s->layout = (tu_layout)(c % 3);
    *p = (fa_params)FA_PARAMS_INIT;
    p->causal = (fa_causal)(c % 3);
    *bq = blocks[c % 4][0];
    *bk = blocks[c % 4][1];
}

/* Largest |x - y| over two equally shaped views, and the largest |y|. */
static void view_diff(const fa_tensor *x, const double *y, double *err, double *scale)
{
    tub_err e = tub_compare_view(x, y, NULL);
    *err = e.mismatches ? INFINITY : e.max_err;
    *scale = e.max_ref;
}

static void check_dtype(fa_dtype dtype)
{
    uint64_t seed = tu_test_part_seed(dtype == FA_F64 ? "f64" : "f32");
    for (int c = 0; c < N_CASES; c++) {
        tu_shape s;
        fa_params p;
        int bq, bk;
        case_shape(c, dtype, &s, &p, &bq, &bk);
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tub_problem bp;
        tub_make(&bp, &s, &rng, 2.0);
        tub_ref oracle, naive;
        tub_ref_compute(&oracle, &bp, &p);
        if (dtype == FA_F32) tub_ref_compute_naive_f32(&naive, &bp, &p);
        int64_t *rows;
        int64_t n_rows = tu_pick_rows(&bp.fw, &p, 1 << 30, &rows);
        char desc[256], msg[512];
        tub_desc(&bp, &p, bq, bk, desc, sizeof desc);

        double *ref_table[4] = {NULL, NULL, NULL, NULL}; /* ref table's out, dq, dk, dv */
        for (int t = 0; t < N_TABLES; t++) {
            /* ref (t = 0) always: the others are held to its results */
            if (!cpu_runs(tables[t]) || (t > 0 && !st_table_wanted(tables[t]))) continue;
            fa_context *ctx;
            cr_assert_eq(context_on(tables[t], bq, bk, &ctx), FA_OK, "%s on %s", desc, tables[t]);
            cr_assert_eq(tub_forward(ctx, &p, &bp), FA_OK, "%s on %s", desc, tables[t]);
            cr_assert_eq(tub_backward(ctx, &p, &bp), FA_OK, "%s on %s", desc, tables[t]);
            fa_context_destroy(ctx);

            cr_expect(tu_check_accuracy(&bp.fw, &p, rows, n_rows, 1e-12, msg, sizeof msg),
                      "table %s, %s, seed %llu: forward %s", tables[t], desc, (unsigned long long)seed, msg);
            cr_expect(
                tub_check_accuracy(&bp, &p, &oracle, dtype == FA_F32 ? &naive : NULL, 1e-11, msg, sizeof msg),
                "table %s, %s, seed %llu: backward %s", tables[t], desc, (unsigned long long)seed, msg);

            const fa_tensor *got[4] = {&bp.fw.out, &bp.grad[0], &bp.grad[1], &bp.grad[2]};
            if (t == 0) {
                for (int g = 0; g < 4; g++) ref_table[g] = tub_view_copy(got[g]);
                continue;
            }
            /* Directly against the ref table: within what the oracle rule allows either of them. */
            for (int g = 0; g < 4; g++) {
                double err, size;
                view_diff(got[g], ref_table[g], &err, &size);
                double allowed;
                if (dtype == FA_F64) {
                    /* Relative to the result's size; for gradients at least 1e-4 of their a-priori
                     * bound, as in the backward rule: where the exact gradient is 0 (a row seeing one
                     * key) both tables hold only rounding noise of order eps times that bound. */
                    double bound[3];
                    tub_grad_bounds(&bp, &p, bound);
                    double floor = g == 0 ? 1e-300 : 1e-4 * bound[g - 1];
                    allowed = 2e-12 * (size > floor ? size : floor);
                } else {
                    double naive_err;
                    if (g == 0) {
                        tu_ref nf, of;
                        tu_ref_compute_naive_f32(&nf, &bp.fw, &p, rows, n_rows);
                        tu_ref_compute(&of, &bp.fw, &p, rows, n_rows);
                        naive_err = tu_compare_ref_out(&nf, &of).max_err;
                        tu_ref_free(&nf);
                        tu_ref_free(&of);
                    } else {
                        int64_t n = tub_numel(got[g]);
                        naive_err =
                            tub_compare_arrays(naive.grad[g - 1], oracle.grad[g - 1], n, NULL).max_err;
                    }
                    allowed = 4.0 * naive_err + (g == 0 ? 2e-6 : 2e-5);
                }
                static const char *const names[4] = {"out", "dq", "dk", "dv"};
                cr_expect(err <= allowed, "table %s vs ref, %s, seed %llu: %s differs by %.3g > %.3g",
                          tables[t], desc, (unsigned long long)seed, names[g], err, allowed);
            }
        }
        for (int g = 0; g < 4; g++) free(ref_table[g]);
        free(rows);
        tub_ref_free(&oracle);
        if (dtype == FA_F32) tub_ref_free(&naive);
        tub_free(&bp);
    }
}

Test(kernel_tables, f64_every_table_matches_ref_table_and_oracle_at_every_edge_residue)
{
    check_dtype(FA_F64);
}

Test(kernel_tables, f32_every_table_matches_ref_table_and_oracle_at_every_edge_residue)
{
    check_dtype(FA_F32);
}

/* ---- modify and scale_grad, table by table (white-box: the tables are internal) -----------------
 * Each table's modify against the ref table's on the same tile, and every table (ref included)
 * against the modifiers computed here in double from the tile's input: every combination of softcap
 * (off, 2.5 where most scores saturate, 30; with and without its derivative), ALiBi (off, distances
 * negative, small positive, and 2^25 + 1, which float rounds), and bias (off, one row for all rows,
 * a row per query row at two strides), with bias_rows = ld, ld - 5 (a partial vector), 1 and 0, on
 * tiles whose ld is the padding unit or crosses the tables' 256-row chunks and whose cols are odd
 * or cross their 64-column chunks. Scores include NaN, ±inf, ±0, subnormal and huge values; bias
 * entries include -inf. The bias ends at a page the process may not read, so a read past the last
 * real row's last column, or of the rows at or beyond bias_rows, crashes the test.
 *
 * Documented tolerances:
 *  - softcap off, f64 throughout, and any input that is NaN, ±inf or ±0: the ref table's bits (NaN
 *    for NaN). ALiBi and bias are the same IEEE operations in the same order in every table, and
 *    the f64 tables call libm's tanh as ref does.
 *  - f32 softcap on a finite input: |table - ref| <= 7ε·cap + ε·(|alibi term| + |ref|) (ε =
 *    FLT_EPSILON): the two tanh differ by at most 5ε relative (the tables' 1.3 ulp, glibc tanhf's
 *    2.2, and s·(1/cap) against s/cap, 1.5ε), times cap; cap·tanh rounds on each side (ε·cap), and
 *    so does each later operation (at most ε·(cap + |alibi term| + |ref|) for both together). Its
 *    derivative 1 - tanh²: within 12ε.
 *  - against the double computation: the same with twice the room (it has no rounding of its own),
 *    for f64 with DBL_EPSILON.
 * scale_grad must give the IEEE product ds·dcap exactly. Neither kernel writes outside its tile's
 * cols columns, and modify leaves dcap alone when softcap is off. */
#include <float.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "simd_tables.h"

/* A block whose last byte is followed by a page the process may not touch. */
typedef struct {
    void *map;
    size_t map_len;
    void *data;
} guarded_block;

static void *guarded_alloc(guarded_block *g, size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    g->map_len = (bytes + page - 1) / page * page + page;
    g->map = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(g->map != MAP_FAILED, "mmap of %zu bytes", g->map_len);
    cr_assert_eq(mprotect((char *)g->map + g->map_len - page, page, PROT_NONE), 0);
    g->data = (char *)g->map + g->map_len - page - bytes;
    return g->data;
}

static void guarded_free(guarded_block *g)
{
    munmap(g->map, g->map_len);
}

/* Element i of a float or double array, as double (exact), and the reverse (rounded once). */
static double elem_get(int f64, const void *a, int64_t i)
{
    return f64 ? ((const double *)a)[i] : ((const float *)a)[i];
}

static void elem_set(int f64, void *a, int64_t i, double v)
{
    if (f64)
        ((double *)a)[i] = v;
    else
        ((float *)a)[i] = (float)v;
}

static int same_bits(int f64, const void *a, const void *b, int64_t i)
{
    if (isnan(elem_get(f64, a, i)) || isnan(elem_get(f64, b, i)))
        return isnan(elem_get(f64, a, i)) && isnan(elem_get(f64, b, i));
    size_t es = f64 ? sizeof(double) : sizeof(float);
    return memcmp((const char *)a + i * (int64_t)es, (const char *)b + i * (int64_t)es, es) == 0;
}

typedef struct {
    const char *name;
    const fa_kernels_f32 *f32;
    const fa_kernels_f64 *f64;
} table_halves;

/* ref, then every SIMD table of the build (simd_tables.h); returns how many. */
#define MAX_HALVES 8
static int all_halves(table_halves *all)
{
    all[0] = (table_halves){"ref", fa_kernels_ref.f32, fa_kernels_ref.f64};
    for (int t = 0; t < st_count && t + 1 < MAX_HALVES; t++)
        all[t + 1] = (table_halves){st_tables[t].name, st_tables[t].f32, st_tables[t].f64};
    return 1 + (st_count < MAX_HALVES - 1 ? st_count : MAX_HALVES - 1);
}

static int halves_run(const table_halves *t)
{
    if (strcmp(t->name, "ref") == 0) return 1;
    for (int i = 0; i < st_count; i++)
        if (strcmp(st_tables[i].name, t->name) == 0) return st_runs(&st_tables[i]);
    return 0;
}

static void run_modify(const table_halves *t, int f64, const fa_score_mods *m, int64_t ld, int64_t cols,
                       void *s, void *dcap)
{
    if (f64)
        t->f64->modify(m, ld, cols, s, dcap);
    else
        t->f32->modify(m, ld, cols, s, dcap);
}

/* One combination of modifiers. */
typedef struct {
    double softcap;
    int want_d;
    double slope;
    int64_t dist0;
    int bias;             /* 0 none, 1 stride 0, 2 stride cols + 3, 3 stride 1000 */
    int64_t bias_rows_of; /* 0: ld, 1: ld - 5, 2: 1, 3: 0 */
} mods_case;

static const double caps[][2] = {{0, 0}, {2.5, 0}, {2.5, 1}, {30, 1}};
static const struct {
    double slope;
    int64_t dist0;
} alibis[] = {{0, 0}, {0.3, -300}, {0.0625, 7}, {0.3, (INT64_C(1) << 25) + 1}};

/* What the double computation allows: see the block comment above. */
static double allowed_error(int f64, double cap, double alibi, double want)
{
    double eps = f64 ? DBL_EPSILON : FLT_EPSILON;
    return 7 * eps * cap + eps * (fabs(alibi) + fabs(want));
}

/* Checks one table on one tile and combination against ref's result and the double computation.
 * Returns the number of mismatches; the first is described in msg. */
static int64_t check_modify_case(const table_halves *t, const table_halves *ref, int f64, int64_t ld,
                                 int64_t cols, const mods_case *mc, tu_rng *rng, char *msg, size_t msg_size)
{
    size_t es = f64 ? sizeof(double) : sizeof(float);
    int64_t n = ld * (cols + 1); /* one column more than the tile: must stay untouched */
    int64_t bias_rows = mc->bias_rows_of == 0   ? ld
                        : mc->bias_rows_of == 1 ? ld - 5
                        : mc->bias_rows_of == 2 ? 1
                                                : 0;
    int64_t stride = mc->bias == 1 ? 0 : mc->bias == 2 ? cols + 3 : 1000;
    void *in = aligned_alloc(64, (size_t)n * es), *got = aligned_alloc(64, (size_t)n * es);
    void *want = aligned_alloc(64, (size_t)n * es), *d_got = aligned_alloc(64, (size_t)n * es);
    void *d_want = aligned_alloc(64, (size_t)n * es);
    static const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-40, -1e30, 1e30};
    for (int64_t i = 0; i < n; i++) {
        double v = tu_rng_below(rng, 12) == 0 ? specials[tu_rng_below(rng, 8)] : tu_rng_uniform(rng, -40, 40);
        elem_set(f64, in, i, v);
        elem_set(f64, d_got, i, 12345.0);
    }
    memcpy(d_want, d_got, (size_t)n * es);
    /* the bias ends at the guard page: rows at or beyond bias_rows and columns past cols lie beyond it */
    guarded_block g = {0};
    int64_t bias_n = !mc->bias || bias_rows == 0 ? 0 : stride == 0 ? cols : (bias_rows - 1) * stride + cols;
    void *bias = guarded_alloc(&g, (size_t)bias_n * es);
    for (int64_t i = 0; i < bias_n; i++)
        elem_set(f64, bias, i, tu_rng_below(rng, 20) == 0 ? -INFINITY : tu_rng_uniform(rng, -3, 3));
    fa_score_mods m = {mc->softcap, mc->slope, mc->dist0, mc->bias ? bias : NULL, stride, bias_rows};

    memcpy(got, in, (size_t)n * es);
    memcpy(want, in, (size_t)n * es);
    run_modify(t, f64, &m, ld, cols, got, mc->want_d ? d_got : NULL);
    run_modify(ref, f64, &m, ld, cols, want, mc->want_d ? d_want : NULL);

    int64_t bad = 0;
    double eps = f64 ? DBL_EPSILON : FLT_EPSILON;
    for (int64_t c = 0; c <= cols; c++)
        for (int64_t r = 0; r < ld; r++) {
            int64_t i = c * ld + r;
            double x = elem_get(f64, in, i), g_s = elem_get(f64, got, i), w_s = elem_get(f64, want, i);
            double g_d = elem_get(f64, d_got, i), w_d = elem_get(f64, d_want, i);
            const char *what = NULL;
            if (c == cols) {
                if (!same_bits(f64, got, in, i))
                    what = "a score outside the tile changed";
                else if (g_d != 12345.0)
                    what = "dcap outside the tile written";
            } else {
                /* the double computation, rounded as the tables round their inputs */
                double cap = f64 ? mc->softcap : (float)mc->softcap,
                       slope = f64 ? mc->slope : (float)mc->slope;
                int64_t dist = mc->dist0 + r - c;
                double alibi = mc->slope != 0 ? slope * (f64 ? (double)llabs(dist) : (float)llabs(dist)) : 0;
                double b = mc->bias && r < bias_rows ? elem_get(f64, bias, r * stride + c) : 0;
                double th = tanh(x / cap), s64 = (mc->softcap > 0 ? cap * th : x) - alibi + b;
                int exact = mc->softcap == 0 || f64 || !isfinite(x) || x == 0;
                if (exact
                        ? !same_bits(f64, got, want, i)
                        : !(isinf(w_s) || isinf(g_s) ? g_s == w_s
                                                     : fabs(g_s - w_s) <= allowed_error(0, cap, alibi, w_s)))
                    what = "score differs from ref's";
                else if (isnan(s64) || isinf(s64)
                             ? !(isnan(s64) ? isnan(g_s) : g_s == s64)
                             : !(fabs(g_s - s64) <= 2 * allowed_error(f64, cap, alibi, s64)))
                    what = "score differs from the double computation";
                else if (mc->want_d) {
                    double d64 = 1 - th * th;
                    if (f64          ? !same_bits(1, d_got, d_want, i)
                        : isnan(w_d) ? !isnan(g_d)
                                     : !(fabs(g_d - w_d) <= 12 * eps))
                        what = "dcap differs from ref's";
                    else if (isnan(d64) ? !isnan(g_d) : !(fabs(g_d - d64) <= 24 * eps))
                        what = "dcap differs from 1 - tanh^2";
                } else if (g_d != 12345.0)
                    what = "dcap written without a softcap derivative asked";
            }
            if (what && bad++ == 0)
                snprintf(msg, msg_size,
                         "%s: ld %lld cols %lld, softcap %g%s, alibi %g at %lld, bias %d (rows %lld), at c "
                         "%lld r %lld: "
                         "input %.9g, table %.9g, ref %.9g, dcap %.9g vs %.9g",
                         what, (long long)ld, (long long)cols, mc->softcap, mc->want_d ? " with dcap" : "",
                         mc->slope, (long long)mc->dist0, mc->bias, (long long)bias_rows, (long long)c,
                         (long long)r, x, g_s, w_s, g_d, w_d);
        }
    guarded_free(&g);
    free(in);
    free(got);
    free(want);
    free(d_got);
    free(d_want);
    return bad;
}

static void check_modify(int f64)
{
    table_halves all[MAX_HALVES];
    const int n_all = all_halves(all);
    int64_t pad = f64 ? FA_PAD_ELEMS_F64 : FA_PAD_ELEMS_F32;
    /* the padding unit; 3 units; past the tables' 256-row chunk; odd cols, and past their 64-column chunk */
    const int64_t shapes[][2] = {{pad, 1}, {pad, 7}, {3 * pad, 17}, {256 + pad, 70}, {2 * pad, 129}};
    uint64_t seed = tu_test_part_seed(f64 ? "f64" : "f32");
    for (int ti = 0; ti < n_all; ti++) {
        if (!halves_run(&all[ti])) {
            cr_log_info("%s: not on this CPU, its modifiers are exercised on machines that have it",
                        all[ti].name);
            continue;
        }
        tu_rng rng = tu_rng_make(seed);
        int64_t bad = 0, cases = 0;
        char msg[512] = "";
        for (int sh = 0; sh < 5; sh++)
            for (int ci = 0; ci < 4; ci++)
                for (int ai = 0; ai < 4; ai++)
                    for (int bi = 0; bi < 13; bi++) {
                        mods_case mc = {caps[ci][0],
                                        (int)caps[ci][1],
                                        alibis[ai].slope,
                                        alibis[ai].dist0,
                                        bi == 0 ? 0 : 1 + (bi - 1) / 4,
                                        bi == 0 ? 0 : (bi - 1) % 4};
                        char one[512];
                        int64_t b = check_modify_case(&all[ti], &all[0], f64, shapes[sh][0], shapes[sh][1],
                                                      &mc, &rng, one, sizeof one);
                        if (b && !bad) snprintf(msg, sizeof msg, "%s", one);
                        bad += b;
                        cases++;
                    }
        cr_expect(bad == 0, "table %s %s modify, seed %llu: %lld mismatches over %lld cases; first: %s",
                  all[ti].name, f64 ? "f64" : "f32", (unsigned long long)seed, (long long)bad,
                  (long long)cases, msg);

        /* scale_grad: the IEEE product, and nothing outside the tile */
        int64_t ld = 3 * pad, cols = 17, n = ld * (cols + 1);
        size_t es = f64 ? sizeof(double) : sizeof(float);
        void *ds = aligned_alloc(64, (size_t)n * es), *dcap = aligned_alloc(64, (size_t)n * es);
        void *ds0 = malloc((size_t)n * es);
        for (int64_t i = 0; i < n; i++) {
            elem_set(f64, ds, i, tu_rng_uniform(&rng, -5, 5));
            elem_set(f64, dcap, i, tu_rng_uniform(&rng, 0, 1));
        }
        memcpy(ds0, ds, (size_t)n * es);
        if (f64)
            all[ti].f64->scale_grad(ld, cols, ds, dcap);
        else
            all[ti].f32->scale_grad(ld, cols, ds, dcap);
        int64_t wrong = 0;
        for (int64_t i = 0; i < n; i++) {
            double p = elem_get(f64, ds0, i) * elem_get(f64, dcap, i); /* exact for float operands */
            double want = i < ld * cols ? (f64 ? p : (float)p) : elem_get(f64, ds0, i);
            wrong += elem_get(f64, ds, i) != want;
        }
        cr_expect(wrong == 0,
                  "table %s %s scale_grad: %lld of %lld values are not ds·dcap (or changed outside)",
                  all[ti].name, f64 ? "f64" : "f32", (long long)wrong, (long long)n);
        free(ds);
        free(dcap);
        free(ds0);
    }
}

Test(kernel_tables, f32_modify_and_scale_grad_of_every_table_match_ref_and_the_double_computation)
{
    check_modify(0);
}

Test(kernel_tables, f64_modify_and_scale_grad_of_every_table_give_refs_bits_and_match_the_double_computation)
{
    check_modify(1);
}

/* Whether element i of a one-byte row is a NaN code of type t (every other value widens to a number). */
static int widened_is_nan(const void *row, fa_dtype t, int64_t i)
{
    const uint8_t b = ((const uint8_t *)row)[i];
    if (t == FA_F8_E4M3) return (b & 0x7f) == 0x7f;
    if (t == FA_F8_E5M2) return (b & 0x7c) == 0x7c && (b & 0x03) != 0;
    return 0; /* FA_I8 */
}

/* widen: every table's bits are ref's, for every bf16 and f16 bit pattern and every code of the
 * one-byte types (NaNs, infinities, subnormals included), times row scales of every kind (ordinary,
 * tiny, huge enough to overflow, zero, negative, NaN, infinite), at every residue of a row's length
 * against the tables' 8- and 16-element steps, at an odd source offset and stride (any alignment),
 * and nothing outside the rows' dim elements is written (a NaN scale times a NaN element may be any
 * NaN: IEEE 754 does not say which payload that product keeps). ref's own exactness is test_half_rounding.c's
 * and test_quant.c's. */
Test(kernel_tables, widen_of_every_table_gives_refs_bits_for_every_stored_pattern_and_scale)
{
    table_halves all[MAX_HALVES];
    const int n_all = all_halves(all);
    const int64_t rows = 3, stride = 67, dst_stride = 71; /* odd: rows start at every alignment */
    uint16_t *src = malloc((size_t)(rows * stride + 1) * sizeof(uint16_t));
    float *want = malloc((size_t)(rows * dst_stride) * sizeof(float)),
          *got = malloc((size_t)(rows * dst_stride) * sizeof(float));
    cr_assert(src && want && got);
    static const fa_dtype types[] = {FA_BF16, FA_F16, FA_I8, FA_F8_E4M3, FA_F8_E5M2};
    /* three rows' scales per set; NULL for the half types */
    static const float scales[][3] = {{1.0f, 0.5f, -3.25f},
                                      {0x1p-140f, 0x1.8p126f, 6.1e-5f},
                                      {0.0f, -0.0f, INFINITY},
                                      {NAN, -INFINITY, 0.0078125f}};
    for (int ti = 1; ti < n_all; ti++) {
        if (!halves_run(&all[ti])) {
            cr_log_info("%s: not on this CPU, its widen is exercised on machines that have it", all[ti].name);
            continue;
        }
        cr_assert_not_null(all[ti].f32->widen, "%s: the f32 half has no widen", all[ti].name);
        for (int t = 0; t < 5; t++) {
            const int one_byte = types[t] != FA_BF16 && types[t] != FA_F16;
            const uint32_t patterns = one_byte ? 256 : 65536;
            for (int sc = 0; sc < (one_byte ? 4 : 1); sc++)
                for (uint32_t base = 0; base < patterns; base += (uint32_t)(rows * stride))
                    for (int64_t dim = 1; dim <= 64; dim += dim < 40 ? 1 : 23) {
                        /* every pattern appears over the bases; one element past src makes the rows
                         * odd-aligned */
                        const void *rows_at;
                        if (one_byte) {
                            uint8_t *b = (uint8_t *)src + 1;
                            for (int64_t i = 0; i < rows * stride; i++) b[i] = (uint8_t)(base + (uint32_t)i);
                            rows_at = b;
                        } else {
                            for (int64_t i = 0; i < rows * stride; i++)
                                src[1 + i] = (uint16_t)(base + (uint32_t)i);
                            rows_at = src + 1;
                        }
                        const float *scale = one_byte ? scales[sc] : NULL;
                        for (int64_t i = 0; i < rows * dst_stride; i++) want[i] = got[i] = -1.0f;
                        fa_kernels_ref.f32->widen(rows, dim, rows_at, stride, types[t], scale, 1, want,
                                                  dst_stride);
                        all[ti].f32->widen(rows, dim, rows_at, stride, types[t], scale, 1, got, dst_stride);
                        for (int64_t i = 0; i < rows * dst_stride; i++) {
                            /* a NaN scale times a NaN element is the one case whose bits IEEE 754 leaves
                             * open (which operand's payload the product keeps: the compiler's operand
                             * order decides); there any NaN is the exact answer */
                            const int64_t r = i / dst_stride, x = i % dst_stride;
                            const int both_nan = scale && x < dim && isnan(scale[r]) && isnan(want[i]) &&
                                                 isnan(got[i]) &&
                                                 widened_is_nan(rows_at, types[t], r * stride + x);
                            cr_assert(
                                memcmp(&want[i], &got[i], sizeof(float)) == 0 || both_nan,
                                "%s, dtype %d, scales %d, dim %lld, patterns from 0x%x, element %lld: widen "
                                "differs from ref's",
                                all[ti].name, (int)types[t], sc, (long long)dim, base, (long long)i);
                        }
                    }
        }
    }
    free(src), free(want), free(got);
}

/* widen of every table (ref included) gives, for all 256 codes of each one-byte type, exactly the bits
 * of the scalar definitions (kernels/quant.h: fa_stored_value), NaN codes (sign and payload),
 * infinities and subnormals included: one row of every code in turn from each of 16 starting codes,
 * so every code passes through every lane of the tables' 8- and 16-element conversions, times
 * scales 1 (the conversion's own bits), -1, a power of two near the top of the range (256 times it
 * overflows) and a subnormal one. The test above covers the scales and alignments at random. */
Test(kernel_tables, widen_of_every_table_gives_the_scalar_bits_for_all_256_codes_in_every_lane)
{
    table_halves all[MAX_HALVES];
    const int n_all = all_halves(all);
    static const fa_dtype types[] = {FA_I8, FA_F8_E4M3, FA_F8_E5M2};
    static const float scales[] = {1.0f, -1.0f, 0x1p120f, 0x1p-140f};
    uint8_t codes[256];
    float want[256], got[256];
    for (int ti = 0; ti < n_all; ti++) {
        if (!halves_run(&all[ti])) {
            cr_log_info("%s: not on this CPU, its widen is exercised on machines that have it", all[ti].name);
            continue;
        }
        for (int t = 0; t < 3; t++)
            for (int first = 0; first < 16; first++)
                for (size_t sc = 0; sc < sizeof scales / sizeof *scales; sc++) {
                    for (int i = 0; i < 256; i++) codes[i] = (uint8_t)(first + i);
                    for (int i = 0; i < 256; i++) {
                        want[i] = fa_stored_value(types[t], codes, i, &scales[sc]);
                        got[i] = -1.0f;
                    }
                    all[ti].f32->widen(1, 256, codes, 256, types[t], &scales[sc], 1, got, 256);
                    for (int i = 0; i < 256; i++)
                        cr_assert(
                            memcmp(&want[i], &got[i], sizeof(float)) == 0,
                            "%s, dtype %d, scale %a: code 0x%02x in lane %d widens to %a (bits 0x%08x), "
                            "the scalar definition to %a (0x%08x)",
                            all[ti].name, (int)types[t], (double)scales[sc], codes[i], i % 16, (double)got[i],
                            (unsigned)fa_half_float_bits(got[i]), (double)want[i],
                            (unsigned)fa_half_float_bits(want[i]));
                }
    }
}
