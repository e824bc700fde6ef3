/* SPDX-License-Identifier: BSD-3-Clause */
/* fa-mpi-tests: the tests of include/flashattn_mpi.h, run under mpirun at any number of ranks:
 *
 *   mpirun -np 4 --oversubscribe fa-mpi-tests [--seed N] [--case NAME] [--watchdog S] [--verbose]
 *
 * Every rank runs every case collectively (cases.h); a failed check prints one line naming the
 * rank, P, the case (layout, shape, modifiers, seed) and the values. The exit status is 0 only when
 * no rank failed a check (the failures are summed over the ranks), 1 otherwise, 2 for a bad
 * command line, 3 when the watchdog ends a case that hangs. The seed is fixed unless --seed says
 * otherwise: a failure replays with the same --seed (and --case to run that case alone). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "check.h"

/* The default base seed: fixed, so that CI runs the same inputs every time. */
#define DEFAULT_SEED 20240614ull

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np P [--oversubscribe] fa-mpi-tests [--seed N] [--case NAME] [--watchdog S] "
            "[--verbose]\n"
            "  --seed N      base seed of every case's inputs (default %llu)\n"
            "  --case NAME   run only the cases whose name contains NAME\n"
            "  --watchdog S  end the run when one case takes over S seconds (default 120; 0: never)\n"
            "  --verbose     rank 0 prints every case and its time\n",
            DEFAULT_SEED);
}

static int context(fa_context **ctx, int threads)
{
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = threads;
    /* Ranks share the machine's cores (oversubscribed): pinning every rank's thread 0 to the first
     * allowed core would serialise them. The threads stay where the OS puts them. */
    o.bind = FA_BIND_NONE;
    fa_status st = fa_context_create(ctx, &o);
    if (st != FA_OK)
        fprintf(stderr, "fa-mpi-tests: fa_context_create(%d threads): %s: %s\n", threads, fa_status_str(st),
                fa_last_error());
    return st == FA_OK;
}

int main(int argc, char **argv)
{
    int provided = 0;
    /* The library's OpenMP threads never call MPI; the calling thread does. */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    unsigned long long seed = DEFAULT_SEED;
    unsigned long watchdog = 120;
    const char *only = NULL;
    int verbose = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            seed = strtoull(argv[++i], &end, 0);
            bad |= !end || *end;
        } else if (!strcmp(argv[i], "--case") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--watchdog") && i + 1 < argc) {
            watchdog = strtoul(argv[++i], &end, 0);
            bad |= !end || *end || watchdog > 86400;
        } else if (!strcmp(argv[i], "--verbose")) {
            verbose = 1;
        } else if (!strcmp(argv[i], "--help")) {
            if (rank == 0) usage(stdout);
            MPI_Finalize();
            return 0;
        } else {
            bad = 1;
        }
    }
    if (bad) {
        if (rank == 0) usage(stderr);
        MPI_Finalize();
        return 2;
    }

    mt_check_init(rank, size, (unsigned)watchdog, verbose);
    mt_env env = {MPI_COMM_WORLD, "world", rank, size, seed, only, NULL, NULL, NULL};
    int made = context(&env.ctx, 0) && context(&env.ctx1, 1) && context(&env.ctx2, 2);
    if (!mt_all(&env, made)) {
        fa_context_destroy(env.ctx);
        fa_context_destroy(env.ctx1);
        fa_context_destroy(env.ctx2);
        MPI_Finalize();
        return 1;
    }
    if (rank == 0)
        fprintf(stderr, "fa-mpi-tests: P=%d, seed %llu (replay: --seed %llu [--case NAME])%s%s\n", size, seed,
                seed, only ? ", cases matching " : "", only ? only : "");
    double start = MPI_Wtime();

    mt_run_accuracy(&env);
    mt_run_determinism(&env);
    mt_run_refusals(&env);

    /* The same calls on a communicator of its own: ranks split by parity, numbered in reverse, so
     * that a rank's place in the ring is its rank in comm, not in MPI_COMM_WORLD. */
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &split);
    mt_env sub = env;
    sub.comm = split;
    sub.comm_name = rank % 2 ? "odd ranks, reversed" : "even ranks, reversed";
    MPI_Comm_rank(split, &sub.rank);
    MPI_Comm_size(split, &sub.size);
    mt_run_accuracy_on_subcomm(&sub);
    MPI_Comm_free(&split);

    long mine = mt_failures(), failures = 0, cases = 0, my_cases = mt_cases();
    MPI_Allreduce(&mine, &failures, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(&my_cases, &cases, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        fprintf(stderr,
                "fa-mpi-tests: P=%d: %ld cases, %ld failed checks over all ranks, %.1f s (seed %llu)\n", size,
                cases, failures, MPI_Wtime() - start, seed);

    fa_context_destroy(env.ctx);
    fa_context_destroy(env.ctx1);
    fa_context_destroy(env.ctx2);
    MPI_Finalize();
    return failures ? 1 : 0;
}
