/* SPDX-License-Identifier: BSD-3-Clause */
/* Guarded blocks and problems; see tensors.h. */
#include "tensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "fill.h"
#include "rng.h"

/* ---- guarded blocks ----------------------------------------------------------------------- */

/* `bytes` user bytes between two `guard`-byte guards, every byte = fill; base NULL without memory. */
static kit_buf kit_buf_make(size_t bytes, size_t guard, size_t align, unsigned char fill)
{
    kit_buf b = {NULL, bytes, guard};
    size_t total = bytes + 2 * guard;
    if (align) /* aligned_alloc wants a multiple of the alignment; base + guard stays aligned */
        b.base = aligned_alloc(align, total ? (total + align - 1) / align * align : align);
    else
        b.base = malloc(total ? total : 1);
    if (b.base) memset(b.base, fill, total);
    return b;
}

kit_buf kit_buf_alloc(size_t bytes)
{
    kit_buf b = kit_buf_make(bytes, KIT_GUARD, 0, KIT_CANARY);
    if (!b.base) {
        fprintf(stderr, "test kit: out of memory (%zu bytes)\n", bytes);
        abort();
    }
    return b;
}

void kit_buf_free(kit_buf *b)
{
    free(b->base);
    b->base = NULL;
    b->bytes = 0;
}

void *kit_buf_data(const kit_buf *b)
{
    return b->base ? b->base + b->guard : NULL;
}

void kit_buf_fill(kit_buf *b, unsigned char fill)
{
    if (b->base) memset(b->base, fill, b->bytes + 2 * b->guard);
}

int kit_buf_guards_intact(const kit_buf *b)
{
    if (!b->base) return 1;
    for (size_t i = 0; i < b->guard; i++)
        if (b->base[i] != KIT_CANARY || b->base[b->guard + b->bytes + i] != KIT_CANARY) return 0;
    return 1;
}

int kit_buf_untouched(const kit_buf *b)
{
    if (!b->base) return 1;
    for (size_t i = 0; i < b->bytes + 2 * b->guard; i++)
        if (b->base[i] != KIT_CANARY) return 0;
    return 1;
}

int kit_buf_only_view_written(const kit_buf *b, const fa_tensor *t)
{
    if (!b->base) return 1;
    size_t total = b->bytes + 2 * b->guard, es = kit_dtype_size(t->dtype);
    unsigned char *mine = calloc(total ? total : 1, 1);
    if (!mine) abort();
    int64_t first = (const unsigned char *)t->data - b->base;
    for (int64_t bi = 0; bi < t->batch; bi++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t s = 0; s < t->seq; s++) {
                int64_t off =
                    first + (int64_t)es * (bi * t->stride_batch + h * t->stride_head + s * t->stride_seq);
                for (int64_t d = 0; d < t->dim; d++, off += (int64_t)es)
                    if (off >= 0 && (size_t)off + es <= total) memset(mine + off, 1, es);
            }
    int ok = 1;
    for (size_t i = 0; i < total && ok; i++) ok = mine[i] || b->base[i] == KIT_CANARY;
    free(mine);
    return ok;
}

unsigned char *kit_buf_snapshot(const kit_buf *b)
{
    if (!b->base) return NULL;
    unsigned char *s = malloc(b->bytes + 2 * b->guard);
    if (!s) abort();
    memcpy(s, b->base, b->bytes + 2 * b->guard);
    return s;
}

int kit_buf_equals_snapshot(const kit_buf *b, const unsigned char *snapshot)
{
    if (!b->base) return snapshot == NULL;
    return memcmp(b->base, snapshot, b->bytes + 2 * b->guard) == 0;
}

/* ---- problems ------------------------------------------------------------------------------- */

kit_problem_opts kit_suite_opts(uint64_t *state, double qk_amp)
{
    kit_problem_opts o = {.guard = KIT_GUARD,
                          .out_fill = KIT_CANARY,
                          .draw = KIT_DRAW_SEQUENTIAL,
                          .state = state,
                          .qk_amp = qk_amp,
                          .v_amp = 1.0};
    return o;
}

/* Keyed draws through the view, so that (b, h, s, d) has one value whatever the layout. */
static void fill_keyed(const fa_tensor *t, kit_draw draw, uint64_t key, double amp)
{
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t s = 0; s < t->seq; s++) {
                uint64_t row = (uint64_t)((b * t->heads + h) * t->seq + s);
                for (int64_t d = 0; d < t->dim; d++) {
                    uint64_t index = row * (uint64_t)t->dim + (uint64_t)d;
                    double x = draw == KIT_DRAW_KEYED_NORMAL ? kit_unit_normal(key, index)
                                                             : 2.0 * kit_unit_uniform(key, index) - 1.0;
                    kit_tensor_store(t, b, h, s, d, amp * x);
                }
            }
}

const char *kit_problem_make(kit_problem *pr, const kit_shape *s, const kit_problem_opts *o)
{
    static const char *names[KIT_TENSORS] = {"q", "k", "v", "out", "dout", "dq", "dk", "dv"};
    static const int q_group[KIT_TENSORS] = {1, 0, 0, 1, 1, 1, 0, 0};
    static const int output[KIT_TENSORS] = {0, 0, 0, 1, 0, 1, 1, 1};
    memset(pr, 0, sizeof *pr);
    pr->shape = *s;
    const int64_t heads[KIT_TENSORS] = {s->q_heads, s->kv_heads, s->kv_heads, s->q_heads,
                                        s->q_heads, s->q_heads,  s->kv_heads, s->kv_heads};
    const int64_t seq[KIT_TENSORS] = {s->q_len, s->kv_len, s->kv_len, s->q_len,
                                      s->q_len, s->q_len,  s->kv_len, s->kv_len};
    const int64_t dim[KIT_TENSORS] = {s->dim, s->dim, s->dim_v, s->dim_v, s->dim_v, s->dim, s->dim, s->dim_v};
    int count = o->gradients ? KIT_TENSORS : KIT_DOUT;
    for (int x = 0; x < count; x++) {
        fa_dtype t = q_group[x] ? s->q_dtype : s->kv_dtype;
        if (x == KIT_V && o->shared_kv) { /* k's memory, its first dim_v columns */
            pr->v = pr->k;
            pr->v.dim = s->dim_v;
            continue;
        }
        size_t bytes = (size_t)(s->batch * heads[x] * seq[x] * dim[x]) * kit_dtype_size(t);
        pr->buf[x] = kit_buf_make(bytes, o->guard, o->align, output[x] ? o->out_fill : KIT_CANARY);
        void *data = kit_buf_data(&pr->buf[x]);
        if (!data) {
            kit_problem_free(pr);
            return names[x];
        }
        pr->t[x] = s->layout == KIT_BSHD ? fa_tensor_bshd(data, t, s->batch, seq[x], heads[x], dim[x])
                                         : fa_tensor_bhsd(data, t, s->batch, heads[x], seq[x], dim[x]);
    }
    size_t lse_bytes =
        (size_t)(s->batch * s->q_heads * s->q_len) * kit_dtype_size(kit_accum_dtype(s->q_dtype));
    pr->lse_buf = kit_buf_make(lse_bytes, o->guard, o->align, o->out_fill);
    if (!(pr->lse = kit_buf_data(&pr->lse_buf))) {
        kit_problem_free(pr);
        return "lse";
    }
    static const int inputs[] = {KIT_Q, KIT_K, KIT_V, KIT_DOUT};
    static const uint64_t streams[] = {1, 2, 3, 4};
    for (int i = 0; i < 4; i++) {
        int x = inputs[i];
        const fa_tensor *t = &pr->t[x];
        double amp = x == KIT_Q || x == KIT_K ? o->qk_amp : o->v_amp;
        if (!t->data || kit_dtype_is_quantized(t->dtype) || (x == KIT_V && o->shared_kv)) continue;
        if (o->draw == KIT_DRAW_SEQUENTIAL)
            kit_fill_uniform(t, o->state, -amp, amp);
        else
            fill_keyed(t, o->draw, kit_stream_key(o->seed, streams[i]), amp);
    }
    return NULL;
}

void kit_problem_free(kit_problem *pr)
{
    for (int x = 0; x < KIT_TENSORS; x++) kit_buf_free(&pr->buf[x]);
    kit_buf_free(&pr->lse_buf);
    memset(pr, 0, sizeof *pr);
}

void kit_problem_fill_outputs(kit_problem *pr, unsigned char fill)
{
    kit_buf_fill(&pr->buf[KIT_OUT], fill);
    kit_buf_fill(&pr->lse_buf, fill);
}

void kit_problem_fill_gradients(kit_problem *pr, unsigned char fill)
{
    for (int x = KIT_DQ; x <= KIT_DV; x++) kit_buf_fill(&pr->buf[x], fill);
}

int kit_problem_guards_intact(const kit_problem *pr)
{
    for (int x = 0; x < KIT_TENSORS; x++)
        if (!kit_buf_guards_intact(&pr->buf[x])) return 0;
    return kit_buf_guards_intact(&pr->lse_buf);
}
