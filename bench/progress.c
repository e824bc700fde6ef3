/* SPDX-License-Identifier: BSD-3-Clause */
// Progress lines on stderr, stamped with the seconds since the run started.
#include "progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "dtypes.h"
#include "modifiers.h"
#include "timing.h"

static double started;

void bench_progress_start(void)
{
    started = bench_now();
}

double bench_progress_elapsed(void)
{
    return bench_now() - started;
}

static void vprint(const char *fmt, va_list ap)
{
    // Built whole and written with one fprintf: stderr is unbuffered, so a line written in pieces
    // could interleave with other processes writing to the same log (several ranks of a job).
    char line[512];
    int n = snprintf(line, sizeof line, "fa-bench: [%7.1f s] ", bench_progress_elapsed());
    if (n > 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    fprintf(stderr, "%s\n", line);
}

void bench_progress(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint(fmt, ap);
    va_end(ap);
}

void bench_progress_detail(const char *fmt, ...)
{
    if (!isatty(STDERR_FILENO)) return;
    va_list ap;
    va_start(ap, fmt);
    vprint(fmt, ap);
    va_end(ap);
}

void bench_case_words(const bench_case *c, char *out, size_t size)
{
    const bench_shape *s = &c->shape;
    char heads[48], lengths[64], dims[48];
    if (s->hkv == s->hq)
        snprintf(heads, sizeof heads, "Hq=%lld", (long long)s->hq);
    else
        snprintf(heads, sizeof heads, "Hq=%lld Hkv=%lld", (long long)s->hq, (long long)s->hkv);
    if (s->nk == s->nq)
        snprintf(lengths, sizeof lengths, "Nq=Nk=%lld", (long long)s->nq);
    else
        snprintf(lengths, sizeof lengths, "Nq=%lld Nk=%lld", (long long)s->nq, (long long)s->nk);
    if (s->dv == s->d)
        snprintf(dims, sizeof dims, "D=%lld", (long long)s->d);
    else
        snprintf(dims, sizeof dims, "D=%lld Dv=%lld", (long long)s->d, (long long)s->dv);
    const char *pass = c->pass == BENCH_PASS_BWD      ? "backward"
                       : c->pass == BENCH_PASS_FWDBWD ? "forward+backward"
                                                      : "forward";
    char mods[160];
    bench_mods_words(&s->mods, mods, sizeof mods);
    char types[48];
    bench_dtypes_words(s, types, sizeof types);
    const bench_ragged *r = &s->ragged;
    if (r->kind == BENCH_RAGGED_VARLEN) {
        snprintf(out, size, "forward, %s, varlen %lld:%lld-%lld %s %s, causal %s%s%s", types,
                 (long long)r->count, (long long)r->lo, (long long)r->hi, heads, dims,
                 bench_causal_name(s->causal), s->layout == BENCH_LAYOUT_BHSD ? ", layout bhsd" : "", mods);
        return;
    }
    if (r->kind == BENCH_RAGGED_DECODE) {
        char pages[48] = ", contiguous only";
        if (r->page_size > 0) snprintf(pages, sizeof pages, ", pages of %lld", (long long)r->page_size);
        snprintf(out, size, "forward, %s, decode batch %lld:%lld-%lld %s %s, causal %s%s%s%s", types,
                 (long long)r->count, (long long)r->lo, (long long)r->hi, heads, dims,
                 bench_causal_name(s->causal), pages, s->layout == BENCH_LAYOUT_BHSD ? ", layout bhsd" : "",
                 mods);
        return;
    }
    snprintf(out, size, "%s, %s, B=%lld %s %s %s%s, causal %s%s%s", pass, types, (long long)s->b, heads,
             lengths, dims, s->shared_kv ? " (v in k)" : "", bench_causal_name(s->causal),
             s->layout == BENCH_LAYOUT_BSHD ? ", layout bshd" : "", mods);
}
