/* SPDX-License-Identifier: BSD-3-Clause */
/* Out of memory in every place a call or a context allocates: fa_forward (arenas, the split-KV
 * partials in the context's row buffer, the default context itself), fa_backward (its larger
 * arenas and the per-context delta rows) and fa_context_create. An allocation that fails returns
 * FA_ERR_NOMEM, writes no byte of any output (nor changes out and lse, which the backward reads),
 * leaves the context usable (the next call gives the serial run's bytes) and leaks nothing:
 * between before the context exists and after it is destroyed (or, for ctx = NULL, after the
 * thread that owned the default context has exited) every allocation the wrappers of tests/util.c
 * saw succeed was freed. tests/test_alloc.c covers a first fa_forward on a fresh context; this
 * file adds the rest.
 *
 * Failure injection (tu_alloc_fail) makes allocation number nth fail, alone or with every later
 * one; nth runs from 1 until a call makes fewer allocations than that. No Criterion assert runs
 * inside a counted window (its macros free memory its library allocated, unseen by the counters). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_util.h"

enum { PHASE_FORWARD = 0, PHASE_BACKWARD = 1, MAX_NTH = 24 };

typedef struct {
    fa_status status, recovered;
    long injected;
    int untouched, equal, prior_ok;
} oom_outcome;

typedef struct {
    rt_run *run;
    int phase;
    long nth;
    int sticky;
    fa_context *ctx; /* NULL: the calling thread's default context */
    unsigned char *snapshot;
    oom_outcome out;
} oom_try;

/* Creates the calling thread's default context with a call that has no rows (it succeeds, runs no
 * item and reserves no scratch), so that the injected call fails in what it grows, not in the
 * context's creation (create_sweep covers that). */
static int create_default_context(void)
{
    double unused[1] = {0.0};
    fa_tensor q = fa_tensor_bhsd(unused, FA_F64, 1, 1, 0, 1), k = fa_tensor_bhsd(unused, FA_F64, 1, 1, 1, 1);
    return fa_forward(NULL, NULL, &q, &k, &k, &q, NULL) == FA_OK;
}

/* One try, in whatever thread calls it. The backward's out and lse come from a forward on another
 * context, so the backward itself grows everything it needs: the delta rows and its arenas. Then
 * the injected call, then a clean step on the same context. */
static void oom_try_run(oom_try *t)
{
    rt_run *r = t->run;
    rt_fill_canary(r);
    t->out.prior_ok = t->ctx ? 1 : create_default_context();
    if (t->phase == PHASE_BACKWARD) {
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.num_threads = 1;
        fa_context *other = NULL;
        t->out.prior_ok &=
            fa_context_create(&other, &o) == FA_OK && tub_forward(other, &r->p, &r->bp) == FA_OK;
        fa_context_destroy(other);
    }
    rt_output_copy(r, t->snapshot);
    tu_alloc_fail(t->nth, t->sticky);
    t->out.status =
        t->phase == PHASE_FORWARD ? tub_forward(t->ctx, &r->p, &r->bp) : tub_backward(t->ctx, &r->p, &r->bp);
    t->out.injected = tu_alloc_failures_injected();
    tu_alloc_fail(0, 0);
    t->out.untouched = rt_outputs_equal_bytes(r, t->snapshot);
    t->out.recovered = rt_step(t->ctx, r);
}

static void *oom_thread(void *arg)
{
    oom_try_run(arg);
    return NULL; /* the default context is freed as this thread exits */
}

static const char *phase_name(int phase)
{
    return phase == PHASE_FORWARD ? "fa_forward" : "fa_backward";
}

/* Every nth, alone and sticky, for one case, phase and kind of context. */
static void oom_sweep(const rt_run *expected, rt_run *run, int phase, int null_context, uint64_t seed)
{
    const char *kind = null_context ? "ctx = NULL (a thread's default context)" : "a 2-thread context";
    unsigned char *snapshot = malloc(rt_output_bytes(run));
    cr_assert(snapshot);
    long tries = 0, nomem = 0, wrong_status = 0, wrote = 0, unusable = 0, leaked_total = 0, last_nth = 0;
    for (int sticky = 0; sticky < 2; sticky++)
        for (long nth = 1; nth <= MAX_NTH; nth++) {
            oom_try t = {run, phase, nth, sticky, NULL, snapshot, {0}};
            fa_status created = FA_OK;
            tu_alloc_count c0 = tu_alloc_count_now();
            if (null_context) {
                pthread_t th;
                if (pthread_create(&th, NULL, oom_thread, &t) != 0) abort();
                pthread_join(th, NULL);
            } else {
                fa_context_opts o = FA_CONTEXT_OPTS_INIT;
                o.num_threads = 2;
                o.bind = FA_BIND_NONE;
                created = fa_context_create(&t.ctx, &o);
                if (created == FA_OK) oom_try_run(&t);
                fa_context_destroy(t.ctx);
            }
            tu_alloc_count c1 = tu_alloc_count_now();
            /* An injected failure is counted as an allocation but returns nothing to free. */
            long leaked = (c1.allocs - c0.allocs - t.out.injected) - (c1.frees - c0.frees);

            const char *how = sticky ? " and every later one" : "";
            cr_assert_eq(created, FA_OK);
            cr_assert(t.out.prior_ok, "%s: a clean call before the injected one failed", kind);
            int equal = rt_outputs_equal(expected, run);
            if (t.out.injected > 0) {
                tries++;
                if (nth > last_nth) last_nth = nth;
                nomem += t.out.status == FA_ERR_NOMEM;
                wrong_status += t.out.status != FA_ERR_NOMEM;
                wrote += !t.out.untouched;
                cr_expect_eq(t.out.status, FA_ERR_NOMEM, "%s %s, %s, allocation %ld fails%s: %s",
                             run->c->name, phase_name(phase), kind, nth, how, fa_status_str(t.out.status));
                cr_expect(t.out.untouched,
                          "%s %s, %s, allocation %ld fails%s: the failed call changed out, lse or a gradient",
                          run->c->name, phase_name(phase), kind, nth, how);
            } else {
                cr_expect_eq(t.out.status, FA_OK, "%s %s, %s, allocation %ld fails%s: none failed, yet %s",
                             run->c->name, phase_name(phase), kind, nth, how, fa_status_str(t.out.status));
            }
            unusable += t.out.recovered != FA_OK || !equal;
            leaked_total += leaked;
            cr_expect_eq(t.out.recovered, FA_OK,
                         "%s %s, %s, after allocation %ld failed%s: the next step: %s", run->c->name,
                         phase_name(phase), kind, nth, how, fa_status_str(t.out.recovered));
            cr_expect(
                equal,
                "%s %s, %s, after allocation %ld failed%s, seed %llu: the next step's bytes differ from the "
                "serial run",
                run->c->name, phase_name(phase), kind, nth, how, (unsigned long long)seed);
            cr_expect_eq(leaked, 0, "%s %s, %s, allocation %ld fails%s: %ld allocations never freed",
                         run->c->name, phase_name(phase), kind, nth, how, leaked);
            if (t.out.injected == 0) break; /* the call made fewer than nth allocations */
        }
    fprintf(
        stderr,
        "[oom] %s, %s, %s: %ld failed allocations (1..%ld, alone and sticky): %ld FA_ERR_NOMEM, %ld other "
        "statuses, %ld wrote, %ld unusable after, %ld allocations leaked\n",
        run->c->name, phase_name(phase), kind, tries, last_nth, nomem, wrong_status, wrote, unusable,
        leaked_total);
    cr_expect_gt(tries, 0, "%s %s, %s: no allocation of the call could be made to fail", run->c->name,
                 phase_name(phase), kind);
    cr_expect_lt(last_nth, MAX_NTH, "%s %s, %s: still failing at allocation %d", run->c->name,
                 phase_name(phase), kind, MAX_NTH);
    free(snapshot);
}

/* The split-KV decode case grows the row buffer in the forward; the backward grows it (delta) on
 * a context that has only run forwards, and its arenas outgrow the forward's. */
static void oom_case(int case_index)
{
    uint64_t seed = tu_test_seed();
    cr_assert(tu_alloc_counting_active(), "the allocation wrappers are not linked in");
    rt_run expected, run;
    char msg[1024];
    rt_make(&expected, &rt_cases[case_index], seed);
    rt_make(&run, &rt_cases[case_index], seed);
    cr_assert(rt_serial(&expected, 1, msg, sizeof msg), "seed %llu: %s", (unsigned long long)seed, msg);
    for (int null_context = 0; null_context < 2; null_context++)
        for (int phase = 0; phase < 2; phase++) oom_sweep(&expected, &run, phase, null_context, seed);
    rt_free(&expected);
    rt_free(&run);
}

Test(oom, forward_and_backward_fail_cleanly_and_recover_f32_gqa)
{
    rt_watchdog(120);
    oom_case(0);
}

Test(oom, forward_and_backward_fail_cleanly_and_recover_f64_split_kv_decode)
{
    rt_watchdog(120);
    oom_case(3);
}

/* fa_context_create under every failed allocation: an error, *ctx not written, nothing leaked;
 * the error is FA_ERR_NOMEM every time. */
static void create_sweep(void)
{
    tu_test_seed();
    cr_assert(tu_alloc_counting_active(), "the allocation wrappers are not linked in");
    fa_context *const sentinel = (fa_context *)(uintptr_t)0x5a5a5a5a;
    long tries = 0, nomem = 0, succeeded = 0, wrote = 0, leaked_total = 0, last_nth = 0;
    for (int sticky = 0; sticky < 2; sticky++)
        for (long nth = 1; nth <= MAX_NTH; nth++) {
            fa_context_opts o = FA_CONTEXT_OPTS_INIT;
            o.num_threads = 3;
            fa_context *ctx = sentinel;
            tu_alloc_count c0 = tu_alloc_count_now();
            tu_alloc_fail(nth, sticky);
            fa_status st = fa_context_create(&ctx, &o);
            long injected = tu_alloc_failures_injected();
            tu_alloc_fail(0, 0);
            if (st == FA_OK) fa_context_destroy(ctx);
            tu_alloc_count c1 = tu_alloc_count_now();
            long leaked = (c1.allocs - c0.allocs - injected) - (c1.frees - c0.frees);
            const char *how = sticky ? " and every later one" : "";
            leaked_total += leaked;
            cr_expect_eq(leaked, 0, "allocation %ld fails%s: %ld allocations never freed", nth, how, leaked);
            if (injected == 0) {
                cr_expect_eq(st, FA_OK, "allocation %ld fails%s: none failed, yet %s", nth, how,
                             fa_status_str(st));
                break;
            }
            tries++;
            if (nth > last_nth) last_nth = nth;
            nomem += st == FA_ERR_NOMEM;
            succeeded += st == FA_OK;
            wrote += st != FA_OK && ctx != sentinel;
            cr_expect_neq(st, FA_OK, "allocation %ld fails%s, yet fa_context_create succeeded", nth, how);
            cr_expect_eq(st, FA_ERR_NOMEM, "allocation %ld fails%s: %s", nth, how, fa_status_str(st));
            if (st != FA_OK)
                cr_expect_eq(ctx, sentinel, "allocation %ld fails%s: *ctx was written", nth, how);
        }
    fprintf(stderr,
            "[oom] fa_context_create: %ld failed allocations (1..%ld, alone and sticky): %ld FA_ERR_NOMEM, "
            "%ld other "
            "errors, %ld succeeded, %ld wrote *ctx, %ld allocations leaked\n",
            tries, last_nth, nomem, tries - nomem - succeeded, succeeded, wrote, leaked_total);
    cr_expect_gt(tries, 0, "fa_context_create made no allocation the wrappers saw");
}

Test(oom, context_create_under_failed_allocations_returns_nomem_writes_nothing_and_leaks_nothing)
{
    rt_watchdog(60);
    create_sweep();
}
