/* SPDX-License-Identifier: BSD-3-Clause */
/* The ABI test's client (tests/abi/README.md, client.h):
 *
 *   abi-client normal|grown OUT FFI_OUT   every call of the public API that takes a size-tagged struct
 *                                         (fa_context_create with opts, fa_forward with every modifier,
 *                                         with a packed batch of sequences and over a paged cache,
 *                                         fa_backward, the _check calls, fa_merge, fa_context_stats)
 *                                         on fixed inputs; every output byte (outputs canary-filled
 *                                         before, unwritten bytes included) and the 0.4.0 stats fields
 *                                         to OUT, the FFI mirror's problem (ffi_mirror.py) to FFI_OUT
 *   abi-client normal --unknown-fields    (grown client) each struct with its unknown field set
 *
 * The first argument names the library the run loads (run.sh makes sure it does): the grown
 * client checks fa_stats.abi_grown against it, 0 from the normal library, which does not know the
 * field, FLASHATTN_ABI_GROWN_STATS from the grown one. Every client checks that fa_context_stats
 * writes nothing past its fa_stats (a canary after it). Exits 1 on any failure. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

/* The header the client was compiled against: the frozen one is the first size-tagged layout,
 * exactly; the grown one is this version's header (which may have appended fields since) with one
 * 8-byte field more at the end of each struct, the layout rule of the header's ABI section. */
#ifdef FA_ABI_GROWN_CLIENT
#define ABI_LAYOUT(S, MIN)                                                                     \
    _Static_assert(offsetof(S, abi_grown) >= (MIN) && sizeof(S) == offsetof(S, abi_grown) + 8, \
                   #S " of the grown header: this version's fields, then abi_grown last")
#else
#define ABI_LAYOUT(S, MIN) _Static_assert(sizeof(S) == (MIN), #S " of the frozen 0.4.0 header")
#endif
ABI_LAYOUT(fa_params, FA_PARAMS_SIZE_MIN);
ABI_LAYOUT(fa_seqs, FA_SEQS_SIZE_MIN);
ABI_LAYOUT(fa_context_opts, FA_CONTEXT_OPTS_SIZE_MIN);
ABI_LAYOUT(fa_stats, FA_STATS_SIZE_MIN);

static int fails;

/* One labelled record of OUT: the name, the byte count, the bytes. */
static void put(FILE *f, const char *name, const void *bytes, size_t n)
{
    fprintf(f, "%s %zu\n", name, n);
    fwrite(bytes, 1, n, f);
    fputc('\n', f);
}

static void put_status(FILE *f, const char *name, fa_status st)
{
    int x = (int)st;
    put(f, name, &x, sizeof x);
}

static void put_text(FILE *f, const char *name, const char *s)
{
    put(f, name, s ? s : "(null)", strlen(s ? s : "(null)"));
}

/* fa_merge of A's rows over its first 18 keys and over the rest, without modifiers. */
static void merge(FILE *f, fa_context *ctx, abi_world *w)
{
    enum { SPLIT = 18 };
    size_t no = (size_t)A_B * A_HQ * A_NQ * A_DV, nl = (size_t)A_B * A_HQ * A_NQ;
    float *buf = malloc((3 * no + 3 * nl) * sizeof *buf);
    if (!buf) exit(2);
    memset(buf, ABI_CANARY, (3 * no + 3 * nl) * sizeof *buf);
    fa_tensor parts[2], merged = fa_tensor_bhsd(buf + 2 * no, FA_F32, A_B, A_HQ, A_NQ, A_DV);
    const void *lses[2] = {buf + 3 * no, buf + 3 * no + nl};
    fa_params plain = FA_PARAMS_INIT;
    for (int part = 0; part < 2; part++) {
        fa_tensor k = w->k, v = w->v;
        k.data = w->ka + (part ? SPLIT * A_D : 0), v.data = w->va + (part ? SPLIT * A_DV : 0);
        k.seq = v.seq = part ? A_NK - SPLIT : SPLIT;
        parts[part] = fa_tensor_bhsd(buf + (size_t)part * no, FA_F32, A_B, A_HQ, A_NQ, A_DV);
        fa_status st = fa_forward(ctx, &plain, &w->q, &k, &v, &parts[part], (void *)(uintptr_t)lses[part]);
        ABI_CHECK(fails, st == FA_OK, "merge part %d: %s", part, fa_last_error());
    }
    fa_status st = fa_merge(ctx, 2, parts, lses, &merged, buf + 3 * no + 2 * nl);
    ABI_CHECK(fails, st == FA_OK, "fa_merge: %s", fa_last_error());
    put(f, "merge out", buf + 2 * no, no * sizeof(float));
    put(f, "merge lse", buf + 3 * no + 2 * nl, nl * sizeof(float));
    free(buf);
}

/* The stats, into a struct with a canary after it: the library writes min(struct_size, its sizeof)
 * bytes, so a larger fa_stats of the library's never reaches the canary. */
static void stats(FILE *f, fa_context *ctx, int grown_library)
{
    struct {
        fa_stats s;
        unsigned char canary[64];
    } st;
    memset(&st, ABI_CANARY, sizeof st);
    st.s = (fa_stats)FA_STATS_INIT;
    fa_status rc = fa_context_stats(ctx, &st.s);
    ABI_CHECK(fails, rc == FA_OK, "fa_context_stats: %s", fa_last_error());
    ABI_CHECK(fails, abi_all_canary(st.canary, sizeof st.canary),
              "fa_context_stats wrote past the caller's fa_stats (%zu bytes)", sizeof st.s);
    ABI_CHECK(fails, st.s.struct_size == sizeof st.s, "fa_context_stats changed struct_size to %zu",
              st.s.struct_size);
    /* the fields of 0.4.0, one by one (not the padding, not a newer header's field) */
    put(f, "stats num_threads", &st.s.num_threads, sizeof st.s.num_threads);
    int bind = (int)st.s.bind;
    put(f, "stats bind", &bind, sizeof bind);
    put(f, "stats bound_threads", &st.s.bound_threads, sizeof st.s.bound_threads);
    put(f, "stats block_q", &st.s.block_q, sizeof st.s.block_q);
    put(f, "stats block_k", &st.s.block_k, sizeof st.s.block_k);
    put_text(f, "stats isa", st.s.isa);
    put(f, "stats scratch_capacity", &st.s.scratch_capacity, sizeof st.s.scratch_capacity);
    put(f, "stats scratch_peak", &st.s.scratch_peak, sizeof st.s.scratch_peak);
    put_text(f, "stats backward_plan", st.s.backward_plan);
#ifdef FA_ABI_GROWN_CLIENT
    uint64_t want = grown_library ? FLASHATTN_ABI_GROWN_STATS : 0;
    ABI_CHECK(fails, st.s.abi_grown == want, "fa_stats.abi_grown = %#llx from the %s library, expected %#llx",
              (unsigned long long)st.s.abi_grown, grown_library ? "grown" : "normal",
              (unsigned long long)want);
#else
    (void)grown_library;
#endif
}

/* The problem of ffi_mirror.py, computed from C: its inputs are exact in double. */
static void ffi_problem(const char *path)
{
    enum { H = 2, N = 19, D = 8 };
    float q[H * N * D], k[H * N * D], v[H * N * D], out[H * N * D], lse[H * N];
    for (int i = 0; i < H * N * D; i++) {
        q[i] = (float)((i * 37 % 101) / 50.0 - 1.0);
        k[i] = (float)((i * 53 % 97) / 48.0 - 1.0);
        v[i] = (float)((i * 29 % 89) / 44.0 - 1.0);
    }
    fa_tensor tq = fa_tensor_bhsd(q, FA_F32, 1, H, N, D), tk = fa_tensor_bhsd(k, FA_F32, 1, H, N, D);
    fa_tensor tv = fa_tensor_bhsd(v, FA_F32, 1, H, N, D), to = fa_tensor_bhsd(out, FA_F32, 1, H, N, D);
    fa_params p = FA_PARAMS_INIT;
    p.scale = 0.3;
    p.causal = FA_CAUSAL_TOP_LEFT;
    p.window_left = 5;
    fa_status st = fa_forward(NULL, &p, &tq, &tk, &tv, &to, lse);
    ABI_CHECK(fails, st == FA_OK, "the FFI problem: %s", fa_last_error());
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(out, sizeof out, 1, f) != 1 || fwrite(lse, sizeof lse, 1, f) != 1 || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
}

static int write_mode(int grown_library, const char *path, const char *ffi_path)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return 2;
    }
    put_text(f, "version", fa_version());
    unsigned number = fa_version_number();
    put(f, "version number", &number, sizeof number);
    abi_world w;
    abi_world_make(&w);
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = 2;
    o.bind = FA_BIND_NONE; /* the stats then say the same on any machine and run */
    o.block_q = 16;
    o.block_k = 32;
    fa_context *ctx = NULL;
    fa_status st = fa_context_create(&ctx, &o);
    ABI_CHECK(fails, st == FA_OK, "fa_context_create: %s", fa_last_error());
    if (st != FA_OK) return 1;

    put_status(f, "A forward_check", fa_forward_check(&w.p, &w.q, &w.k, &w.v, &w.out, w.lsea));
    put_status(f, "A backward_check",
               fa_backward_check(&w.p, &w.q, &w.k, &w.v, &w.out, &w.dout, w.lsea, &w.dq, &w.dk, &w.dv));
    put_status(f, "A forward", fa_forward(ctx, &w.p, &w.q, &w.k, &w.v, &w.out, w.lsea));
    put_status(f, "A backward",
               fa_backward(ctx, &w.p, &w.q, &w.k, &w.v, &w.out, &w.dout, w.lsea, &w.dq, &w.dk, &w.dv));
    put_status(f, "B forward", fa_forward(ctx, &w.ps, &w.sq, &w.sk, &w.sv, &w.sout, w.lses));
    put_status(f, "C forward", fa_forward(ctx, &w.pc, &w.cq, &w.ck, &w.cv, &w.cout, w.lsec));
    void *at[16];
    size_t bytes[16];
    const char *names[16];
    int n = abi_world_outputs(&w, at, bytes, names, 16);
    for (int i = 0; i < n; i++) put(f, names[i], at[i], bytes[i]);
    stats(f, ctx, grown_library);
    merge(f, ctx, &w);
    /* p and ctx NULL: every default, the thread's context */
    abi_world_reset(&w);
    put_status(f, "defaults forward", fa_forward(NULL, NULL, &w.q, &w.k, &w.v, &w.out, w.lsea));
    put(f, "defaults out", w.outa, bytes[0]);
    put(f, "defaults lse", w.lsea, bytes[1]);
    fa_context_destroy(ctx);
    abi_world_free(&w);
    if (fclose(f) != 0) {
        perror(path);
        return 2;
    }
    ffi_problem(ffi_path);
    return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
    int grown_library = argc > 1 && strcmp(argv[1], "grown") == 0;
    if (argc == 4 && (grown_library || strcmp(argv[1], "normal") == 0)) {
        int rc = write_mode(grown_library, argv[2], argv[3]);
        printf("abi-client (%s header, %s library %s): %s\n",
#ifdef FA_ABI_GROWN_CLIENT
               "grown",
#else
               "0.4.0",
#endif
               argv[1], fa_version(), rc ? "FAILED" : "every call succeeded, outputs written");
        return rc;
    }
#ifdef FA_ABI_GROWN_CLIENT
    if (argc == 3 && strcmp(argv[1], "normal") == 0 && strcmp(argv[2], "--unknown-fields") == 0) {
        abi_world w;
        abi_world_make(&w);
        fails += abi_unknown_fields(&w);
        abi_world_free(&w);
        printf("abi-client (grown header, normal library %s): unknown fields %s\n", fa_version(),
               fails ? "FAILED" : "refused by exactly the calls that read them, nothing written");
        return fails ? 1 : 0;
    }
#endif
    fprintf(stderr, "usage: %s normal|grown OUT FFI_OUT%s\n", argv[0],
#ifdef FA_ABI_GROWN_CLIENT
            ", or normal --unknown-fields"
#else
            ""
#endif
    );
    return 2;
}
