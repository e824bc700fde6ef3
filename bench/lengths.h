/* SPDX-License-Identifier: BSD-3-Clause */
/* The sequence lengths of a ragged case (--varlen, --decode-batch): drawn uniformly from lo..hi on
 * streams of the run's seed of their own, so that a seed names the same batch on every machine; their
 * summary; the visible pairs they hold; and the equal length of a dense batch with the same work. */
#ifndef FA_BENCH_LENGTHS_H
#define FA_BENCH_LENGTHS_H

#include <stdint.h>

#include "options.h"

typedef struct {
    int64_t count;
    int64_t *len; /* count lengths, in sequence order */
    int64_t total, min, max;
    double mean;
} bench_lengths;

/* Draws r->count lengths from r->lo..r->hi. Returns 0, or -1 after a message. */
int bench_lengths_draw(bench_lengths *l, const bench_ragged *r, uint64_t seed);

/* Frees the lengths; a zeroed one is fine. */
void bench_lengths_free(bench_lengths *l);

/* The (i, j) pairs of one head of a sequence of nq queries and nk keys that s's causal mask and
 * window let through (kit_visible_pairs with those lengths). */
int64_t bench_sequence_pairs(const bench_shape *s, int64_t nq, int64_t nk);

/* Sum over the sequences of bench_sequence_pairs(s, len, len): the visible pairs of one head of a
 * packed batch of prompts. */
int64_t bench_lengths_pairs(const bench_lengths *l, const bench_shape *s);

/* The length L_eq >= 1 whose count * bench_sequence_pairs(s, L, L) is nearest the batch's pairs (the
 * shorter of two equally near ones): a dense batch of count sequences with the same work. */
int64_t bench_lengths_equal(const bench_lengths *l, const bench_shape *s);

/* Streams of the seed after problem.c's (1..4) and modifiers.c's (5, 6). */
enum {
    BENCH_STREAM_LENGTHS = 7,
    BENCH_STREAM_PAGES = 8,
    BENCH_STREAM_CACHE_K = 9,
    BENCH_STREAM_CACHE_V = 10
};

#endif
