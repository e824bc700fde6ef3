/* SPDX-License-Identifier: BSD-3-Clause */
/* No steady-state allocation: after a first call, an identical (or smaller) call allocates
 * nothing. Counted by the link-time wrappers in util.c (fa-tests is linked with
 * -Wl,--wrap=malloc,calloc,realloc,free,aligned_alloc,posix_memalign), which see every call made
 * by the static library's objects, from any thread. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc_steady.h"
#include "util.h"

/* Runs the call three times (first, identical, smaller) and checks the counts of the last two. */
static void check_steady_state(uint64_t seed, fa_context *ctx, fa_dtype dt)
{
    cr_assert(tu_alloc_counting_active(), "the allocation wrappers are not linked in");
    tu_shape big = {dt, 2, 4, 2, 200, 230, 64, 48, TU_BHSD};
    tu_shape small = {dt, 1, 4, 2, 50, 60, 64, 48, TU_BSHD};
    tu_rng rng = tu_rng_make(seed);
    tu_problem a, b;
    tu_problem_make(&a, &big, &rng, 2.0);
    tu_problem_make(&b, &small, &rng, 2.0);
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_TOP_LEFT;

    tu_alloc_count c0 = tu_alloc_count_now();
    fa_status st = fa_forward(ctx, &p, &a.q, &a.k, &a.v, &a.out, a.lse);
    tu_alloc_count c1 = tu_alloc_count_now();
    cr_assert_eq(st, FA_OK, "seed %llu: first call status %d", (unsigned long long)seed, st);
    fprintf(stderr, "[alloc] seed %llu: first call: %ld allocations, %ld frees\n", (unsigned long long)seed,
            c1.allocs - c0.allocs, c1.frees - c0.frees);

    st = fa_forward(ctx, &p, &a.q, &a.k, &a.v, &a.out, a.lse);
    tu_alloc_count c2 = tu_alloc_count_now();
    cr_assert_eq(st, FA_OK, "seed %llu: second call status %d", (unsigned long long)seed, st);
    as_expect_none("the second identical call", c1, c2, seed);

    st = fa_forward(ctx, &p, &b.q, &b.k, &b.v, &b.out, b.lse);
    tu_alloc_count c3 = tu_alloc_count_now();
    cr_assert_eq(st, FA_OK, "seed %llu: smaller call status %d", (unsigned long long)seed, st);
    as_expect_none("a smaller call after a bigger one", c2, c3, seed);
    tu_problem_free(&a);
    tu_problem_free(&b);
}

Test(alloc, second_identical_call_on_a_context_allocates_nothing)
{
    as_on_fresh_context_per_dtype(check_steady_state);
}

Test(alloc, second_identical_call_with_fixed_blocks_and_threads_allocates_nothing)
{
    as_on_fixed_blocks_and_threads(check_steady_state);
}

Test(alloc, second_identical_call_with_null_context_allocates_nothing)
{
    check_steady_state(tu_test_seed(), NULL, FA_F64);
}

/* The first call of a context does allocate its arenas through the wrapped functions; if this
 * fails, the counting above proves nothing (the library allocates through something unwrapped). */
Test(alloc, first_call_allocations_are_visible_to_the_counter)
{
    tu_test_seed();
    cr_assert(tu_alloc_counting_active(), "the allocation wrappers are not linked in");
    tu_shape s = {FA_F32, 1, 2, 1, 64, 64, 32, 32, TU_BHSD};
    tu_rng rng = tu_rng_make(1);
    tu_problem pr;
    tu_problem_make(&pr, &s, &rng, 1.0);
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    tu_alloc_count c0 = tu_alloc_count_now();
    cr_assert_eq(fa_forward(ctx, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_OK);
    tu_alloc_count c1 = tu_alloc_count_now();
    cr_expect_gt(c1.allocs - c0.allocs, 0,
                 "the first call on a fresh context allocated nothing the wrappers saw");
    fa_context_destroy(ctx);
    tu_problem_free(&pr);
}

/* FA_ERR_NOMEM: the scratch memory cannot be allocated. Like every failing call it writes no
 * byte of out or lse, and the context stays usable. Allocation failures are injected through the
 * same wrappers: the first, second, ... allocation of a first call on a fresh context fails (alone,
 * or with every later one). A call that made fewer allocations than that succeeds normally. */
Test(alloc, failed_scratch_allocation_returns_nomem_writes_nothing_and_context_stays_usable)
{
    uint64_t seed = tu_test_seed();
    tu_shape s = {FA_F32, 2, 4, 2, 100, 90, 32, 24, TU_BHSD};
    tu_rng rng = tu_rng_make(seed);
    tu_problem expected, expected_auto, pr; /* fixed 16/16 blocks, and automatic ones */
    tu_problem_make(&expected, &s, &rng, 2.0);
    rng = tu_rng_make(seed);
    tu_problem_make(&expected_auto, &s, &rng, 2.0);
    rng = tu_rng_make(seed);
    tu_problem_make(&pr, &s, &rng, 2.0);
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = 3;
    o.block_q = 16;
    o.block_k = 16;
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
    cr_assert_eq(fa_forward(ctx, NULL, &expected.q, &expected.k, &expected.v, &expected.out, expected.lse),
                 FA_OK);
    fa_context_destroy(ctx);
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    cr_assert_eq(fa_forward(ctx, NULL, &expected_auto.q, &expected_auto.k, &expected_auto.v,
                            &expected_auto.out, expected_auto.lse),
                 FA_OK);
    fa_context_destroy(ctx);

    int nomem_seen = 0;
    for (int use_null = 0; use_null < 2; use_null++)
        for (long nth = 1; nth <= 4; nth++)
            for (int sticky = 0; sticky < 2; sticky++) {
                /* ctx NULL: the thread's default context does not exist yet in this process on the
                 * first round, so its creation is what fails; afterwards it exists and holds arenas. */
                fa_context *c = NULL;
                if (!use_null) cr_assert_eq(fa_context_create(&c, &o), FA_OK);
                tu_problem_fill_canary(&pr);
                tu_alloc_fail(nth, sticky);
                fa_status st = fa_forward(c, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
                long injected = tu_alloc_failures_injected();
                tu_alloc_fail(0, 0);
                const char *ctxname = use_null ? "NULL context" : "fresh context";
                if (injected == 0) {
                    cr_expect_eq(st, FA_OK, "%s, allocation %ld fails%s: none failed, yet status %d", ctxname,
                                 nth, sticky ? " and all after" : "", st);
                } else {
                    cr_expect_eq(st, FA_ERR_NOMEM, "%s, allocation %ld fails%s: status %d (%s)", ctxname, nth,
                                 sticky ? " and all after" : "", st, fa_status_str(st));
                    nomem_seen += st == FA_ERR_NOMEM;
                    unsigned char *ob = tu_buf_data(&pr.out_buf), *lb = tu_buf_data(&pr.lse_buf);
                    size_t written = 0;
                    for (size_t x = 0; x < pr.out_buf.bytes; x++) written += ob[x] != TU_CANARY;
                    for (size_t x = 0; x < pr.lse_buf.bytes; x++) written += lb[x] != TU_CANARY;
                    cr_expect_eq(written, 0,
                                 "%s, allocation %ld fails%s: the failed call wrote %zu bytes of out/lse",
                                 ctxname, nth, sticky ? " and all after" : "", written);
                }
                /* The context (or the default one) still works, and gives the same bytes. */
                tu_problem_fill_canary(&pr);
                st = fa_forward(c, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
                cr_expect_eq(st, FA_OK, "%s, after allocation %ld failed: status %d", ctxname, nth, st);
                cr_expect(tu_outputs_bitwise_equal(use_null ? &expected_auto : &expected, &pr, NULL),
                          "%s, after allocation %ld failed, seed %llu: wrong result", ctxname, nth,
                          (unsigned long long)seed);
                fa_context_destroy(c);
            }
    cr_expect_gt(nomem_seen, 0, "no injected failure ever produced FA_ERR_NOMEM");
    tu_problem_free(&expected);
    tu_problem_free(&expected_auto);
    tu_problem_free(&pr);
}
