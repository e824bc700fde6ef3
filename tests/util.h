/* SPDX-License-Identifier: BSD-3-Clause */
/* Test helpers: seeded random problems in every layout, guarded buffers, error measures against
 * the oracle (tests/kit/reference.c), canaries, and an allocation counter.
 * Nothing here judges the library by itself: every expectation comes from the oracle or from an
 * exact invariant stated by include/flashattn.h. */
#ifndef FA_TEST_UTIL_H
#define FA_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h" /* the kit's element access: kit_tensor_load, kit_tensor_store */
#include "fill.h"
#include "flashattn.h"
#include "tensors.h" /* the kit's problem builder and guarded blocks (kit_buf) */

/* ---- seeds and random numbers ---------------------------------------------------------- */

/* The running test's name, "suite/name" as --filter takes it, from Criterion's
 * criterion_current_suite and criterion_current_test (tests/shim's runner sets the same), so a
 * test never spells its own name a second time. */
const char *tu_test_name(void);

/* The seed of the running test: tu_seed(tu_test_name()). */
uint64_t tu_test_seed(void);

/* The seed of one part of the running test (a dtype, a case) that draws its own stream:
 * tu_seed("suite/name.part"). */
uint64_t tu_test_part_seed(const char *part);

/* The seed of a named stream: FA_TEST_SEED (if set) or a fixed base, mixed with the name, and
 * printed to stderr so a failure can be replayed with the same inputs. */
uint64_t tu_seed(const char *name);

typedef struct {
    uint64_t state;
} tu_rng;

tu_rng tu_rng_make(uint64_t seed);
uint64_t tu_rng_next(tu_rng *r);
/* Uniform in [lo, hi). */
double tu_rng_uniform(tu_rng *r, double lo, double hi);
/* Uniform integer in [0, n). */
int64_t tu_rng_below(tu_rng *r, int64_t n);

size_t tu_dtype_size(fa_dtype t);

/* The float k steps of one unit in the last place from `from`, within its sign: its bits + k (for a
 * negative float, k > 0 goes down). */
float tu_float_step(float from, int64_t k);
/* tu_float_step for double. */
double tu_double_step(double from, int64_t k);

/* A context of `threads` threads (0: automatic) and these block sizes (0: automatic); asserts it was
 * created, naming fa_last_error(). */
fa_context *tu_context(int threads, int block_q, int block_k);

/* ---- problems --------------------------------------------------------------------------- */

typedef enum {
    TU_BHSD = 0,  /* q, k, v, out contiguous [B][H][S][D] */
    TU_BSHD = 1,  /* q, k, v, out contiguous [B][S][H][D] */
    TU_PACKED = 2 /* q, k, v strided slices of one packed [B][S][Hq·D + Hkv·D + Hkv·Dv] buffer;
                      out [B][S][H][Dv] with padding between heads, rows and batches */
} tu_layout;

typedef struct {
    fa_dtype dtype;
    int64_t batch, q_heads, kv_heads, q_len, kv_len, dim, dim_v;
    tu_layout layout;
} tu_shape;

/* The kit's problem (kit/tensors.h) under the suites' description, which adds TU_PACKED. */
typedef struct {
    tu_shape shape;
    fa_tensor q, k, v, out;
    void *lse;     /* contiguous [B][Hq][Nq] of float (f32) or double (f64) */
    kit_buf in[3]; /* q, k, v storage (only in[0] used by TU_PACKED) */
    kit_buf out_buf, lse_buf;
} tu_problem;

/* Allocates and fills q, k, v from rng's sequence (kit_suite_opts: q, k uniform in
 * [-qk_amp, qk_amp), v in [-1, 1)); fills out and lse (and all padding and guards) with KIT_CANARY. */
void tu_problem_make(tu_problem *pr, const tu_shape *s, tu_rng *rng, double qk_amp);
void tu_problem_free(tu_problem *pr);
/* Refills out and lse (whole blocks) with KIT_CANARY. */
void tu_problem_fill_canary(tu_problem *pr);
/* 1 when every byte of out and lse storage that is not an element of the out view / lse is
 * still KIT_CANARY (padding and guards), i.e. the call wrote only what it defines. */
int tu_problem_only_defined_written(const tu_problem *pr);
/* Number of rows B·Hq·Nq. */
int64_t tu_problem_rows(const tu_problem *pr);

/* lse element `row` (flat index (b·Hq + h)·Nq + i) as a double. */
double tu_lse_get(const tu_problem *pr, int64_t row);

/* Copies the bytes of out (as double, [rows][Dv]) and lse ([rows]) into fresh arrays. */
double *tu_out_copy(const tu_problem *pr);
double *tu_lse_copy(const tu_problem *pr);

/* 1 when the out views (element by element, bitwise) and the lse arrays of two problems of the
 * same shape hold identical bytes. On difference writes the first differing flat index. */
int tu_outputs_bitwise_equal(const tu_problem *a, const tu_problem *b, int64_t *where);

/* ---- oracle comparison ------------------------------------------------------------------ */

/* Rows to compare: all of them, or a deterministic sample (first and last rows of every head,
 * rows around the causal diagonal, and evenly spaced rows) bounded by `budget` element-products
 * of oracle work. Returns the count; *rows is malloc'ed flat row indices. */
int64_t tu_pick_rows(const tu_problem *pr, const fa_params *p, int64_t budget, int64_t **rows);

typedef struct {
    double max_err;    /* max |lib - ref| over compared finite reference values */
    double max_ref;    /* max |ref| over the same */
    int64_t worst_row; /* flat row of max_err (-1 if none) */
    int64_t worst_col; /* column (out) of max_err */
    double worst_lib, worst_ref;
    int64_t mismatches; /* non-finite disagreements: ref is -inf/NaN and lib is not the same, or
                           lib is non-finite where ref is finite */
    int64_t first_mismatch_row, first_mismatch_col;
} tu_err;

/* Reference results for the picked rows: out [n][Dv] and lse [n], in double. */
typedef struct {
    int64_t n, dim_v;
    int64_t *rows;
    double *out, *lse;
} tu_ref;

/* The f64 oracle (ref_forward_row) on the picked rows. */
void tu_ref_compute(tu_ref *r, const tu_problem *pr, const fa_params *p, const int64_t *rows, int64_t n);
/* The naive f32 implementation (ref_forward_row_naive_f32) on the picked rows. */
void tu_ref_compute_naive_f32(tu_ref *r, const tu_problem *pr, const fa_params *p, const int64_t *rows,
                              int64_t n);
void tu_ref_free(tu_ref *r);

/* Library (pr's out view and lse) against a reference, on the reference's rows. */
tu_err tu_compare_out(const tu_problem *pr, const tu_ref *r);
tu_err tu_compare_lse(const tu_problem *pr, const tu_ref *r);
/* A reference against another reference (same rows). */
tu_err tu_compare_ref_out(const tu_ref *x, const tu_ref *r);
tu_err tu_compare_ref_lse(const tu_ref *x, const tu_ref *r);

/* The suite's accuracy rule, for either dtype:
 *   f64: max_err <= rel_tol · max_ref (out), same for the finite lse; non-finite must match.
 *   f32: max_err(lib) <= 2 · max_err(naive f32) + 1e-6 (both against the f64 oracle).
 * Returns 1 when it holds; otherwise writes a one-line explanation into msg. */
int tu_check_accuracy(const tu_problem *pr, const fa_params *p, const int64_t *rows, int64_t n,
                      double rel_tol, char *msg, size_t msg_size);

/* tu_check_accuracy on the rows tu_pick_rows picks within `budget`. */
int tu_check_picked_accuracy(const tu_problem *pr, const fa_params *p, int64_t budget, double rel_tol,
                             char *msg, size_t msg_size);

/* 1 when e has no non-finite mismatch and max_err <= limit; otherwise explains in msg. */
int tu_check_err(const char *what, tu_err e, double limit, char *msg, size_t msg_size);

/* A short description of a shape, for messages. */
void tu_shape_str(const tu_shape *s, const fa_params *p, char *buf, size_t size);

/* ---- allocation counting (link-time --wrap of malloc & co.) ------------------------------ */

typedef struct {
    long allocs; /* malloc, calloc, realloc, aligned_alloc, posix_memalign calls */
    long frees;  /* free calls with a non-NULL pointer */
} tu_alloc_count;

/* Counts made so far by code linked into fa-tests (the tests and the static library). */
tu_alloc_count tu_alloc_count_now(void);
/* Failure injection for the same wrapped calls: from now on, allocation number nth (1-based)
 * fails (returns NULL / ENOMEM), and with sticky every later one too. nth = 0 disarms. Arm it only
 * around a library call: the test's own allocations would fail too. */
void tu_alloc_fail(long nth, int sticky);
/* Failures injected since the last tu_alloc_fail. */
long tu_alloc_failures_injected(void);

/* 1 when the wrappers are linked in (fa-tests built with -Wl,--wrap=...). */
int tu_alloc_counting_active(void);

#endif
