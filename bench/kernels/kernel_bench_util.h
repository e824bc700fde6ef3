/* SPDX-License-Identifier: BSD-3-Clause */
/* What both of fa-kernel-bench's modes (kernel_bench.c, decode_kernels.c) need beside the
 * kernels: operand memory, and the head dims of --d. */
#ifndef FA_BENCH_KERNEL_BENCH_UTIL_H
#define FA_BENCH_KERNEL_BENCH_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flashattn.h"

#define KERNEL_BENCH_MAX_DIMS 16 /* head dims one --d list may name */

/* `bytes` of zeroed memory at a 64-byte boundary, with 64 zeroed bytes past them: a kernel's
 * vector load over a row's padded end stays inside, as it does in the driver's scratch. NULL when
 * out of memory; free() releases it. */
static inline void *kernel_bench_zeroed(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes + 64) != 0) return NULL;
    memset(p, 0, bytes + 64);
    return p;
}

/* Parses a comma list of head dims ("64,128") into dims[0..KERNEL_BENCH_MAX_DIMS). Returns how
 * many, or -1 when an entry is not a head dim of 1..FA_MAX_HEAD_DIM or there are too many. */
static inline int kernel_bench_parse_dims(const char *list, int64_t dims[KERNEL_BENCH_MAX_DIMS])
{
    int n = 0;
    for (const char *d = list;;) {
        char *end = NULL;
        const long long dim = strtoll(d, &end, 10);
        if (end == d || dim < 1 || dim > FA_MAX_HEAD_DIM || n == KERNEL_BENCH_MAX_DIMS) return -1;
        dims[n++] = dim;
        if (*end == '\0') return n;
        if (*end != ',') return -1;
        d = end + 1;
    }
}

#endif
