/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_merge's driver: one item per block of rows of one (batch, head). */
#ifndef FA_MERGE_H
#define FA_MERGE_H

#include "plan/problem.h"
#include "runtime/context.h"

fa_status fa_merge_run(fa_context *ctx, const fa_merge_problem *mp);

#endif
