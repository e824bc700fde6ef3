/* SPDX-License-Identifier: BSD-3-Clause */
/* The grown client on the normal library: a newer program that sets a field this library does not
 * know (include/flashattn.h, "ABI", rule 3). Each struct's abi_grown set in turn: the call that reads
 * that struct returns FA_ERR_UNSUPPORTED, names it, and writes nothing (outputs canary-filled before);
 * cleared again, the same call succeeds (only that call is refused). Compiled for the grown client
 * only (FA_ABI_GROWN_CLIENT: its header has the fields). */
#include <stdio.h>
#include <string.h>

#include "client.h"

/* Every output of the world still canary. */
static int untouched(abi_world *w)
{
    void *at[16];
    size_t bytes[16];
    const char *names[16];
    int n = abi_world_outputs(w, at, bytes, names, 16);
    for (int i = 0; i < n; i++)
        if (!abi_all_canary(at[i], bytes[i])) return 0;
    return 1;
}

/* fa_last_error() of a refusal names the argument as the rule's diagnostic does. */
static int names(const char *call, const char *arg)
{
    char want[64];
    snprintf(want, sizeof want, "%s: %s sets a field at byte", call, arg);
    return strncmp(fa_last_error(), want, strlen(want)) == 0;
}

int abi_unknown_fields(abi_world *w)
{
    int fails = 0;
    fa_status st;

    /* p: fa_forward, fa_backward and their checks */
    abi_world_reset(w);
    w->p.abi_grown = 1;
    st = fa_forward(NULL, &w->p, &w->q, &w->k, &w->v, &w->out, w->lsea);
    ABI_CHECK(fails, st == FA_ERR_UNSUPPORTED && names("fa_forward", "p"),
              "fa_forward, p.abi_grown set: %d, \"%s\"", (int)st, fa_last_error());
    st = fa_backward(NULL, &w->p, &w->q, &w->k, &w->v, &w->out, &w->dout, w->lsea, &w->dq, &w->dk, &w->dv);
    ABI_CHECK(fails, st == FA_ERR_UNSUPPORTED && names("fa_backward", "p"),
              "fa_backward, p.abi_grown set: %d, \"%s\"", (int)st, fa_last_error());
    st = fa_forward_check(&w->p, &w->q, &w->k, &w->v, &w->out, w->lsea);
    ABI_CHECK(fails, st == FA_ERR_UNSUPPORTED, "fa_forward_check, p.abi_grown set: %d", (int)st);
    st = fa_backward_check(&w->p, &w->q, &w->k, &w->v, &w->out, &w->dout, w->lsea, &w->dq, &w->dk, &w->dv);
    ABI_CHECK(fails, st == FA_ERR_UNSUPPORTED, "fa_backward_check, p.abi_grown set: %d", (int)st);
    ABI_CHECK(fails, untouched(w), "a call refused for p.abi_grown wrote an output");
    w->p.abi_grown = 0;
    st = fa_forward(NULL, &w->p, &w->q, &w->k, &w->v, &w->out, w->lsea);
    ABI_CHECK(fails, st == FA_OK, "fa_forward, p.abi_grown cleared: %s", fa_last_error());

    /* p.seqs */
    abi_world_reset(w);
    w->seqs.abi_grown = 1;
    st = fa_forward(NULL, &w->ps, &w->sq, &w->sk, &w->sv, &w->sout, w->lses);
    ABI_CHECK(fails, st == FA_ERR_UNSUPPORTED && names("fa_forward", "p.seqs"),
              "fa_forward, p.seqs.abi_grown set: %d, \"%s\"", (int)st, fa_last_error());
    ABI_CHECK(fails, untouched(w), "a call refused for p.seqs.abi_grown wrote an output");
    w->seqs.abi_grown = 0;
    st = fa_forward(NULL, &w->ps, &w->sq, &w->sk, &w->sv, &w->sout, w->lses);
    ABI_CHECK(fails, st == FA_OK, "fa_forward, p.seqs.abi_grown cleared: %s", fa_last_error());

    /* opts: fa_context_create, *ctx untouched */
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = 2;
    o.abi_grown = 1;
    static int marker;
    fa_context *ctx = (fa_context *)(void *)&marker;
    st = fa_context_create(&ctx, &o);
    ABI_CHECK(fails,
              st == FA_ERR_UNSUPPORTED && names("fa_context_create", "opts") &&
                  ctx == (fa_context *)(void *)&marker,
              "fa_context_create, opts.abi_grown set: %d, \"%s\", ctx %s", (int)st, fa_last_error(),
              ctx == (fa_context *)(void *)&marker ? "untouched" : "written");
    o.abi_grown = 0;
    st = fa_context_create(&ctx, &o);
    ABI_CHECK(fails, st == FA_OK, "fa_context_create, opts.abi_grown cleared: %s", fa_last_error());
    if (st != FA_OK) return fails;

    /* out of fa_context_stats: a field it could not fill, asked for; no byte written */
    fa_stats s, before;
    memset(&s, ABI_CANARY, sizeof s);
    s.struct_size = sizeof s;
    s.abi_grown = 1;
    before = s;
    st = fa_context_stats(ctx, &s);
    ABI_CHECK(fails,
              st == FA_ERR_UNSUPPORTED && names("fa_context_stats", "out") && !memcmp(&s, &before, sizeof s),
              "fa_context_stats, out.abi_grown set: %d, \"%s\", out %s", (int)st, fa_last_error(),
              memcmp(&s, &before, sizeof s) ? "written" : "untouched");
    s.abi_grown = 0;
    st = fa_context_stats(ctx, &s);
    ABI_CHECK(fails, st == FA_OK && s.abi_grown == 0 && s.num_threads == 2,
              "fa_context_stats, out.abi_grown cleared: %d, abi_grown %#llx, %d threads", (int)st,
              (unsigned long long)s.abi_grown, s.num_threads);
    fa_context_destroy(ctx);
    return fails;
}
