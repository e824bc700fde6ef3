/* SPDX-License-Identifier: BSD-3-Clause */
// Which element types fa-bench pairs and how it names them.
#include "dtypes.h"

#include <stdio.h>

double bench_kv_row_bytes(fa_dtype t, int64_t n)
{
    return (double)n * (double)kit_dtype_size(t) + (kit_dtype_is_quantized(t) ? (double)sizeof(float) : 0.0);
}

int bench_dtype_pair_ok(fa_dtype q, fa_dtype k)
{
    if (kit_dtype_is_quantized(q)) return 0;
    return q == k || (q == FA_F32 && (kit_dtype_is_half(k) || kit_dtype_is_quantized(k)));
}

void bench_dtypes_words(const bench_shape *s, char *out, size_t size)
{
    if (s->kv_dtype == s->dtype)
        snprintf(out, size, "%s", bench_dtype_name(s->dtype));
    else if (kit_dtype_is_quantized(s->kv_dtype))
        snprintf(out, size, "%s, k/v %s + row scales", bench_dtype_name(s->dtype),
                 bench_dtype_name(s->kv_dtype));
    else
        snprintf(out, size, "%s, k/v %s", bench_dtype_name(s->dtype), bench_dtype_name(s->kv_dtype));
}
