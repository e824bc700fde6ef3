/* SPDX-License-Identifier: BSD-3-Clause */
// Sequence lengths: seeded draws, their summary, their visible pairs and the equal-work length.
#include "lengths.h"

#include <stdio.h>
#include <stdlib.h>

#include "modifiers.h"
#include "problem.h"
#include "rng.h"
#include "score_mods.h"

int bench_lengths_draw(bench_lengths *l, const bench_ragged *r, uint64_t seed)
{
    l->count = r->count;
    l->len = malloc(sizeof *l->len * (size_t)r->count);
    if (!l->len) {
        fprintf(stderr, "fa-bench: out of memory for %lld sequence lengths\n", (long long)r->count);
        return -1;
    }
    l->total = 0;
    l->min = INT64_MAX;
    l->max = 0;
    for (int64_t b = 0; b < r->count; b++) {
        int64_t n = r->lo + kit_keyed_below(seed, BENCH_STREAM_LENGTHS, (uint64_t)b, r->hi - r->lo + 1);
        l->len[b] = n;
        l->total += n;
        if (n < l->min) l->min = n;
        if (n > l->max) l->max = n;
    }
    l->mean = (double)l->total / (double)l->count;
    return 0;
}

void bench_lengths_free(bench_lengths *l)
{
    free(l->len);
    l->len = NULL;
    l->count = 0;
}

int64_t bench_sequence_pairs(const bench_shape *s, int64_t nq, int64_t nk)
{
    return kit_visible_pairs(s->causal, nq, nk, s->mods.window_left, s->mods.window_right);
}

int64_t bench_lengths_pairs(const bench_lengths *l, const bench_shape *s)
{
    int64_t pairs = 0;
    for (int64_t b = 0; b < l->count; b++) pairs += bench_sequence_pairs(s, l->len[b], l->len[b]);
    return pairs;
}

int64_t bench_lengths_equal(const bench_lengths *l, const bench_shape *s)
{
    // The pairs of a square sequence never decrease with its length: bisect for the first L whose
    // batch has at least the work, then take the nearer of it and L - 1.
    double want = (double)bench_lengths_pairs(l, s), n = (double)l->count;
    int64_t lo = 1, hi = l->max > 1 ? l->max : 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (n * (double)bench_sequence_pairs(s, mid, mid) >= want)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (lo > 1) {
        double above = n * (double)bench_sequence_pairs(s, lo, lo) - want;
        double below = want - n * (double)bench_sequence_pairs(s, lo - 1, lo - 1);
        if (below <= above) lo--;
    }
    return lo;
}
