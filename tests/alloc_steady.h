/* SPDX-License-Identifier: BSD-3-Clause */
/* The steady-state allocation tests of test_alloc.c, forward and backward: after a first call on a
 * context, a second identical call and a smaller call allocate and free nothing. Both passes make
 * that promise on the same kinds of context, so both directions run their check through the same
 * runners here, and report a count the same way. Counted by the link-time wrappers of tests/util.c
 * (tu_alloc_count_now). */
#ifndef FA_TEST_ALLOC_STEADY_H
#define FA_TEST_ALLOC_STEADY_H

#include <stdint.h>

#include "flashattn.h"
#include "util.h"

/* A suite's check on one context (NULL: the thread's default one) and dtype, from `seed`. */
typedef void as_check_fn(uint64_t seed, fa_context *ctx, fa_dtype dt);

/* Expects no allocation and no free between the counts `before` and `after`: cr_expect's message
 * reads "seed S: <what> made N allocations" (or frees). */
void as_expect_none(const char *what, tu_alloc_count before, tu_alloc_count after, uint64_t seed);

/* check on a fresh context with default options, once per dtype (f32, then f64), each on its own
 * context and with the running test's seed of that dtype (tu_test_part_seed("f32") / "f64"). */
void as_on_fresh_context_per_dtype(as_check_fn *check);

/* check (f32) on a context with 3 threads bound to cores and fixed 24/40 blocks, with the running
 * test's seed: the per-thread arenas and the configured block sizes must be steady too. */
void as_on_fixed_blocks_and_threads(as_check_fn *check);

#endif
