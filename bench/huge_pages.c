/* SPDX-License-Identifier: BSD-3-Clause */
/* Large buffers in transparent huge pages when asked (huge_pages.h). */
#include "huge_pages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int asked;

void bench_huge_pages_ask(void)
{
    asked = 1;
}

int bench_huge_pages_asked(void)
{
    return asked;
}

void *bench_alloc_buffer(size_t bytes, size_t align)
{
    if (asked && bytes >= BENCH_HUGE_PAGE) align = BENCH_HUGE_PAGE;
    size_t rounded = (bytes + align - 1) / align * align; /* aligned_alloc wants a multiple */
    void *p = aligned_alloc(align, rounded);
    /* advice only: where the kernel's mode refuses, the buffer stays in small pages */
    if (p && align == BENCH_HUGE_PAGE) (void)madvise(p, rounded, MADV_HUGEPAGE);
    return p;
}

const char *bench_thp_mode(void)
{
    static const char *const modes[] = {"always", "madvise", "never"};
    char line[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return "unknown";
    const int got_line = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    for (size_t i = 0; got_line && i < sizeof modes / sizeof *modes; i++) { /* the mode in brackets */
        char bracketed[16];
        snprintf(bracketed, sizeof bracketed, "[%s]", modes[i]);
        if (strstr(line, bracketed)) return modes[i];
    }
    return "unknown";
}
