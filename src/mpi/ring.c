/* SPDX-License-Identifier: BSD-3-Clause */
/* The ring calls' shared machinery (ring.h). */
#include "ring.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the message of the calling thread ---- */

static _Thread_local char message[512];

fa_status fa_ring_fail(fa_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return st;
}

void fa_ring_clear_message(void)
{
    message[0] = '\0';
}

const char *fa_mpi_last_error(void)
{
    return message;
}

/* ---- what is cached on a communicator ---- */

typedef struct {
    MPI_Comm dup; /* the calls' own communicator: their messages never meet the caller's */
    fa_ring_shape *shapes;
    int64_t *starts;
    int shapes_cap;
    void *buf;
    size_t bytes;
} ring_cache;

static int cache_key = MPI_KEYVAL_INVALID;
static MPI_Datatype mebibyte = MPI_DATATYPE_NULL; /* 1 MiB of bytes: counts of whole blocks fit an int */
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Called by MPI when the caller frees its communicator (collectively, so freeing the duplicate,
 * itself collective, is too). */
static int delete_cache(MPI_Comm comm, int key, void *value, void *extra)
{
    (void)comm, (void)key, (void)extra;
    ring_cache *c = value;
    MPI_Comm_free(&c->dup);
    free(c->shapes);
    free(c->starts);
    free(c->buf);
    free(c);
    return MPI_SUCCESS;
}

static void make_keys(void)
{
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_cache, &cache_key, NULL) != MPI_SUCCESS)
        cache_key = MPI_KEYVAL_INVALID;
    if (MPI_Type_contiguous(1 << 20, MPI_BYTE, &mebibyte) != MPI_SUCCESS ||
        MPI_Type_commit(&mebibyte) != MPI_SUCCESS)
        mebibyte = MPI_DATATYPE_NULL;
}

static ring_cache *cache_of(MPI_Comm comm)
{
    void *value = NULL;
    int found = 0;
    if (MPI_Comm_get_attr(comm, cache_key, &value, &found) != MPI_SUCCESS) return NULL;
    if (found) return value;
    /* The first call on comm: every rank gets here in the same call, so the collective dup matches. */
    ring_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (MPI_Comm_dup(comm, &c->dup) != MPI_SUCCESS) {
        free(c);
        return NULL;
    }
    MPI_Comm_set_errhandler(c->dup, MPI_ERRORS_RETURN);
    if (MPI_Comm_set_attr(comm, cache_key, c) != MPI_SUCCESS) {
        MPI_Comm_free(&c->dup);
        free(c);
        return NULL;
    }
    return c;
}

void *fa_ring_buffer(fa_ring *r, size_t bytes)
{
    ring_cache *c = r->cache;
    if (bytes <= c->bytes) return c->buf;
    void *buf = NULL;
    if (posix_memalign(&buf, 64, fa_ring_round(bytes)) != 0) return NULL;
    free(c->buf);
    c->buf = buf;
    c->bytes = bytes;
    return buf;
}

size_t fa_ring_round(size_t bytes)
{
    return (bytes + 63) / 64 * 64;
}

/* ---- setting up a call ---- */

/* flashattn.h's reading rule (ABI section) for the caller's p, against the fa_params this library
 * was built with. The ring passes the core its own copies, never the caller's struct, so the core
 * cannot apply the rule for it; and the core it runs with may be newer, with a larger fa_params whose
 * fields the ring would drop unread, so the unknown bytes are checked here against the ring's size. */
static fa_status read_params(const fa_params *p, fa_params *copy, char *reason, size_t size)
{
    fa_params_init(copy, sizeof *copy);
    if (!p) return FA_OK;
    size_t given;
    memcpy(&given, p, sizeof given); /* the caller's struct may be smaller or larger than ours */
    if (given < FA_PARAMS_SIZE_MIN || given > FA_STRUCT_SIZE_MAX || (given - FA_PARAMS_SIZE_MIN) % 8 != 0) {
        snprintf(reason, size,
                 "p.struct_size = %zu: expected %zu plus a multiple of 8, at most %d: the caller's "
                 "sizeof(fa_params); initialise p with FA_PARAMS_INIT or fa_params_init",
                 given, (size_t)FA_PARAMS_SIZE_MIN, FA_STRUCT_SIZE_MAX);
        return FA_ERR_ARG;
    }
    const unsigned char *bytes = (const unsigned char *)p;
    for (size_t at = sizeof *copy; at < given; at++)
        if (bytes[at] != 0) {
            snprintf(reason, size, "p sets a field at byte %zu that this library (%s) does not know",
                     sizeof *copy + (at - sizeof *copy) / 8 * 8, fa_version());
            return FA_ERR_UNSUPPORTED;
        }
    memcpy(copy, p, given < sizeof *copy ? given : sizeof *copy);
    copy->struct_size = sizeof *copy;
    return FA_OK;
}

static fa_ring_shape shape_of(const fa_params *p, fa_mpi_layout layout, const fa_tensor *q,
                              const fa_tensor *k, const fa_tensor *v)
{
    fa_ring_shape s;
    memset(&s, 0, sizeof s);
    s.present = q && k && v;
    if (s.present) {
        s.dtype = q->dtype, s.batch = q->batch, s.q_heads = q->heads, s.kv_heads = k->heads;
        s.dim = q->dim, s.dim_v = v->dim, s.rows = q->seq;
    }
    s.causal = p->causal, s.window_left = p->window_left, s.window_right = p->window_right;
    s.diagonal_shift = p->diagonal_shift, s.scale = p->scale, s.softcap = p->softcap;
    s.alibi = p->alibi_slopes != NULL, s.sinks = p->sinks != NULL, s.bias = p->bias != NULL;
    s.layout = layout;
    s.dropout_p = p->dropout_p, s.dropout_seed = (int64_t)p->dropout_seed;
    s.dropout_offset = (int64_t)p->dropout_offset;
    s.dropout_row0 = p->dropout_row0, s.dropout_key0 = p->dropout_key0;
    return s;
}

fa_status fa_ring_open(fa_ring *r, const char *call, MPI_Comm comm, fa_mpi_layout layout, const fa_params *p,
                       const fa_tensor *q, const fa_tensor *k, const fa_tensor *v)
{
    fa_ring_clear_message();
    memset(r, 0, sizeof *r);
    r->call = call;
    r->layout = layout;
    r->p_read = read_params(p, &r->p, r->p_reason, sizeof r->p_reason);
    if (r->p_read != FA_OK) fa_params_init(&r->p, sizeof r->p); /* refused by fa_ring_check */
    if (comm == MPI_COMM_NULL) return fa_ring_fail(FA_ERR_ARG, "%s: comm = MPI_COMM_NULL", call);
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return fa_ring_fail(FA_ERR_RUNTIME, "%s: MPI is %s", call,
                            finalized ? "finalized" : "not initialized");
    pthread_once(&once, make_keys);
    if (cache_key == MPI_KEYVAL_INVALID || mebibyte == MPI_DATATYPE_NULL)
        return fa_ring_fail(FA_ERR_RUNTIME, "%s: MPI refused an attribute key or a datatype", call);
    ring_cache *c = cache_of(comm);
    if (!c)
        return fa_ring_fail(FA_ERR_NOMEM, "%s: the communicator's duplicate and cache could not be made",
                            call);
    r->cache = c;
    r->comm = c->dup;
    if (MPI_Comm_rank(r->comm, &r->rank) != MPI_SUCCESS || MPI_Comm_size(r->comm, &r->size) != MPI_SUCCESS)
        return fa_ring_fail(FA_ERR_RUNTIME, "%s: MPI_Comm_rank or MPI_Comm_size failed", call);
    if (c->shapes_cap < r->size) {
        fa_ring_shape *shapes = realloc(c->shapes, (size_t)r->size * sizeof *shapes);
        if (shapes) c->shapes = shapes;
        int64_t *starts = realloc(c->starts, (size_t)r->size * sizeof *starts);
        if (starts) c->starts = starts;
        if (!shapes || !starts)
            return fa_ring_fail(FA_ERR_NOMEM, "%s: no memory for %d ranks' shapes", call, r->size);
        c->shapes_cap = r->size;
    }
    fa_ring_shape me = shape_of(&r->p, layout, q, k, v);
    if (MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, c->shapes, (int)sizeof me, MPI_BYTE, r->comm) !=
        MPI_SUCCESS)
        return fa_ring_fail(FA_ERR_RUNTIME, "%s: MPI_Allgather of the shapes failed", call);
    r->shapes = c->shapes;
    r->starts = c->starts;
    for (int s = 0; s < r->size; s++) {
        c->starts[s] = r->total;
        r->total += r->shapes[s].rows;
    }
    r->dtype = (fa_dtype)me.dtype;
    r->acc = me.dtype == FA_F64 ? FA_F64 : FA_F32;
    return FA_OK;
}

/* ---- the checks only the ring adds ---- */

/* The first scalar parameter in which a differs from b (NULL: none): every rank must mask, scale,
 * cap and drop its blocks alike, or the call would succeed with wrong rows. */
static const char *scalar_params_differ(const fa_ring_shape *a, const fa_ring_shape *b)
{
    if (a->causal != b->causal) return "p.causal";
    if (a->window_left != b->window_left) return "p.window_left";
    if (a->window_right != b->window_right) return "p.window_right";
    if (a->diagonal_shift != b->diagonal_shift) return "p.diagonal_shift";
    if (memcmp(&a->scale, &b->scale, sizeof a->scale) != 0) return "p.scale";
    if (memcmp(&a->softcap, &b->softcap, sizeof a->softcap) != 0) return "p.softcap";
    if (a->alibi != b->alibi) return "p.alibi_slopes (set or not)";
    if (a->sinks != b->sinks) return "p.sinks (set or not)";
    if (a->bias != b->bias) return "p.bias (set or not)";
    if (a->layout != b->layout) return "layout";
    if (memcmp(&a->dropout_p, &b->dropout_p, sizeof a->dropout_p) != 0) return "p.dropout_p";
    if (a->dropout_seed != b->dropout_seed) return "p.dropout_seed";
    if (a->dropout_offset != b->dropout_offset) return "p.dropout_offset";
    if (a->dropout_row0 != b->dropout_row0) return "p.dropout_row0";
    if (a->dropout_key0 != b->dropout_key0) return "p.dropout_key0";
    return NULL;
}

fa_status fa_ring_refuse_mixed(const fa_tensor *q, const fa_tensor *k, char *reason, size_t size)
{
    static const char *const names[] = {"FA_F32", "FA_F64",     "FA_BF16",   "FA_F16",
                                        "FA_I8",  "FA_F8_E4M3", "FA_F8_E5M2"};
    const int qt = (int)q->dtype, kt = (int)k->dtype;
    if (qt < 0 || qt > FA_F8_E5M2 || kt < 0 || kt > FA_F8_E5M2)
        return FA_OK; /* unknown: fa_forward_check's to name */
    if (kt == FA_I8 || kt == FA_F8_E4M3 || kt == FA_F8_E5M2) {
        snprintf(reason, size,
                 "k.dtype = %s: quantized shards are not supported across ranks (their scales would not "
                 "travel with them)",
                 names[kt]);
        return FA_ERR_UNSUPPORTED;
    }
    if (qt != kt) {
        snprintf(reason, size,
                 "q.dtype = %s, k.dtype = %s: f32 queries over a half-precision cache are not supported "
                 "across ranks (one dtype throughout is: f64, f32, bf16 or f16)",
                 names[qt], names[kt]);
        return FA_ERR_UNSUPPORTED;
    }
    return FA_OK;
}

fa_status fa_ring_check(const fa_ring *r, const fa_tensor *q, const fa_tensor *k, char *reason, size_t size)
{
    /* Each rank compares itself with the first rank that has its tensors (a rank without them is
     * refused by fa_forward_check, for its own reason, not blamed on the others). */
    const fa_ring_shape *me = &r->shapes[r->rank], *first = NULL;
    int ref = 0;
    while (ref < r->size && !r->shapes[ref].present) ref++;
    if (ref < r->size) first = &r->shapes[ref];
#define REFUSE(st, ...) return (snprintf(reason, size, __VA_ARGS__), (st))
    if (r->p_read != FA_OK) REFUSE(r->p_read, "%s", r->p_reason);
    if (r->layout != FA_MPI_CONTIGUOUS && r->layout != FA_MPI_ZIGZAG)
        REFUSE(FA_ERR_ARG, "layout = %d: expected FA_MPI_CONTIGUOUS or FA_MPI_ZIGZAG", (int)r->layout);
    if (r->p.seqs) REFUSE(FA_ERR_UNSUPPORTED, "p.seqs: a batch of sequences is not supported across ranks");
    /* the blocks' origins are the caller's plus their positions: a negative one could be hidden */
    if (r->p.dropout_row0 < 0 || r->p.dropout_key0 < 0)
        REFUSE(FA_ERR_ARG, "p.dropout_row0 = %lld, p.dropout_key0 = %lld: expected >= 0",
               (long long)r->p.dropout_row0, (long long)r->p.dropout_key0);
    if (!me->present || !first) return FA_OK; /* fa_forward_check names the NULL tensor */
    if (q->seq != k->seq)
        REFUSE(FA_ERR_SHAPE,
               "q.seq = %lld but k.seq = %lld: a rank's queries and keys are the same positions",
               (long long)q->seq, (long long)k->seq);
    const char *differs = scalar_params_differ(me, first);
    if (differs)
        REFUSE(FA_ERR_ARG,
               "%s differs from rank %d's (causal, windows, shift, scale, softcap, dropout's p, seed, offset "
               "and origins, which modifiers are set, layout must be the same on every rank)",
               differs, ref);
    if (me->dtype != first->dtype)
        REFUSE(FA_ERR_DTYPE, "q.dtype = %lld but %lld on rank %d", (long long)me->dtype,
               (long long)first->dtype, ref);
    if ((me->batch != first->batch || me->q_heads != first->q_heads || me->kv_heads != first->kv_heads ||
         me->dim != first->dim || me->dim_v != first->dim_v))
        REFUSE(FA_ERR_SHAPE,
               "q.batch, q.heads, k.heads, q.dim, v.dim = %lld, %lld, %lld, %lld, %lld but %lld, %lld, %lld, "
               "%lld, "
               "%lld on rank %d",
               (long long)me->batch, (long long)me->q_heads, (long long)me->kv_heads, (long long)me->dim,
               (long long)me->dim_v, (long long)first->batch, (long long)first->q_heads,
               (long long)first->kv_heads, (long long)first->dim, (long long)first->dim_v, ref);
    if (r->layout == FA_MPI_ZIGZAG && (me->rows % 2 != 0 || me->rows != first->rows))
        REFUSE(FA_ERR_SHAPE,
               "q.seq = %lld with FA_MPI_ZIGZAG: expected the same even length on every rank "
               "(rank %d has %lld)",
               (long long)me->rows, ref, (long long)first->rows);
    /* N counts the rows of every rank: while a rank lacks its tensors (refused for that), the
     * checks against N would blame the others */
    for (int x = 0; x < r->size; x++)
        if (!r->shapes[x].present) return FA_OK;
    int64_t shift = r->p.diagonal_shift < 0 ? -r->p.diagonal_shift : r->p.diagonal_shift;
    if (shift > FA_MAX_DIAGONAL_SHIFT - r->total)
        REFUSE(FA_ERR_ARG, "p.diagonal_shift = %lld: |shift| + N (%lld) exceeds FA_MAX_DIAGONAL_SHIFT",
               (long long)r->p.diagonal_shift, (long long)r->total);
    /* each block's call checks its own rows and keys; the global sequence's must fit the counter too */
    if (r->p.dropout_p != 0.0 && r->p.dropout_row0 >= 0 && r->p.dropout_key0 >= 0 &&
        (r->p.dropout_row0 > ((int64_t)1 << 32) - r->total ||
         r->p.dropout_key0 > ((int64_t)1 << 34) - r->total))
        REFUSE(
            FA_ERR_UNSUPPORTED,
            "p.dropout_p = %g with N = %lld, p.dropout_row0 = %lld, p.dropout_key0 = %lld: dropout's counter "
            "holds rows below 2^32 and keys below 2^34",
            r->p.dropout_p, (long long)r->total, (long long)r->p.dropout_row0, (long long)r->p.dropout_key0);
    if (r->p.bias && r->p.bias->dim != r->total)
        REFUSE(FA_ERR_SHAPE, "p.bias.dim = %lld: expected the global key axis, N = %lld",
               (long long)r->p.bias->dim, (long long)r->total);
    if (r->p.bias && r->p.bias->seq != 1 && r->p.bias->seq != q->seq)
        REFUSE(FA_ERR_SHAPE, "p.bias.seq = %lld: expected the local queries, %lld, or 1",
               (long long)r->p.bias->seq, (long long)q->seq);
#undef REFUSE
    return FA_OK;
}

fa_ring_segments fa_ring_segments_of(const fa_ring *r, int s)
{
    fa_ring_segments out;
    memset(&out, 0, sizeof out);
    int64_t n = r->shapes[s].rows;
    if (r->layout == FA_MPI_ZIGZAG) {
        int64_t chunk = n / 2, chunks = 2 * (int64_t)r->size;
        out.count = 2;
        out.seg[0] = (fa_ring_segment){s * chunk, 0, chunk};
        out.seg[1] = (fa_ring_segment){(chunks - 1 - s) * chunk, chunk, chunk};
    } else {
        out.count = 1;
        out.seg[0] = (fa_ring_segment){r->starts[s], 0, n};
    }
    return out;
}

/* ---- agreeing on a status ---- */

fa_status fa_ring_agree(fa_ring *r, fa_status mine, const char *reason)
{
    struct {
        int status, rank;
    } in = {(int)mine, r->rank}, worst;
    if (MPI_Allreduce(&in, &worst, 1, MPI_2INT, MPI_MAXLOC, r->comm) != MPI_SUCCESS)
        return fa_ring_fail(FA_ERR_RUNTIME, "%s: MPI_Allreduce of the ranks' statuses failed", r->call);
    if (worst.status == FA_OK) {
        fa_ring_clear_message();
        return FA_OK;
    }
    char why[400] = "";
    if (r->rank == worst.rank) snprintf(why, sizeof why, "%s", reason ? reason : fa_status_str(mine));
    if (MPI_Bcast(why, (int)sizeof why, MPI_CHAR, worst.rank, r->comm) != MPI_SUCCESS)
        snprintf(why, sizeof why, "%s (MPI_Bcast of the reason failed)",
                 fa_status_str((fa_status)worst.status));
    return fa_ring_fail((fa_status)worst.status, "%s: rank %d of %d: %s", r->call, worst.rank, r->size, why);
}

/* ---- transfers ---- */

fa_status fa_ring_post(fa_ring *r, fa_ring_transfer *t, void *buf, size_t bytes, int peer, int tag, int send)
{
    size_t blocks = bytes >> 20, rest = bytes & (((size_t)1 << 20) - 1);
    t->req[0] = t->req[1] = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    if (blocks)
        rc = send ? MPI_Isend(buf, (int)blocks, mebibyte, peer, tag, r->comm, &t->req[0])
                  : MPI_Irecv(buf, (int)blocks, mebibyte, peer, tag, r->comm, &t->req[0]);
    if (rc == MPI_SUCCESS && rest) {
        char *tail = (char *)buf + (blocks << 20);
        rc = send ? MPI_Isend(tail, (int)rest, MPI_BYTE, peer, tag + 1, r->comm, &t->req[1])
                  : MPI_Irecv(tail, (int)rest, MPI_BYTE, peer, tag + 1, r->comm, &t->req[1]);
    }
    return rc == MPI_SUCCESS ? FA_OK : FA_ERR_RUNTIME;
}

fa_status fa_ring_wait(fa_ring_transfer *t)
{
    return MPI_Waitall(2, t->req, MPI_STATUSES_IGNORE) == MPI_SUCCESS ? FA_OK : FA_ERR_RUNTIME;
}

void fa_ring_progress(fa_ring_transfer *t, int count)
{
    for (int x = 0; x < count; x++) {
        int done = 0;
        MPI_Testall(2, t[x].req, &done, MPI_STATUSES_IGNORE);
    }
}

/* ---- views ---- */

size_t fa_ring_elem(fa_dtype t)
{
    return t == FA_F64 ? sizeof(double) : t == FA_BF16 || t == FA_F16 ? sizeof(uint16_t) : sizeof(float);
}

fa_tensor fa_ring_rows(const fa_tensor *t, int64_t row, int64_t len)
{
    fa_tensor v = *t;
    if (t->data) v.data = (char *)t->data + row * t->stride_seq * (int64_t)fa_ring_elem(t->dtype);
    v.seq = len;
    return v;
}

double fa_ring_load(const void *base, int64_t at, fa_dtype t)
{
    return t == FA_F64 ? ((const double *)base)[at] : (double)((const float *)base)[at];
}

void fa_ring_store(void *base, int64_t at, fa_dtype t, double x)
{
    if (t == FA_F64)
        ((double *)base)[at] = x;
    else
        ((float *)base)[at] = (float)x;
}

fa_tensor fa_ring_compact(void *data, fa_dtype dt, int64_t b, int64_t h, int64_t len, int64_t d)
{
    return fa_tensor_bhsd(data, dt, b, h, len, d);
}

/* ---- blocks ---- */

int fa_ring_block_visible(const fa_params *p, const fa_ring_segment *q, const fa_ring_segment *k)
{
    if (q->len == 0 || k->len == 0) return 0;
    /* Global row i sees keys [i + lo, i + hi] (self-attention, d0 = diagonal_shift): lo = d0 -
     * window_left, hi = d0 under a causal mask, d0 + window_right with a right window. Some row of
     * [qa, qz] sees some key of [ka, kz] when kz >= i + lo and ka <= i + hi for one i. */
    int64_t d0 = p->diagonal_shift, qa = q->pos, qz = q->pos + q->len - 1, ka = k->pos,
            kz = k->pos + k->len - 1;
    /* positions and d0 stay below 2^53 (fa_ring_check); a window wider than 2^61 bounds nothing */
    const int64_t unbounded = (int64_t)1 << 61;
    int causal = p->causal != FA_CAUSAL_NONE;
    int has_lo = p->window_left >= 0 && p->window_left < unbounded;
    int has_hi = causal || (p->window_right >= 0 && p->window_right < unbounded);
    int64_t lo = has_lo ? d0 - p->window_left : 0, hi = causal ? d0 : has_hi ? d0 + p->window_right : 0;
    int64_t first = qa, last = qz; /* the rows that can see the block */
    if (has_hi && ka - hi > first) first = ka - hi;
    if (has_lo && kz - lo < last) last = kz - lo;
    return first <= last;
}

static int rank_sees_shard(const fa_ring *r, int x, int src)
{
    fa_ring_segments queries = fa_ring_segments_of(r, x), keys = fa_ring_segments_of(r, src);
    for (int a = 0; a < queries.count; a++)
        for (int c = 0; c < keys.count; c++)
            if (fa_ring_block_visible(&r->p, &queries.seg[a], &keys.seg[c])) return 1;
    return 0;
}

int fa_ring_reach(const fa_ring *r, int src)
{
    for (int d = r->size - 1; d > 0; d--)
        if (rank_sees_shard(r, (src + d) % r->size, src)) return d;
    return 0;
}

fa_params fa_ring_own_params(const fa_ring *r, const fa_tensor *q, fa_tensor *bias)
{
    fa_ring_segments mine = fa_ring_segments_of(r, r->rank);
    fa_ring_segment all = {mine.seg[0].pos, 0, q ? q->seq : 0};
    fa_params own = fa_ring_block_params(r, &all, &all, bias);
    own.sinks = r->p.sinks, own.dsinks = r->p.dsinks;
    return own;
}

size_t fa_ring_shard_bytes(const fa_ring *r, int64_t rows, fa_dtype t)
{
    const fa_ring_shape *s = &r->shapes[r->rank];
    return (size_t)(s->batch * s->kv_heads * rows * (s->dim + s->dim_v)) * fa_ring_elem(t);
}

void fa_ring_shard_halves(const fa_ring *r, char *base, int64_t rows, fa_dtype t, fa_tensor *k, fa_tensor *v)
{
    const fa_ring_shape *s = &r->shapes[r->rank];
    *k = fa_ring_compact(base, t, s->batch, s->kv_heads, rows, s->dim);
    *v = fa_ring_compact(base + (size_t)(s->batch * s->kv_heads * rows * s->dim) * fa_ring_elem(t), t,
                         s->batch, s->kv_heads, rows, s->dim_v);
}

int64_t fa_ring_widest(const fa_ring *r)
{
    int64_t widest = 0;
    for (int x = 0; x < r->size; x++)
        if (r->shapes[x].rows > widest) widest = r->shapes[x].rows;
    return widest;
}

fa_params fa_ring_block_params(const fa_ring *r, const fa_ring_segment *q, const fa_ring_segment *k,
                               fa_tensor *bias)
{
    fa_params bp = r->p;
    bp.sinks = NULL; /* applied once, to the merged rows */
    bp.dsinks = NULL;
    bp.dbias = NULL; /* fa_mpi_backward refuses it: a block's dS covers its columns of the bias only */
    int64_t d0 = r->p.diagonal_shift + (q->pos - k->pos); /* the block's diagonal */
    /* dropout's mask of the global rows and keys (and of the caller's origins, if it set any) */
    bp.dropout_row0 = r->p.dropout_row0 + q->pos;
    bp.dropout_key0 = r->p.dropout_key0 + k->pos;
    if (r->p.causal != FA_CAUSAL_NONE) {
        bp.causal = FA_CAUSAL_TOP_LEFT;
        bp.diagonal_shift = d0;
    } else { /* without a causal mask, windows use the bottom-right offset nk - nq */
        bp.diagonal_shift = d0 - (k->len - q->len);
    }
    if (r->p.bias) {
        *bias = *r->p.bias;
        int64_t row = bias->seq == 1 ? 0 : q->row;
        bias->data = (char *)bias->data + (row * bias->stride_seq + k->pos) * (int64_t)fa_ring_elem(r->acc);
        if (bias->seq != 1) bias->seq = q->len;
        bias->dim = k->len;
        bp.bias = bias;
    }
    return bp;
}
