/* SPDX-License-Identifier: BSD-3-Clause */
#include "fill.h"

#include "dtype.h"
#include "rng.h"

void kit_fill_uniform(const fa_tensor *t, uint64_t *state, double lo, double hi)
{
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t s = 0; s < t->seq; s++)
                for (int64_t d = 0; d < t->dim; d++)
                    kit_tensor_store(t, b, h, s, d,
                                     lo + (hi - lo) * kit_unit_from_bits(kit_splitmix64(state)));
}
