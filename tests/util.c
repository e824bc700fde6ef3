/* SPDX-License-Identifier: BSD-3-Clause */
/* Test helpers; see util.h. */
#include "util.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "rng.h"

/* ---- seeds and random numbers ---------------------------------------------------------- */

#define TU_DEFAULT_BASE_SEED 0x5eedf1a5ull

const char *tu_test_name(void)
{
    static _Thread_local char name[512]; /* per thread: tests call it from their own threads too */
    if (!criterion_current_suite || !criterion_current_test) return "(no test running)";
    snprintf(name, sizeof name, "%s/%s", criterion_current_suite->name, criterion_current_test->name);
    return name;
}

uint64_t tu_test_seed(void)
{
    return tu_seed(tu_test_name());
}

uint64_t tu_test_part_seed(const char *part)
{
    char name[600];
    snprintf(name, sizeof name, "%s.%s", tu_test_name(), part);
    return tu_seed(name);
}

uint64_t tu_seed(const char *name)
{
    uint64_t base = TU_DEFAULT_BASE_SEED;
    const char *env = getenv("FA_TEST_SEED");
    if (env && *env) base = strtoull(env, NULL, 0);
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the name, so each test has its own stream */
    for (const char *c = name; *c; c++) {
        h ^= (unsigned char)*c;
        h *= 1099511628211ull;
    }
    uint64_t seed = base ^ h;
    fprintf(stderr, "[seed] %s: seed %llu (base FA_TEST_SEED=%llu)\n", name, (unsigned long long)seed,
            (unsigned long long)base);
    return seed;
}

tu_rng tu_rng_make(uint64_t seed)
{
    tu_rng r = {seed};
    return r;
}

uint64_t tu_rng_next(tu_rng *r)
{
    return kit_splitmix64(&r->state);
}

double tu_rng_uniform(tu_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * kit_unit_from_bits(tu_rng_next(r));
}

int64_t tu_rng_below(tu_rng *r, int64_t n)
{
    return n > 0 ? (int64_t)(tu_rng_next(r) % (uint64_t)n) : 0;
}

float tu_float_step(float from, int64_t k)
{
    uint32_t b;
    memcpy(&b, &from, sizeof b);
    b += (uint32_t)k;
    float r;
    memcpy(&r, &b, sizeof r);
    return r;
}

double tu_double_step(double from, int64_t k)
{
    uint64_t b;
    memcpy(&b, &from, sizeof b);
    b += (uint64_t)k;
    double r;
    memcpy(&r, &b, sizeof r);
    return r;
}

fa_context *tu_context(int threads, int block_q, int block_k)
{
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = threads;
    o.block_q = block_q;
    o.block_k = block_k;
    fa_context *ctx = NULL;
    cr_assert_eq(fa_context_create(&ctx, &o), FA_OK, "%d threads, blocks %d x %d: %s", threads, block_q,
                 block_k, fa_last_error());
    return ctx;
}

size_t tu_dtype_size(fa_dtype t)
{
    return t == FA_F64 ? sizeof(double) : sizeof(float);
}

/* ---- problems --------------------------------------------------------------------------- */

/* TU_PACKED, a layout only the suites build: q, k, v slices of one packed buffer, out padded. */
static void make_packed(tu_problem *pr, const tu_shape *s, tu_rng *rng, double qk_amp)
{
    fa_dtype t = s->dtype;
    size_t e = tu_dtype_size(t);
    int64_t B = s->batch, Hq = s->q_heads, Hkv = s->kv_heads, Nq = s->q_len, Nk = s->kv_len, D = s->dim,
            Dv = s->dim_v;
    /* One row of the packed buffer holds every head's q, then k, then v (a fused QKV projection's
     * output). Sequence rows serve both q (first Nq) and k/v (first Nk). */
    int64_t S = Nq > Nk ? Nq : Nk;
    int64_t W = Hq * D + Hkv * D + Hkv * Dv + 3; /* +3: rows are not a multiple of anything */
    pr->in[0] = kit_buf_alloc((size_t)(B * S * W) * e + e);
    unsigned char *base = kit_buf_data(&pr->in[0]);
    const int64_t heads[3] = {Hq, Hkv, Hkv}, seq[3] = {Nq, Nk, Nk}, dim[3] = {D, D, Dv};
    const int64_t at[3] = {0, Hq * D, Hq * D + Hkv * D}; /* q's, k's and v's columns in a row */
    fa_tensor *views[3] = {&pr->q, &pr->k, &pr->v};
    for (int x = 0; x < 3; x++) {
        fa_tensor v = {.data = base + (size_t)at[x] * e,
                       .dtype = t,
                       .batch = B,
                       .heads = heads[x],
                       .seq = seq[x],
                       .dim = dim[x],
                       .stride_batch = S * W,
                       .stride_head = dim[x],
                       .stride_seq = W};
        *views[x] = v;
    }
    /* Every byte of the packed buffer is random, also the gaps no view covers. */
    for (int64_t x = 0; x < B * S * W + 1; x++) {
        double val = tu_rng_uniform(rng, -qk_amp, qk_amp);
        if (t == FA_F64)
            ((double *)base)[x] = val;
        else
            ((float *)base)[x] = (float)val;
    }
    kit_fill_uniform(&pr->v, &rng->state, -1.0, 1.0);
    /* out: [B][Nq][Hq][Dv] with gaps between heads (1), rows (3) and batches (5). */
    int64_t sh = Dv + 1, ss = Hq * sh + 3, sb = Nq * ss + 5;
    pr->out_buf = kit_buf_alloc((size_t)(B * sb) * e);
    fa_tensor o = {.data = kit_buf_data(&pr->out_buf),
                   .dtype = t,
                   .batch = B,
                   .heads = Hq,
                   .seq = Nq,
                   .dim = Dv,
                   .stride_batch = sb,
                   .stride_head = sh,
                   .stride_seq = ss};
    pr->out = o;
    pr->lse_buf = kit_buf_alloc((size_t)(B * Hq * Nq) * e);
    pr->lse = kit_buf_data(&pr->lse_buf);
}

void tu_problem_make(tu_problem *pr, const tu_shape *s, tu_rng *rng, double qk_amp)
{
    memset(pr, 0, sizeof *pr);
    pr->shape = *s;
    if (s->layout == TU_PACKED) {
        make_packed(pr, s, rng, qk_amp);
        return;
    }
    kit_shape ks = {s->dtype, s->dtype,  s->batch, s->q_heads, s->kv_heads,
                    s->q_len, s->kv_len, s->dim,   s->dim_v,   s->layout == TU_BSHD ? KIT_BSHD : KIT_BHSD};
    kit_problem_opts o = kit_suite_opts(&rng->state, qk_amp);
    kit_problem kp;
    if (kit_problem_make(&kp, &ks, &o)) abort(); /* out of memory */
    /* The kit's views and blocks, now this problem's (tu_problem_free frees them). */
    pr->q = kp.q, pr->k = kp.k, pr->v = kp.v, pr->out = kp.out, pr->lse = kp.lse;
    for (int x = 0; x < 3; x++) pr->in[x] = kp.buf[KIT_Q + x];
    pr->out_buf = kp.buf[KIT_OUT];
    pr->lse_buf = kp.lse_buf;
}

void tu_problem_free(tu_problem *pr)
{
    for (int i = 0; i < 3; i++) kit_buf_free(&pr->in[i]);
    kit_buf_free(&pr->out_buf);
    kit_buf_free(&pr->lse_buf);
}

void tu_problem_fill_canary(tu_problem *pr)
{
    kit_buf_fill(&pr->out_buf, KIT_CANARY);
    kit_buf_fill(&pr->lse_buf, KIT_CANARY);
}

int tu_problem_only_defined_written(const tu_problem *pr)
{
    return kit_buf_only_view_written(&pr->out_buf, &pr->out) && kit_buf_guards_intact(&pr->lse_buf);
}

int64_t tu_problem_rows(const tu_problem *pr)
{
    return pr->shape.batch * pr->shape.q_heads * pr->shape.q_len;
}

double tu_lse_get(const tu_problem *pr, int64_t row)
{
    return pr->shape.dtype == FA_F64 ? ((const double *)pr->lse)[row] : (double)((const float *)pr->lse)[row];
}

static void row_coords(const tu_problem *pr, int64_t row, int64_t *b, int64_t *h, int64_t *i)
{
    int64_t nq = pr->shape.q_len, hq = pr->shape.q_heads;
    *i = row % nq;
    *h = (row / nq) % hq;
    *b = row / (nq * hq);
}

double *tu_out_copy(const tu_problem *pr)
{
    int64_t rows = tu_problem_rows(pr), dv = pr->shape.dim_v;
    double *c = malloc(sizeof(double) * (size_t)(rows * dv + 1));
    if (!c) abort();
    for (int64_t r = 0; r < rows; r++) {
        int64_t b, h, i;
        row_coords(pr, r, &b, &h, &i);
        for (int64_t y = 0; y < dv; y++) c[r * dv + y] = kit_tensor_load(&pr->out, b, h, i, y);
    }
    return c;
}

double *tu_lse_copy(const tu_problem *pr)
{
    int64_t rows = tu_problem_rows(pr);
    double *c = malloc(sizeof(double) * (size_t)(rows + 1));
    if (!c) abort();
    for (int64_t r = 0; r < rows; r++) c[r] = tu_lse_get(pr, r);
    return c;
}

int tu_outputs_bitwise_equal(const tu_problem *a, const tu_problem *b, int64_t *where)
{
    int64_t rows = tu_problem_rows(a), dv = a->shape.dim_v;
    size_t e = tu_dtype_size(a->shape.dtype);
    for (int64_t r = 0; r < rows; r++) {
        int64_t bb, h, i;
        row_coords(a, r, &bb, &h, &i);
        const fa_tensor *x = &a->out, *y = &b->out;
        const unsigned char *px = (const unsigned char *)x->data +
                                  (size_t)(bb * x->stride_batch + h * x->stride_head + i * x->stride_seq) * e;
        const unsigned char *py = (const unsigned char *)y->data +
                                  (size_t)(bb * y->stride_batch + h * y->stride_head + i * y->stride_seq) * e;
        if (memcmp(px, py, (size_t)dv * e) != 0) {
            if (where) *where = r;
            return 0;
        }
    }
    if (memcmp(a->lse, b->lse, (size_t)rows * e) != 0) {
        if (where) *where = -1;
        return 0;
    }
    return 1;
}

/* ---- oracle comparison ------------------------------------------------------------------ */

static int64_t visible_keys(fa_causal c, int64_t nq, int64_t nk, int64_t i)
{
    int64_t n = 0;
    if (c == FA_CAUSAL_TOP_LEFT)
        n = i + 1;
    else if (c == FA_CAUSAL_BOTTOM_RIGHT)
        n = i + nk - nq + 1;
    else
        n = nk;
    return n < 0 ? 0 : (n > nk ? nk : n);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t tu_pick_rows(const tu_problem *pr, const fa_params *p, int64_t budget, int64_t **rows_out)
{
    const tu_shape *s = &pr->shape;
    fa_causal c = p ? p->causal : FA_CAUSAL_NONE;
    int64_t nq = s->q_len, heads = s->batch * s->q_heads;
    int64_t total_rows = heads * nq;
    int64_t per_row_max = (s->kv_len > 0 ? s->kv_len : 1) * (s->dim + s->dim_v);
    int64_t *rows = malloc(sizeof(int64_t) * (size_t)(total_rows + 1));
    if (!rows) abort();
    int64_t cost = 0;
    for (int64_t i = 0; i < nq; i++) cost += visible_keys(c, nq, s->kv_len, i) * (s->dim + s->dim_v);
    cost *= heads;
    int64_t n = 0;
    if (cost <= budget) {
        for (int64_t r = 0; r < total_rows; r++) rows[n++] = r;
        *rows_out = rows;
        return n;
    }
    /* Per (batch, head): the first and last two rows, the rows where the causal diagonal enters
     * (first visible key count changes from 0 to 1 for BOTTOM_RIGHT), and evenly spaced rows. */
    int64_t per_head = budget / (per_row_max * heads);
    if (per_head < 4) per_head = 4;
    if (per_head > nq) per_head = nq;
    for (int64_t bh = 0; bh < heads; bh++) {
        int64_t start = n;
        int64_t cand[8] = {
            0, 1, nq - 2, nq - 1, nq - s->kv_len - 1, nq - s->kv_len, nq / 2, (bh * 7919) % nq};
        for (int x = 0; x < 8; x++)
            if (cand[x] >= 0 && cand[x] < nq && n - start < per_head) rows[n++] = bh * nq + cand[x];
        for (int64_t x = 0; n - start < per_head && x < per_head; x++) {
            int64_t i = per_head > 1 ? x * (nq - 1) / (per_head - 1) : 0;
            rows[n++] = bh * nq + i;
        }
    }
    qsort(rows, (size_t)n, sizeof(int64_t), cmp_i64);
    int64_t m = 0; /* deduplicate */
    for (int64_t x = 0; x < n; x++)
        if (m == 0 || rows[m - 1] != rows[x]) rows[m++] = rows[x];
    *rows_out = rows;
    return m;
}

static void ref_alloc(tu_ref *r, const tu_problem *pr, const int64_t *rows, int64_t n)
{
    r->n = n;
    r->dim_v = pr->shape.dim_v;
    r->rows = malloc(sizeof(int64_t) * (size_t)(n + 1));
    r->out = malloc(sizeof(double) * (size_t)(n * r->dim_v + 1));
    r->lse = malloc(sizeof(double) * (size_t)(n + 1));
    if (!r->rows || !r->out || !r->lse) abort();
    if (n > 0) memcpy(r->rows, rows, sizeof(int64_t) * (size_t)n);
}

void tu_ref_compute(tu_ref *r, const tu_problem *pr, const fa_params *p, const int64_t *rows, int64_t n)
{
    ref_alloc(r, pr, rows, n);
    for (int64_t x = 0; x < n; x++) {
        int64_t b, h, i;
        row_coords(pr, rows[x], &b, &h, &i);
        ref_forward_row(p, &pr->q, &pr->k, &pr->v, b, h, i, r->out + x * r->dim_v, r->lse + x);
    }
}

void tu_ref_compute_naive_f32(tu_ref *r, const tu_problem *pr, const fa_params *p, const int64_t *rows,
                              int64_t n)
{
    ref_alloc(r, pr, rows, n);
    for (int64_t x = 0; x < n; x++) {
        int64_t b, h, i;
        row_coords(pr, rows[x], &b, &h, &i);
        ref_forward_row_naive_f32(p, &pr->q, &pr->k, &pr->v, b, h, i, r->out + x * r->dim_v, r->lse + x);
    }
}

void tu_ref_free(tu_ref *r)
{
    free(r->rows);
    free(r->out);
    free(r->lse);
    memset(r, 0, sizeof *r);
}

static void err_init(tu_err *e)
{
    memset(e, 0, sizeof *e);
    e->worst_row = e->first_mismatch_row = -1;
}

/* One value pair: finite references are measured, non-finite ones must be matched exactly
 * (same infinity, or NaN for NaN). */
static void err_add(tu_err *e, double lib, double ref, int64_t row, int64_t col)
{
    if (!isfinite(ref) || !isfinite(lib)) {
        int same = (isnan(ref) && isnan(lib)) || (isinf(ref) && lib == ref);
        if (!same) {
            if (e->mismatches++ == 0) {
                e->first_mismatch_row = row;
                e->first_mismatch_col = col;
                e->worst_lib = lib;
                e->worst_ref = ref;
            }
        }
        return;
    }
    double d = fabs(lib - ref);
    if (fabs(ref) > e->max_ref) e->max_ref = fabs(ref);
    if (d > e->max_err || e->worst_row < 0) {
        if (d > e->max_err) e->max_err = d;
        e->worst_row = row;
        e->worst_col = col;
        if (e->mismatches == 0) {
            e->worst_lib = lib;
            e->worst_ref = ref;
        }
    }
}

tu_err tu_compare_out(const tu_problem *pr, const tu_ref *r)
{
    tu_err e;
    err_init(&e);
    for (int64_t x = 0; x < r->n; x++) {
        int64_t b, h, i;
        row_coords(pr, r->rows[x], &b, &h, &i);
        for (int64_t y = 0; y < r->dim_v; y++)
            err_add(&e, kit_tensor_load(&pr->out, b, h, i, y), r->out[x * r->dim_v + y], r->rows[x], y);
    }
    return e;
}

tu_err tu_compare_lse(const tu_problem *pr, const tu_ref *r)
{
    tu_err e;
    err_init(&e);
    for (int64_t x = 0; x < r->n; x++) err_add(&e, tu_lse_get(pr, r->rows[x]), r->lse[x], r->rows[x], 0);
    return e;
}

tu_err tu_compare_ref_out(const tu_ref *x, const tu_ref *r)
{
    tu_err e;
    err_init(&e);
    for (int64_t a = 0; a < r->n; a++)
        for (int64_t y = 0; y < r->dim_v; y++)
            err_add(&e, x->out[a * r->dim_v + y], r->out[a * r->dim_v + y], r->rows[a], y);
    return e;
}

tu_err tu_compare_ref_lse(const tu_ref *x, const tu_ref *r)
{
    tu_err e;
    err_init(&e);
    for (int64_t a = 0; a < r->n; a++) err_add(&e, x->lse[a], r->lse[a], r->rows[a], 0);
    return e;
}

int tu_check_err(const char *what, tu_err lib, double limit, char *msg, size_t msg_size)
{
    if (lib.mismatches) {
        snprintf(msg, msg_size,
                 "%s: %lld non-finite mismatches, first at row %lld col %lld: lib %.17g ref %.17g", what,
                 (long long)lib.mismatches, (long long)lib.first_mismatch_row,
                 (long long)lib.first_mismatch_col, lib.worst_lib, lib.worst_ref);
        return 0;
    }
    if (!(lib.max_err <= limit)) {
        snprintf(msg, msg_size,
                 "%s: max error %.3e > limit %.3e (max |ref| %.3e), worst at row %lld col %lld: "
                 "lib %.17g ref %.17g",
                 what, lib.max_err, limit, lib.max_ref, (long long)lib.worst_row, (long long)lib.worst_col,
                 lib.worst_lib, lib.worst_ref);
        return 0;
    }
    return 1;
}

int tu_check_accuracy(const tu_problem *pr, const fa_params *p, const int64_t *rows, int64_t n,
                      double rel_tol, char *msg, size_t msg_size)
{
    tu_ref oracle;
    tu_ref_compute(&oracle, pr, p, rows, n);
    tu_err eo = tu_compare_out(pr, &oracle), el = tu_compare_lse(pr, &oracle);
    int ok;
    if (pr->shape.dtype == FA_F64) {
        ok = tu_check_err("out (f64, normwise relative)", eo, rel_tol * eo.max_ref, msg, msg_size) &&
             tu_check_err("lse (f64, normwise relative)", el, rel_tol * el.max_ref, msg, msg_size);
    } else {
        tu_ref naive;
        tu_ref_compute_naive_f32(&naive, pr, p, rows, n);
        tu_err no = tu_compare_ref_out(&naive, &oracle), nl = tu_compare_ref_lse(&naive, &oracle);
        /* The +1e-6 floor is relative to the quantity's size: out is O(1), but an lse of 11 has an
         * ulp of 9.5e-7, so an absolute 1e-6 would be a floor of one ulp. Measured over 200 random
         * problems (D=111, Nk=203, scores ~ +-10), the mean lse error of the AVX-512 kernels equals the
         * naive f32 one (3.07e-7 vs 3.06e-7) and both err independently of each other, so a bare
         * one-ulp floor fails on the luck of the naive rounding, not on the library's accuracy. */
        double lse_floor = 1e-6 * (nl.max_ref > 1.0 ? nl.max_ref : 1.0);
        ok = tu_check_err("out (f32 vs 2x naive f32 error + 1e-6)", eo, 2.0 * no.max_err + 1e-6, msg,
                          msg_size) &&
             tu_check_err("lse (f32 vs 2x naive f32 error + 1e-6 relative)", el, 2.0 * nl.max_err + lse_floor,
                          msg, msg_size);
        tu_ref_free(&naive);
    }
    tu_ref_free(&oracle);
    return ok;
}

int tu_check_picked_accuracy(const tu_problem *pr, const fa_params *p, int64_t budget, double rel_tol,
                             char *msg, size_t msg_size)
{
    int64_t *rows;
    const int64_t n = tu_pick_rows(pr, p, budget, &rows);
    const int ok = tu_check_accuracy(pr, p, rows, n, rel_tol, msg, msg_size);
    free(rows);
    return ok;
}

void tu_shape_str(const tu_shape *s, const fa_params *p, char *buf, size_t size)
{
    static const char *layouts[] = {"bhsd", "bshd", "packed-qkv"};
    static const char *causal[] = {"none", "top-left", "bottom-right"};
    int c = p ? (int)p->causal : 0;
    snprintf(buf, size, "%s B=%lld Hq=%lld Hkv=%lld Nq=%lld Nk=%lld D=%lld Dv=%lld %s causal=%s scale=%g",
             s->dtype == FA_F64 ? "f64" : "f32", (long long)s->batch, (long long)s->q_heads,
             (long long)s->kv_heads, (long long)s->q_len, (long long)s->kv_len, (long long)s->dim,
             (long long)s->dim_v, layouts[s->layout], (c >= 0 && c < 3) ? causal[c] : "?",
             p ? p->scale : 0.0);
}

/* ---- allocation counting ---------------------------------------------------------------- */

/* fa-tests is linked with -Wl,--wrap=malloc,... : every call to these functions from the test
 * objects and from the objects of the static library comes here first. Calls made inside shared
 * libraries (libgomp, hwloc, libc itself) are not seen. */
static atomic_long g_allocs;
static atomic_long g_frees;

/* Failure injection: while armed, allocation number g_fail_nth (1-based, counted from arming)
 * fails, and with g_fail_sticky every later one too. */
static atomic_int g_armed;
static atomic_long g_since_arm;
static long g_fail_nth;
static int g_fail_sticky;
static atomic_long g_injected;

static int inject_failure(void)
{
    if (!atomic_load(&g_armed)) return 0;
    long i = atomic_fetch_add(&g_since_arm, 1) + 1;
    int fail = i == g_fail_nth || (g_fail_sticky && i > g_fail_nth);
    if (fail) atomic_fetch_add(&g_injected, 1);
    return fail;
}

void tu_alloc_fail(long nth, int sticky)
{
    atomic_store(&g_armed, 0);
    g_fail_nth = nth;
    g_fail_sticky = sticky;
    atomic_store(&g_since_arm, 0);
    atomic_store(&g_injected, 0);
    if (nth > 0) atomic_store(&g_armed, 1);
}

long tu_alloc_failures_injected(void)
{
    return atomic_load(&g_injected);
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__real_aligned_alloc(size_t align, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
void *__wrap_aligned_alloc(size_t align, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);

void *__wrap_malloc(size_t n)
{
    atomic_fetch_add(&g_allocs, 1);
    if (inject_failure()) return NULL;
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    atomic_fetch_add(&g_allocs, 1);
    if (inject_failure()) return NULL;
    return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    atomic_fetch_add(&g_allocs, 1);
    if (inject_failure()) return NULL;
    return __real_realloc(p, n);
}

void __wrap_free(void *p)
{
    if (p) atomic_fetch_add(&g_frees, 1);
    __real_free(p);
}

void *__wrap_aligned_alloc(size_t align, size_t n)
{
    atomic_fetch_add(&g_allocs, 1);
    if (inject_failure()) return NULL;
    return __real_aligned_alloc(align, n);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
    atomic_fetch_add(&g_allocs, 1);
    if (inject_failure()) return ENOMEM;
    return __real_posix_memalign(p, align, n);
}

tu_alloc_count tu_alloc_count_now(void)
{
    tu_alloc_count c;
    c.allocs = atomic_load(&g_allocs);
    c.frees = atomic_load(&g_frees);
    return c;
}

int tu_alloc_counting_active(void)
{
    long before = atomic_load(&g_allocs);
    void *volatile p = malloc(16);
    long after = atomic_load(&g_allocs);
    free(p);
    return after > before;
}
