/* SPDX-License-Identifier: BSD-3-Clause */
// The header of every case's report: what is measured, on what, and how it is counted. The table and
// the lines under it: report_table.c; the run's summary: report_summary.c.
#include "report.h"

#include <math.h>
#include <stdlib.h>

#include "dtypes.h"
#include "huge_pages.h"
#include "isa.h"
#include "modifiers.h"

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

// The score modifiers on a line of their own, with the values fa-bench chose for them (a ragged batch
// applies them to each sequence); nothing when there are none.
static void print_modifiers(FILE *f, const bench_run_info *info)
{
    const bench_shape *s = &info->shape;
    const bench_mods *m = &s->mods;
    if (bench_mods_any(m)) {
        fprintf(f, "\n  score modifiers%s:", s->ragged.kind != BENCH_RAGGED_NONE ? ", per sequence" : "");
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
            fprintf(f, "%ssinks, one logit per head%s", sep,
                    info->pass != BENCH_PASS_FWD ? ", and dsinks" : "");
    }
    if (info->reference >= 0)
        fprintf(f,
                "\n  compared with case %d of this run (%% ref: GFLOP/s over its GFLOP/s at the same thread "
                "count)",
                info->reference + 1);
}

// The shape on the first line: a dense problem's sizes, or the ragged batch's spec.
static void print_shape(FILE *f, const bench_run_info *info)
{
    const bench_shape *s = &info->shape;
    const bench_ragged *g = &s->ragged;
    if (g->kind == BENCH_RAGGED_VARLEN)
        fprintf(f, "varlen: %lld packed sequences of %lld..%lld tokens, ", (long long)g->count,
                (long long)g->lo, (long long)g->hi);
    else if (g->kind == BENCH_RAGGED_DECODE)
        fprintf(f, "decode batch: %lld sequences, Nq=1, caches of %lld..%lld keys, ", (long long)g->count,
                (long long)g->lo, (long long)g->hi);
    else
        fprintf(f, "B=%lld ", (long long)s->b);
    fprintf(f, "Hq=%lld Hkv=%lld ", (long long)s->hq, (long long)s->hkv);
    if (g->kind == BENCH_RAGGED_NONE) fprintf(f, "Nq=%lld Nk=%lld ", (long long)s->nq, (long long)s->nk);
    fprintf(f, "D=%lld Dv=%lld", (long long)s->d, (long long)s->dv);
}

// A dense problem's call and FLOP count, and its cache's form.
static void print_dense_calls(FILE *f, const bench_run_info *info)
{
    const bench_shape *s = &info->shape;
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
            "mask and window, %.4g%% of Nq*Nk)",
            info->flops, flop_multiplier(info->pass), (long long)info->visible_pairs,
            100.0 * (double)info->visible_pairs / ((double)s->nq * (double)s->nk));
}

// --varlen's three calls and their FLOP counts.
static void print_varlen_calls(FILE *f, const bench_run_info *info)
{
    const bench_shape *s = &info->shape;
    long long n = (long long)s->ragged.count;
    fprintf(
        f,
        "\n  (a) packed: one fa_forward, q, k, v and out %s memory, cu_seqlens_q = cu_seqlens_k"
        "\n  (b) equal: one dense fa_forward of B=%lld Nq=Nk=L_eq=%lld, the length whose B*V(L) is nearest "
        "the sequences' sum of V(L_b)"
        "\n  (c) loop: %lld dense fa_forward calls, one per sequence, on views of (a)'s buffers",
        s->layout == BENCH_LAYOUT_BSHD ? "[total][H][D]" : "[H][total][D]", n, (long long)info->ragged.l_eq,
        n);
    fprintf(
        f,
        "\n  FLOP per call: (a) and (c) %.4g = 2*Hq*V*(D+Dv), V = %lld (i, j) pairs per head visible in the "
        "sequences (the causal mask and window applied to each); (b) %.4g, its own pairs",
        info->flops, (long long)info->visible_pairs, info->ragged.equal_flops);
}

// --decode-batch's caches, and the bytes and FLOP of one call.
static void print_decode_calls(FILE *f, const bench_run_info *info)
{
    const bench_shape *s = &info->shape;
    const bench_ragged *g = &s->ragged;
    const bench_ragged_info *ri = &info->ragged;
    int bshd = s->layout == BENCH_LAYOUT_BSHD;
    fprintf(f, "\n  contiguous: k and v %s, seqused_k = the keys in use (NaN beyond them), cap = %lld",
            bshd ? "[B][cap][Hkv][D]" : "[B][Hkv][cap][D]", (long long)ri->capacity);
    if (g->page_size > 0)
        fprintf(f,
                "\n  paged: pools %s of %lld pages of %lld keys, handed out in a shuffled order; block_table "
                "[B][%lld]",
                bshd ? "[pages][P][Hkv][D]" : "[pages][Hkv][P][D]", (long long)ri->num_pages,
                (long long)g->page_size, (long long)ri->pages_per_seq);
    else
        fprintf(f, "\n  paged: none (--page-size 0)");
    if (kit_dtype_is_quantized(s->kv_dtype) && g->inline_scales)
        fprintf(f,
                "\n  k and v %s codes, each row's f32 scale (row max|x| / %g) right after its codes, rows "
                "padded to 4 bytes (--kv-scales inline: the scale views alias the caches%s)",
                bench_dtype_name(s->kv_dtype), kit_quant_code_max(s->kv_dtype),
                g->page_size > 0 ? " and pools" : "");
    else if (kit_dtype_is_quantized(s->kv_dtype))
        fprintf(
            f,
            "\n  k and v %s codes, each with f32 scales per token and head, [B][Hkv][cap][1]%s (row max|x| "
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

// The probes this case's rows get (case.c, measure_probes).
static void print_probes(FILE *f, const bench_run_info *info)
{
    const bench_options *o = info->opt;
    int peak = info->shape.ragged.kind != BENCH_RAGGED_DECODE, read = info->decode || info->bias_bandwidth;
    if (!(o->probe_time > 0.0)) {
        fprintf(f, "\n  in-run probes: off (--probe-time 0)");
        return;
    }
    fprintf(f, "\n  in-run probes, %g s per thread count: ", o->probe_time);
    if (peak)
        fprintf(f, "FMA peak for the kernel table's ISA and %s%s",
                bench_dtype_name(kit_accum_dtype(info->shape.dtype)), read ? "; " : "");
    if (read)
        fprintf(f, "read bandwidth (%s)",
                info->decode ? "decode shape: K and V are read once per call" : "the full bias is read once");
}

void bench_report_header(FILE *f, const bench_run_info *info)
{
    const bench_options *o = info->opt;
    const bench_shape *s = &info->shape;
    const bench_ragged_kind kind = s->ragged.kind;
    char types[48];
    bench_dtypes_words(s, types, sizeof types);
    fprintf(f, "fa-bench: flashattn %s, %s, %s, ", info->version, pass_title(info->pass), types);
    print_shape(f, info);
    fprintf(f, ", causal=%s, layout=%s", bench_causal_name(s->causal), bench_layout_name(s->layout));
    if (o->preset) fprintf(f, " [preset %s, shape %d of %d]", o->preset, info->case_index + 1, o->n_cases);
    if (kind != BENCH_RAGGED_NONE) {
        const bench_ragged_info *ri = &info->ragged;
        fprintf(f, "\n  %s (seed %llu): %lld in all, min %lld, mean %.1f, max %lld",
                kind == BENCH_RAGGED_VARLEN ? "lengths" : "keys in use", (unsigned long long)o->seed,
                (long long)ri->total, (long long)ri->min, ri->mean, (long long)ri->max);
    }
    const bench_identity *id = info->identity;
    fprintf(f, "\n  %s, %s, %d cores (%d CPUs) allowed; %s %s build, source %s; run started %s", id->host,
            id->cpu_model, id->allowed_cores, id->allowed_cpus, id->compiler, id->build_type,
            id->git_revision, id->run_utc);
    print_modifiers(f, info);
    if (kind == BENCH_RAGGED_VARLEN)
        print_varlen_calls(f, info);
    else if (kind == BENCH_RAGGED_DECODE)
        print_decode_calls(f, info);
    else
        print_dense_calls(f, info);
    fprintf(f, "\n  inputs %s, seed %llu; warmup %d, reps %d", bench_dist_name(o->dist),
            (unsigned long long)o->seed, o->warmup, o->reps);
    if (o->min_time > 0.0) fprintf(f, ", min-time %gs", o->min_time);
    if (o->huge_pages)
        fprintf(f, "; buffers of %zu MiB and more advised into huge pages (THP mode %s)",
                BENCH_HUGE_PAGE >> 20, bench_thp_mode());
    if (kind != BENCH_RAGGED_NONE || o->dropout > 0.0)
        fprintf(f, "; each call timed in turn at each thread count");
    if (o->rounds > 1)
        fprintf(
            f,
            "; %d rounds of every case, each row (and each call it is compared with) from its fastest round",
            o->rounds);
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
    print_probes(f, info);
    fprintf(f, "\n  BLAS baseline: %s", info->blas);
    if (info->blas_runs) {
        fprintf(f, ", %s, %d reps", bench_blas_mode_name(o->blas_mode), o->blas_reps);
        print_openblas_environment(f);
        if (info->blas_warning[0]) fprintf(f, "\n  WARNING: %s", info->blas_warning);
    }
    fputc('\n', f);
}
