/* SPDX-License-Identifier: BSD-3-Clause */
/* The tile kernels behind one table, one table per ISA (BLIS-style).
 *
 * Kernels see tiles and nothing else: no OpenMP, no hwloc, no allocation.
 *
 * Score tiles are TRANSPOSED: s[c][r] holds the score of query row r against key c, with a row
 * stride of `ld` (a multiple of FA_PAD_ELEMS_F32/F64, >= rows). The query block is packed transposed
 * by the table's pack_transposed (qt[x][r] = scale·q[r][x], zero-padded to `ld` rows): once per
 * forward work item, reused for every key tile (the backward's key-block items pack Q and dO once
 * per tile), while K and V are read where the caller keeps them (row-major, any row stride, dim
 * contiguous). A vector then spans one query row per lane: the softmax's running max and sum are
 * plain vertical vector operations, with no horizontal reduction anywhere in the hot loops.
 *
 * Only the scale is folded into the packed queries (qt = scale·qᵀ), not log2 e, so score tiles
 * hold scaled scores in natural units. The SIMD softmax kernels compute exp(s - m) as
 * exp2((s - m)·log2 e) (ref calls exp): the max is subtracted before anything rounds a large
 * score, so logits of 1e4 lose nothing that a plain exp(s - m) would keep (folding log2 e into q
 * instead would cost |s|·eps). Every table flushes probabilities below the smallest normal to +0
 * (include/flashattn.h, "Subnormals"). Kernels may compute padding rows (r in [rows, ld)) of score
 * tiles and row statistics; the drivers never read them.
 * accumulate and accumulate_t read and write acc only within `dim`, at any row stride and
 * alignment: the backward accumulates dQ straight into the caller's output. online_softmax's acc
 * (the forward's, in the arena) is 64-byte aligned with rows a multiple of FA_PAD_ELEMS_* wide. x operands
 * (K, V, Q, dO rows in caller memory) are read only within `dim`. */
#ifndef FA_KERNELS_H
#define FA_KERNELS_H

#include <stdint.h>

#include "flashattn.h"
#include "kernels/philox.h"

/* Elements in 64 bytes: the padding unit of every packed layout (rows of transposed tiles, accumulator
 * rows), whatever the lanes of the table's vectors. */
#define FA_PAD_ELEMS_F32 16
#define FA_PAD_ELEMS_F64 8

/* The value modifiers of one score tile s[c][r]: query row row0 + r against key col0 + c
 * (epilogue.h builds it from the problem; flashattn.h, fa_params, gives the semantics). */
typedef struct {
    double softcap;      /* > 0: s = softcap·tanh(s/softcap); 0: off */
    double alibi_slope;  /* != 0: s -= alibi_slope·|alibi_dist0 + r - c|; 0: off */
    int64_t alibi_dist0; /* row0 + d0 - col0: the distance i + d0 - j of r = 0, c = 0 */
    const void *bias;    /* NULL, or the bias of (r = 0, c = 0), in the tile's element type */
    int64_t bias_stride; /* elements from the bias of row r to row r + 1; 0: one bias row for all rows */
    int64_t bias_rows;   /* bias is read for r < bias_rows only (the tile's real rows) */
} fa_score_mods;

/* The layout of score tiles (and of everything indexed like them: dcap, probabilities, dP). Only
 * one exists: key-major ("transposed"), s[c][r] at s + c·ld + r, a vector spanning query rows. */
typedef enum { FA_TILE_KEY_MAJOR = 1 } fa_tile_layout;

/* What one element type's half of a table reads, accumulates in and blocks by (BLIS registers its
 * block sizes beside its kernels the same way). Facts about the code they sit next to, not tuning
 * knobs: tests/test_kernel_traits.c checks them against the contract above (padding of 64 bytes,
 * a vector's lanes dividing it, the accumulator type the drivers allocate). */
typedef struct {
    fa_dtype input;  /* the type of the rows the kernels read: q, k, v, dout */
    fa_dtype accum;  /* of score tiles, row statistics and accumulators */
    int lanes;       /* elements per vector register of accum (1: scalar code) */
    int pad_elems;   /* the padding unit of packed layouts, 64 bytes of accum */
    int scores_keys; /* S = Q·Kᵀ register block: keys ... */
    int scores_vecs; /* ... × vectors of query rows (tiles of few rows block otherwise) */
    int rows_rows;   /* accumulate register block: accumulator rows ... */
    int rows_vecs;   /* ... × vectors of dim (at most; narrower for one or two rows) */
    fa_tile_layout score_tile;
} fa_kernel_traits;

/* How scores_stored and accumulate_stored ask for the rows of their lists ahead of use: a few keys
 * before into L1 (NEAR); FA_STORED_AHEAD keys before into L2 and a few before into L1 again (FAR);
 * or not at all (NONE: the hardware prefetchers follow the reads). A CPU's choice
 * (plan/block_sizes.h, fa_decode_reads_for), which changes no bit. */
typedef enum { FA_ROWS_PREFETCH_NEAR, FA_ROWS_PREFETCH_FAR, FA_ROWS_PREFETCH_NONE } fa_rows_prefetch;

/* Declares the tile operations for element type T, as struct members. A table may leave an
 * operation NULL: the context then takes ref's (fa_kernels_select), whose contract is the same. */
// clang-format off
#define FA_KERNEL_SET(T)                                                                                     \
    struct {                                                                                                 \
        fa_kernel_traits traits;                                                                             \
        /* s[c][r] = sum_x qt[x][r] · k[c][x] for c < cols and r < rows (qt: dim rows of stride ld);         \
         * padding rows r in [rows, ld) get values nobody reads. A table may sum in another order for        \
         * small `rows` (a decode step): the choice depends on the tile, never on the thread. */             \
        void (*scores)(int64_t rows, int64_t ld, int64_t cols, int64_t dim, const T *qt, const T *k,         \
                       int64_t k_stride, T *s);                                                              \
        /* scores over the rows [0, rows) alone: of qt and s nothing at or past row rows rounded up to a     \
         * vector (lanes) is read or written, so a caller may score a sub-block of rows that starts at a     \
         * multiple of pad_elems (qt + r0, s + r0, the same ld). Over more than FA_HALF_ROWS rows each       \
         * score has the bits scores gives it in the whole tile. */                                          \
        void (*scores_rows)(int64_t rows, int64_t ld, int64_t cols, int64_t dim, const T *qt, const T *k,    \
                            int64_t k_stride, T *s);                                                         \
        /* dst[x][r] = mult·src[r][x] for x < dim, r < rows, and 0 for r in [rows, ld) (ld >= rows): the     \
         * query or dO block that scores reads as qt (pack.h, fa_pack_transposed, is ref's). src rows        \
         * lie src_stride elements apart at any alignment and are read only within dim; nothing outside      \
         * dst's dim rows of ld elements is written. mult·src rounds once, so every table gives ref's        \
         * bytes. */                                                                                         \
        void (*pack_transposed)(int64_t rows, int64_t dim, const T *src, int64_t src_stride, T mult,         \
                                T *dst, int64_t ld);                                                         \
        /* Online-softmax step over a masked score tile (masked entries -inf), every row r < ld: m' =        \
         * max(m, max_c s[c][r]) (NaN propagates). If m' is -inf the row has seen no key yet: its p          \
         * entries become 0 and nothing else changes. Otherwise alpha = exp(m - m'), p = exp(s - m'), l      \
         * = alpha·l + sum_c p, m = m', and acc row r (acc_width wide) is multiplied by alpha when alpha     \
         * != 1 and r < rows (lazy rescaling). With 1 <= rows <= the table's lanes (a decode step's tile)    \
         * a table may step only the rows of its first vector, leaving s, m and l of the others as they     \
         * were; each row it steps has the bits of the step over all ld rows. ld = 1 (rows = 1, a decode     \
         * step's one row read in place): s[c] for c < cols is that row, and every table gives the bits     \
         * of the same row stepped in a tile of more rows (m's but for the sign of a zero max where +0 and   \
         * -0 tie, which no p, l or result keeps: simd/softmax.h). */                                        \
        void (*online_softmax)(int64_t rows, int64_t ld, int64_t cols, T *s, T *row_max, T *row_sum,         \
                               T *acc, int64_t acc_stride, int64_t acc_width);                               \
        /* acc[r][0..dim) += sum_c p[c][r] · x[c][0..dim) for r < rows   (P·V, dS·K) */                      \
        void (*accumulate)(int64_t rows, int64_t cols, int64_t dim, const T *p, int64_t ld, const T *x,      \
                           int64_t x_stride, T *acc, int64_t acc_stride);                                    \
        /* acc[c][0..dim) += sum_r p[c][r] · x[r][0..dim) for c < cols   (Pᵀ·dO, dSᵀ·Q) */                   \
        void (*accumulate_t)(int64_t rows, int64_t cols, int64_t dim, const T *p, int64_t ld,                \
                             const T *x, int64_t x_stride, T *acc, int64_t acc_stride);                      \
        /* Backward: s[c][r] = exp(s[c][r] - lse[r]), the forward's probabilities recomputed from its        \
         * log-sum-exp, for r < ld. A row with lse = -inf saw no key: it becomes 0 (not NaN). */             \
        void (*probabilities)(int64_t ld, int64_t cols, T *s, const T *lse);                                 \
        /* Backward: dp[c][r] = p[c][r] · (dp[c][r] - delta[r]) for r < ld: the score gradient. */           \
        void (*score_grad)(int64_t ld, int64_t cols, const T *p, T *dp, const T *delta);                     \
        /* The value modifiers on every score of the tile (c < cols, r < ld), in the contract's order:       \
         * softcap, then ALiBi, then bias (rows r >= bias_rows get no bias, and their bias is never          \
         * read). With dcap != NULL (only when softcap is on; 64-byte aligned, as s) dcap[c][r] receives     \
         * 1 - tanh², the softcap's derivative, for the backward. NaN stays NaN; softcap(±inf) =             \
         * ±softcap. softcap and alibi_slope are rounded to T once; the ALiBi term is                        \
         * slope·(T)|distance| from the exact integer distance, so a score's result does not depend on       \
         * where its tile starts; otherwise IEEE operations in this order (-inf + a finite bias is           \
         * -inf). Every table gives ref's bits but for the f32 tanh, which the x86 tables approximate        \
         * within 1.3 ulp (kernels/score_mods.h). */                                                         \
        void (*modify)(const fa_score_mods *m, int64_t ld, int64_t cols, T *s, T *dcap);                     \
        /* Backward through the softcap: ds[c][r] *= dcap[c][r] for c < cols, r < ld. */                     \
        void (*scale_grad)(int64_t ld, int64_t cols, T *ds, const T *dcap);                                  \
        /* dst[r][x] = value of src[r][x] for r < rows, x < dim: rows of a stored type `from` (FA_BF16       \
         * or FA_F16, 2-byte elements; FA_I8, FA_F8_E4M3 or FA_F8_E5M2, 1-byte elements) src_stride          \
         * elements apart at any alignment, into T rows dst_stride apart. The value is the element           \
         * converted exactly (kernels/half.h, kernels/quant.h), times scale[r·scale_stride] (one float       \
         * multiplication) when scale is not NULL (the quantized types; NULL for the half ones). How a       \
         * stored type reaches the kernels above: the drivers widen a tile once into the arena. Every        \
         * table gives ref's bits. */                                                                        \
        void (*widen)(int64_t rows, int64_t dim, const void *src, int64_t src_stride, fa_dtype from,         \
                      const float *scale, int64_t scale_stride, T *dst, int64_t dst_stride);                 \
        /* scores and accumulate over key (value) rows of a stored type kt (xt; or the set's own type,       \
         * FA_F32 in the float set), scaled as widen scales them, read where they lie, for tiles of at       \
         * most FA_HALF_ROWS real query rows (a decode step): bit for bit what scores and accumulate         \
         * give on the same rows widened. Key c's row is k_rows[c] (any address and alignment: a page of     \
         * a paged cache is as good as a contiguous run), its scale scale[c] (NULL but for the quantized     \
         * types); the lists hold FA_STORED_AHEAD more rows (the next keys' where the kernels prefetch       \
         * them), only prefetched, as `prefetch` says. Only the float set's are called (stored types         \
         * accumulate in float). scores_stored takes the tile's query rows as scores packs them, but row     \
         * by row: q[r·q_stride + x] = qt[x·ld + r] for x < dim, 0 from dim to q_stride (a multiple of 64    \
         * bytes; q 64-byte aligned), gathered once by the caller for all the tiles it scores. It writes     \
         * rows [0, rows) of each key and leaves the padding rows [rows, ld) as they are: the caller keeps   \
         * them defined (online_softmax reads them; no result does). ld may be 1 for one row, the layout     \
         * online_softmax steps a vector of keys at a time; accumulate_stored reads p so too. */             \
        void (*scores_stored)(int64_t rows, int64_t ld, int64_t cols, int64_t dim, const T *q,               \
                              int64_t q_stride, const void *const *k_rows, fa_dtype kt, const float *scale,  \
                              fa_rows_prefetch prefetch, T *s);                                              \
        void (*accumulate_stored)(int64_t rows, int64_t cols, int64_t dim, const T *p, int64_t ld,           \
                                  const void *const *x_rows, fa_dtype xt, const float *scale,                \
                                  fa_rows_prefetch prefetch, T *acc, int64_t acc_stride);                    \
        /* Dropout's keep mask (kernels/philox.h) on the transposed probability tile s[c][r] whose row r     \
         * is mask row i0 + r and column c mask key j0 + c, for r < rows, c < cols: a kept probability       \
         * times kept (1/(1 - p) rounded to T once), a dropped one 0; nothing else is touched. */            \
        void (*dropout_probs)(const fa_dropout_stream *st, int64_t i0, int64_t rows, int64_t j0,             \
                              int64_t cols, T kept, T *s, int64_t ld);                                       \
        /* score_grad with dropout, over the whole tile (ld rows): given P (undropped) in pt and dP in ds,   \
         * with M the mask times kept, ds = P∘(dP∘M - delta) and then pt = P∘M (what dV = Pᵀ·dO reads)      \
         * for r < rows; rows [rows, ld) get score_grad's ds = P∘(dP - delta). Every table gives ref's       \
         * bits: the generator is integer arithmetic, each element one multiplication or two. */            \
        void (*dropout_score_grad)(const fa_dropout_stream *st, int64_t i0, int64_t rows, int64_t j0,        \
                                   int64_t cols, T kept, T *pt, T *ds, const T *delta, int64_t ld);          \
    }
// clang-format on

/* Every operation of FA_KERNEL_SET by name, for code that treats them alike (select.c). */
// clang-format off
#define FA_KERNEL_OPS(X)                                                                          \
    X(scores) X(scores_rows) X(pack_transposed) X(online_softmax) X(accumulate) X(accumulate_t)   \
    X(probabilities) X(score_grad) X(modify) X(scale_grad) X(widen) X(scores_stored)              \
    X(accumulate_stored) X(dropout_probs) X(dropout_score_grad)
// clang-format on

/* The most real query rows of a tile that scores_stored and accumulate_stored take. */
#define FA_HALF_ROWS 4

/* The rows past a tile that the row lists of scores_stored and accumulate_stored carry: how far
 * ahead the kernels prefetch. */
#define FA_STORED_AHEAD 64

typedef FA_KERNEL_SET(float) fa_kernels_f32;
typedef FA_KERNEL_SET(double) fa_kernels_f64;

/* ---- bf16 on dot-product units ----
 * A table whose CPU multiplies bf16 pairs into f32 (AMX tiles) runs an all-bf16 forward on them
 * instead of widening (forward_dot.h): the products of bf16 inputs are exact in f32 and summed in
 * f32, so scores keep f32's accuracy; P is rounded to bf16 once before P·V (the accuracy contract,
 * flashattn.h, bounds what that costs). Its operands are in two layouts:
 *   rows:  row-major bf16, x[m·ld + k] (K and V rows where the caller keeps them, Vᵀ packed);
 *   pairs: two consecutive k of one column side by side, x[(k/2)·2·ld + 2·n + k%2] (AMX's "VNNI"
 *          B operand): queries packed, and P converted, with a column n = a query row, ld of them.
 * Score tiles, row statistics and the output accumulator stay f32; the accumulator is transposed,
 * acc[y·ld + r] (value dim y, query row r), the product that pairs of P make without a transpose. */
typedef struct {
    fa_kernel_traits traits; /* input FA_BF16, accum FA_F32; scores_keys/vecs: the dot's tile */
    int pad_k;               /* padded operands (pack_pairs, pack_rows_t, pairs_of) are zero up to a
                              * multiple of pad_k along k */
    /* dst in pairs: dst[(x/2)·2·ld + 2r + x%2] = src[r·src_stride + x] for r < rows, x < dim; zero for
     * r in [rows, ld) and x in [dim, dim rounded up to pad_k). src: bf16 rows at any alignment, read
     * only within dim. (The query block, unscaled.) */
    void (*pack_pairs)(int64_t rows, int64_t dim, const uint16_t *src, int64_t src_stride, uint16_t *dst,
                       int64_t ld);
    /* dst transposed, in rows: dst[x·ld + c] = src[c·src_stride + x] for c < cols, x < dim; zero for c in
     * [cols, ld) (ld >= cols, a multiple of pad_k). Returns whether every element read is finite (no
     * Inf or NaN: drivers then need no visible-keys products on a mask's edge). (Vᵀ, Kᵀ.) */
    int (*pack_rows_t)(int64_t cols, int64_t dim, const uint16_t *src, int64_t src_stride, uint16_t *dst,
                       int64_t ld);
    /* dst in pairs of rows: dst[(r/2)·2·ldd + 2x + r%2] = src[r·src_stride + x] for r < rows, x < dim;
     * zero for x in [dim, ldd) and r in [rows, rows_pad) (rows_pad even, ldd a multiple of 16).
     * Returns whether every element read is finite. (Q and dO as the B of dK += dSᵀ·Q, dV += Pᵀ·dO.) */
    int (*pack_rows_pairs)(int64_t rows, int64_t rows_pad, int64_t dim, const uint16_t *src,
                           int64_t src_stride, uint16_t *dst, int64_t ldd);
    /* dst[i] = bf16(src[i]) for i < n (nearest even; subnormals to zero, as the units read them): a
     * tile of P or dS, key-major, as the rows of A. */
    void (*rows_of)(int64_t n, const float *src, uint16_t *dst);
    /* pp in pairs of keys: pp[(c/2)·2·ld + 2r + c%2] = bf16(p[c·ld + r]) (round to nearest even) for
     * c < cols, r < ld; zero for c in [cols, cols rounded up to pad_k). (P, for P·V.) */
    void (*pairs_of)(int64_t ld, int64_t cols, const float *p, uint16_t *pp);
    /* C[m·ldc + n] = alpha·sum_k A[m][k]·B[k][n] (accumulate 0) or C[m·ldc + n] += sum_k A[m][k]·B[k][n]
     * (accumulate 1, alpha unused), for m < M, n < N (N a multiple of 16), k < K (K even): A in rows
     * (lda; read only within K), B in pairs (ldb >= N). Products exact, sums in f32 in the table's
     * order (the same for every call with these sizes), subnormal inputs and results flushed to 0
     * as the dot-product units do (below 2^-126: never a probability, flashattn.h "Subnormals").
     * Sums round to nearest, or to odd where the unit does (BFDOT: neon/neon_bf16_dot.c), within
     * (K + 2)·2^-24·(|C| + sum|a·b|) of the exact result either way, to first order. */
    void (*dot)(int64_t M, int64_t N, int64_t K, const uint16_t *a, int64_t lda, const uint16_t *b,
                int64_t ldb, float *c, int64_t ldc, float alpha, int accumulate);
    /* online_softmax (FA_KERNEL_SET) over the tile s[c][r] of raw scores whose scores are scale·s
     * (scale > 0 and finite: the max is taken raw, then scaled; p = exp(scale·s - m)), with the
     * transposed accumulator acc[y·ld + r], y < acc_dim (rows whose max rose are rescaled there), and
     * P written as pairs_of writes it, into pp, not into s (whose contents it leaves undefined).
     * row_max holds scores (scaled). */
    void (*online_softmax_pairs)(int64_t rows, int64_t ld, int64_t cols, float scale, float *s,
                                 float *row_max, float *row_sum, float *acc, int64_t acc_dim, uint16_t *pp);
    /* The calling thread is done with the units until its next dot (an item's end): state a dot
     * keeps between calls (AMX's tile configuration) is dropped. */
    void (*release)(void);
} fa_kernels_bf16;

/* Every operation of fa_kernels_bf16 by name. */
#define FA_KERNEL_BF16_OPS(X) \
    X(pack_pairs)             \
    X(pack_rows_t) X(pack_rows_pairs) X(rows_of) X(pairs_of) X(dot) X(online_softmax_pairs) X(release)

/* CPU features a table's instructions need; selection requires every one (cpu_features.c reads
 * the CPUID bits and checks that the OS saves the registers they use; on aarch64 Linux's hwcaps,
 * which it reports only for registers it saves). */
enum {
    FA_CPU_AVX2 = 1u << 0,
    FA_CPU_FMA = 1u << 1,
    FA_CPU_AVX512F = 1u << 2,
    FA_CPU_AVX512DQ = 1u << 3, /* vreduceps/pd, 512-bit float and/or */
    FA_CPU_AVX512BW = 1u << 4,
    FA_CPU_AVX512VL = 1u << 5,
    FA_CPU_AVX512BF16 = 1u << 6, /* vdpbf16ps, vcvtne2ps2bf16 */
    FA_CPU_AVX512FP16 = 1u << 7,
    FA_CPU_F16C = 1u << 8,
    FA_CPU_AMX_BF16 = 1u << 9, /* AMX-TILE and AMX-BF16, their state saved (XCR0), and Linux's
                                * permission to use it (arch_prctl ARCH_REQ_XCOMP_PERM) granted */
    /* aarch64 (getauxval AT_HWCAP, AT_HWCAP2) */
    FA_CPU_ASIMD = 1u << 10, /* Advanced SIMD (NEON): every aarch64 Linux CPU */
    FA_CPU_FP16 = 1u << 11,  /* half-precision arithmetic, scalar and vector (FPHP, ASIMDHP) */
    FA_CPU_BF16 = 1u << 12,  /* FEAT_BF16: BFDOT, BFMMLA, BFCVT */
    FA_CPU_I8MM = 1u << 13,  /* FEAT_I8MM: int8 matrix multiply */
    FA_CPU_SVE = 1u << 14,
    FA_CPU_SVE2 = 1u << 15,
    /* The SVE vector length of the calling thread (prctl PR_SVE_GET_VL) is exactly this: the sve
     * table's instantiations for fixed lengths (kernels/sve/sve_tiles.h says why) */
    FA_CPU_SVE_VL128 = 1u << 16,
    FA_CPU_SVE_VL256 = 1u << 17,
    FA_CPU_SVE_VL512 = 1u << 18,
    FA_CPU_SVE_VL1024 = 1u << 19,
    FA_CPU_SVE_VL2048 = 1u << 20,
    FA_CPU_SVE_BF16 = 1u << 21, /* SVE's BFDOT, BFMMLA, BFCVT (HWCAP2_SVEBF16) */
};

typedef struct {
    const char *name;  /* "ref", "avx2", "avx512", "neon", "neon_bf16", "sve", "sve_bf16"...: fa_stats.isa */
    unsigned requires; /* FA_CPU_* bits */
    const fa_kernels_f32 *f32;
    const fa_kernels_f64 *f64;
    const fa_kernels_bf16 *bf16; /* NULL: bf16 calls are widened and run on f32 */
} fa_kernels;

/* A table as a context holds it: the operations the table leaves NULL filled from ref's. */
typedef struct {
    fa_kernels table; /* table.f32, .f64 (and .bf16 when the table has one) point at the sets below */
    fa_kernels_f32 f32;
    fa_kernels_f64 f64;
    fa_kernels_bf16 bf16;
} fa_kernels_resolved;

/* The portable table: the oracle every other table is tested against. It widens bf16 (its bf16 is
 * NULL); fa_kernels_ref_bf16 is the same operations in scalar C, the oracle of the tables' bf16
 * sets and what a set's NULL operations fall back on. */
extern const fa_kernels fa_kernels_ref;
extern const fa_kernels_bf16 fa_kernels_ref_bf16;
#ifdef FA_HAVE_X86_KERNELS
extern const fa_kernels fa_kernels_avx2;
extern const fa_kernels fa_kernels_avx512;
extern const fa_kernels fa_kernels_amx;
extern const fa_kernels fa_kernels_avx512_bf16;
#endif
#ifdef FA_HAVE_ARM_KERNELS
extern const fa_kernels fa_kernels_neon;
extern const fa_kernels fa_kernels_neon_bf16;
/* The sve and sve_bf16 tables, one per vector length they are compiled for (all named "sve" or
 * "sve_bf16"); dispatch.c picks the one for the calling thread's length. */
extern const fa_kernels fa_kernels_sve128, fa_kernels_sve256, fa_kernels_sve512, fa_kernels_sve1024,
    fa_kernels_sve2048;
extern const fa_kernels fa_kernels_sve_bf16_128, fa_kernels_sve_bf16_256, fa_kernels_sve_bf16_512,
    fa_kernels_sve_bf16_1024, fa_kernels_sve_bf16_2048;
#endif

#endif
