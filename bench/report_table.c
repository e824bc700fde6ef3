/* SPDX-License-Identifier: BSD-3-Clause */
// The table of every case, dense or ragged: fixed-width columns so that several runs compare by eye.
// One list of columns for every kind; a column is printed when some row has its figure, so each table
// shows what was measured (the CSV and JSON, export.c, keep every column).
#include <math.h>
#include <string.h>

#include "dtypes.h"
#include "report.h"
#include "varlen.h"

// X(id, title, width, precision, conversion, always, value); in scope: w (const bench_row *). Printed in
// this order after threads, bind, bound, block q/k, isa and (with gradients) plan. always: shown even
// when no row has the figure ("-" in each), else only when one has. A ragged row's own call is (a) the
// packed one or the paged one (the contiguous one without pages): min ms, GFLOP/s, KV GB/s are its;
// (b), (c) and contig are the calls it is compared with; its min ms column is titled by kind (own_call).
#define TABLE_COLUMNS(X)                                                                             \
    X(MIN_MS, "min ms", 10, 3, 'f', 1, 1e3 * w->timing.min_s)                                        \
    X(MEDIAN_MS, "median ms", 10, 3, 'f', 1, 1e3 * w->timing.median_s)                               \
    X(GFLOPS, "GFLOP/s", 9, 2, 'f', 1, w->gflops)                                                    \
    X(PEAK, "peak GF/s", 9, 1, 'f', 0, w->peak_gflops)                                               \
    X(PCT_PEAK, "% peak", 6, 1, 'f', 0, w->pct_peak)                                                 \
    X(REF, "ref GF/s", 8, 2, 'f', 0, w->reference_gflops)                                            \
    X(PCT_REF, "% ref", 6, 1, 'f', 0, w->pct_of_reference)                                           \
    X(EQUAL_MS, "(b) ms", 10, 3, 'f', 0, 1e3 * w->ragged.equal.min_s)                                \
    X(EQUAL_GFLOPS, "GFLOP/s", 9, 2, 'f', 0, w->ragged.equal_gflops)                                 \
    X(LOOP_MS, "(c) ms", 10, 3, 'f', 0, 1e3 * w->ragged.loop.min_s)                                  \
    X(LOOP_GFLOPS, "GFLOP/s", 9, 2, 'f', 0, w->ragged.loop_gflops)                                   \
    X(VS_EQUAL, "a/b", 7, 3, 'f', 0, w->ragged.vs_equal)                                             \
    X(VS_LOOP, "a/c", 7, 3, 'f', 0, w->ragged.vs_loop)                                               \
    X(SPEEDUP, "speedup", 7, 2, 'f', 1, w->speedup)                                                  \
    X(EFF, "eff %", 6, 1, 'f', 1, 100.0 * w->efficiency)                                             \
    X(KV, "KV GB/s", 8, 2, 'f', 0, w->kv_gbps)                                                       \
    X(BIAS, "bias GB/s", 9, 2, 'f', 0, w->bias_gbps)                                                 \
    X(READ, "read GB/s", 9, 2, 'f', 0, w->read_gbps)                                                 \
    X(PCT_BW, "% bw", 6, 1, 'f', 0, w->pct_read_bw)                                                  \
    X(PCT_BIAS_BW, "% bias bw", 9, 1, 'f', 0, w->pct_bias_bw)                                        \
    X(CONTIG_MS, "contig ms", 10, 3, 'f', 0, 1e3 * w->ragged.contiguous.min_s)                       \
    X(CONTIG_KV, "KV GB/s", 8, 2, 'f', 0, w->ragged.contiguous_kv_gbps)                              \
    X(CONTIG_PCT_BW, "% bw", 6, 1, 'f', 0, w->ragged.contiguous_pct_read_bw)                         \
    X(P_OVER_C, "p/c", 7, 3, 'f', 0, w->ragged.paged_over_contiguous)                                \
    X(PAGE_READ, "page GB/s", 9, 2, 'f', 0, w->ragged.page_read_gbps)                                \
    X(PCT_PAGE_BW, "% page", 6, 1, 'f', 0, w->ragged.pct_page_read_bw)                               \
    X(BLAS, "BLAS GF/s", 9, 2, 'f', 0, w->blas_gflops)                                               \
    X(X_BLAS, "x BLAS", 7, 2, 'f', 0, w->speedup_vs_blas)                                            \
    X(BLAS_MODE, "blas", 4, 0, 's', 0, w->blas_mode == BENCH_BLAS_BEST ? NAN : (double)w->blas_mode) \
    X(SCRATCH, "scratch KiB", 11, 1, 'f', 1, (double)w->stats.scratch_peak / 1024.0)                 \
    X(ERR_OUT, "err out", 9, 2, 'e', 1, w->err_out)                                                  \
    X(ERR_LSE, "err lse", 9, 2, 'e', 1, w->err_lse)                                                  \
    X(ERR_DQ, "err dq", 9, 2, 'e', 0, w->err_dq)                                                     \
    X(ERR_DK, "err dk", 9, 2, 'e', 0, w->err_dk)                                                     \
    X(ERR_DV, "err dv", 9, 2, 'e', 0, w->err_dv)                                                     \
    X(ERR_DSINKS, "err dsinks", 10, 2, 'e', 0, w->err_dsinks)

typedef struct {
    const char *title;
    int width, precision;
    char conversion; // 'f', 'e', or 's': the value is a bench_blas_mode, printed as its word
    int always;
} column;

#define COLUMN(id, title, width, precision, conversion, always, value) \
    {title, width, precision, conversion, always},
#define VALUE(id, title, width, precision, conversion, always, value) value,
#define ID(id, title, width, precision, conversion, always, value)    COL_##id,

enum { TABLE_COLUMNS(ID) N_COLUMNS };

static const column columns[N_COLUMNS] = {TABLE_COLUMNS(COLUMN)};

static void row_values(const bench_row *w, double v[N_COLUMNS])
{
    const double values[] = {TABLE_COLUMNS(VALUE)};
    memcpy(v, values, sizeof values);
}

// "-" where a figure does not exist in a shown column (no 1-thread row to compare with).
static void print_value(FILE *f, const column *c, double x)
{
    if (!isfinite(x))
        fprintf(f, " %*s", c->width, "-");
    else if (c->conversion == 's')
        fprintf(f, " %*s", c->width, (bench_blas_mode)x == BENCH_BLAS_GEMM_THREADS ? "gemm" : "rows");
    else if (c->conversion == 'e')
        fprintf(f, " %*.*e", c->width, c->precision, x);
    else
        fprintf(f, " %*.*f", c->width, c->precision, x);
}

#define UNRELIABLE "speedups from this run are not reliable"

// One line per disturbed row.
static void report_disturbed(FILE *f, const bench_run_info *info, const bench_row *rows, int n)
{
    int cpus = info->identity ? info->identity->allowed_cpus : 0;
    for (int r = 0; r < n; r++) {
        double ratio, spread;
        const char *which;
        if (!bench_row_disturbed(&rows[r], &ratio, &which, &spread)) continue;
        fprintf(f, "disturbed: %d thread%s: ", rows[r].threads, rows[r].threads == 1 ? "" : "s");
        int calls = ratio > BENCH_DISTURBED_RATIO, probe = spread > BENCH_DISTURBED_RATIO;
        if (calls)
            fprintf(f, "median %.2fx min%s%s%s", ratio, which[0] ? " (" : "", which, which[0] ? ")" : "");
        if (probe) fprintf(f, "%sthe in-run probe's median %.2fx its best", calls ? ", " : "", spread);
        if (cpus > 0 && rows[r].threads > cpus)
            fprintf(f, " -- more threads than the %d CPUs allowed; " UNRELIABLE "\n", cpus);
        else
            fprintf(f, " -- the machine was busy; " UNRELIABLE "\n");
    }
}

static const char *verdict(int met)
{
    return met ? "met" : "NOT met";
}

static void varlen_targets(FILE *f, const bench_row *rows, int n)
{
    fprintf(f, "targets, GFLOP/s on real tokens, each call's fastest round of this run:\n");
    fprintf(f, "  varlen / dense over equal lengths >= %.2f:", BENCH_TARGET_VARLEN_VS_EQUAL);
    for (int r = 0; r < n; r++)
        fprintf(f, "%s threads %d: %.3f %s", r ? ";" : "", rows[r].threads, rows[r].ragged.vs_equal,
                verdict(rows[r].ragged.vs_equal >= BENCH_TARGET_VARLEN_VS_EQUAL));
    fprintf(f, "\n  varlen / per-sequence loop >= %.2f at %d threads:", BENCH_TARGET_VARLEN_VS_LOOP,
            BENCH_TARGET_LOOP_THREADS);
    int found = 0;
    for (int r = 0; r < n && !found; r++) {
        if (rows[r].threads != BENCH_TARGET_LOOP_THREADS) continue;
        fprintf(f, " %.3f %s", rows[r].ragged.vs_loop,
                verdict(rows[r].ragged.vs_loop >= BENCH_TARGET_VARLEN_VS_LOOP));
        found = 1;
    }
    if (!found) fprintf(f, " not measured (no %d-thread row)", BENCH_TARGET_LOOP_THREADS);
    int others = 0;
    for (int r = 0; r < n; r++)
        if (rows[r].threads != BENCH_TARGET_LOOP_THREADS)
            fprintf(f, "%s threads %d: %.3f", others++ ? "," : " (elsewhere:", rows[r].threads,
                    rows[r].ragged.vs_loop);
    fprintf(f, "%s\n", others ? ")" : "");
}

static void decode_targets(FILE *f, const bench_run_info *info, const bench_row *rows, int n)
{
    int paged = info->shape.ragged.page_size > 0;
    fprintf(f,
            "targets, this run:\n  %s KV GB/s >= %.0f%% of the read probe:", paged ? "paged" : "contiguous",
            BENCH_TARGET_DECODE_PCT_BW);
    for (int r = 0; r < n; r++) {
        fprintf(f, "%s threads %d: ", r ? ";" : "", rows[r].threads);
        if (isfinite(rows[r].pct_read_bw))
            fprintf(f, "%.1f%% %s", rows[r].pct_read_bw,
                    verdict(rows[r].pct_read_bw >= BENCH_TARGET_DECODE_PCT_BW));
        else
            fprintf(f, "no probe (--probe-time 0)");
    }
    fprintf(f, "\n  paged time <= %.2f x contiguous:", BENCH_TARGET_PAGED_OVER_CONTIGUOUS);
    if (!paged) fprintf(f, " not measured (--page-size 0)");
    for (int r = 0; r < n && paged; r++)
        fprintf(f, "%s threads %d: %.3f %s", r ? ";" : "", rows[r].threads,
                rows[r].ragged.paged_over_contiguous,
                verdict(rows[r].ragged.paged_over_contiguous <= BENCH_TARGET_PAGED_OVER_CONTIGUOUS));
    fputc('\n', f);
    int probed = 0;
    for (int r = 0; r < n && paged; r++) probed |= isfinite(rows[r].ragged.page_read_gbps);
    if (!probed) return;
    fprintf(f, "  memory alone, the page probe's time / the read probe's for the same bytes:");
    for (int r = 0; r < n; r++)
        fprintf(f, "%s threads %d: %.3f", r ? ";" : "", rows[r].threads,
                rows[r].read_gbps / rows[r].ragged.page_read_gbps);
    fputc('\n', f);
}

// The title of the row's own call's min time: which call it is, for a ragged batch.
static const char *own_call(const bench_run_info *info)
{
    if (info->shape.ragged.kind == BENCH_RAGGED_VARLEN) return "(a) ms";
    if (info->shape.ragged.kind == BENCH_RAGGED_DECODE)
        return info->shape.ragged.page_size > 0 ? "paged ms" : "contig ms";
    return columns[COL_MIN_MS].title;
}

// Which outputs the table promises bitwise across thread counts and repetitions.
static const char *held_outputs(const bench_run_info *info)
{
    if (info->shape.ragged.kind == BENCH_RAGGED_VARLEN) return "(a)'s and (b)'s out and lse";
    if (info->shape.ragged.kind == BENCH_RAGGED_DECODE) return "the contiguous call's out and lse";
    if (info->pass == BENCH_PASS_FWD) return "out and lse";
    return info->shape.mods.sinks ? "out, lse, dq, dk, dv and dsinks" : "out, lse, dq, dk and dv";
}

// What the shown columns are measured against, one line each.
static void print_notes(FILE *f, const bench_run_info *info, const bench_row *rows, int n, const int *shown)
{
    const bench_ragged_kind kind = info->shape.ragged.kind;
    if (n == 0) return;
    if (kind == BENCH_RAGGED_VARLEN && shown[COL_VS_EQUAL])
        fprintf(
            f,
            "a/b, a/c: (a)'s GFLOP/s over (b)'s and over (c)'s at the same thread count (the first GFLOP/s "
            "and %% peak are (a)'s)\n");
    if (shown[COL_PCT_PEAK])
        fprintf(f, "%% peak: GFLOP/s / the %s FMA probe at the same thread count, same pinning\n",
                rows[0].peak_isa);
    if (shown[COL_KV]) {
        fprintf(f, "KV GB/s: %.4g bytes of K and V %sper call / min time", info->kv_bytes,
                kind == BENCH_RAGGED_DECODE ? "in use " : "");
        if (shown[COL_PCT_BW]) fprintf(f, "; %% bw: that / the read probe at the same thread count");
        fputc('\n', f);
    }
    if (shown[COL_CONTIG_MS])
        fprintf(
            f,
            "paged ms and the KV GB/s, %% bw after it: the paged call's; contig ms and those after it: the "
            "contiguous cache's; p/c: paged min time / contiguous min time, out and lse bitwise equal\n");
    if (shown[COL_PAGE_READ])
        fprintf(f,
                "page GB/s: the page probe, the paged call's bytes read where they lie, in its order, a page "
                "or 8 or 32 at a time (the fastest), at the same thread count; %% page: the paged KV GB/s / "
                "that\n");
    if (shown[COL_PCT_BIAS_BW])
        fprintf(f,
                "%% bias bw: %.4g bytes of the bias per call / min time / the read probe at the same thread "
                "count\n",
                info->bias_bytes);
    if (shown[COL_PCT_REF])
        fprintf(
            f, "%% ref: GFLOP/s / case %d's GFLOP/s at the same thread count, measured earlier in this run\n",
            info->reference + 1);
    if (shown[COL_BLAS])
        fprintf(
            f,
            "x BLAS: unfused OpenBLAS attention min time (blas: rows = row-blocks, gemm = gemm-threads, the "
            "faster of those timed) / flashattn min time; its out matched the library's (normwise %.1e)\n",
            rows[0].blas_err);
    if (kind == BENCH_RAGGED_VARLEN)
        fprintf(f,
                "(c)'s out and lse: bitwise (a)'s for %lld sequence%s (the same blocks, no split-KV); within "
                "%.3g normwise (worst %.2e) for %lld whose dense call took other blocks and %lld whose dense "
                "call may split its keys%s\n",
                (long long)rows[0].ragged.seqs_bitwise, rows[0].ragged.seqs_bitwise == 1 ? "" : "s",
                bench_varlen_match_tolerance(info->shape.dtype), rows[0].ragged.err_loop,
                (long long)rows[0].ragged.seqs_other_blocks, (long long)rows[0].ragged.seqs_may_split,
                kit_dtype_is_half(info->shape.dtype)
                    ? " (out: f32's bound + 2u, each side rounded once; lse: f32's)"
                    : "");
    if (info->pass != BENCH_PASS_FWD) {
        fprintf(f, "gradient oracle: %lld dq rows and %lld dk/dv rows in %.1f s",
                (long long)rows[0].rows_checked_dq, (long long)rows[0].rows_checked_dkdv,
                info->grad_oracle_s);
        if (!kit_dtype_is_half(info->shape.dtype))
            fprintf(f, ", computed once for all thread counts\n");
        else
            fprintf(
                f,
                ", with delta = dout*out from the %s out the backward was handed; computed %d time%s (once "
                "per different out)\n",
                bench_dtype_name(info->shape.dtype), info->grad_oracle_runs,
                info->grad_oracle_runs == 1 ? "" : "s");
    }
    for (int t = 0; rows[0].plain_timing.count > 0 && t < n; t++) // --dropout: the call without
        fprintf(
            f, "dropout %g: threads %d: with %.3f ms, without %.3f ms (min of %d and %d calls): ratio %.3f\n",
            info->opt->dropout, rows[t].threads, 1e3 * rows[t].timing.min_s, 1e3 * rows[t].plain_timing.min_s,
            rows[t].timing.count, rows[t].plain_timing.count,
            rows[t].timing.min_s / rows[t].plain_timing.min_s);
}

void bench_report_table(FILE *f, const bench_run_info *info, const bench_row *rows, int n)
{
    int gradients = info->pass != BENCH_PASS_FWD, shown[N_COLUMNS];
    double v[BENCH_MAX_THREAD_COUNTS][N_COLUMNS];
    for (int c = 0; c < N_COLUMNS; c++) shown[c] = columns[c].always;
    for (int r = 0; r < n; r++) {
        row_values(&rows[r], v[r]);
        for (int c = 0; c < N_COLUMNS; c++) shown[c] |= isfinite(v[r][c]);
    }
    fprintf(f, "\n%7s %-6s %5s %9s %-6s", "threads", "bind", "bound", "block q/k", "isa");
    if (gradients) fprintf(f, " %-9s", "plan");
    for (int c = 0; c < N_COLUMNS; c++)
        if (shown[c])
            fprintf(f, " %*s", columns[c].width, c == COL_MIN_MS ? own_call(info) : columns[c].title);
    fputc('\n', f);
    int all_identical = 1;
    for (int r = 0; r < n; r++) {
        const bench_row *w = &rows[r];
        char blocks[32];
        snprintf(blocks, sizeof blocks, "%d/%d", w->stats.block_q, w->stats.block_k);
        fprintf(f, "%7d %-6s %5d %9s %-6s", w->threads, bench_bind_name(w->stats.bind),
                w->stats.bound_threads, blocks, w->isa);
        if (gradients) fprintf(f, " %-9s", w->plan);
        for (int c = 0; c < N_COLUMNS; c++)
            if (shown[c]) print_value(f, &columns[c], v[r][c]);
        fputc('\n', f);
        if (w->bitwise_identical != 1) all_identical = 0;
    }
    report_disturbed(f, info, rows, n);
    fprintf(f, "\n%s bitwise identical across thread counts and repetitions: %s\n", held_outputs(info),
            all_identical ? "yes" : "not compared (block sizes differed between thread counts)");
    print_notes(f, info, rows, n, shown);
    if (info->shape.ragged.kind == BENCH_RAGGED_VARLEN) varlen_targets(f, rows, n);
    if (info->shape.ragged.kind == BENCH_RAGGED_DECODE) decode_targets(f, info, rows, n);
}
