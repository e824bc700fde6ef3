/* SPDX-License-Identifier: BSD-3-Clause */
/* fa-kernel-bench --decode: a decode step's three kernels (scores_stored, online_softmax,
 * accumulate_stored) on one query row over a key tile in cache, for each cache type: the time a key
 * costs the kernels alone, and the bytes a second of them consumes against the read probe of the
 * same run. A decode step that reads its cache at memory speed needs the kernels to consume its
 * bytes faster than memory delivers them; this says whether they can on this core
 * (bench/README.md, "The kernels alone"). */
#ifndef FA_BENCH_DECODE_KERNELS_H
#define FA_BENCH_DECODE_KERNELS_H

#include "kernels/kernels.h"
#include "plan/block_sizes.h" /* FA_DECODE_BLOCK_K */

/* The most query rows a tile --decode-rows takes: the few-rows kernels' (kernels/few_rows_scores.h). */
#define DECODE_MAX_ROWS 4

/* The keys of a decode tile, the most --decode-run takes. */
#define DECODE_TILE_KEYS FA_DECODE_BLOCK_K

/* Prints one table per head dim dims[0..n_dims) for table k's float set, `rows` query rows (1 to
 * DECODE_MAX_ROWS) over each key, the products called on runs of `run` keys (1 to DECODE_TILE_KEYS,
 * the whole tile): per cache type, ns a key (one kv head) of each kernel and of the
 * three in sequence, the products' share of the FMA probe, and GB/s of K and V that the three
 * consume, also as % of read_gbps (the read probe at 1 thread). fma_slot: seconds of one FMA of the
 * table's vector width at the probe's rate. Returns 0, or -1 after a message. */
int decode_kernels_run(const fa_kernels_f32 *k, const int64_t *dims, int n_dims, int64_t rows, int64_t run,
                       int rounds, double fma_slot, double read_gbps);

#endif
