/* SPDX-License-Identifier: BSD-3-Clause */
/* The fixture of the bad-input tests (test_bad_input.c, test_bad_args.c): a valid forward
 * problem whose arguments each case breaks in one way, and a runner that checks the status and that
 * no byte of any buffer (inputs, out, lse, the bias's buffer, guards) changed. The valid problem
 * uses no score modifier; a case that breaks one turns it on first (bias over its own buffer,
 * alibi_slopes and sinks in the fixture). */
#ifndef FA_TEST_BAD_INPUT_H
#define FA_TEST_BAD_INPUT_H

#include <stdint.h>

#include "util.h"

/* The valid problem; every case breaks exactly one thing in it (unless it says otherwise). */
enum { B = 2, HQ = 4, HKV = 2, NQ = 12, NK = 10, D = 8, DV = 6, MAXD = FA_MAX_HEAD_DIM + 1 };

enum { BI_BUFS = 6 }; /* q, k, v, out, lse, bias */

typedef struct {
    fa_dtype dt;
    size_t e;
    tu_buf buf[BI_BUFS]; /* storage: big enough for any view a case builds */
    fa_tensor q, k, v, out;
    const fa_tensor *qp, *kp, *vp, *outp;
    void *lse;
    fa_params params;
    const fa_params *pp;
    fa_tensor bias; /* a valid [B][HQ][NQ][NK] bias in buffer 5, for params.bias */
    float alibi[HQ], sinks[HQ];
} fixture;

/* Element offset where q's data starts inside its buffer, so views (an aliasing out) may also
 * reach before it without leaving the allocation. */
#define Q_OFFSET 4096

/* Element `elements` of storage buffer `buf` (0 q, 1 k, 2 v, 3 out, 4 lse, 5 bias). */
void *bi_at(fixture *f, int buf, int64_t elements);

typedef struct {
    const char *name;
    fa_status want, also; /* also: a second accepted status (the header allows either), or want */
    void (*mutate)(fixture *f);
} bad_case;

/* clang-format off */
#define CASE(fn, want) {#fn, want, want, fn}
#define CASE2(fn, want, also) {#fn, want, also, fn}
/* clang-format on */

/* Runs every case on both dtypes, with a context of its own and with the NULL context: the status
 * must be the case's, and no byte of any buffer may change. Then checks the context still works.
 * Seeded from the running test's name. */
void bi_run_cases(const bad_case *cases, int n);

#endif
