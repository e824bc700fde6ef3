/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the hostile-runtime tests (test_stress.c, test_nested.c, test_fork.c, test_oom.c):
 * a fixed set of small problems that reach every path a runtime can disturb (f32 and f64, every
 * causal mode, grouped- and multi-query heads, every layout, and decode shapes that take the
 * split-KV path), a serial run of each that the oracle vouches for, and byte-exact comparison of
 * everything a forward + backward step writes. Plus child processes under a deadline.
 *
 * The expectation of every hostile run is the serial run's bytes: include/flashattn.h promises
 * identical bytes for every thread count, binding and repetition, so one differing byte is a bug. */
#ifndef FA_TEST_RUNTIME_UTIL_H
#define FA_TEST_RUNTIME_UTIL_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "flashattn.h"
#include "util.h"
#include "util_backward.h"

typedef struct {
    const char *name;
    tu_shape shape;
    fa_causal causal;
    int split_kv; /* 1: a decode shape whose forward must take the split-KV path */
} rt_case;

enum { RT_CASES = 5 };
extern const rt_case rt_cases[RT_CASES];

/* One case's buffers: inputs from `seed` (the same seed gives the same inputs), outputs and
 * gradients filled with KIT_CANARY. */
typedef struct {
    const rt_case *c;
    fa_params p;
    tub_problem bp;
} rt_run;

void rt_make(rt_run *r, const rt_case *c, uint64_t seed);
void rt_free(rt_run *r);

/* Fills out, lse and the gradients (whole blocks) with KIT_CANARY. */
void rt_fill_canary(rt_run *r);

/* One training step: canary-fills every output block, then fa_forward into out and lse and
 * fa_backward into dq, dk, dv. Returns the first status that is not FA_OK. */
fa_status rt_step(fa_context *ctx, rt_run *r);

/* Bytes of all output storage (out, lse, dq, dk, dv: whole blocks, guards and gaps included). */
size_t rt_output_bytes(const rt_run *r);
/* Copies that storage to dst (rt_output_bytes(r) bytes). */
void rt_output_copy(const rt_run *r, unsigned char *dst);
/* 1 when two runs of one case hold identical output storage, byte for byte (so the same
 * defined values and untouched gaps and guards). */
int rt_outputs_equal(const rt_run *a, const rt_run *b);
/* The same against bytes saved by rt_output_copy. */
int rt_outputs_equal_bytes(const rt_run *a, const unsigned char *saved);

/* The serial run every hostile run must reproduce: rt_step on a fresh one-thread, unbound
 * context; then the oracle checks it (forward: tu_check_accuracy, backward: tub_check_accuracy;
 * f64 relative 1e-12 / 1e-11, f32 against the naive f32 error) and, for a split_kv case, that
 * the forward did take the split-KV path (it grows the context's row buffer; no other forward
 * does). Returns 1 when all hold, otherwise 0 with the reason in msg. with_oracle = 0 skips the
 * oracle (for repeated calls in children). */
int rt_serial(rt_run *r, int with_oracle, char *msg, size_t msg_size);

/* ---- hangs ------------------------------------------------------------------------------------ */

/* Guards the running test against a hang: if it is still running `seconds` from now, a line naming
 * it (tu_test_name) goes to stderr and the process dies of SIGALRM, which Criterion reports as a
 * crash of that test. (Not Criterion's .timeout: with --jobs > 1 its runner leaks a 48-byte timeout
 * request that LeakSanitizer then reports, failing the ASan stage.) Forked children do not inherit
 * it. */
void rt_watchdog(unsigned seconds);

/* ---- processes ------------------------------------------------------------------------------ */

/* Waits for `pid` at most timeout_s seconds; on expiry kills it (SIGKILL), reaps it and returns
 * -1. Otherwise returns 0 with the wait status in *status. */
int rt_wait_deadline(pid_t pid, double timeout_s, int *status);

/* Runs the running test again (--filter=tu_test_name()), in a fresh process of this executable
 * with `assignment` ("NAME=VALUE") added to the environment, and waits at most timeout_s.
 * The runner's sandbox variables (BXFI_*) are dropped so the child is a runner of its own.
 * Returns its exit status (0: the test passed), -1 on timeout, -2 if it could not start. */
int rt_rerun_self(const char *assignment, double timeout_s);

/* Sets the affinity of every thread of this process to *mask (as `taskset -a -p` would); 0 on
 * success. */
int rt_narrow_process(const cpu_set_t *mask);

/* Threads of this process now (from /proc/self/task); -1 when unknown. */
int rt_process_threads(void);

/* A watcher thread that samples rt_process_threads() until stopped; stop returns the largest
 * count seen, not counting the watcher itself. Sampling can miss short-lived threads: for reports,
 * never for assertions. */
typedef struct rt_thread_watch rt_thread_watch;
rt_thread_watch *rt_thread_watch_start(void);
int rt_thread_watch_stop(rt_thread_watch *w);

#endif
