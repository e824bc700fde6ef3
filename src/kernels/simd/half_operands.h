/* SPDX-License-Identifier: BSD-3-Clause */
/* scores_half and accumulate_half (kernels.h) of the x86 float sets: a decode step's products with
 * the key and value rows read in bf16 or f16 where they lie, widened in registers. Included by the
 * ISA templates for float after few_rows_scores.h and weighted_rows.h, with the vocabulary and:
 *   V_LOAD_HALF(p, n, bf16): lanes [0, n) widened (exactly) from the half elements at p (n >= 1,
 *   every lane for n >= FA_LANES), the others 0, nothing past p + n read;
 *   FA_HALF_VECS: vectors of dim per accumulate block (the register file's share).
 * Defines FA_NAME(scores_half_) and FA_NAME(accumulate_half_).
 *
 * Each gives exactly the bits of the float kernel on the widened rows: every score is the same
 * FMAs over the same 16-lane (8-lane) chunks of dim, in the same order, then the same reduction
 * (few_rows_scores.h), and every accumulator element starts from its value in memory and adds the
 * same FMAs over the keys in order (weighted_rows.h); only the blocks that hold them in registers
 * differ, which no result depends on. So a half cache's decode step reads 2 bytes an element, once,
 * instead of widening a tile into the arena and reading that again. */

/* Rows asked for ahead of their use, into L2: far enough that a row's DRAM latency is hidden behind
 * the rows before it, near enough that L2 keeps them. Past the tile too (prefetches never fault):
 * in a contiguous cache the next tile's first rows then arrive in time. On the Xeon VM a decode
 * step over a bf16 cache (B1 H8 Nk32768 D128) took 14.2 ms with 16 keys ahead into L1 and within
 * the tile, 11.7-12.1 with 64 keys into L2. */
#define FA_HALF_PREFETCH 64

FA_INLINE void FA_NAME(half_dot_block_)(const int bf16, const int nk, const int nr, int64_t dim,
                                        const FA_T (*q)[FA_MAX_HEAD_DIM], const uint16_t *k, int64_t k_stride,
                                        FA_T *s, int64_t ld)
{
    vec acc[4][FA_FEW_ROWS];
    FA_UNROLL for (int i = 0; i < nk; i++)
        FA_UNROLL for (int r = 0; r < nr; r++) acc[i][r] = V_ZERO();
    for (int64_t x = 0; x < dim; x += FA_LANES) {
        vec qv[FA_FEW_ROWS];
        FA_UNROLL for (int r = 0; r < nr; r++) qv[r] = V_LOAD(q[r] + x);
        FA_UNROLL for (int i = 0; i < nk; i++) {
            vec kv = V_LOAD_HALF(k + i * k_stride + x, dim - x, bf16);
            FA_UNROLL for (int r = 0; r < nr; r++) acc[i][r] = V_FMA(kv, qv[r], acc[i][r]);
        }
    }
    FA_UNROLL for (int i = 0; i < nk; i++)
        FA_UNROLL for (int r = 0; r < nr; r++) s[i * ld + r] = V_REDUCE_ADD(acc[i][r]);
}

/* Each (type, keys, rows) a function of its own (weighted_rows.h says why). */
#define FA_HALF_DOT_FN(B, NK, NR) FA_NAME(half_dot_block_##B##_##NK##_##NR##_)
// clang-format off
#define FA_HALF_DOT_DEFINE(B, NK, NR)                                                                        \
    static __attribute__((noinline)) void FA_HALF_DOT_FN(B, NK, NR)(                                         \
        int64_t dim, const FA_T (*q)[FA_MAX_HEAD_DIM], const uint16_t *k, int64_t k_stride, FA_T *s, int64_t ld) \
    {                                                                                                        \
        FA_NAME(half_dot_block_)(B, NK, NR, dim, q, k, k_stride, s, ld);                                     \
    }
#define FA_HALF_DOT_DEFINE_ROWS(B, NR)                                                                       \
    FA_HALF_DOT_DEFINE(B, 1, NR) FA_HALF_DOT_DEFINE(B, 2, NR) FA_HALF_DOT_DEFINE(B, 3, NR) FA_HALF_DOT_DEFINE(B, 4, NR)
#define FA_HALF_DOT_DEFINE_TYPE(B)                                                                           \
    FA_HALF_DOT_DEFINE_ROWS(B, 1) FA_HALF_DOT_DEFINE_ROWS(B, 2) FA_HALF_DOT_DEFINE_ROWS(B, 3) FA_HALF_DOT_DEFINE_ROWS(B, 4)
FA_HALF_DOT_DEFINE_TYPE(0)
FA_HALF_DOT_DEFINE_TYPE(1)
#define FA_HALF_DOT_CASE(NK, NR)                                                                             \
    case (NK) * 8 + (NR):                                                                                    \
        if (bf16) FA_HALF_DOT_FN(1, NK, NR)(dim, q, k + c * k_stride, k_stride, s + c * ld, ld);             \
        else FA_HALF_DOT_FN(0, NK, NR)(dim, q, k + c * k_stride, k_stride, s + c * ld, ld);                  \
        break;
#define FA_HALF_DOT_ROWS(NR) FA_HALF_DOT_CASE(1, NR) FA_HALF_DOT_CASE(2, NR) FA_HALF_DOT_CASE(3, NR) FA_HALF_DOT_CASE(4, NR)
// clang-format on

FA_INLINE void FA_NAME(scores_half_body_)(const int bf16, int64_t rows, int64_t ld, int64_t cols, int64_t dim,
                                          const FA_T *qt, const uint16_t *k, int64_t k_stride, FA_T *s)
{
    /* the real rows, gathered out of the transposed pack, as scores_few_rows_ gathers them */
    _Alignas(64) FA_T q[FA_FEW_ROWS][FA_MAX_HEAD_DIM];
    int64_t dim_pad = (dim + FA_LANES - 1) / FA_LANES * FA_LANES;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t x = 0; x < dim_pad; x++) q[r][x] = x < dim ? qt[x * ld + r] : 0;
    for (int64_t c = 0; c < cols; c += 4) {
        int nk = cols - c < 4 ? (int)(cols - c) : 4;
        for (int64_t ahead = c + FA_HALF_PREFETCH; ahead < c + FA_HALF_PREFETCH + nk; ahead++)
            for (int64_t x = 0; x < dim; x += 32) _mm_prefetch((const char *)(k + ahead * k_stride + x), _MM_HINT_T1);
        switch (nk * 8 + (int)rows) {
            FA_HALF_DOT_ROWS(1) FA_HALF_DOT_ROWS(2) FA_HALF_DOT_ROWS(3) FA_HALF_DOT_ROWS(4)
        default: break;
        }
        for (int i = 0; i < nk; i++)
            for (int64_t r = rows; r < ld; r++) s[(c + i) * ld + r] = 0; /* padding rows, as scores_few_rows_ */
    }
}

#undef FA_HALF_DOT_ROWS
#undef FA_HALF_DOT_CASE
#undef FA_HALF_DOT_DEFINE_TYPE
#undef FA_HALF_DOT_DEFINE_ROWS
#undef FA_HALF_DOT_DEFINE
#undef FA_HALF_DOT_FN

static void FA_NAME(scores_half_)(int64_t rows, int64_t ld, int64_t cols, int64_t dim, const FA_T *qt,
                                  const uint16_t *k, int64_t k_stride, fa_dtype kt, FA_T *s)
{
    if (kt == FA_BF16)
        FA_NAME(scores_half_body_)(1, rows, ld, cols, dim, qt, k, k_stride, s);
    else
        FA_NAME(scores_half_body_)(0, rows, ld, cols, dim, qt, k, k_stride, s);
}

/* nr rows × nv vectors of acc (the last nv - 1 a tail when `tail`), over `steps` keys. */
FA_INLINE void FA_NAME(half_rows_block_)(const int bf16, const int nr, const int nv, const int tail, int64_t steps,
                                         int64_t dim_left, const FA_T *w, int64_t ld, const uint16_t *x,
                                         int64_t x_stride, FA_T *acc, int64_t acc_stride)
{
    vtail last = V_TAIL(dim_left - (int64_t)(nv - 1) * FA_LANES < FA_LANES ? dim_left - (int64_t)(nv - 1) * FA_LANES
                                                                          : FA_LANES);
    vec a[FA_FEW_ROWS][FA_HALF_VECS];
    FA_UNROLL for (int i = 0; i < nr; i++)
        FA_UNROLL for (int j = 0; j < nv; j++)
            a[i][j] = tail && j == nv - 1 ? V_LOAD_TAIL(acc + i * acc_stride + j * FA_LANES, last)
                                          : V_LOADU(acc + i * acc_stride + j * FA_LANES);
    for (int64_t t = 0; t < steps; t++) {
        for (int64_t e = 0; e < (int64_t)nv * FA_LANES; e += 32) /* every 64-byte line of the chunk's part */
            _mm_prefetch((const char *)(x + (t + FA_HALF_PREFETCH) * x_stride + e), _MM_HINT_T1);
        vec xv[FA_HALF_VECS];
        FA_UNROLL for (int j = 0; j < nv; j++)
            xv[j] = V_LOAD_HALF(x + t * x_stride + j * FA_LANES, dim_left - (int64_t)j * FA_LANES, bf16);
        FA_UNROLL for (int i = 0; i < nr; i++) {
            vec b = V_SET1(w[t * ld + i]);
            FA_UNROLL for (int j = 0; j < nv; j++) a[i][j] = V_FMA(b, xv[j], a[i][j]);
        }
    }
    FA_UNROLL for (int i = 0; i < nr; i++)
        FA_UNROLL for (int j = 0; j < nv; j++) {
            if (tail && j == nv - 1) V_STORE_TAIL(acc + i * acc_stride + j * FA_LANES, last, a[i][j]);
            else V_STOREU(acc + i * acc_stride + j * FA_LANES, a[i][j]);
        }
}

_Static_assert(FA_HALF_VECS <= 4, "the switch lists blocks up to 4 vectors");
#define FA_HALF_ROWS_FN(B, NR, NV, TAIL) FA_NAME(half_rows_block_##B##_##NR##_##NV##_##TAIL##_)
// clang-format off
#define FA_HALF_ROWS_DEFINE(B, NR, NV, TAIL)                                                                 \
    static __attribute__((noinline)) void FA_HALF_ROWS_FN(B, NR, NV, TAIL)(                                  \
        int64_t steps, int64_t dim_left, const FA_T *w, int64_t ld, const uint16_t *x, int64_t x_stride,     \
        FA_T *acc, int64_t acc_stride)                                                                       \
    {                                                                                                        \
        if ((NV) <= FA_HALF_VECS)                                                                            \
            FA_NAME(half_rows_block_)(B, NR, NV, TAIL, steps, dim_left, w, ld, x, x_stride, acc, acc_stride); \
    }
#define FA_HALF_ROWS_DEFINE_VECS(B, NR, NV) FA_HALF_ROWS_DEFINE(B, NR, NV, 0) FA_HALF_ROWS_DEFINE(B, NR, NV, 1)
#define FA_HALF_ROWS_DEFINE_ROWS(B, NR)                                                                      \
    FA_HALF_ROWS_DEFINE_VECS(B, NR, 1) FA_HALF_ROWS_DEFINE_VECS(B, NR, 2) FA_HALF_ROWS_DEFINE_VECS(B, NR, 3)  \
    FA_HALF_ROWS_DEFINE_VECS(B, NR, 4)
#define FA_HALF_ROWS_DEFINE_TYPE(B)                                                                          \
    FA_HALF_ROWS_DEFINE_ROWS(B, 1) FA_HALF_ROWS_DEFINE_ROWS(B, 2) FA_HALF_ROWS_DEFINE_ROWS(B, 3)              \
    FA_HALF_ROWS_DEFINE_ROWS(B, 4)
FA_HALF_ROWS_DEFINE_TYPE(0)
FA_HALF_ROWS_DEFINE_TYPE(1)
#define FA_HALF_ROWS_CASE(NR, NV, TAIL)                                                                      \
    case ((NR) * 8 + (NV)) * 2 + (TAIL):                                                                     \
        if (bf16) FA_HALF_ROWS_FN(1, NR, NV, TAIL)(cols, width, p, ld, x + y, x_stride, acc + y, acc_stride); \
        else FA_HALF_ROWS_FN(0, NR, NV, TAIL)(cols, width, p, ld, x + y, x_stride, acc + y, acc_stride);      \
        break;
#define FA_HALF_ROWS_VECS(NR, NV) FA_HALF_ROWS_CASE(NR, NV, 0) FA_HALF_ROWS_CASE(NR, NV, 1)
#define FA_HALF_ROWS_ROWS(NR)                                                                                \
    FA_HALF_ROWS_VECS(NR, 1) FA_HALF_ROWS_VECS(NR, 2) FA_HALF_ROWS_VECS(NR, 3) FA_HALF_ROWS_VECS(NR, 4)
// clang-format on

FA_INLINE void FA_NAME(accumulate_half_body_)(const int bf16, int64_t rows, int64_t cols, int64_t dim, const FA_T *p,
                                              int64_t ld, const uint16_t *x, int64_t x_stride, FA_T *acc,
                                              int64_t acc_stride)
{
    const int64_t chunk = FA_HALF_VECS * FA_LANES;
    for (int64_t y = 0; y < dim; y += chunk) {
        int64_t width = dim - y < chunk ? dim - y : chunk;
        int nv = (int)((width + FA_LANES - 1) / FA_LANES), tail = width % FA_LANES != 0;
        switch (((int)rows * 8 + nv) * 2 + tail) {
            FA_HALF_ROWS_ROWS(1) FA_HALF_ROWS_ROWS(2) FA_HALF_ROWS_ROWS(3) FA_HALF_ROWS_ROWS(4)
        default: break;
        }
    }
}

#undef FA_HALF_ROWS_ROWS
#undef FA_HALF_ROWS_VECS
#undef FA_HALF_ROWS_CASE
#undef FA_HALF_ROWS_DEFINE_TYPE
#undef FA_HALF_ROWS_DEFINE_ROWS
#undef FA_HALF_ROWS_DEFINE_VECS
#undef FA_HALF_ROWS_DEFINE
#undef FA_HALF_ROWS_FN
#undef FA_HALF_PREFETCH

static void FA_NAME(accumulate_half_)(int64_t rows, int64_t cols, int64_t dim, const FA_T *p, int64_t ld,
                                      const uint16_t *x, int64_t x_stride, fa_dtype xt, FA_T *acc,
                                      int64_t acc_stride)
{
    if (xt == FA_BF16)
        FA_NAME(accumulate_half_body_)(1, rows, cols, dim, p, ld, x, x_stride, acc, acc_stride);
    else
        FA_NAME(accumulate_half_body_)(0, rows, cols, dim, p, ld, x, x_stride, acc, acc_stride);
}
