/* SPDX-License-Identifier: BSD-3-Clause */
/* The ABI test's client (tests/abi/README.md): fixed problems over every call that takes a
 * size-tagged struct. Compiled against the frozen 0.4.0 header (tests/abi/frozen/) or, with
 * FA_ABI_GROWN_CLIENT, against the grown copy (tests/abi/grown.cmake), whose structs end with
 * `uint64_t abi_grown`. */
#ifndef FA_ABI_CLIENT_H
#define FA_ABI_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"

/* The dense problem with every modifier (A), a packed batch of sequences (B), a paged decode step
 * (C); their inputs from a fixed generator, their outputs canary-filled by abi_world_reset. */
enum { A_B = 2, A_HQ = 4, A_HKV = 2, A_NQ = 23, A_NK = 37, A_D = 16, A_DV = 24 };
enum { S_COUNT = 3, S_H = 2, S_D = 8, S_TQ = 14, S_TK = 21, PAGE = 4, PAGES = 8, PAGES_PER_SEQ = 3 };

typedef struct {
    float *qa, *ka, *va, *outa, *lsea, *douta, *dqa, *dka, *dva, *bias, slopes[A_HQ], sinks[A_HQ],
        dsinks[A_HQ];
    fa_tensor q, k, v, out, dout, dq, dk, dv, bias_view;
    fa_params p; /* every modifier of A */
    float *qs, *ks, *vs, *outs, *lses;
    fa_tensor sq, sk, sv, sout;
    int64_t cu_q[S_COUNT + 1], cu_k[S_COUNT + 1], used[S_COUNT];
    fa_seqs seqs; /* B: packed queries and keys, keys in use */
    fa_params ps;
    float *qc, *kc, *vc, *outc, *lsec;
    fa_tensor cq, ck, cv, cout;
    int32_t table[S_COUNT * PAGES_PER_SEQ];
    int64_t used_c[S_COUNT];
    fa_seqs paged; /* C: one query row per sequence over a shuffled page pool */
    fa_params pc;
} abi_world;

#define ABI_CANARY 0xA5

/* Allocates and fills the world (exits on no memory); abi_world_reset fills every output with
 * ABI_CANARY again. */
void abi_world_make(abi_world *w);
void abi_world_reset(abi_world *w);
void abi_world_free(abi_world *w);
/* Every output buffer of the world: pointer and bytes (n of them; index i < n). */
int abi_world_outputs(abi_world *w, void **at, size_t *bytes, const char **names, int cap);
/* 1 when every byte of the n bytes at p is ABI_CANARY. */
int abi_all_canary(const void *p, size_t n);

#ifdef FA_ABI_GROWN_CLIENT
/* client_unknown.c: each struct with its abi_grown field set, on a library that does not know it:
 * FA_ERR_UNSUPPORTED for exactly the call that reads it, nothing written. Returns the failures. */
int abi_unknown_fields(abi_world *w);
#endif

/* Prints a failure and counts it. */
#define ABI_CHECK(fails, cond, ...)                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            (fails)++;                                                       \
            fprintf(stderr, "abi-client: FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
        }                                                                    \
    } while (0)

#endif
