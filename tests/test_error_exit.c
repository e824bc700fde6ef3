/* SPDX-License-Identifier: BSD-3-Clause */
/* Error exits, reference-BLAS style: every parameter of fa_forward, fa_backward, fa_merge,
 * fa_context_create, fa_context_stats and the fa_tensor_* helpers, every field of fa_tensor,
 * fa_params, fa_seqs (with its arrays' elements) and fa_context_opts, and the size tag of each of
 * fa_params, fa_seqs, fa_context_opts and fa_stats (struct_size, and the bytes past this build's
 * struct: include/flashattn.h, "ABI"), gets every class of bad value that applies to it. Each call must
 * return the one status the header documents (first class in
 * the order NULL, ARG, DTYPE, SHAPE, STRIDE, ALIAS, UNSUPPORTED, BUSY), leave every byte of every
 * tensor, of lse, of the sequences' arrays, of the context's stats and of *ctx as it was, and leave
 * in fa_last_error() a line that starts with the call's name and names the offending argument (in the
 * row's own words where it gives them). The table is in error_exit*.c; this file runs it (a case
 * whose bad pointer would crash a library that reads it runs in a child process, so a crash is one
 * failed case, not the end of the table), adds the context calls, and prints one line:
 *   P parameters x V bad values: U undetected, C buffers changed, M messages not naming the argument
 * (P distinct parameters and V bad values counted from what actually ran; each value runs on f32
 * and f64, or on f32 alone when it is valid for f64, with an own context and with ctx = NULL).
 * Every case starts from a call with every field of fa_params in use; the dtype rows set every
 * tensor's dtype themselves (bf16, f16 and f32 over a half KV cache among them, flashattn.h's dtype
 * groups), and where two dtypes are off at once, the diagnostic must name the first in the
 * documented order and not the second. Quantized KV caches (error_exit_quantized.c) start from the
 * same call with k and v quantized and their scales set, and break the scales' pointers, dtypes,
 * shapes, strides and places. Then: element-misaligned data. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error_exit.h"
#include "util.h"

/* Parameters and bad values actually run, and what went wrong. */
typedef struct {
    int values, undetected, changed, unnamed;
    char (*params)[64];
    int n_params, cap;
} ee_tally;

/* Records one bad value of `param`: undetected, changed and unnamed (its diagnostic did not name
 * the argument) are 0 or 1. */
static void ee_tally_add(ee_tally *t, const char *param, int undetected, int changed, int unnamed)
{
    t->values++;
    t->undetected += undetected != 0;
    t->changed += changed != 0;
    t->unnamed += unnamed != 0;
    for (int i = 0; i < t->n_params; i++)
        if (strcmp(t->params[i], param) == 0) return;
    if (t->n_params == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 128;
        t->params = realloc(t->params, (size_t)t->cap * sizeof *t->params);
        cr_assert(t->params);
    }
    snprintf(t->params[t->n_params++], sizeof t->params[0], "%s", param);
}

static void ee_tally_free(ee_tally *t)
{
    free(t->params);
    memset(t, 0, sizeof *t);
}

static int stats_equal(const fa_stats *a, const fa_stats *b)
{
    return a->num_threads == b->num_threads && a->bind == b->bind && a->bound_threads == b->bound_threads &&
           a->block_q == b->block_q && a->block_k == b->block_k && a->isa == b->isa &&
           a->scratch_capacity == b->scratch_capacity && a->scratch_peak == b->scratch_peak;
}

/* ---- fa_forward, fa_backward and fa_merge ------------------------------------------------- */

/* What one call did. */
typedef struct {
    int st;       /* its status; -2 when it did not return (crashed: signal in crash) */
    int crash;    /* the signal that ended the child, or 0 (an exit without an outcome: -1) */
    int pool_ok;  /* no byte of the pool changed */
    int stats_ok; /* the context's stats did not change */
    char diag[256];
    int check_st; /* what fa_forward_check / fa_backward_check said of the same arguments (-3: none) */
    char check_diag[256];
} ee_outcome;

static void call_and_look(ee_world *wd, const ee_case *c, ee_args *a, ee_outcome *o)
{
    fa_stats before = FA_STATS_INIT, after = FA_STATS_INIT;
    cr_assert_eq(fa_context_stats(wd->ctx, &before), FA_OK);
    o->st = ee_call_run(c->call, a);
    snprintf(o->diag, sizeof o->diag, "%s", fa_last_error());
    o->check_st = ee_check_run(c->call, a);
    snprintf(o->check_diag, sizeof o->check_diag, "%s", fa_last_error());
    cr_assert_eq(fa_context_stats(wd->ctx, &after), FA_OK);
    o->pool_ok = ee_world_unchanged(wd);
    o->stats_ok = stats_equal(&before, &after);
}

/* The call in a child process, its outcome sent back through a pipe. */
static void call_isolated(ee_world *wd, const ee_case *c, ee_args *a, ee_outcome *o)
{
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        ee_outcome mine;
        memset(&mine, 0, sizeof mine);
        call_and_look(wd, c, a, &mine);
        ssize_t put = write(fd[1], &mine, sizeof mine);
        _exit(put == (ssize_t)sizeof mine ? 0 : 1);
    }
    close(fd[1]);
    memset(o, 0, sizeof *o);
    ssize_t got = read(fd[0], o, sizeof *o);
    close(fd[0]);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    if (got != (ssize_t)sizeof *o) {
        o->st = -2;
        o->crash = WIFSIGNALED(status) ? WTERMSIG(status) : -1;
        o->pool_ok = o->stats_ok = 1; /* nothing to say of a process that is gone */
        snprintf(o->diag, sizeof o->diag, "(none: the call did not return)");
    }
}

static void run_call_table(ee_tally *tally, uint64_t seed)
{
    ee_world w[2];
    ee_world_make(&w[0], FA_F32, seed);
    ee_world_make(&w[1], FA_F64, seed + 1);
    ee_table table;
    ee_build_table(&table);
    for (int n = 0; n < table.n; n++) {
        const ee_case *c = &table.v[n];
        int undetected = 0, changed = 0, unnamed = 0;
        for (int dt = 0; dt < (c->f32_only ? 1 : 2); dt++)
            for (int use_null = 0; use_null < 2; use_null++) {
                ee_world *wd = &w[dt];
                ee_args a;
                ee_valid_args(wd, &a);
                ee_apply(c, wd, &a);
                if (a.busy && use_null) continue; /* only an own context can be busy */
                if (use_null) a.ctx = NULL;
                ee_world_arm(wd); /* the pool as the case left it (the arrays of its sequences) */
                ee_outcome o;
                if (c->isolate)
                    call_isolated(wd, c, &a, &o);
                else
                    call_and_look(wd, c, &a, &o);
                const char *how = dt ? (use_null ? "f64, ctx NULL" : "f64, own ctx")
                                     : (use_null ? "f32, ctx NULL" : "f32, own ctx");
                if (o.st == -2) {
                    undetected = 1;
                    cr_expect_fail(
                        "%s = %s [%s], seed %llu: the call did not return (%s %d), documented %d (%s)",
                        c->param, c->value, how, (unsigned long long)wd->seed,
                        o.crash > 0 ? "signal" : "exit without an outcome", o.crash, c->want,
                        fa_status_str(c->want));
                } else if (o.st != (int)c->want || a.helper_broken) {
                    undetected = 1;
                    cr_expect_fail("%s = %s [%s], seed %llu: status %d (%s), documented %d (%s)%s", c->param,
                                   c->value, how, (unsigned long long)wd->seed, o.st,
                                   fa_status_str((fa_status)o.st), c->want, fa_status_str(c->want),
                                   a.helper_broken ? "; the helper's view has no negative stride" : "");
                }
                const char *call_name = ee_call_name(c->call);
                const char *names = dt && c->names_f64[0] ? c->names_f64 : c->names;
                if (o.st != -2 && !ee_names_argument(o.diag, call_name, names)) {
                    unnamed = 1;
                    cr_expect_fail("%s = %s [%s]: fa_last_error() is \"%s\", which does not start with "
                                   "\"%s: \" and name %s",
                                   c->param, c->value, how, o.diag, call_name, names);
                }
                /* where the row says how, in those words ("out overlaps p.seqs.cu_seqlens_q") */
                if (o.st != -2 && c->phrase[0] && !strstr(o.diag, c->phrase)) {
                    unnamed = 1;
                    cr_expect_fail("%s = %s [%s]: fa_last_error() is \"%s\", which does not say \"%s\"",
                                   c->param, c->value, how, o.diag, c->phrase);
                }
                /* of two problems of one class, the later in the documented order goes unnamed */
                if (o.st != -2 && c->not_named[0] && ee_names_argument(o.diag, call_name, c->not_named)) {
                    unnamed = 1;
                    cr_expect_fail("%s = %s [%s]: fa_last_error() is \"%s\", which names %s, the later of "
                                   "the two in the documented order",
                                   c->param, c->value, how, o.diag, c->not_named);
                }
                /* The check calls give the same refusal and name the same argument (they cannot
                 * foresee a busy context, and fa_merge has none). */
                if (o.st != -2 && o.check_st != -3 && c->want != FA_ERR_BUSY) {
                    char check_name[32];
                    snprintf(check_name, sizeof check_name, "%s_check", call_name);
                    if (o.check_st != (int)c->want || !ee_names_argument(o.check_diag, check_name, names) ||
                        (c->phrase[0] && !strstr(o.check_diag, c->phrase)) ||
                        (c->not_named[0] && ee_names_argument(o.check_diag, check_name, c->not_named))) {
                        undetected = 1;
                        cr_expect_fail("%s = %s [%s]: %s gave %d (%s), \"%s\"; documented %d", c->param,
                                       c->value, how, check_name, o.check_st,
                                       fa_status_str((fa_status)o.check_st), o.check_diag, c->want);
                    }
                }
                if (!o.pool_ok || !o.stats_ok) {
                    changed = 1;
                    cr_expect_fail("%s = %s [%s], seed %llu: status %d, and %s changed", c->param, c->value,
                                   how, (unsigned long long)wd->seed, o.st,
                                   !o.pool_ok ? "a byte of the tensors, lse or arrays"
                                              : "the context's stats");
                }
                ee_world_restore(wd);
            }
        ee_tally_add(tally, c->param, undetected, changed, unnamed);
    }
    /* The contexts still serve valid calls after all those refusals. */
    for (int dt = 0; dt < 2; dt++) {
        for (int call = 0; call <= EE_CONVERT; call++) {
            ee_args a;
            ee_valid_args(&w[dt], &a);
            cr_expect_eq(ee_call_run((ee_call)call, &a), FA_OK, "a valid %s after the bad ones",
                         ee_call_name((ee_call)call));
            ee_world_restore(&w[dt]);
        }
        ee_world_free(&w[dt]);
    }
    ee_table_free(&table);
}

/* ---- fa_context_create --------------------------------------------------------------------- */

static void run_context_create(ee_tally *tally)
{
    /* Each case's opts: FA_CONTEXT_OPTS_INIT with the fields it names set (fields_set: the values
     * below replace num_threads, bind, block_q, block_k). struct_size and the bytes past the struct
     * (include/flashattn.h, "ABI") are run_context_create_sizes'. */
    static const struct {
        const char *param, *value;
        int null_ctx, null_opts, fields_set;
        int num_threads, bind, block_q, block_k;
        const char *env, *env_value; /* set around the call, with bind AUTO */
        fa_status want;
    } cases[] = {
        {"ctx", "NULL (opts NULL)", 1, 1, 0, 0, 0, 0, 0, NULL, NULL, FA_ERR_NULL},
        {"ctx", "NULL (opts valid)", 1, 0, 0, 0, 0, 0, 0, NULL, NULL, FA_ERR_NULL},
        {"opts", "every field invalid", 0, 0, 1, -1, 9, -1, -1, NULL, NULL, FA_ERR_ARG},
        {"opts->num_threads", "-1", 0, 0, 1, -1, FA_BIND_AUTO, 0, 0, NULL, NULL, FA_ERR_ARG},
        {"opts->num_threads", "INT_MIN", 0, 0, 1, INT_MIN, FA_BIND_AUTO, 0, 0, NULL, NULL, FA_ERR_ARG},
        {"opts->bind", "4", 0, 0, 1, 0, 4, 0, 0, NULL, NULL, FA_ERR_ARG},
        {"opts->bind", "-1", 0, 0, 1, 0, -1, 0, 0, NULL, NULL, FA_ERR_ARG},
        {"opts->bind", "99", 0, 0, 1, 0, 99, 0, 0, NULL, NULL, FA_ERR_ARG},
        {"opts->bind", "INT_MIN", 0, 0, 1, 0, INT_MIN, 0, 0, NULL, NULL, FA_ERR_ARG},
        {"opts->bind", "INT_MAX", 0, 0, 1, 0, INT_MAX, 0, 0, NULL, NULL, FA_ERR_ARG},
        {"opts->block_q", "-1", 0, 0, 1, 0, FA_BIND_AUTO, -1, 0, NULL, NULL, FA_ERR_ARG},
        {"opts->block_q", "INT_MIN", 0, 0, 1, 0, FA_BIND_AUTO, INT_MIN, 0, NULL, NULL, FA_ERR_ARG},
        {"opts->block_k", "-1", 0, 0, 1, 0, FA_BIND_AUTO, 0, -1, NULL, NULL, FA_ERR_ARG},
        {"opts->block_k", "INT_MIN", 0, 0, 1, 0, FA_BIND_AUTO, 0, INT_MIN, NULL, NULL, FA_ERR_ARG},
        {"env FLASHATTN_BIND", "bogus", 0, 1, 0, 0, 0, 0, 0, "FLASHATTN_BIND", "bogus", FA_ERR_ARG},
        {"env FLASHATTN_BIND", "CORE", 0, 1, 0, 0, 0, 0, 0, "FLASHATTN_BIND", "CORE", FA_ERR_ARG},
        {"env FLASHATTN_BIND", "\"core \"", 0, 1, 0, 0, 0, 0, 0, "FLASHATTN_BIND", "core ", FA_ERR_ARG},
        /* README: "Any other name is FA_ERR_ARG" (a known table this CPU lacks: FA_ERR_UNSUPPORTED) */
        {"env FLASHATTN_ISA", "bogus", 0, 1, 0, 0, 0, 0, 0, "FLASHATTN_ISA", "bogus", FA_ERR_ARG},
        {"env FLASHATTN_ISA", "AVX512", 0, 1, 0, 0, 0, 0, 0, "FLASHATTN_ISA", "AVX512", FA_ERR_ARG},
        {"env FLASHATTN_ISA", "sse2", 0, 1, 0, 0, 0, 0, 0, "FLASHATTN_ISA", "sse2", FA_ERR_ARG},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char saved[256];
        const char *old = cases[i].env ? getenv(cases[i].env) : NULL;
        int had = old != NULL;
        if (had) snprintf(saved, sizeof saved, "%s", old);
        if (cases[i].env) setenv(cases[i].env, cases[i].env_value, 1);
        static int marker;
        fa_context *ctx = (fa_context *)(void *)&marker;
        fa_context_opts opts = FA_CONTEXT_OPTS_INIT;
        if (cases[i].fields_set) {
            opts.num_threads = cases[i].num_threads;
            opts.bind = (fa_bind)cases[i].bind;
            opts.block_q = cases[i].block_q;
            opts.block_k = cases[i].block_k;
        }
        fa_context_opts copy = opts;
        fa_status st = fa_context_create(cases[i].null_ctx ? NULL : &ctx, cases[i].null_opts ? NULL : &opts);
        char diag[256], names[32];
        snprintf(diag, sizeof diag, "%s", fa_last_error());
        /* "opts->bind" names "opts.bind", "env FLASHATTN_BIND" the variable */
        const char *arg = strncmp(cases[i].param, "env ", 4) == 0 ? cases[i].param + 4 : cases[i].param;
        const char *field = strstr(arg, "->");
        if (field)
            snprintf(names, sizeof names, "opts.%s", field + 2);
        else
            snprintf(names, sizeof names, "%s", arg);
        int unnamed = !ee_names_argument(diag, "fa_context_create", names);
        cr_expect(!unnamed, "fa_context_create %s = %s: fa_last_error() is \"%s\", not naming %s",
                  cases[i].param, cases[i].value, diag, names);
        if (cases[i].env) {
            if (had)
                setenv(cases[i].env, saved, 1);
            else
                unsetenv(cases[i].env);
        }
        int undetected = st != cases[i].want;
        int changed = ctx != (fa_context *)(void *)&marker || memcmp(&opts, &copy, sizeof opts) != 0;
        cr_expect(!undetected, "fa_context_create %s = %s: status %d (%s), documented %d (%s)",
                  cases[i].param, cases[i].value, st, fa_status_str(st), cases[i].want,
                  fa_status_str(cases[i].want));
        cr_expect(!changed, "fa_context_create %s = %s: *ctx or *opts was written", cases[i].param,
                  cases[i].value);
        if (st == FA_OK && ctx != (fa_context *)(void *)&marker) fa_context_destroy(ctx);
        char param[64];
        snprintf(param, sizeof param, "fa_context_create %s", cases[i].param);
        ee_tally_add(tally, param, undetected, changed, unnamed);
    }
}

/* opts's size tag: each bad size (ee_struct_cases), FA_ERR_ARG or FA_ERR_UNSUPPORTED naming opts, with
 * *ctx and opts's bytes as they were. */
static void run_context_create_sizes(ee_tally *tally)
{
    ee_struct_case cases[16];
    int n = ee_struct_cases(FA_CONTEXT_OPTS_SIZE_MIN, sizeof(fa_context_opts), cases, 16);
    static unsigned char bytes[FA_STRUCT_SIZE_MAX], before[FA_STRUCT_SIZE_MAX];
    for (int i = 0; i < n; i++) {
        const fa_context_opts init = FA_CONTEXT_OPTS_INIT;
        const fa_context_opts *opts = ee_struct_apply(&cases[i], &init, sizeof init, bytes);
        memcpy(before, bytes, sizeof bytes);
        static int marker;
        fa_context *ctx = (fa_context *)(void *)&marker;
        fa_status st = fa_context_create(&ctx, opts);
        char names[64];
        if (cases[i].byte)
            snprintf(names, sizeof names, "opts %zu", cases[i].field);
        else
            snprintf(names, sizeof names, "opts.struct_size");
        int undetected = st != cases[i].want;
        int unnamed = !ee_names_argument(fa_last_error(), "fa_context_create", names);
        int changed = ctx != (fa_context *)(void *)&marker || memcmp(bytes, before, sizeof bytes) != 0;
        cr_expect(!undetected, "fa_context_create opts %s: status %d (%s), documented %d", cases[i].value, st,
                  fa_status_str(st), cases[i].want);
        cr_expect(!unnamed, "fa_context_create opts %s: fa_last_error() is \"%s\", not naming %s",
                  cases[i].value, fa_last_error(), names);
        cr_expect(!changed, "fa_context_create opts %s: *ctx or opts was written", cases[i].value);
        if (st == FA_OK && ctx != (fa_context *)(void *)&marker) fa_context_destroy(ctx);
        ee_tally_add(tally, "fa_context_create opts->struct_size", undetected, changed, unnamed);
    }
}

/* ---- fa_context_stats ---------------------------------------------------------------------- */

static void run_context_stats(ee_tally *tally)
{
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    for (int c = 0; c < 3; c++) {
        static const char *const param[3] = {"fa_context_stats ctx", "fa_context_stats out",
                                             "fa_context_stats ctx"};
        static const char *const value[3] = {"NULL", "NULL", "NULL (out NULL too)"};
        fa_stats out = FA_STATS_INIT, copy = FA_STATS_INIT, before = FA_STATS_INIT, after = FA_STATS_INIT;
        memset(&out, KIT_CANARY, sizeof out);
        copy = out;
        cr_assert_eq(fa_context_stats(ctx, &before), FA_OK);
        fa_status st = fa_context_stats(c == 1 ? ctx : NULL, c == 0 ? &out : NULL);
        char diag[256];
        snprintf(diag, sizeof diag, "%s", fa_last_error());
        cr_assert_eq(fa_context_stats(ctx, &after), FA_OK);
        int undetected = st != FA_ERR_NULL;
        int unnamed = !ee_names_argument(diag, "fa_context_stats", c == 1 ? "out" : "ctx");
        cr_expect(!unnamed, "%s = %s: fa_last_error() is \"%s\"", param[c], value[c], diag);
        int changed = memcmp(&out, &copy, sizeof out) != 0 || !stats_equal(&before, &after);
        cr_expect(!undetected, "%s = %s: status %d (%s)", param[c], value[c], st, fa_status_str(st));
        cr_expect(!changed, "%s = %s: *out or the context's stats changed", param[c], value[c]);
        ee_tally_add(tally, param[c], undetected, changed, unnamed);
    }
    /* out's size tag: each bad size refused (FA_ERR_ARG, or FA_ERR_UNSUPPORTED for a byte of a field
     * this library could not fill), naming out, with no byte of *out written */
    ee_struct_case cases[16];
    int n = ee_struct_cases(FA_STATS_SIZE_MIN, sizeof(fa_stats), cases, 16);
    static unsigned char bytes[FA_STRUCT_SIZE_MAX], before[FA_STRUCT_SIZE_MAX];
    for (int i = 0; i < n; i++) {
        fa_stats canary;
        memset(&canary, KIT_CANARY, sizeof canary);
        fa_stats *out = ee_struct_apply(&cases[i], &canary, sizeof canary, bytes);
        memcpy(before, bytes, sizeof bytes);
        fa_status st = fa_context_stats(ctx, out);
        char names[64];
        if (cases[i].byte)
            snprintf(names, sizeof names, "out %zu", cases[i].field);
        else
            snprintf(names, sizeof names, "out.struct_size");
        int undetected = st != cases[i].want;
        int unnamed = !ee_names_argument(fa_last_error(), "fa_context_stats", names);
        int changed = memcmp(bytes, before, sizeof bytes) != 0;
        cr_expect(!undetected, "fa_context_stats out %s: status %d (%s), documented %d", cases[i].value, st,
                  fa_status_str(st), cases[i].want);
        cr_expect(!unnamed, "fa_context_stats out %s: fa_last_error() is \"%s\", not naming %s",
                  cases[i].value, fa_last_error(), names);
        cr_expect(!changed, "fa_context_stats out %s: *out was written", cases[i].value);
        ee_tally_add(tally, "fa_context_stats out->struct_size", undetected, changed, unnamed);
    }
    fa_context_destroy(ctx);
}

Test(error_exit, every_bad_argument_returns_its_documented_status_and_changes_no_byte)
{
    uint64_t seed = tu_test_seed();
    ee_tally tally;
    memset(&tally, 0, sizeof tally);
    run_call_table(&tally, seed);
    run_context_create(&tally);
    run_context_create_sizes(&tally);
    run_context_stats(&tally);
    char line[200];
    snprintf(line, sizeof line,
             "%d parameters x %d bad values: %d undetected, %d buffers changed, %d messages not naming the "
             "argument",
             tally.n_params, tally.values, tally.undetected, tally.changed, tally.unnamed);
    cr_log_info("%s", line);
    fprintf(stderr, "%s\n", line);
    cr_expect_eq(tally.undetected, 0, "%s", line);
    cr_expect_eq(tally.changed, 0, "%s", line);
    cr_expect_eq(tally.unnamed, 0, "%s", line);
    ee_tally_free(&tally);
}

/* ---- element-misaligned data ---------------------------------------------------------------
 * The header states no alignment requirement for f32/f64 data. A pointer one byte past an element
 * boundary must then be either refused (any status, nothing written) or handled: the results are
 * the bytes the aligned call gives. (Reading a float through a misaligned float * is undefined
 * behaviour in C; UBSan reports it.) */

static size_t slot_bytes(const ee_world *w, const ee_args *a, int s)
{
    if (s == EE_LSE) return (size_t)(EE_B * EE_HQ * EE_N) * w->e;
    const fa_tensor *t = &a->t[s];
    return (size_t)(t->batch * t->heads * t->seq * t->dim) * w->e;
}

Test(error_exit, element_misaligned_data_or_lse_is_refused_with_fa_err_stride)
{
    uint64_t seed = tu_test_seed();
    static const int fwd_slots[] = {EE_Q, EE_K, EE_V, EE_OUT, EE_LSE};
    static const int bwd_slots[] = {EE_Q, EE_K, EE_V, EE_OUT, EE_DOUT, EE_LSE, EE_DQ, EE_DK, EE_DV};
    static const char *const name[] = {"q", "k", "v", "out", "dout", "dq", "dk", "dv", "lse"};
    for (int dt = 0; dt < 2; dt++) {
        ee_world w;
        ee_world_make(&w, dt ? FA_F64 : FA_F32, seed + (uint64_t)dt);
        for (int call = 0; call < 2; call++) {
            const int *slots = call ? bwd_slots : fwd_slots;
            int n_slots = call ? 9 : 5;
            ee_args a;
            ee_valid_args(&w, &a);
            cr_assert_eq(ee_call_run((ee_call)call, &a), FA_OK, "the aligned call itself must succeed");
            ee_world_restore(&w);
            for (int si = 0; si < n_slots; si++) {
                int s = slots[si];
                ee_valid_args(&w, &a);
                size_t bytes = slot_bytes(&w, &a, s);
                kit_buf mis = kit_buf_alloc(bytes + 16);
                unsigned char *at = (unsigned char *)kit_buf_data(&mis) + 1;
                memcpy(at, ee_region(&w, s, 0), bytes);
                if (s == EE_LSE)
                    a.lse = at;
                else
                    a.t[s].data = at;
                unsigned char *mis_snap = kit_buf_snapshot(&mis);
                fa_status st = ee_call_run((ee_call)call, &a);
                const char *what = call ? "fa_backward" : "fa_forward";
                fprintf(stderr, "[misaligned] %s, %s, %s at an address 1 byte past an element boundary: %s\n",
                        dt ? "f64" : "f32", what, name[s], fa_status_str(st));
                /* flashattn.h: data or lse not aligned to its element size is FA_ERR_STRIDE, nothing
                 * written */
                cr_expect_eq(
                    st, FA_ERR_STRIDE, "%s, %s, %s misaligned, seed %llu: status %s, not FA_ERR_STRIDE",
                    dt ? "f64" : "f32", what, name[s], (unsigned long long)w.seed, fa_status_str(st));
                char names[16];
                snprintf(names, sizeof names, s == EE_LSE ? "%s" : "%s.data", name[s]);
                cr_expect(ee_names_argument(fa_last_error(), what, names),
                          "%s misaligned: fa_last_error() is \"%s\"", name[s], fa_last_error());
                cr_expect(ee_world_unchanged(&w) && kit_buf_equals_snapshot(&mis, mis_snap),
                          "%s, %s misaligned, seed %llu: refused (%s) but a byte changed", what, name[s],
                          (unsigned long long)w.seed, fa_status_str(st));
                free(mis_snap);
                kit_buf_free(&mis);
                ee_world_restore(&w);
            }
        }
        ee_world_free(&w);
    }
}

/* ---- fa_last_error() outside refusals ------------------------------------------------------ */

static void *refuse_on_another_thread(void *arg)
{
    (void)arg;
    fa_stats st = FA_STATS_INIT;
    fa_status s = fa_context_stats(NULL, &st);
    return (void *)(uintptr_t)(s == FA_ERR_NULL && strstr(fa_last_error(), "fa_context_stats: ctx") != NULL);
}

Test(error_exit, last_error_is_empty_after_success_and_belongs_to_the_calling_thread)
{
    uint64_t seed = tu_test_seed();
    ee_world w;
    ee_world_make(&w, FA_F32, seed);
    ee_args a;
    cr_expect_str_empty(fa_last_error(), "after the world's valid calls: \"%s\"", fa_last_error());
    ee_valid_args(&w, &a);
    a.t[EE_K].dim = EE_DIM + 1;
    cr_assert_eq(ee_call_run(EE_FORWARD, &a), FA_ERR_SHAPE);
    char first[256];
    snprintf(first, sizeof first, "%s", fa_last_error());
    cr_expect(ee_names_argument(first, "fa_forward", "k.dim q.dim"), "\"%s\"", first);
    /* another thread's refusal leaves this thread's message as it was */
    pthread_t other;
    void *named;
    cr_assert_eq(pthread_create(&other, NULL, refuse_on_another_thread, NULL), 0);
    cr_assert_eq(pthread_join(other, &named), 0);
    cr_expect(named != NULL, "the other thread's own message names its call and argument");
    cr_expect_str_eq(fa_last_error(), first, "another thread's failure changed this thread's message");
    /* a call that succeeds clears it, so no message outlives the call it describes */
    ee_valid_args(&w, &a);
    cr_assert_eq(ee_call_run(EE_BACKWARD, &a), FA_OK);
    cr_expect_str_empty(fa_last_error(), "after a successful fa_backward: \"%s\"", fa_last_error());
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    cr_expect_str_empty(fa_last_error(), "after a successful fa_context_create");
    fa_context_destroy(ctx);
    ee_world_free(&w);
}
