/* SPDX-License-Identifier: BSD-3-Clause */
/* The driver's harness: case descriptions, failure lines, the watchdog, collective checks. */
#include "check.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rng.h"

static int g_rank, g_size, g_verbose;
static unsigned g_watchdog_s;
static long g_failures, g_cases, g_case_failures;
static char g_case[1024];
static double g_case_start;

/* What the watchdog writes: formatted when a case starts, since a signal handler may only write(). */
static char g_alarm_msg[1280];
static size_t g_alarm_len;

/* A failing case prints its first few failures in full; the rest are counted. */
enum { MAX_LINES_PER_CASE = 12 };

static void on_alarm(int sig)
{
    (void)sig;
    ssize_t w = write(STDERR_FILENO, g_alarm_msg, g_alarm_len);
    (void)w;
    _exit(3);
}

void mt_check_init(int world_rank, int world_size, unsigned watchdog_s, int verbose)
{
    g_rank = world_rank;
    g_size = world_size;
    g_watchdog_s = watchdog_s;
    g_verbose = verbose;
    if (watchdog_s) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGALRM, &sa, NULL);
    }
}

int mt_selected(const mt_env *env, const char *name)
{
    return !env->only || strstr(name, env->only) != NULL;
}

void mt_case_begin(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_case, sizeof g_case, fmt, ap);
    va_end(ap);
    g_cases++;
    g_case_failures = 0;
    g_case_start = MPI_Wtime();
    int n = snprintf(g_alarm_msg, sizeof g_alarm_msg,
                     "FAIL rank %d of %d: %s: still running after the watchdog's %u s (a hang?); exiting\n",
                     g_rank, g_size, g_case, g_watchdog_s);
    g_alarm_len = n < 0 ? 0 : ((size_t)n < sizeof g_alarm_msg ? (size_t)n : sizeof g_alarm_msg - 1);
    if (g_watchdog_s) alarm(g_watchdog_s);
}

void mt_case_end(void)
{
    if (g_watchdog_s) alarm(0);
    if (g_case_failures > MAX_LINES_PER_CASE)
        fprintf(stderr, "FAIL rank %d of %d: %s: %ld more failed checks not shown\n", g_rank, g_size, g_case,
                g_case_failures - MAX_LINES_PER_CASE);
    if (g_verbose && g_rank == 0)
        fprintf(stderr, "  %-100.100s %6.2f s\n", g_case, MPI_Wtime() - g_case_start);
    g_case[0] = '\0';
}

void mt_fail(const char *file, int line, const char *fmt, ...)
{
    g_failures++;
    if (++g_case_failures > MAX_LINES_PER_CASE) return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *base = strrchr(file, '/');
    fprintf(stderr, "FAIL rank %d of %d: %s: %s (%s:%d)\n", g_rank, g_size, g_case[0] ? g_case : "(no case)",
            msg, base ? base + 1 : file, line);
    fflush(stderr);
}

long mt_failures(void)
{
    return g_failures;
}

long mt_cases(void)
{
    return g_cases;
}

int mt_all(const mt_env *env, int mine)
{
    int in = mine ? 1 : 0, all = 0;
    MPI_Allreduce(&in, &all, 1, MPI_INT, MPI_LAND, env->comm);
    return all;
}

int mt_expect_status(const mt_env *env, fa_status st, fa_status want, const char *call, const char *file,
                     int line)
{
    int mine = (int)st;
    int *all = malloc(sizeof(int) * (size_t)env->size);
    if (!all) abort();
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, env->comm);
    int ok = 1;
    for (int r = 0; r < env->size; r++) ok &= all[r] == (int)want;
    if (!ok) {
        char list[512];
        size_t used = 0;
        for (int r = 0; r < env->size && used < sizeof list; r++) {
            int n = snprintf(list + used, sizeof list - used, "%s%s", r ? ", " : "",
                             fa_status_str((fa_status)all[r]));
            if (n < 0) break;
            used += (size_t)n;
        }
        mt_fail(file, line, "%s: expected %s on every rank of %s, the ranks returned [%s]; here: %s", call,
                fa_status_str(want), env->comm_name, list, fa_mpi_last_error());
    }
    free(all);
    return ok;
}

void mt_expect_same_bytes(const mt_env *env, const void *p, size_t n, const char *what, const char *file,
                          int line)
{
    unsigned char *root = malloc(n + 1);
    if (!root) abort();
    if (env->rank == 0) memcpy(root, p, n);
    MPI_Bcast(root, (int)n, MPI_BYTE, 0, env->comm);
    for (size_t i = 0; i < n; i++) {
        if (root[i] != ((const unsigned char *)p)[i]) {
            mt_fail(file, line, "%s: byte %zu differs from rank 0's (0x%02x here, 0x%02x on rank 0)", what, i,
                    ((const unsigned char *)p)[i], root[i]);
            break;
        }
    }
    free(root);
}

void mt_expect_refusal_message(const mt_env *env, int same_on_all, const char *file, int line)
{
    enum { LEN = 512 };
    char mine[LEN];
    memset(mine, 0, sizeof mine);
    snprintf(mine, sizeof mine, "%s", fa_mpi_last_error());
    MT_CHECK(mine[0] != '\0', "fa_mpi_last_error() is empty after a refusal (%s:%d)", file, line);
    if (same_on_all) MT_EXPECT_SAME_BYTES(env, mine, sizeof mine, "fa_mpi_last_error() after a refusal");
}

uint64_t mt_case_seed(uint64_t base, const char *name, int salt)
{
    /* FNV-1a over the name, then a splitmix64 finaliser over (base, name, salt) */
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *c = name; *c; c++) h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
    uint64_t x = base ^ h ^ ((uint64_t)(unsigned)salt << 56);
    return kit_mix64(x);
}
