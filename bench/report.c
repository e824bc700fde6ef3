/* SPDX-License-Identifier: BSD-3-Clause */
// Terminal report: fixed-width columns so several runs can be compared by eye.
#include "report.h"

#include <math.h>
#include <stdlib.h>

#include "dtypes.h"
#include "isa.h"
#include "modifiers.h"
#include "progress.h"
#include "ragged_report.h"

static const char *pass_title(bench_pass pass)
{
    switch (pass) {
    case BENCH_PASS_BWD: return "backward (out and lse from one untimed forward)";
    case BENCH_PASS_FWDBWD: return "forward+backward (one fa_forward then one fa_backward per call)";
    default: return "forward";
    }
}

static const char *flop_multiplier(bench_pass pass)
{
    switch (pass) {
    case BENCH_PASS_BWD: return "2.5 x forward, forward = ";
    case BENCH_PASS_FWDBWD: return "3.5 x forward, forward = ";
    default: return "";
    }
}

// OpenBLAS variables that change which kernels and blockings the baseline uses (see --help).
static void print_openblas_environment(FILE *f)
{
    const char *names[] = {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"};
    int any = 0;
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(names[i]);
        if (!v) continue;
        fprintf(f, "%s %s=%s", any ? "" : "; set here:", names[i], v);
        any = 1;
    }
    if (any) fprintf(f, " (they change OpenBLAS's kernels; see --help)");
}

// The score modifiers on a line of their own, with the values fa-bench chose for them; nothing
// when there are none.
static void print_modifiers(FILE *f, const bench_run_info *info)
{
    const bench_shape *s = &info->shape;
    const bench_mods *m = &s->mods;
    if (!bench_mods_any(m)) return;
    fprintf(f, "\n  score modifiers:");
    const char *sep = " ";
    if (m->window_left >= 0 || m->window_right >= 0) {
        fprintf(f, "%swindow left %lld, right %lld (-1 unbounded)", sep, (long long)m->window_left,
                (long long)m->window_right);
        sep = "; ";
    }
    if (m->softcap != 0.0) {
        fprintf(f, "%ssoftcap %g", sep, m->softcap);
        sep = "; ";
    }
    if (m->alibi) {
        fprintf(f, "%sALiBi, slopes 2^(-8(h+1)/Hq)", sep);
        sep = "; ";
    }
    if (m->bias == BENCH_BIAS_KEYPAD) {
        fprintf(f, "%sbias keypad [B][1][1][Nk], -inf on the last %lld keys", sep,
                (long long)((s->nk + 9) / 10));
        sep = "; ";
    } else if (m->bias == BENCH_BIAS_FULL) {
        fprintf(f, "%sbias full [B][Hq][Nq][Nk], %.4g bytes read per call", sep, info->bias_bytes);
        sep = "; ";
    }
    if (m->sinks)
        fprintf(f, "%ssinks, one logit per head%s", sep, info->pass != BENCH_PASS_FWD ? ", and dsinks" : "");
    if (info->reference >= 0)
        fprintf(f,
                "\n  compared with case %d of this run (%% ref: GFLOP/s over its GFLOP/s at the same thread "
                "count)",
                info->reference + 1);
}

void bench_report_header(FILE *f, const bench_run_info *info)
{
    const bench_options *o = info->opt;
    const bench_shape *s = &info->shape;
    char types[48];
    bench_dtypes_words(s, types, sizeof types);
    fprintf(f,
            "fa-bench: flashattn %s, %s, %s, B=%lld Hq=%lld Hkv=%lld Nq=%lld Nk=%lld D=%lld Dv=%lld, "
            "causal=%s, layout=%s",
            info->version, pass_title(info->pass), types, (long long)s->b, (long long)s->hq,
            (long long)s->hkv, (long long)s->nq, (long long)s->nk, (long long)s->d, (long long)s->dv,
            bench_causal_name(s->causal), bench_layout_name(s->layout));
    if (o->preset) fprintf(f, " [preset %s, shape %d of %d]", o->preset, info->case_index + 1, o->n_cases);
    const bench_identity *id = info->identity;
    fprintf(f, "\n  %s, %s, %d cores (%d CPUs) allowed; %s %s build, source %s; run started %s", id->host,
            id->cpu_model, id->allowed_cores, id->allowed_cpus, id->compiler, id->build_type,
            id->git_revision, id->run_utc);
    print_modifiers(f, info);
    if (kit_dtype_is_quantized(s->kv_dtype))
        fprintf(
            f,
            "\n  k and v: %s codes with f32 scales per token and head, [B][Hkv][Nk][1] (row max|x| / %g)%s; "
            "the oracle reads scale * code",
            bench_dtype_name(s->kv_dtype), kit_quant_code_max(s->kv_dtype),
            s->shared_kv ? ", v sharing k's" : "");
    if (s->shared_kv)
        fprintf(f,
                "\n  v: the first Dv=%lld dims of k's rows (--shared-kv: k's data pointer and strides, one "
                "latent cache)",
                (long long)s->dv);
    fprintf(f,
            "\n  %.4g FLOP/call (%s2*B*Hq*V*(D+Dv), V = %lld (i, j) pairs per head visible under the causal "
            "mask and window, %.4g%% of Nq*Nk); inputs %s, seed %llu; warmup %d, reps %d",
            info->flops, flop_multiplier(info->pass), (long long)info->visible_pairs,
            100.0 * (double)info->visible_pairs / ((double)s->nq * (double)s->nk), bench_dist_name(o->dist),
            (unsigned long long)o->seed, o->warmup, o->reps);
    if (o->min_time > 0.0) fprintf(f, ", min-time %gs", o->min_time);
    if (o->rounds > 1) fprintf(f, "; %d rounds of every case, each row from its fastest round", o->rounds);
    fprintf(f,
            "\n  bind requested %s; kernel table requested %s; block q/k %d/%d (0 = library's choice); "
            "omp_get_max_threads %d; oracle check of %lld rows, normwise tolerance %.3g",
            bench_bind_name(o->bind), bench_isa_requested(), o->block_q, o->block_k, info->omp_max_threads,
            (long long)o->check_rows, info->tolerance);
    // A half output's bound adds its rounding (verify.h), so lse's (never half) differs from out's.
    if (info->lse_tolerance != info->tolerance)
        fprintf(f, " (out: f32's + 2^%d, its rounding), %.3g (lse)", (int)log2(kit_unit_roundoff(s->dtype)),
                info->lse_tolerance);
    if (info->pass != BENCH_PASS_FWD) {
        fprintf(f, "; gradients: %lld rows of dq and of dk/dv, tolerance %.3g", (long long)o->check_rows,
                info->grad_tolerance);
        if (info->grad_kv_tolerance != info->grad_tolerance)
            fprintf(f, " (dq), %.3g (dk, dv)", info->grad_kv_tolerance);
    }
    if (o->probe_time > 0.0)
        fprintf(f, "\n  in-run probes, %g s per thread count: FMA peak for the kernel table's ISA and %s%s",
                o->probe_time, bench_dtype_name(kit_accum_dtype(s->dtype)),
                info->decode ? "; read bandwidth (decode shape: K and V are read once per call)" : "");
    else
        fprintf(f, "\n  in-run probes: off (--probe-time 0)");
    fprintf(f, "\n  BLAS baseline: %s", info->blas);
    if (info->blas_runs) {
        fprintf(f, ", %s, %d reps", bench_blas_mode_name(o->blas_mode), o->blas_reps);
        print_openblas_environment(f);
        if (info->blas_warning[0]) fprintf(f, "\n  WARNING: %s", info->blas_warning);
    }
    fputc('\n', f);
}

// "-" where a figure does not exist (no 1-thread row to compare with).
static void print_ratio(FILE *f, double x, int width, int precision)
{
    if (isfinite(x))
        fprintf(f, "%*.*f", width, precision, x);
    else
        fprintf(f, "%*s", width, "-");
}

#define UNRELIABLE "speedups from this run are not reliable"

int bench_report_disturbed(FILE *f, const bench_run_info *info, const bench_row *rows, int n)
{
    int count = 0, cpus = info->identity ? info->identity->allowed_cpus : 0;
    for (int r = 0; r < n; r++) {
        double ratio, spread;
        const char *which;
        if (!bench_row_disturbed(&rows[r], &ratio, &which, &spread)) continue;
        count++;
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
    return count;
}

void bench_report_table(FILE *f, const bench_run_info *info, const bench_row *rows, int n)
{
    int gradients = info->pass != BENCH_PASS_FWD;
    // Columns for what was measured: probes off, a non-decode shape or no baseline leave theirs out.
    int peak = 0, bandwidth = 0, bias_bw = 0, blas = 0, ref = 0, dsinks = 0;
    for (int r = 0; r < n; r++) {
        peak |= isfinite(rows[r].peak_gflops);
        bandwidth |= info->decode && isfinite(rows[r].kv_gbps);
        bias_bw |= isfinite(rows[r].bias_gbps);
        blas |= isfinite(rows[r].blas_gflops);
        ref |= isfinite(rows[r].pct_of_reference);
        dsinks |= isfinite(rows[r].err_dsinks);
    }
    fprintf(f, "\n%7s %-6s %5s %9s %-6s", "threads", "bind", "bound", "block q/k", "isa");
    if (gradients) fprintf(f, " %-9s", "plan");
    fprintf(f, " %10s %10s %9s", "min ms", "median ms", "GFLOP/s");
    if (peak) fprintf(f, " %9s %6s", "peak GF/s", "% peak");
    if (ref) fprintf(f, " %8s %6s", "ref GF/s", "% ref");
    fprintf(f, " %7s %6s", "speedup", "eff %");
    if (bandwidth) fprintf(f, " %8s", "KV GB/s");
    if (bias_bw) fprintf(f, " %9s", "bias GB/s");
    if (bandwidth || bias_bw) fprintf(f, " %9s", "read GB/s");
    if (bandwidth) fprintf(f, " %6s", "% bw");
    if (bias_bw) fprintf(f, " %9s", "% bias bw");
    if (blas) fprintf(f, " %9s %7s %4s", "BLAS GF/s", "x BLAS", "blas");
    fprintf(f, " %11s %9s %9s", "scratch KiB", "err out", "err lse");
    if (gradients) fprintf(f, " %9s %9s %9s", "err dq", "err dk", "err dv");
    if (dsinks) fprintf(f, " %10s", "err dsinks");
    fputc('\n', f);
    int all_identical = 1;
    for (int r = 0; r < n; r++) {
        const bench_row *w = &rows[r];
        char blocks[32];
        snprintf(blocks, sizeof blocks, "%d/%d", w->stats.block_q, w->stats.block_k);
        fprintf(f, "%7d %-6s %5d %9s %-6s", w->threads, bench_bind_name(w->stats.bind),
                w->stats.bound_threads, blocks, w->isa);
        if (gradients) fprintf(f, " %-9s", w->plan);
        fprintf(f, " %10.3f %10.3f %9.2f", 1e3 * w->timing.min_s, 1e3 * w->timing.median_s, w->gflops);
        if (peak) {
            print_ratio(f, w->peak_gflops, 10, 1);
            print_ratio(f, w->pct_peak, 7, 1);
        }
        if (ref) {
            print_ratio(f, w->reference_gflops, 9, 2);
            print_ratio(f, w->pct_of_reference, 7, 1);
        }
        print_ratio(f, w->speedup, 8, 2);
        print_ratio(f, 100.0 * w->efficiency, 7, 1);
        if (bandwidth) print_ratio(f, w->kv_gbps, 9, 2);
        if (bias_bw) print_ratio(f, w->bias_gbps, 10, 2);
        if (bandwidth || bias_bw) print_ratio(f, w->read_gbps, 10, 2);
        if (bandwidth) print_ratio(f, w->pct_read_bw, 7, 1);
        if (bias_bw) print_ratio(f, w->pct_bias_bw, 10, 1);
        if (blas) {
            print_ratio(f, w->blas_gflops, 10, 2);
            print_ratio(f, w->speedup_vs_blas, 8, 2);
            fprintf(f, " %4s",
                    w->blas_mode == BENCH_BLAS_GEMM_THREADS ? "gemm"
                    : w->blas_mode == BENCH_BLAS_ROW_BLOCKS ? "rows"
                                                            : "-");
        }
        fprintf(f, " %11.1f %9.2e %9.2e", (double)w->stats.scratch_peak / 1024.0, w->err_out, w->err_lse);
        if (gradients) fprintf(f, " %9.2e %9.2e %9.2e", w->err_dq, w->err_dk, w->err_dv);
        if (dsinks) fprintf(f, " %10.2e", w->err_dsinks);
        fputc('\n', f);
        if (w->bitwise_identical != 1) all_identical = 0;
    }
    bench_report_disturbed(f, info, rows, n);
    fprintf(f, "\n%s bitwise identical across thread counts and repetitions: %s\n",
            gradients
                ? (info->shape.mods.sinks ? "out, lse, dq, dk, dv and dsinks" : "out, lse, dq, dk and dv")
                : "out and lse",
            all_identical ? "yes" : "not compared (block sizes differed between thread counts)");
    if (peak && n > 0)
        fprintf(f, "%% peak: GFLOP/s / the %s FMA probe at the same thread count, same pinning\n",
                rows[0].peak_isa);
    if (bandwidth)
        fprintf(
            f, "%% bw: %.4g bytes of K and V per call / min time / the read probe at the same thread count\n",
            info->kv_bytes);
    if (bias_bw)
        fprintf(f,
                "%% bias bw: %.4g bytes of the bias per call / min time / the read probe at the same thread "
                "count\n",
                info->bias_bytes);
    if (ref)
        fprintf(
            f, "%% ref: GFLOP/s / case %d's GFLOP/s at the same thread count, measured earlier in this run\n",
            info->reference + 1);
    if (blas && n > 0)
        fprintf(
            f,
            "x BLAS: unfused OpenBLAS attention min time (blas: rows = row-blocks, gemm = gemm-threads, the "
            "faster of those timed) / flashattn min time; its out matched the library's (normwise %.1e)\n",
            rows[0].blas_err);
    if (gradients && n > 0 && !kit_dtype_is_half(info->shape.dtype))
        fprintf(f,
                "gradient oracle: %lld dq rows and %lld dk/dv rows in %.1f s, computed once for all thread "
                "counts\n",
                (long long)rows[0].rows_checked_dq, (long long)rows[0].rows_checked_dkdv,
                info->grad_oracle_s);
    else if (gradients && n > 0)
        fprintf(f,
                "gradient oracle: %lld dq rows and %lld dk/dv rows in %.1f s, with delta = dout*out from the "
                "%s out the backward was handed; computed %d time%s (once per different out)\n",
                (long long)rows[0].rows_checked_dq, (long long)rows[0].rows_checked_dkdv, info->grad_oracle_s,
                bench_dtype_name(info->shape.dtype), info->grad_oracle_runs,
                info->grad_oracle_runs == 1 ? "" : "s");
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
            "over %.2fx its best; under their tables) -- " UNRELIABLE "\n",
            disturbed, rows, BENCH_DISTURBED_RATIO, BENCH_DISTURBED_RATIO);
}

// Each case that has a reference against it, one line each.
static void references_summary(FILE *f, const bench_case_result *cases, int n)
{
    int any = 0;
    for (int c = 0; c < n; c++) any |= cases[c].info.reference >= 0;
    if (!any) return;
    fprintf(f, "\nAgainst the reference cases (GFLOP/s on visible pairs, both measured in this run):\n");
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
        }
        fputc('\n', f);
    }
}

void bench_report_summary(FILE *f, const bench_case_result *cases, int n)
{
    bench_ragged_report_decode_summary(f, cases, n);
    references_summary(f, cases, n);
    disturbed_summary(f, cases, n);
}
