/* SPDX-License-Identifier: BSD-3-Clause */
/* No steady-state allocation in the backward: after a first fa_backward on a context, a second
 * identical call, a smaller call, and whole forward + backward steps allocate and free nothing.
 * Counted by the link-time wrappers in tests/util.c (fa-tests is linked with
 * -Wl,--wrap=malloc,calloc,realloc,free,aligned_alloc,posix_memalign), which see every call made by
 * the static library's objects, from any thread. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc_steady.h"
#include "util.h"
#include "util_backward.h"

static void check_steady_state(uint64_t seed, fa_context *ctx, fa_dtype dt)
{
    cr_assert(tu_alloc_counting_active(), "the allocation wrappers are not linked in");
    tu_shape big = {dt, 2, 4, 2, 200, 230, 64, 48, TU_BHSD};
    tu_shape small = {dt, 1, 4, 2, 50, 60, 64, 48, TU_BSHD};
    tu_rng rng = tu_rng_make(seed);
    tub_problem a, b;
    tub_make(&a, &big, &rng, 2.0);
    tub_make(&b, &small, &rng, 2.0);
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_TOP_LEFT;

    cr_assert_eq(tub_forward(ctx, &p, &a), FA_OK, "seed %llu", (unsigned long long)seed);
    cr_assert_eq(tub_forward(ctx, &p, &b), FA_OK, "seed %llu", (unsigned long long)seed);
    tu_alloc_count c0 = tu_alloc_count_now();
    cr_assert_eq(tub_backward(ctx, &p, &a), FA_OK, "seed %llu: first backward", (unsigned long long)seed);
    tu_alloc_count c1 = tu_alloc_count_now();
    fprintf(stderr, "[alloc] seed %llu: first backward: %ld allocations, %ld frees\n",
            (unsigned long long)seed, c1.allocs - c0.allocs, c1.frees - c0.frees);

    cr_assert_eq(tub_backward(ctx, &p, &a), FA_OK, "seed %llu: second backward", (unsigned long long)seed);
    tu_alloc_count c2 = tu_alloc_count_now();
    as_expect_none("the second identical backward", c1, c2, seed);

    cr_assert_eq(tub_backward(ctx, &p, &b), FA_OK, "seed %llu: smaller backward", (unsigned long long)seed);
    tu_alloc_count c3 = tu_alloc_count_now();
    as_expect_none("a smaller backward after a bigger one", c2, c3, seed);

    /* Training steps: forward then backward, three times over. */
    for (int step = 0; step < 3; step++) {
        cr_assert_eq(tub_forward(ctx, &p, &a), FA_OK);
        cr_assert_eq(tub_backward(ctx, &p, &a), FA_OK);
    }
    tu_alloc_count c4 = tu_alloc_count_now();
    as_expect_none("three forward + backward steps", c3, c4, seed);
    tub_free(&a);
    tub_free(&b);
}

Test(backward_alloc, second_identical_backward_allocates_nothing)
{
    as_on_fresh_context_per_dtype(check_steady_state);
}

Test(backward_alloc, second_identical_backward_with_fixed_blocks_and_threads_allocates_nothing)
{
    as_on_fixed_blocks_and_threads(check_steady_state);
}

Test(backward_alloc, second_identical_backward_with_null_context_allocates_nothing)
{
    check_steady_state(tu_test_seed(), NULL, FA_F64);
}

/* The first backward on a context that has only run forwards grows what the backward needs (its
 * larger arena and the delta rows) through the wrapped functions; if this fails, the counts above
 * prove nothing. */
Test(backward_alloc, first_backward_allocations_are_visible_to_the_counter)
{
    uint64_t seed = tu_test_seed();
    cr_assert(tu_alloc_counting_active(), "the allocation wrappers are not linked in");
    tu_shape s = {FA_F64, 1, 2, 1, 64, 64, 32, 32, TU_BHSD};
    tu_rng rng = tu_rng_make(seed);
    tub_problem bp;
    tub_make(&bp, &s, &rng, 1.0);
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    cr_assert_eq(tub_forward(ctx, NULL, &bp), FA_OK);
    tu_alloc_count c0 = tu_alloc_count_now();
    cr_assert_eq(tub_backward(ctx, NULL, &bp), FA_OK);
    tu_alloc_count c1 = tu_alloc_count_now();
    cr_expect_gt(c1.allocs - c0.allocs, 0,
                 "the first backward on a context allocated nothing the wrappers saw");
    fa_context_destroy(ctx);
    tub_free(&bp);
}
