/* SPDX-License-Identifier: BSD-3-Clause */
/* No steady-state allocation, forward and backward: after a first call on a context, a second
 * identical call and a smaller call allocate and free nothing (and, backward, neither do whole
 * forward + backward steps). Counted by the link-time wrappers in util.c (fa-tests is linked with
 * -Wl,--wrap=malloc,calloc,realloc,free,aligned_alloc,posix_memalign), which see every call made
 * by the static library's objects, from any thread. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc_steady.h"
#include "util.h"
#include "util_backward.h"

/* One pass on a problem whose forward outputs (the backward's inputs) the caller made. */
static fa_status run_pass(tub_direction dir, fa_context *ctx, const fa_params *p, tub_problem *bp)
{
    return dir == TUB_FORWARD ? fa_forward(ctx, p, &bp->fw.q, &bp->fw.k, &bp->fw.v, &bp->fw.out, bp->fw.lse)
                              : tub_backward(ctx, p, bp);
}

/* Runs a pass three times (first, identical, smaller) and checks the counts of the last two; the
 * backward then runs three training steps (forward + backward) and checks those too. The backward's
 * out and lse come from forwards on the same context before the first count. */
static void check_steady_state(tub_direction dir, uint64_t seed, fa_context *ctx, fa_dtype dt)
{
    cr_assert(tu_alloc_counting_active(), "the allocation wrappers are not linked in");
    const char *name = tub_direction_name(dir);
    tu_shape big = {dt, 2, 4, 2, 200, 230, 64, 48, TU_BHSD};
    tu_shape small = {dt, 1, 4, 2, 50, 60, 64, 48, TU_BSHD};
    tu_rng rng = tu_rng_make(seed);
    tub_problem a, b;
    tub_make(&a, &big, &rng, 2.0);
    tub_make(&b, &small, &rng, 2.0);
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_TOP_LEFT;
    if (dir == TUB_BACKWARD) {
        cr_assert_eq(tub_forward(ctx, &p, &a), FA_OK, "seed %llu", (unsigned long long)seed);
        cr_assert_eq(tub_forward(ctx, &p, &b), FA_OK, "seed %llu", (unsigned long long)seed);
    }

    tu_alloc_count c0 = tu_alloc_count_now();
    fa_status st = run_pass(dir, ctx, &p, &a);
    tu_alloc_count c1 = tu_alloc_count_now();
    cr_assert_eq(st, FA_OK, "seed %llu: first %s status %d", (unsigned long long)seed, name, st);
    fprintf(stderr, "[alloc] seed %llu: first %s: %ld allocations, %ld frees\n", (unsigned long long)seed,
            name, c1.allocs - c0.allocs, c1.frees - c0.frees);

    char what[96];
    st = run_pass(dir, ctx, &p, &a);
    tu_alloc_count c2 = tu_alloc_count_now();
    cr_assert_eq(st, FA_OK, "seed %llu: second %s status %d", (unsigned long long)seed, name, st);
    snprintf(what, sizeof what, "the second identical %s", name);
    as_expect_none(what, c1, c2, seed);

    st = run_pass(dir, ctx, &p, &b);
    tu_alloc_count c3 = tu_alloc_count_now();
    cr_assert_eq(st, FA_OK, "seed %llu: smaller %s status %d", (unsigned long long)seed, name, st);
    snprintf(what, sizeof what, "a smaller %s after a bigger one", name);
    as_expect_none(what, c2, c3, seed);

    if (dir == TUB_BACKWARD) {
        for (int step = 0; step < 3; step++) {
            cr_assert_eq(tub_forward(ctx, &p, &a), FA_OK);
            cr_assert_eq(tub_backward(ctx, &p, &a), FA_OK);
        }
        tu_alloc_count c4 = tu_alloc_count_now();
        as_expect_none("three forward + backward steps", c3, c4, seed);
    }
    tub_free(&a);
    tub_free(&b);
}

static void check_forward(uint64_t seed, fa_context *ctx, fa_dtype dt)
{
    check_steady_state(TUB_FORWARD, seed, ctx, dt);
}

static void check_backward(uint64_t seed, fa_context *ctx, fa_dtype dt)
{
    check_steady_state(TUB_BACKWARD, seed, ctx, dt);
}

/* One test per direction and kind of context: the backward's checks run whole training steps on
 * a 200x230 problem, which scripts/test.sh's valgrind stage (alloc, forward only) leaves out. */
Test(alloc, second_identical_call_on_a_context_allocates_nothing)
{
    as_on_fresh_context_per_dtype(check_forward);
}

Test(alloc, second_identical_backward_on_a_context_allocates_nothing)
{
    as_on_fresh_context_per_dtype(check_backward);
}

Test(alloc, second_identical_call_with_fixed_blocks_and_threads_allocates_nothing)
{
    as_on_fixed_blocks_and_threads(check_forward);
}

Test(alloc, second_identical_backward_with_fixed_blocks_and_threads_allocates_nothing)
{
    as_on_fixed_blocks_and_threads(check_backward);
}

Test(alloc, second_identical_call_with_null_context_allocates_nothing)
{
    check_forward(tu_test_seed(), NULL, FA_F64);
}

Test(alloc, second_identical_backward_with_null_context_allocates_nothing)
{
    check_backward(tu_test_seed(), NULL, FA_F64);
}

/* The first call of a context does allocate through the wrapped functions (the forward its arenas;
 * a first backward after forwards only, its larger arena and the delta rows); if this fails, the
 * counting above proves nothing (the library allocates through something unwrapped). */
Test(alloc, first_call_allocations_are_visible_to_the_counter)
{
    uint64_t seed = tu_test_seed();
    cr_assert(tu_alloc_counting_active(), "the allocation wrappers are not linked in");
    static const fa_dtype dtype[TUB_DIRECTIONS] = {FA_F32, FA_F64};
    for (int d = 0; d < TUB_DIRECTIONS; d++) {
        tu_shape s = {dtype[d], 1, 2, 1, 64, 64, 32, 32, TU_BHSD};
        tu_rng rng = tu_rng_make(seed + (uint64_t)d);
        tub_problem bp;
        tub_make(&bp, &s, &rng, 1.0);
        fa_context *ctx;
        cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
        if (d == TUB_BACKWARD) cr_assert_eq(tub_forward(ctx, NULL, &bp), FA_OK);
        tu_alloc_count c0 = tu_alloc_count_now();
        cr_assert_eq(run_pass((tub_direction)d, ctx, NULL, &bp), FA_OK);
        tu_alloc_count c1 = tu_alloc_count_now();
        cr_expect_gt(c1.allocs - c0.allocs, 0,
                     "the first %s on a fresh context allocated nothing the wrappers saw",
                     tub_direction_name((tub_direction)d));
        fa_context_destroy(ctx);
        tub_free(&bp);
    }
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
                    cr_expect(kit_buf_untouched(&pr.out_buf) && kit_buf_untouched(&pr.lse_buf),
                              "%s, allocation %ld fails%s: the failed call wrote into out/lse", ctxname, nth,
                              sticky ? " and all after" : "");
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
