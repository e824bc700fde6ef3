/* SPDX-License-Identifier: BSD-3-Clause */
/* scores_stored and accumulate_stored (kernels.h) of the SIMD tables' float sets: a decode step's
 * products with the key and value rows read where they lie in their stored type (bf16, f16, int8,
 * FP8), converted in registers and, quantized, multiplied by their row's scale. Included by simd/table.h
 * when the ISA's float file defines V_LOAD_STORED (after few_rows_scores.h and weighted_rows.h, so
 * with the vocabulary and their constants), with:
 *   V_LOAD_STORED(p, n, t): lanes [0, n) converted (exactly) from the elements of stored type t at p
 *   (n >= 1, every lane for n >= FA_LANES), the others 0, nothing past element n - 1 read;
 *   FA_HALF_VECS: vectors of dim per accumulate block of 3 or 4 rows (the register file's share),
 *   FA_HALF_VECS_FEW: the same for 1 or 2 rows, at most 8. A decode step's row then goes through
 *   its value rows once, whole lines at a time: with half a row per pass (4 of 8 vectors at D=128)
 *   each pass fetched every other line of the rows from memory, and the step over a bf16 cache
 *   (B1 H8 Nk32768 D128, 1 thread, Xeon VM) took 13.6-13.9 ms against 12.6-13.0 with whole rows
 *   (three interleaved rounds); optionally FA_HALF_VECS_ONE (below).
 * Defines FA_NAME(scores_stored_) and FA_NAME(accumulate_stored_).
 *
 * Each gives exactly the bits of the float kernel on the widened rows: the scores are the few-rows
 * kernel itself (few_rows_scores.h) on half rows, and every accumulator element starts from its
 * value in memory and adds the same FMAs over the keys in order as weighted_rows.h; only the blocks
 * that hold them in registers differ, which no result depends on. So a half cache's decode step reads
 * 2 bytes an element, a quantized one 1, once, instead of widening a tile into the arena and reading
 * that again. */

/* Rows are asked for as `prefetch` says (kernels.h, fa_rows_prefetch): FA_PREFETCH_KEYS (16) keys
 * before their use into L1, and when FAR, FA_STORED_AHEAD (kernels.h: 64) keys ahead into L2 as
 * well: far enough that a row's DRAM latency is hidden behind the rows before it, near enough that
 * L2 keeps them. The row lists carry FA_STORED_AHEAD more rows, the next keys' (the drivers' next
 * tile, or a page's next page), so the next rows arrive in time across tiles and pages
 * (bench/results/2026-12-04-decode-lists-amd-zen4-intel-xeon.md). With NONE the kernels ask for
 * nothing: where the reads stream as the hardware prefetchers follow them, the prefetch
 * instructions only cost issue slots (plan/block_sizes.c, fa_decode_reads_for). */

/* FA_HALF_VECS_ONE: vectors of dim per accumulate block of one row (a decode step's) over a 1-byte
 * type (int8, FP8), where the ISA gives more than FA_HALF_VECS_FEW: one row's accumulators and a
 * converted vector at a time fit where two rows' do not, and each key's FMAs wait on the previous
 * key's, so more vectors a pass keep more of them in flight (the conversions are the step's cost).
 * avx2, D = 128, a cache in L3 (Zen 3): int8 6-13% less time, E4M3 3-9%; bf16 1-5% less in L3 but
 * 3-4% more over a cache in DRAM, f32 7-13% more there: those keep FA_HALF_VECS_FEW
 * (bench/results/2026-12-05-zen3-avx2-decode-softmax.md). */
#ifndef FA_HALF_VECS_ONE
#define FA_HALF_VECS_ONE FA_HALF_VECS_FEW
#endif

/* The kind the products read the `cols` rows (dim elements each) of type t in: E4M3 as its halves
 * with the factor 256 in the scales (few_rows_scores.h, FA_KIND_E4M3_HALVES) when every scale of
 * the call takes it, and then without the NaN steps (FA_KIND_E4M3_FINITE) where the ISA looks for
 * NaN codes and no row has one: a second read of each row, which the conversions it spares repay. */
FA_INLINE int FA_NAME(stored_kind_)(fa_dtype t, const float *scale, const void *const *rows, int64_t cols,
                                    int64_t dim)
{
#ifdef V_LOAD_E4M3_HALVES
    if (t == FA_F8_E4M3 && FA_NAME(e4m3_fold_)(scale, cols)) {
#ifdef V_E4M3_ROWS_FINITE
        if (V_E4M3_ROWS_FINITE(rows, cols, dim)) return FA_KIND_E4M3_FINITE;
#else
        (void)rows, (void)dim;
#endif
        return FA_KIND_E4M3_HALVES;
    }
#else
    (void)scale, (void)rows, (void)cols, (void)dim;
#endif
    return (int)t;
}

static void FA_NAME(scores_stored_)(int64_t rows, int64_t ld, int64_t cols, int64_t dim, const FA_T *q,
                                    int64_t q_stride, const void *const *k_rows, fa_dtype kt,
                                    const float *scale, fa_rows_prefetch prefetch, FA_T *s)
{
    FA_NAME(scores_few_rows_body_)
    (FA_NAME(stored_kind_)(kt, scale, k_rows, cols, dim), rows, ld, cols, dim, q, q_stride, NULL, 0, k_rows,
     scale, s, prefetch, 1, 0);
}

/* nr rows × nv vectors of acc (the last nv - 1 a tail when `tail`), over `steps` keys of stored type
 * `kind` (FA_KIND_OWN: FA_T itself), key t's row at x_rows[t] from element x_off on (a quantized
 * key's elements times scale[t]); x_rows has FA_STORED_AHEAD entries past `steps` to prefetch as
 * `prefetch` (an fa_rows_prefetch) says. */
FA_INLINE void FA_NAME(half_rows_block_)(const int kind, const int nr, const int nv, const int tail,
                                         int64_t steps, int64_t dim_left, const FA_T *w, int64_t ld,
                                         const void *const *x_rows, int64_t x_off, const float *scale,
                                         const fa_rows_prefetch prefetch, FA_T *acc, int64_t acc_stride)
{
    const int64_t elem = FA_NAME(kind_size_)(kind);
    const int scaled = kind > FA_F16; /* FA_KIND_E4M3_HALVES too */
    vtail last =
        V_TAIL(dim_left - (int64_t)(nv - 1) * FA_LANES < FA_LANES ? dim_left - (int64_t)(nv - 1) * FA_LANES
                                                                  : FA_LANES);
    vec a[FA_FEW_ROWS][FA_HALF_VECS_ONE];
    FA_UNROLL
    for (int i = 0; i < nr; i++) {
        FA_UNROLL
        for (int j = 0; j < nv; j++)
            a[i][j] = tail && j == nv - 1 ? V_LOAD_TAIL(acc + i * acc_stride + j * FA_LANES, last)
                                          : V_LOADU(acc + i * acc_stride + j * FA_LANES);
    }
    for (int64_t t = 0; t < steps; t++) {
        const char *row = (const char *)x_rows[t] + x_off * elem;
        if (prefetch == FA_ROWS_PREFETCH_FAR)
            for (int64_t e = 0; e < (int64_t)nv * FA_LANES * elem;
                 e += 64) /* each line of the chunk's part */
                FA_PREFETCH((const char *)x_rows[t + FA_STORED_AHEAD] + x_off * elem + e, FA_HINT_L2);
        if (prefetch != FA_ROWS_PREFETCH_NONE) /* and near their use, into L1 */
            for (int64_t e = 0; e < (int64_t)nv * FA_LANES * elem; e += 64)
                FA_PREFETCH((const char *)x_rows[t + FA_PREFETCH_KEYS] + x_off * elem + e, FA_HINT_L1);
        vec xv[FA_HALF_VECS_ONE];
        const vec sv = V_SET1(FA_NAME(key_scale_)(kind, scale, t));
        /* one row: each vector converted just before its FMA, so that one converted vector is live
         * at a time (converting all first spilled an accumulator to the stack over a 1-byte type,
         * a store and a reload in its chain every key); more rows share each converted vector
         * (row 0's probability, b0, serves both) */
        const vec b0 = V_SET1(w[t * ld]);
        FA_UNROLL
        for (int j = 0; j < nv; j++) {
            /* FA_LANES but in a tail: a constant lets the stored loads drop their partial path */
            const int64_t n = tail && j == nv - 1 ? dim_left - (int64_t)j * FA_LANES : FA_LANES;
            if (kind == FA_KIND_OWN)
                xv[j] = V_LOAD_PART((const FA_T *)(const void *)row + (int64_t)j * FA_LANES, n);
            else
                xv[j] = FA_NAME(key_part_)(kind, row, (int64_t)j * FA_LANES, n);
            if (scaled) xv[j] = V_MUL(sv, xv[j]);
            if (nr == 1) a[0][j] = V_FMA(b0, xv[j], a[0][j]);
        }
        if (nr > 1) {
            FA_UNROLL
            for (int i = 0; i < nr; i++) {
                vec b = i == 0 ? b0 : V_SET1(w[t * ld + i]);
                FA_UNROLL
                for (int j = 0; j < nv; j++) a[i][j] = V_FMA(b, xv[j], a[i][j]);
            }
        }
    }
    FA_UNROLL
    for (int i = 0; i < nr; i++) {
        FA_UNROLL
        for (int j = 0; j < nv; j++) {
            if (tail && j == nv - 1)
                V_STORE_TAIL(acc + i * acc_stride + j * FA_LANES, last, a[i][j]);
            else
                V_STOREU(acc + i * acc_stride + j * FA_LANES, a[i][j]);
        }
    }
}

#ifdef V_LOAD_BF16_PAIRS
/* The same block over bf16 rows whose chunk is whole runs of 2·FA_LANES elements (nv even, no
 * tail), loaded a run at a time and split by position (V_LOAD_BF16_PAIRS): a[i][2j] holds elements
 * 2·FA_LANES·j + 2l of row i, a[i][2j + 1] elements 2·FA_LANES·j + 2l + 1, unzipped from acc and
 * zipped back once per call. Each element still starts from its value in memory and takes the same
 * FMAs over the keys in order, so the bits are half_rows_block_'s; the loop spends one instruction a
 * vector widening, not two (on an Intel server core both ran on the FMA ports, on Zen 3 on its two
 * shuffle and shift pipes). */
FA_INLINE void FA_NAME(half_pairs_block_)(const int nr, const int nv, int64_t steps, const FA_T *w,
                                          int64_t ld, const void *const *x_rows, int64_t x_off,
                                          const fa_rows_prefetch prefetch, FA_T *acc, int64_t acc_stride)
{
    vec a[FA_FEW_ROWS][FA_HALF_VECS_ONE];
    FA_UNROLL
    for (int i = 0; i < nr; i++) {
        FA_UNROLL
        for (int j = 0; j < nv; j += 2)
            V_UNZIP(V_LOADU(acc + i * acc_stride + j * FA_LANES),
                    V_LOADU(acc + i * acc_stride + (j + 1) * FA_LANES), &a[i][j], &a[i][j + 1]);
    }
    for (int64_t t = 0; t < steps; t++) {
        const uint16_t *x = (const uint16_t *)x_rows[t] + x_off;
        if (prefetch == FA_ROWS_PREFETCH_FAR)
            for (int64_t e = 0; e < (int64_t)nv * FA_LANES;
                 e += 32) /* each 64-byte line of the chunk's part */
                FA_PREFETCH((const uint16_t *)x_rows[t + FA_STORED_AHEAD] + x_off + e, FA_HINT_L2);
        if (prefetch != FA_ROWS_PREFETCH_NONE) /* and near their use, into L1 */
            for (int64_t e = 0; e < (int64_t)nv * FA_LANES; e += 32)
                FA_PREFETCH((const uint16_t *)x_rows[t + FA_PREFETCH_KEYS] + x_off + e, FA_HINT_L1);
        vec xv[FA_HALF_VECS_ONE];
        FA_UNROLL
        for (int j = 0; j < nv; j += 2) V_LOAD_BF16_PAIRS(x + j * FA_LANES, &xv[j], &xv[j + 1]);
        FA_UNROLL
        for (int i = 0; i < nr; i++) {
            vec b = V_SET1(w[t * ld + i]);
            FA_UNROLL
            for (int j = 0; j < nv; j++) a[i][j] = V_FMA(b, xv[j], a[i][j]);
        }
    }
    FA_UNROLL
    for (int i = 0; i < nr; i++) {
        FA_UNROLL
        for (int j = 0; j < nv; j += 2) {
            vec lo, hi;
            V_ZIP(a[i][j], a[i][j + 1], &lo, &hi);
            V_STOREU(acc + i * acc_stride + j * FA_LANES, lo);
            V_STOREU(acc + i * acc_stride + (j + 1) * FA_LANES, hi);
        }
    }
}
#endif

_Static_assert(FA_HALF_VECS <= 4 && FA_HALF_VECS <= FA_HALF_VECS_FEW &&
                   FA_HALF_VECS_FEW <= FA_HALF_VECS_ONE && FA_HALF_VECS_ONE <= 8,
               "the switch lists blocks up to 4 vectors of 3 or 4 rows, up to 8 of 1 or 2");
/* the most vectors of an accumulate block of nr rows: the sizes instantiated */
#define FA_HALF_VECS_OF(NR) ((NR) == 1 ? FA_HALF_VECS_ONE : (NR) <= 2 ? FA_HALF_VECS_FEW : FA_HALF_VECS)

#define FA_HALF_ROWS_FN(K, NR, NV, TAIL) FA_NAME(half_rows_block_##K##_##NR##_##NV##_##TAIL##_)
// clang-format off
#define FA_HALF_ROWS_DEFINE(K, NR, NV, TAIL)                                                              \
    static __attribute__((noinline)) void FA_HALF_ROWS_FN(K, NR, NV, TAIL)(                               \
        int64_t steps, int64_t dim_left, const FA_T *w, int64_t ld, const void *const *x_rows,            \
        int64_t x_off, const float *scale, fa_rows_prefetch prefetch, FA_T *acc, int64_t acc_stride)      \
    {                                                                                                     \
        if ((NV) <= FA_HALF_VECS_OF(NR))                                                                  \
            FA_NAME(half_rows_block_)(K, NR, NV, TAIL, steps, dim_left, w, ld, x_rows, x_off, scale,      \
                                      prefetch, acc, acc_stride);                                         \
    }
#define FA_HALF_ROWS_DEFINE_VECS(K, NR, NV) FA_HALF_ROWS_DEFINE(K, NR, NV, 0) \
    FA_HALF_ROWS_DEFINE(K, NR, NV, 1)
#define FA_HALF_ROWS_DEFINE_ROWS(K, NR)                                   \
    FA_HALF_ROWS_DEFINE_VECS(K, NR, 1) FA_HALF_ROWS_DEFINE_VECS(K, NR, 2) \
    FA_HALF_ROWS_DEFINE_VECS(K, NR, 3)                                    \
    FA_HALF_ROWS_DEFINE_VECS(K, NR, 4)
#define FA_HALF_ROWS_DEFINE_WIDE(K, NR)                                                                   \
    FA_HALF_ROWS_DEFINE_ROWS(K, NR) FA_HALF_ROWS_DEFINE_VECS(K, NR, 5) FA_HALF_ROWS_DEFINE_VECS(K, NR, 6) \
    FA_HALF_ROWS_DEFINE_VECS(K, NR, 7) FA_HALF_ROWS_DEFINE_VECS(K, NR, 8)
#define FA_HALF_ROWS_DEFINE_TYPE(K)                                                              \
    FA_HALF_ROWS_DEFINE_WIDE(K, 1) FA_HALF_ROWS_DEFINE_WIDE(K, 2) FA_HALF_ROWS_DEFINE_ROWS(K, 3) \
    FA_HALF_ROWS_DEFINE_ROWS(K, 4)
/* the kinds by the values of their fa_dtype: FA_KIND_OWN (FA_F32's 0), FA_BF16 = 2 ... FA_F8_E5M2 = 6 */
FA_HALF_ROWS_DEFINE_TYPE(0)
FA_HALF_ROWS_DEFINE_TYPE(2)
FA_HALF_ROWS_DEFINE_TYPE(3)
FA_HALF_ROWS_DEFINE_TYPE(4)
FA_HALF_ROWS_DEFINE_TYPE(5)
FA_HALF_ROWS_DEFINE_TYPE(6)
/* one kind's case of the switch on the kind (the E4M3 halves' only where the table has them) */
#define FA_HALF_ROWS_KIND_CASE(NAME, K, NR, NV, TAIL) \
    case NAME: FA_HALF_ROWS_KIND_CALL(K, NR, NV, TAIL); break;
#ifdef V_LOAD_E4M3_HALVES
FA_HALF_ROWS_DEFINE_TYPE(7)
#define FA_HALF_ROWS_E4M3_HALVES_CASE(NR, NV, TAIL) \
    FA_HALF_ROWS_KIND_CASE(FA_KIND_E4M3_HALVES, 7, NR, NV, TAIL)
#else
#define FA_HALF_ROWS_E4M3_HALVES_CASE(NR, NV, TAIL)
#endif
#ifdef V_LOAD_E4M3_FINITE_HALVES
FA_HALF_ROWS_DEFINE_TYPE(8)
#define FA_HALF_ROWS_E4M3_FINITE_CASE(NR, NV, TAIL) \
    FA_HALF_ROWS_KIND_CASE(FA_KIND_E4M3_FINITE, 8, NR, NV, TAIL)
#else
#define FA_HALF_ROWS_E4M3_FINITE_CASE(NR, NV, TAIL)
#endif
#ifdef V_LOAD_BF16_PAIRS
#define FA_HALF_PAIRS_FN(NR, NV) FA_NAME(half_pairs_block_##NR##_##NV##_)
#define FA_HALF_PAIRS_DEFINE(NR, NV)                                                                      \
    static __attribute__((noinline)) void FA_HALF_PAIRS_FN(NR, NV)(                                       \
        int64_t steps, const FA_T *w, int64_t ld, const void *const *x_rows, int64_t x_off,               \
        fa_rows_prefetch prefetch, FA_T *acc, int64_t acc_stride)                                         \
    {                                                                                                     \
        if ((NV) <= FA_HALF_VECS_OF(NR))                                                                  \
            FA_NAME(half_pairs_block_)(NR, NV, steps, w, ld, x_rows, x_off, prefetch, acc, acc_stride);   \
    }
#define FA_HALF_PAIRS_DEFINE_ROWS(NR) FA_HALF_PAIRS_DEFINE(NR, 2) FA_HALF_PAIRS_DEFINE(NR, 4)
#define FA_HALF_PAIRS_DEFINE_WIDE(NR)                                                                        \
    FA_HALF_PAIRS_DEFINE_ROWS(NR) FA_HALF_PAIRS_DEFINE(NR, 6) FA_HALF_PAIRS_DEFINE(NR, 8)
FA_HALF_PAIRS_DEFINE_WIDE(1)
FA_HALF_PAIRS_DEFINE_WIDE(2)
FA_HALF_PAIRS_DEFINE_ROWS(3)
FA_HALF_PAIRS_DEFINE_ROWS(4)
#define FA_HALF_PAIRS_CASE(NR, NV)                                                                           \
    case (NR) * 16 + (NV):                                                                                   \
        FA_HALF_PAIRS_FN(NR, NV)(cols, p, ld, x_rows, y, prefetch, acc + y, acc_stride);                     \
        continue;
#define FA_HALF_PAIRS_ROWS(NR) FA_HALF_PAIRS_CASE(NR, 2) FA_HALF_PAIRS_CASE(NR, 4)
#define FA_HALF_PAIRS_WIDE(NR) FA_HALF_PAIRS_ROWS(NR) FA_HALF_PAIRS_CASE(NR, 6) FA_HALF_PAIRS_CASE(NR, 8)
#endif
#define FA_HALF_ROWS_KIND_CALL(K, NR, NV, TAIL)                                                              \
    FA_HALF_ROWS_FN(K, NR, NV, TAIL)(cols, width, p, ld, x_rows, y, scale, prefetch, acc + y, acc_stride)
#define FA_HALF_ROWS_CASE(NR, NV, TAIL)                                                                      \
    case ((NR) * 16 + (NV)) * 2 + (TAIL):                                                                    \
        switch (kind) {                                                                                      \
        FA_HALF_ROWS_KIND_CASE(FA_BF16, 2, NR, NV, TAIL)                                                     \
        FA_HALF_ROWS_KIND_CASE(FA_F16, 3, NR, NV, TAIL)                                                      \
        FA_HALF_ROWS_KIND_CASE(FA_I8, 4, NR, NV, TAIL)                                                       \
        FA_HALF_ROWS_KIND_CASE(FA_F8_E4M3, 5, NR, NV, TAIL)                                                  \
        FA_HALF_ROWS_KIND_CASE(FA_F8_E5M2, 6, NR, NV, TAIL)                                                  \
        FA_HALF_ROWS_E4M3_HALVES_CASE(NR, NV, TAIL)                                                          \
        FA_HALF_ROWS_E4M3_FINITE_CASE(NR, NV, TAIL)                                                          \
        default: FA_HALF_ROWS_KIND_CALL(0, NR, NV, TAIL); break;                                             \
        }                                                                                                    \
        break;
#define FA_HALF_ROWS_VECS(NR, NV) FA_HALF_ROWS_CASE(NR, NV, 0) FA_HALF_ROWS_CASE(NR, NV, 1)
#define FA_HALF_ROWS_ROWS(NR)                                                                                \
    FA_HALF_ROWS_VECS(NR, 1) FA_HALF_ROWS_VECS(NR, 2) FA_HALF_ROWS_VECS(NR, 3) FA_HALF_ROWS_VECS(NR, 4)
#define FA_HALF_ROWS_WIDE(NR)                                                                        \
    FA_HALF_ROWS_ROWS(NR) FA_HALF_ROWS_VECS(NR, 5) FA_HALF_ROWS_VECS(NR, 6) FA_HALF_ROWS_VECS(NR, 7) \
    FA_HALF_ROWS_VECS(NR, 8)
// clang-format on

static void FA_NAME(accumulate_stored_)(int64_t rows, int64_t cols, int64_t dim, const FA_T *p, int64_t ld,
                                        const void *const *x_rows, fa_dtype xt, const float *scale,
                                        fa_rows_prefetch prefetch, FA_T *acc, int64_t acc_stride)
{
    const int kind = FA_NAME(stored_kind_)(xt, scale, x_rows, cols, dim);
    /* one row takes FA_HALF_VECS_ONE over a 1-byte kind only (bf16 and f32 rows were slower so) */
    const int chunk_vecs =
        rows == 1 && FA_NAME(kind_size_)(kind) != 1 ? FA_HALF_VECS_FEW : FA_HALF_VECS_OF(rows);
    const int64_t chunk = (int64_t)chunk_vecs * FA_LANES;
    for (int64_t y = 0; y < dim; y += chunk) {
        int64_t width = dim - y < chunk ? dim - y : chunk;
        int nv = (int)((width + FA_LANES - 1) / FA_LANES), tail = width % FA_LANES != 0;
#ifdef V_LOAD_BF16_PAIRS
        /* bf16 in whole runs of 2·FA_LANES: a paired block, then the next chunk (its case continues);
         * any other chunk takes the blocks below */
        if (kind == FA_BF16 && width % (2 * FA_LANES) == 0) switch ((int)rows * 16 + nv) {
                FA_HALF_PAIRS_WIDE(1)
                FA_HALF_PAIRS_WIDE(2) FA_HALF_PAIRS_ROWS(3) FA_HALF_PAIRS_ROWS(4) default : break;
            }
#endif
        switch (((int)rows * 16 + nv) * 2 + tail) {
            FA_HALF_ROWS_WIDE(1)
            FA_HALF_ROWS_WIDE(2) FA_HALF_ROWS_ROWS(3) FA_HALF_ROWS_ROWS(4) default : break;
        }
    }
}

#ifdef V_LOAD_BF16_PAIRS
#undef FA_HALF_PAIRS_WIDE
#undef FA_HALF_PAIRS_ROWS
#undef FA_HALF_PAIRS_CASE
#undef FA_HALF_PAIRS_DEFINE_WIDE
#undef FA_HALF_PAIRS_DEFINE_ROWS
#undef FA_HALF_PAIRS_DEFINE
#undef FA_HALF_PAIRS_FN
#endif
#undef FA_HALF_ROWS_WIDE
#undef FA_HALF_ROWS_E4M3_HALVES_CASE
#undef FA_HALF_ROWS_E4M3_FINITE_CASE
#undef FA_HALF_ROWS_KIND_CASE
#undef FA_HALF_ROWS_ROWS
#undef FA_HALF_ROWS_VECS
#undef FA_HALF_ROWS_CASE
#undef FA_HALF_ROWS_KIND_CALL
#undef FA_HALF_ROWS_DEFINE_TYPE
#undef FA_HALF_ROWS_DEFINE_WIDE
#undef FA_HALF_ROWS_DEFINE_ROWS
#undef FA_HALF_ROWS_DEFINE_VECS
#undef FA_HALF_ROWS_DEFINE
#undef FA_HALF_ROWS_FN
#undef FA_HALF_VECS_OF
