/* SPDX-License-Identifier: BSD-3-Clause */
// The calls of a pass: checked, then timed; the ring's messages alone.
#include "measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h" /* bench/: bench_now() */

#include "verify.h"

void bm_pass_init(bm_pass_result *r, int pass)
{
    memset(r, 0, sizeof *r);
    r->pass = pass;
    r->mpi.best = r->ref.best = r->alone.best = INFINITY;
    for (int x = 0; x < BM_OUTPUTS; x++) r->error[x] = NAN;
}

void bm_pass_free(bm_pass_result *r)
{
    bm_trace_free(&r->trace);
    free(r->mpi.samples);
    free(r->ref.samples);
    free(r->alone.samples);
    memset(r, 0, sizeof *r);
}

// Keeps a sample; 1 when it is the least so far. Samples beyond what memory allows are dropped
// from the median only.
static int add_sample(bm_side *s, double seconds)
{
    if (s->count == s->capacity) {
        int grown = s->capacity ? 2 * s->capacity : 16;
        double *more = realloc(s->samples, (size_t)grown * sizeof *more);
        if (more) s->samples = more, s->capacity = grown;
    }
    if (s->count < s->capacity) s->samples[s->count++] = seconds;
    if (!(seconds < s->best)) return 0;
    s->best = seconds;
    return 1;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bm_median(const bm_side *s)
{
    if (s->count == 0) return NAN;
    double *sorted = malloc((size_t)s->count * sizeof *sorted);
    if (!sorted) return NAN;
    memcpy(sorted, s->samples, (size_t)s->count * sizeof *sorted);
    qsort(sorted, (size_t)s->count, sizeof *sorted, compare_double);
    double m = s->count % 2 ? sorted[s->count / 2] : 0.5 * (sorted[s->count / 2 - 1] + sorted[s->count / 2]);
    free(sorted);
    return m;
}

static fa_status mpi_call(bm_job *j, int pass)
{
    if (pass == BM_PASS_FWD)
        return fa_mpi_forward(j->comm, j->o.layout, j->ctx, &j->params, &j->q, &j->k, &j->v, &j->mine[BM_OUT],
                              j->mine[BM_LSE].data);
    return fa_mpi_backward(j->comm, j->o.layout, j->ctx, &j->params, &j->q, &j->k, &j->v, &j->mine[BM_OUT],
                           &j->dout, j->mine[BM_LSE].data, &j->mine[BM_DQ], &j->mine[BM_DK], &j->mine[BM_DV]);
}

static fa_status reference_call(bm_job *j, int pass)
{
    if (pass == BM_PASS_FWD)
        return fa_forward(j->ref_ctx, &j->params, &j->gq, &j->gk, &j->gv, &j->ref[BM_OUT],
                          j->ref[BM_LSE].data);
    return fa_backward(j->ref_ctx, &j->params, &j->gq, &j->gk, &j->gv, &j->ref[BM_OUT], &j->gdout,
                       j->ref[BM_LSE].data, &j->ref[BM_DQ], &j->ref[BM_DK], &j->ref[BM_DV]);
}

// Whether rank 0's reference context may run a bf16 call on dot-product units (its table's name).
static int reference_on_dot_units(const bm_job *j)
{
    fa_stats st = FA_STATS_INIT;
    fa_context_stats(j->ref_ctx, &st);
    return bm_on_dot_units(st.isa, j->o.dtype, j->o.d, j->o.dv);
}

// Rank 0 makes `calls` reference calls (the first `untimed` not kept in side, which may be NULL)
// while the other ranks sleep in a barrier; every rank returns rank 0's status.
static fa_status reference_calls(bm_job *j, int pass, int untimed, int calls, bm_side *side)
{
    int st = FA_OK;
    for (int i = 0; j->rank == 0 && i < calls && st == FA_OK; i++) {
        double started = bench_now();
        st = (int)reference_call(j, pass);
        double took = bench_now() - started;
        if (st == FA_OK && side && i >= untimed) add_sample(side, took);
    }
    if (st != FA_OK) fprintf(stderr, "fa-bench-mpi: the one-process reference failed: %s\n", fa_last_error());
    bm_sleepy_barrier(j->comm);
    MPI_Bcast(&st, 1, MPI_INT, 0, j->comm);
    return (fa_status)st;
}

static void poison(int pass, fa_tensor *outputs)
{
    for (int x = bm_first_output(pass); x <= bm_last_output(pass); x++)
        if (outputs[x].data) memset(outputs[x].data, 0xff, bm_bytes(&outputs[x]));
}

static void *copy_of(const fa_tensor *t)
{
    void *c = malloc(bm_bytes(t) ? bm_bytes(t) : 1);
    if (c) memcpy(c, t->data, bm_bytes(t));
    return c;
}

int bm_verify_pass(bm_job *j, bm_pass_result *r)
{
    static const char *const names[BM_OUTPUTS] = {"out", "lse", "dq", "dk", "dv"};
    int pass = r->pass, first = bm_first_output(pass), last = bm_last_output(pass);
    poison(pass, j->mine);
    fa_status st = mpi_call(j, pass);
    if (st != FA_OK) {
        if (j->rank == 0) fprintf(stderr, "fa-bench-mpi: %s\n", fa_mpi_last_error());
        return -1;
    }
    int ok = 1;
    for (int x = first; x <= last; x++)
        ok = ok && bm_gather(&j->o, j->comm, &j->mine[x], &j->gathered[x]) == 0;
    if (!bm_all(j->comm, ok)) {
        if (j->rank == 0) fprintf(stderr, "fa-bench-mpi: gathering the MPI outputs failed\n");
        return -1;
    }
    if (j->rank == 0) poison(pass, j->ref);
    if (reference_calls(j, pass, 0, 1, NULL) != FA_OK) return -1;
    int passed = 1;
    if (j->rank == 0)
        for (int x = first; x <= last; x++) {
            r->error[x] = bm_normwise_error(&j->gathered[x], &j->ref[x], x == BM_LSE);
            double tol = bm_tolerance(x == BM_LSE ? kit_accum_dtype(j->o.dtype) : j->o.dtype, x >= BM_DQ,
                                      reference_on_dot_units(j));
            if (r->error[x] <= tol) continue;
            passed = 0;
            fprintf(stderr,
                    "fa-bench-mpi: %s of fa_mpi_%s on %d ranks differs from the one-process call by %.3g "
                    "(normwise), above %.0e: nothing is reported\n",
                    names[x], pass == BM_PASS_FWD ? "forward" : "backward", j->ranks, r->error[x], tol);
        }
    MPI_Bcast(&passed, 1, MPI_INT, 0, j->comm);
    if (!passed) return 0;
    ok = 1;
    for (int x = first; x <= last; x++) {
        ok = ok && (j->golden_mine[x] = copy_of(&j->mine[x])) != NULL;
        if (j->rank == 0) ok = ok && (j->golden_ref[x] = copy_of(&j->ref[x])) != NULL;
    }
    if (!bm_all(j->comm, ok)) {
        if (j->rank == 0) fprintf(stderr, "fa-bench-mpi: no memory for the copies of the verified outputs\n");
        return -1;
    }
    return 1;
}

fa_status bm_time_mpi(bm_job *j, bm_pass_result *r)
{
    for (int i = 0; i < j->o.warmup + j->o.reps; i++) {
        MPI_Barrier(j->comm); // the ranks start together: a rep's time is the slowest rank's
        bm_profile_start();
        double started = bench_now();
        fa_status st = mpi_call(j, r->pass);
        double own = bench_now() - started;
        bm_profile profile = bm_profile_stop();
        if (st != FA_OK) { // every rank has the same status
            if (j->rank == 0) fprintf(stderr, "fa-bench-mpi: %s\n", fa_mpi_last_error());
            return st;
        }
        if (i < j->o.warmup) continue;
        double slowest = own;
        MPI_Allreduce(&own, &slowest, 1, MPI_DOUBLE, MPI_MAX, j->comm);
        if (add_sample(&r->mpi, slowest)) {
            r->mpi.profile = profile;
            r->mpi.own = own;
        }
    }
    // The messages of the last call: the same in every call (they follow from the shapes), but for
    // which requests MPI_Testall happened to complete.
    bm_profile_copy_trace(&r->trace);
    return FA_OK;
}

fa_status bm_time_reference(bm_job *j, bm_pass_result *r)
{
    return reference_calls(j, r->pass, j->o.warmup, j->o.warmup + j->o.reps, &r->ref);
}

/* ---- the ring's messages alone ---- */

int bm_time_transfers(bm_job *j, bm_pass_result *r)
{
    if (j->ranks == 1) return 0; // nothing travels
    double mine = r->trace.send_bytes;
    MPI_Allreduce(&mine, &r->bytes_per_rank, 1, MPI_DOUBLE, MPI_MAX, j->comm);
    if (!bm_all(j->comm, bm_replay_prepare(&j->replayer, &r->trace) == 0)) {
        if (j->rank == 0)
            fprintf(stderr,
                    "fa-bench-mpi: the messages of the MPI call could not be sent again alone (no memory, "
                    "or a trace the wrappers could not follow)\n");
        return -1;
    }
    for (int i = -1; i < j->o.reps; i++) { // the first, untimed, as the protocols' first use
        MPI_Barrier(j->comm);
        double own = bm_replay_run(&j->replayer, &r->trace), slowest = own;
        MPI_Allreduce(&own, &slowest, 1, MPI_DOUBLE, MPI_MAX, j->comm);
        if (i >= 0) add_sample(&r->alone, slowest);
    }
    return 0;
}

int bm_outputs_unchanged(bm_job *j, int pass)
{
    int same = 1;
    for (int x = bm_first_output(pass); x <= bm_last_output(pass); x++) {
        if (j->golden_mine[x])
            same = same && memcmp(j->mine[x].data, j->golden_mine[x], bm_bytes(&j->mine[x])) == 0;
        if (j->golden_ref[x])
            same = same && memcmp(j->ref[x].data, j->golden_ref[x], bm_bytes(&j->ref[x])) == 0;
    }
    return bm_all(j->comm, same);
}
