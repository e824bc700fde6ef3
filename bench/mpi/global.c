/* SPDX-License-Identifier: BSD-3-Clause */
// The global problem: shards, inputs, gathering, FLOP.
#include "global.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h" /* the test kit's bf16/f16 rounding */
#include "rng.h"   /* the test kit's generator, fa-bench's too: a seed names the same problem */

bm_shard bm_shard_of(const bm_options *o, int rank, int ranks)
{
    bm_shard sh;
    memset(&sh, 0, sizeof sh);
    if (o->layout == FA_MPI_ZIGZAG) {
        int64_t chunk = o->n / (2 * (int64_t)ranks);
        sh.count = 2;
        sh.run[0] = (bm_run){rank * chunk, 0, chunk};
        sh.run[1] = (bm_run){(2 * (int64_t)ranks - 1 - rank) * chunk, chunk, chunk};
        sh.rows = 2 * chunk;
    } else {
        int64_t base = o->n / ranks, extra = o->n % ranks;
        int64_t pos = rank * base + (rank < extra ? rank : extra);
        sh.count = 1;
        sh.rows = base + (rank < extra ? 1 : 0);
        sh.run[0] = (bm_run){pos, 0, sh.rows};
    }
    return sh;
}

void bm_fill(const fa_tensor *t, const bm_shard *sh, int64_t n, uint64_t seed, uint64_t stream)
{
    uint64_t key = kit_stream_key(seed, stream);
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int g = 0; g < sh->count; g++)
                for (int64_t x = 0; x < sh->run[g].len; x++) {
                    int64_t global_row = (b * t->heads + h) * n + sh->run[g].pos + x;
                    int64_t at =
                        b * t->stride_batch + h * t->stride_head + (sh->run[g].row + x) * t->stride_seq;
                    for (int64_t d = 0; d < t->dim; d++) {
                        /* a half type: an f32 run's inputs, rounded once */
                        kit_store(t->dtype, t->data, at + d,
                                  kit_unit_normal(key, (uint64_t)(global_row * t->dim + d)));
                    }
                }
}

size_t bm_bytes(const fa_tensor *t)
{
    return (size_t)(t->batch * t->heads * t->seq * t->dim) * kit_dtype_size(t->dtype);
}

fa_tensor bm_tensor(fa_dtype dtype, int64_t b, int64_t h, int64_t s, int64_t d)
{
    size_t bytes = (size_t)(b * h * s * d) * kit_dtype_size(dtype);
    size_t rounded = (bytes + 63) / 64 * 64;
    void *data = aligned_alloc(64, rounded ? rounded : 64);
    if (data) memset(data, 0xff, rounded); // all ones: NaN in float and double
    return fa_tensor_bhsd(data, dtype, b, h, s, d);
}

// Messages of at most 1 GiB: MPI counts are ints.
enum { CHUNK = 1 << 30, TAG_GATHER = 77 };

int bm_gather(const bm_options *o, MPI_Comm comm, const fa_tensor *local, const fa_tensor *global)
{
    int rank, ranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    size_t bytes = bm_bytes(local);
    if (rank != 0) {
        for (size_t at = 0; at < bytes; at += CHUNK) {
            size_t count = bytes - at < CHUNK ? bytes - at : CHUNK;
            if (MPI_Send((char *)local->data + at, (int)count, MPI_BYTE, 0, TAG_GATHER, comm) != MPI_SUCCESS)
                return -1;
        }
        return 0;
    }
    size_t elem = kit_dtype_size(local->dtype), row = (size_t)local->dim * elem;
    int rc = 0;
    for (int r = 0; r < ranks && rc == 0; r++) {
        bm_shard sh = bm_shard_of(o, r, ranks);
        size_t theirs = (size_t)(local->batch * local->heads * sh.rows) * row;
        char *buf = r == 0 ? local->data : malloc(theirs ? theirs : 1);
        if (!buf) { // the other ranks are blocked in their sends: nothing to agree over
            fprintf(stderr, "fa-bench-mpi: no memory to gather rank %d's rows (%zu bytes)\n", r, theirs);
            MPI_Abort(comm, 1);
        }
        for (size_t at = 0; r != 0 && at < theirs && rc == 0; at += CHUNK) {
            size_t count = theirs - at < CHUNK ? theirs - at : CHUNK;
            if (MPI_Recv(buf + at, (int)count, MPI_BYTE, r, TAG_GATHER, comm, MPI_STATUS_IGNORE) !=
                MPI_SUCCESS)
                rc = -1;
        }
        for (int64_t b = 0; b < local->batch && rc == 0; b++)
            for (int64_t h = 0; h < local->heads; h++)
                for (int g = 0; g < sh.count; g++)
                    for (int64_t x = 0; x < sh.run[g].len; x++) {
                        const char *from =
                            buf + (size_t)((b * local->heads + h) * sh.rows + sh.run[g].row + x) * row;
                        char *to = (char *)global->data +
                                   (size_t)(b * global->stride_batch + h * global->stride_head +
                                            (sh.run[g].pos + x) * global->stride_seq) *
                                       elem;
                        memcpy(to, from, row);
                    }
        if (r != 0) free(buf);
    }
    return rc;
}

double bm_visible_pairs(const bm_options *o)
{
    double n = (double)o->n;
    return o->causal == FA_CAUSAL_NONE ? n * n : n * (n + 1.0) / 2.0;
}

double bm_flops(const bm_options *o, int pass)
{
    double forward = 2.0 * (double)o->b * (double)o->hq * bm_visible_pairs(o) * (double)(o->d + o->dv);
    return pass == BM_PASS_BWD ? 2.5 * forward : forward;
}
