/* The tile kernels behind one table, one table per ISA (BLIS-style).
 *
 * Kernels see tiles and nothing else: no OpenMP, no hwloc, no allocation. Every pointer is to
 * the first element of a row-major tile; *_stride is the distance between rows in elements.
 * Tiles may have any size >= 1 (edge tiles included). */
#ifndef FA_KERNELS_H
#define FA_KERNELS_H

#include <stdint.h>

/* Declares the three tile operations for element type T, as struct members. */
#define FA_KERNEL_SET(T)                                                                                       \
    struct {                                                                                                   \
        /* s[r][c] = dot(q[r][0..dim), k[c][0..dim)) for r < rows, c < cols */                                  \
        void (*scores)(int64_t rows, int64_t cols, int64_t dim, const T *q, int64_t q_stride, const T *k,     \
                       int64_t k_stride, T *s, int64_t s_stride);                                              \
        /* Online-softmax step over a scaled, masked score tile (masked entries are -inf).                     \
         * Per row: m' = max(m, max_c s) (NaN propagates); if m' is -inf the row has seen no key yet: its      \
         * p row becomes 0 and nothing else changes. Otherwise alpha = exp(m - m'), s becomes                  \
         * p = exp(s - m'), l = alpha·l + sum p, m = m', and the acc row is multiplied by alpha only when     \
         * alpha != 1 (lazy rescaling). */                                                                     \
        void (*online_softmax)(int64_t rows, int64_t cols, T *s, int64_t s_stride, T *row_max, T *row_sum,     \
                               T *acc, int64_t acc_stride, int64_t dim_v);                                     \
        /* acc[r][0..dim_v) += sum_c p[r][c] · v[c][0..dim_v) */                                               \
        void (*accumulate)(int64_t rows, int64_t cols, int64_t dim_v, const T *p, int64_t p_stride, const T *v,\
                           int64_t v_stride, T *acc, int64_t acc_stride);                                      \
        /* acc[c][0..dim) += sum_r p[r][c] · x[r][0..dim)   (the transposed product, for dK and dV) */        \
        void (*accumulate_t)(int64_t rows, int64_t cols, int64_t dim, const T *p, int64_t p_stride, const T *x, \
                             int64_t x_stride, T *acc, int64_t acc_stride);                                    \
        /* Backward: s[r][c] = exp(s[r][c] - lse[r]), the forward's probabilities recomputed from its         \
         * log-sum-exp. A row with lse = -inf saw no key: it becomes 0 (not exp(-inf + inf) = NaN). */         \
        void (*probabilities)(int64_t rows, int64_t cols, T *s, int64_t s_stride, const T *lse);               \
        /* Backward: dp[r][c] = p[r][c] · (dp[r][c] - delta[r]), the gradient of the scaled scores. */         \
        void (*score_grad)(int64_t rows, int64_t cols, const T *p, int64_t p_stride, T *dp, int64_t dp_stride, \
                           const T *delta);                                                                    \
    }

typedef FA_KERNEL_SET(float) fa_kernels_f32;
typedef FA_KERNEL_SET(double) fa_kernels_f64;

typedef struct {
    const char *name; /* "ref", "avx2", "avx512": what fa_stats.isa reports */
    fa_kernels_f32 f32;
    fa_kernels_f64 f64;
} fa_kernels;

/* The portable table: the oracle every other table is tested against. */
extern const fa_kernels fa_kernels_ref;

/* Picks the table for this CPU, or the one FLASHATTN_ISA names. Returns 0 and sets *out, or a
 * nonzero fa_status (FA_ERR_UNSUPPORTED when the named table is missing, FA_ERR_ARG when the
 * name is unknown). Called once per context. */
int fa_kernels_select(const fa_kernels **out);

#endif
