/* SPDX-License-Identifier: BSD-3-Clause */
/* Scores for a tile of at most FA_FEW_ROWS real query rows (a decode step), part of the SIMD
 * templates' score kernel (tile_scores.h includes it), after the table's vocabulary (simd/simd.h):
 *   FA_T, FA_LANES, FA_NAME, FA_INLINE, FA_UNROLL, vec, V_ZERO, V_LOAD, V_STOREU, V_FMA, V_REDUCE_ADD, and
 *   V_LOAD_PART(p, n): lanes [0, n) of p (n >= 1), the others 0, nothing past p + n read;
 *   FA_FEW_ROWS_KEYS(rows): keys per block, so that rows·keys accumulators, `rows` query vectors
 *   and one key vector fit the register file (at most 8 keys);
 *   optionally V_REDUCE_ADD_8(v, out): out[m] = V_REDUCE_ADD(v[m]) for eight vectors, bit for bit,
 *   and V_LOAD_BF16_RUN(p, lo, hi): 2·FA_LANES bf16 elements widened into two vectors, the lanes of
 *   V_LOAD_STORED's for bf16; V_LOAD_E4M3_HALVES(p, n) (below), and with it
 *   V_LOAD_E4M3_FINITE_HALVES(p, n) and V_E4M3_ROWS_FINITE(rows, cols, n) (below).
 *
 * With one real row in a 16-row tile, the broadcast form of the scores spends a load and a full
 * FMA (15 lanes of padding) on every key element. Here each real query row is held as vectors
 * over dim and every key row is streamed once with full-width loads, then reduced per key: up to
 * 16x fewer FMAs and loads, and the K stream runs at memory speed. A table may sum in this order
 * for small tiles (kernels.h): the choice depends on the tile, never on the thread. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h> /* _mm_prefetch (simd/simd.h: FA_PREFETCH) */
#endif

#include "flashattn.h" /* FA_MAX_HEAD_DIM: the bound of the query rows held on the stack */

#define FA_FEW_ROWS      4
#define FA_PREFETCH_KEYS 16

/* The rows a few-rows tile reads as key rows: FA_T (kind 0), or a stored type (kind: its fa_dtype,
 * FA_BF16 and up) converted as it is loaded, where the ISA's float file defines V_LOAD_STORED
 * (simd/half_operands.h: scores_stored); a quantized row's elements are then multiplied by its scale
 * (dot_block_), as widen does. One body for every kind, so a stored cache's scores are the same FMAs
 * in the same order as on its widened rows. */
#define FA_KIND_OWN 0 /* FA_T's own rows (FA_F32's value, which no stored row has) */

#ifdef V_LOAD_E4M3_HALVES
/* E4M3 rows read as V_LOAD_E4M3_HALVES gives them: each element's value divided by 256 (exact: it
 * is the binary16 the conversion widens), times its row's scale times 256. 256·s is exact unless it
 * overflows (a power of two that only raises the exponent), and then (e/256)·(256·s) is the real
 * number s·e rounded once, the bits of the scalar definition (quant.h: scale · element; a NaN
 * element or scale comes through as itself, made quiet), with one multiplication an element fewer.
 * Taken only for a call whose scales all pass FA_NAME(e4m3_fold_). */
#define FA_KIND_E4M3_HALVES 7

/* E4M3 rows that hold no NaN code (S.1111.111), which V_E4M3_ROWS_FINITE(rows, cols, n) finds of a
 * call's rows (simd/half_operands.h, stored_kind_), read as FA_KIND_E4M3_HALVES reads them without
 * the steps that turn that code into a NaN (V_LOAD_E4M3_FINITE_HALVES): the same bits for every
 * other code, and on avx2 3 instructions a vector of 8 elements instead of 7 (the conversion to
 * float and the scale's multiplication aside). Zen 3, D = 128: the step in cache 44.3-44.7 ->
 * 37.2-37.6 ns a key (`fa-kernel-bench --decode`; without the look for NaN codes 31.5), a decode
 * batch over a cache in DRAM 3-18% less time at 1 thread
 * (bench/results/2026-12-06-zen3-e4m3-bf16-widening.md). Taken only where the table defines
 * V_LOAD_E4M3_FINITE_HALVES. */
#define FA_KIND_E4M3_FINITE 8

/* Whether no scale of these keys is finite with 256 times it infinite (|s| > FLT_MAX / 256). */
FA_INLINE int FA_NAME(e4m3_fold_)(const float *scale, int64_t cols)
{
    int over = 0;
    for (int64_t c = 0; c < cols; c++) {
        const float a = fabsf(scale[c]);
        over |= a > 0x1.fffffep119f && a <= 0x1.fffffep127f;
    }
    return !over;
}
#endif

FA_INLINE int64_t FA_NAME(kind_size_)(const int kind)
{
    return kind == FA_KIND_OWN ? (int64_t)sizeof(FA_T) : kind == FA_BF16 || kind == FA_F16 ? 2 : 1;
}

FA_INLINE vec FA_NAME(key_part_)(const int kind, const void *k, int64_t at, int64_t n)
{
#ifdef V_LOAD_E4M3_HALVES
    if (kind == FA_KIND_E4M3_HALVES) return V_LOAD_E4M3_HALVES((const char *)k + at, n);
#endif
#ifdef V_LOAD_E4M3_FINITE_HALVES
    if (kind == FA_KIND_E4M3_FINITE) return V_LOAD_E4M3_FINITE_HALVES((const char *)k + at, n);
#endif
#ifdef V_LOAD_STORED
    if (kind != FA_KIND_OWN)
        return V_LOAD_STORED((const char *)k + at * FA_NAME(kind_size_)(kind), n, (fa_dtype)kind);
#else
    (void)kind;
#endif
    return V_LOAD_PART((const FA_T *)k + at, n);
}

/* The factor of key i's converted elements: 1 (an unscaled kind), its scale, or 256 times it
 * (E4M3's halves, FA_KIND_E4M3_HALVES and FA_KIND_E4M3_FINITE: exact there). */
FA_INLINE FA_T FA_NAME(key_scale_)(const int kind, const float *scale, int64_t i)
{
#ifdef V_LOAD_E4M3_HALVES
    if (kind == FA_KIND_E4M3_HALVES || kind == FA_KIND_E4M3_FINITE) return (FA_T)(scale[i] * 256.0f);
#endif
    return kind > FA_F16 ? (FA_T)scale[i] : (FA_T)1;
}

FA_INLINE void FA_NAME(dot_block_)(const int kind, int nk, int nr, int64_t dim, const FA_T *q,
                                   int64_t q_stride, const char *const *keys, const float *scale, FA_T *s,
                                   int64_t ld)
{
    vec acc[8][FA_FEW_ROWS];
    FA_UNROLL
    for (int i = 0; i < nk; i++) {
        FA_UNROLL
        for (int r = 0; r < nr; r++) acc[i][r] = V_ZERO();
    }
    /* a quantized key row's scale, one multiplication of each converted element (kernels.h, widen) */
    const int scaled = kind > FA_F16;
    vec sv[8];
    FA_UNROLL
    for (int i = 0; i < nk; i++) sv[i] = V_SET1(FA_NAME(key_scale_)(kind, scale, i));
    int64_t x = 0;
#ifdef V_LOAD_BF16_RUN
    if (kind == FA_BF16) /* bf16: 32 elements a load, widened in order (the same FMAs in the same order) */
        for (; x + 2 * FA_LANES <= dim; x += 2 * FA_LANES) {
            vec q0[FA_FEW_ROWS], q1[FA_FEW_ROWS];
            FA_UNROLL
            for (int r = 0; r < nr; r++) {
                q0[r] = V_LOAD(q + r * q_stride + x);
                q1[r] = V_LOAD(q + r * q_stride + x + FA_LANES);
            }
            FA_UNROLL
            for (int i = 0; i < nk; i++) {
                vec k0, k1;
                V_LOAD_BF16_RUN((const uint16_t *)(const void *)keys[i] + x, &k0, &k1);
                FA_UNROLL
                for (int r = 0; r < nr; r++) acc[i][r] = V_FMA(k0, q0[r], acc[i][r]);
                FA_UNROLL
                for (int r = 0; r < nr; r++) acc[i][r] = V_FMA(k1, q1[r], acc[i][r]);
            }
        }
#endif
    /* whole vectors, then the tail: a constant FA_LANES tells the stored loads they need no partial
     * path, whose stack buffer inside this loop made GCC 12 keep every accumulator of a stored kind
     * in memory (a store and a reload around each FMA) */
    for (; x < dim; x += FA_LANES) {
        const int64_t n = dim - x < FA_LANES ? dim - x : FA_LANES;
        vec qv[FA_FEW_ROWS];
        FA_UNROLL
        for (int r = 0; r < nr; r++) qv[r] = V_LOAD(q + r * q_stride + x);
        FA_UNROLL
        for (int i = 0; i < nk; i++) {
            vec kv = n == FA_LANES ? FA_NAME(key_part_)(kind, keys[i], x, FA_LANES)
                                   : FA_NAME(key_part_)(kind, keys[i], x, n);
            if (scaled) kv = V_MUL(sv[i], kv);
            FA_UNROLL
            for (int r = 0; r < nr; r++) acc[i][r] = V_FMA(kv, qv[r], acc[i][r]);
        }
    }
#ifdef V_REDUCE_ADD_8
    /* eight sums at a time where the vocabulary has the tree (the same bits as one at a time) */
    const int n = nk * nr, whole = n / 8 * 8; /* accumulator g is key g / nr's, row g % nr's */
    FA_UNROLL
    for (int g = 0; g < whole; g += 8) {
        vec eight[8];
        FA_T out[8];
        FA_UNROLL
        for (int m = 0; m < 8; m++) eight[m] = acc[(g + m) / nr][(g + m) % nr];
        V_REDUCE_ADD_8(eight, out);
        FA_UNROLL
        for (int m = 0; m < 8; m++) s[(g + m) / nr * ld + (g + m) % nr] = out[m];
    }
    FA_UNROLL
    for (int g = whole; g < n; g++) s[g / nr * ld + g % nr] = V_REDUCE_ADD(acc[g / nr][g % nr]);
#else
    FA_UNROLL
    for (int i = 0; i < nk; i++) {
        FA_UNROLL
        for (int r = 0; r < nr; r++) s[i * ld + r] = V_REDUCE_ADD(acc[i][r]);
    }
#endif
}

/* Instantiates (kind, keys, rows) blocks whose accumulators fit the registers: the switch below
 * turns run-time edge sizes into compile-time ones; each size a function of its own
 * (weighted_rows.h says why). */
#define FA_DOT_FN(KIND, NK, NR) FA_NAME(dot_block_##KIND##_##NK##_##NR##_)
#define FA_DOT_DEFINE(KIND, NK, NR)                                                                          \
    static __attribute__((noinline)) void FA_DOT_FN(KIND, NK, NR)(int64_t dim, const FA_T *q,                \
                                                                  int64_t q_stride, const char *const *keys, \
                                                                  const float *scale, FA_T *s, int64_t ld)   \
    {                                                                                                        \
        if ((NK) <= FA_FEW_ROWS_KEYS(NR))                                                                    \
            FA_NAME(dot_block_)(KIND, NK, NR, dim, q, q_stride, keys, scale, s, ld);                         \
    }
// clang-format off
#define FA_DOT_DEFINE_KEYS(KIND, NR)                                                 \
    FA_DOT_DEFINE(KIND, 1, NR) FA_DOT_DEFINE(KIND, 2, NR) FA_DOT_DEFINE(KIND, 3, NR) \
    FA_DOT_DEFINE(KIND, 4, NR) FA_DOT_DEFINE(KIND, 5, NR) FA_DOT_DEFINE(KIND, 6, NR) \
    FA_DOT_DEFINE(KIND, 7, NR) FA_DOT_DEFINE(KIND, 8, NR)
// clang-format on
#define FA_DOT_DEFINE_KIND(KIND) \
    FA_DOT_DEFINE_KEYS(KIND, 1)  \
    FA_DOT_DEFINE_KEYS(KIND, 2) FA_DOT_DEFINE_KEYS(KIND, 3) FA_DOT_DEFINE_KEYS(KIND, 4)
/* the kinds by the values of their fa_dtype (FA_KIND_OWN, FA_BF16 = 2 ... FA_F8_E5M2 = 6) */
FA_DOT_DEFINE_KIND(0)
#ifdef V_LOAD_STORED
FA_DOT_DEFINE_KIND(2)
FA_DOT_DEFINE_KIND(3)
FA_DOT_DEFINE_KIND(4)
FA_DOT_DEFINE_KIND(5)
FA_DOT_DEFINE_KIND(6)
/* one kind's case of the switch on the kind (the E4M3 halves' only where the table has them) */
#define FA_DOT_KIND_CASE(NAME, KIND, NK, NR) \
    case NAME:                               \
        FA_DOT_KIND_CALL(KIND, NK, NR);      \
        break;
#ifdef V_LOAD_E4M3_HALVES
FA_DOT_DEFINE_KIND(7)
#define FA_DOT_E4M3_HALVES_CASE(NK, NR) FA_DOT_KIND_CASE(FA_KIND_E4M3_HALVES, 7, NK, NR)
#else
#define FA_DOT_E4M3_HALVES_CASE(NK, NR)
#endif
#ifdef V_LOAD_E4M3_FINITE_HALVES
FA_DOT_DEFINE_KIND(8)
#define FA_DOT_E4M3_FINITE_CASE(NK, NR) FA_DOT_KIND_CASE(FA_KIND_E4M3_FINITE, 8, NK, NR)
#else
#define FA_DOT_E4M3_FINITE_CASE(NK, NR)
#endif
#define FA_DOT_KIND_CALL(KIND, NK, NR) FA_DOT_FN(KIND, NK, NR)(dim, q, q_stride, kp, scale_c, sc, ld)
#define FA_DOT_CALL(NK, NR)                      \
    switch (kind) {                              \
        FA_DOT_KIND_CASE(FA_BF16, 2, NK, NR)     \
        FA_DOT_KIND_CASE(FA_F16, 3, NK, NR)      \
        FA_DOT_KIND_CASE(FA_I8, 4, NK, NR)       \
        FA_DOT_KIND_CASE(FA_F8_E4M3, 5, NK, NR)  \
        FA_DOT_KIND_CASE(FA_F8_E5M2, 6, NK, NR)  \
        FA_DOT_E4M3_HALVES_CASE(NK, NR)          \
        FA_DOT_E4M3_FINITE_CASE(NK, NR)          \
    default: FA_DOT_KIND_CALL(0, NK, NR); break; \
    }
#else
#define FA_DOT_CALL(NK, NR) FA_DOT_FN(0, NK, NR)(dim, q, q_stride, kp, scale_c, sc, ld)
#endif
#define FA_DOT_CASE(NK, NR)  \
    case (NK)*16 + (NR): {   \
        FA_DOT_CALL(NK, NR); \
        break;               \
    }
// clang-format off
#define FA_DOT_ROWS_CASES(NR)                                                                      \
    FA_DOT_CASE(1, NR) FA_DOT_CASE(2, NR) FA_DOT_CASE(3, NR) FA_DOT_CASE(4, NR) FA_DOT_CASE(5, NR) \
    FA_DOT_CASE(6, NR) FA_DOT_CASE(7, NR) FA_DOT_CASE(8, NR)
// clang-format on

/* The scores of a tile of at most FA_FEW_ROWS real rows (row r at q + r·q_stride, vectors aligned
 * and zero past dim to a whole vector: kernels.h, scores_stored) against `cols` key rows of `kind`:
 * k_stride elements apart from k, or, with k_rows, key c at k_rows[c] (with its scale, scale[c], for
 * a quantized kind). K streams from memory once: rows are asked for a line at a time as `prefetch`
 * says (kernels.h: NEAR FA_PREFETCH_KEYS keys early into L1, FAR FA_STORED_AHEAD keys early into L2
 * and again near their use into L1, NONE not at all), up to the tile's end unless past_tile (k_rows
 * then has cols + FA_STORED_AHEAD entries: kernels.h). */
FA_INLINE void FA_NAME(scores_few_rows_body_)(const int kind, int64_t rows, int64_t ld, int64_t cols,
                                              int64_t dim, const FA_T *q, int64_t q_stride, const void *k,
                                              int64_t k_stride, const void *const *k_rows, const float *scale,
                                              FA_T *s, fa_rows_prefetch prefetch, int past_tile,
                                              int zero_padding)
{
    const int64_t elem = FA_NAME(kind_size_)(kind);
    const int far = prefetch == FA_ROWS_PREFETCH_FAR;
    const int64_t ahead = far ? FA_STORED_AHEAD : FA_PREFETCH_KEYS;
    int keys = FA_FEW_ROWS_KEYS(rows);
    for (int64_t c = 0; c < cols; c += keys) {
        int nk = cols - c < keys ? (int)(cols - c) : keys;
        for (int64_t a = c + ahead;
             prefetch != FA_ROWS_PREFETCH_NONE && a < c + ahead + nk && (past_tile || a < cols); a++) {
            const char *row = k_rows ? (const char *)k_rows[a] : (const char *)k + a * k_stride * elem;
            for (int64_t x = 0; x < dim * elem; x += 64) {
                if (far)
                    FA_PREFETCH(row + x, FA_HINT_L2);
                else
                    FA_PREFETCH(row + x, FA_HINT_L1);
            }
        }
        /* rows asked for into L2 far ahead are asked for again into L1 near their use (from a row
         * list, which holds them: kernels.h) */
        if (far && past_tile)
            for (int64_t a = c + FA_PREFETCH_KEYS; a < c + FA_PREFETCH_KEYS + nk; a++)
                for (int64_t x = 0; x < dim * elem; x += 64)
                    FA_PREFETCH((const char *)k_rows[a] + x, FA_HINT_L1);
        const char *kp[8];
        for (int i = 0; i < nk; i++)
            kp[i] = k_rows ? (const char *)k_rows[c + i] : (const char *)k + (c + i) * k_stride * elem;
        const float *scale_c = scale ? scale + c : NULL;
        FA_T *sc = s + c * ld;
        /* padding rows [rows, ld): zero as scores gives them, a vector at a time before the block
         * writes its rows' scores over the first; scores_stored leaves them (kernels.h) */
        for (int i = 0; zero_padding && i < nk; i++) {
            int64_t r = rows / FA_LANES * FA_LANES;
            for (; r + FA_LANES <= ld; r += FA_LANES) V_STOREU(sc + i * ld + r, V_ZERO());
            for (; r < ld; r++) sc[i * ld + r] = 0;
        }
        switch (nk * 16 + (int)rows) {
            FA_DOT_ROWS_CASES(1)
            FA_DOT_ROWS_CASES(2) FA_DOT_ROWS_CASES(3) FA_DOT_ROWS_CASES(4) default : break;
        }
    }
}

static void FA_NAME(scores_few_rows_)(int64_t rows, int64_t ld, int64_t cols, int64_t dim, const FA_T *qt,
                                      const FA_T *k, int64_t k_stride, FA_T *s)
{
    /* the real rows, gathered out of the transposed pack into contiguous, zero-padded vectors */
    _Alignas(64) FA_T q[FA_FEW_ROWS][FA_MAX_HEAD_DIM];
    int64_t dim_pad = (dim + FA_LANES - 1) / FA_LANES * FA_LANES;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t x = 0; x < dim_pad; x++) q[r][x] = x < dim ? qt[x * ld + r] : 0;
    FA_NAME(scores_few_rows_body_)
    (FA_KIND_OWN, rows, ld, cols, dim, &q[0][0], FA_MAX_HEAD_DIM, k, k_stride, NULL, NULL, s,
     FA_ROWS_PREFETCH_NEAR, 0, 1);
}

#undef FA_DOT_ROWS_CASES
#undef FA_DOT_E4M3_HALVES_CASE
#undef FA_DOT_E4M3_FINITE_CASE
#undef FA_DOT_KIND_CASE
#undef FA_DOT_CASE
#undef FA_DOT_CALL
#undef FA_DOT_KIND_CALL
#undef FA_DOT_DEFINE_KIND
#undef FA_DOT_DEFINE_KEYS
#undef FA_DOT_DEFINE
#undef FA_DOT_FN
