/* SPDX-License-Identifier: BSD-3-Clause */
/* The threading runtime: the caller's affinity survives every binding mode, calls from inside a
 * user's OpenMP region and from several pthreads are correct, a busy context answers FA_ERR_BUSY
 * and touches nothing, and fa_context_stats tells the truth.
 * Criterion's asserts must run on the test's main thread, so worker threads only record what they
 * saw and the main thread asserts afterwards. */
#include <criterion/criterion.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu_facts.h"
#include "util.h"

static const fa_bind all_binds[] = {FA_BIND_NONE, FA_BIND_CORE, FA_BIND_SPREAD, FA_BIND_AUTO};
static const char *bind_name(fa_bind b)
{
    switch (b) {
    case FA_BIND_AUTO: return "AUTO";
    case FA_BIND_NONE: return "NONE";
    case FA_BIND_CORE: return "CORE";
    case FA_BIND_SPREAD: return "SPREAD";
    default: return "?";
    }
}

static cpu_set_t my_affinity(void)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    int rc = pthread_getaffinity_np(pthread_self(), sizeof s, &s);
    if (rc != 0) abort();
    return s;
}

static void small_problem(tu_problem *pr, fa_dtype dt, uint64_t seed)
{
    tu_shape s = {dt, 2, 4, 2, 96, 80, 32, 24, TU_BHSD};
    tu_rng rng = tu_rng_make(seed);
    tu_problem_make(pr, &s, &rng, 2.0);
}

/* The kernel table a context must pick: the one FLASHATTN_ISA names, else the best this CPU runs
 * (decided here from /proc/cpuinfo independently of the library: cpu_facts.h). */
static const char *expected_isa(void)
{
    const char *forced = getenv("FLASHATTN_ISA");
    if (forced && *forced) return forced;
    return cf_best_table();
}

Test(runtime, caller_affinity_unchanged_after_calls_in_every_binding_mode)
{
    uint64_t seed = tu_test_seed();
    tu_problem pr;
    small_problem(&pr, FA_F32, seed);
    cpu_set_t original = my_affinity();
    /* The process's full mask, then (when there are two CPUs or more) a caller pinned to its last
     * allowed CPU only, as an MPI rank or a user's own binding would be. */
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &original)) last = c;
    for (int narrowed = 0; narrowed < 2; narrowed++) {
        if (narrowed) {
            if (CPU_COUNT(&original) < 2) break;
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(last, &one);
            cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
        }
        cpu_set_t before = my_affinity();
        for (int b = 0; b < 4; b++)
            for (int n = 1; n <= 3; n++) {
                fa_context_opts o = FA_CONTEXT_OPTS_INIT;
                o.num_threads = n;
                o.bind = all_binds[b];
                fa_context *ctx;
                cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
                for (int rep = 0; rep < 2; rep++) {
                    fa_status st = fa_forward(ctx, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
                    cr_expect_eq(st, FA_OK, "bind %s, %d threads: status %d", bind_name(o.bind), n, st);
                    cpu_set_t after = my_affinity();
                    cr_expect(CPU_EQUAL(&before, &after),
                              "bind %s, %d threads, %s caller: the calling thread's affinity changed (%d "
                              "CPUs before, "
                              "%d after)",
                              bind_name(o.bind), n, narrowed ? "pinned" : "unpinned", CPU_COUNT(&before),
                              CPU_COUNT(&after));
                }
                fa_context_destroy(ctx);
            }
    }
    pthread_setaffinity_np(pthread_self(), sizeof original, &original);
    tu_problem_free(&pr);
}

/* The threads of the caller's OpenMP pool run the library's work too; after a bound call they must
 * be handed back with the affinity they had, or the user's next parallel region runs pinned. */
Test(runtime, openmp_pool_threads_get_their_affinity_back_after_bound_calls)
{
    uint64_t seed = tu_test_seed();
    tu_problem pr;
    small_problem(&pr, FA_F32, seed);
    enum { TEAM = 3 };
    long tid_before[TEAM];
    cpu_set_t mask_before[TEAM];
#pragma omp parallel num_threads(TEAM)
    {
        int t = omp_get_thread_num();
        if (t < TEAM) {
            tid_before[t] = (long)syscall(SYS_gettid);
            mask_before[t] = my_affinity();
        }
    }
    int team = TEAM;
    for (int b = 0; b < 4; b++) {
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.num_threads = TEAM;
        o.bind = all_binds[b];
        fa_context *ctx;
        cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
        cr_expect_eq(fa_forward(ctx, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_OK);
        fa_context_destroy(ctx);
        int matched = 0, changed = 0;
#pragma omp parallel num_threads(TEAM) reduction(+ : matched, changed)
        {
            long me = (long)syscall(SYS_gettid);
            cpu_set_t now = my_affinity();
            for (int t = 0; t < team; t++)
                if (tid_before[t] == me) {
                    matched++;
                    if (!CPU_EQUAL(&now, &mask_before[t])) changed++;
                }
        }
        cr_expect_gt(matched, 0, "no OpenMP thread of the second region was seen in the first");
        cr_expect_eq(changed, 0, "bind %s: %d OpenMP pool threads kept an affinity the library gave them",
                     bind_name(o.bind), changed);
    }
    tu_problem_free(&pr);
}

/* A call from inside a user's parallel region (nested parallelism off) gives the same bytes as a
 * serial call: with each user thread's own context (AUTO and CORE) and with ctx = NULL. */
Test(runtime, calls_inside_user_parallel_region_match_serial_call_bitwise)
{
    uint64_t seed = tu_test_seed();
    omp_set_max_active_levels(1);
    enum { USERS = 3, KINDS = 3 };
    for (int t = 0; t < 2; t++) {
        fa_dtype dt = t ? FA_F64 : FA_F32;
        tu_problem serial, mine[USERS];
        small_problem(&serial, dt, seed + (uint64_t)t);
        for (int u = 0; u < USERS; u++) small_problem(&mine[u], dt, seed + (uint64_t)t);
        fa_params p = FA_PARAMS_INIT;
        p.causal = FA_CAUSAL_TOP_LEFT;
        fa_context *sctx;
        cr_assert_eq(fa_context_create(&sctx, NULL), FA_OK);
        cr_assert_eq(fa_forward(sctx, &p, &serial.q, &serial.k, &serial.v, &serial.out, serial.lse), FA_OK);
        fa_context_destroy(sctx);
        {
            char msg[512];
            cr_expect(tu_check_picked_accuracy(&serial, &p, INT64_MAX, 1e-12, msg, sizeof msg),
                      "serial call, seed %llu: %s", (unsigned long long)seed, msg);
        }
        fa_status status[USERS][KINDS];
        int equal[USERS][KINDS], ran[USERS];
        memset(ran, 0, sizeof ran);
#pragma omp parallel num_threads(USERS)
        {
            int u = omp_get_thread_num();
            if (u < USERS) {
                ran[u] = 1;
                for (int kind = 0; kind < KINDS; kind++) {
                    fa_context *ctx = NULL;
                    if (kind < 2) {
                        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
                        o.num_threads = 2;
                        o.bind = kind == 0 ? FA_BIND_AUTO : FA_BIND_CORE;
                        if (fa_context_create(&ctx, &o) != FA_OK) ctx = NULL;
                    }
                    tu_problem_fill_canary(&mine[u]);
                    status[u][kind] =
                        fa_forward(ctx, &p, &mine[u].q, &mine[u].k, &mine[u].v, &mine[u].out, mine[u].lse);
                    equal[u][kind] = tu_outputs_bitwise_equal(&serial, &mine[u], NULL);
                    fa_context_destroy(ctx);
                }
            }
        }
        static const char *kinds[KINDS] = {"own context, AUTO", "own context, CORE", "NULL context"};
        for (int u = 0; u < USERS; u++) {
            if (!ran[u]) continue;
            for (int kind = 0; kind < KINDS; kind++) {
                cr_expect_eq(status[u][kind], FA_OK, "%s, user thread %d, %s: status %d", t ? "f64" : "f32",
                             u, kinds[kind], status[u][kind]);
                cr_expect(equal[u][kind],
                          "%s, user thread %d, %s, seed %llu: result differs from the serial call",
                          t ? "f64" : "f32", u, kinds[kind], (unsigned long long)seed);
            }
        }
        tu_problem_free(&serial);
        for (int u = 0; u < USERS; u++) tu_problem_free(&mine[u]);
    }
}

/* ---- concurrent NULL-context calls from pthreads -------------------------------------------- */

typedef struct {
    tu_problem pr;
    const tu_problem *expected;
    int ok_calls, equal_calls;
} null_ctx_job;

enum { NULL_CTX_THREADS = 4, NULL_CTX_REPS = 3 };

static void *null_ctx_worker(void *arg)
{
    null_ctx_job *j = arg;
    for (int r = 0; r < NULL_CTX_REPS; r++) {
        tu_problem_fill_canary(&j->pr);
        fa_params p = FA_PARAMS_INIT;
        p.causal = FA_CAUSAL_BOTTOM_RIGHT;
        if (fa_forward(NULL, &p, &j->pr.q, &j->pr.k, &j->pr.v, &j->pr.out, j->pr.lse) == FA_OK) j->ok_calls++;
        if (tu_outputs_bitwise_equal(j->expected, &j->pr, NULL)) j->equal_calls++;
    }
    return NULL;
}

Test(runtime, concurrent_null_context_calls_from_pthreads_are_correct)
{
    uint64_t seed = tu_test_seed();
    tu_problem expected;
    small_problem(&expected, FA_F64, seed);
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_BOTTOM_RIGHT;
    cr_assert_eq(fa_forward(NULL, &p, &expected.q, &expected.k, &expected.v, &expected.out, expected.lse),
                 FA_OK);
    char msg[512];
    cr_expect(tu_check_picked_accuracy(&expected, &p, INT64_MAX, 1e-12, msg, sizeof msg), "seed %llu: %s",
              (unsigned long long)seed, msg);
    null_ctx_job jobs[NULL_CTX_THREADS];
    pthread_t th[NULL_CTX_THREADS];
    for (int i = 0; i < NULL_CTX_THREADS; i++) {
        small_problem(&jobs[i].pr, FA_F64, seed);
        jobs[i].expected = &expected;
        jobs[i].ok_calls = jobs[i].equal_calls = 0;
        cr_assert_eq(pthread_create(&th[i], NULL, null_ctx_worker, &jobs[i]), 0);
    }
    for (int i = 0; i < NULL_CTX_THREADS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < NULL_CTX_THREADS; i++) {
        cr_expect_eq(jobs[i].ok_calls, NULL_CTX_REPS, "pthread %d: %d of %d calls returned FA_OK", i,
                     jobs[i].ok_calls, NULL_CTX_REPS);
        cr_expect_eq(jobs[i].equal_calls, NULL_CTX_REPS,
                     "pthread %d, seed %llu: %d of %d results were correct", i, (unsigned long long)seed,
                     jobs[i].equal_calls, NULL_CTX_REPS);
        tu_problem_free(&jobs[i].pr);
    }
    tu_problem_free(&expected);
}

/* ---- a busy context ------------------------------------------------------------------------- *
 * Thread A runs a long call on the context in a loop; the main thread (B) calls with a small
 * problem on the same context whenever A has announced a call. A bumps `a_gen` before and after
 * each call (odd = maybe inside). B must see FA_ERR_BUSY at least once; every BUSY it sees must
 * leave its canary-filled out and lse untouched and must happen while A was (maybe) inside; every
 * FA_OK (B's or A's, when B won the race for the context) must be correct. A stops once B has seen
 * BUSY a few times, or after a fixed number of calls: no timing anywhere. */

/* A's bounds: calls that completed, and attempts (a BUSY answer, when B holds the context, is
 * retried at once). */
enum { A_MAX_CALLS = 200, A_MAX_ATTEMPTS = 1000000, B_BUSY_WANTED = 5 };

typedef struct {
    fa_context *ctx;
    tu_problem pr;
    const tu_problem *expected;
    atomic_int a_gen, b_busy_seen, a_done;
    int a_ok, a_busy, a_wrong, a_busy_wrote, a_calls;
} busy_state;

static void *busy_thread_a(void *arg)
{
    busy_state *s = arg;
    for (int i = 0;
         i < A_MAX_ATTEMPTS && s->a_ok < A_MAX_CALLS && atomic_load(&s->b_busy_seen) < B_BUSY_WANTED; i++) {
        tu_problem_fill_canary(&s->pr);
        atomic_fetch_add(&s->a_gen, 1);
        fa_status st = fa_forward(s->ctx, NULL, &s->pr.q, &s->pr.k, &s->pr.v, &s->pr.out, s->pr.lse);
        atomic_fetch_add(&s->a_gen, 1);
        s->a_calls++;
        if (st == FA_OK) {
            s->a_ok++;
            if (!tu_outputs_bitwise_equal(s->expected, &s->pr, NULL)) s->a_wrong++;
        } else if (st == FA_ERR_BUSY) {
            s->a_busy++; /* B held the context: allowed, but nothing may have been written */
            if (!kit_buf_untouched(&s->pr.out_buf) || !kit_buf_guards_intact(&s->pr.lse_buf))
                s->a_busy_wrote++;
        } else {
            s->a_wrong++;
        }
    }
    atomic_store(&s->a_done, 1);
    return NULL;
}

Test(runtime, second_concurrent_call_on_busy_context_gets_err_busy_and_touches_nothing)
{
    uint64_t seed = tu_test_seed();
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = 2;
    o.bind = FA_BIND_NONE;
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);

    /* A's long problem and B's short one, each with its expected bytes from a quiet run. */
    tu_shape sa = {FA_F64, 1, 4, 4, 384, 384, 64, 64, TU_BHSD};
    tu_shape sb = {FA_F32, 1, 2, 1, 8, 8, 8, 8, TU_BHSD};
    tu_rng rng = tu_rng_make(seed);
    busy_state *s = calloc(1, sizeof *s);
    cr_assert(s);
    tu_problem expected_a, expected_b, b;
    tu_problem_make(&expected_a, &sa, &rng, 2.0);
    rng = tu_rng_make(seed);
    tu_problem_make(&s->pr, &sa, &rng, 2.0);
    rng = tu_rng_make(seed + 1);
    tu_problem_make(&expected_b, &sb, &rng, 2.0);
    rng = tu_rng_make(seed + 1);
    tu_problem_make(&b, &sb, &rng, 2.0);
    cr_assert_eq(
        fa_forward(ctx, NULL, &expected_a.q, &expected_a.k, &expected_a.v, &expected_a.out, expected_a.lse),
        FA_OK);
    cr_assert_eq(
        fa_forward(ctx, NULL, &expected_b.q, &expected_b.k, &expected_b.v, &expected_b.out, expected_b.lse),
        FA_OK);
    s->ctx = ctx;
    s->expected = &expected_a;

    pthread_t a;
    cr_assert_eq(pthread_create(&a, NULL, busy_thread_a, s), 0);
    long b_calls = 0, b_ok = 0, b_busy = 0, b_wrong = 0, b_busy_wrote = 0, b_busy_while_a_idle = 0;
    while (!atomic_load(&s->a_done)) {
        tu_problem_fill_canary(&b);
        int g1 = atomic_load(&s->a_gen);
        if (g1 % 2 == 0) { /* A is between calls: wait for the next one, leave A the CPU */
            sched_yield();
            continue;
        }
        fa_status st = fa_forward(ctx, NULL, &b.q, &b.k, &b.v, &b.out, b.lse);
        int g2 = atomic_load(&s->a_gen);
        b_calls++;
        if (st == FA_OK) {
            b_ok++;
            if (!tu_outputs_bitwise_equal(&expected_b, &b, NULL)) b_wrong++;
        } else if (st == FA_ERR_BUSY) {
            b_busy++;
            atomic_fetch_add(&s->b_busy_seen, 1);
            b_busy_wrote += !kit_buf_untouched(&b.out_buf) || !kit_buf_untouched(&b.lse_buf);
            /* A was outside every call for the whole of B's call: nobody else held the context. */
            if (g1 == g2 && g1 % 2 == 0) b_busy_while_a_idle++;
        } else {
            b_wrong++;
        }
    }
    pthread_join(a, NULL);
    fprintf(stderr, "[busy] A: %d calls (%d ok, %d busy); B: %ld calls (%ld ok, %ld busy)\n", s->a_calls,
            s->a_ok, s->a_busy, b_calls, b_ok, b_busy);
    cr_expect_gt(b_busy, 0, "B never saw FA_ERR_BUSY in %ld calls while A made %d long calls", b_calls,
                 s->a_calls);
    cr_expect_eq(b_busy_wrote, 0, "%ld of B's BUSY calls wrote into out or lse", b_busy_wrote);
    cr_expect_eq(b_busy_while_a_idle, 0, "%ld of B's calls got BUSY while the context was idle",
                 b_busy_while_a_idle);
    cr_expect_eq(b_wrong, 0, "seed %llu: %ld of B's calls failed or gave wrong bytes",
                 (unsigned long long)seed, b_wrong);
    cr_expect_eq(s->a_wrong, 0, "seed %llu: %d of A's calls failed or gave wrong bytes",
                 (unsigned long long)seed, s->a_wrong);
    cr_expect_eq(s->a_busy_wrote, 0, "%d of A's BUSY calls wrote into out", s->a_busy_wrote);
    cr_expect_gt(s->a_ok, 0, "A never completed a call");
    /* Still usable afterwards. */
    tu_problem_fill_canary(&b);
    cr_expect_eq(fa_forward(ctx, NULL, &b.q, &b.k, &b.v, &b.out, b.lse), FA_OK);
    cr_expect(tu_outputs_bitwise_equal(&expected_b, &b, NULL));
    tu_problem_free(&expected_a);
    tu_problem_free(&expected_b);
    tu_problem_free(&b);
    tu_problem_free(&s->pr);
    free(s);
    fa_context_destroy(ctx);
}

/* ---- what fa_context_stats reports ---------------------------------------------------------- */
Test(runtime, stats_report_selected_isa_configured_threads_and_bound_threads_within_range)
{
    uint64_t seed = tu_test_seed();
    tu_problem pr;
    small_problem(&pr, FA_F32, seed);
    static const int counts[] = {0, 1, 3};
    for (int b = 0; b < 4; b++)
        for (int c = 0; c < 3; c++) {
            fa_context_opts o = FA_CONTEXT_OPTS_INIT;
            o.num_threads = counts[c];
            o.bind = all_binds[b];
            o.block_q = c == 2 ? 24 : 0;
            o.block_k = c == 2 ? 40 : 0;
            int want_threads = counts[c] ? counts[c] : omp_get_max_threads();
            fa_context *ctx;
            cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
            fa_stats st = FA_STATS_INIT;
            cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
            cr_expect_eq(st.num_threads, want_threads, "bind %s, num_threads %d: stats say %d before a call",
                         bind_name(o.bind), o.num_threads, st.num_threads);
            cr_expect_eq(st.bound_threads, 0, "bound_threads %d before any call", st.bound_threads);
            cr_expect_eq(st.block_q, o.block_q, "block_q %d before any call, configured %d", st.block_q,
                         o.block_q);
            cr_expect_eq(st.block_k, o.block_k, "block_k %d before any call, configured %d", st.block_k,
                         o.block_k);
            const char *want_isa = expected_isa();
            cr_expect(st.isa && strcmp(st.isa, want_isa) == 0, "isa \"%s\", expected \"%s\"",
                      st.isa ? st.isa : "(null)", want_isa);
            cr_assert_eq(fa_forward(ctx, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_OK);
            cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
            cr_expect_eq(st.num_threads, want_threads, "bind %s, num_threads %d: stats say %d",
                         bind_name(o.bind), o.num_threads, st.num_threads);
            cr_expect(st.isa && strcmp(st.isa, want_isa) == 0, "isa \"%s\", expected \"%s\"",
                      st.isa ? st.isa : "(null)", want_isa);
            cr_expect(st.bound_threads >= 0 && st.bound_threads <= st.num_threads,
                      "bind %s: bound_threads %d outside 0..%d", bind_name(o.bind), st.bound_threads,
                      st.num_threads);
            if (o.bind == FA_BIND_AUTO)
                cr_expect(st.bind == FA_BIND_NONE || st.bind == FA_BIND_CORE || st.bind == FA_BIND_SPREAD,
                          "AUTO resolved to %d", (int)st.bind);
            else
                cr_expect_eq(st.bind, o.bind, "bind %s reported as %d", bind_name(o.bind), (int)st.bind);
            if (st.bind == FA_BIND_NONE)
                cr_expect_eq(st.bound_threads, 0, "bind NONE but %d threads pinned", st.bound_threads);
            cr_expect(st.block_q >= 1 && st.block_k >= 1, "blocks used %d/%d", st.block_q, st.block_k);
            if (o.block_q) {
                cr_expect_eq(st.block_q, o.block_q);
                cr_expect_eq(st.block_k, o.block_k);
            }
            cr_expect(st.scratch_peak > 0 && st.scratch_capacity >= st.scratch_peak,
                      "scratch peak %zu capacity %zu", st.scratch_peak, st.scratch_capacity);
            fa_context_reset_stats(ctx);
            cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
            cr_expect_eq(st.scratch_peak, 0);
            cr_expect_eq(st.bound_threads, 0);
            fa_context_destroy(ctx);
        }
    tu_problem_free(&pr);
}

/* ---- how FA_BIND_AUTO resolves (fa_stats.bind after a call) ---------------------------------
 * AUTO is CORE unless OMP_PROC_BIND or OMP_PLACES is set, or there are more threads than allowed
 * cores, or the call comes from inside an active parallel region: then NONE. FLASHATTN_BIND
 * replaces AUTO. Every test runs in its own process, so each sets its environment before its
 * first library call and leaves no trace. */

static void clear_binding_environment(void)
{
    unsetenv("OMP_PROC_BIND");
    unsetenv("OMP_PLACES");
    unsetenv("FLASHATTN_BIND");
}

static void expect_auto_resolves_to(const char *what, int threads, fa_bind want)
{
    tu_problem pr;
    small_problem(&pr, FA_F32, 7);
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = threads;
    o.bind = FA_BIND_AUTO;
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
    cr_assert_eq(fa_forward(ctx, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_OK);
    fa_stats st = FA_STATS_INIT;
    cr_assert_eq(fa_context_stats(ctx, &st), FA_OK);
    cr_expect_eq(st.bind, want, "%s: AUTO resolved to %s, want %s", what, bind_name(st.bind),
                 bind_name(want));
    if (st.bind == FA_BIND_NONE)
        cr_expect_eq(st.bound_threads, 0, "%s: NONE but %d threads pinned", what, st.bound_threads);
    fa_context_destroy(ctx);
    tu_problem_free(&pr);
}

Test(runtime, auto_binding_is_core_for_one_thread_without_environment)
{
    clear_binding_environment();
    expect_auto_resolves_to("1 thread, no OMP_PROC_BIND/OMP_PLACES/FLASHATTN_BIND", 1, FA_BIND_CORE);
}

Test(runtime, auto_binding_is_none_with_more_threads_than_allowed_cpus)
{
    clear_binding_environment();
    cpu_set_t mine = my_affinity();
    int threads = CPU_COUNT(&mine) + 1; /* more than CPUs, so more than cores */
    expect_auto_resolves_to("more threads than allowed CPUs", threads, FA_BIND_NONE);
}

Test(runtime, auto_binding_is_none_when_omp_proc_bind_is_set)
{
    clear_binding_environment();
    setenv("OMP_PROC_BIND", "close", 1);
    expect_auto_resolves_to("OMP_PROC_BIND=close", 1, FA_BIND_NONE);
}

Test(runtime, auto_binding_is_none_when_omp_places_is_set)
{
    clear_binding_environment();
    setenv("OMP_PLACES", "cores", 1);
    expect_auto_resolves_to("OMP_PLACES=cores", 1, FA_BIND_NONE);
}

Test(runtime, flashattn_bind_spread_replaces_auto)
{
    clear_binding_environment();
    setenv("FLASHATTN_BIND", "spread", 1);
    expect_auto_resolves_to("FLASHATTN_BIND=spread", 1, FA_BIND_SPREAD);
}

Test(runtime, flashattn_bind_none_replaces_auto)
{
    clear_binding_environment();
    setenv("FLASHATTN_BIND", "none", 1);
    expect_auto_resolves_to("FLASHATTN_BIND=none", 1, FA_BIND_NONE);
}

Test(runtime, auto_binding_is_none_inside_an_active_parallel_region)
{
    clear_binding_environment();
    omp_set_max_active_levels(1);
    tu_problem pr[2];
    small_problem(&pr[0], FA_F32, 7);
    small_problem(&pr[1], FA_F32, 7);
    fa_bind got[2] = {FA_BIND_AUTO, FA_BIND_AUTO};
    fa_status st[2] = {FA_ERR_RUNTIME, FA_ERR_RUNTIME};
    int team = 0;
#pragma omp parallel num_threads(2)
    {
        int u = omp_get_thread_num();
#pragma omp single
        team = omp_get_num_threads();
        if (u < 2) {
            fa_context_opts o = FA_CONTEXT_OPTS_INIT;
            o.num_threads = 1;
            fa_context *ctx;
            if (fa_context_create(&ctx, &o) == FA_OK) {
                st[u] = fa_forward(ctx, NULL, &pr[u].q, &pr[u].k, &pr[u].v, &pr[u].out, pr[u].lse);
                fa_stats s = FA_STATS_INIT;
                if (fa_context_stats(ctx, &s) == FA_OK) got[u] = s.bind;
                fa_context_destroy(ctx);
            }
        }
    }
    if (team < 2) cr_skip_test("the runtime gave the parallel region only %d thread", team);
    for (int u = 0; u < 2; u++) {
        cr_expect_eq(st[u], FA_OK, "user thread %d: status %d", u, st[u]);
        cr_expect_eq(got[u], FA_BIND_NONE, "user thread %d inside an active region: AUTO resolved to %s", u,
                     bind_name(got[u]));
    }
    tu_problem_free(&pr[0]);
    tu_problem_free(&pr[1]);
}
