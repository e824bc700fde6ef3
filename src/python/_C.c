/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flashattn._C — the Python package's door to the C library: a CPython extension module compiled
 * against include/flashattn.h, so every struct it fills (fa_tensor, fa_params, fa_seqs,
 * fa_context_opts, fa_stats) has the header's layout and initialiser, never a hand-made mirror.
 *
 * It knows nothing of torch at compile time. It takes tensor objects and reads what a view needs
 * through their Python attributes (data_ptr(), shape, stride(), dtype, is_cpu); the package hands
 * it torch's four dtype objects once (register_dtypes), so a dtype is matched by identity.
 *
 * Layouts. A 4-D tensor is [batch][seq][heads][dim] (layout 0, FlashAttention's) or
 * [batch][heads][seq][dim] (layout 1, PyTorch's SDPA); a 3-D tensor is packed tokens
 * [total][heads][dim] (a batch of one). Any strides the C API takes are taken as they are: no copy
 * is ever made here. The last axis must have stride 1 (the package copies a tensor that has not).
 *
 * Every fa_ call runs without the GIL. The time each call spends inside the library is added to a
 * per-thread counter (c_time_ns()), which the benchmarks use to separate the binding's own cost.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <flashattn.h>

#include <stdint.h>
#include <string.h>
#include <time.h>

/* ---- module state: interned names, torch's dtype objects, exception classes ---- */

static PyObject *s_dtype, *s_shape, *s_stride, *s_data_ptr, *s_is_cpu;
/* torch's dtype objects: indexed by fa_dtype (float32, float64, bfloat16, float16), then int32, int64 */
enum { DT_I32 = 4, DT_I64 = 5, N_DTYPES = 6 };
static PyObject *dtype_objects[N_DTYPES];
static PyObject *Error, *ArgumentError, *UnsupportedError, *OutOfMemoryError, *NotContiguousError;
static _Thread_local unsigned long long c_time_total_ns, c_cpu_total_ns;
static int timing_cpu; /* set_cpu_timing(): also count the calling thread's CPU time inside calls */

static unsigned long long clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static unsigned long long now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

static unsigned long long cpu_ns(void)
{
    return timing_cpu ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
}

static const char *status_name(fa_status s)
{
    switch (s) {
    case FA_OK: return "FA_OK";
    case FA_ERR_NULL: return "FA_ERR_NULL";
    case FA_ERR_SHAPE: return "FA_ERR_SHAPE";
    case FA_ERR_STRIDE: return "FA_ERR_STRIDE";
    case FA_ERR_DTYPE: return "FA_ERR_DTYPE";
    case FA_ERR_ALIAS: return "FA_ERR_ALIAS";
    case FA_ERR_ARG: return "FA_ERR_ARG";
    case FA_ERR_NOMEM: return "FA_ERR_NOMEM";
    case FA_ERR_UNSUPPORTED: return "FA_ERR_UNSUPPORTED";
    case FA_ERR_BUSY: return "FA_ERR_BUSY";
    case FA_ERR_RUNTIME: return "FA_ERR_RUNTIME";
    }
    return "FA_ERR_?";
}

/* Raises the exception class of status s with fa_last_error()'s line (read on this thread, right
 * after the failing call) and the status, and sets the instance's `status` to the status's name. */
static PyObject *raise_status(fa_status s)
{
    PyObject *cls = Error;
    switch (s) {
    case FA_ERR_NULL:
    case FA_ERR_SHAPE:
    case FA_ERR_STRIDE:
    case FA_ERR_DTYPE:
    case FA_ERR_ALIAS:
    case FA_ERR_ARG: cls = ArgumentError; break;
    case FA_ERR_UNSUPPORTED: cls = UnsupportedError; break;
    case FA_ERR_NOMEM: cls = OutOfMemoryError; break;
    default: break;
    }
    PyObject *msg = PyUnicode_FromFormat("%s (%s: %s)", fa_last_error(), status_name(s), fa_status_str(s));
    if (!msg) return NULL;
    PyObject *exc = PyObject_CallOneArg(cls, msg);
    Py_DECREF(msg);
    if (!exc) return NULL;
    PyObject *name = PyUnicode_FromString(status_name(s));
    if (name) {
        PyObject_SetAttrString(exc, "status", name);
        Py_DECREF(name);
    }
    PyErr_SetObject(cls, exc);
    Py_DECREF(exc);
    return NULL;
}

/* ---- reading tensors ---- */

static int get_i64(PyObject *seq, Py_ssize_t i, int64_t *out)
{
    PyObject *x = PyTuple_Check(seq) ? PyTuple_GET_ITEM(seq, i) : NULL;
    if (!x) {
        PyErr_SetString(PyExc_TypeError, "flashattn: expected a tuple of ints");
        return -1;
    }
    long long v = PyLong_AsLongLong(x);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = (int64_t)v;
    return 0;
}

/* What a binding needs of one tensor object: its address, dtype, sizes and strides. */
typedef struct {
    void *data;
    int dtype; /* fa_dtype, DT_I32, DT_I64, or -1 for a dtype the library has no use for */
    int ndim;
    int64_t size[5], stride[5];
} tensor_info;

static int dtype_of(PyObject *dt)
{
    for (int i = 0; i < N_DTYPES; i++)
        if (dt == dtype_objects[i]) return i;
    return -1;
}

static int read_info(PyObject *t, const char *name, tensor_info *ti)
{
    PyObject *is_cpu = PyObject_GetAttr(t, s_is_cpu);
    if (!is_cpu) return -1;
    int cpu = PyObject_IsTrue(is_cpu);
    Py_DECREF(is_cpu);
    if (cpu != 1) {
        if (cpu == 0) PyErr_Format(PyExc_ValueError, "flashattn: %s is not a CPU tensor", name);
        return -1;
    }
    PyObject *dt = PyObject_GetAttr(t, s_dtype);
    if (!dt) return -1;
    ti->dtype = dtype_of(dt);
    Py_DECREF(dt);
    PyObject *shape = PyObject_GetAttr(t, s_shape);
    if (!shape) return -1;
    PyObject *stride = PyObject_CallMethodNoArgs(t, s_stride);
    if (!stride) {
        Py_DECREF(shape);
        return -1;
    }
    int rc = 0;
    Py_ssize_t n = PyTuple_Check(shape) ? PyTuple_GET_SIZE(shape) : -1;
    if (n < 0 || n > 5 || !PyTuple_Check(stride) || PyTuple_GET_SIZE(stride) != n) {
        PyErr_Format(PyExc_ValueError, "flashattn: %s: expected a tensor of at most 5 dimensions", name);
        rc = -1;
    }
    ti->ndim = (int)n;
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++)
        if (get_i64(shape, i, &ti->size[i]) || get_i64(stride, i, &ti->stride[i])) rc = -1;
    Py_DECREF(shape);
    Py_DECREF(stride);
    if (rc) return -1;
    PyObject *ptr = PyObject_CallMethodNoArgs(t, s_data_ptr);
    if (!ptr) return -1;
    ti->data = PyLong_AsVoidPtr(ptr);
    Py_DECREF(ptr);
    if (!ti->data && PyErr_Occurred()) return -1;
    return 0;
}

/* A tensor object as an fa_tensor view (see the layouts at the top). */
static int read_view(PyObject *t, int layout, const char *name, fa_tensor *v)
{
    tensor_info ti;
    if (read_info(t, name, &ti)) return -1;
    if (ti.dtype < 0 || ti.dtype >= DT_I32) {
        PyErr_Format(PyExc_TypeError,
                     "flashattn: %s has a dtype the library does not take "
                     "(float32, float64, bfloat16 or float16)",
                     name);
        return -1;
    }
    int seq_axis, head_axis;
    if (ti.ndim == 4) {
        seq_axis = layout == 1 ? 2 : 1;
        head_axis = layout == 1 ? 1 : 2;
    } else if (ti.ndim == 3) {
        seq_axis = 0;
        head_axis = 1;
    } else {
        PyErr_Format(PyExc_ValueError,
                     "flashattn: %s has %d dimensions; expected 4 (batch, seq, heads, dim) "
                     "or 3 (tokens, heads, dim)",
                     name, ti.ndim);
        return -1;
    }
    int last = ti.ndim - 1;
    if (ti.stride[last] != 1 && ti.size[last] > 1) {
        PyErr_Format(NotContiguousError,
                     "flashattn: %s: the last dimension must be contiguous (stride 1), "
                     "its stride is %lld",
                     name, (long long)ti.stride[last]);
        return -1;
    }
    memset(v, 0, sizeof *v);
    v->data = ti.data;
    v->dtype = (fa_dtype)ti.dtype;
    v->dim = ti.size[last];
    v->seq = ti.size[seq_axis];
    v->heads = ti.size[head_axis];
    v->stride_seq = ti.stride[seq_axis];
    v->stride_head = ti.stride[head_axis];
    if (ti.ndim == 4) {
        v->batch = ti.size[0];
        v->stride_batch = ti.stride[0];
    } else {
        v->batch = 1;
        v->stride_batch = 0;
    }
    return 0;
}

/* A bias: always [batch][heads][seq][keys], the key axis contiguous. */
static int read_bias(PyObject *t, fa_tensor *v)
{
    return read_view(t, 1, "attn_mask (bias)", v);
}

/* A contiguous array of `count` elements (count < 0: any number) of dtype `want` (an fa_dtype,
 * DT_I32 or DT_I64), or None (NULL). */
static const char *const dtype_names[N_DTYPES] = {"float32", "float64", "bfloat16",
                                                  "float16", "int32",   "int64"};

static int read_array(PyObject *t, const char *name, int want, int64_t count, void **data)
{
    if (t == Py_None) {
        *data = NULL;
        return 0;
    }
    tensor_info ti;
    if (read_info(t, name, &ti)) return -1;
    if (ti.dtype != want) {
        PyErr_Format(PyExc_TypeError, "flashattn: %s must be a %s tensor", name, dtype_names[want]);
        return -1;
    }
    int64_t n = 1;
    for (int i = 0; i < ti.ndim; i++) n *= ti.size[i];
    for (int64_t i = ti.ndim - 1, dense = 1; i >= 0 && n > 0; i--) { /* an empty array has no layout */
        if (ti.size[i] != 1 && ti.stride[i] != dense) {
            PyErr_Format(PyExc_ValueError, "flashattn: %s must be contiguous", name);
            return -1;
        }
        dense *= ti.size[i];
    }
    if (count >= 0 && n != count) {
        PyErr_Format(PyExc_ValueError, "flashattn: %s has %lld elements; expected %lld", name, (long long)n,
                     (long long)count);
        return -1;
    }
    *data = ti.data;
    return 0;
}

/* ---- contexts ---- */

typedef struct {
    PyObject_HEAD fa_context *ctx;
    int num_threads;
} ContextObject;

static void Context_dealloc(ContextObject *self)
{
    fa_context_destroy(self->ctx);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Context_init(ContextObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"num_threads", "bind", "block_q", "block_k", NULL};
    int num_threads = 0, bind = FA_BIND_AUTO, block_q = 0, block_k = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|iiii", kwlist, &num_threads, &bind, &block_q, &block_k))
        return -1;
    fa_context_opts opts = FA_CONTEXT_OPTS_INIT;
    opts.num_threads = num_threads;
    opts.bind = (fa_bind)bind;
    opts.block_q = block_q;
    opts.block_k = block_k;
    fa_context *ctx = NULL;
    fa_status s = fa_context_create(&ctx, &opts);
    if (s != FA_OK) {
        raise_status(s);
        return -1;
    }
    fa_context_destroy(self->ctx);
    self->ctx = ctx;
    self->num_threads = num_threads;
    return 0;
}

static PyObject *Context_stats(ContextObject *self, PyObject *noargs)
{
    (void)noargs;
    fa_stats st = FA_STATS_INIT;
    fa_status s = fa_context_stats(self->ctx, &st);
    if (s != FA_OK) return raise_status(s);
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:s,s:n,s:n,s:s}", "num_threads", st.num_threads, "bind",
                         (int)st.bind, "bound_threads", st.bound_threads, "block_q", st.block_q, "block_k",
                         st.block_k, "isa", st.isa ? st.isa : "", "scratch_capacity",
                         (Py_ssize_t)st.scratch_capacity, "scratch_peak", (Py_ssize_t)st.scratch_peak,
                         "backward_plan", st.backward_plan ? st.backward_plan : "");
}

static PyMethodDef Context_methods[] = {
    {"stats", (PyCFunction)Context_stats, METH_NOARGS,
     "stats() -> dict: fa_context_stats (threads, binding, blocks, kernel table, scratch bytes)"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject ContextType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "flashattn._C.Context",
    .tp_doc = "Context(num_threads=0, bind=0, block_q=0, block_k=0): an fa_context (threads, placement, "
              "kernel table, one scratch arena per thread). One call at a time.",
    .tp_basicsize = sizeof(ContextObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Context_init,
    .tp_dealloc = (destructor)Context_dealloc,
    .tp_methods = Context_methods,
};

static fa_context *context_of(PyObject *o)
{
    if (!PyObject_TypeCheck(o, &ContextType)) {
        PyErr_SetString(PyExc_TypeError, "flashattn: expected a flashattn._C.Context");
        return NULL;
    }
    return ((ContextObject *)o)->ctx;
}

/* ---- the sequences and score modifiers shared by both passes ---- */

typedef struct {
    fa_params p;
    fa_seqs seqs;
    fa_tensor bias;
} call_params;

static int as_i64(PyObject *o, const char *name, int64_t *out)
{
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "flashattn: %s must be an int", name);
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

/* args: bias, alibi_slopes, sinks, cu_seqlens_q, cu_seqlens_k, seqused_k, block_table, scale,
 * causal, window_left, window_right, softcap, diagonal_shift (13 objects), optionally followed by
 * dropout_p, dropout_seed, dropout_offset (3 more: N_DROPOUT_ARGS). */
enum { N_PARAM_ARGS = 13, N_DROPOUT_ARGS = 3 };

/* A 64-bit seed or offset: an int in [0, 2^64) (the package passes them unsigned). */
static int as_u64(PyObject *o, const char *name, uint64_t *out)
{
    unsigned long long v = 0;
    if (PyLong_Check(o)) v = PyLong_AsUnsignedLongLong(o);
    if (!PyLong_Check(o) || (v == (unsigned long long)-1 && PyErr_Occurred())) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "flashattn: %s must be an int in [0, 2**64)", name);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

/* The dropout fields of p from (dropout_p, seed, offset): the library checks dropout_p's range. */
static int read_dropout(PyObject *const *a, fa_params *p)
{
    double dropout_p = PyFloat_AsDouble(a[0]);
    if (dropout_p == -1.0 && PyErr_Occurred()) return -1;
    if (as_u64(a[1], "dropout_seed", &p->dropout_seed) || as_u64(a[2], "dropout_offset", &p->dropout_offset))
        return -1;
    p->dropout_p = dropout_p;
    return 0;
}

static int read_params(PyObject *const *a, Py_ssize_t n, const fa_tensor *q, call_params *cp)
{
    fa_params p = FA_PARAMS_INIT;
    fa_seqs seqs = FA_SEQS_INIT;
    cp->p = p;
    cp->seqs = seqs;
    PyObject *bias = a[0], *alibi = a[1], *sinks = a[2], *cu_q = a[3], *cu_k = a[4], *used = a[5],
             *table = a[6];
    if (bias != Py_None) {
        if (read_bias(bias, &cp->bias)) return -1;
        cp->p.bias = &cp->bias;
    }
    void *ptr;
    if (read_array(alibi, "alibi_slopes", FA_F32, q->heads, &ptr)) return -1;
    cp->p.alibi_slopes = ptr;
    if (read_array(sinks, "sinks", FA_F32, q->heads, &ptr)) return -1;
    cp->p.sinks = ptr;
    double scale = PyFloat_AsDouble(a[7]);
    if (scale == -1.0 && PyErr_Occurred()) return -1;
    cp->p.scale = scale;
    int64_t causal, wl, wr, shift;
    if (as_i64(a[8], "causal", &causal) || as_i64(a[9], "window_left", &wl) ||
        as_i64(a[10], "window_right", &wr) || as_i64(a[12], "diagonal_shift", &shift))
        return -1;
    cp->p.causal = (fa_causal)causal;
    cp->p.window_left = wl;
    cp->p.window_right = wr;
    cp->p.diagonal_shift = shift;
    double softcap = PyFloat_AsDouble(a[11]);
    if (softcap == -1.0 && PyErr_Occurred()) return -1;
    cp->p.softcap = softcap;
    if (n == N_PARAM_ARGS + N_DROPOUT_ARGS && read_dropout(a + N_PARAM_ARGS, &cp->p)) return -1;
    if (cu_q == Py_None && cu_k == Py_None && used == Py_None && table == Py_None) return 0;

    /* The batch of sequences: from an offsets array (batch + 1 entries), else from seqused_k or the
     * block table (batch entries, rows), else q's batch. Every array given must agree with it. */
    int64_t batch = q->batch;
    tensor_info ti;
    if (cu_q != Py_None || cu_k != Py_None) {
        if (read_info(cu_q != Py_None ? cu_q : cu_k, "cu_seqlens", &ti)) return -1;
        batch = ti.ndim == 1 ? ti.size[0] - 1 : -1;
    } else if (used != Py_None) {
        if (read_info(used, "seqused_k", &ti)) return -1;
        batch = ti.ndim == 1 ? ti.size[0] : -1;
    } else {
        if (read_info(table, "block_table", &ti)) return -1;
        batch = ti.ndim == 2 ? ti.size[0] : -1;
    }
    if (batch < 0) {
        PyErr_SetString(PyExc_ValueError, "flashattn: cu_seqlens and seqused_k must be 1-D, block_table 2-D");
        return -1;
    }
    cp->seqs.batch = batch;
    if (read_array(cu_q, "cu_seqlens_q", DT_I64, batch + 1, &ptr)) return -1;
    cp->seqs.cu_seqlens_q = ptr;
    if (read_array(cu_k, "cu_seqlens_k", DT_I64, batch + 1, &ptr)) return -1;
    cp->seqs.cu_seqlens_k = ptr;
    if (read_array(used, "seqused_k", DT_I64, batch, &ptr)) return -1;
    cp->seqs.seqused_k = ptr;
    if (table != Py_None) {
        if (read_info(table, "block_table", &ti)) return -1;
        if (ti.ndim != 2 || ti.size[0] != batch) {
            PyErr_Format(PyExc_ValueError,
                         "flashattn: block_table must be (batch = %lld, pages per sequence)",
                         (long long)batch);
            return -1;
        }
        if (read_array(table, "block_table", DT_I32, batch * ti.size[1], &ptr)) return -1;
        cp->seqs.block_table = ptr;
        cp->seqs.pages_per_seq = ti.size[1];
    }
    cp->p.seqs = &cp->seqs;
    return 0;
}

/* ---- forward and backward ---- */

static int check_lse(PyObject *lse, const fa_tensor *q, void **data)
{
    if (lse == Py_None) {
        *data = NULL;
        return 0;
    }
    int want = q->dtype == FA_F64 ? FA_F64 : FA_F32;
    return read_array(lse, "lse", want, q->batch * q->heads * q->seq, data);
}

/* forward(ctx, layout, q, k, v, out, lse, <N_PARAM_ARGS params>[, <N_DROPOUT_ARGS>]) -> ns spent in
 * fa_forward */
static PyObject *py_forward(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 7 + N_PARAM_ARGS && nargs != 7 + N_PARAM_ARGS + N_DROPOUT_ARGS) {
        PyErr_Format(PyExc_TypeError, "forward: expected %d or %d arguments, got %zd", 7 + N_PARAM_ARGS,
                     7 + N_PARAM_ARGS + N_DROPOUT_ARGS, nargs);
        return NULL;
    }
    fa_context *ctx = context_of(args[0]);
    if (!ctx) return NULL;
    int layout = PyObject_IsTrue(args[1]);
    fa_tensor q, k, v, out;
    if (layout < 0 || read_view(args[2], layout, "q", &q) || read_view(args[3], layout, "k", &k) ||
        read_view(args[4], layout, "v", &v) || read_view(args[5], layout, "out", &out))
        return NULL;
    void *lse;
    if (check_lse(args[6], &q, &lse)) return NULL;
    call_params cp;
    if (read_params(args + 7, nargs - 7, &q, &cp)) return NULL;
    fa_status s;
    unsigned long long c0 = cpu_ns(), t0 = now_ns(), dt;
    Py_BEGIN_ALLOW_THREADS s = fa_forward(ctx, &cp.p, &q, &k, &v, &out, lse);
    Py_END_ALLOW_THREADS dt = now_ns() - t0;
    c_time_total_ns += dt;
    c_cpu_total_ns += cpu_ns() - c0;
    if (s != FA_OK) return raise_status(s);
    return PyLong_FromUnsignedLongLong(dt);
}

/* backward(ctx, layout, q, k, v, out, dout, lse, dq, dk, dv, dsinks, <N_PARAM_ARGS params>
 * [, <N_DROPOUT_ARGS>]) -> ns */
static PyObject *py_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 12 + N_PARAM_ARGS && nargs != 12 + N_PARAM_ARGS + N_DROPOUT_ARGS) {
        PyErr_Format(PyExc_TypeError, "backward: expected %d or %d arguments, got %zd", 12 + N_PARAM_ARGS,
                     12 + N_PARAM_ARGS + N_DROPOUT_ARGS, nargs);
        return NULL;
    }
    fa_context *ctx = context_of(args[0]);
    if (!ctx) return NULL;
    int layout = PyObject_IsTrue(args[1]);
    fa_tensor q, k, v, out, dout, dq, dk, dv;
    if (layout < 0 || read_view(args[2], layout, "q", &q) || read_view(args[3], layout, "k", &k) ||
        read_view(args[4], layout, "v", &v) || read_view(args[5], layout, "out", &out) ||
        read_view(args[6], layout, "dout", &dout) || read_view(args[8], layout, "dq", &dq) ||
        read_view(args[9], layout, "dk", &dk) || read_view(args[10], layout, "dv", &dv))
        return NULL;
    void *lse, *dsinks;
    if (check_lse(args[7], &q, &lse) || read_array(args[11], "dsinks", FA_F32, q.heads, &dsinks)) return NULL;
    call_params cp;
    if (read_params(args + 12, nargs - 12, &q, &cp)) return NULL;
    cp.p.dsinks = dsinks;
    fa_status s;
    unsigned long long c0 = cpu_ns(), t0 = now_ns(), dt;
    Py_BEGIN_ALLOW_THREADS s = fa_backward(ctx, &cp.p, &q, &k, &v, &out, &dout, lse, &dq, &dk, &dv);
    Py_END_ALLOW_THREADS dt = now_ns() - t0;
    c_time_total_ns += dt;
    c_cpu_total_ns += cpu_ns() - c0;
    if (s != FA_OK) return raise_status(s);
    return PyLong_FromUnsignedLongLong(dt);
}

/* fa_dropout_mask of every (b, h) of dims = {batch, heads, rows, cols}, tile after tile. */
static fa_status mask_tiles(const fa_params *p, const int64_t dims[4], uint8_t *mask)
{
    const int64_t tile = dims[2] * dims[3];
    fa_status s = FA_OK;
    for (int64_t b = 0; s == FA_OK && b < dims[0]; b++)
        for (int64_t h = 0; s == FA_OK && h < dims[1]; h++)
            s = fa_dropout_mask(p, dims[1], b, h, 0, 0, dims[2], dims[3], mask + (b * dims[1] + h) * tile,
                                dims[3]);
    return s;
}

/* dropout_mask(dropout_p, seed, offset, batch, heads, rows, cols) -> bytearray of batch·heads·rows·cols
 * bytes, [b][h][i][j]: fa_dropout_mask of each (b, h) with Hq = heads, 1 = kept. */
static PyObject *py_dropout_mask(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "dropout_mask: expected 7 arguments, got %zd", nargs);
        return NULL;
    }
    fa_params p = FA_PARAMS_INIT;
    if (read_dropout(args, &p)) return NULL;
    int64_t dims[4];
    const char *names[4] = {"batch", "heads", "rows", "cols"};
    Py_ssize_t total = 1;
    for (int i = 0; i < 4; i++) {
        if (as_i64(args[3 + i], names[i], &dims[i])) return NULL;
        if (dims[i] < 0) {
            PyErr_Format(PyExc_ValueError, "dropout_mask: %s = %lld must be >= 0", names[i],
                         (long long)dims[i]);
            return NULL;
        }
        if (dims[i] > 0 && total > PY_SSIZE_T_MAX / dims[i]) {
            PyErr_SetString(PyExc_OverflowError, "dropout_mask: batch * heads * rows * cols is too large");
            return NULL;
        }
        total *= (Py_ssize_t)dims[i];
    }
    PyObject *buf = PyByteArray_FromStringAndSize(NULL, total);
    if (!buf) return NULL;
    fa_status s;
    Py_BEGIN_ALLOW_THREADS s = mask_tiles(&p, dims, (uint8_t *)PyByteArray_AS_STRING(buf));
    Py_END_ALLOW_THREADS if (s != FA_OK)
    {
        Py_DECREF(buf);
        return raise_status(s);
    }
    return buf;
}

static PyObject *py_register_dtypes(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *objs[N_DTYPES];
    if (!PyArg_ParseTuple(args, "OOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5]))
        return NULL;
    for (int i = 0; i < N_DTYPES; i++) {
        Py_INCREF(objs[i]);
        Py_XSETREF(dtype_objects[i], objs[i]);
    }
    Py_RETURN_NONE;
}

static PyObject *py_c_time_ns(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyLong_FromUnsignedLongLong(c_time_total_ns);
}

static PyObject *py_c_cpu_ns(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyLong_FromUnsignedLongLong(c_cpu_total_ns);
}

static PyObject *py_set_cpu_timing(PyObject *self, PyObject *on)
{
    (void)self;
    int v = PyObject_IsTrue(on);
    if (v < 0) return NULL;
    timing_cpu = v;
    Py_RETURN_NONE;
}

static PyObject *py_version(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyUnicode_FromString(fa_version());
}

static PyMethodDef methods[] = {
    {"forward", (PyCFunction)(void (*)(void))py_forward, METH_FASTCALL,
     "forward(ctx, layout_bhsd, q, k, v, out, lse, bias, alibi_slopes, sinks, cu_seqlens_q, cu_seqlens_k, "
     "seqused_k, block_table, scale, causal, window_left, window_right, softcap, diagonal_shift"
     "[, dropout_p, dropout_seed, dropout_offset]) -> ns\n"
     "fa_forward on these views; raises with fa_last_error() on a refusal."},
    {"backward", (PyCFunction)(void (*)(void))py_backward, METH_FASTCALL,
     "backward(ctx, layout_bhsd, q, k, v, out, dout, lse, dq, dk, dv, dsinks, bias, alibi_slopes, sinks, "
     "cu_seqlens_q, cu_seqlens_k, seqused_k, block_table, scale, causal, window_left, window_right, softcap, "
     "diagonal_shift[, dropout_p, dropout_seed, dropout_offset]) -> ns\nfa_backward on these views."},
    {"dropout_mask", (PyCFunction)(void (*)(void))py_dropout_mask, METH_FASTCALL,
     "dropout_mask(dropout_p, seed, offset, batch, heads, rows, cols) -> bytearray [b][h][i][j]\n"
     "fa_dropout_mask over batch entries 0..batch-1 and query heads 0..heads-1 (Hq = heads), rows "
     "0..rows-1, keys 0..cols-1: 1 = kept, 0 = dropped."},
    {"register_dtypes", py_register_dtypes, METH_VARARGS,
     "register_dtypes(float32, float64, bfloat16, float16, int32, int64): the dtype objects matched by "
     "identity"},
    {"c_time_ns", py_c_time_ns, METH_NOARGS,
     "c_time_ns() -> int: nanoseconds this thread has spent inside fa_forward and fa_backward"},
    {"c_cpu_ns", py_c_cpu_ns, METH_NOARGS,
     "c_cpu_ns() -> int: this thread's CPU time inside fa_forward and fa_backward while "
     "set_cpu_timing(True)"},
    {"set_cpu_timing", py_set_cpu_timing, METH_O,
     "set_cpu_timing(on): count the calling thread's CPU time inside calls too (two more clock reads a "
     "call)"},
    {"version", py_version, METH_NOARGS, "version() -> str: fa_version() of the library loaded"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, .m_name = "flashattn._C",
                                    .m_doc = "The C library's calls on tensor views (see src/python/_C.c).",
                                    .m_size = -1, .m_methods = methods};

static PyObject *new_error(const char *name, PyObject *bases, const char *doc)
{
    return PyErr_NewExceptionWithDoc(name, doc, bases, NULL);
}

PyMODINIT_FUNC PyInit__C(void); /* the one symbol the module exports */
PyMODINIT_FUNC PyInit__C(void)
{
    if (PyType_Ready(&ContextType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    s_dtype = PyUnicode_InternFromString("dtype");
    s_shape = PyUnicode_InternFromString("shape");
    s_stride = PyUnicode_InternFromString("stride");
    s_data_ptr = PyUnicode_InternFromString("data_ptr");
    s_is_cpu = PyUnicode_InternFromString("is_cpu");
    Error = new_error("flashattn.FlashAttnError", PyExc_RuntimeError,
                      "A call of the C library failed; str() is fa_last_error() and the status, "
                      ".status the status's name (FA_ERR_...).");
    PyObject *b1 = Error ? PyTuple_Pack(2, Error, PyExc_ValueError) : NULL;
    ArgumentError = b1 ? new_error("flashattn.ArgumentError", b1,
                                   "A bad argument (FA_ERR_NULL, SHAPE, STRIDE, DTYPE, ALIAS or ARG).")
                       : NULL;
    PyObject *b2 = Error ? PyTuple_Pack(2, Error, PyExc_NotImplementedError) : NULL;
    UnsupportedError = b2 ? new_error("flashattn.UnsupportedError", b2,
                                      "Valid, but not in this version of the library (FA_ERR_UNSUPPORTED).")
                          : NULL;
    PyObject *b3 = Error ? PyTuple_Pack(2, Error, PyExc_MemoryError) : NULL;
    OutOfMemoryError =
        b3 ? new_error("flashattn.OutOfMemoryError", b3, "Scratch memory (FA_ERR_NOMEM).") : NULL;
    NotContiguousError = new_error("flashattn._C.NotContiguousError", PyExc_ValueError,
                                   "A tensor whose last dimension is not contiguous: the package copies it "
                                   "and calls again (the C API's one layout requirement).");
    Py_XDECREF(b1);
    Py_XDECREF(b2);
    Py_XDECREF(b3);
    if (!s_dtype || !s_shape || !s_stride || !s_data_ptr || !s_is_cpu || !Error || !ArgumentError ||
        !UnsupportedError || !OutOfMemoryError || !NotContiguousError)
        goto fail;
    Py_INCREF(&ContextType);
    if (PyModule_AddObject(m, "Context", (PyObject *)&ContextType) < 0) goto fail;
    PyObject *objs[] = {Error, ArgumentError, UnsupportedError, OutOfMemoryError, NotContiguousError};
    const char *names[] = {"FlashAttnError", "ArgumentError", "UnsupportedError", "OutOfMemoryError",
                           "NotContiguousError"};
    for (int i = 0; i < 5; i++) {
        Py_INCREF(objs[i]);
        if (PyModule_AddObject(m, names[i], objs[i]) < 0) goto fail;
    }
    if (PyModule_AddIntConstant(m, "VERSION_NUMBER", (long)fa_version_number()) < 0 ||
        PyModule_AddIntConstant(m, "HEADER_VERSION", FLASHATTN_VERSION) < 0 ||
        PyModule_AddIntConstant(m, "ABI_VERSION", FLASHATTN_ABI_VERSION) < 0 ||
        PyModule_AddIntConstant(m, "MAX_HEAD_DIM", FA_MAX_HEAD_DIM) < 0 ||
        PyModule_AddIntConstant(m, "CAUSAL_NONE", FA_CAUSAL_NONE) < 0 ||
        PyModule_AddIntConstant(m, "CAUSAL_TOP_LEFT", FA_CAUSAL_TOP_LEFT) < 0 ||
        PyModule_AddIntConstant(m, "CAUSAL_BOTTOM_RIGHT", FA_CAUSAL_BOTTOM_RIGHT) < 0 ||
        PyModule_AddIntConstant(m, "BIND_AUTO", FA_BIND_AUTO) < 0 ||
        PyModule_AddIntConstant(m, "BIND_NONE", FA_BIND_NONE) < 0 ||
        PyModule_AddIntConstant(m, "BIND_CORE", FA_BIND_CORE) < 0 ||
        PyModule_AddIntConstant(m, "BIND_SPREAD", FA_BIND_SPREAD) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
