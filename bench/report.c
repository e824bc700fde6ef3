/* SPDX-License-Identifier: BSD-3-Clause */
// Terminal report: fixed-width columns so several runs can be compared by eye.
#include "report.h"

#include <math.h>
#include <stdlib.h>

#include "isa.h"

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

void bench_report_header(FILE *f, const bench_run_info *info)
{
    const bench_options *o = info->opt;
    const bench_shape *s = &info->shape;
    fprintf(f,
            "fa-bench: flashattn %s, %s, %s, B=%lld Hq=%lld Hkv=%lld Nq=%lld Nk=%lld D=%lld Dv=%lld, "
            "causal=%s, layout=%s",
            info->version, pass_title(info->pass), bench_dtype_name(s->dtype), (long long)s->b,
            (long long)s->hq, (long long)s->hkv, (long long)s->nq, (long long)s->nk, (long long)s->d,
            (long long)s->dv, bench_causal_name(s->causal), bench_layout_name(s->layout));
    if (o->preset) fprintf(f, " [preset %s, shape %d of %d]", o->preset, info->case_index + 1, o->n_cases);
    const bench_identity *id = info->identity;
    fprintf(f, "\n  %s, %s, %d cores (%d CPUs) allowed; %s %s build, source %s; run started %s", id->host,
            id->cpu_model, id->allowed_cores, id->allowed_cpus, id->compiler, id->build_type,
            id->git_revision, id->run_utc);
    fprintf(f, "\n  %.4g FLOP/call (%s2*B*Hq*Nq*Nk*(D+Dv)%s); inputs %s, seed %llu; warmup %d, reps %d",
            info->flops, flop_multiplier(info->pass),
            s->causal == FA_CAUSAL_NONE ? "" : ", halved for causal", bench_dist_name(o->dist),
            (unsigned long long)o->seed, o->warmup, o->reps);
    if (o->min_time > 0.0) fprintf(f, ", min-time %gs", o->min_time);
    fprintf(f,
            "\n  bind requested %s; kernel table requested %s; block q/k %d/%d (0 = library's choice); "
            "omp_get_max_threads %d; oracle check of %lld rows, normwise tolerance %.0e",
            bench_bind_name(o->bind), bench_isa_requested(), o->block_q, o->block_k, info->omp_max_threads,
            (long long)o->check_rows, info->tolerance);
    if (info->pass != BENCH_PASS_FWD)
        fprintf(f, "; gradients: %lld rows of dq and of dk/dv, tolerance %.0e", (long long)o->check_rows,
                info->grad_tolerance);
    if (o->probe_time > 0.0)
        fprintf(f, "\n  in-run probes, %g s per thread count: FMA peak for the kernel table's ISA and %s%s",
                o->probe_time, bench_dtype_name(s->dtype),
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

void bench_report_table(FILE *f, const bench_run_info *info, const bench_row *rows, int n)
{
    int gradients = info->pass != BENCH_PASS_FWD;
    // Columns for what was measured: probes off, a non-decode shape or no baseline leave theirs out.
    int peak = 0, bandwidth = 0, blas = 0;
    for (int r = 0; r < n; r++) {
        peak |= isfinite(rows[r].peak_gflops);
        bandwidth |= info->decode && isfinite(rows[r].kv_gbps);
        blas |= isfinite(rows[r].blas_gflops);
    }
    fprintf(f, "\n%7s %-6s %5s %9s %-6s", "threads", "bind", "bound", "block q/k", "isa");
    if (gradients) fprintf(f, " %-9s", "plan");
    fprintf(f, " %10s %10s %9s", "min ms", "median ms", "GFLOP/s");
    if (peak) fprintf(f, " %9s %6s", "peak GF/s", "% peak");
    fprintf(f, " %7s %6s", "speedup", "eff %");
    if (bandwidth) fprintf(f, " %8s %9s %6s", "KV GB/s", "read GB/s", "% bw");
    if (blas) fprintf(f, " %9s %7s %4s", "BLAS GF/s", "x BLAS", "blas");
    fprintf(f, " %11s %9s %9s", "scratch KiB", "err out", "err lse");
    if (gradients) fprintf(f, " %9s %9s %9s", "err dq", "err dk", "err dv");
    fputc('\n', f);
    int all_identical = 1;
    for (int r = 0; r < n; r++) {
        const bench_row *w = &rows[r];
        char blocks[32];
        snprintf(blocks, sizeof blocks, "%d/%d", w->stats.block_q, w->stats.block_k);
        fprintf(f, "%7d %-6s %5d %9s %-6s", w->threads, bench_bind_name(w->stats.bind), w->stats.bound_threads,
                blocks, w->isa);
        if (gradients) fprintf(f, " %-9s", w->plan);
        fprintf(f, " %10.3f %10.3f %9.2f", 1e3 * w->timing.min_s, 1e3 * w->timing.median_s, w->gflops);
        if (peak) {
            print_ratio(f, w->peak_gflops, 10, 1);
            print_ratio(f, w->pct_peak, 7, 1);
        }
        print_ratio(f, w->speedup, 8, 2);
        print_ratio(f, 100.0 * w->efficiency, 7, 1);
        if (bandwidth) {
            print_ratio(f, w->kv_gbps, 9, 2);
            print_ratio(f, w->read_gbps, 10, 2);
            print_ratio(f, w->pct_read_bw, 7, 1);
        }
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
        fputc('\n', f);
        if (w->bitwise_identical != 1) all_identical = 0;
    }
    fprintf(f, "\n%s bitwise identical across thread counts and repetitions: %s\n",
            gradients ? "out, lse, dq, dk and dv" : "out and lse",
            all_identical ? "yes" : "not compared (block sizes differed between thread counts)");
    if (peak && n > 0)
        fprintf(f, "%% peak: GFLOP/s / the %s FMA probe at the same thread count, same pinning\n",
                rows[0].peak_isa);
    if (bandwidth)
        fprintf(
            f, "%% bw: %.4g bytes of K and V per call / min time / the read probe at the same thread count\n",
            info->kv_bytes);
    if (blas && n > 0)
        fprintf(
            f,
            "x BLAS: unfused OpenBLAS attention min time (blas: rows = row-blocks, gemm = gemm-threads, the "
            "faster of those timed) / flashattn min time; its out matched the library's (normwise %.1e)\n",
            rows[0].blas_err);
    if (gradients && n > 0)
        fprintf(f,
                "gradient oracle: %lld dq rows and %lld dk/dv rows in %.1f s, computed once for all thread "
                "counts\n",
                (long long)rows[0].rows_checked_dq, (long long)rows[0].rows_checked_dkdv,
                info->grad_oracle_s);
}
