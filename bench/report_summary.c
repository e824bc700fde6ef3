/* SPDX-License-Identifier: BSD-3-Clause */
// The lines after a run's last case: what reads across its cases.
#include <math.h>

#include "dtypes.h"
#include "progress.h"
#include "report.h"

static void print_figure(FILE *f, double x, int width, int precision)
{
    if (isfinite(x))
        fprintf(f, "%*.*f", width, precision, x);
    else
        fprintf(f, "%*s", width, "-");
}

// The decode batches of a run of two or more (the decode-batch and decode-kv presets), side by side.
static void decode_summary(FILE *f, const bench_case_result *cases, int n)
{
    int decode = 0;
    for (int c = 0; c < n; c++) decode += cases[c].info.shape.ragged.kind == BENCH_RAGGED_DECODE;
    if (decode < 2) return;
    fprintf(f,
            "\nDecode batches of this run (KV GB/s as %% of the read probe, contiguous / paged; p/c = paged "
            "min time / contiguous; page = paged KV GB/s as %% of the page probe):\n");
    for (int c = 0; c < n; c++) {
        const bench_shape *s = &cases[c].info.shape;
        if (s->ragged.kind != BENCH_RAGGED_DECODE) continue;
        char pages[32] = "contiguous only";
        if (s->ragged.page_size > 0)
            snprintf(pages, sizeof pages, "pages of %lld", (long long)s->ragged.page_size);
        fprintf(f, "  case %2d, %-6s %-15s:", c + 1, bench_dtype_name(s->kv_dtype), pages);
        for (int r = 0; r < cases[c].n_rows; r++) {
            const bench_row *w = &cases[c].rows[r];
            fprintf(f, "%s threads %d: ", r ? ";" : "", w->threads);
            if (s->ragged.page_size > 0) {
                print_figure(f, w->ragged.contiguous_pct_read_bw, 6, 1);
                fputs("% /", f);
                print_figure(f, w->pct_read_bw, 6, 1);
                fputs("%, p/c", f);
                print_figure(f, w->ragged.paged_over_contiguous, 7, 3);
                fputs(", page", f);
                print_figure(f, w->ragged.pct_page_read_bw, 6, 1);
                fputs("%", f);
            } else {
                print_figure(f, w->pct_read_bw, 6, 1);
                fputs("%", f);
            }
        }
        fputc('\n', f);
    }
}

// Each case that has a reference against it, one line each.
static void references_summary(FILE *f, const bench_case_result *cases, int n)
{
    int any = 0;
    for (int c = 0; c < n; c++) any |= cases[c].info.reference >= 0;
    if (!any) return;
    const int rounds = cases[0].info.opt->rounds > 1;
    fprintf(f, "\nAgainst the reference cases (GFLOP/s on visible pairs, both measured in this run%s):\n",
            rounds ? ", each in its fastest round; in brackets the lowest and highest ratio within one round"
                   : "");
    for (int c = 0; c < n; c++) {
        const bench_run_info *info = &cases[c].info;
        if (info->reference < 0) continue;
        char words[320];
        bench_case words_of = {info->shape, info->pass, info->reference};
        bench_case_words(&words_of, words, sizeof words);
        fprintf(f, "  case %d vs case %d (%s):", c + 1, info->reference + 1, words);
        for (int r = 0; r < cases[c].n_rows; r++) {
            const bench_row *w = &cases[c].rows[r];
            fprintf(f, "%s threads %d: %.1f / %.1f = %.1f%%", r ? ";" : "", w->threads, w->gflops,
                    w->reference_gflops, w->pct_of_reference);
            if (rounds) fprintf(f, " (rounds %.1f-%.1f%%)", w->pct_of_reference_lo, w->pct_of_reference_hi);
        }
        fputc('\n', f);
    }
}

// How many rows of the run were disturbed, once more at its end (each is named under its table).
static void disturbed_summary(FILE *f, const bench_case_result *cases, int n)
{
    int rows = 0, disturbed = 0;
    for (int c = 0; c < n; c++)
        for (int r = 0; r < cases[c].n_rows; r++) {
            rows++;
            disturbed += bench_row_disturbed(&cases[c].rows[r], NULL, NULL, NULL);
        }
    if (disturbed)
        fprintf(
            f,
            "\ndisturbed: %d of the %d rows of this run (median over %.2fx min, or an in-run probe's median "
            "over %.2fx its best; under their tables) -- speedups from this run are not reliable\n",
            disturbed, rows, BENCH_DISTURBED_RATIO, BENCH_DISTURBED_RATIO);
}

void bench_report_summary(FILE *f, const bench_case_result *cases, int n)
{
    decode_summary(f, cases, n);
    references_summary(f, cases, n);
    disturbed_summary(f, cases, n);
}
