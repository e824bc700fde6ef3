/* SPDX-License-Identifier: BSD-3-Clause */
/* The runners of the steady-state allocation tests; see alloc_steady.h. */
#include "alloc_steady.h"

#include <criterion/criterion.h>

void as_expect_none(const char *what, tu_alloc_count before, tu_alloc_count after, uint64_t seed)
{
    long allocs = after.allocs - before.allocs, frees = after.frees - before.frees;
    cr_expect_eq(allocs, 0, "seed %llu: %s made %ld allocations", (unsigned long long)seed, what, allocs);
    cr_expect_eq(frees, 0, "seed %llu: %s made %ld frees", (unsigned long long)seed, what, frees);
}

void as_on_fresh_context_per_dtype(as_check_fn *check)
{
    for (int t = 0; t < 2; t++) {
        uint64_t seed = tu_test_part_seed(t ? "f64" : "f32");
        fa_context *ctx;
        cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
        check(seed, ctx, t ? FA_F64 : FA_F32);
        fa_context_destroy(ctx);
    }
}

void as_on_fixed_blocks_and_threads(as_check_fn *check)
{
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = 3;
    o.bind = FA_BIND_CORE;
    o.block_q = 24;
    o.block_k = 40;
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
    check(tu_test_seed(), ctx, FA_F32);
    fa_context_destroy(ctx);
}
