/* SPDX-License-Identifier: BSD-3-Clause */
/* The public structs' defaults and their reading rule (params.h; flashattn.h, "ABI"). */
#include "api/params.h"

#include <string.h>

#include "api/diagnostic.h"

static const fa_params params_defaults = FA_PARAMS_INIT;
static const fa_seqs seqs_defaults = FA_SEQS_INIT;
static const fa_context_opts opts_defaults = FA_CONTEXT_OPTS_INIT;
static const fa_stats stats_defaults = FA_STATS_INIT;

/* What the rule needs to know of one struct: its names for the diagnostic, the smallest size a
 * caller may give (the 0.4.0 layout), this build's size and defaults. */
typedef struct {
    const char *type, *macro, *function;
    size_t min, own;
    const void *defaults;
} struct_kind;

static const struct_kind params_kind = {.type = "fa_params",
                                        .macro = "FA_PARAMS_INIT",
                                        .function = "fa_params_init",
                                        .min = FA_PARAMS_SIZE_MIN,
                                        .own = sizeof(fa_params),
                                        .defaults = &params_defaults};
static const struct_kind seqs_kind = {.type = "fa_seqs",
                                      .macro = "FA_SEQS_INIT",
                                      .function = "fa_seqs_init",
                                      .min = FA_SEQS_SIZE_MIN,
                                      .own = sizeof(fa_seqs),
                                      .defaults = &seqs_defaults};
static const struct_kind opts_kind = {.type = "fa_context_opts",
                                      .macro = "FA_CONTEXT_OPTS_INIT",
                                      .function = "fa_context_opts_init",
                                      .min = FA_CONTEXT_OPTS_SIZE_MIN,
                                      .own = sizeof(fa_context_opts),
                                      .defaults = &opts_defaults};
static const struct_kind stats_kind = {.type = "fa_stats",
                                       .macro = "FA_STATS_INIT",
                                       .function = "fa_stats_init",
                                       .min = FA_STATS_SIZE_MIN,
                                       .own = sizeof(fa_stats),
                                       .defaults = &stats_defaults};

/* ---- the init functions: the macros' values for structs not declared from the header ---- */

static void init_bytes(void *dst, size_t size, const struct_kind *k)
{
    if (!dst || size < sizeof(size_t)) return;
    size_t known = size < k->own ? size : k->own;
    memcpy(dst, k->defaults, known);
    memset((char *)dst + known, 0, size - known); /* a newer header's fields: their default is zero */
    memcpy(dst, &size, sizeof size);
}

void fa_params_init(fa_params *p, size_t size)
{
    init_bytes(p, size, &params_kind);
}

void fa_seqs_init(fa_seqs *s, size_t size)
{
    init_bytes(s, size, &seqs_kind);
}

void fa_context_opts_init(fa_context_opts *o, size_t size)
{
    init_bytes(o, size, &opts_kind);
}

void fa_stats_init(fa_stats *s, size_t size)
{
    init_bytes(s, size, &stats_kind);
}

/* ---- the reading rule ---- */

/* Rules 1 and 3: struct_size within [min, FA_STRUCT_SIZE_MAX], and every byte this library does not
 * know zero. The caller's struct is read as bytes: it may be smaller or larger than this build's. */
static fa_status check_size(const char *call, const char *arg, const struct_kind *k, const void *src)
{
    size_t size;
    memcpy(&size, src, sizeof size);
    /* a layout is the first plus whole 8-byte fields: any other size is not a sizeof(struct) */
    if (size < k->min || size > FA_STRUCT_SIZE_MAX || (size - k->min) % 8 != 0)
        return fa_diag_fail(
            FA_ERR_ARG, call,
            "%s.struct_size = %zu: expected %zu plus a multiple of 8, at most %d: the caller's "
            "sizeof(%s); initialise %s with %s or %s",
            arg, size, k->min, FA_STRUCT_SIZE_MAX, k->type, arg, k->macro, k->function);
    const unsigned char *bytes = src;
    for (size_t at = k->own; at < size; at++)
        if (bytes[at] != 0) /* fields added later are 8 bytes wide, from this build's end on */
            return fa_diag_fail(FA_ERR_UNSUPPORTED, call,
                                "%s sets a field at byte %zu that this library (%s) does not know "
                                "(its %s has %zu bytes)",
                                arg, k->own + (at - k->own) / 8 * 8, fa_version(), k->type, k->own);
    return FA_OK;
}

/* Rule 2: the defaults, then the caller's min(struct_size, own) bytes over them. */
static fa_status read_struct(const char *call, const char *arg, const struct_kind *k, const void *src,
                             void *dst)
{
    fa_status st = check_size(call, arg, k, src);
    if (st != FA_OK) return st;
    size_t size;
    memcpy(&size, src, sizeof size);
    memcpy(dst, k->defaults, k->own);
    memcpy(dst, src, size < k->own ? size : k->own);
    memcpy(dst, &k->own, sizeof k->own); /* the copy is a whole struct of this build */
    return FA_OK;
}

fa_status fa_params_read(const char *call, const fa_params *p, fa_params_copy *copy)
{
    copy->p = params_defaults;
    copy->seqs = seqs_defaults;
    if (!p) return FA_OK;
    fa_status st = read_struct(call, "p", &params_kind, p, &copy->p);
    if (st != FA_OK || !copy->p.seqs) return st;
    if ((st = read_struct(call, "p.seqs", &seqs_kind, copy->p.seqs, &copy->seqs)) != FA_OK) return st;
    copy->p.seqs = &copy->seqs;
    return FA_OK;
}

fa_status fa_context_opts_read(const char *call, const fa_context_opts *opts, fa_context_opts *copy)
{
    *copy = opts_defaults;
    return opts ? read_struct(call, "opts", &opts_kind, opts, copy) : FA_OK;
}

fa_status fa_stats_check(const char *call, const fa_stats *out)
{
    return check_size(call, "out", &stats_kind, out);
}

void fa_stats_write(fa_stats *out, const fa_stats *all)
{
    size_t size = out->struct_size;
    fa_stats copy = *all;
    copy.struct_size = size;
#ifdef FLASHATTN_ABI_GROWN_STATS
    /* tests/abi's grown build (tests/abi/grown.cmake) fills the field its header appends, as a later
     * version fills a new output field: an older caller's smaller fa_stats must not see it */
    copy.abi_grown = FLASHATTN_ABI_GROWN_STATS;
#endif
    memcpy(out, &copy, size < sizeof copy ? size : sizeof copy);
}
