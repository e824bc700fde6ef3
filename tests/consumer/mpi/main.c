/* SPDX-License-Identifier: BSD-3-Clause */
/* An MPI program written only against include/flashattn_mpi.h, built against an installed copy of
 * the library's MPI component (find_package(flashattn COMPONENTS mpi) and pkg-config flashattn-mpi).
 *
 * Every rank holds its FA_MPI_ZIGZAG shard (chunks r and 2P-1-r of 2P) of one causal f64 sequence;
 * fa_mpi_forward must return FA_OK on every rank, with finite rows equal, within f64's 1e-12, to the
 * rows of one fa_forward over the whole sequence, which every rank computes for itself. Rank 0
 * reports; the exit status is non-zero on every rank when any rank failed. */
#include <flashattn_mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 1, HQ = 4, HKV = 2, D = 16, CHUNK = 5 };

static int failures;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            failures++;                                                        \
            fprintf(stderr, "FAIL rank %d %s:%d: ", rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)

/* Global position of local row i of rank r under FA_MPI_ZIGZAG: chunk r, then chunk 2P-1-r. */
static int zigzag_position(int r, int p, int i)
{
    return i < CHUNK ? r * CHUNK + i : (2 * p - 1 - r) * CHUNK + (i - CHUNK);
}

/* The rows of the local positions of x ([B][H][N][dim]) into xs ([B][H][2*CHUNK][dim]). */
static void take_shard(const double *x, int h, int n, int dim, int r, int p, double *xs)
{
    for (int bh = 0; bh < B * h; bh++)
        for (int i = 0; i < 2 * CHUNK; i++)
            memcpy(xs + ((size_t)bh * 2 * CHUNK + (size_t)i) * (size_t)dim,
                   x + ((size_t)bh * (size_t)n + (size_t)zigzag_position(r, p, i)) * (size_t)dim,
                   (size_t)dim * sizeof *xs);
}

int main(int argc, char **argv)
{
    int rank = 0, p = 1;
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);

    const int n = 2 * p * CHUNK, ns = 2 * CHUNK;
    const size_t nq = (size_t)B * HQ * n * D, nk = (size_t)B * HKV * n * D, nl = (size_t)B * HQ * n;
    const size_t sq = (size_t)B * HQ * ns * D, sk = (size_t)B * HKV * ns * D, sl = (size_t)B * HQ * ns;
    double *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nk * sizeof *v);
    double *ref = malloc(nq * sizeof *ref), *ref_lse = malloc(nl * sizeof *ref_lse);
    double *qs = malloc(sq * sizeof *qs), *ks = malloc(sk * sizeof *ks), *vs = malloc(sk * sizeof *vs);
    double *out = malloc(sq * sizeof *out), *lse = malloc(sl * sizeof *lse);
    double *ref_s = malloc(sq * sizeof *ref_s), *ref_lse_s = malloc(sl * sizeof *ref_lse_s);
    if (!q || !k || !v || !ref || !ref_lse || !qs || !ks || !vs || !out || !lse || !ref_s || !ref_lse_s) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* The same global sequence on every rank: a fixed seed, values rounded to float. */
    unsigned long long state = 0x2545F4914F6CDD1DULL;
    double *inputs[3] = {q, k, v};
    size_t sizes[3] = {nq, nk, nk};
    for (int a = 0; a < 3; a++)
        for (size_t i = 0; i < sizes[a]; i++) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            inputs[a][i] = (double)(float)(4.0 * ((double)(state >> 11) / 9007199254740992.0) - 2.0);
        }
    take_shard(q, HQ, n, D, rank, p, qs);
    take_shard(k, HKV, n, D, rank, p, ks);
    take_shard(v, HKV, n, D, rank, p, vs);

    fa_context *ctx = NULL;
    fa_context_opts opts = FA_CONTEXT_OPTS_INIT;
    opts.num_threads = 1;
    fa_status s = fa_context_create(&ctx, &opts);
    CHECK(s == FA_OK, "fa_context_create: %s", fa_status_str(s));
    fa_params prm = FA_PARAMS_INIT;
    prm.causal = FA_CAUSAL_TOP_LEFT;

    if (s == FA_OK) {
        /* The single-process answer over the whole sequence, then the local rows of it. */
        fa_tensor tq = fa_tensor_bhsd(q, FA_F64, B, HQ, n, D), tk = fa_tensor_bhsd(k, FA_F64, B, HKV, n, D);
        fa_tensor tv = fa_tensor_bhsd(v, FA_F64, B, HKV, n, D), to = fa_tensor_bhsd(ref, FA_F64, B, HQ, n, D);
        s = fa_forward(ctx, &prm, &tq, &tk, &tv, &to, ref_lse);
        CHECK(s == FA_OK, "fa_forward: %s: %s", fa_status_str(s), fa_last_error());
        take_shard(ref, HQ, n, D, rank, p, ref_s);
        take_shard(ref_lse, HQ, n, 1, rank, p, ref_lse_s);
    }
    if (s == FA_OK) {
        fa_tensor tq = fa_tensor_bhsd(qs, FA_F64, B, HQ, ns, D),
                  tk = fa_tensor_bhsd(ks, FA_F64, B, HKV, ns, D);
        fa_tensor tv = fa_tensor_bhsd(vs, FA_F64, B, HKV, ns, D),
                  to = fa_tensor_bhsd(out, FA_F64, B, HQ, ns, D);
        s = fa_mpi_forward(MPI_COMM_WORLD, FA_MPI_ZIGZAG, ctx, &prm, &tq, &tk, &tv, &to, lse);
        CHECK(s == FA_OK, "fa_mpi_forward: %s: %s", fa_status_str(s), fa_last_error());
    }
    if (s == FA_OK) {
        double err = 0.0, lse_err = 0.0;
        int finite = 1;
        for (size_t i = 0; i < sq; i++) {
            finite &= isfinite(out[i]) != 0;
            err = fmax(err, fabs(out[i] - ref_s[i]) / (1.0 + fabs(ref_s[i])));
        }
        for (size_t i = 0; i < sl; i++) {
            finite &= isfinite(lse[i]) != 0;
            lse_err = fmax(lse_err, fabs(lse[i] - ref_lse_s[i]) / (1.0 + fabs(ref_lse_s[i])));
        }
        CHECK(finite, "fa_mpi_forward wrote a non-finite output or lse");
        CHECK(err <= 1e-12 && lse_err <= 1e-12, "error %.3g (lse %.3g) against fa_forward > 1e-12", err,
              lse_err);
        if (rank == 0)
            printf(
                "flashattn %s: fa_mpi_forward, %d ranks, ZIGZAG, causal, N = %d: max error %.3g (lse %.3g) "
                "against fa_forward on rank 0\n",
                fa_version(), p, n, err, lse_err);
    }

    int all_failures = 0;
    MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%s\n", all_failures ? "mpi consumer: FAILED" : "mpi consumer: OK");
    fa_context_destroy(ctx);
    free(q), free(k), free(v), free(ref), free(ref_lse), free(qs), free(ks), free(vs), free(out), free(lse);
    free(ref_s), free(ref_lse_s);
    MPI_Finalize();
    return all_failures ? 1 : 0;
}
