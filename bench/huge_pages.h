/* SPDX-License-Identifier: BSD-3-Clause */
/* fa-bench --huge-pages: the run's large buffers (K and V caches and page pools, q, out, the read
 * probe's array) on 2 MiB boundaries with madvise(MADV_HUGEPAGE), so that the kernel may back them
 * with transparent huge pages where its mode allows it (`madvise` or `always`; `never` does not).
 * Over 4 KiB pages a decode takes a TLB miss at every page of a cache's rows, and over a pool of
 * small pages at almost every key. Off unless asked, so that runs compare with earlier ones. */
#ifndef FA_BENCH_HUGE_PAGES_H
#define FA_BENCH_HUGE_PAGES_H

#include <stddef.h>

#define BENCH_HUGE_PAGE ((size_t)2 << 20)

/* From now on, buffers of BENCH_HUGE_PAGE bytes and more are asked for in huge pages. */
void bench_huge_pages_ask(void);
int bench_huge_pages_asked(void);

/* `bytes` (> 0) aligned to `align` (a power of two), or, once huge pages are asked for and bytes is
 * BENCH_HUGE_PAGE or more, to BENCH_HUGE_PAGE and advised; free() releases it. NULL when out of
 * memory. */
void *bench_alloc_buffer(size_t bytes, size_t align);

/* The kernel's transparent-huge-page mode: "always", "madvise", "never", or "unknown". */
const char *bench_thp_mode(void);

#endif
