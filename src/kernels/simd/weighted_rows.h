/* SPDX-License-Identifier: BSD-3-Clause */
/* The SIMD tables' accumulate and accumulate_t (kernels.h: P·V, dS·K; Pᵀ·dO, dSᵀ·Q), written once
 * against the vocabulary of simd/simd.h. Defines FA_NAME(accumulate_) and FA_NAME(accumulate_t_).
 *
 * acc[i][0..dim) += sum_t w(i, t) · x[t][0..dim), one microkernel for both products: accumulate
 * (i = query row, t = key: w(i, t) = p[t·ld + i]) and accumulate_t (i = key, t = query row:
 * w(i, t) = p[i·ld + t]). Register block: NI accumulator rows × NV vectors of dim, per reduction
 * step NV loads of x and NI broadcasts of w feeding NI·NV independent FMAs. The block's shape is
 * the ISA's (FA_ROWS_ROWS × FA_ROWS_VECS; 1-2 rows take FA_ROWS_FEW_VECS vectors, so that each x row
 * is streamed once, in order). Only the last vector of a chunk of dim that ends inside a vector is
 * a tail load and store (vtail): nothing past dim is read or written, so acc may be a caller's
 * row-major output (the backward's dQ) at any row stride, while whole vectors are plain loads.
 * Which product (TRANS) and whether a tail exists (TAIL) are compile-time cases, so each variant
 * keeps its accumulators in registers (gcc spilled them when the strides were run-time values).
 *
 * FMA-port budget (simd/softmax.h says why it is counted), AVX-512 f32, 6 × 4 block, per reduction
 * step: 24 FMAs, 4 loads of x and 6 broadcasts of w (load ports, though on Intel the loads still
 * slow the FMAs a little: avx512_tiles.h) and nothing else: every
 * whole vector of x is a plain load (a masked one takes an FMA-port slot on Intel), and the
 * accumulators are loaded and stored once per block, not per step. A chunk that ends inside a
 * vector (dim not a multiple of the lanes) adds one masked load per step. */

#define FA_ROWS_WIDE (FA_ROWS_FEW_VECS > FA_ROWS_VECS ? FA_ROWS_FEW_VECS : FA_ROWS_VECS)

FA_INLINE void FA_NAME(weighted_rows_block_)(const int ni, const int nv, const int tail, const int trans,
                                             int64_t steps, const FA_T *w, int64_t ld, const FA_T *x,
                                             int64_t x_stride, vtail last, FA_T *acc, int64_t acc_stride,
                                             int prefetch)
{
    vec a[FA_ROWS_ROWS][FA_ROWS_WIDE];
    FA_UNROLL
    for (int i = 0; i < ni; i++) {
        FA_UNROLL
        for (int j = 0; j < nv; j++)
            a[i][j] = tail && j == nv - 1 ? V_LOAD_TAIL(acc + i * acc_stride + j * FA_LANES, last)
                                          : V_LOADU(acc + i * acc_stride + j * FA_LANES);
    }
    for (int64_t t = 0; t < steps; t++) {
        /* with few rows each x row is used once, straight from memory: fetch it early */
        if (prefetch && t + 16 < steps) {
            FA_UNROLL
            for (int j = 0; j < nv; j += FA_LINE_VECS)
                FA_PREFETCH(x + (t + 16) * x_stride + j * FA_LANES, FA_HINT_L1);
        }
        vec xv[FA_ROWS_WIDE];
        FA_UNROLL
        for (int j = 0; j < nv; j++)
            xv[j] = tail && j == nv - 1 ? V_LOAD_TAIL(x + t * x_stride + j * FA_LANES, last)
                                        : V_LOADU(x + t * x_stride + j * FA_LANES);
        FA_UNROLL
        for (int i = 0; i < ni; i++) {
            vec b = V_SET1(trans ? w[i * ld + t] : w[t * ld + i]);
            FA_UNROLL
            for (int j = 0; j < nv; j++) a[i][j] = V_FMA(b, xv[j], a[i][j]);
        }
    }
    FA_UNROLL
    for (int i = 0; i < ni; i++) {
        FA_UNROLL
        for (int j = 0; j < nv; j++) {
            if (tail && j == nv - 1)
                V_STORE_TAIL(acc + i * acc_stride + j * FA_LANES, last, a[i][j]);
            else
                V_STOREU(acc + i * acc_stride + j * FA_LANES, a[i][j]);
        }
    }
}

/* Instantiates every (rows, vectors) edge size of the ISA's blocks, and only those: the switch turns
 * run-time edge sizes into compile-time ones. It lists up to 6 rows and 8 vectors (the larger block
 * of each axis over both ISAs); sizes beyond one ISA's own blocks compile to nothing. Each size is
 * a function of its own, not inlined into the switch: one function holding every size took the
 * instrumented builds' compilers (ASan, libFuzzer's coverage) minutes, as their costs grow faster
 * than a function's length; a call per block of rows is nothing beside the block's FMAs. */
_Static_assert(FA_ROWS_ROWS <= 6 && FA_ROWS_WIDE <= 8 && FA_ROWS_ROWS >= 2,
               "the switch lists blocks up to 6 x 8");
#define FA_ROWS_FITS(NI, NV) \
    (((NI) <= FA_ROWS_ROWS && (NV) <= FA_ROWS_VECS) || ((NI) <= 2 && (NV) <= FA_ROWS_FEW_VECS))
#define FA_ROWS_FN(NI, NV, TAIL, TRANS) FA_NAME(rows_block_##NI##_##NV##_##TAIL##_##TRANS##_)
// clang-format off
#define FA_ROWS_DEFINE(NI, NV, TAIL, TRANS)                                                                  \
    static __attribute__((noinline)) void FA_ROWS_FN(NI, NV, TAIL, TRANS)(                                   \
        int64_t steps, const FA_T *w, int64_t ld, const FA_T *x, int64_t x_stride, vtail last, FA_T *acc,    \
        int64_t acc_stride, int prefetch)                                                                    \
    {                                                                                                        \
        if (FA_ROWS_FITS(NI, NV))                                                                            \
            FA_NAME(weighted_rows_block_)((NI), (NV), (TAIL), (TRANS), steps, w, ld, x, x_stride, last, acc, \
                                          acc_stride, prefetch);                                             \
    }
#define FA_ROWS_DEFINE_TAILS(NI, NV, TRANS) FA_ROWS_DEFINE(NI, NV, 0, TRANS) FA_ROWS_DEFINE(NI, NV, 1, TRANS)
#define FA_ROWS_DEFINE_ROWS(NI, TRANS)                                                             \
    FA_ROWS_DEFINE_TAILS(NI, 1, TRANS) FA_ROWS_DEFINE_TAILS(NI, 2, TRANS) FA_ROWS_DEFINE_TAILS(NI, \
        3, TRANS)                                                                                  \
    FA_ROWS_DEFINE_TAILS(NI, 4, TRANS) FA_ROWS_DEFINE_TAILS(NI, 5, TRANS) FA_ROWS_DEFINE_TAILS(NI, \
        6, TRANS)                                                                                  \
    FA_ROWS_DEFINE_TAILS(NI, 7, TRANS) FA_ROWS_DEFINE_TAILS(NI, 8, TRANS)
#define FA_ROWS_DEFINE_ALL(TRANS)                                                             \
    FA_ROWS_DEFINE_ROWS(1, TRANS) FA_ROWS_DEFINE_ROWS(2, TRANS) FA_ROWS_DEFINE_ROWS(3, TRANS) \
    FA_ROWS_DEFINE_ROWS(4, TRANS) FA_ROWS_DEFINE_ROWS(5, TRANS) FA_ROWS_DEFINE_ROWS(6, TRANS)
FA_ROWS_DEFINE_ALL(0)
FA_ROWS_DEFINE_ALL(1)

#define FA_ROWS_CASE(NI, NV, TAIL)                                                                           \
    case (((NI) * 16 + (NV)) * 2 + (TAIL)):                                                                  \
        if (TRANS) FA_ROWS_FN(NI, NV, TAIL, 1)(steps, wb, ld, xb, x_stride, last, ab, acc_stride, few);      \
        else FA_ROWS_FN(NI, NV, TAIL, 0)(steps, wb, ld, xb, x_stride, last, ab, acc_stride, few);            \
        break;
#define FA_ROWS_TAIL_CASES(NI, NV) FA_ROWS_CASE(NI, NV, 0) FA_ROWS_CASE(NI, NV, 1)
#define FA_ROWS_ROWS_CASES(NI)                                                                               \
    FA_ROWS_TAIL_CASES(NI, 1) FA_ROWS_TAIL_CASES(NI, 2) FA_ROWS_TAIL_CASES(NI, 3) FA_ROWS_TAIL_CASES(NI, 4)  \
    FA_ROWS_TAIL_CASES(NI, 5) FA_ROWS_TAIL_CASES(NI, 6) FA_ROWS_TAIL_CASES(NI, 7) FA_ROWS_TAIL_CASES(NI, 8)
// clang-format on

/* n accumulator rows over `steps` reduction steps; TRANS a compile-time 0 or 1 in each caller. */
FA_INLINE void FA_NAME(weighted_rows_)(const int TRANS, int64_t n, int64_t steps, int64_t dim, const FA_T *w,
                                       int64_t ld, const FA_T *x, int64_t x_stride, FA_T *acc,
                                       int64_t acc_stride)
{
    int few = n <= FA_FEW_ROWS;
    int64_t chunk = (n <= 2 ? FA_ROWS_FEW_VECS : FA_ROWS_VECS) * FA_LANES;
    for (int64_t y = 0; y < dim; y += chunk) {
        int64_t width = dim - y < chunk ? dim - y : chunk;
        int nv = (int)((width + FA_LANES - 1) / FA_LANES);
        int64_t last_lanes = width - (int64_t)(nv - 1) * FA_LANES;
        int tail = last_lanes < FA_LANES;
        vtail last = V_TAIL(last_lanes);
        for (int64_t i = 0; i < n; i += FA_ROWS_ROWS) {
            int ni = n - i < FA_ROWS_ROWS ? (int)(n - i) : FA_ROWS_ROWS;
            const FA_T *wb = w + i * (TRANS ? ld : 1), *xb = x + y;
            FA_T *ab = acc + i * acc_stride + y;
            // clang-format off
            switch ((ni * 16 + nv) * 2 + tail) {
                FA_ROWS_ROWS_CASES(1) FA_ROWS_ROWS_CASES(2) FA_ROWS_ROWS_CASES(3)
                FA_ROWS_ROWS_CASES(4) FA_ROWS_ROWS_CASES(5) FA_ROWS_ROWS_CASES(6)
            default: break;
            }
            // clang-format on
        }
    }
}
#undef FA_ROWS_ROWS_CASES
#undef FA_ROWS_TAIL_CASES
#undef FA_ROWS_CASE
#undef FA_ROWS_DEFINE_ALL
#undef FA_ROWS_DEFINE_ROWS
#undef FA_ROWS_DEFINE_TAILS
#undef FA_ROWS_DEFINE
#undef FA_ROWS_FN
#undef FA_ROWS_FITS

static void FA_NAME(accumulate_)(int64_t rows, int64_t cols, int64_t dim, const FA_T *p, int64_t ld,
                                 const FA_T *x, int64_t x_stride, FA_T *acc, int64_t acc_stride)
{
    FA_NAME(weighted_rows_)(0, rows, cols, dim, p, ld, x, x_stride, acc, acc_stride);
}

static void FA_NAME(accumulate_t_)(int64_t rows, int64_t cols, int64_t dim, const FA_T *p, int64_t ld,
                                   const FA_T *x, int64_t x_stride, FA_T *acc, int64_t acc_stride)
{
    FA_NAME(weighted_rows_)(1, cols, rows, dim, p, ld, x, x_stride, acc, acc_stride);
}

#undef FA_ROWS_WIDE
