/* SPDX-License-Identifier: BSD-3-Clause */
// CSV and JSON output. The column list is written once (BENCH_COLUMNS) and expanded for both
// formats, so the two files can never disagree on names or order.
#include "export.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtypes.h"
#include "huge_pages.h"
#include "isa.h"

typedef enum { VAL_STR, VAL_INT, VAL_U64, VAL_NUM, VAL_BOOL } value_kind;

typedef struct {
    value_kind kind;
    const char *s;
    long long i;          // VAL_INT; VAL_BOOL: 1 true, 0 false, other: unknown
    unsigned long long u; // VAL_U64 (the seed may use all 64 bits)
    double x;             // VAL_NUM; not finite: unknown
} value;

static value vstr(const char *s)
{
    return (value){VAL_STR, s ? s : "", 0, 0, 0.0};
}
static value vint(long long i)
{
    return (value){VAL_INT, NULL, i, 0, 0.0};
}
static value vu64(uint64_t u)
{
    return (value){VAL_U64, NULL, 0, (unsigned long long)u, 0.0};
}
static value vnum(double x)
{
    return (value){VAL_NUM, NULL, 0, 0, x};
}
static value vbool(int b)
{
    return (value){VAL_BOOL, NULL, b, 0, 0.0};
}

// X(name, value expression); in scope: info (const bench_run_info *), s (const bench_shape *),
// row (const bench_row *), id (const bench_identity *). New columns go at the end, so that scripts
// reading columns by position keep working and older files stay a prefix of newer ones.
#define BENCH_COLUMNS(X)                                                                                \
    X("library_version", vstr(info->version))                                                           \
    X("preset", vstr(info->opt->preset))                                                                \
    X("shape_index", vint(info->case_index))                                                            \
    X("pass", vstr(bench_pass_name(info->pass)))                                                        \
    X("dtype", vstr(bench_dtype_name(s->dtype)))                                                        \
    X("causal", vstr(bench_causal_name(s->causal)))                                                     \
    X("layout", vstr(bench_layout_name(s->layout)))                                                     \
    X("b", vint(s->b))                                                                                  \
    X("hq", vint(s->hq))                                                                                \
    X("hkv", vint(s->hkv))                                                                              \
    X("nq", vint(s->nq))                                                                                \
    X("nk", vint(s->nk))                                                                                \
    X("d", vint(s->d))                                                                                  \
    X("dv", vint(s->dv))                                                                                \
    X("dist", vstr(bench_dist_name(info->opt->dist)))                                                   \
    X("seed", vu64(info->opt->seed))                                                                    \
    X("threads", vint(row->threads))                                                                    \
    X("bind_requested", vstr(bench_bind_name(info->opt->bind)))                                         \
    X("bind", vstr(bench_bind_name(row->stats.bind)))                                                   \
    X("bound_threads", vint(row->stats.bound_threads))                                                  \
    X("block_q", vint(row->stats.block_q))                                                              \
    X("block_k", vint(row->stats.block_k))                                                              \
    X("isa_requested", vstr(bench_isa_requested()))                                                     \
    X("isa", vstr(row->isa))                                                                            \
    X("backward_plan", vstr(row->plan))                                                                 \
    X("warmup", vint(info->opt->warmup))                                                                \
    X("reps", vint(row->timing.count))                                                                  \
    X("min_s", vnum(row->timing.min_s))                                                                 \
    X("median_s", vnum(row->timing.median_s))                                                           \
    X("flop", vnum(info->flops))                                                                        \
    X("gflops", vnum(row->gflops))                                                                      \
    X("speedup", vnum(row->speedup))                                                                    \
    X("efficiency", vnum(row->efficiency))                                                              \
    X("probe_time_s", vnum(info->opt->probe_time))                                                      \
    X("peak_isa", vstr(row->peak_isa))                                                                  \
    X("peak_gflops", vnum(row->peak_gflops))                                                            \
    X("pct_peak", vnum(row->pct_peak))                                                                  \
    X("decode", vbool(info->decode))                                                                    \
    X("kv_bytes", vnum(info->kv_bytes))                                                                 \
    X("kv_gbps", vnum(row->kv_gbps))                                                                    \
    X("read_gbps", vnum(row->read_gbps))                                                                \
    X("pct_read_bw", vnum(row->pct_read_bw))                                                            \
    X("blas", vstr(info->blas))                                                                         \
    X("blas_mode", vstr(row->blas_mode == BENCH_BLAS_BEST ? "" : bench_blas_mode_name(row->blas_mode))) \
    X("blas_reps", vint(row->blas_timing.count))                                                        \
    X("blas_min_s", vnum(row->blas_timing.min_s))                                                       \
    X("blas_median_s", vnum(row->blas_timing.median_s))                                                 \
    X("blas_gflops", vnum(row->blas_gflops))                                                            \
    X("speedup_vs_blas", vnum(row->speedup_vs_blas))                                                    \
    X("blas_err", vnum(row->blas_err))                                                                  \
    X("blas_row_blocks_min_s", vnum(row->blas_mode_min_s[BENCH_BLAS_ROW_BLOCKS]))                       \
    X("blas_gemm_threads_min_s", vnum(row->blas_mode_min_s[BENCH_BLAS_GEMM_THREADS]))                   \
    X("scratch_peak_bytes", vint((long long)row->stats.scratch_peak))                                   \
    X("scratch_capacity_bytes", vint((long long)row->stats.scratch_capacity))                           \
    X("rows_checked", vint(row->rows_checked))                                                          \
    X("err_out", vnum(row->err_out))                                                                    \
    X("err_lse", vnum(row->err_lse))                                                                    \
    X("tolerance", vnum(info->tolerance))                                                               \
    X("rows_checked_dq", vint(row->rows_checked_dq))                                                    \
    X("rows_checked_dkdv", vint(row->rows_checked_dkdv))                                                \
    X("err_dq", vnum(row->err_dq))                                                                      \
    X("err_dk", vnum(row->err_dk))                                                                      \
    X("err_dv", vnum(row->err_dv))                                                                      \
    X("grad_tolerance", vnum(info->grad_tolerance))                                                     \
    X("bitwise_identical", vbool(row->bitwise_identical))                                               \
    X("host", vstr(id->host))                                                                           \
    X("cpu_model", vstr(id->cpu_model))                                                                 \
    X("allowed_cores", vint(id->allowed_cores))                                                         \
    X("allowed_cpus", vint(id->allowed_cpus))                                                           \
    X("compiler", vstr(id->compiler))                                                                   \
    X("build_type", vstr(id->build_type))                                                               \
    X("git_revision", vstr(id->git_revision))                                                           \
    X("run_utc", vstr(id->run_utc))                                                                     \
    X("blas_warning", vstr(info->blas_warning))                                                         \
    X("window_left", vint(s->mods.window_left))                                                         \
    X("window_right", vint(s->mods.window_right))                                                       \
    X("softcap", vnum(s->mods.softcap))                                                                 \
    X("alibi", vbool(s->mods.alibi))                                                                    \
    X("bias", vstr(bench_bias_name(s->mods.bias)))                                                      \
    X("sinks", vbool(s->mods.sinks))                                                                    \
    X("visible_pairs", vint(info->visible_pairs))                                                       \
    X("bias_bytes", vnum(info->bias_bytes))                                                             \
    X("bias_gbps", vnum(row->bias_gbps))                                                                \
    X("pct_bias_read_bw", vnum(row->pct_bias_bw))                                                       \
    X("err_dsinks", vnum(row->err_dsinks))                                                              \
    X("reference_case", vnum(info->reference >= 0 ? (double)info->reference : NAN))                     \
    X("reference_gflops", vnum(row->reference_gflops))                                                  \
    X("pct_of_reference", vnum(row->pct_of_reference))                                                  \
    X("rounds", vint(info->opt->rounds))                                                                \
    X("ragged", vstr(bench_ragged_name(s->ragged.kind)))                                                \
    X("seqs", vnum(RAGGED(s->ragged.count)))                                                            \
    X("len_lo", vnum(RAGGED(s->ragged.lo)))                                                             \
    X("len_hi", vnum(RAGGED(s->ragged.hi)))                                                             \
    X("len_total", vnum(RAGGED(info->ragged.total)))                                                    \
    X("len_min", vnum(RAGGED(info->ragged.min)))                                                        \
    X("len_mean", vnum(RAGGED(info->ragged.mean)))                                                      \
    X("len_max", vnum(RAGGED(info->ragged.max)))                                                        \
    X("l_eq", vnum(VARLEN(info->ragged.l_eq)))                                                          \
    X("equal_flop", vnum(VARLEN(info->ragged.equal_flops)))                                             \
    X("equal_min_s", vnum(row->ragged.equal.min_s))                                                     \
    X("equal_gflops", vnum(row->ragged.equal_gflops))                                                   \
    X("loop_min_s", vnum(row->ragged.loop.min_s))                                                       \
    X("loop_gflops", vnum(row->ragged.loop_gflops))                                                     \
    X("varlen_vs_equal", vnum(row->ragged.vs_equal))                                                    \
    X("varlen_vs_loop", vnum(row->ragged.vs_loop))                                                      \
    X("loop_seqs_bitwise", vnum(VARLEN(row->ragged.seqs_bitwise)))                                      \
    X("loop_seqs_other_blocks", vnum(VARLEN(row->ragged.seqs_other_blocks)))                            \
    X("loop_seqs_may_split", vnum(VARLEN(row->ragged.seqs_may_split)))                                  \
    X("err_loop", vnum(VARLEN(row->ragged.err_loop)))                                                   \
    X("page_size", vnum(DECODE(s->ragged.page_size)))                                                   \
    X("kv_capacity", vnum(DECODE(info->ragged.capacity)))                                               \
    X("num_pages", vnum(DECODE(info->ragged.num_pages)))                                                \
    X("contiguous_min_s", vnum(row->ragged.contiguous.min_s))                                           \
    X("contiguous_kv_gbps", vnum(row->ragged.contiguous_kv_gbps))                                       \
    X("contiguous_pct_read_bw", vnum(row->ragged.contiguous_pct_read_bw))                               \
    X("paged_over_contiguous", vnum(row->ragged.paged_over_contiguous))                                 \
    X("kv_dtype", vstr(bench_dtype_name(s->kv_dtype)))                                                  \
    X("lse_tolerance", vnum(info->lse_tolerance))                                                       \
    X("grad_kv_tolerance", vnum(info->grad_kv_tolerance))                                               \
    X("kv_scales", vstr(kv_scales_name(s)))                                                             \
    X("shared_kv", vbool(s->shared_kv))                                                                 \
    X("probe_spread", vnum(row->probe_spread))                                                          \
    X("disturbed", vbool(bench_row_disturbed(row, NULL, NULL, NULL)))                                   \
    X("huge_pages", vbool(bench_huge_pages_asked()))                                                    \
    X("page_read_gbps", vnum(row->ragged.page_read_gbps))                                               \
    X("pct_page_read_bw", vnum(row->ragged.pct_page_read_bw))                                           \
    X("pct_of_reference_round_lo", vnum(row->pct_of_reference_lo))                                      \
    X("pct_of_reference_round_hi", vnum(row->pct_of_reference_hi))

// Where a quantized cache's scales are: "token-head" (arrays of their own), "token-head-inline".
static const char *kv_scales_name(const bench_shape *s)
{
    if (!kit_dtype_is_quantized(s->kv_dtype)) return "";
    return s->ragged.inline_scales ? "token-head-inline" : "token-head";
}

// A ragged case's figure (of any kind, of --varlen's, of --decode-batch's) as a double; NAN (an empty
// field, null in JSON) for the other rows.
#define RAGGED(x) (s->ragged.kind != BENCH_RAGGED_NONE ? (double)(x) : NAN)
#define VARLEN(x) (s->ragged.kind == BENCH_RAGGED_VARLEN ? (double)(x) : NAN)
#define DECODE(x) (s->ragged.kind == BENCH_RAGGED_DECODE ? (double)(x) : NAN)

#define COLUMN_NAME(name, expr)  name,
#define COLUMN_VALUE(name, expr) expr,

static const char *const column_names[] = {BENCH_COLUMNS(COLUMN_NAME)};
enum { N_COLUMNS = (int)(sizeof column_names / sizeof column_names[0]) };

static void row_values(const bench_run_info *info, const bench_row *row, value out[N_COLUMNS])
{
    const bench_shape *s = &info->shape;
    const bench_identity *id = info->identity;
    const value v[] = {BENCH_COLUMNS(COLUMN_VALUE)};
    memcpy(out, v, sizeof v);
}

static FILE *open_output(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) fprintf(stderr, "fa-bench: cannot write %s: %s\n", path, strerror(errno));
    return f;
}

// fclose reports a failed final flush (a full disk) that fprintf may not have.
static int close_output(FILE *f, const char *path)
{
    int failed = ferror(f);
    if (fclose(f) != 0) failed = 1;
    if (failed) fprintf(stderr, "fa-bench: error while writing %s\n", path);
    return failed ? -1 : 0;
}

// A number that round-trips through text at the precision a plot needs; unknown as `unknown`.
static void print_number(FILE *f, double x, const char *unknown)
{
    if (isfinite(x))
        fprintf(f, "%.10g", x);
    else
        fputs(unknown, f);
}

static void print_csv_field(FILE *f, const value *v)
{
    switch (v->kind) {
    case VAL_STR:
        if (strpbrk(v->s, ",\"\n")) {
            fputc('"', f);
            for (const char *c = v->s; *c; c++) {
                if (*c == '"') fputc('"', f);
                fputc(*c, f);
            }
            fputc('"', f);
        } else {
            fputs(v->s, f);
        }
        break;
    case VAL_INT: fprintf(f, "%lld", v->i); break;
    case VAL_U64: fprintf(f, "%llu", v->u); break;
    case VAL_NUM: print_number(f, v->x, ""); break;
    case VAL_BOOL: fputs(v->i == 1 ? "true" : v->i == 0 ? "false" : "", f); break;
    }
}

static void print_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}

static void print_json_field(FILE *f, const value *v)
{
    switch (v->kind) {
    case VAL_STR: print_json_string(f, v->s); break;
    case VAL_INT: fprintf(f, "%lld", v->i); break;
    case VAL_U64: fprintf(f, "%llu", v->u); break;
    case VAL_NUM: print_number(f, v->x, "null"); break;
    case VAL_BOOL: fputs(v->i == 1 ? "true" : v->i == 0 ? "false" : "null", f); break;
    }
}

int bench_export_csv(const char *path, const bench_case_result *cases, int n_cases)
{
    FILE *f = open_output(path);
    if (!f) return -1;
    for (int c = 0; c < N_COLUMNS; c++) fprintf(f, "%s%s", c ? "," : "", column_names[c]);
    fputc('\n', f);
    for (int k = 0; k < n_cases; k++) {
        for (int r = 0; r < cases[k].n_rows; r++) {
            value v[N_COLUMNS];
            row_values(&cases[k].info, &cases[k].rows[r], v);
            for (int c = 0; c < N_COLUMNS; c++) {
                if (c) fputc(',', f);
                print_csv_field(f, &v[c]);
            }
            fputc('\n', f);
        }
    }
    return close_output(f, path);
}

int bench_export_json(const char *path, const bench_case_result *cases, int n_cases)
{
    FILE *f = open_output(path);
    if (!f) return -1;
    fputs("[", f);
    int first = 1;
    for (int k = 0; k < n_cases; k++) {
        for (int r = 0; r < cases[k].n_rows; r++) {
            value v[N_COLUMNS];
            row_values(&cases[k].info, &cases[k].rows[r], v);
            fputs(first ? "\n  {" : ",\n  {", f);
            first = 0;
            for (int c = 0; c < N_COLUMNS; c++) {
                fputs(c ? ", " : "", f);
                print_json_string(f, column_names[c]);
                fputs(": ", f);
                print_json_field(f, &v[c]);
            }
            fputs("}", f);
        }
    }
    fputs("\n]\n", f);
    return close_output(f, path);
}
