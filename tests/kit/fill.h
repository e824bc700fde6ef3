/* SPDX-License-Identifier: BSD-3-Clause */
/* Test inputs drawn from the kit's RNG (rng.h): uniform values through a view. */
#ifndef FA_KIT_FILL_H
#define FA_KIT_FILL_H

#include <stdint.h>

#include "flashattn.h"

/* Every element of t, in (b, h, s, d) order whatever its strides, uniform in [lo, hi) from the
 * sequence whose state is *state (kit_splitmix64; advanced by one draw per element), stored as
 * kit_tensor_store rounds to t's dtype. */
void kit_fill_uniform(const fa_tensor *t, uint64_t *state, double lo, double hi);

#endif
