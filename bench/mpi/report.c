/* SPDX-License-Identifier: BSD-3-Clause */
// fa-bench-mpi's table and CSV.
#include "report.h"

#include <math.h>
#include <string.h>

#include "global.h"
#include "verify.h"

static const char *pass_name(int pass)
{
    return pass == BM_PASS_FWD ? "fwd" : "bwd";
}

// What is left of a rank's call once the parts the profile names are taken out.
static double other_of(const bm_rank_figures *f)
{
    double rest = f->own;
    for (int x = 0; x < BM_PARTS; x++) rest -= f->seconds[x];
    return rest;
}

// A side whose median is over this many times its best was disturbed (fa-bench's rule, bench/results.h).
#define DISTURBED_RATIO 1.10

// One line per disturbed side of each pass, under the table: its timings are not reliable.
static void disturbed_lines(FILE *f, const bm_pass_report *passes, int n)
{
    for (int p = 0; p < n; p++) {
        const bm_pass_result *r = passes[p].result;
        const struct {
            const bm_side *s;
            const char *name;
        } sides[2] = {{&r->mpi, "MPI"}, {&r->ref, "one process"}};
        for (int x = 0; x < 2; x++) {
            double ratio = sides[x].s->count > 0 ? bm_median(sides[x].s) / sides[x].s->best : NAN;
            if (ratio > DISTURBED_RATIO)
                fprintf(f,
                        "disturbed: %s, %s: median %.2fx min -- the machine was busy; speedups from this run "
                        "are not reliable\n",
                        pass_name(r->pass), sides[x].name, ratio);
        }
    }
}

// The share of the messages' time alone that the call did not wait for, at least 0.
static double overlap_of(const bm_pass_result *r, const bm_rank_figures *f)
{
    if (!(r->alone.best > 0.0) || !isfinite(r->alone.best)) return NAN;
    double o = 1.0 - f->seconds[BM_WAIT] / r->alone.best;
    return o > 0.0 ? o : 0.0;
}

typedef struct {
    double max, mean, min;
} spread;

static spread over_ranks(const bm_pass_report *p, int ranks, int part)
{
    spread s = {-INFINITY, 0.0, INFINITY};
    for (int r = 0; r < ranks; r++) {
        const bm_rank_figures *f = &p->ranks[r];
        double x = part == BM_PARTS ? other_of(f) : part < 0 ? f->own : f->seconds[part];
        if (x > s.max) s.max = x;
        if (x < s.min) s.min = x;
        s.mean += x / ranks;
    }
    return s;
}

static spread overlap_over_ranks(const bm_pass_report *p, int ranks)
{
    spread s = {-INFINITY, 0.0, INFINITY};
    for (int r = 0; r < ranks; r++) {
        double x = overlap_of(p->result, &p->ranks[r]);
        if (x > s.max) s.max = x;
        if (x < s.min) s.min = x;
        s.mean += x / ranks;
    }
    return s;
}

static void header(FILE *f, const bm_job *j, const bm_identity *id, const bm_pass_report *passes, int n)
{
    const bm_options *o = &j->o;
    char cpus[256];
    fprintf(
        f,
        "fa-bench-mpi: ring attention (fa_mpi_forward / fa_mpi_backward) against one process, flashattn %s\n",
        fa_version());
    fprintf(f, "host %s, CPU %s; %s (single-copy mechanism: %s); %s %s, git %s; %s\n", id->host,
            id->cpu_model, id->mpi_library, id->single_copy, id->compiler, id->build_type, id->git_revision,
            id->run_utc);
    fprintf(
        f,
        "problem: %s, B=%lld, Hq=%lld, Hkv=%lld, N=%lld, D=%lld, Dv=%lld, causal %s, seed %llu; layout %s: ",
        bm_dtype_name(o->dtype), (long long)o->b, (long long)o->hq, (long long)o->hkv, (long long)o->n,
        (long long)o->d, (long long)o->dv, bm_causal_name(o->causal), (unsigned long long)o->seed,
        bm_layout_name(o->layout));
    if (o->layout == FA_MPI_ZIGZAG)
        fprintf(f, "each rank holds 2 chunks of %lld positions\n",
                (long long)(o->n / (2 * (int64_t)j->ranks)));
    else
        fprintf(f, "each rank holds %lld or %lld positions\n", (long long)(o->n / j->ranks),
                (long long)((o->n + j->ranks - 1) / j->ranks));
    fprintf(f, "ranks: %d x %d thread%s (bind %s)%s:", j->ranks, o->threads, o->threads == 1 ? "" : "s",
            bm_bind_name(j->rank_bind),
            j->rank_bind != o->bind ? ", not auto: ranks of one host share CPUs" : "");
    for (int r = 0; r < j->ranks; r++) {
        bm_cpulist(&j->where.where[r].cpus, cpus, sizeof cpus);
        fprintf(f, "%s rank %d on %s CPUs %s", r ? "," : "", r, j->where.where[r].host, cpus);
        if (j->rank_bound)
            fprintf(f, " (%s, %d pinned)", bm_bind_name((fa_bind)j->rank_bind_used[r]), j->rank_bound[r]);
    }
    bm_cpulist(&j->where.reference, cpus, sizeof cpus);
    fprintf(
        f,
        "\nreference: rank 0 alone, %d thread%s (bind %s: %s, %d pinned) on CPUs %s, while the other ranks "
        "sleep in a barrier\n",
        j->ref_threads, j->ref_threads == 1 ? "" : "s", bm_bind_name(o->bind),
        bm_bind_name(j->ref_stats.bind), j->ref_stats.bound_threads, cpus);
    fprintf(f,
            "timing: %d round%s of %d rep%s (warmup %d), MPI and the reference alternating which goes first; "
            "an MPI rep's time is its slowest rank's\n",
            o->rounds, o->rounds == 1 ? "" : "s", o->reps, o->reps == 1 ? "" : "s", o->warmup);
    fprintf(f,
            "checked against the one-process call, every element (normwise; tolerance %.2g, gradients %.2g):",
            bm_tolerance(o->dtype, 0, bm_on_dot_units(j->ref_stats.isa, o->dtype, o->d, o->dv)),
            bm_tolerance(o->dtype, 1, bm_on_dot_units(j->ref_stats.isa, o->dtype, o->d, o->dv)));
    static const char *const names[BM_OUTPUTS] = {"out", "lse", "dq", "dk", "dv"};
    for (int p = 0; p < n; p++) {
        const bm_pass_result *r = passes[p].result;
        for (int x = bm_first_output(r->pass); x <= bm_last_output(r->pass); x++)
            fprintf(f, " %s %.2g", names[x], r->error[x]);
    }
    int bitwise = 1;
    for (int p = 0; p < n; p++) bitwise = bitwise && passes[p].result->bitwise;
    fprintf(f, "; outputs after timing bitwise the verified ones: %s\n\n", bitwise ? "yes" : "NO");
}

void bm_report(FILE *f, const bm_job *j, const bm_identity *id, const bm_pass_report *passes, int n)
{
    header(f, j, id, passes, n);
    fprintf(f, "%-5s %9s | %-31s | %-31s | %s\n", "", "", "MPI: P ranks x T threads",
            "one process, P x T threads", "");
    fprintf(f, "%-5s %9s | %9s %10s %10s | %9s %10s %10s | %s\n", "pass", "GFLOP", "min ms", "median ms",
            "GFLOP/s", "min ms", "median ms", "GFLOP/s", "MPI / 1 process");
    for (int p = 0; p < n; p++) {
        const bm_pass_result *r = passes[p].result;
        double flop = bm_flops(&j->o, r->pass);
        fprintf(f, "%-5s %9.1f | %9.1f %10.1f %10.1f | %9.1f %10.1f %10.1f | %.1f%%\n", pass_name(r->pass),
                flop / 1e9, 1e3 * r->mpi.best, 1e3 * bm_median(&r->mpi), flop / r->mpi.best / 1e9,
                1e3 * r->ref.best, 1e3 * bm_median(&r->ref), flop / r->ref.best / 1e9,
                100.0 * r->ref.best / r->mpi.best);
    }
    disturbed_lines(f, passes, n);
    fprintf(f,
            "\nwhere each rank's time went in the fastest MPI rep (ms; calls in parentheses; bench/README.md "
            "says what each part is):\n");
    fprintf(f, "%-5s %4s %9s %16s %14s %14s %14s %12s %13s %9s\n", "pass", "rank", "call", "blocks", "merge",
            "wait", "progress", "post", "collectives", "other");
    for (int p = 0; p < n; p++)
        for (int rk = 0; rk < j->ranks; rk++) {
            const bm_rank_figures *g = &passes[p].ranks[rk];
            fprintf(f, "%-5s %4d %9.1f", pass_name(passes[p].result->pass), rk, 1e3 * g->own);
            static const int widths[BM_PARTS] = {16, 14, 14, 14, 12, 13};
            for (int x = 0; x < BM_PARTS; x++) {
                char cell[48];
                snprintf(cell, sizeof cell, "%.1f (%.0f)", 1e3 * g->seconds[x], g->calls[x]);
                fprintf(f, " %*s", widths[x], cell);
            }
            fprintf(f, " %9.1f\n", 1e3 * other_of(g));
        }
    if (j->ranks == 1) {
        fprintf(f, "\none rank: nothing travels, no messages to time\n");
        return;
    }
    fprintf(f,
            "\nthe ring's messages alone, nothing computed (min over every rep), and the overlap 1 - wait / "
            "alone:\n");
    fprintf(f, "%-5s %13s %9s %14s   %s\n", "pass", "MiB per rank", "ms", "GB/s per rank",
            "overlap per rank");
    for (int p = 0; p < n; p++) {
        const bm_pass_result *r = passes[p].result;
        fprintf(f, "%-5s %13.1f %9.2f %14.2f  ", pass_name(r->pass), r->bytes_per_rank / 1048576.0,
                1e3 * r->alone.best, r->bytes_per_rank / r->alone.best / 1e9);
        for (int rk = 0; rk < j->ranks; rk++) {
            double o = overlap_of(r, &passes[p].ranks[rk]);
            if (isnan(o))
                fprintf(f, " %d: -", rk);
            else
                fprintf(f, " %d: %.0f%%", rk, 100.0 * o);
        }
        fprintf(f, "\n");
    }
}

static void quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int bm_report_csv(const char *path, const bm_job *j, const bm_identity *id, const bm_pass_report *passes,
                  int n)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    const bm_options *o = &j->o;
    fprintf(
        f,
        "library_version,pass,dtype,b,hq,hkv,n,d,dv,causal,layout,ranks,threads,ref_threads,rank_bind,"
        "ref_bind,ranks_share_cpus,cpus,warmup,reps,rounds,flop,mpi_min_s,mpi_median_s,mpi_gflops,ref_min_s,"
        "ref_median_s,ref_gflops,mpi_over_ref,err_out,err_lse,err_dq,err_dk,err_dv,bitwise,call_max_s,"
        "blocks_max_s,blocks_mean_s,blocks_min_s,block_calls_max,merge_max_s,wait_max_s,wait_mean_s,"
        "progress_max_s,post_max_s,collectives_max_s,other_max_s,bytes_per_rank,alone_min_s,alone_gbps,"
        "overlap_min,overlap_mean,hosts,single_copy,mpi_library,host,cpu_model,compiler,build_type,"
        "git_revision,run_utc\n");
    int hosts = 0;
    for (int r = 0; r < j->ranks; r++) {
        int seen = 0;
        for (int s = 0; s < r && !seen; s++)
            seen = strcmp(j->where.where[r].host, j->where.where[s].host) == 0;
        hosts += !seen;
    }
    for (int p = 0; p < n; p++) {
        const bm_pass_result *r = passes[p].result;
        double flop = bm_flops(o, r->pass);
        spread call = over_ranks(&passes[p], j->ranks, -1),
               blocks = over_ranks(&passes[p], j->ranks, BM_BLOCKS);
        spread wait = over_ranks(&passes[p], j->ranks, BM_WAIT),
               other = over_ranks(&passes[p], j->ranks, BM_PARTS);
        double calls = 0.0;
        for (int rk = 0; rk < j->ranks; rk++)
            if (passes[p].ranks[rk].calls[BM_BLOCKS] > calls) calls = passes[p].ranks[rk].calls[BM_BLOCKS];
        spread overlap = j->ranks > 1 ? overlap_over_ranks(&passes[p], j->ranks) : (spread){NAN, NAN, NAN};
        fprintf(f, "%s,%s,%s,%lld,%lld,%lld,%lld,%lld,%lld,%s,%s,%d,%d,%d,%s,%s,%s,%d,%d,%d,%d,%.6g,",
                fa_version(), pass_name(r->pass), bm_dtype_name(o->dtype), (long long)o->b, (long long)o->hq,
                (long long)o->hkv, (long long)o->n, (long long)o->d, (long long)o->dv,
                bm_causal_name(o->causal), bm_layout_name(o->layout), j->ranks, o->threads, j->ref_threads,
                bm_bind_name(j->rank_bind), bm_bind_name(o->bind), j->where.shared ? "true" : "false",
                CPU_COUNT(&j->where.reference), o->warmup, o->reps, o->rounds, flop);
        fprintf(f, "%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,", r->mpi.best, bm_median(&r->mpi),
                flop / r->mpi.best / 1e9, r->ref.best, bm_median(&r->ref), flop / r->ref.best / 1e9,
                r->ref.best / r->mpi.best);
        for (int x = 0; x < BM_OUTPUTS; x++) {
            if (!isnan(r->error[x])) fprintf(f, "%.3g", r->error[x]);
            fputc(',', f);
        }
        fprintf(f, "%s,%.6g,%.6g,%.6g,%.6g,%.0f,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,",
                r->bitwise ? "true" : "false", call.max, blocks.max, blocks.mean, blocks.min, calls,
                over_ranks(&passes[p], j->ranks, BM_MERGE).max, wait.max, wait.mean,
                over_ranks(&passes[p], j->ranks, BM_PROGRESS).max,
                over_ranks(&passes[p], j->ranks, BM_POST).max,
                over_ranks(&passes[p], j->ranks, BM_COLLECTIVES).max, other.max);
        if (j->ranks > 1)
            fprintf(f, "%.0f,%.6g,%.6g,%.4g,%.4g,", r->bytes_per_rank, r->alone.best,
                    r->bytes_per_rank / r->alone.best / 1e9, overlap.min, overlap.mean);
        else
            fprintf(f, "0,,,,,");
        fprintf(f, "%d,%s,", hosts, id->single_copy);
        quoted(f, id->mpi_library);
        fputc(',', f);
        quoted(f, id->host);
        fputc(',', f);
        quoted(f, id->cpu_model);
        fprintf(f, ",%s,%s,%s,%s\n", id->compiler, id->build_type, id->git_revision, id->run_utc);
    }
    if (fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}
