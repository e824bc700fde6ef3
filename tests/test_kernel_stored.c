/* SPDX-License-Identifier: BSD-3-Clause */
/* The decode products over stored rows (kernels.h, scores_stored and accumulate_stored): for every
 * table this CPU runs and every stored type (bf16, f16; int8, FP8 E4M3 and E5M2 with their row
 * scales), they give bit for bit what the same table's scores and accumulate give on the rows
 * widened by ref's widen (exact: test_kernel_tables.c, test_quant.c). That is the invariant the
 * drivers' in-place decode rests on (flashattn.h: a decode step reads its cache where it lies, the
 * bits of the widened call). Every code of the one-byte types appears, NaN and infinity codes
 * included, with scales per key row (stride 1) and one for all (stride 0), over every row count a
 * decode tile has (1-4), key counts across the kernels' key blocks, head dims across their vector
 * and line steps, and odd strides (any alignment). A NaN equals a NaN here whatever its payload: when
 * two NaNs meet in an addition x86 returns the first operand's, and a compiler may order the operands
 * of a commutative addition either way (ref's vectorised and scalar loops do), so payloads are not
 * part of any result the library promises. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_facts.h"
#include "kernels/kernels.h"
#include "util.h"
#if defined(__x86_64__)
#include "kernels/avx2/avx2.h"
#include "kernels/avx512/avx512.h"
#endif

typedef struct {
    const char *name;
    const fa_kernels_f32 *set;
} named_set;

static int sets_of(named_set *out)
{
    int n = 0;
    out[n++] = (named_set){"ref", fa_kernels_ref.f32};
#if defined(__x86_64__)
    if (cf_table_runs("avx2")) out[n++] = (named_set){"avx2", &fa_avx2_kernels_f32};
    if (cf_table_runs("avx512")) out[n++] = (named_set){"avx512", &fa_avx512_kernels_f32};
#endif
    return n;
}

enum { MAX_COLS = 70, MAX_DIM = FA_MAX_HEAD_DIM, LD = 16, K_STRIDE = MAX_DIM + 3 };

static const fa_dtype stored_types[] = {FA_BF16, FA_F16, FA_I8, FA_F8_E4M3, FA_F8_E5M2};

/* cols rows of dim random elements of type t, K_STRIDE elements apart, one element past an aligned
 * start: every code of a one-byte type appears (a ramp from `base`), two-byte ones at random */
static void *stored_rows(fa_dtype t, int64_t cols, int64_t dim, uint32_t base, tu_rng *rng, void **block)
{
    const int two = t == FA_BF16 || t == FA_F16;
    *block = calloc((size_t)(cols * K_STRIDE + 2), two ? 2 : 1);
    cr_assert_not_null(*block);
    for (int64_t c = 0; c < cols; c++)
        for (int64_t x = 0; x < dim; x++) {
            int64_t i = 1 + c * K_STRIDE + x;
            if (two)
                ((uint16_t *)*block)[i] = (uint16_t)tu_rng_below(rng, 65536);
            else
                ((uint8_t *)*block)[i] = (uint8_t)(base + (uint32_t)(c * dim + x));
        }
    return two ? (void *)((uint16_t *)*block + 1) : (void *)((uint8_t *)*block + 1);
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

Test(kernel_stored, decode_products_over_stored_rows_give_the_bits_of_the_widened_rows)
{
    named_set sets[3];
    const int n_sets = sets_of(sets);
    tu_rng rng = tu_rng_make(tu_test_seed());
    static const int64_t dims[] = {1, 7, 8, 15, 16, 17, 31, 32, 33, 48, 64, 100, 128, FA_MAX_HEAD_DIM};
    static const int64_t cols_list[] = {1, 2, 3, 5, 8, 9, 17, 70};
    float *qt = malloc(sizeof(float) * MAX_DIM * LD), *p = malloc(sizeof(float) * MAX_COLS * LD);
    float *wide = malloc(sizeof(float) * MAX_COLS * MAX_DIM), *scale = malloc(sizeof(float) * MAX_COLS);
    float *want = malloc(sizeof(float) * MAX_COLS * LD), *got = malloc(sizeof(float) * MAX_COLS * LD);
    float *acc0 = malloc(sizeof(float) * 4 * (MAX_DIM + 5)), *acc_want = malloc(sizeof(float) * 4 * (MAX_DIM + 5)),
          *acc_got = malloc(sizeof(float) * 4 * (MAX_DIM + 5));
    cr_assert(qt && p && wide && scale && want && got && acc0 && acc_want && acc_got);
    int64_t checked = 0;
    for (size_t ti = 0; ti < sizeof stored_types / sizeof *stored_types; ti++) {
        const fa_dtype t = stored_types[ti];
        const int scaled = t != FA_BF16 && t != FA_F16;
        for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
            for (size_t ci = 0; ci < sizeof cols_list / sizeof *cols_list; ci++)
                for (int64_t rows = 1; rows <= FA_HALF_ROWS; rows++)
                    for (int64_t scale_stride = 0; scale_stride <= (scaled ? 1 : 0); scale_stride++) {
                        const int64_t dim = dims[di], cols = cols_list[ci], acc_stride = dim + 5;
                        void *block;
                        const void *k = stored_rows(t, cols, dim, (uint32_t)(di * 31 + ci * 7), &rng, &block);
                        for (int64_t c = 0; c < cols; c++) /* ordinary, tiny and huge scales */
                            scale[c] = (float)tu_rng_uniform(&rng, -2, 2) *
                                       (c % 5 == 3 ? 0x1p-100f : c % 7 == 4 ? 0x1p100f : 1.0f);
                        const float *sc = scaled ? scale : NULL;
                        fa_kernels_ref.f32->widen(cols, dim, k, K_STRIDE, t, sc, scale_stride, wide, dim);
                        for (int64_t i = 0; i < MAX_DIM * LD; i++) qt[i] = (float)tu_rng_uniform(&rng, -1, 1);
                        for (int64_t i = 0; i < MAX_COLS * LD; i++) p[i] = (float)tu_rng_uniform(&rng, 0, 1);
                        for (int64_t i = 0; i < 4 * acc_stride; i++) acc0[i] = (float)tu_rng_uniform(&rng, -1, 1);
                        for (int s = 0; s < n_sets; s++) {
                            const fa_kernels_f32 *set = sets[s].set;
                            size_t where = 0;
                            set->scores(rows, LD, cols, dim, qt, wide, dim, want);
                            set->scores_stored(rows, LD, cols, dim, qt, k, K_STRIDE, t, sc, scale_stride, got);
                            for (int64_t c = 0; c < cols; c++) /* the real rows; padding rows are nobody's */
                                cr_assert(same_bits(want + c * LD, got + c * LD, (size_t)rows, &where),
                                          "%s, dtype %d, rows %lld, cols %lld, dim %lld, scale stride %lld: score "
                                          "(%lld, %zu) is %a, widened %a",
                                          sets[s].name, (int)t, (long long)rows, (long long)cols, (long long)dim,
                                          (long long)scale_stride, (long long)c, where, (double)got[c * LD + where],
                                          (double)want[c * LD + where]);
                            memcpy(acc_want, acc0, sizeof(float) * (size_t)(4 * acc_stride));
                            memcpy(acc_got, acc0, sizeof(float) * (size_t)(4 * acc_stride));
                            set->accumulate(rows, cols, dim, p, LD, wide, dim, acc_want, acc_stride);
                            set->accumulate_stored(rows, cols, dim, p, LD, k, K_STRIDE, t, sc, scale_stride, acc_got,
                                                   acc_stride);
                            cr_assert(same_bits(acc_want, acc_got, (size_t)(4 * acc_stride), &where),
                                      "%s, dtype %d, rows %lld, cols %lld, dim %lld, scale stride %lld: accumulator "
                                      "element %zu is %a, widened %a (or written outside its rows)",
                                      sets[s].name, (int)t, (long long)rows, (long long)cols, (long long)dim,
                                      (long long)scale_stride, where, (double)acc_got[where], (double)acc_want[where]);
                            checked++;
                        }
                        free(block);
                    }
    }
    cr_log_info("%lld (set, type, shape) cases, %d sets", (long long)checked, n_sets);
    free(qt), free(p), free(wide), free(scale), free(want), free(got), free(acc0), free(acc_want), free(acc_got);
}
