/* SPDX-License-Identifier: BSD-3-Clause */
// Terminal report of ragged cases, in report.c's fixed-width style.
#include "ragged_report.h"

#include <math.h>

#include "dtypes.h"
#include "isa.h"
#include "modifiers.h"
#include "report.h"
#include "varlen.h"

static int is_varlen(const bench_run_info *info)
{
    return info->shape.ragged.kind == BENCH_RAGGED_VARLEN;
}

static void print_modifiers(FILE *f, const bench_mods *m)
{
    char words[160];
    bench_mods_words(m, words, sizeof words);
    if (words[0]) fprintf(f, "\n  score modifiers, per sequence%s", words + 1); // words start with ","
}

void bench_ragged_report_header(FILE *f, const bench_run_info *info)
{
    const bench_options *o = info->opt;
    const bench_shape *s = &info->shape;
    const bench_ragged *g = &s->ragged;
    const bench_ragged_info *ri = &info->ragged;
    int varlen = is_varlen(info), bshd = s->layout == BENCH_LAYOUT_BSHD;
    char types[48];
    bench_dtypes_words(s, types, sizeof types);
    fprintf(f, "fa-bench: flashattn %s, forward, %s, ", info->version, types);
    if (varlen)
        fprintf(f, "varlen: %lld packed sequences of %lld..%lld tokens", (long long)g->count,
                (long long)g->lo, (long long)g->hi);
    else
        fprintf(f, "decode batch: %lld sequences, Nq=1, caches of %lld..%lld keys", (long long)g->count,
                (long long)g->lo, (long long)g->hi);
    fprintf(f, ", Hq=%lld Hkv=%lld D=%lld Dv=%lld, causal=%s, layout=%s", (long long)s->hq, (long long)s->hkv,
            (long long)s->d, (long long)s->dv, bench_causal_name(s->causal), bench_layout_name(s->layout));
    if (o->preset) fprintf(f, " [preset %s, shape %d of %d]", o->preset, info->case_index + 1, o->n_cases);
    fprintf(f, "\n  %s (seed %llu): %lld in all, min %lld, mean %.1f, max %lld",
            varlen ? "lengths" : "keys in use", (unsigned long long)o->seed, (long long)ri->total,
            (long long)ri->min, ri->mean, (long long)ri->max);
    const bench_identity *id = info->identity;
    fprintf(f, "\n  %s, %s, %d cores (%d CPUs) allowed; %s %s build, source %s; run started %s", id->host,
            id->cpu_model, id->allowed_cores, id->allowed_cpus, id->compiler, id->build_type,
            id->git_revision, id->run_utc);
    print_modifiers(f, &s->mods);
    if (varlen) {
        fprintf(f,
                "\n  (a) packed: one fa_forward, q, k, v and out %s memory, cu_seqlens_q = cu_seqlens_k"
                "\n  (b) equal: one dense fa_forward of B=%lld Nq=Nk=L_eq=%lld, the length whose B*V(L) is "
                "nearest "
                "the sequences' sum of V(L_b)"
                "\n  (c) loop: %lld dense fa_forward calls, one per sequence, on views of (a)'s buffers",
                bshd ? "[total][H][D]" : "[H][total][D]", (long long)g->count, (long long)ri->l_eq,
                (long long)g->count);
        fprintf(f,
                "\n  FLOP per call: (a) and (c) %.4g = 2*Hq*V*(D+Dv), V = %lld (i, j) pairs per head visible "
                "in the "
                "sequences (the causal mask and window applied to each); (b) %.4g, its own pairs",
                info->flops, (long long)info->visible_pairs, ri->equal_flops);
    } else {
        fprintf(f, "\n  contiguous: k and v %s, seqused_k = the keys in use (NaN beyond them)",
                bshd ? "[B][cap][Hkv][D]" : "[B][Hkv][cap][D]");
        fprintf(f, ", cap = %lld", (long long)ri->capacity);
        if (g->page_size > 0)
            fprintf(
                f,
                "\n  paged: pools %s of %lld pages of %lld keys, handed out in a shuffled order; block_table "
                "[B][%lld]",
                bshd ? "[pages][P][Hkv][D]" : "[pages][Hkv][P][D]", (long long)ri->num_pages,
                (long long)g->page_size, (long long)ri->pages_per_seq);
        else
            fprintf(f, "\n  paged: none (--page-size 0)");
        if (kit_dtype_is_quantized(s->kv_dtype))
            fprintf(f,
                    "\n  k and v %s codes, each with f32 scales per token and head, [B][Hkv][cap][1]%s (row "
                    "max|x| "
                    "/ %g)",
                    bench_dtype_name(s->kv_dtype), g->page_size > 0 ? " and pools [pages][Hkv][P][1]" : "",
                    kit_quant_code_max(s->kv_dtype));
        fprintf(f,
                "\n  K and V bytes per call: %.4g = the keys each query sees (%lld) * Hkv*(D+Dv)*%d bytes%s; "
                "FLOP per "
                "call %.4g",
                info->kv_bytes, (long long)info->visible_pairs, (int)kit_dtype_size(s->kv_dtype),
                kit_dtype_is_quantized(s->kv_dtype) ? " + Hkv*2*4 bytes of scales" : "", info->flops);
    }
    fprintf(f, "\n  inputs %s, seed %llu; warmup %d, reps %d", bench_dist_name(o->dist),
            (unsigned long long)o->seed, o->warmup, o->reps);
    if (o->min_time > 0.0) fprintf(f, ", min-time %gs", o->min_time);
    fprintf(f, "; each call timed in turn at each thread count");
    if (o->rounds > 1)
        fprintf(f, ", in %d rounds of every case, each call's figures from its fastest round", o->rounds);
    fprintf(f,
            "\n  bind requested %s; kernel table requested %s; block q/k %d/%d (0 = library's choice); "
            "omp_get_max_threads %d; oracle check of %lld rows, normwise tolerance %.3g",
            bench_bind_name(o->bind), bench_isa_requested(), o->block_q, o->block_k, info->omp_max_threads,
            (long long)o->check_rows, info->tolerance);
    // A half output's bound adds its rounding (verify.h), so lse's (never half) differs from out's.
    if (info->lse_tolerance != info->tolerance)
        fprintf(f, " (out: f32's + 2^%d, its rounding), %.3g (lse)", (int)log2(kit_unit_roundoff(s->dtype)),
                info->lse_tolerance);
    if (o->probe_time > 0.0)
        fprintf(f, "\n  in-run probe, %g s per thread count: %s%s", o->probe_time,
                varlen ? "FMA peak for the kernel table's ISA and " : "read bandwidth",
                varlen ? bench_dtype_name(kit_accum_dtype(s->dtype)) : "");
    else
        fprintf(f, "\n  in-run probes: off (--probe-time 0)");
    fputc('\n', f);
}

static void print_figure(FILE *f, double x, int width, int precision)
{
    if (isfinite(x))
        fprintf(f, "%*.*f", width, precision, x);
    else
        fprintf(f, "%*s", width, "-");
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
    for (int r = 0; r < n; r++) {
        if (rows[r].threads != BENCH_TARGET_LOOP_THREADS) continue;
        fprintf(f, " %.3f %s", rows[r].ragged.vs_loop,
                verdict(rows[r].ragged.vs_loop >= BENCH_TARGET_VARLEN_VS_LOOP));
        found = 1;
        break;
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
}

void bench_ragged_report_table(FILE *f, const bench_run_info *info, const bench_row *rows, int n)
{
    int varlen = is_varlen(info), paged = info->shape.ragged.page_size > 0, probe = 0;
    for (int r = 0; r < n; r++) probe |= isfinite(varlen ? rows[r].peak_gflops : rows[r].read_gbps);
    fprintf(f, "\n%7s %-6s %5s %9s %-6s", "threads", "bind", "bound", "block q/k", "isa");
    if (varlen) {
        fprintf(f, " %10s %9s", "(a) ms", "GFLOP/s");
        if (probe) fprintf(f, " %6s", "% peak");
        fprintf(f, " %10s %9s %10s %9s %7s %7s", "(b) ms", "GFLOP/s", "(c) ms", "GFLOP/s", "a/b", "a/c");
    } else {
        fprintf(f, " %10s %8s", "contig ms", "KV GB/s");
        if (probe) fprintf(f, " %6s", "% bw");
        if (paged) {
            fprintf(f, " %10s %8s", "paged ms", "KV GB/s");
            if (probe) fprintf(f, " %6s", "% bw");
            fprintf(f, " %7s", "p/c");
        }
        if (probe) fprintf(f, " %9s", "read GB/s");
    }
    fprintf(f, " %7s %6s %11s %9s %9s\n", "speedup", "eff %", "scratch KiB", "err out", "err lse");
    int all_identical = 1;
    for (int r = 0; r < n; r++) {
        const bench_row *w = &rows[r];
        const bench_ragged_row *g = &w->ragged;
        char blocks[32];
        snprintf(blocks, sizeof blocks, "%d/%d", w->stats.block_q, w->stats.block_k);
        fprintf(f, "%7d %-6s %5d %9s %-6s", w->threads, bench_bind_name(w->stats.bind),
                w->stats.bound_threads, blocks, w->isa);
        if (varlen) {
            fprintf(f, " %10.3f %9.2f", 1e3 * w->timing.min_s, w->gflops);
            if (probe) print_figure(f, w->pct_peak, 7, 1);
            fprintf(f, " %10.3f %9.2f %10.3f %9.2f", 1e3 * g->equal.min_s, g->equal_gflops,
                    1e3 * g->loop.min_s, g->loop_gflops);
            print_figure(f, g->vs_equal, 8, 3);
            print_figure(f, g->vs_loop, 8, 3);
        } else {
            const bench_timing *c = paged ? &g->contiguous : &w->timing;
            fprintf(f, " %10.3f", 1e3 * c->min_s);
            print_figure(f, paged ? g->contiguous_kv_gbps : w->kv_gbps, 9, 2);
            if (probe) print_figure(f, paged ? g->contiguous_pct_read_bw : w->pct_read_bw, 7, 1);
            if (paged) {
                fprintf(f, " %10.3f", 1e3 * w->timing.min_s);
                print_figure(f, w->kv_gbps, 9, 2);
                if (probe) print_figure(f, w->pct_read_bw, 7, 1);
                print_figure(f, g->paged_over_contiguous, 8, 3);
            }
            if (probe) print_figure(f, w->read_gbps, 10, 2);
        }
        print_figure(f, w->speedup, 8, 2);
        print_figure(f, 100.0 * w->efficiency, 7, 1);
        fprintf(f, " %11.1f %9.2e %9.2e\n", (double)w->stats.scratch_peak / 1024.0, w->err_out, w->err_lse);
        if (w->bitwise_identical != 1) all_identical = 0;
    }
    bench_report_disturbed(f, info, rows, n);
    fputc('\n', f);
    if (varlen) {
        fprintf(f, "a/b, a/c: (a)'s GFLOP/s over (b)'s and over (c)'s at the same thread count\n");
        if (probe && n > 0)
            fprintf(f, "%% peak: (a)'s GFLOP/s / the %s FMA probe at the same thread count\n",
                    rows[0].peak_isa);
        if (n > 0)
            fprintf(
                f,
                "(c)'s out and lse: bitwise (a)'s for %lld sequence%s (the same blocks, no split-KV); within "
                "%.3g normwise (worst %.2e) for %lld whose dense call took other blocks and %lld whose dense "
                "call may split its keys%s\n",
                (long long)rows[0].ragged.seqs_bitwise, rows[0].ragged.seqs_bitwise == 1 ? "" : "s",
                bench_varlen_match_tolerance(info->shape.dtype), rows[0].ragged.err_loop,
                (long long)rows[0].ragged.seqs_other_blocks, (long long)rows[0].ragged.seqs_may_split,
                kit_dtype_is_half(info->shape.dtype)
                    ? " (out: f32's bound + 2u, each side rounded once; lse: f32's)"
                    : "");
    } else {
        fprintf(f, "KV GB/s: %.4g bytes of K and V in use per call / min time", info->kv_bytes);
        if (probe) fprintf(f, "; %% bw: that / the read probe at the same thread count");
        if (paged) fprintf(f, "; p/c: paged min time / contiguous min time, out and lse bitwise equal");
        fputc('\n', f);
    }
    fprintf(f, "%s out and lse bitwise identical across thread counts and repetitions: %s\n",
            varlen ? "(a)'s and (b)'s" : "the contiguous call's",
            all_identical ? "yes" : "not compared (block sizes differed between thread counts)");
    if (varlen)
        varlen_targets(f, rows, n);
    else
        decode_targets(f, info, rows, n);
}

void bench_ragged_report_decode_summary(FILE *f, const bench_case_result *cases, int n)
{
    int decode = 0;
    for (int c = 0; c < n; c++) decode += cases[c].info.shape.ragged.kind == BENCH_RAGGED_DECODE;
    if (decode < 2) return;
    fprintf(f,
            "\nDecode batches of this run (KV GB/s as %% of the read probe, contiguous / paged; p/c = paged "
            "min time / contiguous):\n");
    for (int c = 0; c < n; c++) {
        const bench_run_info *info = &cases[c].info;
        const bench_shape *s = &info->shape;
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
            } else {
                print_figure(f, w->pct_read_bw, 6, 1);
                fputs("%", f);
            }
        }
        fputc('\n', f);
    }
}
