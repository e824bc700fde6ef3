/* SPDX-License-Identifier: BSD-3-Clause */
/* Test helpers for the score modifiers of fa_params (include/flashattn.h, "Score modifiers"):
 * a modifier set described by a few values (tm_spec) made into fa_params with its own storage
 * (ALiBi slopes, sink logits, a bias tensor of one of the documented shapes, a guarded dsinks
 * buffer), a description for messages, and the accuracy rule for dsinks against the oracles of
 * tests/kit/reference_backward.c. Nothing here judges the library by itself. */
#ifndef FA_TEST_MODIFIERS_H
#define FA_TEST_MODIFIERS_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"
#include "util.h"
#include "util_backward.h"

/* The bias shapes the header allows, in q's dtype, each filled from the problem's generator. */
typedef enum {
    TM_BIAS_OFF = 0,
    /* [B][1][1][Nk]: uniform in [-0.5, 0.5), and the last (b + 1)·Nk/6 keys of batch b at -inf
     * (padding), so some rows of a window or a causal mask see only padding */
    TM_BIAS_KEY_PADDING,
    /* the same values as a [B][Hq][Nq][Nk] view whose heads and seq strides are 0 */
    TM_BIAS_KEY_PADDING_STRIDE0,
    /* [B][Hq][Nq][Nk] with gaps after every row, head and batch: uniform in [-2, 2), about one
     * entry in 32 at -inf */
    TM_BIAS_FULL,
    /* [1][Hq][Nq][Nk], one bias for every batch: as TM_BIAS_FULL, contiguous */
    TM_BIAS_BATCH_BROADCAST,
    /* [B][1][Nq][Nk], one bias for every head: as TM_BIAS_FULL, contiguous */
    TM_BIAS_HEAD_BROADCAST,
    TM_BIAS_KINDS
} tm_bias_kind;

typedef struct {
    fa_causal causal;
    int64_t window_left, window_right; /* -1: unbounded */
    double softcap;                    /* 0: off */
    int alibi;                         /* slopes 2^(-8(h + 1)/Hq), BLOOM's */
    tm_bias_kind bias;
    int sinks; /* sink logits uniform in [-1, 3), multiples of 2^-8 */
} tm_spec;

/* A spec with no modifier at all. */
tm_spec tm_spec_none(void);

typedef struct {
    tm_spec spec;
    /* The parameters: p.bias points into this struct, so it stays where tm_mods_make put it. */
    fa_params p;
    float *slopes, *sinks; /* Hq each, or NULL */
    fa_tensor bias;
    kit_buf bias_buf;   /* every byte outside the bias view's elements holds a NaN */
    kit_buf dsinks_buf; /* Hq floats inside guards, when spec.sinks */
} tm_mods;

/* p = the defaults with the spec's modifiers and the given scale, storage drawn from rng for the
 * problem shape s. p.dsinks stays NULL: tm_mods_want_dsinks sets it. */
void tm_mods_make(tm_mods *m, const tm_spec *spec, const tu_shape *s, double scale, tu_rng *rng);
void tm_mods_free(tm_mods *m);
/* Points p.dsinks at the guarded buffer (refilled with KIT_CANARY); needs spec.sinks. */
void tm_mods_want_dsinks(tm_mods *m);
/* 1 when the dsinks buffer's guards are intact. */
int tm_dsinks_guards_intact(const tm_mods *m);

/* The shape (tu_shape_str) and the modifiers, for messages. */
void tm_desc(const tu_shape *s, const tm_mods *m, char *buf, size_t size);

/* The accuracy rule for dsinks (the Hq floats at m->p.dsinks after fa_backward on bp):
 *   f64: fa_backward sums in double and rounds to float once, so each value must lie within half
 *        a float ulp of the exact sum, |lib - ref| <= 2^-24·|ref| + 2^-150 + 1e-11·max|ref|, against
 *        ref_backward_dsinks (2^-150: half the smallest subnormal float, the rounding of a tiny
 *        sum; the 1e-11 normwise term: the backward's tolerance, for the sum);
 *   f32: max|lib - ref| <= 3 · max|naive f32 - ref| + 1e-5 (ref_backward_dsinks_naive_f32), the
 *        rule of the gradients.
 * Every value must be finite where the oracle's is, and match its non-finite values. Returns 1
 * when it holds; otherwise explains in msg. */
int tm_check_dsinks(const tub_problem *bp, const tm_mods *m, char *msg, size_t msg_size);

#endif
