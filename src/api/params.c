/* SPDX-License-Identifier: BSD-3-Clause */
/* The public structs' defaults. */
#include <string.h>

#include "flashattn.h"

fa_params fa_params_default(void)
{
    fa_params p;
    memset(&p, 0, sizeof p); /* every field added later starts at 0/NULL: off */
    p.scale = 0.0;
    p.causal = FA_CAUSAL_NONE;
    p.window_left = p.window_right = -1;
    return p;
}
