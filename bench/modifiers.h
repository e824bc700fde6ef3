/* SPDX-License-Identifier: BSD-3-Clause */
/* The score modifiers of a case (bench_mods, options.h) made concrete: the tensors they need (the
 * bias, ALiBi slopes, sink logits, and dsinks for a backward), what they set in fa_params, how
 * they read in the report, and the work they leave: the (i, j) pairs a causal mask and a window
 * let through, which every GFLOP/s of fa-bench is counted on. */
#ifndef FA_BENCH_MODIFIERS_H
#define FA_BENCH_MODIFIERS_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"
#include "options.h"
#include "problem.h"

/* Whether m changes anything (a window side, softcap, ALiBi, bias or sinks). */
int bench_mods_any(const bench_mods *m);

/* The modifiers in words, each preceded by ", ": ", window 256,0, softcap 50, alibi, bias keypad,
 * sinks"; "" when there are none. */
void bench_mods_words(const bench_mods *m, char *out, size_t size);

/* The (query i, key j) pairs of one (batch, head) that the causal mask and the window let through,
 * straight from the header's definition: with d0 = 0 for top-left and Nk - Nq otherwise, row i sees
 * j in [0, Nk) with j <= i + d0 (causal), j >= i + d0 - window_left and j <= i + d0 + window_right
 * (each side when >= 0). Summed over the rows: O(Nq). */
int64_t bench_visible_pairs(const bench_shape *s);

/* Bytes of bias one call must read: B*Hq*V*sizeof(bias) for a full bias (the bias of every visible
 * pair, once), B*Nk*sizeof(bias) for a key-padding one, 0 without; the bias is f64 or f32 (f32 under a
 * half q). */
double bench_bias_read_bytes(const bench_shape *s);

/* Allocates and fills p's modifier tensors as p->shape.mods asks (p->has_gradients decides dsinks):
 * the bias from its own stream of (seed, dist), or the key-padding pattern; slopes 2^(-8(h+1)/Hq);
 * sink logits from their own stream. Returns 0, or -1 after a message (p is freed by the caller). */
int bench_modifiers_init(bench_problem *p, bench_dist dist, uint64_t seed);

/* Sets the causal mask and every modifier of p in *params (dsinks when p has it). */
void bench_modifiers_params(const bench_problem *p, fa_params *params);

#endif
