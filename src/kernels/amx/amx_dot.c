/* SPDX-License-Identifier: BSD-3-Clause */
/* C (+)= A·B on AMX tiles (fa_kernels_bf16.dot; kernels.h has the layouts).
 *
 * Tile registers, fixed (the intrinsics take them as immediates): C blocks 0-3 (2 × 2 blocks of
 * 16 × 16 floats), A blocks 4-5 (16 rows of m × 32 k), B blocks 6-7 (16 pairs of k × 16 n). Each
 * TDPBF16PS does 16·16·32 multiply-adds (16 cycles a tile on the Xeon VM: 3.8 TFLOP/s per core,
 * 15x its f32 FMA peak), so a 2 × 2 block loads 4 tiles for 4 products.
 *
 * A configuration fixes every tile's rows and bytes, so edges take passes of their own: the full
 * 16-row blocks over the whole 32-wide k chunks, then (K not a multiple of 32) the same rows over
 * the last chunk, then the M % 16 last rows over both; each pass loads C back and adds, so every
 * C element sums its k chunks in order, the same for every call of these sizes. Loading a
 * configuration zeroes the tiles; C lives in memory between passes. The driver releases the tiles
 * (TILERELEASE, fa_amx_release) when an item is done, so a thread between calls holds no 8 KiB
 * tile state across context switches, and no configuration another library could have changed. */
#include <immintrin.h>
#include <string.h>

#include "kernels/amx/amx.h"

/* The tile instructions, written out: gcc 12's intrinsics tell the compiler that ldtilecfg reads 8
 * bytes of the 64-byte configuration (so it dropped the stores of the rest) and that tileloadd and
 * tilestored touch no memory. Here every instruction that reads or writes memory says so. AT&T
 * order: tdpbf16ps B, A, C is C += A·B. */
#define TILE_CONFIG(cfg) __asm__ volatile("ldtilecfg %0" ::"m"(*(cfg)) : "memory")
#define TILE_RELEASE()   __asm__ volatile("tilerelease" ::: "memory")
#define TILE_ZERO(t)     __asm__ volatile("tilezero %%tmm" #t ::)
#define TILE_LOAD(t, base, stride) \
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(base), "r"((long)(stride)) : "memory")
#define TILE_STORE(t, base, stride) \
    __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(base), "r"((long)(stride)) : "memory")
#define TILE_DP(c, a, b) __asm__ volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

typedef struct {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_config;

/* The configuration this thread's tiles hold (rows of C and A, k of A and B), 0 after a release:
 * ldtilecfg with a tilerelease costs about 190 cycles, a 64 × 64 × 64 product about 1000, so the
 * tiles keep theirs from call to call until the driver releases them (fa_amx_release). */
static _Thread_local int loaded_mrows, loaded_kc;

/* C and A tiles of `mrows` rows, A and B tiles `kc` bf16 deep (kc even, <= 32). Loading a
 * configuration zeroes every tile; each pass starts by loading or zeroing its C tiles anyway. */
static void configure(int mrows, int kc)
{
    if (mrows == loaded_mrows && kc == loaded_kc) return;
    amx_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 4; t++) cfg.rows[t] = (uint8_t)mrows, cfg.colsb[t] = 64;
    for (int t = 4; t < 6; t++) cfg.rows[t] = (uint8_t)mrows, cfg.colsb[t] = (uint16_t)(kc * 2);
    for (int t = 6; t < 8; t++) cfg.rows[t] = (uint8_t)(kc / 2), cfg.colsb[t] = 64;
    TILE_CONFIG(&cfg);
    loaded_mrows = mrows, loaded_kc = kc;
}

void fa_amx_release(void)
{
    if (!loaded_mrows) return;
    TILE_RELEASE();
    loaded_mrows = loaded_kc = 0;
}

/* What one pass reads and writes: rows [m0, m1) of C in blocks of `mrows` (the pass's tiles), k
 * in [k0, k1) in chunks of `kc`; C loaded first unless `zero`. */
typedef struct {
    const uint16_t *a, *b;
    float *c;
    int64_t lda, ldb, ldc, n;
} amx_operands;

#define A_AT(o, m, k) ((o)->a + (m) * (o)->lda + (k))
#define B_AT(o, k, n) ((o)->b + ((k) / 2) * 2 * (o)->ldb + 2 * (n))
#define C_AT(o, m, n) ((o)->c + (m) * (o)->ldc + (n))
#define A_STRIDE(o)   ((o)->lda * 2)
#define B_STRIDE(o)   ((o)->ldb * 4)
#define C_STRIDE(o)   ((o)->ldc * 4)

/* One 2 × 2 block of C: m0 and m0 + 16 (two_m), n0 and n0 + 16 (two_n). The four shapes are four
 * branches, as every tile number must be a constant. */
static void block(const amx_operands *o, int two_m, int two_n, int64_t m0, int64_t n0, int64_t k0, int64_t k1,
                  int64_t kc, int zero)
{
    if (zero) {
        TILE_ZERO(0);
        TILE_ZERO(1);
        TILE_ZERO(2);
        TILE_ZERO(3);
    } else {
        TILE_LOAD(0, C_AT(o, m0, n0), C_STRIDE(o));
        if (two_n) TILE_LOAD(1, C_AT(o, m0, n0 + 16), C_STRIDE(o));
        if (two_m) TILE_LOAD(2, C_AT(o, m0 + 16, n0), C_STRIDE(o));
        if (two_m && two_n) TILE_LOAD(3, C_AT(o, m0 + 16, n0 + 16), C_STRIDE(o));
    }
    for (int64_t k = k0; k < k1; k += kc) {
        TILE_LOAD(4, A_AT(o, m0, k), A_STRIDE(o));
        TILE_LOAD(6, B_AT(o, k, n0), B_STRIDE(o));
        TILE_DP(0, 4, 6);
        if (two_n) {
            TILE_LOAD(7, B_AT(o, k, n0 + 16), B_STRIDE(o));
            TILE_DP(1, 4, 7);
        }
        if (two_m) {
            TILE_LOAD(5, A_AT(o, m0 + 16, k), A_STRIDE(o));
            TILE_DP(2, 5, 6);
            if (two_n) TILE_DP(3, 5, 7);
        }
    }
    TILE_STORE(0, C_AT(o, m0, n0), C_STRIDE(o));
    if (two_n) TILE_STORE(1, C_AT(o, m0, n0 + 16), C_STRIDE(o));
    if (two_m) TILE_STORE(2, C_AT(o, m0 + 16, n0), C_STRIDE(o));
    if (two_m && two_n) TILE_STORE(3, C_AT(o, m0 + 16, n0 + 16), C_STRIDE(o));
}

/* One 1 × 2 block of C (m0; n0 and n0 + 16), on C tiles 0-1 and A tile 4 (set 0) or C tiles 2-3
 * and A tile 5 (set 1). With few k chunks a C tile's store takes as long as its products, and a
 * 2 × 2 block must wait for its four stores before its tiles take the next block: consecutive 1 × 2
 * blocks on alternate sets let one block's stores run under the next one's products (Q·Kᵀ at
 * D = 128: 30 cycles a product against 42, at D = 64 44 against 50, in a probe). */
/* The body of short_block on C tiles C0, C1 and A tile A (tile numbers are immediates, so each set
 * is its own instantiation of the same instructions). */
#define SHORT_BLOCK_ON(C0, C1, A)                                        \
    do {                                                                 \
        if (zero) {                                                      \
            TILE_ZERO(C0);                                               \
            if (two_n) TILE_ZERO(C1);                                    \
        } else {                                                         \
            TILE_LOAD(C0, C_AT(o, m0, n0), C_STRIDE(o));                 \
            if (two_n) TILE_LOAD(C1, C_AT(o, m0, n0 + 16), C_STRIDE(o)); \
        }                                                                \
        for (int64_t k = k0; k < k1; k += kc) {                          \
            TILE_LOAD(A, A_AT(o, m0, k), A_STRIDE(o));                   \
            TILE_LOAD(6, B_AT(o, k, n0), B_STRIDE(o));                   \
            TILE_DP(C0, A, 6);                                           \
            if (two_n) {                                                 \
                TILE_LOAD(7, B_AT(o, k, n0 + 16), B_STRIDE(o));          \
                TILE_DP(C1, A, 7);                                       \
            }                                                            \
        }                                                                \
        TILE_STORE(C0, C_AT(o, m0, n0), C_STRIDE(o));                    \
        if (two_n) TILE_STORE(C1, C_AT(o, m0, n0 + 16), C_STRIDE(o));    \
    } while (0)

static void short_block(const amx_operands *o, int set, int two_n, int64_t m0, int64_t n0, int64_t k0,
                        int64_t k1, int64_t kc, int zero)
{
    if (set == 0)
        SHORT_BLOCK_ON(0, 1, 4);
    else
        SHORT_BLOCK_ON(2, 3, 5);
}
#undef SHORT_BLOCK_ON

/* The k chunks at or below which 1 × 2 blocks on alternate tiles beat 2 × 2 ones (short_block). */
#define SHORT_CHUNKS 4

/* Rows [m0, m1) in blocks of mrows (configured), k in [k0, k1) by kc. Every C tile sums its k
 * chunks in order either way, so the blocking changes no bit. */
static void pass(const amx_operands *o, int64_t m0, int64_t m1, int mrows, int64_t k0, int64_t k1, int64_t kc,
                 int zero)
{
    if (k1 - k0 <= SHORT_CHUNKS * kc) {
        int set = 0;
        for (int64_t m = m0; m < m1; m += mrows)
            for (int64_t n = 0; n < o->n; n += 32, set ^= 1)
                short_block(o, set, n + 16 < o->n, m, n, k0, k1, kc, zero);
        return;
    }
    for (int64_t m = m0; m < m1; m += 2 * (int64_t)mrows) {
        int two_m = m + mrows < m1;
        for (int64_t n = 0; n < o->n; n += 32) {
            int two_n = n + 16 < o->n;
            block(o, two_m, two_n, m, n, k0, k1, kc, zero);
        }
    }
}

void fa_amx_dot(int64_t M, int64_t N, int64_t K, const uint16_t *a, int64_t lda, const uint16_t *b,
                int64_t ldb, float *c, int64_t ldc, float alpha, int accumulate)
{
    amx_operands o = {a, b, c, lda, ldb, ldc, N};
    int64_t m_full = M / 16 * 16, k_full = K / FA_AMX_PAD_K * FA_AMX_PAD_K;
    int m_edge = (int)(M - m_full), k_edge = (int)(K - k_full);
    /* full rows, then the last rows; each over the full chunks, then the last chunk */
    for (int rows_pass = 0; rows_pass < 2; rows_pass++) {
        int64_t m0 = rows_pass ? m_full : 0, m1 = rows_pass ? M : m_full;
        int mrows = rows_pass ? m_edge : 16;
        if (m1 <= m0) continue;
        if (k_full > 0) {
            configure(mrows, FA_AMX_PAD_K);
            pass(&o, m0, m1, mrows, 0, k_full, FA_AMX_PAD_K, !accumulate);
        }
        if (k_edge > 0) {
            configure(mrows, k_edge);
            pass(&o, m0, m1, mrows, k_full, K, k_edge, !accumulate && k_full == 0);
        }
        if (K == 0 && !accumulate)
            for (int64_t m = m0; m < m1; m++) memset(c + m * ldc, 0, (size_t)N * sizeof *c);
    }
    if (accumulate || alpha == 1.0f) return;
    const __m512 scale = _mm512_set1_ps(alpha);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n += 16)
            _mm512_storeu_ps(c + m * ldc + n, _mm512_mul_ps(_mm512_loadu_ps(c + m * ldc + n), scale));
}
