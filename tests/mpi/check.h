/* SPDX-License-Identifier: BSD-3-Clause */
/* fa-mpi-tests' bookkeeping: the case running now (its description goes into every failure line and
 * into the watchdog's message), failed checks counted per rank, and the collective checks (a status
 * every rank must share, bytes every rank must hold alike). Criterion does not run under mpirun, so
 * this is the driver's own small harness: a failed check prints one line and counts; the driver
 * exits 1 when any rank counted one. */
#ifndef FA_MPI_TEST_CHECK_H
#define FA_MPI_TEST_CHECK_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "flashattn_mpi.h"

/* Where a case runs: a communicator, the calling rank's place in it, and the contexts. */
typedef struct {
    MPI_Comm comm;
    const char *comm_name; /* "world", "split", ... for messages */
    int rank, size;
    uint64_t seed;    /* the run's base seed (--seed); every case derives its own from it */
    const char *only; /* --case: run only cases whose name contains this, or NULL */
    fa_context *ctx;  /* num_threads from OMP_NUM_THREADS */
    fa_context *ctx1; /* 1 thread */
    fa_context *ctx2; /* 2 threads */
} mt_env;

/* Once, after MPI_Init: the world rank for failure lines, the per-case watchdog in seconds
 * (0 = none), and whether to print each case's name and time (rank 0). */
void mt_check_init(int world_rank, int world_size, unsigned watchdog_s, int verbose);

/* 1 when the case named `name` is selected by env->only. */
int mt_selected(const mt_env *env, const char *name);

/* Starts a case: its description (printf format) heads every failure line until mt_case_end, and
 * the watchdog gets armed: a case that runs longer (a hang in a collective) kills the process with
 * the description on stderr, which makes mpirun end every rank. */
void mt_case_begin(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mt_case_end(void);

/* One failed check: prints "FAIL rank R of P: <case>: <message> (file:line)" and counts it. */
void mt_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define MT_CHECK(cond, ...)                                    \
    do {                                                       \
        if (!(cond)) mt_fail(__FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

/* Failed checks of this rank so far, and cases started. */
long mt_failures(void);
long mt_cases(void);

/* Collective over env->comm: 1 on every rank when `mine` is nonzero on every rank. Control flow
 * that leads to a collective call (fa_mpi_*) goes through this, never through a local result, so
 * the ranks never disagree on which calls they make. */
int mt_all(const mt_env *env, int mine);

/* Collective: every rank's status must equal `want`; on any difference each rank prints the
 * statuses of all ranks. Returns 1 when every rank got `want`. */
int mt_expect_status(const mt_env *env, fa_status st, fa_status want, const char *call, const char *file,
                     int line);
#define MT_EXPECT_STATUS(env, st, want, call) mt_expect_status(env, st, want, call, __FILE__, __LINE__)

/* Collective: the n bytes at p must be the same on every rank (compared with rank 0's). */
void mt_expect_same_bytes(const mt_env *env, const void *p, size_t n, const char *what, const char *file,
                          int line);
#define MT_EXPECT_SAME_BYTES(env, p, n, what) mt_expect_same_bytes(env, p, n, what, __FILE__, __LINE__)

/* Collective: fa_mpi_last_error() after a refusal is not empty on any rank and, with same_on_all,
 * the same line on every rank (the header: it names the rank at fault, on every rank). */
void mt_expect_refusal_message(const mt_env *env, int same_on_all, const char *file, int line);
#define MT_EXPECT_REFUSAL_MESSAGE(env, same) mt_expect_refusal_message(env, same, __FILE__, __LINE__)

/* A seed for one case: the base seed mixed with the case's name and a salt (its dtype). */
uint64_t mt_case_seed(uint64_t base, const char *name, int salt);

#endif
