/* SPDX-License-Identifier: BSD-3-Clause */
/* The score modifiers (kernels.h: modify, scale_grad) shared by the SIMD templates (avx2_tiles.h,
 * avx512_tiles.h, neon_tiles.h, sve_tiles.h), which include it after their vocabulary (simd/simd.h):
 *   FA_T, FA_LANES, FA_NAME, FA_INLINE, vec, V_LOAD, V_LOADU, V_STORE, V_SET1, V_ADD, V_SUB, V_MUL,
 *   V_DIV, V_FMA, V_AND, V_OR, V_ANDNOT (~a & b, bitwise), V_CMP (a vmask), V_LOAD_PART (few_rows_scores.h)
 *   and FA_NAME(exp2_);
 *   vmask, V_SELECT(m, a, b) (m ? b : a, per lane), V_LANES_BELOW(n) (lanes [0, n) as a vmask; n any);
 *   V_TRANSPOSE(v): v[i] lane j becomes v[j] lane i, for a vec v[FA_LANES];
 *   FA_TANH_VECTOR: 1 for the vector tanh below (float), 0 for libm's tanh per lane (double, where
 *   speed is not a target and the tables then give ref's bits).
 * Defines FA_NAME(modify_) and FA_NAME(scale_grad_), the table's members, and, with FA_TANH_VECTOR,
 * FA_NAME(tanh_) (for the tests' entry points).
 *
 * One pass over the tile: each score vector is loaded once, goes through softcap, ALiBi and bias
 * and is stored once. Which modifiers are on is decided once per call, and each combination is its
 * own compile-time variant of the loop (as FlashAttention's masks are), never a flag per score.
 *
 * Cost per vector of scores (FA_LANES of them), besides its load and store: softcap ~29 ops with
 * one division (the tanh below, the two scalings and, in the backward, 1 - t²), ALiBi 1 subtraction
 * and 1 load of a table built per chunk, a key-padding bias (stride 0) 1 addition, a full bias 1
 * addition plus 1 load and FA_LANES·log2(FA_LANES)/FA_LANES shuffles of its transposition. */

/* The tile is walked in chunks of rows × columns, so that the ALiBi term of every score of a chunk
 * comes from one table of FA_MODS_ROWS + FA_MODS_COLS - 1 values on the stack (kept in L1). Both are
 * multiples of every table's lanes. */
#define FA_MODS_ROWS 256
#define FA_MODS_COLS 64
_Static_assert(FA_MODS_ROWS % FA_LANES == 0 && FA_MODS_COLS % FA_LANES == 0, "chunks of whole vectors");

#if FA_TANH_VECTOR
/* tanh(x) for float, within 1.3 ulp of the exact value (max 1.254 ulp, max relative error 9.8e-8,
 * measured over every float; tests/test_tanh.c checks a dense sweep), odd (tanh(-x) = -tanh(x) to
 * the bit), tanh(±0) = ±0, tanh(±inf) = ±1 exactly, tanh(NaN) = NaN, and never above 1 in
 * magnitude (glibc's tanhf: 2.14 ulp on tests/test_tanh.c's sweep). With a = |x| and y = a²:
 *  - a < 1: tanh = a + a·y·N(y)/Q(y), N(y)/Q(y) ≈ (tanh(a)/a - 1)/y, a rational minimax fit of
 *    degree 1/2 (relative error 1.8e-9 on [0, 1]; coefficients: Remez in 50 digits, rounded to
 *    float). The correction term is at most 0.24 a, so its rounding errors reach the result scaled
 *    down, and at small a the result is a to the bit (a subnormal included): no cancellation.
 *  - a >= 1: tanh = 1 - 2e/(1 + e) with e = exp(-2a), from the table's exp2 (2e = exp2(1 - 2a·log2 e)).
 *    2e/(1 + e) <= 0.24 here, so exp2's error (2e-7 relative) reaches tanh scaled by at most 0.31;
 *    a = +inf gives e = 0 and tanh = 1 exactly, and exp2's flush makes tanh exactly 1 far earlier.
 * Both halves are computed for every lane and share one division (num/den chosen per lane): ~25
 * operations. A single rational fit on [0, 9] (Eigen's kind) costs ~15 but is 5 ulp off near 1:
 * every rounding inside P/Q, relative to a number near 1, is a full ulp of the result there, while
 * 1 - f keeps f's roundings small. NaN fails the compare, takes the exp2 half and stays NaN. */
#define FA_TANH_N0            (-0x1.555556p-2f)
#define FA_TANH_N1            (-0x1.e20882p-7f)
#define FA_TANH_Q1            (0x1.c6ca62p-2f)
#define FA_TANH_Q2            (0x1.02049ep-6f)
#define FA_TANH_MINUS_2_LOG2E (-2.88539008177792681472f)

FA_INLINE vec FA_NAME(tanh_)(vec x)
{
    const vec sign_bit = V_SET1(-0.0f), one = V_SET1(1.0f);
    vec sign = V_AND(sign_bit, x), a = V_ANDNOT(sign_bit, x);
    vmask small = V_CMP(a, one, _CMP_LT_OQ);
    vec y = V_MUL(a, a);
    vec n = V_FMA(V_SET1(FA_TANH_N1), y, V_SET1(FA_TANH_N0));
    vec q = V_FMA(V_FMA(V_SET1(FA_TANH_Q2), y, V_SET1(FA_TANH_Q1)), y, one);
    vec e2 = FA_NAME(exp2_)(V_FMA(a, V_SET1(FA_TANH_MINUS_2_LOG2E), one));
    vec f = V_DIV(V_SELECT(small, e2, n), V_SELECT(small, V_FMA(e2, V_SET1(0.5f), one), q));
    vec t = V_SELECT(small, V_SUB(one, f), V_FMA(V_MUL(a, y), f, a));
    return V_OR(t, sign);
}
#endif

/* What one call needs, converted to the element type once. */
typedef struct {
    vec cap, inv_cap; /* softcap and 1/softcap (f32: s·(1/cap), within an ulp of s/cap) */
    FA_T slope;
    int64_t dist0;
    const FA_T *bias;
    int64_t bias_stride, bias_rows;
} FA_NAME(mods_);

/* s = cap·tanh(s/cap), and 1 - tanh² into *d when d is not NULL. */
FA_INLINE vec FA_NAME(softcap_)(const FA_NAME(mods_) * m, vec x, vec *d)
{
#if FA_TANH_VECTOR
    vec t = FA_NAME(tanh_)(V_MUL(x, m->inv_cap));
#else
    /* libm per lane, as ref computes it (the same division, tanh and product: ref's bits) */
    _Alignas(64) FA_T v[FA_LANES];
    V_STORE(v, V_DIV(x, m->cap));
    for (int i = 0; i < FA_LANES; i++) v[i] = tanh(v[i]);
    vec t = V_LOAD(v);
#endif
    if (d) *d = V_SUB(V_SET1((FA_T)1), V_MUL(t, t)); /* 1 - t·t, as ref */
    return V_MUL(t, m->cap);
}

/* Softcap and ALiBi of one score vector (alibi: the chunk's table at this vector's first row). */
FA_INLINE vec FA_NAME(cap_and_alibi_)(const int softcap, const int want_d, const int alibi,
                                      const FA_NAME(mods_) * m, vec x, const FA_T *alibi_at, FA_T *d)
{
    if (softcap) {
        vec dv;
        x = FA_NAME(softcap_)(m, x, want_d ? &dv : NULL);
        if (want_d) V_STORE(d, dv);
    }
    if (alibi) x = V_SUB(x, V_LOADU(alibi_at));
    return x;
}

/* The chunk of rows [r0, r0 + nr) and columns [c0, c0 + nc). bias: 0 none, 1 one row for all rows
 * (stride 0, read per column and broadcast), 2 a row per query row (any stride: FA_LANES rows ×
 * FA_LANES columns are loaded a row at a time, contiguously, and transposed in registers). */
FA_INLINE void FA_NAME(modify_chunk_)(const int softcap, const int want_d, const int alibi, const int bias,
                                      const FA_NAME(mods_) * m, int64_t ld, int64_t r0, int64_t nr,
                                      int64_t c0, int64_t nc, FA_T *s, FA_T *dcap)
{
    /* ALiBi: the score (r, c) of the chunk needs slope·|dist0 + r0 + r - c0 - c|, which is
     * table[r + nc - 1 - c]; each entry is the exact integer distance rounded once to FA_T and
     * multiplied by the slope, as ref computes it, so the result does not depend on the chunk. */
    FA_T table[FA_MODS_ROWS + FA_MODS_COLS - 1];
    if (alibi) {
        int64_t base = m->dist0 + r0 - c0 - (nc - 1);
        for (int64_t k = 0; k < nr + nc - 1; k++) {
            int64_t dist = base + k;
            table[k] = m->slope * (FA_T)(dist < 0 ? -dist : dist);
        }
    }
    const vec neg_zero = V_SET1(-(FA_T)0); /* x + -0 = x for every x, -0 and NaN included */
    if (bias != 2) {
        for (int64_t c = 0; c < nc; c++) {
            FA_T *sc = s + (c0 + c) * ld + r0, *dc = want_d ? dcap + (c0 + c) * ld + r0 : NULL;
            const FA_T *ac = table + (nc - 1 - c);
            vec b = bias ? V_SET1(m->bias[c0 + c]) : neg_zero;
            for (int64_t r = 0; r < nr; r += FA_LANES) {
                vec x = FA_NAME(cap_and_alibi_)(softcap, want_d, alibi, m, V_LOAD(sc + r), ac + r,
                                                want_d ? dc + r : NULL);
                if (bias) {
                    int64_t below = m->bias_rows - (r0 + r); /* this vector's rows that get the bias */
                    x = V_ADD(x, below >= FA_LANES ? b : V_SELECT(V_LANES_BELOW(below), neg_zero, b));
                }
                V_STORE(sc + r, x);
            }
        }
        return;
    }
    for (int64_t r = 0; r < nr; r += FA_LANES) {
        int64_t below = m->bias_rows - (r0 + r);
        const FA_T *br = m->bias + (r0 + r) * m->bias_stride + c0;
        /* A full bias is read once, from memory: the next block's FA_LANES rows (the chunk's nc
         * columns of each, a few lines) are asked for while this one is transposed, since a few
         * lines a row are too short a stream for the hardware prefetchers. On Zen 4 that took a
         * bias streamed from memory from 77% to 90% of the single-core read bandwidth. */
        for (int64_t i = FA_LANES; i < 2 * FA_LANES && i < below; i++)
            for (int64_t x = 0; x < nc; x += 64 / (int64_t)sizeof(FA_T))
                FA_PREFETCH(br + i * m->bias_stride + x, FA_HINT_L1);
        for (int64_t c = 0; c < nc; c += FA_LANES) {
            int64_t width = nc - c < FA_LANES ? nc - c : FA_LANES;
            vec bt[FA_LANES];
            if (below > 0) {
                /* row i of the block, columns c..c + width (nothing past them read; rows at or beyond
                 * bias_rows not read at all, and add -0) */
                FA_UNROLL
                for (int i = 0; i < FA_LANES; i++)
                    bt[i] = i < below ? V_LOAD_PART(br + i * m->bias_stride + c, width) : neg_zero;
                V_TRANSPOSE(bt);
            }
            for (int64_t j = 0; j < width; j++) {
                FA_T *sp = s + (c0 + c + j) * ld + r0 + r;
                vec x = FA_NAME(cap_and_alibi_)(softcap, want_d, alibi, m, V_LOAD(sp),
                                                table + r + (nc - 1 - c - j),
                                                want_d ? dcap + (c0 + c + j) * ld + r0 + r : NULL);
                if (below > 0) x = V_ADD(x, bt[j]);
                V_STORE(sp, x);
            }
        }
    }
}

/* The whole tile in chunks, for one combination of modifiers. */
FA_INLINE void FA_NAME(modify_tile_)(const int softcap, const int want_d, const int alibi, const int bias,
                                     const FA_NAME(mods_) * m, int64_t ld, int64_t cols, FA_T *s, FA_T *dcap)
{
    for (int64_t c0 = 0; c0 < cols; c0 += FA_MODS_COLS)
        for (int64_t r0 = 0; r0 < ld; r0 += FA_MODS_ROWS) FA_NAME(modify_chunk_)
    (softcap, want_d, alibi, bias, m, ld, r0, ld - r0 < FA_MODS_ROWS ? ld - r0 : FA_MODS_ROWS, c0,
     cols - c0 < FA_MODS_COLS ? cols - c0 : FA_MODS_COLS, s, dcap);
}

// clang-format off
#define FA_MODS_CASE(CAP, D, ALIBI, BIAS)                                          \
    case (((CAP) * 2 + (D)) * 2 + (ALIBI)) * 3 + (BIAS):                           \
        FA_NAME(modify_tile_)((CAP), (D), (ALIBI), (BIAS), &m, ld, cols, s, dcap); \
        break;
#define FA_MODS_BIAS_CASES(CAP, D, ALIBI) \
    FA_MODS_CASE(CAP, D, ALIBI, 0) FA_MODS_CASE(CAP, D, ALIBI, 1) FA_MODS_CASE(CAP, D, ALIBI, 2)
// clang-format on

static void FA_NAME(modify_)(const fa_score_mods *mods, int64_t ld, int64_t cols, FA_T *s, FA_T *dcap)
{
    int softcap = mods->softcap > 0, alibi = mods->alibi_slope != 0;
    int want_d = softcap && dcap != NULL;
    /* no real row, no bias read (with stride 0 the one row is shared by the padding rows too) */
    int bias = mods->bias && mods->bias_rows > 0 ? (mods->bias_stride == 0 ? 1 : 2) : 0;
    FA_T cap = (FA_T)mods->softcap;
    FA_NAME(mods_)
    m = {V_SET1(cap),
         V_SET1(softcap ? (FA_T)(1 / mods->softcap) : (FA_T)0),
         (FA_T)mods->alibi_slope,
         mods->alibi_dist0,
         (const FA_T *)mods->bias,
         mods->bias_stride,
         mods->bias_rows};
    // clang-format off
    switch (((softcap * 2 + want_d) * 2 + alibi) * 3 + bias) {
        FA_MODS_BIAS_CASES(0, 0, 1) FA_MODS_CASE(0, 0, 0, 1) FA_MODS_CASE(0, 0, 0, 2)
        FA_MODS_BIAS_CASES(1, 0, 0) FA_MODS_BIAS_CASES(1, 0, 1)
        FA_MODS_BIAS_CASES(1, 1, 0) FA_MODS_BIAS_CASES(1, 1, 1)
    default: break; /* nothing on */
    }
    // clang-format on
}

#undef FA_MODS_BIAS_CASES
#undef FA_MODS_CASE

static void FA_NAME(scale_grad_)(int64_t ld, int64_t cols, FA_T *ds, const FA_T *dcap)
{
    for (int64_t x = 0; x < ld * cols; x += FA_LANES)
        V_STORE(ds + x, V_MUL(V_LOAD(ds + x), V_LOAD(dcap + x)));
}

#undef FA_MODS_ROWS
#undef FA_MODS_COLS
#undef FA_TANH_N0
#undef FA_TANH_N1
#undef FA_TANH_Q1
#undef FA_TANH_Q2
#undef FA_TANH_MINUS_2_LOG2E
