/* SPDX-License-Identifier: BSD-3-Clause */
#include <flashattn_mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* One causal sequence of 2·P·CHUNK positions over P ranks. FA_MPI_ZIGZAG: rank r holds chunks r and
 * 2P-1-r of 2P (so every rank has as many visible pairs as the others) and gets their output rows. */
enum { H = 4, D = 64, CHUNK = 128 };

int main(int argc, char **argv)
{
    int rank, ranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const int n = 2 * CHUNK; /* this rank's positions */
    size_t len = (size_t)H * n * D;
    float *q = malloc(len * sizeof *q), *k = malloc(len * sizeof *k), *v = malloc(len * sizeof *v);
    float *o = malloc(len * sizeof *o), *lse = malloc((size_t)H * n * sizeof *lse);
    for (int h = 0; h < H; h++)
        for (int i = 0; i < n; i++) {
            int pos = i < CHUNK ? rank * CHUNK + i : (2 * ranks - 1 - rank) * CHUNK + i - CHUNK;
            for (int d = 0; d < D; d++) {
                size_t at = ((size_t)h * n + i) * D + d;
                q[at] = k[at] = v[at] = (float)((pos * 7 + d + h) % 11) * 0.125f - 0.625f;
            }
        }

    fa_tensor tq = fa_tensor_bhsd(q, FA_F32, 1, H, n, D), tk = fa_tensor_bhsd(k, FA_F32, 1, H, n, D);
    fa_tensor tv = fa_tensor_bhsd(v, FA_F32, 1, H, n, D), to = fa_tensor_bhsd(o, FA_F32, 1, H, n, D);
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_TOP_LEFT; /* on the global positions */
    /* Collective: every rank calls, every rank gets the same status. ctx NULL: the default context. */
    fa_status s = fa_mpi_forward(MPI_COMM_WORLD, FA_MPI_ZIGZAG, NULL, &p, &tq, &tk, &tv, &to, lse);
    if (s != FA_OK) { /* the same line on every rank, naming the rank at fault */
        if (rank == 0) fprintf(stderr, "flashattn: %s: %s\n", fa_status_str(s), fa_mpi_last_error());
        MPI_Finalize();
        return 1;
    }
    /* Position 0, rank 0's first row, sees key 0 only: its output row is v's. */
    if (rank == 0)
        printf("%d ranks, %d positions: out[0] = %g (v[0] = %g), lse[0] = %g\n", ranks, 2 * ranks * CHUNK,
               o[0], v[0], lse[0]);
    free(q), free(k), free(v), free(o), free(lse);
    MPI_Finalize();
    return 0;
}
