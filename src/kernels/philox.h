/* SPDX-License-Identifier: BSD-3-Clause */
/* Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011;
 * Random123's philox4x32 with 10 rounds): the counter-based generator of dropout's keep mask
 * (flashattn.h, fa_params "Dropout"). A pure function of a 128-bit counter and a 64-bit key, so any
 * element of the mask is computed alone, by any thread, in any order. tests/test_dropout_mask.c
 * checks it against Random123's published known answers. */
#ifndef FA_KERNELS_PHILOX_H
#define FA_KERNELS_PHILOX_H

#include <stdint.h>

#define FA_PHILOX_M0 0xD2511F53u
#define FA_PHILOX_M1 0xCD9E8D57u
#define FA_PHILOX_W0 0x9E3779B9u /* the key's increments between rounds (golden ratio, sqrt(3) - 1) */
#define FA_PHILOX_W1 0xBB67AE85u

/* One counter under one key: out = philox4x32_10(ctr, key). */
static inline void fa_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        const uint64_t p0 = (uint64_t)FA_PHILOX_M0 * c0, p1 = (uint64_t)FA_PHILOX_M1 * c2;
        const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0, c1 = (uint32_t)p1, c2 = n2, c3 = (uint32_t)p0;
        k0 += FA_PHILOX_W0, k1 += FA_PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* The lanes one block of the tile generator computes: 16 query rows, as a 512-bit vector of 32-bit
 * lanes (the loops below are written so that compilers vectorize them across the lanes). */
#define FA_PHILOX_LANES 16

/* The same generator for FA_PHILOX_LANES counters that differ in their last word only,
 * {c0, c1, c2, c3 + l}: x[w][l] is output word w of lane l. */
static inline void fa_philox_lanes(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, const uint32_t key[2],
                                   uint32_t x[4][FA_PHILOX_LANES])
{
    uint32_t a[FA_PHILOX_LANES], b[FA_PHILOX_LANES], c[FA_PHILOX_LANES], d[FA_PHILOX_LANES];
    for (int l = 0; l < FA_PHILOX_LANES; l++) a[l] = c0, b[l] = c1, c[l] = c2, d[l] = c3 + (uint32_t)l;
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        for (int l = 0; l < FA_PHILOX_LANES; l++) {
            const uint64_t p0 = (uint64_t)FA_PHILOX_M0 * a[l], p1 = (uint64_t)FA_PHILOX_M1 * c[l];
            const uint32_t n0 = (uint32_t)(p1 >> 32) ^ b[l] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ d[l] ^ k1;
            a[l] = n0, b[l] = (uint32_t)p1, c[l] = n2, d[l] = (uint32_t)p0;
        }
        k0 += FA_PHILOX_W0, k1 += FA_PHILOX_W1;
    }
    for (int l = 0; l < FA_PHILOX_LANES; l++) x[0][l] = a[l], x[1][l] = b[l], x[2][l] = c[l], x[3][l] = d[l];
}

/* The counter, key and threshold of dropout's stream of one (batch entry, query head): element
 * (i, j) of the mask is the 16-bit slice j % 8 of philox4x32_10({stream[0], stream[1], j / 8, i},
 * key), slice e being the low (e even) or high (e odd) half of output word e / 2, kept when it is
 * below threshold (round((1 - p)·2^16), up to 2^16: then every element is kept). Sixteen bits a
 * decision, eight keys a generator call: the generator is most of dropout's cost. */
typedef struct {
    uint32_t key[2];
    uint32_t stream[2]; /* offset + b·Hq + h, low word first: the counter's first two words */
    uint32_t threshold; /* 0..2^16 */
} fa_dropout_stream;

/* Keys a generator call decides: 8 slices of 16 bits of its 4 words. */
#define FA_DROPOUT_GROUP 8

/* Whether slice `e` (0..7) of a generator call's words is kept, given `word`, the word holding it
 * (x[e / 2]). */
static inline int fa_dropout_kept(const fa_dropout_stream *st, uint32_t word, int e)
{
    return ((word >> (16 * (e & 1))) & 0xFFFFu) < st->threshold;
}

/* The walk every tile loop of the mask makes (kernels/ref/ref_dropout.h, the SIMD tables' own): the
 * transposed tile s[c][r] of mask rows i0.. (rows of them) and keys j0.. (cols) in blocks of
 * FA_PHILOX_LANES rows, the tile rows r0..r0 + n - 1 (n < FA_PHILOX_LANES only in the last block),
 * and within a block the generator calls of the key groups g (FA_DROPOUT_GROUP keys each) that meet
 * the tile. GEN(g, i) computes the 4 words of rows i.. for group g; BODY then runs for each key of
 * the group inside the tile, with e its slice (0..7: word e / 2, half e % 2) and c its tile column. */
#define FA_DROPOUT_WALK(i0, rows, j0, cols, GEN, ...)                                   \
    for (int64_t r0 = 0; r0 < (rows); r0 += FA_PHILOX_LANES) {                          \
        const int n = (rows)-r0 < FA_PHILOX_LANES ? (int)((rows)-r0) : FA_PHILOX_LANES; \
        (void)n;                                                                        \
        for (int64_t g = (j0) >> 3; g <= ((j0) + (cols)-1) >> 3; g++) {                 \
            GEN(g, (i0) + r0);                                                          \
            for (int e = 0; e < FA_DROPOUT_GROUP; e++) {                                \
                const int64_t c = FA_DROPOUT_GROUP * g + e - (j0);                      \
                if (c < 0 || c >= (cols)) continue;                                     \
                __VA_ARGS__                                                             \
            }                                                                           \
        }                                                                               \
    }

#endif
