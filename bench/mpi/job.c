/* SPDX-License-Identifier: BSD-3-Clause */
// Setting up a run: shards, tensors, contexts.
#include "job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bm_all(MPI_Comm comm, int ok)
{
    int mine = ok != 0, all = 0;
    if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) return 0;
    return all;
}

int bm_first_output(int pass)
{
    return pass == BM_PASS_FWD ? BM_OUT : BM_DQ;
}

int bm_last_output(int pass)
{
    return pass == BM_PASS_FWD ? BM_LSE : BM_DV;
}

// The tensors of a side of rows positions (the shard, or the whole sequence): inputs filled from
// the global values, outputs NaN. Returns 1 when every buffer was allocated.
static int make_side(const bm_options *o, const bm_shard *sh, fa_tensor *q, fa_tensor *k, fa_tensor *v,
                     fa_tensor *dout, fa_tensor outputs[BM_OUTPUTS])
{
    int64_t rows = sh->rows;
    int bwd = (o->passes & BM_PASS_BWD) != 0;
    *q = bm_tensor(o->dtype, o->b, o->hq, rows, o->d);
    *k = bm_tensor(o->dtype, o->b, o->hkv, rows, o->d);
    *v = bm_tensor(o->dtype, o->b, o->hkv, rows, o->dv);
    outputs[BM_OUT] = bm_tensor(o->dtype, o->b, o->hq, rows, o->dv);
    outputs[BM_LSE] = bm_tensor(kit_accum_dtype(o->dtype), o->b, o->hq, rows, 1);
    if (bwd) {
        *dout = bm_tensor(o->dtype, o->b, o->hq, rows, o->dv);
        outputs[BM_DQ] = bm_tensor(o->dtype, o->b, o->hq, rows, o->d);
        outputs[BM_DK] = bm_tensor(o->dtype, o->b, o->hkv, rows, o->d);
        outputs[BM_DV] = bm_tensor(o->dtype, o->b, o->hkv, rows, o->dv);
    }
    int ok = q->data && k->data && v->data && outputs[BM_OUT].data && outputs[BM_LSE].data;
    if (bwd) ok = ok && dout->data && outputs[BM_DQ].data && outputs[BM_DK].data && outputs[BM_DV].data;
    if (!ok) return 0;
    bm_fill(q, sh, o->n, o->seed, BM_STREAM_Q);
    bm_fill(k, sh, o->n, o->seed, BM_STREAM_K);
    bm_fill(v, sh, o->n, o->seed, BM_STREAM_V);
    if (bwd) bm_fill(dout, sh, o->n, o->seed, BM_STREAM_DOUT);
    return 1;
}

static int make_context(fa_context **ctx, int threads, fa_bind bind, const char *what, int rank)
{
    fa_context_opts co = FA_CONTEXT_OPTS_INIT;
    co.num_threads = threads;
    co.bind = bind;
    fa_status st = fa_context_create(ctx, &co);
    if (st == FA_OK) return 1;
    fprintf(stderr, "fa-bench-mpi: rank %d: fa_context_create (%s, %d threads): %s\n", rank, what, threads,
            fa_last_error());
    return 0;
}

int bm_job_init(bm_job *j, const bm_options *o, MPI_Comm comm)
{
    memset(j, 0, sizeof *j);
    j->replayer.comm = MPI_COMM_NULL; // what bm_job_free may see when a step below fails
    j->replayer.mib = MPI_DATATYPE_NULL;
    j->o = *o;
    j->comm = comm;
    MPI_Comm_rank(comm, &j->rank);
    MPI_Comm_size(comm, &j->ranks);
    if (o->layout == FA_MPI_ZIGZAG && o->n % (2 * (int64_t)j->ranks) != 0) {
        if (j->rank == 0)
            fprintf(stderr, "fa-bench-mpi: --layout zigzag needs N divisible by 2P: N = %lld, P = %d\n",
                    (long long)o->n, j->ranks);
        return -1;
    }
    if (bm_cpusets_gather(&j->where, comm) != 0) {
        if (j->rank == 0) fprintf(stderr, "fa-bench-mpi: the ranks' hosts and CPUs could not be gathered\n");
        return -1;
    }
    if (!bm_all(comm, bm_replayer_init(&j->replayer, comm) == 0)) {
        if (j->rank == 0) fprintf(stderr, "fa-bench-mpi: MPI refused a communicator or a datatype\n");
        return -1;
    }
    j->shard = bm_shard_of(o, j->rank, j->ranks);
    j->ref_threads = o->ref_threads > 0 ? o->ref_threads : j->ranks * o->threads;
    // AUTO pins thread i to the i-th core the process may use: ranks that share their CPUs would all
    // pin their first thread to the same core.
    j->rank_bind = o->bind == FA_BIND_AUTO && j->where.shared ? FA_BIND_NONE : o->bind;
    j->params = (fa_params)FA_PARAMS_INIT;
    j->params.causal = o->causal;

    int ok = make_side(o, &j->shard, &j->q, &j->k, &j->v, &j->dout, j->mine);
    if (!ok) fprintf(stderr, "fa-bench-mpi: rank %d: no memory for its shard's tensors\n", j->rank);
    if (ok && j->rank == 0) {
        bm_shard whole = {1, o->n, {{0, 0, o->n}, {0, 0, 0}}};
        ok = make_side(o, &whole, &j->gq, &j->gk, &j->gv, &j->gdout, j->ref);
        for (int x = 0; ok && x < BM_OUTPUTS; x++) {
            if (!j->ref[x].data) continue;
            j->gathered[x] =
                bm_tensor(j->ref[x].dtype, j->ref[x].batch, j->ref[x].heads, j->ref[x].seq, j->ref[x].dim);
            ok = j->gathered[x].data != NULL;
        }
        if (!ok) fprintf(stderr, "fa-bench-mpi: rank 0: no memory for the whole sequence's tensors\n");
    }
    if (!bm_all(comm, ok)) return -1;

    ok = make_context(&j->ctx, o->threads, j->rank_bind, "the rank's", j->rank);
    if (ok && j->rank == 0) {
        // The reference runs on the CPUs of every rank of this host: the library restricts a context
        // to the CPUs the process may use when the context is created, so rank 0 widens its own
        // affinity for that moment, and gets its launcher's binding back.
        cpu_set_t own;
        int widened = sched_getaffinity(0, sizeof own, &own) == 0 &&
                      sched_setaffinity(0, sizeof j->where.reference, &j->where.reference) == 0;
        if (!widened)
            fprintf(stderr, "fa-bench-mpi: warning: rank 0 could not widen its CPUs for the reference\n");
        ok = make_context(&j->ref_ctx, j->ref_threads, o->bind, "the reference's", 0);
        if (widened) sched_setaffinity(0, sizeof own, &own);
    }
    return bm_all(comm, ok) ? 0 : -1;
}

void bm_job_gather_stats(bm_job *j)
{
    fa_stats st = FA_STATS_INIT;
    fa_context_stats(j->ctx, &st);
    int mine[2] = {st.bound_threads, (int)st.bind}, *all = NULL;
    if (j->rank == 0) {
        all = malloc(2 * (size_t)j->ranks * sizeof *all);
        j->rank_bound = malloc((size_t)j->ranks * sizeof *j->rank_bound);
        j->rank_bind_used = malloc((size_t)j->ranks * sizeof *j->rank_bind_used);
        j->ref_stats = (fa_stats)FA_STATS_INIT;
        fa_context_stats(j->ref_ctx, &j->ref_stats);
    }
    int have = bm_all(j->comm, j->rank != 0 || (all && j->rank_bound && j->rank_bind_used));
    if (have) MPI_Gather(mine, 2, MPI_INT, all, 2, MPI_INT, 0, j->comm);
    for (int r = 0; have && j->rank == 0 && r < j->ranks; r++) {
        j->rank_bound[r] = all[2 * r];
        j->rank_bind_used[r] = all[2 * r + 1];
    }
    if (!have && j->rank == 0) {
        free(j->rank_bound), free(j->rank_bind_used);
        j->rank_bound = j->rank_bind_used = NULL;
    }
    free(all);
}

void bm_job_free(bm_job *j)
{
    free(j->rank_bound);
    free(j->rank_bind_used);
    fa_context_destroy(j->ctx);
    fa_context_destroy(j->ref_ctx);
    fa_tensor *all[] = {&j->q, &j->k, &j->v, &j->dout, &j->gq, &j->gk, &j->gv, &j->gdout};
    for (size_t x = 0; x < sizeof all / sizeof all[0]; x++) free(all[x]->data);
    for (int x = 0; x < BM_OUTPUTS; x++) {
        free(j->mine[x].data);
        free(j->ref[x].data);
        free(j->gathered[x].data);
        free(j->golden_mine[x]);
        free(j->golden_ref[x]);
    }
    bm_cpusets_free(&j->where);
    bm_replayer_free(&j->replayer);
    memset(j, 0, sizeof *j);
}
