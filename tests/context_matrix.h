/* SPDX-License-Identifier: BSD-3-Clause */
/* The contexts of the determinism tests of test_invariance.c, forward and backward.
 * include/flashattn.h promises both passes the same bytes for every thread count, binding mode and
 * repetition, so both directions hold the promise over this one matrix (a change to it applies to
 * both): 1, 2, 3, 4 and 7 threads, each under FA_BIND_NONE, CORE, SPREAD and AUTO. */
#ifndef FA_TEST_CONTEXT_MATRIX_H
#define FA_TEST_CONTEXT_MATRIX_H

#include "flashattn.h"

enum { CM_THREAD_COUNTS = 5, CM_BINDS = 4, CM_CONTEXTS = CM_THREAD_COUNTS * CM_BINDS };

/* Creates ctx[x] (cr_assert on failure) with cm_threads(x) threads, binding cm_bind(x) and the
 * given blocks (0: automatic). ctx[0] is 1 thread under FA_BIND_NONE, the one the others are
 * compared with. */
void cm_create(fa_context *ctx[CM_CONTEXTS], int block_q, int block_k);
void cm_destroy(fa_context *ctx[CM_CONTEXTS]);
int cm_threads(int x);
fa_bind cm_bind(int x);

#endif
