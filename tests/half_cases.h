/* SPDX-License-Identifier: BSD-3-Clause */
/* The problems of the bf16/f16 accuracy suites, forward and backward
 * (test_half_accuracy.c), and the dtype pairs they run under. Each case is small (the
 * float64 oracles are naive) and chosen for one thing the library must get right with half
 * tensors: edge tiles of several residues (Nq, Nk of 1, 17, 63, 130, not multiples of 16 or 64, on
 * automatic blocks and on odd fixed blocks 13/24 and 5/7), grouped and multi-query heads, Dv != D,
 * every causal alignment (with rows that see no key), and every score modifier: softcap (most scores
 * capped, and few), ALiBi, windows, an f32 bias (full with -inf entries, key padding, broadcast over
 * heads), sinks. Nothing here judges the library. */
#ifndef FA_TEST_HALF_CASES_H
#define FA_TEST_HALF_CASES_H

#include "flashattn.h"
#include "half_util.h"
#include "modifiers.h"

typedef struct {
    int64_t batch, q_heads, kv_heads, q_len, kv_len, dim, dim_v;
    int bshd;
    tm_spec spec;
    double scale; /* 0: 1/sqrt(D) */
    int ctx;      /* index into hc_context_blocks */
} hc_case;

enum { HC_CASES = 10, HC_CONTEXTS = 5, HC_DTYPE_PAIRS = 4 };

extern const hc_case hc_cases[HC_CASES];
/* The contexts' block_q, block_k (0: automatic), each with 2 threads. */
extern const int hc_context_blocks[HC_CONTEXTS][2];
/* The (q, k) dtype pairs of the contract: bf16/bf16, f16/f16, f32/bf16, f32/f16 (a half KV cache). */
extern const fa_dtype hc_dtype_pairs[HC_DTYPE_PAIRS][2];

/* The shape of case c under dtypes (qt, kt). */
kit_shape hc_shape(const hc_case *c, fa_dtype qt, fa_dtype kt);
/* The case's modifiers (an f32 bias, the accumulation type's, as the contract requires for half
 * and f32 queries) and scale, storage drawn from rng. */
void hc_mods(tm_mods *m, const hc_case *c, tu_rng *rng);
/* Creates the HC_CONTEXTS contexts (cr_assert on failure); destroys them. */
void hc_contexts_create(fa_context *ctx[HC_CONTEXTS]);
void hc_contexts_destroy(fa_context *ctx[HC_CONTEXTS]);

#endif
