/* SPDX-License-Identifier: BSD-3-Clause */
/* The documented arena formulas (README "Memory"), written out independently of the library so
 * the scratch tests can hold it to them.
 *
 * With e = sizeof(element) (4 for f32, 8 for f64), v = 64/e (elements per 64 bytes),
 * r64(x) = x rounded up to a multiple of 64, up(x) = x rounded up to a multiple of v,
 * bq = block_q, bk = block_k, ld = up(bq), sld = min(ld, 64) (the rows of one query block of the
 * kernels, FA_FLOAT_BLOCK_ROWS):
 *
 *   forward  = r64(D·ld·e) + r64(bk·sld·e) + r64(bq·up(Dv)·e) + 2·r64(ld·e)
 *              (transposed query block, transposed score tile of 64 rows at most, output
 *               accumulator, row max, row sum)
 *   backward = r64(D·ld·e) + r64(Dv·ld·e) + 2·r64(ld·e) + (2 + c)·r64(bk·ld·e)
 *              + max(r64(bk·up(D)·e) + r64(bk·up(Dv)·e), r64(bq·up(D)·e))
 *              (Q and dO transposed, lse and delta, P and dS tiles and, with a softcap (c = 1,
 *               else c = 0), the tile of its derivative 1 - tanh², then the larger of a dK/dV
 *               item's accumulators and a dQ item's)
 *
 * Half-precision views (bf16, f16) accumulate in float (e = 4) and widen their rows into float
 * tiles on top of that (f = 4):
 *   forward  + (q half) r64(bq·D·f) + (k, v half, or paged) r64(bk·D·f) + r64(bk·Dv·f)
 *   backward + (q half) r64(bq·D·f) + r64(bq·Dv·f) + (k, v half) r64(bk·D·f) + r64(bk·Dv·f)
 *              (the query block's Q and dO rows, the key block's K and V rows)
 *
 * An all-bf16 forward on a table with bf16 dot-product units (amx: flashattn.h, "dtype") keeps its
 * operands in bf16 instead, with k padded to p = 32 (a tile row), dp = D up to p, bkp = bk up to p,
 * and psld = min(ld, 128) (the rows of one query block on the units, FA_DOT_BLOCK_ROWS), and drops
 * the float query block:
 *   forward  = r64(dp·ld·2) + r64(bkp·psld·2) + r64(Dv·(bkp + p)·2) + r64(Dv·ld·4)
 *              + r64(bk·psld·4) + r64(bq·up(Dv)·4) + 2·r64(ld·4)   (+ paged: r64(bk·D·2) + r64(bk·Dv·2))
 *              (queries in pairs, one block's P in pairs, Vᵀ with p columns to spare, the transposed
 *               accumulator; one block's score tile, output rows, row max and row sum)
 *
 * Its backward (even D and Dv too), u(x) = x up to 16:
 *   backward = r64(dp·ld·2) + r64(up(Dv, p)·ld·2) + r64(ld·u(D)·2) + r64(ld·u(Dv)·2) + 2·r64(ld·4)
 *              + (2 + c)·r64(bk·ld·4) + r64(bkp·ld·2) + r64(D·bkp·2)
 *              + max(r64(bk·u(D)·4) + r64(bk·u(Dv)·4), r64(D·ld·4))
 *              (Q and dO in pairs and in pairs of rows, lse and delta, the P and dS tiles (and the
 *               softcap's), P or dS in bf16, Kᵀ, the larger of the dK/dV and the transposed dQ sums)
 *
 * A decode step's group of n items (f32 queries, at most 4 rows each, bq = rows), read in place (a
 * paged or stored cache), holds per item its score tile, two row lists of bk + 64 pointers and its
 * rows once more, row by row (the group reads its tiles in token order, every item's at once):
 *   n·(r64(D·ld·4) + r64(bq·up(Dv)·4) + 2·r64(ld·4) + r64(bk·sld·4) + 2·r64((bk + 64)·8) + r64(bq·up(D)·4))
 *
 * None of it depends on Nq or Nk. */
#ifndef FA_TEST_SCRATCH_FORMULA_H
#define FA_TEST_SCRATCH_FORMULA_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

static inline size_t sf_r64(size_t x)
{
    return (x + 63) / 64 * 64;
}

static inline size_t sf_up(int64_t x, int64_t v)
{
    return (size_t)((x + v - 1) / v * v);
}

static inline size_t forward_scratch(fa_dtype t, int64_t bq, int64_t bk, int64_t d, int64_t dv)
{
    size_t e = tu_dtype_size(t), v = 64 / e, ld = sf_up(bq, (int64_t)v), sld = ld < 64 ? ld : 64;
    return sf_r64((size_t)d * ld * e) + sf_r64((size_t)bk * sld * e) +
           sf_r64((size_t)bq * sf_up(dv, (int64_t)v) * e) + 2 * sf_r64(ld * e);
}

static inline size_t backward_scratch(fa_dtype t, int64_t bq, int64_t bk, int64_t d, int64_t dv, int softcap)
{
    size_t e = tu_dtype_size(t), v = 64 / e, ld = sf_up(bq, (int64_t)v);
    size_t d_pad = sf_up(d, (int64_t)v), dv_pad = sf_up(dv, (int64_t)v);
    size_t queries = sf_r64((size_t)d * ld * e) + sf_r64((size_t)dv * ld * e) + 2 * sf_r64(ld * e);
    size_t tiles = (size_t)(softcap ? 3 : 2) * sf_r64((size_t)bk * ld * e);
    size_t kv = sf_r64((size_t)bk * d_pad * e) + sf_r64((size_t)bk * dv_pad * e),
           q = sf_r64((size_t)bq * d_pad * e);
    return queries + tiles + (kv > q ? kv : q);
}

static inline size_t forward_half_tiles(int q_half, int kv_half, int64_t bq, int64_t bk, int64_t d,
                                        int64_t dv)
{
    return (q_half ? sf_r64((size_t)(bq * d) * 4) : 0) +
           (kv_half ? sf_r64((size_t)(bk * d) * 4) + sf_r64((size_t)(bk * dv) * 4) : 0);
}

static inline size_t backward_half_tiles(int q_half, int kv_half, int64_t bq, int64_t bk, int64_t d,
                                         int64_t dv)
{
    return (q_half ? sf_r64((size_t)(bq * d) * 4) + sf_r64((size_t)(bq * dv) * 4) : 0) +
           (kv_half ? sf_r64((size_t)(bk * d) * 4) + sf_r64((size_t)(bk * dv) * 4) : 0);
}

/* A decode group of n f32 items of bq rows, read in place (the header's formula above; its stored
 * cache's tiles are forward_half_tiles'). */
static inline size_t decode_group_scratch(int64_t n, int64_t bq, int64_t bk, int64_t d, int64_t dv)
{
    size_t ld = sf_up(bq, 16), sld = ld < 64 ? ld : 64;
    size_t item = sf_r64((size_t)d * ld * 4) + sf_r64((size_t)bq * sf_up(dv, 16) * 4) + 2 * sf_r64(ld * 4) +
                  sf_r64((size_t)bk * sld * 4) + 2 * sf_r64((size_t)(bk + 64) * 8) +
                  sf_r64((size_t)bq * sf_up(d, 16) * 4);
    return (size_t)n * item;
}

/* The all-bf16 backward on dot-product units. */
static inline size_t backward_dot_scratch(int64_t bq, int64_t bk, int64_t d, int64_t dv, int softcap)
{
    size_t ld = sf_up(bq, 16), bkp = sf_up(bk, 32), u_d = sf_up(d, 16), u_dv = sf_up(dv, 16);
    size_t kv = sf_r64((size_t)bk * u_d * 4) + sf_r64((size_t)bk * u_dv * 4), q = sf_r64((size_t)d * ld * 4);
    return sf_r64(sf_up(d, 32) * ld * 2) + sf_r64(sf_up(dv, 32) * ld * 2) + sf_r64(ld * u_d * 2) +
           sf_r64(ld * u_dv * 2) + 2 * sf_r64(ld * 4) +
           (size_t)(softcap ? 3 : 2) * sf_r64((size_t)bk * ld * 4) + sf_r64(bkp * ld * 2) +
           sf_r64((size_t)d * bkp * 2) + (kv > q ? kv : q);
}

/* The all-bf16 forward on dot-product units (pad_k 32: the amx table). */
static inline size_t forward_dot_scratch(int64_t bq, int64_t bk, int64_t d, int64_t dv, int paged)
{
    size_t ld = sf_up(bq, 16), sld = ld < 128 ? ld : 128, bkp = sf_up(bk, 32), dp = sf_up(d, 32);
    return sf_r64(dp * ld * 2) + sf_r64(bkp * sld * 2) + sf_r64((size_t)dv * (bkp + 32) * 2) +
           sf_r64((size_t)dv * ld * 4) + sf_r64((size_t)bk * sld * 4) +
           sf_r64((size_t)bq * sf_up(dv, 16) * 4) + 2 * sf_r64(ld * 4) +
           (paged ? sf_r64((size_t)(bk * d) * 2) + sf_r64((size_t)(bk * dv) * 2) : 0);
}

#endif
