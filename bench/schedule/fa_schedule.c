/* SPDX-License-Identifier: BSD-3-Clause */
// fa-schedule: predicts how well a forward call's work items fill T threads (bench/README.md, "The
// schedule simulator"). It takes the library's own item list for a shape (fa_forward_items: the
// block sizes, query items, split-KV chunks, groups and merges fa_forward runs, in the order the
// team hands them out), gives each item a cost from a model timed on this machine at 1 thread, and
// replays OpenMP's dynamic schedule: the next item goes to the thread that is free first, and a
// phase ends when its last item does. It prints, per thread count, sum(cost) / (T · makespan) and
// the idle share, and with --measure the efficiency of real calls at the thread counts given beside
// the node's own: how the in-run probe (fa-bench's FMA peak, or its read bandwidth for a decode
// batch) scales to the same threads. A real call's efficiency can only exceed the schedule's loss
// where the node scales: on a node whose probe gains nothing from 8 to 16 threads (shared or
// throttled cores), 16 threads measure well under a 100% prediction with a perfect schedule.
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/params.h"
#include "api/validate.h"
#include "fill.h"
#include "lengths.h" /* BENCH_STREAM_LENGTHS: the decode batch fa-bench draws for a seed */
#include "rng.h"
#include "drivers/forward.h"
#include "flashattn.h"
#include "identity.h"
#include "machine.h"
#include "timing.h"

#define MAX_LIST   32
#define MAX_SHAPES 8

// A forward shape: dense (B, H, N, D), or a decode step over `count` caches of lo..hi keys in use.
typedef struct {
    const char *name;
    int64_t b, h, nq, nk, d;
    fa_causal causal;
    int64_t decode_count, decode_lo, decode_hi; // decode_count > 0: a decode batch
} shape;

// The shapes the many-core schedule is planned for: the scaling preset, two causal prefills and the
// decode-batch preset's step (fa-bench --preset scaling, --preset decode-batch).
static const shape TARGETS[] = {
    {"B1 H16 N4096 D64", 1, 16, 4096, 4096, 64, FA_CAUSAL_NONE, 0, 0, 0},
    {"B1 H16 N4096 D128 causal", 1, 16, 4096, 4096, 128, FA_CAUSAL_TOP_LEFT, 0, 0, 0},
    {"B8 H16 N512 D64 causal", 8, 16, 512, 512, 64, FA_CAUSAL_TOP_LEFT, 0, 0, 0},
    {"B1 H8 N4096 D64 causal", 1, 8, 4096, 4096, 64, FA_CAUSAL_TOP_LEFT, 0, 0, 0},
    {"B4 H16 N512 D64 causal", 4, 16, 512, 512, 64, FA_CAUSAL_TOP_LEFT, 0, 0, 0},
    {"decode 16:1024-32768 H8 D128", 16, 8, 1, 32768, 128, FA_CAUSAL_NONE, 16, 1024, 32768},
};

typedef struct {
    int threads[MAX_LIST], nthreads;
    int measure[MAX_LIST], nmeasure;
    int reps;
    int calibrate; // 0: cost = work only (no timing)
    uint64_t seed;
    const char *json;
    shape shapes[MAX_SHAPES];
    int nshapes;
} options;

// The tensors and parameters of one shape's call.
typedef struct {
    float *q, *k, *v, *out;
    int64_t *used;
    fa_tensor tq, tk, tv, tout;
    fa_seqs seqs;
    fa_params params;
} call;

// The items of one call, as fa_forward_items lists them.
typedef struct {
    fa_forward_item_info *item;
    int64_t count, cap;
} item_list;

static void collect(void *user, const fa_forward_item_info *it)
{
    item_list *l = user;
    if (l->count == l->cap) {
        int64_t cap = l->cap ? 2 * l->cap : 1024;
        fa_forward_item_info *grown = realloc(l->item, sizeof *grown * (size_t)cap);
        if (!grown) {
            fprintf(stderr, "fa-schedule: out of memory for the item list\n");
            exit(1);
        }
        l->item = grown, l->cap = cap;
    }
    l->item[l->count++] = *it;
}

// The inputs of the timed calls: uniform in [-0.5, 0.5), one kit sequence per tensor.
static void fill(const fa_tensor *t, uint64_t seed)
{
    uint64_t state = seed;
    kit_fill_uniform(t, &state, -0.5, 0.5);
}

static void *alloc_floats(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, n * sizeof(float) + 64) != 0) return NULL;
    return p;
}

static int call_init(call *c, const shape *s, uint64_t seed, int timed)
{
    memset(c, 0, sizeof *c);
    fa_params p = FA_PARAMS_INIT;
    p.causal = s->causal;
    c->params = p;
    size_t nq = (size_t)(s->b * s->h * s->nq * s->d), nk = (size_t)(s->b * s->h * s->nk * s->d);
    c->q = alloc_floats(nq), c->out = alloc_floats(nq), c->k = alloc_floats(nk), c->v = alloc_floats(nk);
    if (!c->q || !c->out || !c->k || !c->v) {
        fprintf(stderr, "fa-schedule: out of memory for %s\n", s->name);
        return -1;
    }
    c->tq = fa_tensor_bhsd(c->q, FA_F32, s->b, s->h, s->nq, s->d);
    c->tout = fa_tensor_bhsd(c->out, FA_F32, s->b, s->h, s->nq, s->d);
    c->tk = fa_tensor_bhsd(c->k, FA_F32, s->b, s->h, s->nk, s->d);
    c->tv = fa_tensor_bhsd(c->v, FA_F32, s->b, s->h, s->nk, s->d);
    if (timed) fill(&c->tq, 1), fill(&c->tk, 2), fill(&c->tv, 3); /* only the timed calls read them */
    if (s->decode_count > 0) {
        c->used = malloc(sizeof *c->used * (size_t)s->b);
        if (!c->used) return -1;
        for (int64_t b = 0; b < s->b; b++)
            c->used[b] = s->decode_lo + kit_keyed_below(seed, BENCH_STREAM_LENGTHS, (uint64_t)b,
                                                        s->decode_hi - s->decode_lo + 1);
        fa_seqs q = FA_SEQS_INIT;
        q.batch = s->b;
        q.seqused_k = c->used;
        c->seqs = q;
        c->params.seqs = &c->seqs;
    }
    return 0;
}

static void call_free(call *c)
{
    free(c->q), free(c->k), free(c->v), free(c->out), free(c->used);
}

static fa_context *context_of(int threads)
{
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = threads;
    fa_context *ctx = NULL;
    if (fa_context_create(&ctx, &o) != FA_OK) {
        fprintf(stderr, "fa-schedule: fa_context_create(%d threads): %s\n", threads, fa_last_error());
        return NULL;
    }
    return ctx;
}

// The items of a call on a context of `threads` threads (wide items follow the team's size).
static int list_items(const call *c, item_list *l, int threads)
{
    static const char name[] = "fa-schedule";
    fa_params_copy copy;
    fa_problem prob;
    fa_status st = fa_params_read(name, &c->params, &copy);
    if (st == FA_OK) st = fa_validate_forward(name, &copy.p, &c->tq, &c->tk, &c->tv, &c->tout, NULL, &prob);
    fa_context *ctx = st == FA_OK ? context_of(threads) : NULL;
    if (ctx) st = fa_forward_items(ctx, &prob, collect, l);
    fa_context_destroy(ctx);
    if (st != FA_OK || !ctx) {
        fprintf(stderr, "fa-schedule: the item list: %s\n", fa_last_error());
        return -1;
    }
    return 0;
}

// The cost model: an item costs c_item plus c_work per unit of work, where a phase-0 item's work is
// its computed (row, key) pairs times (D + Dv) (multiply-adds of its two products) and a merge's is
// rows · splits · Dv (its multiply-adds over the partial rows).
typedef struct {
    double c_item, c_work; // seconds
} cost_model;

static double work_of(const fa_forward_item_info *it)
{
    if (it->phase == 1) return (double)(it->rows * it->splits * it->dim_v);
    return (double)it->pairs * (double)(it->dim + it->dim_v);
}

static double cost_of(const cost_model *m, const fa_forward_item_info *it)
{
    return m->c_item + m->c_work * work_of(it);
}

// One thread count: replays the dynamic schedule run by run, phase by phase (each phase starts when
// the previous one's last item ends). Returns the makespan; *busy: the sum of the items' costs.
static double simulate(const item_list *l, const cost_model *m, int threads, double *busy)
{
    double *free_at = calloc((size_t)threads, sizeof *free_at), start = 0, total = 0;
    if (!free_at) exit(1);
    for (int64_t i = 0; i < l->count;) {
        int64_t end = i;
        while (end < l->count && l->item[end].run == l->item[i].run && l->item[end].phase == l->item[i].phase)
            end++;
        for (int t = 0; t < threads; t++) free_at[t] = start;
        double finish = start;
        for (; i < end; i++) { // the first free thread takes the next item (the lowest id on a tie)
            int best = 0;
            for (int t = 1; t < threads; t++)
                if (free_at[t] < free_at[best]) best = t;
            double c = cost_of(m, &l->item[i]);
            free_at[best] += c;
            total += c;
            if (free_at[best] > finish) finish = free_at[best];
        }
        start = finish;
    }
    free(free_at);
    *busy = total;
    return start;
}

typedef struct {
    const call *c;
    fa_context *ctx;
} timed_call;

static fa_status run_call(void *arg)
{
    const timed_call *t = arg;
    return fa_forward(t->ctx, &t->c->params, &t->c->tq, &t->c->tk, &t->c->tv, &t->c->tout, NULL);
}

// The fastest of `reps` calls (after one warm-up) on a context of `threads` threads; < 0 on failure.
// *stats (when not NULL): the context's, after the calls (its kernel table and binding).
static double time_call(const call *c, int threads, int reps, fa_stats *stats)
{
    timed_call t = {c, context_of(threads)};
    if (!t.ctx) return -1;
    bench_timing tm;
    fa_status st = bench_time_calls(run_call, &t, 1, reps, 0.0, &tm);
    if (st == FA_OK && stats) {
        fa_stats_init(stats, sizeof *stats);
        st = fa_context_stats(t.ctx, stats);
    }
    fa_context_destroy(t.ctx);
    if (st != FA_OK) {
        fprintf(stderr, "fa-schedule: fa_forward: %s\n", fa_last_error());
        return -1;
    }
    return tm.min_s;
}

// The node's own efficiency at `threads`: its in-run probe's rate there / (threads x its 1-thread
// rate), the probe's threads pinned as the timed team's were (st). The FMA probe of the call's
// kernel table for a dense shape; the read bandwidth for a decode batch, which its bytes bound.
// NAN where the probe does not run.
static double node_efficiency(bench_machine *m, const shape *s, const fa_stats *st, int threads)
{
    fa_bind bind = bench_machine_probe_bind(st);
    if (s->decode_count > 0)
        return bench_machine_read_gbps(m, threads, bind, NULL) /
               ((double)threads * bench_machine_read_gbps(m, 1, bind, NULL));
    bench_probe_isa probe;
    return bench_machine_peak(m, st->isa, FA_F32, threads, bind, &probe, NULL) /
           ((double)threads * bench_machine_peak(m, st->isa, FA_F32, 1, bind, &probe, NULL));
}

static double sum_work(const item_list *l)
{
    double w = 0;
    for (int64_t i = 0; i < l->count; i++) w += work_of(&l->item[i]);
    return w;
}

// The per-item cost, from two 1-thread calls of the same head dim whose work per item differs by
// 64x: a call of many 64 x 64 items and one of 64 x 4096 ones. Solves t = n · c_item + W · c_work.
static int calibrate_item_cost(int64_t d, int reps, uint64_t seed, double *c_item)
{
    const shape small = {"items", 16, 16, 64, 64, d, FA_CAUSAL_NONE, 0, 0, 0};
    const shape large = {"work", 1, 4, 4096, 4096, d, FA_CAUSAL_NONE, 0, 0, 0};
    const shape *s[2] = {&small, &large};
    double t[2], n[2], w[2];
    for (int i = 0; i < 2; i++) {
        call c;
        item_list l = {0};
        if (call_init(&c, s[i], seed, 1) != 0 || list_items(&c, &l, 1) != 0) return -1;
        t[i] = time_call(&c, 1, reps, NULL);
        n[i] = (double)l.count, w[i] = sum_work(&l);
        free(l.item);
        call_free(&c);
        if (t[i] < 0) return -1;
    }
    double det = n[0] * w[1] - n[1] * w[0];
    *c_item = det != 0 ? (t[0] * w[1] - t[1] * w[0]) / det : 0;
    if (*c_item < 0) *c_item = 0; // noise: the work term alone then explains both calls
    return 0;
}

static int parse_list(const char *arg, int *out, int *n, const char *what)
{
    *n = 0;
    for (const char *p = arg; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 100000 || *n == MAX_LIST || (*end && *end != ',')) {
            fprintf(stderr, "fa-schedule: %s: expected a list of thread counts, got '%s'\n", what, arg);
            return -1;
        }
        out[(*n)++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return *n > 0 ? 0 : -1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: fa-schedule [options]\n"
               "Predicts the efficiency of fa_forward's dynamic schedule at many thread counts from the\n"
               "library's own work items and a cost per item timed here on 1 thread (bench/README.md).\n"
               "  --threads LIST     thread counts to simulate (default 16,64,128,256)\n"
               "  --measure LIST     also time real calls at these thread counts (1 is added) and print\n"
               "                     their efficiency t1 / (T * tT) beside the prediction, and the\n"
               "                     node's: its FMA (decode: read bandwidth) probe's, 0.2 s each\n"
               "  --shape NAME       one of the target shapes (repeatable; default: all of them):\n");
    for (size_t i = 0; i < sizeof TARGETS / sizeof TARGETS[0]; i++)
        fprintf(f, "                       %s\n", TARGETS[i].name);
    fprintf(f, "  --b --h --nq --nk --d --causal none|top-left|bottom-right   a dense shape of your own\n"
               "  --reps N           timed calls per measurement, the fastest kept (default 3)\n"
               "  --no-calibrate     cost = work only (no timing): the schedule alone, in seconds\n"
               "  --seed S           the decode batch's lengths, as fa-bench --seed (default 1)\n"
               "  --json FILE        one row per (shape, thread count)\n");
}

enum { OPT_B = 256, OPT_H, OPT_NQ, OPT_NK, OPT_D, OPT_CAUSAL };

static int parse(int argc, char **argv, options *o)
{
    static const struct option longs[] = {{"threads", required_argument, NULL, 't'},
                                          {"measure", required_argument, NULL, 'm'},
                                          {"shape", required_argument, NULL, 's'},
                                          {"reps", required_argument, NULL, 'r'},
                                          {"no-calibrate", no_argument, NULL, 'n'},
                                          {"seed", required_argument, NULL, 'S'},
                                          {"json", required_argument, NULL, 'j'},
                                          {"help", no_argument, NULL, 'h'},
                                          {"b", required_argument, NULL, OPT_B},
                                          {"h", required_argument, NULL, OPT_H},
                                          {"nq", required_argument, NULL, OPT_NQ},
                                          {"nk", required_argument, NULL, OPT_NK},
                                          {"d", required_argument, NULL, OPT_D},
                                          {"causal", required_argument, NULL, OPT_CAUSAL},
                                          {NULL, 0, NULL, 0}};
    static const int defaults[] = {16, 64, 128, 256};
    memcpy(o->threads, defaults, sizeof defaults);
    o->nthreads = 4, o->nmeasure = 0, o->reps = 3, o->calibrate = 1, o->seed = 1, o->json = NULL;
    o->nshapes = 0;
    shape own = {"custom", 1, 8, 0, 0, 64, FA_CAUSAL_NONE, 0, 0, 0};
    int custom = 0, c;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case 't':
            if (parse_list(optarg, o->threads, &o->nthreads, "--threads") != 0) return -1;
            break;
        case 'm':
            if (parse_list(optarg, o->measure, &o->nmeasure, "--measure") != 0) return -1;
            break;
        case 's': {
            size_t i = 0;
            while (i < sizeof TARGETS / sizeof TARGETS[0] && strcmp(TARGETS[i].name, optarg) != 0) i++;
            if (i == sizeof TARGETS / sizeof TARGETS[0] || o->nshapes == MAX_SHAPES) {
                fprintf(stderr, "fa-schedule: --shape '%s': not a target shape (--help lists them)\n",
                        optarg);
                return -1;
            }
            o->shapes[o->nshapes++] = TARGETS[i];
            break;
        }
        case 'r': o->reps = atoi(optarg) > 0 ? atoi(optarg) : 1; break;
        case 'n': o->calibrate = 0; break;
        case 'S': o->seed = strtoull(optarg, NULL, 10); break;
        case 'j': o->json = optarg; break;
        case 'h': usage(stdout); exit(0);
        case OPT_B: own.b = atoll(optarg), custom = 1; break;
        case OPT_H: own.h = atoll(optarg), custom = 1; break;
        case OPT_NQ: own.nq = atoll(optarg), custom = 1; break;
        case OPT_NK: own.nk = atoll(optarg), custom = 1; break;
        case OPT_D: own.d = atoll(optarg), custom = 1; break;
        case OPT_CAUSAL:
            custom = 1;
            if (strcmp(optarg, "none") == 0)
                own.causal = FA_CAUSAL_NONE;
            else if (strcmp(optarg, "top-left") == 0)
                own.causal = FA_CAUSAL_TOP_LEFT;
            else if (strcmp(optarg, "bottom-right") == 0)
                own.causal = FA_CAUSAL_BOTTOM_RIGHT;
            else {
                fprintf(stderr, "fa-schedule: --causal '%s': expected none, top-left or bottom-right\n",
                        optarg);
                return -1;
            }
            break;
        default: usage(stderr); return -1;
        }
    }
    if (custom) {
        if (own.nq <= 0) own.nq = 4096;
        if (own.nk <= 0) own.nk = own.nq;
        if (own.b < 1 || own.h < 1 || own.d < 1) {
            fprintf(stderr, "fa-schedule: --b, --h and --d must be positive\n");
            return -1;
        }
        if (o->nshapes == MAX_SHAPES) return -1;
        o->shapes[o->nshapes++] = own;
    }
    if (o->nshapes == 0)
        for (size_t i = 0; i < sizeof TARGETS / sizeof TARGETS[0]; i++) o->shapes[o->nshapes++] = TARGETS[i];
    if (o->nmeasure > 0 && o->measure[0] != 1) { // the 1-thread time is every efficiency's reference
        if (o->nmeasure == MAX_LIST) o->nmeasure--;
        memmove(o->measure + 1, o->measure, sizeof o->measure[0] * (size_t)o->nmeasure);
        o->measure[0] = 1, o->nmeasure++;
    }
    return 0;
}

static void shape_label(const shape *s, char *buf, size_t n)
{
    if (strcmp(s->name, "custom") != 0) {
        snprintf(buf, n, "%s", s->name);
        return;
    }
    snprintf(buf, n, "B%lld H%lld Nq%lld Nk%lld D%lld%s", (long long)s->b, (long long)s->h, (long long)s->nq,
             (long long)s->nk, (long long)s->d,
             s->causal == FA_CAUSAL_NONE       ? ""
             : s->causal == FA_CAUSAL_TOP_LEFT ? " causal"
                                               : " causal-br");
}

int main(int argc, char **argv)
{
    options o;
    if (parse(argc, argv, &o) != 0) return 2;
    bench_identity id;
    bench_identity_init(&id);
    printf("fa-schedule: %s, %s, %d cores allowed, %s %s, revision %s, %s\n", id.host, id.cpu_model,
           id.allowed_cores, id.compiler, id.build_type, id.git_revision, id.run_utc);
    printf("cost model: %s\n", o.calibrate
                                   ? "c_item + c_work * work, timed here on 1 thread (bench/README.md)"
                                   : "work only (--no-calibrate)");
    FILE *json = NULL;
    if (o.json && !(json = fopen(o.json, "w"))) {
        fprintf(stderr, "fa-schedule: cannot write %s\n", o.json);
        return 1;
    }
    if (json) fprintf(json, "[\n");
    int max_measured = 1;
    for (int i = 0; i < o.nmeasure; i++)
        if (o.measure[i] > max_measured) max_measured = o.measure[i];
    bench_machine machine; // the probes, each measured once per thread count and reused by every shape
    bench_machine_init(&machine, o.nmeasure > 0 ? 0.2 : 0.0, max_measured);
    int rows = 0, status = 0;
    double item_cost_d[2] = {-1, -1}; // c_item for D = 64, 128 (timed once each)
    for (int si = 0; si < o.nshapes && status == 0; si++) {
        const shape *s = &o.shapes[si];
        char label[96];
        shape_label(s, label, sizeof label);
        call c;
        item_list l = {0};
        if (call_init(&c, s, o.seed, o.calibrate || o.nmeasure > 0) != 0 || list_items(&c, &l, 1) != 0) {
            status = 1;
            break;
        }
        cost_model m = {0, 1e-9};
        double t1 = -1, work = sum_work(&l);
        if (o.calibrate) {
            int slot = s->d == 64 ? 0 : s->d == 128 ? 1 : -1;
            double c_item = slot >= 0 ? item_cost_d[slot] : -1;
            if (c_item < 0 && calibrate_item_cost(s->d, o.reps, o.seed, &c_item) != 0) {
                status = 1;
                break;
            }
            if (slot >= 0) item_cost_d[slot] = c_item;
            t1 = time_call(&c, 1, o.reps, NULL);
            if (t1 < 0) {
                status = 1;
                break;
            }
            m.c_item = c_item;
            m.c_work = (t1 - (double)l.count * c_item) / work;
            if (m.c_work <= 0) m.c_item = 0, m.c_work = t1 / work;
        }
        int64_t phase0 = 0, splits = 1, runs = 0;
        for (int64_t i = 0; i < l.count; i++) {
            if (l.item[i].phase == 0) phase0++;
            if (l.item[i].splits > splits) splits = l.item[i].splits;
            if (l.item[i].run + 1 > runs) runs = l.item[i].run + 1;
        }
        printf("\n%s: %lld items on 1 thread (%lld attention, %lld merges over up to %lld chunks), %lld team "
               "run%s\n",
               label, (long long)l.count, (long long)phase0, (long long)(l.count - phase0), (long long)splits,
               (long long)runs, runs == 1 ? "" : "s");
        if (o.calibrate)
            printf("  1 thread: %.3f ms; c_item %.2f us, c_work %.4f ns (%.1f GFLOP/s of item work)\n",
                   t1 * 1e3, m.c_item * 1e6, m.c_work * 1e9, 2.0 / m.c_work * 1e-9);
        printf("  %7s  %7s  %10s  %8s  %13s  %11s  %11s\n", "threads", "items", "pred eff %", "idle %",
               "largest item %", "meas eff %", "node eff %");
        int all[2 * MAX_LIST], nall = 0;
        for (int i = 0; i < o.nmeasure; i++) all[nall++] = o.measure[i];
        for (int i = 0; i < o.nthreads; i++) {
            int seen = 0;
            for (int j = 0; j < nall; j++) seen |= all[j] == o.threads[i];
            if (!seen) all[nall++] = o.threads[i];
        }
        double measured_t1 = -1;
        for (int i = 0; i < nall; i++) {
            int t = all[i];
            item_list lt = {0}; // the items a team of t runs
            if (list_items(&c, &lt, t) != 0) {
                status = 1;
                break;
            }
            double largest = 0;
            int64_t items_t = 0;
            for (int64_t x = 0; x < lt.count; x++) {
                if (cost_of(&m, &lt.item[x]) > largest) largest = cost_of(&m, &lt.item[x]);
                items_t += lt.item[x].phase == 0;
            }
            double busy, span = simulate(&lt, &m, t, &busy), eff = busy / ((double)t * span);
            free(lt.item);
            double meas = -1, node = NAN;
            int measured = 0;
            for (int j = 0; j < o.nmeasure; j++) measured |= o.measure[j] == t;
            if (measured) {
                fa_stats st;
                double tt = time_call(&c, t, o.reps, &st);
                if (tt < 0) {
                    status = 1;
                    break;
                }
                if (t == 1) measured_t1 = tt;
                meas = measured_t1 > 0 ? measured_t1 / ((double)t * tt) : -1;
                node = node_efficiency(&machine, s, &st, t);
            }
            // the largest item against one thread's fair share of the work: above 100%, it alone
            // bounds the makespan
            double share = largest / (busy / (double)t);
            char meas_s[16] = "-", node_s[16] = "-";
            if (meas >= 0) snprintf(meas_s, sizeof meas_s, "%.1f", 100 * meas);
            if (isfinite(node)) snprintf(node_s, sizeof node_s, "%.1f", 100 * node);
            printf("  %7d  %7lld  %10.1f  %8.1f  %13.1f  %11s  %11s\n", t, (long long)items_t, 100 * eff,
                   100 * fmax(0.0, 1 - eff), 100 * share, meas_s, node_s);
            if (json) {
                fprintf(json,
                        "%s  {\"shape\": \"%s\", \"threads\": %d, \"predicted_efficiency\": %.4f, "
                        "\"idle_share\": %.4f, \"items\": %lld, \"merges\": %lld, \"max_splits\": %lld, "
                        "\"largest_item_share\": %.4f, \"measured_efficiency\": ",
                        rows++ ? ",\n" : "", label, t, eff, fmax(0.0, 1 - eff), (long long)items_t,
                        (long long)(l.count - phase0), (long long)splits, share);
                if (meas >= 0)
                    fprintf(json, "%.4f", meas);
                else
                    fprintf(json, "null");
                if (isfinite(node))
                    fprintf(json, ", \"node_efficiency\": %.4f", node);
                else
                    fprintf(json, ", \"node_efficiency\": null");
                fprintf(json,
                        ", \"c_item_s\": %.4g, \"c_work_s\": %.4g, \"calibrated\": %s, \"host\": \"%s\", "
                        "\"cpu_model\": \"%s\", \"git_revision\": \"%s\", \"run_utc\": \"%s\"}",
                        m.c_item, m.c_work, o.calibrate ? "true" : "false", id.host, id.cpu_model,
                        id.git_revision, id.run_utc);
            }
        }
        free(l.item);
        call_free(&c);
    }
    bench_machine_free(&machine);
    if (json) {
        fprintf(json, "\n]\n");
        fclose(json);
    }
    return status;
}
