/* SPDX-License-Identifier: BSD-3-Clause */
/* The decode products over stored rows (kernels.h, scores_stored and accumulate_stored): for every
 * table this CPU runs and every type a cache's rows are read in place in (f32 itself, for a paged
 * cache; bf16, f16; int8, FP8 E4M3 and E5M2 with their row scales), they give bit for bit what the
 * same table's scores and accumulate give on the rows copied or widened by ref's widen (exact:
 * test_kernel_tables.c, test_quant.c) into a tile. That is the invariant the drivers' in-place
 * decode rests on (flashattn.h: a decode step reads its cache where it lies, the bits of the widened
 * call). The rows come from a list, in shuffled order with odd strides (any alignment, any page
 * size), and the FA_STORED_AHEAD rows past the list's end are real rows the kernels may only
 * prefetch. scores_stored writes nothing but its rows' scores (the padding rows are the caller's);
 * a key's score has the same bits alone as in a tile (whatever keys share the kernels' blocks), and
 * one row's products the same at ld 1 (its scores key after key, the in-place decode layout).
 * Every code of the one-byte types appears, NaN and infinity codes included, with
 * ordinary, tiny and huge scales, over every row count a decode tile has (1-4), key counts across
 * the kernels' key blocks, and head dims across their vector and line steps. A NaN equals a NaN here
 * whatever its payload: when two NaNs meet in an addition x86 returns the first operand's, and a
 * compiler may order the operands of a commutative addition either way (ref's vectorised and scalar
 * loops do), so payloads are not part of any result the library promises. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "plan/problem.h"
#include "simd_tables.h"
#include "util.h"

typedef st_named_f32 named_set;

#define MAX_SETS 8

/* ref (unless FA_TEST_SIMD leaves it out), then every SIMD table of the build (simd_tables.h: avx2
 * and avx512, or neon and sve at each vector length) that this CPU runs */
static int sets_of(named_set *out)
{
    return st_f32_sets(out, MAX_SETS);
}

enum { MAX_COLS = 70, MAX_DIM = FA_MAX_HEAD_DIM, LD = 16, K_STRIDE = MAX_DIM + 3 };

static const fa_dtype stored_types[] = {FA_F32, FA_BF16, FA_F16, FA_I8, FA_F8_E4M3, FA_F8_E5M2};

/* cols rows of dim random elements of type t, K_STRIDE elements apart, one element past an aligned
 * start: every code of a one-byte type appears (a ramp from `base`), two-byte ones at random, f32
 * ones uniform in [-2, 2] */
static char *stored_rows(fa_dtype t, int64_t cols, int64_t dim, uint32_t base, tu_rng *rng, void **block)
{
    const size_t elem = fa_elem_size(t);
    *block = calloc((size_t)(cols * K_STRIDE + 2), elem);
    cr_assert_not_null(*block);
    for (int64_t c = 0; c < cols; c++)
        for (int64_t x = 0; x < dim; x++) {
            int64_t i = 1 + c * K_STRIDE + x;
            if (t == FA_F32)
                ((float *)*block)[i] = (float)tu_rng_uniform(rng, -2, 2);
            else if (elem == 2)
                ((uint16_t *)*block)[i] = (uint16_t)tu_rng_below(rng, 65536);
            else
                ((uint8_t *)*block)[i] = (uint8_t)(base + (uint32_t)(c * dim + x));
        }
    return (char *)*block + elem;
}

/* The list of `cols` keys' rows: the block's rows in a random order, then FA_STORED_AHEAD more of
 * them (real rows: the kernels prefetch them). The reference tile: each key's row copied (f32) or
 * widened with its scale by ref's widen. */
static void list_rows(fa_dtype t, const char *rows, int64_t cols, int64_t dim, const float *scale,
                      tu_rng *rng, const void **list, float *wide)
{
    const size_t elem = fa_elem_size(t);
    for (int64_t c = 0; c < cols; c++) list[c] = rows + (size_t)c * K_STRIDE * elem;
    for (int64_t c = cols - 1; c > 0; c--) { /* Fisher-Yates */
        int64_t j = (int64_t)tu_rng_below(rng, c + 1);
        const void *x = list[c];
        list[c] = list[j], list[j] = x;
    }
    for (int64_t c = cols; c < cols + FA_STORED_AHEAD; c++) list[c] = list[tu_rng_below(rng, cols)];
    for (int64_t c = 0; c < cols; c++) {
        if (t == FA_F32)
            memcpy(wide + c * dim, list[c], (size_t)dim * sizeof(float));
        else
            fa_kernels_ref.f32->widen(1, dim, list[c], 0, t, scale ? scale + c : NULL, 0, wide + c * dim,
                                      dim);
    }
}

/* The tile's query rows as scores_stored takes them (kernels.h): row by row out of the transposed qt,
 * zero from dim to the row stride Q_STRIDE, in a 64-byte-aligned block. */
enum { Q_STRIDE = (MAX_DIM + 15) / 16 * 16 };
static const float *query_rows(int64_t rows, int64_t dim, const float *qt)
{
    static _Alignas(64) float q[FA_HALF_ROWS * Q_STRIDE];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t x = 0; x < Q_STRIDE; x++) q[r * Q_STRIDE + x] = x < dim ? qt[x * LD + r] : 0.0f;
    return q;
}

static int same_bits(const float *a, const float *b, size_t n, size_t *where)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0 && !(a[i] != a[i] && b[i] != b[i])) {
            *where = i;
            return 0;
        }
    return 1;
}

/* The first element of the tile s (cols keys of LD rows, then the rest of MAX_COLS) that scores_stored
 * was to leave as `mark` but did not: its padding rows [rows, LD) and the keys past cols (kernels.h);
 * -1 when none. */
static int64_t first_written_outside(const float *s, int64_t rows, int64_t cols, float mark)
{
    for (int64_t i = 0; i < MAX_COLS * LD; i++)
        if ((i / LD >= cols || i % LD >= rows) && memcmp(&s[i], &mark, sizeof mark) != 0) return i;
    return -1;
}

/* The arrays every test here works in: query rows (qt), probabilities (p), the widened reference
 * tile, row scales, score tiles, accumulators (a starting value and the two results), a row list. */
typedef struct {
    float *qt, *p, *wide, *scale, *want, *got, *acc0, *acc_want, *acc_got;
    const void **list;
} buffers;

static buffers buffers_make(void)
{
    buffers b = {.qt = malloc(sizeof(float) * MAX_DIM * LD),
                 .p = malloc(sizeof(float) * MAX_COLS * LD),
                 .wide = malloc(sizeof(float) * MAX_COLS * MAX_DIM),
                 .scale = malloc(sizeof(float) * MAX_COLS),
                 .want = malloc(sizeof(float) * MAX_COLS * LD),
                 .got = malloc(sizeof(float) * MAX_COLS * LD),
                 .acc0 = malloc(sizeof(float) * 4 * (MAX_DIM + 5)),
                 .acc_want = malloc(sizeof(float) * 4 * (MAX_DIM + 5)),
                 .acc_got = malloc(sizeof(float) * 4 * (MAX_DIM + 5)),
                 .list = malloc(sizeof(void *) * (MAX_COLS + FA_STORED_AHEAD))};
    cr_assert(b.qt && b.p && b.wide && b.scale && b.want && b.got && b.acc0 && b.acc_want && b.acc_got &&
              b.list);
    return b;
}

static void buffers_free(buffers *b)
{
    free(b->qt), free(b->p), free(b->wide), free(b->scale), free(b->want), free(b->got), free(b->acc0);
    free(b->acc_want), free(b->acc_got), free(b->list);
}

Test(kernel_stored, decode_products_over_stored_rows_give_the_bits_of_the_widened_rows)
{
    named_set sets[MAX_SETS];
    const int n_sets = sets_of(sets);
    tu_rng rng = tu_rng_make(tu_test_seed());
    static const int64_t dims[] = {1, 7, 8, 15, 16, 17, 31, 32, 33, 48, 64, 100, 128, FA_MAX_HEAD_DIM};
    static const int64_t cols_list[] = {1, 2, 3, 5, 8, 9, 17, 70};
    buffers b = buffers_make();
    int64_t checked = 0;
    for (size_t ti = 0; ti < sizeof stored_types / sizeof *stored_types; ti++) {
        const fa_dtype t = stored_types[ti];
        const int scaled = t == FA_I8 || t == FA_F8_E4M3 || t == FA_F8_E5M2;
        for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
            for (size_t ci = 0; ci < sizeof cols_list / sizeof *cols_list; ci++)
                for (int64_t rows = 1; rows <= FA_HALF_ROWS; rows++) {
                    const int64_t dim = dims[di], cols = cols_list[ci], acc_stride = dim + 5;
                    void *block;
                    const char *k =
                        stored_rows(t, cols, dim, (uint32_t)(di * 31 + ci * 7 + (size_t)rows), &rng, &block);
                    for (int64_t c = 0; c < cols; c++) /* ordinary, tiny and huge scales */
                        b.scale[c] = (float)tu_rng_uniform(&rng, -2, 2) * (c % 5 == 3   ? 0x1p-100f
                                                                           : c % 7 == 4 ? 0x1p100f
                                                                                        : 1.0f);
                    const float *sc = scaled ? b.scale : NULL;
                    list_rows(t, k, cols, dim, sc, &rng, b.list, b.wide);
                    for (int64_t i = 0; i < MAX_DIM * LD; i++) b.qt[i] = (float)tu_rng_uniform(&rng, -1, 1);
                    const float *q = query_rows(rows, dim, b.qt); /* row 0 is also the one-row call's */
                    for (int64_t i = 0; i < MAX_COLS * LD; i++) b.p[i] = (float)tu_rng_uniform(&rng, 0, 1);
                    for (int64_t i = 0; i < 4 * acc_stride; i++)
                        b.acc0[i] = (float)tu_rng_uniform(&rng, -1, 1);
                    for (int s = 0; s < n_sets; s++) {
                        const fa_kernels_f32 *set = sets[s].set;
                        size_t where = 0;
                        set->scores(rows, LD, cols, dim, b.qt, b.wide, dim, b.want);
                        /* near, far or no prefetches: a CPU's choice, which changes no bit */
                        const fa_rows_prefetch prefetch = (fa_rows_prefetch)((ci + (size_t)rows) % 3);
                        const float mark = -7.25f;
                        for (int64_t i = 0; i < MAX_COLS * LD; i++) b.got[i] = mark;
                        set->scores_stored(rows, LD, cols, dim, q, Q_STRIDE, b.list, t, sc, prefetch, b.got);
                        const int64_t outside = first_written_outside(b.got, rows, cols, mark);
                        cr_assert(outside < 0,
                                  "%s, dtype %d, rows %lld, cols %lld, dim %lld: scores_stored wrote element "
                                  "%lld (key %lld, row %lld), a padding row's or past the keys",
                                  sets[s].name, (int)t, (long long)rows, (long long)cols, (long long)dim,
                                  (long long)outside, (long long)(outside / LD), (long long)(outside % LD));
                        for (int64_t c = 0; c < cols; c++) /* the real rows */
                            cr_assert(
                                same_bits(b.want + c * LD, b.got + c * LD, (size_t)rows, &where),
                                "%s, dtype %d, rows %lld, cols %lld, dim %lld: score (%lld, %zu) is %a, "
                                "widened %a",
                                sets[s].name, (int)t, (long long)rows, (long long)cols, (long long)dim,
                                (long long)c, where, (double)b.got[c * LD + where],
                                (double)b.want[c * LD + where]);
                        /* each key alone, a tile of one: the same bits whatever keys share its block
                         * in a tile (a block's keys are reduced together) */
                        for (int64_t c = 0; c < cols; c++) {
                            float alone[LD];
                            set->scores_stored(rows, LD, 1, dim, q, Q_STRIDE, b.list + c, t,
                                               sc ? sc + c : NULL, prefetch, alone);
                            cr_assert(
                                same_bits(b.want + c * LD, alone, (size_t)rows, &where),
                                "%s, dtype %d, rows %lld, dim %lld: key %lld alone scores %a in row %zu, "
                                "in a tile of %lld keys %a",
                                sets[s].name, (int)t, (long long)rows, (long long)dim, (long long)c,
                                (double)alone[where], where, (long long)cols, (double)b.want[c * LD + where]);
                        }
                        /* one row laid key after key (ld 1, the decode step's in-place layout) */
                        if (rows == 1) {
                            set->scores_stored(1, 1, cols, dim, q, Q_STRIDE, b.list, t, sc, prefetch, b.got);
                            for (int64_t c = 0; c < cols; c++)
                                cr_assert(same_bits(b.want + c * LD, b.got + c, 1, &where),
                                          "%s, dtype %d, cols %lld, dim %lld: key %lld scores %a at ld 1, "
                                          "%a at ld %d",
                                          sets[s].name, (int)t, (long long)cols, (long long)dim, (long long)c,
                                          (double)b.got[c], (double)b.want[c * LD], LD);
                        }
                        memcpy(b.acc_want, b.acc0, sizeof(float) * (size_t)(4 * acc_stride));
                        memcpy(b.acc_got, b.acc0, sizeof(float) * (size_t)(4 * acc_stride));
                        set->accumulate(rows, cols, dim, b.p, LD, b.wide, dim, b.acc_want, acc_stride);
                        set->accumulate_stored(rows, cols, dim, b.p, LD, b.list, t, sc, prefetch, b.acc_got,
                                               acc_stride);
                        cr_assert(
                            same_bits(b.acc_want, b.acc_got, (size_t)(4 * acc_stride), &where),
                            "%s, dtype %d, rows %lld, cols %lld, dim %lld: accumulator element %zu is %a, "
                            "widened %a (or written outside its rows)",
                            sets[s].name, (int)t, (long long)rows, (long long)cols, (long long)dim, where,
                            (double)b.acc_got[where], (double)b.acc_want[where]);
                        if (rows == 1) { /* b.p of one row key after key (ld 1) */
                            for (int64_t c = 0; c < cols; c++) b.got[c] = b.p[c * LD];
                            memcpy(b.acc_got, b.acc0, sizeof(float) * (size_t)(4 * acc_stride));
                            set->accumulate_stored(1, cols, dim, b.got, 1, b.list, t, sc, prefetch, b.acc_got,
                                                   acc_stride);
                            cr_assert(
                                same_bits(b.acc_want, b.acc_got, (size_t)(4 * acc_stride), &where),
                                "%s, dtype %d, cols %lld, dim %lld: accumulator element %zu is %a over p "
                                "at ld 1, widened %a",
                                sets[s].name, (int)t, (long long)cols, (long long)dim, where,
                                (double)b.acc_got[where], (double)b.acc_want[where]);
                        }
                        checked++;
                    }
                    free(block);
                }
    }
    cr_log_info("%lld (set, type, shape) cases, %d sets", (long long)checked, n_sets);
    buffers_free(&b);
}

/* A code of one-byte type t whose magnitude is at most 2 (so that huge scales keep products finite),
 * one in 64 a NaN code where t has them; subnormals and both signs included. */
static uint8_t small_code(fa_dtype t, tu_rng *rng)
{
    const uint32_t r = (uint32_t)tu_rng_below(rng, 4096);
    if (t == FA_I8) return (uint8_t)(int8_t)((int)(r % 5) - 2);
    if (r % 64 == 0) return (uint8_t)((r & 0x80) | (t == FA_F8_E4M3 ? 0x7f : 0x7d));
    return (uint8_t)((r & 0x80) | (r >> 5 & 0x3f));
}

/* The same bits at the scales' edges, where a table may fold a conversion's power of two into the
 * scale (E4M3 as binary16 halves times 256·s: few_rows_scores.h, FA_KIND_E4M3_HALVES), for every
 * one-byte type: lists whose finite scales all take the fold (the largest s with 256·s finite,
 * subnormal scales, zeros), lists with finite scales that do not (256·s overflows, s·element need
 * not: the first key has one, so one-key lists too), and lists with infinite and NaN scales. Codes
 * stay within ±2 (NaN codes among them) so that the products of huge scales stay finite. */
Test(kernel_stored, decode_products_give_the_widened_bits_at_the_edges_of_the_row_scales)
{
    named_set sets[MAX_SETS];
    const int n_sets = sets_of(sets);
    tu_rng rng = tu_rng_make(tu_test_seed());
    static const fa_dtype types[] = {FA_I8, FA_F8_E4M3, FA_F8_E5M2};
    static const float edges[3][6] = {
        {0x1.fffffep119f, -0x1p119f, 0x1p-149f, -0x1p-140f, -0.0f, 0.75f},           /* 256·s finite */
        {0x1p120f, -0x1.8p121f, 0x1.fffffep119f, 0x1p-149f, 0.0f, -0x1.000002p120f}, /* some overflow */
        {INFINITY, 0.75f, NAN, -INFINITY, 0x1p-149f, 0x1.fffffep119f}};              /* non-finite */
    static const int64_t dims[] = {16, 33, 128};
    static const int64_t cols_list[] = {1, 9, 70};
    buffers b = buffers_make();
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
        for (int e = 0; e < 3; e++)
            for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
                for (size_t ci = 0; ci < sizeof cols_list / sizeof *cols_list; ci++)
                    for (int64_t rows = 1; rows <= FA_HALF_ROWS; rows++) {
                        const fa_dtype t = types[ti];
                        const int64_t dim = dims[di], cols = cols_list[ci], acc_stride = dim + 5;
                        void *block;
                        uint8_t *k = (uint8_t *)stored_rows(t, cols, dim, 0, &rng, &block);
                        for (int64_t c = 0; c < cols; c++) {
                            for (int64_t x = 0; x < dim; x++) k[c * K_STRIDE + x] = small_code(t, &rng);
                            b.scale[c] = edges[e][(c + (int64_t)rows) % 6];
                        }
                        if (e == 1) b.scale[0] = edges[1][0];
                        list_rows(t, (const char *)k, cols, dim, b.scale, &rng, b.list, b.wide);
                        for (int64_t i = 0; i < MAX_DIM * LD; i++)
                            b.qt[i] = (float)tu_rng_uniform(&rng, -1, 1);
                        for (int64_t i = 0; i < MAX_COLS * LD; i++)
                            b.p[i] = (float)tu_rng_uniform(&rng, 0, 1);
                        for (int s = 0; s < n_sets; s++) {
                            const fa_kernels_f32 *set = sets[s].set;
                            size_t where = 0;
                            set->scores(rows, LD, cols, dim, b.qt, b.wide, dim, b.want);
                            /* any prefetch: no bit changes */
                            const fa_rows_prefetch prefetch = (fa_rows_prefetch)((ci + (size_t)rows) % 3);
                            set->scores_stored(rows, LD, cols, dim, query_rows(rows, dim, b.qt), Q_STRIDE,
                                               b.list, t, b.scale, prefetch, b.got);
                            for (int64_t c = 0; c < cols; c++)
                                cr_assert(
                                    same_bits(b.want + c * LD, b.got + c * LD, (size_t)rows, &where),
                                    "%s, dtype %d, scales %d, rows %lld, cols %lld, dim %lld: score (%lld, "
                                    "%zu) is %a, widened %a",
                                    sets[s].name, (int)t, e, (long long)rows, (long long)cols, (long long)dim,
                                    (long long)c, where, (double)b.got[c * LD + where],
                                    (double)b.want[c * LD + where]);
                            for (int64_t i = 0; i < 4 * acc_stride; i++)
                                b.acc_want[i] = b.acc_got[i] = (float)tu_rng_uniform(&rng, -1, 1);
                            set->accumulate(rows, cols, dim, b.p, LD, b.wide, dim, b.acc_want, acc_stride);
                            set->accumulate_stored(rows, cols, dim, b.p, LD, b.list, t, b.scale, prefetch,
                                                   b.acc_got, acc_stride);
                            cr_assert(same_bits(b.acc_want, b.acc_got, (size_t)(4 * acc_stride), &where),
                                      "%s, dtype %d, scales %d, rows %lld, cols %lld, dim %lld: accumulator "
                                      "element %zu is %a, widened %a",
                                      sets[s].name, (int)t, e, (long long)rows, (long long)cols,
                                      (long long)dim, where, (double)b.acc_got[where],
                                      (double)b.acc_want[where]);
                        }
                        free(block);
                    }
    buffers_free(&b);
}

/* E4M3 rows that hold no NaN code may be read without the steps that make that code a NaN, where a
 * table looks for it first (few_rows_scores.h, FA_KIND_E4M3_FINITE): the same bits with no NaN code
 * in the call, and with one NaN code anywhere in it (first, middle or last key; first, last or a
 * middle element, in a row's whole 32-byte blocks and in its remainder), whose key's scores and whose
 * element of every accumulator row are NaN, nothing else. */
Test(kernel_stored, an_e4m3_nan_code_anywhere_in_a_call_gives_the_widened_bits)
{
    named_set sets[MAX_SETS];
    const int n_sets = sets_of(sets);
    tu_rng rng = tu_rng_make(tu_test_seed());
    static const int64_t dims[] = {1, 31, 32, 33, 64, 100, 128, FA_MAX_HEAD_DIM};
    static const int64_t cols_list[] = {1, 8, 9};
    buffers b = buffers_make();
    for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
        for (size_t ci = 0; ci < sizeof cols_list / sizeof *cols_list; ci++)
            for (int nan_at = -1; nan_at < 9; nan_at++) { /* -1: no NaN code */
                const int64_t dim = dims[di], cols = cols_list[ci], acc_stride = dim + 5;
                const int64_t nan_key = nan_at % 3 == 0 ? 0 : nan_at % 3 == 1 ? cols / 2 : cols - 1;
                const int64_t nan_x = nan_at / 3 == 0 ? 0 : nan_at / 3 == 1 ? dim / 2 : dim - 1;
                void *block;
                uint8_t *k = (uint8_t *)stored_rows(FA_F8_E4M3, cols, dim, 0, &rng, &block);
                for (int64_t c = 0; c < cols; c++) {
                    for (int64_t x = 0; x < dim; x++) { /* every finite code */
                        uint8_t code = (uint8_t)tu_rng_below(&rng, 256);
                        k[c * K_STRIDE + x] = (code & 0x7f) == 0x7f ? (uint8_t)(code - 1) : code;
                    }
                    b.scale[c] = (float)tu_rng_uniform(&rng, 0.5, 2);
                }
                if (nan_at >= 0) k[nan_key * K_STRIDE + nan_x] = nan_at % 2 ? 0xff : 0x7f;
                /* the b.list in key order: the NaN checks below name keys by their place in it */
                for (int64_t c = 0; c < cols + FA_STORED_AHEAD; c++) b.list[c] = k + (c % cols) * K_STRIDE;
                for (int64_t c = 0; c < cols; c++)
                    fa_kernels_ref.f32->widen(1, dim, b.list[c], 0, FA_F8_E4M3, b.scale + c, 0,
                                              b.wide + c * dim, dim);
                for (int64_t i = 0; i < MAX_DIM * LD; i++) b.qt[i] = (float)tu_rng_uniform(&rng, -1, 1);
                for (int64_t i = 0; i < MAX_COLS * LD; i++) b.p[i] = (float)tu_rng_uniform(&rng, 0, 1);
                for (int64_t rows = 1; rows <= 2; rows++)
                    for (int s = 0; s < n_sets; s++) {
                        const fa_kernels_f32 *set = sets[s].set;
                        size_t where = 0;
                        set->scores(rows, LD, cols, dim, b.qt, b.wide, dim, b.want);
                        set->scores_stored(rows, LD, cols, dim, query_rows(rows, dim, b.qt), Q_STRIDE, b.list,
                                           FA_F8_E4M3, b.scale, FA_ROWS_PREFETCH_NEAR, b.got);
                        for (int64_t c = 0; c < cols; c++) {
                            cr_assert(
                                same_bits(b.want + c * LD, b.got + c * LD, (size_t)rows, &where),
                                "%s, rows %lld, cols %lld, dim %lld, NaN code %d: score (%lld, %zu) is %a, "
                                "widened %a",
                                sets[s].name, (long long)rows, (long long)cols, (long long)dim, nan_at,
                                (long long)c, where, (double)b.got[c * LD + where],
                                (double)b.want[c * LD + where]);
                            for (int64_t r = 0; r < rows; r++)
                                cr_assert((b.got[c * LD + r] != b.got[c * LD + r]) ==
                                              (nan_at >= 0 && c == nan_key),
                                          "%s, dim %lld, NaN code %d at key %lld: score (%lld, %lld) is %a",
                                          sets[s].name, (long long)dim, nan_at, (long long)nan_key,
                                          (long long)c, (long long)r, (double)b.got[c * LD + r]);
                        }
                        for (int64_t i = 0; i < 4 * acc_stride; i++)
                            b.acc_want[i] = b.acc_got[i] = (float)tu_rng_uniform(&rng, -1, 1);
                        set->accumulate(rows, cols, dim, b.p, LD, b.wide, dim, b.acc_want, acc_stride);
                        set->accumulate_stored(rows, cols, dim, b.p, LD, b.list, FA_F8_E4M3, b.scale,
                                               FA_ROWS_PREFETCH_NEAR, b.acc_got, acc_stride);
                        cr_assert(same_bits(b.acc_want, b.acc_got, (size_t)(4 * acc_stride), &where),
                                  "%s, rows %lld, cols %lld, dim %lld, NaN code %d: accumulator element %zu "
                                  "is %a, widened %a",
                                  sets[s].name, (long long)rows, (long long)cols, (long long)dim, nan_at,
                                  where, (double)b.acc_got[where], (double)b.acc_want[where]);
                        for (int64_t r = 0; r < rows; r++)
                            for (int64_t x = 0; x < dim; x++)
                                cr_assert(
                                    (b.acc_got[r * acc_stride + x] != b.acc_got[r * acc_stride + x]) ==
                                        (nan_at >= 0 && x == nan_x),
                                    "%s, dim %lld, NaN code %d at element %lld: accumulator (%lld, %lld) "
                                    "is %a",
                                    sets[s].name, (long long)dim, nan_at, (long long)nan_x, (long long)r,
                                    (long long)x, (double)b.acc_got[r * acc_stride + x]);
                    }
                free(block);
            }
    buffers_free(&b);
}
