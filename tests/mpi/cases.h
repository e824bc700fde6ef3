/* SPDX-License-Identifier: BSD-3-Clause */
/* The groups of cases fa-mpi-tests runs. Every rank runs every case, collectively, in the same
 * order; a case's name selects it with --case. */
#ifndef FA_MPI_TEST_CASES_H
#define FA_MPI_TEST_CASES_H

#include "check.h"
#include "problem.h"

/* One problem, forward then (unless c->no_lse) backward, judged by expect.h's rules. */
void mt_run_case(const mt_env *env, const mt_case *c, fa_dtype dtype);

/* Results against the single-process calls: both layouts, masks, GQA, Dv != D, uneven and empty
 * shards, windows that skip shards, ALiBi, softcap, sinks and dsinks, bias, diagonal_shift,
 * lse NULL, [B][S][H][D] views, an empty sequence; f64, f32, bf16 and f16 each; dropout (f64). */
void mt_run_accuracy(const mt_env *env);

/* A few of them on a communicator that is not MPI_COMM_WORLD (split by parity, ranks reversed). */
void mt_run_accuracy_on_subcomm(const mt_env *env);

/* Bitwise equal outputs on repeated runs, at 1 and 2 threads per rank, and on a duplicate of the
 * communicator (fresh buffers); f64, f32, bf16 and f16, with and without dropout. */
void mt_run_determinism(const mt_env *env);

/* Bad arguments, on one rank or on all: the same refusal on every rank, nothing written, no hang,
 * and the next good call still right. */
void mt_run_refusals(const mt_env *env);

#endif
