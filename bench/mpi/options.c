/* SPDX-License-Identifier: BSD-3-Clause */
// fa-bench-mpi's options and --help.
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: mpirun -np P fa-bench-mpi [options]      (this project: scripts/mpirun.sh P fa-bench-mpi ...)\n"
    "\n"
    "Times fa_mpi_forward / fa_mpi_backward (ring attention over the P ranks of MPI_COMM_WORLD) on one\n"
    "global sequence of N positions, and in the same run one process (rank 0 alone, on the CPUs of the\n"
    "ranks of its host, while the other ranks sleep in a barrier) running fa_forward / fa_backward on\n"
    "the whole sequence with P x T threads; the two are interleaved round by round. The global\n"
    "inputs are fa-bench's for the same --seed (normal values of (b, h, position, d)); memory is bhsd.\n"
    "\n"
    "problem:\n"
    "  --n N              global sequence length (default 16384)\n"
    "  --b B --h H        batch and query heads (default 1 and 8)\n"
    "  --hkv H            key/value heads, a divisor of --h (default --h)\n"
    "  --d D --dv DV      head dims of q/k and of v (default 128; --dv follows --d)\n"
    "  --causal C         none | top-left (default top-left)\n"
    "  --layout L         zigzag | contiguous: how the ranks hold the positions (default zigzag;\n"
    "                     zigzag needs N divisible by 2P; contiguous gives the first N %% P ranks one\n"
    "                     position more)\n"
    "  --dtype T          f32 | f64 | bf16 | f16 (default f32; bf16, f16: lse in f32)\n"
    "  --seed S           input seed (default 1)\n"
    "  --pass P           fwd | bwd | both (default both); bwd times the backward alone, its out and\n"
    "                     lse from the verified forward\n"
    "\n"
    "execution:\n"
    "  --threads T        threads of each rank's context (default 1)\n"
    "  --ref-threads N    threads of the one-process reference (default P x T)\n"
    "  --bind B           auto | none | core | spread: every context's binding (default auto; where\n"
    "                     ranks of one host share CPUs, an oversubscribed or unbound launch, auto\n"
    "                     becomes none for the ranks' contexts, else each would pin its first thread\n"
    "                     to the same core)\n"
    "  Give each rank T cores of its own: with Open MPI, FA_MPIRUN_ARGS=\"--map-by slot:PE=T --bind-to\n"
    "  core\" scripts/mpirun.sh P ... (a single rank is bound to one core by default).\n"
    "\n"
    "measurement:\n"
    "  --warmup W         untimed calls of each side before its timed ones, in every round (default 0:\n"
    "                     the verified calls before the first round warm the buffers and arenas)\n"
    "  --reps R           timed calls of each side per round (default 3)\n"
    "  --rounds N         rounds; the MPI calls and the reference alternate which goes first (default 2)\n"
    "  --csv FILE         one row per pass (written by rank 0)\n"
    "\n"
    "What it reports, per pass (--help's account; bench/README.md, \"Several nodes (MPI)\", has more):\n"
    "  MPI time           an MPI rep's time is the slowest rank's (barrier, then each rank times its\n"
    "                     call); min and median over every rep of every round\n"
    "  1 process          rank 0's fa_forward / fa_backward on the whole sequence, min and median\n"
    "  GFLOP/s            2*B*Hq*V*(D+Dv) forward, 2.5 x that backward (fa-bench's counts), V the visible\n"
    "                     (query, key) pairs of the global problem: N(N+1)/2 causal, N^2 without a mask\n"
    "  MPI / 1 process    the ratio of the two GFLOP/s (= of the min times)\n"
    "  per rank, in the fastest MPI rep (measured by interposing on the calls the library makes:\n"
    "  PMPI wrappers of the MPI calls, and fa_forward, fa_backward and fa_merge of libflashattn):\n"
    "    blocks           time in fa_forward (fwd) or fa_backward (bwd), the blocks of the ring\n"
    "    merge            time in fa_merge (fwd: the running rows with each block's result)\n"
    "    wait             time in MPI_Waitall: after its blocks of a step, the rank waits for the next\n"
    "                     shard (and, bwd, the dK/dV accumulator) and for its own sends: transfer time\n"
    "                     that computing did not hide, or a neighbour that started the step late\n"
    "    progress         time in MPI_Testall, which the library calls between blocks so that the\n"
    "                     transfers advance (with Open MPI's CMA, a shard is copied in one of these)\n"
    "    post             time in MPI_Isend / MPI_Irecv\n"
    "    collectives      MPI_Allgather / MPI_Allreduce / MPI_Bcast: the shapes, and the agreement on\n"
    "                     one status; a rank that finished its steps early waits here for the last\n"
    "    other            the call's time minus the above: shard copies, gradient sums, zeroing\n"
    "  messages alone     the point-to-point messages of the last timed MPI call, recorded by the\n"
    "                     wrappers (sizes, peers, tags, which requests each MPI_Waitall waited for) and\n"
    "                     sent again in the same order with nothing computed, in every round (min\n"
    "                     over reps); overlap = 1 - wait / (messages alone), per rank, at least 0\n"
    "Checks before timing (exit 1 on failure, nothing reported): the MPI outputs, gathered on rank 0,\n"
    "against the one-process call over every element: normwise max|mpi - ref| / max|ref| at most\n"
    "1e-12 (f64) or 1e-4 (f32) for out and lse, 1e-11 or 1e-3 for dq, dk, dv (lse / max(1, max|ref|));\n"
    "bf16 and f16 outputs f32's plus their unit roundoff (2^-8, 2^-11; bf16 6 x 2^-8 where the\n"
    "reference's table has bf16 dot-product units: each side is then within the header's bound of\n"
    "the exact result, not of the other), their lse f32's;\n"
    "and after timing, every rank's outputs and the reference's bitwise equal to the verified ones.\n";

typedef struct {
    const char *name;
    int value;
} bm_name;

static const bm_name causals[] = {{"none", FA_CAUSAL_NONE}, {"top-left", FA_CAUSAL_TOP_LEFT}};
static const bm_name layouts[] = {{"contiguous", FA_MPI_CONTIGUOUS}, {"zigzag", FA_MPI_ZIGZAG}};
static const bm_name binds[] = {
    {"auto", FA_BIND_AUTO}, {"none", FA_BIND_NONE}, {"core", FA_BIND_CORE}, {"spread", FA_BIND_SPREAD}};
static const bm_name dtypes[] = {{"f32", FA_F32}, {"f64", FA_F64}, {"bf16", FA_BF16}, {"f16", FA_F16}};
static const bm_name passes[] = {
    {"fwd", BM_PASS_FWD}, {"bwd", BM_PASS_BWD}, {"both", BM_PASS_FWD | BM_PASS_BWD}};

#define CHOICES(table) table, (int)(sizeof table / sizeof table[0])

static const char *name_in(const bm_name *t, int n, int value)
{
    for (int i = 0; i < n; i++)
        if (t[i].value == value) return t[i].name;
    return "?";
}

const char *bm_causal_name(fa_causal c)
{
    return name_in(CHOICES(causals), (int)c);
}

const char *bm_layout_name(fa_mpi_layout l)
{
    return name_in(CHOICES(layouts), (int)l);
}

const char *bm_bind_name(fa_bind b)
{
    return name_in(CHOICES(binds), (int)b);
}

const char *bm_dtype_name(fa_dtype t)
{
    return name_in(CHOICES(dtypes), (int)t);
}

static int choice(int rank, const char *opt, const char *arg, const bm_name *t, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (strcmp(arg, t[i].name) == 0) {
            *out = t[i].value;
            return 0;
        }
    if (rank == 0) {
        fprintf(stderr, "fa-bench-mpi: --%s %s: expected one of", opt, arg);
        for (int i = 0; i < n; i++) fprintf(stderr, " %s", t[i].name);
        fprintf(stderr, "\n");
    }
    return -1;
}

static int integer(int rank, const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(arg, &end, 10);
    if (errno != 0 || end == arg || *end != '\0' || x < lo || x > hi) {
        if (rank == 0)
            fprintf(stderr, "fa-bench-mpi: --%s %s: expected an integer in %" PRId64 "..%" PRId64 "\n", opt,
                    arg, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

// clang-format off
enum {
    OPT_N = 256, OPT_B, OPT_H, OPT_HKV, OPT_D, OPT_DV, OPT_CAUSAL, OPT_LAYOUT, OPT_DTYPE, OPT_SEED, OPT_PASS,
    OPT_THREADS, OPT_REF_THREADS, OPT_BIND, OPT_WARMUP, OPT_REPS, OPT_ROUNDS, OPT_CSV, OPT_HELP
};
// clang-format on

int bm_options_parse(int argc, char **argv, int rank, bm_options *o)
{
    static const struct option longs[] = {{"n", required_argument, NULL, OPT_N},
                                          {"b", required_argument, NULL, OPT_B},
                                          {"h", required_argument, NULL, OPT_H},
                                          {"hkv", required_argument, NULL, OPT_HKV},
                                          {"d", required_argument, NULL, OPT_D},
                                          {"dv", required_argument, NULL, OPT_DV},
                                          {"causal", required_argument, NULL, OPT_CAUSAL},
                                          {"layout", required_argument, NULL, OPT_LAYOUT},
                                          {"dtype", required_argument, NULL, OPT_DTYPE},
                                          {"seed", required_argument, NULL, OPT_SEED},
                                          {"pass", required_argument, NULL, OPT_PASS},
                                          {"threads", required_argument, NULL, OPT_THREADS},
                                          {"ref-threads", required_argument, NULL, OPT_REF_THREADS},
                                          {"bind", required_argument, NULL, OPT_BIND},
                                          {"warmup", required_argument, NULL, OPT_WARMUP},
                                          {"reps", required_argument, NULL, OPT_REPS},
                                          {"rounds", required_argument, NULL, OPT_ROUNDS},
                                          {"csv", required_argument, NULL, OPT_CSV},
                                          {"help", no_argument, NULL, OPT_HELP},
                                          {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->n = 16384, o->b = 1, o->hq = 8, o->hkv = -1, o->d = 128, o->dv = -1;
    o->dtype = FA_F32, o->causal = FA_CAUSAL_TOP_LEFT, o->layout = FA_MPI_ZIGZAG;
    o->passes = BM_PASS_FWD | BM_PASS_BWD, o->threads = 1, o->bind = FA_BIND_AUTO;
    o->warmup = 0, o->reps = 3, o->rounds = 2, o->seed = 1;
    const int64_t big = (int64_t)1 << 40;
    opterr = 0;
    optind = 1;
    int c, rc = 0, value;
    int64_t x = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case OPT_N: rc = integer(rank, "n", optarg, 1, big, &o->n); break;
        case OPT_B: rc = integer(rank, "b", optarg, 1, big, &o->b); break;
        case OPT_H: rc = integer(rank, "h", optarg, 1, big, &o->hq); break;
        case OPT_HKV: rc = integer(rank, "hkv", optarg, 1, big, &o->hkv); break;
        case OPT_D: rc = integer(rank, "d", optarg, 1, FA_MAX_HEAD_DIM, &o->d); break;
        case OPT_DV: rc = integer(rank, "dv", optarg, 1, FA_MAX_HEAD_DIM, &o->dv); break;
        case OPT_CAUSAL:
            if ((rc = choice(rank, "causal", optarg, CHOICES(causals), &value)) == 0)
                o->causal = (fa_causal)value;
            break;
        case OPT_LAYOUT:
            if ((rc = choice(rank, "layout", optarg, CHOICES(layouts), &value)) == 0)
                o->layout = (fa_mpi_layout)value;
            break;
        case OPT_DTYPE:
            if ((rc = choice(rank, "dtype", optarg, CHOICES(dtypes), &value)) == 0)
                o->dtype = (fa_dtype)value;
            break;
        case OPT_SEED:
            if ((rc = integer(rank, "seed", optarg, 0, INT64_MAX, &x)) == 0) o->seed = (uint64_t)x;
            break;
        case OPT_PASS:
            if ((rc = choice(rank, "pass", optarg, CHOICES(passes), &value)) == 0) o->passes = value;
            break;
        case OPT_THREADS:
            if ((rc = integer(rank, "threads", optarg, 1, 4096, &x)) == 0) o->threads = (int)x;
            break;
        case OPT_REF_THREADS:
            if ((rc = integer(rank, "ref-threads", optarg, 1, 1 << 20, &x)) == 0) o->ref_threads = (int)x;
            break;
        case OPT_BIND:
            if ((rc = choice(rank, "bind", optarg, CHOICES(binds), &value)) == 0)
                o->bind = (fa_bind)value, o->bind_given = 1;
            break;
        case OPT_WARMUP:
            if ((rc = integer(rank, "warmup", optarg, 0, 1000, &x)) == 0) o->warmup = (int)x;
            break;
        case OPT_REPS:
            if ((rc = integer(rank, "reps", optarg, 1, 100000, &x)) == 0) o->reps = (int)x;
            break;
        case OPT_ROUNDS:
            if ((rc = integer(rank, "rounds", optarg, 1, 1000, &x)) == 0) o->rounds = (int)x;
            break;
        case OPT_CSV: o->csv = optarg; break;
        case OPT_HELP:
            if (rank == 0) fputs(usage, stdout);
            return 1;
        default:
            if (rank == 0)
                fprintf(stderr, "fa-bench-mpi: unknown option or missing value: %s (see --help)\n",
                        argv[optind - 1]);
            rc = -1;
        }
    }
    if (rc == 0 && optind < argc) {
        if (rank == 0) fprintf(stderr, "fa-bench-mpi: unexpected argument %s (see --help)\n", argv[optind]);
        rc = -1;
    }
    if (rc != 0) return -1;
    if (o->hkv < 0) o->hkv = o->hq;
    if (o->dv < 0) o->dv = o->d;
    if (o->hq % o->hkv != 0) {
        if (rank == 0)
            fprintf(stderr, "fa-bench-mpi: --h %" PRId64 " is not a multiple of --hkv %" PRId64 "\n", o->hq,
                    o->hkv);
        return -1;
    }
    return 0;
}
