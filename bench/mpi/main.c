/* SPDX-License-Identifier: BSD-3-Clause */
// fa-bench-mpi: ring attention over MPI against one process, checked before it is timed, in one
// run (options.c's --help says what it measures; bench/README.md, "Several nodes (MPI)", more).
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h" /* bench/: bench_now() */

#include "identity.h"
#include "job.h"
#include "measure.h"
#include "options.h"
#include "profile.h"
#include "report.h"

static double started;

// A progress line on stderr from rank 0, written whole (several ranks share the terminal).
static void progress(const bm_job *j, const char *fmt, ...)
{
    if (j->rank != 0) return;
    char line[512];
    int n = snprintf(line, sizeof line, "fa-bench-mpi: [%7.1f s] ", bench_now() - started);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}

// Placements that make the figures mean less than they say, in words, from rank 0.
static void warn_placement(const bm_job *j)
{
    if (j->rank != 0) return;
    int cpus = CPU_COUNT(&j->where.reference);
    if (j->where.shared)
        fprintf(
            stderr,
            "fa-bench-mpi: warning: ranks of one host share CPUs (an oversubscribed or unbound launch): the "
            "ranks compete for cores and the MPI figures are not a measure of the library\n");
    for (int r = 0; r < j->ranks; r++)
        if (CPU_COUNT(&j->where.where[r].cpus) < j->o.threads)
            fprintf(stderr,
                    "fa-bench-mpi: warning: rank %d may use %d CPU%s for %d threads (with Open MPI: "
                    "--map-by slot:PE=%d --bind-to core)\n",
                    r, CPU_COUNT(&j->where.where[r].cpus), CPU_COUNT(&j->where.where[r].cpus) == 1 ? "" : "s",
                    j->o.threads, j->o.threads);
    if (cpus < j->ref_threads)
        fprintf(stderr, "fa-bench-mpi: warning: the reference runs %d threads on %d CPU%s\n", j->ref_threads,
                cpus, cpus == 1 ? "" : "s");
    if (j->where.ranks_on_host0 < j->ranks)
        fprintf(stderr,
                "fa-bench-mpi: warning: %d of %d ranks run on other hosts than rank 0: the reference is one "
                "process of %d threads on rank 0's host\n",
                j->ranks - j->where.ranks_on_host0, j->ranks, j->ref_threads);
}

// Every rank's figures of the fastest MPI rep, gathered on rank 0 (NULL elsewhere, and on failure).
static bm_rank_figures *gather_figures(const bm_job *j, const bm_pass_result *r)
{
    bm_rank_figures mine;
    mine.own = r->mpi.own;
    for (int x = 0; x < BM_PARTS; x++) {
        mine.seconds[x] = r->mpi.profile.seconds[x];
        mine.calls[x] = (double)r->mpi.profile.calls[x];
    }
    bm_rank_figures *all = j->rank == 0 ? calloc((size_t)j->ranks, sizeof *all) : NULL;
    const int count = (int)(sizeof mine / sizeof(double));
    MPI_Gather(&mine, count, MPI_DOUBLE, all, count, MPI_DOUBLE, 0, j->comm);
    return all;
}

static int run(bm_job *j)
{
    int passes[2], n = 0;
    if (j->o.passes & BM_PASS_FWD) passes[n++] = BM_PASS_FWD;
    if (j->o.passes & BM_PASS_BWD) passes[n++] = BM_PASS_BWD;
    bm_pass_result results[2];
    bm_pass_init(&results[0], BM_PASS_FWD);
    bm_pass_init(&results[1], BM_PASS_BWD);
    int status = 1;

    // The backward's out and lse are each side's verified forward's, so the forward comes first.
    for (int p = 0; p < ((j->o.passes & BM_PASS_BWD) ? 2 : 1); p++) {
        progress(j, "checking the %s pass against the one-process call", p ? "backward" : "forward");
        int verdict = bm_verify_pass(j, &results[p]);
        if (verdict != 1) goto done;
    }
    for (int round = 0; round < j->o.rounds; round++)
        for (int p = 0; p < n; p++) {
            bm_pass_result *r = &results[passes[p] == BM_PASS_FWD ? 0 : 1];
            const char *name = passes[p] == BM_PASS_FWD ? "fwd" : "bwd";
            for (int side = 0; side < 2; side++) {
                int mpi = (side + round) % 2 == 0; // rounds alternate which side goes first
                progress(j, "round %d/%d, %s: %s, %d rep%s", round + 1, j->o.rounds, name,
                         mpi ? "MPI" : "one process", j->o.reps, j->o.reps == 1 ? "" : "s");
                if ((mpi ? bm_time_mpi(j, r) : bm_time_reference(j, r)) != FA_OK) goto done;
            }
            progress(j, "round %d/%d, %s: the messages alone", round + 1, j->o.rounds, name);
            if (bm_time_transfers(j, r) != 0) goto done;
            progress(j, "round %d/%d, %s: min so far MPI %.1f ms, one process %.1f ms", round + 1,
                     j->o.rounds, name, 1e3 * r->mpi.best, 1e3 * r->ref.best);
        }
    int unchanged = 1;
    for (int p = 0; p < n; p++) {
        bm_pass_result *r = &results[passes[p] == BM_PASS_FWD ? 0 : 1];
        r->bitwise = bm_outputs_unchanged(j, r->pass);
        unchanged = unchanged && r->bitwise;
    }
    if (!unchanged && j->rank == 0)
        fprintf(stderr,
                "fa-bench-mpi: outputs after timing differ from the verified ones: nothing is reported\n");

    bm_job_gather_stats(j);
    bm_pass_report reports[2];
    bm_rank_figures *figures[2] = {NULL, NULL};
    int have = 1;
    for (int p = 0; p < n; p++) {
        reports[p].result = &results[passes[p] == BM_PASS_FWD ? 0 : 1];
        figures[p] = gather_figures(j, reports[p].result);
        reports[p].ranks = figures[p];
        have = have && (j->rank != 0 || figures[p]);
    }
    if (j->rank == 0 && unchanged && have) {
        bm_identity id;
        bm_identity_init(&id);
        bm_report(stdout, j, &id, reports, n);
        fflush(stdout);
        status = j->o.csv && bm_report_csv(j->o.csv, j, &id, reports, n) != 0 ? 1 : 0;
        if (status == 0 && j->o.csv) progress(j, "wrote %s", j->o.csv);
    } else if (j->rank == 0 && !have) {
        fprintf(stderr, "fa-bench-mpi: no memory for the ranks' figures\n");
    }
    free(figures[0]);
    free(figures[1]);
    MPI_Bcast(&status, 1, MPI_INT, 0, j->comm);
    if (!unchanged) status = 1;
done:
    bm_pass_free(&results[0]);
    bm_pass_free(&results[1]);
    return status;
}

int main(int argc, char **argv)
{
    int provided = 0, rank = 0;
    // Only the main thread calls MPI; the library's OpenMP threads never do.
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    started = bench_now();
    bm_options o;
    int rc = bm_options_parse(argc, argv, rank, &o);
    if (rc != 0) {
        MPI_Finalize();
        return rc > 0 ? 0 : 2;
    }
    if (bm_profile_init() != 0) {
        if (rank == 0)
            fprintf(stderr,
                    "fa-bench-mpi: libflashattn's fa_forward, fa_backward and fa_merge are not found behind "
                    "fa-bench-mpi's own (it must link the shared libflashattn)\n");
        MPI_Finalize();
        return 1;
    }
    bm_job j;
    int status = 1;
    if (bm_job_init(&j, &o, MPI_COMM_WORLD) == 0) {
        warn_placement(&j);
        status = run(&j);
    }
    bm_job_free(&j);
    MPI_Finalize();
    return status;
}
