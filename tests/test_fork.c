/* SPDX-License-Identifier: BSD-3-Clause */
/* fork(): calls in a child and a grandchild complete and give the parent's bytes, and the parent
 * still works afterwards.
 *
 * include/flashattn.h: GNU libgomp's worker threads are not copied by fork(), so a parallel region
 * in the child of a process that has run one would wait forever; in such a child (and its
 * descendants) every call runs on the calling thread alone, with the same bytes. A child of a
 * process that has run no parallel region may use threads.
 *
 * Criterion runs each test in a freshly executed process, so a test starts with no parallel region
 * behind it: the first test makes its own calls before it forks, the second forks first. Children
 * never touch Criterion: they report through their exit status (and shared memory), and the parent
 * waits for them with a deadline, killing them (and their descendants) on expiry - a hang is a
 * failure, not a stuck suite. */
#include <criterion/criterion.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime_util.h"

/* Problems a child reports in its exit status: its own in bits 0-3, its child's in bits 4-6. */
enum {
    F_FAILED = 1,   /* a call did not return FA_OK */
    F_MISMATCH = 2, /* a call's bytes differ from the expected ones */
    F_THREADS = 4,  /* the calls left the process with more threads than before */
    F_FORK = 8,     /* fork() itself failed */
    F_GRANDCHILD_SHIFT = 4,
    F_GRANDCHILD_LOST = 0x80 /* the grandchild hung (killed at its deadline) or crashed */
};

enum { CHILD_DEADLINE_S = 60, GRANDCHILD_DEADLINE_S = 30 };

static void describe(int code, char *buf, size_t size)
{
    static const char *what[] = {"a call failed", "bytes differ", "threads were started", "fork failed"};
    size_t n = 0;
    buf[0] = '\0';
    for (int who = 0; who < 2; who++)
        for (int b = 0; b < 4; b++)
            if (code & (1 << (b + who * F_GRANDCHILD_SHIFT)))
                n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s: %s", n ? "; " : "",
                                      who ? "grandchild" : "child", what[b]);
    if (code & F_GRANDCHILD_LOST)
        snprintf(buf + n, n < size ? size - n : 0, "%sgrandchild hung (killed after %d s) or crashed",
                 n ? "; " : "", GRANDCHILD_DEADLINE_S);
}

/* The steps of a forked process, which runs after a parallel region (so on its calling thread
 * alone): every case with `inherited` (unless NULL), with ctx = NULL and with a fresh 2-thread CORE
 * context, each against the expected bytes; and no thread may appear. Returns F_* bits. */
static int steps_after_fork(const char *who, fa_context *inherited, const rt_run *expected, rt_run *runs)
{
    int problems = 0, before = rt_process_threads();
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = 2;
    o.bind = FA_BIND_CORE;
    fa_context *fresh = NULL;
    fa_status cst = fa_context_create(&fresh, &o);
    if (cst != FA_OK) {
        fprintf(stderr, "[fork] %s: fa_context_create: %s\n", who, fa_status_str(cst));
        problems |= F_FAILED;
    }
    fa_context *ctxs[3] = {inherited, NULL, fresh};
    static const char *names[3] = {"inherited context", "ctx = NULL", "fresh 2-thread context"};
    for (int k = 0; k < 3; k++) {
        if ((k == 0 && !inherited) || (k == 2 && !fresh)) continue;
        for (int c = 0; c < RT_CASES; c++) {
            fa_status st = rt_step(ctxs[k], &runs[c]);
            if (st != FA_OK) {
                fprintf(stderr, "[fork] %s, %s, case \"%s\": %s\n", who, names[k], rt_cases[c].name,
                        fa_status_str(st));
                problems |= F_FAILED;
            } else if (!rt_outputs_equal(&expected[c], &runs[c])) {
                fprintf(stderr, "[fork] %s, %s, case \"%s\": bytes differ\n", who, names[k],
                        rt_cases[c].name);
                problems |= F_MISMATCH;
            }
        }
    }
    fa_context_destroy(fresh);
    int after = rt_process_threads();
    if (after != before) {
        fprintf(stderr, "[fork] %s: %d threads before the calls, %d after\n", who, before, after);
        problems |= F_THREADS;
    }
    return problems;
}

/* In a forked child: its own steps, then the same in a grandchild, waited for with a deadline. */
static int child_and_grandchild(fa_context *inherited, const rt_run *expected, rt_run *runs)
{
    int problems = steps_after_fork("child", inherited, expected, runs);
    fflush(stderr);
    pid_t g = fork();
    if (g < 0) return problems | F_FORK;
    if (g == 0) _exit(steps_after_fork("grandchild", inherited, expected, runs));
    int status;
    if (rt_wait_deadline(g, GRANDCHILD_DEADLINE_S, &status) != 0 || !WIFEXITED(status))
        return problems | F_GRANDCHILD_LOST;
    return problems | (WEXITSTATUS(status) << F_GRANDCHILD_SHIFT);
}

/* Forks, runs `body` in the child (its own process group, so a deadline ends its descendants
 * too) and returns the child's exit status, or -1 when it had to be killed. */
static int in_child(int (*body)(void *), void *arg)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork failed");
    if (pid == 0) {
        setpgid(0, 0);
        _exit(body(arg));
    }
    setpgid(pid, pid); /* also from here: whichever runs first */
    int status;
    if (rt_wait_deadline(pid, CHILD_DEADLINE_S, &status) != 0) return -1;
    if (!WIFEXITED(status)) return 0x100 | (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return WEXITSTATUS(status);
}

static void expect_child_ok(const char *test, int code)
{
    char why[512];
    cr_expect_neq(code, -1, "%s: the child hung (killed after %d s)", test, CHILD_DEADLINE_S);
    if (code == -1) return;
    cr_expect_lt(code, 0x100, "%s: the child died of signal %d", test, code & 0xff);
    if (code >= 0x100) return;
    describe(code, why, sizeof why);
    cr_expect_eq(code, 0, "%s: %s", test, why);
}

/* ---- fork after the library has run parallel regions ------------------------------------------ */

typedef struct {
    fa_context *ctx;
    rt_run *expected, *runs;
} after_args;

static int after_body(void *arg)
{
    after_args *a = arg;
    return child_and_grandchild(a->ctx, a->expected, a->runs);
}

Test(fork, calls_in_a_child_and_grandchild_after_parallel_calls_complete_with_the_same_bytes)
{
    rt_watchdog(300);
    uint64_t seed = tu_test_seed();
    rt_run expected[RT_CASES], runs[RT_CASES];
    for (int c = 0; c < RT_CASES; c++) {
        char msg[1024];
        rt_make(&expected[c], &rt_cases[c], seed + (uint64_t)c);
        rt_make(&runs[c], &rt_cases[c], seed + (uint64_t)c);
        cr_assert(rt_serial(&expected[c], 1, msg, sizeof msg), "seed %llu: %s", (unsigned long long)seed,
                  msg);
    }
    /* The parent's own calls, on 2 threads and on the default context: libgomp's pool now exists. */
    fa_context *ctx = tu_context(2, 0, 0);
    for (int c = 0; c < RT_CASES; c++)
        for (int k = 0; k < 2; k++) {
            cr_assert_eq(rt_step(k ? NULL : ctx, &runs[c]), FA_OK);
            cr_assert(rt_outputs_equal(&expected[c], &runs[c]), "parent before fork, case \"%s\", seed %llu",
                      rt_cases[c].name, (unsigned long long)seed);
        }
    int parent_threads = rt_process_threads();

    after_args a = {ctx, expected, runs};
    int code = in_child(after_body, &a);
    expect_child_ok("fork after parallel calls", code);
    fprintf(stderr,
            "[fork] after parallel calls (parent: %d threads): child and grandchild ran every call on their "
            "calling thread, %s\n",
            parent_threads, code == 0 ? "same bytes, no hang" : "FAILED");

    /* The parent still works, in parallel, with the same bytes. */
    for (int c = 0; c < RT_CASES; c++)
        for (int k = 0; k < 2; k++) {
            fa_status st = rt_step(k ? NULL : ctx, &runs[c]);
            cr_expect_eq(st, FA_OK, "parent after fork: %s", fa_status_str(st));
            cr_expect(rt_outputs_equal(&expected[c], &runs[c]),
                      "parent after fork, case \"%s\", seed %llu: bytes differ", rt_cases[c].name,
                      (unsigned long long)seed);
        }
    fa_context_destroy(ctx);
    for (int c = 0; c < RT_CASES; c++) {
        rt_free(&expected[c]);
        rt_free(&runs[c]);
    }
}

/* ---- fork before the library's first call -------------------------------------------------- *
 * The child is the first to call the library. It hands its bytes to the parent through shared
 * memory, then forks a grandchild, which runs after a parallel region and must reproduce them on
 * its calling thread. The parent compares the child's bytes with its own serial run, made after the
 * child is gone (a call before the fork would be a parallel region before it).
 * - With no parallel region before the fork, the child may start threads (reported, not required:
 *   include/flashattn.h promises the calling thread only where a region ran before the fork).
 * - After a parallel region of the user's own, the child must run on its calling thread. */

typedef struct {
    int threads_before, threads_after;
    unsigned char bytes[]; /* every case's output storage, in case order */
} fork_shared;

typedef struct {
    fork_shared *shared;
    rt_run *runs, *mine;
} first_call_args;

static int first_call_body(void *arg)
{
    first_call_args *a = arg;
    int problems = 0;
    a->shared->threads_before = rt_process_threads();
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = 2;
    o.bind = FA_BIND_NONE;
    fa_context *ctx;
    if (fa_context_create(&ctx, &o) != FA_OK) return F_FAILED;
    unsigned char *at = a->shared->bytes;
    for (int c = 0; c < RT_CASES; c++) {
        if (rt_step(ctx, &a->runs[c]) != FA_OK) problems |= F_FAILED;
        rt_output_copy(&a->runs[c], at);
        at += rt_output_bytes(&a->runs[c]);
    }
    a->shared->threads_after = rt_process_threads();
    /* The grandchild's expectation: what this child computed (a->runs); it works in a->mine. */
    problems |= child_and_grandchild(ctx, a->runs, a->mine);
    fa_context_destroy(ctx);
    return problems;
}

static void fork_before_first_call(int user_region_first)
{
    uint64_t seed = tu_test_seed();
    rt_run runs[RT_CASES], mine[RT_CASES];
    size_t bytes = 0;
    for (int c = 0; c < RT_CASES; c++) {
        rt_make(&runs[c], &rt_cases[c], seed + (uint64_t)c);
        rt_make(&mine[c], &rt_cases[c], seed + (uint64_t)c);
        bytes += rt_output_bytes(&runs[c]);
    }
    size_t size = sizeof(fork_shared) + bytes;
    fork_shared *shared = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(shared, MAP_FAILED);
    memset(shared, 0, size);
    int team = 0;
    if (user_region_first) {
#pragma omp parallel num_threads(2)
        {
#pragma omp single
            team = omp_get_num_threads();
        }
    }

    first_call_args a = {shared, runs, mine};
    int code = in_child(first_call_body, &a);
    const char *what =
        user_region_first ? "fork after the user's own parallel region" : "fork before any parallel region";
    expect_child_ok(what, code);
    if (code == -1 || code >= 0x100) { /* it hung or died: no bytes to compare */
        munmap(shared, size);
        for (int c = 0; c < RT_CASES; c++) {
            rt_free(&runs[c]);
            rt_free(&mine[c]);
        }
        return;
    }

    unsigned char *at = shared->bytes;
    for (int c = 0; c < RT_CASES; c++) {
        char msg[1024];
        cr_assert(rt_serial(&mine[c], 1, msg, sizeof msg), "seed %llu: %s", (unsigned long long)seed, msg);
        cr_expect(rt_outputs_equal_bytes(&mine[c], at),
                  "%s, case \"%s\", seed %llu: the child's bytes differ from the parent's serial run", what,
                  rt_cases[c].name, (unsigned long long)seed);
        at += rt_output_bytes(&mine[c]);
    }
    fprintf(
        stderr,
        "[fork] %s%s: the child went from %d to %d threads with a 2-thread context; its child reproduced its "
        "bytes on its calling thread: %s\n",
        what, user_region_first ? (team == 2 ? " (2 threads)" : " (1 thread)") : "", shared->threads_before,
        shared->threads_after, code == 0 ? "ok" : "FAILED");
    if (user_region_first)
        cr_expect_eq(shared->threads_after, shared->threads_before,
                     "after a parallel region the child started threads (%d before, %d after)",
                     shared->threads_before, shared->threads_after);
    munmap(shared, size);
    for (int c = 0; c < RT_CASES; c++) {
        rt_free(&runs[c]);
        rt_free(&mine[c]);
    }
}

Test(fork, a_child_forked_before_any_parallel_region_may_use_threads_and_its_child_matches_it)
{
    rt_watchdog(300);
    fork_before_first_call(0);
}

/* The user's region leaves libgomp's pool behind, which the child does not inherit: src/runtime/team.c
 * counts the process's threads at every fork (pthread_atfork, armed at load), not only its own
 * regions, so the child's first call runs on its calling thread instead of waiting forever. */
Test(fork, a_child_forked_after_the_users_own_parallel_region_runs_on_its_calling_thread)
{
    rt_watchdog(300);
    fork_before_first_call(1);
}
