/* SPDX-License-Identifier: BSD-3-Clause */
/* Calls from inside a user's OpenMP parallel region: with nested parallelism off (the library's own
 * region is then inactive: a team of one on each calling thread) and on (its region is a nested
 * team), from the first and from the second level of the user's regions, each user thread with its
 * own context and with ctx = NULL, and under OMP_THREAD_LIMIT (read once per process, so that test
 * runs this executable again with the variable set). Every training step (fa_forward then
 * fa_backward, over the problems of runtime_util.c) must give the serial run's bytes, and nothing
 * may hang: each test has a Criterion timeout, the re-run a deadline of its own.
 * Criterion asserts run on the test's main thread only: user threads record, the main thread
 * asserts after the region. */
#include <criterion/criterion.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_util.h"

enum { MAX_USERS = 4, KINDS = 2 };

typedef struct {
    const char *what;
    int max_active_levels;
    int outer, inner; /* inner 0: calls from the outer region; otherwise from a region nested in it */
} nest_config;

static const nest_config nest_off = {"nesting off, calls from a 4-thread region", 1, 4, 0};
static const nest_config nest_on[] = {
    {"nesting on (2 levels), calls from a 4-thread region", 2, 4, 0},
    {"nesting on (3 levels), calls from a 2x2 nested region", 3, 2, 2},
    {"nesting on (2 levels), calls from a 2x2 nested region (library region inactive)", 2, 2, 2},
};

typedef struct {
    int ran;
    long steps, failed, mismatches;
    fa_status first_status;
    int first_case, first_kind;
} user_result;

typedef struct {
    uint64_t seed;
    rt_run expected[RT_CASES];
    rt_run runs[MAX_USERS][RT_CASES];
} nest_state;

static nest_state *nest_state_make(void)
{
    nest_state *s = calloc(1, sizeof *s);
    cr_assert(s);
    s->seed = tu_test_seed();
    for (int c = 0; c < RT_CASES; c++) {
        char msg[1024];
        rt_make(&s->expected[c], &rt_cases[c], s->seed + (uint64_t)c);
        cr_assert(rt_serial(&s->expected[c], 1, msg, sizeof msg), "seed %llu: %s",
                  (unsigned long long)s->seed, msg);
        for (int u = 0; u < MAX_USERS; u++) rt_make(&s->runs[u][c], &rt_cases[c], s->seed + (uint64_t)c);
    }
    return s;
}

static void nest_state_free(nest_state *s)
{
    for (int c = 0; c < RT_CASES; c++) {
        rt_free(&s->expected[c]);
        for (int u = 0; u < MAX_USERS; u++) rt_free(&s->runs[u][c]);
    }
    free(s);
}

/* What one user thread does: every case with its own context (2 threads; AUTO or CORE) and then
 * with ctx = NULL (its default context, created in the region on first use). */
static void user_calls(nest_state *s, int u, user_result *r)
{
    r->ran = 1;
    for (int kind = 0; kind < KINDS; kind++) {
        fa_context *ctx = NULL;
        fa_status cst = FA_OK;
        if (kind == 0) {
            fa_context_opts o = FA_CONTEXT_OPTS_INIT;
            o.num_threads = 2;
            o.bind = u % 2 ? FA_BIND_CORE : FA_BIND_AUTO;
            cst = fa_context_create(&ctx, &o);
        }
        for (int c = 0; c < RT_CASES; c++) {
            fa_status st = cst == FA_OK ? rt_step(ctx, &s->runs[u][c]) : cst;
            r->steps++;
            if (st != FA_OK) {
                if (r->failed++ == 0) {
                    r->first_status = st;
                    r->first_case = c;
                    r->first_kind = kind;
                }
            } else if (!rt_outputs_equal(&s->expected[c], &s->runs[u][c])) {
                if (r->mismatches++ == 0) {
                    r->first_case = c;
                    r->first_kind = kind;
                }
            }
        }
        fa_context_destroy(ctx);
    }
}

static void run_config(nest_state *s, const nest_config *cfg)
{
    omp_set_max_active_levels(cfg->max_active_levels);
    user_result res[MAX_USERS];
    memset(res, 0, sizeof res);
    int outer_team = 0, inner_team = 0;
    rt_thread_watch *watch = rt_thread_watch_start();
#pragma omp parallel num_threads(cfg->outer)
    {
        int o = omp_get_thread_num();
#pragma omp single
        outer_team = omp_get_num_threads();
        if (cfg->inner == 0) {
            if (o < MAX_USERS) user_calls(s, o, &res[o]);
        } else {
#pragma omp parallel num_threads(cfg->inner)
            {
                int i = omp_get_thread_num(), u = o * cfg->inner + i;
                if (o == 0 && i == 0) inner_team = omp_get_num_threads();
                if (i < cfg->inner && u < MAX_USERS) user_calls(s, u, &res[u]);
            }
        }
    }
    int most_threads = rt_thread_watch_stop(watch);
    int users = 0;
    long steps = 0, failed = 0, mismatches = 0;
    for (int u = 0; u < MAX_USERS; u++) {
        if (!res[u].ran) continue;
        users++;
        steps += res[u].steps;
        failed += res[u].failed;
        mismatches += res[u].mismatches;
        static const char *kinds[KINDS] = {"own context", "ctx = NULL"};
        cr_expect_eq(res[u].failed, 0, "%s, user thread %d: %ld failed steps, first %s (case \"%s\", %s)",
                     cfg->what, u, res[u].failed, fa_status_str(res[u].first_status),
                     rt_cases[res[u].first_case].name, kinds[res[u].first_kind]);
        cr_expect_eq(
            res[u].mismatches, 0,
            "%s, user thread %d, seed %llu: %ld steps differ from the serial run, first case \"%s\" (%s)",
            cfg->what, u, (unsigned long long)s->seed, res[u].mismatches, rt_cases[res[u].first_case].name,
            kinds[res[u].first_kind]);
    }
    char team[32];
    if (cfg->inner)
        snprintf(team, sizeof team, "%dx%d", outer_team, inner_team);
    else
        snprintf(team, sizeof team, "%d", outer_team);
    fprintf(
        stderr,
        "[nested] %s: %d user threads (team %s), %ld steps: %ld mismatches, %ld failed; up to %d OS threads "
        "seen during the calls (thread limit %d)\n",
        cfg->what, users, team, steps, mismatches, failed, most_threads, omp_get_thread_limit());
    cr_expect_gt(users, 0, "%s: no user thread ran", cfg->what);
    cr_expect_eq(steps, (long)users * KINDS * RT_CASES);
}

Test(nested, calls_from_a_user_region_with_nesting_off_match_the_serial_run)
{
    rt_watchdog(120);
    nest_state *s = nest_state_make();
    run_config(s, &nest_off);
    nest_state_free(s);
}

Test(nested, calls_from_user_regions_with_nesting_on_match_the_serial_run)
{
    rt_watchdog(180);
    nest_state *s = nest_state_make();
    for (size_t k = 0; k < sizeof nest_on / sizeof nest_on[0]; k++) run_config(s, &nest_on[k]);
    nest_state_free(s);
}

/* OMP_THREAD_LIMIT caps every team of the process, the library's included: a context asking for
 * more threads than the limit, and every nesting configuration, must still finish with the serial
 * bytes. Run directly when the variable is set (scripts/hostile_runtime.sh sets it for the whole
 * suite); otherwise this executable runs this test again with OMP_THREAD_LIMIT=3. */
Test(nested, calls_under_omp_thread_limit_match_the_serial_run)
{
    rt_watchdog(300);
    const char *limit = getenv("OMP_THREAD_LIMIT");
    if (!limit || !*limit) {
        int rc = rt_rerun_self("OMP_THREAD_LIMIT=3", 240);
        cr_expect_neq(rc, -1, "the run with OMP_THREAD_LIMIT=3 did not finish within 240 s (killed)");
        cr_expect_neq(rc, -2, "could not start this executable again");
        cr_expect_eq(rc, 0, "the run with OMP_THREAD_LIMIT=3 failed (exit status %d)", rc);
        return;
    }
    nest_state *s = nest_state_make();
    fprintf(stderr, "[nested] OMP_THREAD_LIMIT=%s: omp_get_thread_limit() = %d\n", limit,
            omp_get_thread_limit());
    /* From the main thread, a context asking for more threads than the limit allows. */
    fa_context *ctx = tu_context(8, 0, 0);
    for (int c = 0; c < RT_CASES; c++) {
        fa_status st = rt_step(ctx, &s->runs[0][c]);
        cr_expect_eq(st, FA_OK, "8 threads under the limit, case \"%s\": %s", rt_cases[c].name,
                     fa_status_str(st));
        cr_expect(rt_outputs_equal(&s->expected[c], &s->runs[0][c]),
                  "8 threads under the limit, case \"%s\", seed %llu: differs from the serial run",
                  rt_cases[c].name, (unsigned long long)s->seed);
    }
    fa_context_destroy(ctx);
    run_config(s, &nest_off);
    for (size_t k = 0; k < sizeof nest_on / sizeof nest_on[0]; k++) run_config(s, &nest_on[k]);
    nest_state_free(s);
}
