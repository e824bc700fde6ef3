/* SPDX-License-Identifier: BSD-3-Clause */
/* Argument checking: turns user structs into a validated fa_problem, or names the first problem. */
#ifndef FA_VALIDATE_H
#define FA_VALIDATE_H

#include "flashattn.h"
#include "plan/problem.h"

/* Checks every argument of fa_forward in the documented order (NULL, ARG, DTYPE, SHAPE, STRIDE,
 * ALIAS, UNSUPPORTED) and fills *prob on FA_OK. p is the library's full copy of the caller's
 * parameters (params.h: read, never NULL), which must outlive *prob. Reads only the structs, never
 * tensor data. A refusal sets the thread's diagnostic (fa_last_error), naming `call`, the argument
 * and its values. */
fa_status fa_validate_forward(const char *call, const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                              const fa_tensor *v, const fa_tensor *out, const void *lse, fa_problem *prob);

/* The same for fa_backward: nine tensors and a required lse (an input here); dq, dk and dv are the
 * outputs and may overlap neither the inputs nor each other. */
fa_status fa_validate_backward(const char *call, const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                               const fa_tensor *v, const fa_tensor *out, const fa_tensor *dout,
                               const void *lse, const fa_tensor *dq, const fa_tensor *dk, const fa_tensor *dv,
                               fa_problem *prob);

/* Checks every argument of fa_merge in the documented order (NULL, ARG, DTYPE, SHAPE, STRIDE,
 * ALIAS, UNSUPPORTED) and fills *prob on FA_OK. */
fa_status fa_validate_merge(const char *call, int n, const fa_tensor *outs, const void *const *lses,
                            const fa_tensor *out, const void *lse, fa_merge_problem *prob);

#endif
