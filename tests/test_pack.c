/* SPDX-License-Identifier: BSD-3-Clause */
/* The transposed pack (kernels.h, pack_transposed): every table the CPU runs, and the SIMD packs
 * called directly (whether or not a table points at them yet), give exactly the portable loop's
 * bytes (fa_pack_transposed_*: mult·x rounds once either way) at every residue of rows and dim, for
 * every padding ld, source stride and alignment; they read nothing past dim of any source row (each
 * row then ends at a page the process may not touch) and write nothing outside dst's dim rows of ld
 * elements. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernels/kernels.h"
#include "kernels/ref/ref_pack.h"
#include "plan/problem.h"
#include "runtime/dispatch.h"
#include "simd_tables.h"
#include "util.h"

typedef void (*pack_f32)(int64_t, int64_t, const float *, int64_t, float, float *, int64_t);
typedef void (*pack_f64)(int64_t, int64_t, const double *, int64_t, double, double *, int64_t);

typedef struct {
    const char *name;
    pack_f32 f32;
    pack_f64 f64;
} pack_impl;

#define MAX_IMPLS 8

/* Every table this CPU runs, resolved as a context resolves it, then the SIMD packs themselves. */
static int impls_of_this_cpu(pack_impl *out)
{
    static const char *const names[] = {"ref", "avx2", "avx512", "neon", "sve"};
    static fa_kernels_resolved resolved[5];
    int n = 0;
    for (int i = 0; i < 5; i++) {
        const fa_kernels *t = fa_kernels_named(names[i]);
        if (!t || !fa_kernels_cpu_runs(t)) continue;
        fa_kernels_resolve(t, &resolved[i]);
        out[n++] = (pack_impl){names[i], resolved[i].f32.pack_transposed, resolved[i].f64.pack_transposed};
    }
    for (int t = 0; t < st_count && n < MAX_IMPLS; t++)
        if (st_runs(&st_tables[t]))
            out[n++] = (pack_impl){st_tables[t].name, st_tables[t].pack_f32, st_tables[t].pack_f64};
    cr_assert(n >= 1 && n <= MAX_IMPLS);
    return n;
}

/* A mapping of `runs` runs of `run_pages` readable pages, each run followed by a page the process may
 * not touch: run i ends at map + (i + 1)·(run_pages + 1)·page - page. */
typedef struct {
    unsigned char *map;
    size_t len, page, run_pages;
} fenced_pages;

static fenced_pages fenced_alloc(size_t runs, size_t run_pages)
{
    fenced_pages f;
    f.page = (size_t)sysconf(_SC_PAGESIZE);
    f.run_pages = run_pages;
    f.len = runs * (run_pages + 1) * f.page;
    f.map = mmap(NULL, f.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(f.map != MAP_FAILED, "mmap of %zu bytes", f.len);
    for (size_t i = 0; i < runs; i++)
        cr_assert_eq(mprotect(f.map + ((i + 1) * (run_pages + 1) - 1) * f.page, f.page, PROT_NONE), 0);
    return f;
}

static unsigned char *fenced_run_end(const fenced_pages *f, size_t run)
{
    return f->map + ((run + 1) * (f->run_pages + 1) - 1) * f->page;
}

static void fenced_free(fenced_pages *f)
{
    munmap(f->map, f->len);
}

/* A source value: mostly uniform in [-4, 4), with signed zeros, infinities, NaN, subnormals and values
 * whose product with mult overflows or underflows mixed in, so that any second rounding or reordering
 * would show in the bytes. */
static double source_value(tu_rng *rng, int f64)
{
    switch (tu_rng_below(rng, 16)) {
    case 0: return -0.0;
    case 1: return INFINITY;
    case 2: return NAN;
    case 3: return f64 ? 3e-310 : 3e-40;
    case 4: return f64 ? 1.5e308 : 3e38;
    default: return tu_rng_uniform(rng, -4, 4);
    }
}

/* The multipliers: 1 (dO), a power of two, and the scale of a non-square head (rounds). */
static const double mults[] = {1.0, 0.125, 0.08838834764831845};
#define N_MULTS (sizeof mults / sizeof *mults)

static const int64_t dims[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14,
                               15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
                               29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 64, 128};
#define N_DIMS   (sizeof dims / sizeof *dims)
#define MAX_ROWS 33

/* Packs with `impl` and with the portable loop into two copies of one dst buffer (sentinel bytes
 * around and inside the dim × ld region, dst itself `dst_shift` elements past a 64-byte boundary)
 * and compares every byte of the two buffers. */
static void check_one(const pack_impl *impl, int f64, int64_t rows, int64_t dim, const void *src,
                      int64_t stride, double mult, int64_t ld, int64_t dst_shift, unsigned char *got,
                      unsigned char *want, size_t buf_bytes)
{
    size_t e = f64 ? sizeof(double) : sizeof(float);
    size_t at = 64 + (size_t)dst_shift * e; /* the sentinel bytes before dst */
    cr_assert(at + (size_t)(dim * ld) * e + 64 <= buf_bytes);
    buf_bytes = at + (size_t)(dim * ld) * e + 64; /* and as many after it */
    memset(got, 0xA5, buf_bytes);
    memset(want, 0xA5, buf_bytes);
    if (f64) {
        impl->f64(rows, dim, src, stride, mult, (double *)(void *)(got + at), ld);
        fa_pack_transposed_f64(rows, dim, src, stride, mult, (double *)(void *)(want + at), ld);
    } else {
        impl->f32(rows, dim, src, stride, (float)mult, (float *)(void *)(got + at), ld);
        fa_pack_transposed_f32(rows, dim, src, stride, (float)mult, (float *)(void *)(want + at), ld);
    }
    if (memcmp(got, want, buf_bytes) == 0) return;
    size_t first = 0;
    while (got[first] == want[first]) first++;
    cr_assert_fail("%s %s: rows %lld dim %lld stride %lld ld %lld dst +%lld mult %g: byte %zu of the buffer "
                   "(dst starts at byte %zu, ends at %zu) differs from the portable loop's",
                   impl->name, f64 ? "f64" : "f32", (long long)rows, (long long)dim, (long long)stride,
                   (long long)ld, (long long)dst_shift, mult, first, at, at + (size_t)(dim * ld) * e);
}

/* Every (rows, dim, ld, stride, source and dst alignment) of the grid: the source rows lie at the end
 * of a readable page, so the last row's last element is the last byte the process may read (or one
 * element before it, which shifts the alignment). */
static void every_residue(int f64)
{
    pack_impl impls[MAX_IMPLS];
    int n_impls = impls_of_this_cpu(impls);
    size_t e = f64 ? sizeof(double) : sizeof(float);
    int64_t pad = f64 ? FA_PAD_ELEMS_F64 : FA_PAD_ELEMS_F32;
    tu_rng rng = tu_rng_make(tu_test_part_seed(f64 ? "f64" : "f32"));

    int64_t max_stride = 128 + 7;
    size_t src_bytes = (size_t)(MAX_ROWS * max_stride + 1) * e;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    fenced_pages fence = fenced_alloc(1, (src_bytes + page - 1) / page);
    unsigned char *page_end = fenced_run_end(&fence, 0);

    size_t buf_bytes = 64 + (size_t)((MAX_ROWS + 2 * pad) * 128 + 1) * e + 64;
    unsigned char *got = malloc(buf_bytes), *want = malloc(buf_bytes);
    cr_assert(got && want);

    for (int64_t rows = 1; rows <= MAX_ROWS; rows++) {
        int64_t lds[3] = {rows, fa_round_up(rows, pad), fa_round_up(rows, pad) + pad};
        for (size_t di = 0; di < N_DIMS; di++) {
            int64_t dim = dims[di];
            int64_t strides[2] = {dim, dim + 1 + tu_rng_below(&rng, 7)};
            for (int si = 0; si < 2; si++) {
                int64_t stride = strides[si];
                for (int64_t gap = 0; gap < 2; gap++) {
                    size_t span = (size_t)((rows - 1) * stride + dim + gap) * e;
                    unsigned char *base = page_end - span;
                    /* every element of the span: values in the rows, NaN between them (never read) */
                    for (int64_t i = 0; i < (rows - 1) * stride + dim + gap; i++) {
                        double x =
                            i % stride < dim && i < (rows - 1) * stride + dim ? source_value(&rng, f64) : NAN;
                        if (f64)
                            memcpy(base + (size_t)i * e, &x, e);
                        else {
                            float y = (float)x;
                            memcpy(base + (size_t)i * e, &y, e);
                        }
                    }
                    double mult = mults[tu_rng_below(&rng, N_MULTS)];
                    for (int li = 0; li < 3; li++)
                        for (int64_t dst_shift = 0; dst_shift < 2; dst_shift++)
                            for (int k = 0; k < n_impls; k++)
                                check_one(&impls[k], f64, rows, dim, base, stride, mult, lds[li], dst_shift,
                                          got, want, buf_bytes);
                }
            }
        }
    }
    free(got);
    free(want);
    fenced_free(&fence);
}

Test(pack, f32_pack_of_every_table_gives_the_portable_loops_bytes_at_every_residue)
{
    every_residue(0);
}

Test(pack, f64_pack_of_every_table_gives_the_portable_loops_bytes_at_every_residue)
{
    every_residue(1);
}

/* Each source row ends where a forbidden page starts, so a read of any element past dim of any row
 * (not only of the last one) faults; the result is still the portable loop's. */
static void no_read_past_dim(int f64)
{
    pack_impl impls[MAX_IMPLS];
    int n_impls = impls_of_this_cpu(impls);
    size_t e = f64 ? sizeof(double) : sizeof(float);
    int64_t pad = f64 ? FA_PAD_ELEMS_F64 : FA_PAD_ELEMS_F32;
    tu_rng rng = tu_rng_make(tu_test_part_seed(f64 ? "f64" : "f32"));
    fenced_pages fence = fenced_alloc(MAX_ROWS, 1);
    int64_t stride = (int64_t)(2 * fence.page / e); /* row r at the end of run r */
    size_t buf_bytes = 64 + (size_t)((MAX_ROWS + 2 * pad) * 128 + 1) * e + 64;
    unsigned char *got = malloc(buf_bytes), *want = malloc(buf_bytes);
    cr_assert(got && want);
    for (size_t di = 0; di < N_DIMS; di++) {
        int64_t dim = dims[di];
        const unsigned char *src = fenced_run_end(&fence, 0) - (size_t)dim * e;
        for (int64_t r = 0; r < MAX_ROWS; r++) {
            unsigned char *row = fenced_run_end(&fence, (size_t)r) - (size_t)dim * e;
            for (int64_t x = 0; x < dim; x++) {
                double v = source_value(&rng, f64);
                if (f64)
                    memcpy(row + (size_t)x * e, &v, e);
                else {
                    float w = (float)v;
                    memcpy(row + (size_t)x * e, &w, e);
                }
            }
        }
        for (int64_t rows = 1; rows <= MAX_ROWS; rows++)
            for (int k = 0; k < n_impls; k++)
                check_one(&impls[k], f64, rows, dim, src, stride, 0.125, fa_round_up(rows, pad), 0, got, want,
                          buf_bytes);
    }
    free(got);
    free(want);
    fenced_free(&fence);
}

Test(pack, f32_pack_reads_nothing_past_dim_of_any_source_row)
{
    no_read_past_dim(0);
}

Test(pack, f64_pack_reads_nothing_past_dim_of_any_source_row)
{
    no_read_past_dim(1);
}
