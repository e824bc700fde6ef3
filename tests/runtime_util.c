/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the hostile-runtime tests; see runtime_util.h. */
#include "runtime_util.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/context.h" /* white-box: the row buffer that only a split-KV forward grows */

/* Small enough that 16 threads x 50 steps stay within seconds on two cores, shaped so that
 * together they reach every driver path: GQA and MQA head groups, all causal modes, the three
 * layouts, D != Dv, tails in every block, and two decode shapes (Nq = 1, Nk long enough that the
 * forward splits the keys; Nk not a multiple of any tile). */
const rt_case rt_cases[RT_CASES] = {
    {"f32 GQA 4/2 top-left bhsd", {FA_F32, 1, 4, 2, 40, 56, 32, 24, TU_BHSD}, FA_CAUSAL_TOP_LEFT, 0},
    {"f64 MHA 2/2 no mask bshd", {FA_F64, 2, 2, 2, 33, 47, 16, 16, TU_BSHD}, FA_CAUSAL_NONE, 0},
    {"f32 MQA 3/1 bottom-right packed",
     {FA_F32, 1, 3, 1, 24, 70, 24, 20, TU_PACKED},
     FA_CAUSAL_BOTTOM_RIGHT,
     0},
    {"f64 decode split-KV 4/1 bottom-right",
     {FA_F64, 1, 4, 1, 1, 2100, 32, 32, TU_BHSD},
     FA_CAUSAL_BOTTOM_RIGHT,
     1},
    {"f32 decode split-KV 2x2/1 no mask", {FA_F32, 2, 2, 1, 1, 2080, 32, 16, TU_BSHD}, FA_CAUSAL_NONE, 1},
};

void rt_make(rt_run *r, const rt_case *c, uint64_t seed)
{
    memset(r, 0, sizeof *r);
    r->c = c;
    r->p = (fa_params)FA_PARAMS_INIT;
    r->p.causal = c->causal;
    tu_rng rng = tu_rng_make(seed);
    tub_make(&r->bp, &c->shape, &rng, 2.0);
    tu_problem_fill_canary(&r->bp.fw);
    tub_fill_grad_canary(&r->bp);
}

void rt_free(rt_run *r)
{
    tub_free(&r->bp);
}

void rt_fill_canary(rt_run *r)
{
    tu_problem_fill_canary(&r->bp.fw);
    tub_fill_grad_canary(&r->bp);
}

fa_status rt_step(fa_context *ctx, rt_run *r)
{
    rt_fill_canary(r);
    fa_status st = tub_forward(ctx, &r->p, &r->bp);
    if (st != FA_OK) return st;
    return tub_backward(ctx, &r->p, &r->bp);
}

/* The output blocks of a run, whole (guards included). */
static int blocks(const rt_run *r, const kit_buf *out[5])
{
    out[0] = &r->bp.fw.out_buf;
    out[1] = &r->bp.fw.lse_buf;
    for (int g = 0; g < 3; g++) out[2 + g] = &r->bp.grad_buf[g];
    return 5;
}

size_t rt_output_bytes(const rt_run *r)
{
    const kit_buf *b[5];
    size_t n = 0;
    for (int i = 0, k = blocks(r, b); i < k; i++) n += b[i]->bytes + 2 * KIT_GUARD;
    return n;
}

void rt_output_copy(const rt_run *r, unsigned char *dst)
{
    const kit_buf *b[5];
    for (int i = 0, k = blocks(r, b); i < k; i++) {
        memcpy(dst, b[i]->base, b[i]->bytes + 2 * KIT_GUARD);
        dst += b[i]->bytes + 2 * KIT_GUARD;
    }
}

int rt_outputs_equal_bytes(const rt_run *a, const unsigned char *saved)
{
    const kit_buf *b[5];
    for (int i = 0, k = blocks(a, b); i < k; i++) {
        size_t n = b[i]->bytes + 2 * KIT_GUARD;
        if (memcmp(b[i]->base, saved, n) != 0) return 0;
        saved += n;
    }
    return 1;
}

int rt_outputs_equal(const rt_run *a, const rt_run *b)
{
    const kit_buf *x[5], *y[5];
    blocks(a, x);
    blocks(b, y);
    for (int i = 0; i < 5; i++)
        if (x[i]->bytes != y[i]->bytes || memcmp(x[i]->base, y[i]->base, x[i]->bytes + 2 * KIT_GUARD) != 0)
            return 0;
    return 1;
}

int rt_serial(rt_run *r, int with_oracle, char *msg, size_t msg_size)
{
    char desc[256];
    tu_shape_str(&r->c->shape, &r->p, desc, sizeof desc);
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = 1;
    o.bind = FA_BIND_NONE;
    fa_context *ctx;
    fa_status st = fa_context_create(&ctx, &o);
    if (st != FA_OK) {
        snprintf(msg, msg_size, "%s: fa_context_create: %s", r->c->name, fa_status_str(st));
        return 0;
    }
    rt_fill_canary(r);
    int ok = 1;
    st = tub_forward(ctx, &r->p, &r->bp);
    if (st != FA_OK) {
        snprintf(msg, msg_size, "%s (%s): serial forward: %s", r->c->name, desc, fa_status_str(st));
        ok = 0;
    } else if (r->c->split_kv && ctx->rows_bytes == 0) {
        snprintf(msg, msg_size, "%s (%s): the forward did not take the split-KV path (row buffer empty)",
                 r->c->name, desc);
        ok = 0;
    }
    if (ok && (st = tub_backward(ctx, &r->p, &r->bp)) != FA_OK) {
        snprintf(msg, msg_size, "%s (%s): serial backward: %s", r->c->name, desc, fa_status_str(st));
        ok = 0;
    }
    fa_context_destroy(ctx);
    if (!ok || !with_oracle) return ok;

    char why[512];
    int64_t *rows;
    int64_t n = tu_pick_rows(&r->bp.fw, &r->p, INT64_MAX, &rows);
    if (!tu_check_accuracy(&r->bp.fw, &r->p, rows, n, 1e-12, why, sizeof why)) {
        snprintf(msg, msg_size, "%s (%s): serial forward against the oracle: %s", r->c->name, desc, why);
        ok = 0;
    }
    free(rows);
    if (ok) {
        tub_ref oracle, naive;
        int f32 = r->c->shape.dtype == FA_F32;
        tub_ref_compute(&oracle, &r->bp, &r->p);
        if (f32) tub_ref_compute_naive_f32(&naive, &r->bp, &r->p);
        if (!tub_check_accuracy(&r->bp, &r->p, &oracle, f32 ? &naive : NULL, 1e-11, why, sizeof why)) {
            snprintf(msg, msg_size, "%s (%s): serial backward against the oracle: %s", r->c->name, desc, why);
            ok = 0;
        }
        tub_ref_free(&oracle);
        if (f32) tub_ref_free(&naive);
    }
    return ok;
}

/* ---- hangs ------------------------------------------------------------------------------------ */

static char watchdog_line[512];
static size_t watchdog_len;

static void watchdog_fired(int sig)
{
    ssize_t w = write(2, watchdog_line, watchdog_len);
    (void)w;
    signal(sig, SIG_DFL);
    raise(sig);
}

void rt_watchdog(unsigned seconds)
{
    int n = snprintf(watchdog_line, sizeof watchdog_line, "[watchdog] %s: still running after %u s: hung\n",
                     tu_test_name(), seconds);
    watchdog_len = n < 0 ? 0 : ((size_t)n < sizeof watchdog_line ? (size_t)n : sizeof watchdog_line - 1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = watchdog_fired;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    alarm(seconds);
}

/* ---- processes ------------------------------------------------------------------------------ */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int rt_wait_deadline(pid_t pid, double timeout_s, int *status)
{
    double end = now_s() + timeout_s;
    for (;;) {
        pid_t w = waitpid(pid, status, WNOHANG);
        if (w == pid) return 0;
        if (w < 0 && errno != EINTR) return -1;
        if (now_s() > end) break;
        struct timespec nap = {0, 5 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    /* The child may lead a process group of its own (and its descendants): end them all. */
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
    return -1;
}

extern char **environ;

int rt_rerun_self(const char *assignment, double timeout_s)
{
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return -2;
    exe[len] = '\0';
    char filter_arg[512];
    snprintf(filter_arg, sizeof filter_arg, "--filter=%s", tu_test_name());
    char *argv[] = {exe, filter_arg, "--jobs=1", NULL};

    size_t name_len = strcspn(assignment, "=");
    size_t n = 0;
    while (environ[n]) n++;
    char **envp = malloc((n + 2) * sizeof *envp);
    if (!envp) return -2;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "BXFI_", 5) == 0) continue;
        if (strncmp(environ[i], assignment, name_len) == 0 && environ[i][name_len] == '=') continue;
        envp[m++] = environ[i];
    }
    envp[m++] = (char *)assignment;
    envp[m] = NULL;

    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP); /* its own group, so a timeout ends it all */
    posix_spawnattr_setpgroup(&attr, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, exe, NULL, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
    free(envp);
    if (rc != 0) return -2;
    int status;
    if (rt_wait_deadline(pid, timeout_s, &status) != 0) return -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int rt_process_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

int rt_narrow_process(const cpu_set_t *mask)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' && sched_setaffinity((pid_t)atol(e->d_name), sizeof *mask, mask) != 0)
            rc = -1;
    closedir(d);
    return rc;
}

struct rt_thread_watch {
    pthread_t thread;
    atomic_int stop;
    int most;
};

static void *watch_main(void *arg)
{
    rt_thread_watch *w = arg;
    while (!atomic_load(&w->stop)) {
        int n = rt_process_threads();
        if (n > w->most) w->most = n;
        struct timespec nap = {0, 200 * 1000};
        nanosleep(&nap, NULL);
    }
    return NULL;
}

rt_thread_watch *rt_thread_watch_start(void)
{
    rt_thread_watch *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        free(w);
        return NULL;
    }
    return w;
}

int rt_thread_watch_stop(rt_thread_watch *w)
{
    if (!w) return -1;
    atomic_store(&w->stop, 1);
    pthread_join(w->thread, NULL);
    int most = w->most - 1;
    free(w);
    return most;
}
