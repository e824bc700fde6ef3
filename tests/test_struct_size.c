/* SPDX-License-Identifier: BSD-3-Clause */
/* The size-tagged structs (include/flashattn.h, "ABI") on the side of what succeeds; the refusals
 * are test_error_exit.c's. The init functions write the initialisers' values into exactly the bytes
 * they are given; a struct larger than this build's whose unknown bytes are zero (a newer header's,
 * using nothing new) gives the same bytes as this build's; fa_context_stats writes min(struct_size,
 * sizeof) bytes and keeps struct_size; the numeric version is the text's. tests/abi/ runs the same
 * promises across builds (an older and a newer layout). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* The initialisers' values with zero padding (objects of static storage), what the init functions
 * copy from. */
static const fa_params params_init = FA_PARAMS_INIT;
static const fa_seqs seqs_init = FA_SEQS_INIT;
static const fa_context_opts opts_init = FA_CONTEXT_OPTS_INIT;
static const fa_stats stats_init = FA_STATS_INIT;

typedef struct {
    const char *name;
    size_t own, min;
    const void *init;
    void (*fill)(void *, size_t);
} struct_kind;

static void params_fill(void *s, size_t size)
{
    fa_params_init(s, size);
}
static void seqs_fill(void *s, size_t size)
{
    fa_seqs_init(s, size);
}
static void opts_fill(void *s, size_t size)
{
    fa_context_opts_init(s, size);
}
static void stats_fill(void *s, size_t size)
{
    fa_stats_init(s, size);
}

static const struct_kind kinds[4] = {
    {"fa_params", sizeof(fa_params), FA_PARAMS_SIZE_MIN, &params_init, params_fill},
    {"fa_seqs", sizeof(fa_seqs), FA_SEQS_SIZE_MIN, &seqs_init, seqs_fill},
    {"fa_context_opts", sizeof(fa_context_opts), FA_CONTEXT_OPTS_SIZE_MIN, &opts_init, opts_fill},
    {"fa_stats", sizeof(fa_stats), FA_STATS_SIZE_MIN, &stats_init, stats_fill},
};

Test(struct_size, this_layout_is_the_first_plus_whole_8_byte_fields)
{
    for (int k = 0; k < 4; k++)
        cr_expect(
            kinds[k].min <= kinds[k].own && (kinds[k].own - kinds[k].min) % 8 == 0,
            "%s: FA_*_SIZE_MIN %zu, sizeof %zu: fields are added after 0.4.0's layout 8 bytes at a time",
            kinds[k].name, kinds[k].min, kinds[k].own);
    cr_expect_eq(params_init.struct_size, sizeof(fa_params));
    cr_expect_eq(seqs_init.struct_size, sizeof(fa_seqs));
    cr_expect_eq(opts_init.struct_size, sizeof(fa_context_opts));
    cr_expect_eq(stats_init.struct_size, sizeof(fa_stats));
}

Test(struct_size, init_functions_write_the_initialisers_values_into_exactly_size_bytes)
{
    static unsigned char buf[FA_STRUCT_SIZE_MAX + 64];
    for (int k = 0; k < 4; k++) {
        const struct_kind *s = &kinds[k];
        const size_t sizes[] = {0, 4, sizeof(size_t), s->own - 1, s->own, s->own + 8, FA_STRUCT_SIZE_MAX};
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            const size_t size = sizes[i];
            memset(buf, KIT_CANARY, sizeof buf);
            s->fill(buf, size);
            if (size < sizeof(size_t)) { /* no room for struct_size: nothing written */
                for (size_t b = 0; b < sizeof buf; b++)
                    cr_assert_eq(buf[b], KIT_CANARY, "%s_init(size %zu) wrote byte %zu", s->name, size, b);
                continue;
            }
            size_t tag;
            memcpy(&tag, buf, sizeof tag);
            cr_expect_eq(tag, size, "%s_init(size %zu): struct_size %zu", s->name, size, tag);
            const size_t known = size < s->own ? size : s->own;
            cr_expect(memcmp(buf + sizeof(size_t), (const unsigned char *)s->init + sizeof(size_t),
                             known - sizeof(size_t)) == 0,
                      "%s_init(size %zu): the fields differ from the initialiser's", s->name, size);
            for (size_t b = known; b < size; b++) /* a newer header's fields: zero, their default */
                cr_assert_eq(buf[b], 0, "%s_init(size %zu): byte %zu past this build's struct is %d", s->name,
                             size, b, buf[b]);
            for (size_t b = size; b < sizeof buf; b++)
                cr_assert_eq(buf[b], KIT_CANARY, "%s_init(size %zu) wrote byte %zu past the size", s->name,
                             size, b);
        }
        s->fill(NULL, s->own); /* NULL: nothing to write, and no crash */
    }
}

/* A forward and a backward with p, and with p.seqs, in structs of 4096 bytes whose bytes past this
 * build's are zero: the same bytes as this build's structs give. */
Test(struct_size, a_larger_struct_whose_unknown_bytes_are_zero_reads_as_this_builds)
{
    uint64_t seed = tu_test_seed();
    enum { B = 2, HQ = 4, HKV = 2, N = 37, D = 16 };
    tu_shape shape = {FA_F32, B, HQ, HKV, N, N, D, D, TU_BHSD};
    tu_problem a, b;
    tu_rng rng = tu_rng_make(seed);
    tu_problem_make(&a, &shape, &rng, 2.0);
    rng = tu_rng_make(seed);
    tu_problem_make(&b, &shape, &rng, 2.0);
    int64_t used[B] = {N, 20};
    fa_seqs seqs = FA_SEQS_INIT;
    seqs.batch = B;
    seqs.seqused_k = used;
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_BOTTOM_RIGHT;
    p.window_left = 9;
    p.softcap = 20.0;
    static union {
        fa_params p;
        unsigned char bytes[FA_STRUCT_SIZE_MAX];
    } larger_p;
    static union {
        fa_seqs s;
        unsigned char bytes[FA_STRUCT_SIZE_MAX];
    } larger_seqs;
    for (int with_seqs = 0; with_seqs < 2; with_seqs++) {
        p.seqs = with_seqs ? &seqs : NULL;
        memset(&larger_p, 0, sizeof larger_p);
        memset(&larger_seqs, 0, sizeof larger_seqs);
        larger_p.p = p;
        larger_p.p.struct_size = FA_STRUCT_SIZE_MAX;
        larger_seqs.s = seqs;
        larger_seqs.s.struct_size = sizeof(fa_seqs) + 8;
        if (with_seqs) larger_p.p.seqs = &larger_seqs.s;
        tu_problem_fill_canary(&a);
        tu_problem_fill_canary(&b);
        cr_assert_eq(fa_forward(NULL, &p, &a.q, &a.k, &a.v, &a.out, a.lse), FA_OK, "%s", fa_last_error());
        cr_assert_eq(fa_forward(NULL, &larger_p.p, &b.q, &b.k, &b.v, &b.out, b.lse), FA_OK, "%s",
                     fa_last_error());
        int64_t where = 0;
        cr_expect(tu_outputs_bitwise_equal(&a, &b, &where),
                  "seqs %d, seed %llu: forward bytes differ at %lld", with_seqs, (unsigned long long)seed,
                  (long long)where);
        /* the backward reads the same p: its gradients too */
        size_t n = (size_t)(B * HQ * N * D), nk = (size_t)(B * HKV * N * D);
        kit_buf grads[2][4];
        fa_tensor g[2][4];
        for (int x = 0; x < 2; x++)
            for (int i = 0; i < 4; i++) {
                grads[x][i] = kit_buf_alloc((i == 0 || i == 1 ? n : nk) * sizeof(float));
                int64_t heads = i == 0 || i == 1 ? HQ : HKV;
                g[x][i] = fa_tensor_bhsd(kit_buf_data(&grads[x][i]), FA_F32, B, heads, N, D);
            }
        for (size_t e = 0; e < n; e++)
            ((float *)kit_buf_data(&grads[0][0]))[e] = (float)(e % 7) * 0.25f - 0.75f;
        memcpy(kit_buf_data(&grads[1][0]), kit_buf_data(&grads[0][0]), n * sizeof(float));
        cr_assert_eq(
            fa_backward(NULL, &p, &a.q, &a.k, &a.v, &a.out, &g[0][0], a.lse, &g[0][1], &g[0][2], &g[0][3]),
            FA_OK, "%s", fa_last_error());
        cr_assert_eq(fa_backward(NULL, &larger_p.p, &b.q, &b.k, &b.v, &b.out, &g[1][0], b.lse, &g[1][1],
                                 &g[1][2], &g[1][3]),
                     FA_OK, "%s", fa_last_error());
        for (int i = 1; i < 4; i++)
            cr_expect(memcmp(kit_buf_data(&grads[0][i]), kit_buf_data(&grads[1][i]),
                             (i == 1 ? n : nk) * sizeof(float)) == 0,
                      "seqs %d, seed %llu: gradient %d differs", with_seqs, (unsigned long long)seed, i);
        for (int x = 0; x < 2; x++)
            for (int i = 0; i < 4; i++) kit_buf_free(&grads[x][i]);
    }
    tu_problem_free(&a);
    tu_problem_free(&b);
}

/* opts in a larger struct is read as this build's; fa_context_stats writes min(struct_size,
 * sizeof) bytes and leaves struct_size as it was: a larger struct's unknown bytes stay zero, and
 * nothing after the struct of this build's size is touched. */
Test(struct_size, context_reads_larger_opts_and_stats_writes_only_its_own_bytes)
{
    tu_test_seed();
    static union {
        fa_context_opts o;
        unsigned char bytes[FA_STRUCT_SIZE_MAX];
    } opts;
    memset(&opts, 0, sizeof opts);
    fa_context_opts_init(&opts.o, sizeof opts);
    opts.o.num_threads = 3;
    opts.o.block_q = 16;
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, &opts.o), FA_OK, "%s", fa_last_error());

    fa_stats plain = FA_STATS_INIT;
    cr_assert_eq(fa_context_stats(ctx, &plain), FA_OK);
    cr_expect(plain.num_threads == 3 && plain.block_q == 16, "threads %d, block_q %d from the larger opts",
              plain.num_threads, plain.block_q);
    cr_expect_eq(plain.struct_size, sizeof plain);

    static union {
        fa_stats s;
        unsigned char bytes[FA_STRUCT_SIZE_MAX];
    } larger;
    fa_stats_init(&larger.s, sizeof larger);
    cr_assert_eq(fa_context_stats(ctx, &larger.s), FA_OK, "%s", fa_last_error());
    cr_expect_eq(larger.s.struct_size, sizeof larger, "struct_size changed to %zu", larger.s.struct_size);
    cr_expect(larger.s.num_threads == plain.num_threads && larger.s.block_q == plain.block_q &&
                  larger.s.isa == plain.isa && larger.s.scratch_capacity == plain.scratch_capacity,
              "the larger struct's fields differ from this build's");
    for (size_t b = sizeof(fa_stats); b < sizeof larger; b++)
        cr_assert_eq(larger.bytes[b], 0, "byte %zu past this build's fa_stats was written", b);

    struct {
        fa_stats s;
        unsigned char after[64];
    } exact;
    memset(&exact, KIT_CANARY, sizeof exact);
    exact.s.struct_size = sizeof exact.s;
    cr_assert_eq(fa_context_stats(ctx, &exact.s), FA_OK);
    for (size_t b = 0; b < sizeof exact.after; b++)
        cr_assert_eq(exact.after[b], KIT_CANARY, "byte %zu after the struct was written", b);
    fa_context_destroy(ctx);
}

Test(struct_size, version_number_is_the_version_text)
{
    tu_test_seed();
    unsigned v = fa_version_number();
    char text[32];
    snprintf(text, sizeof text, "%u.%u.%u", v / 10000, v / 100 % 100, v % 100);
    cr_expect_str_eq(text, fa_version(), "fa_version_number() %u", v);
    cr_expect_eq(v, (unsigned)FLASHATTN_VERSION, "the suite links the library of its header");
}
