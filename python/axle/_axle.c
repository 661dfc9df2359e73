/*
 * axle._axle: the CPython extension under the axle package.
 *
 * It holds everything that touches the C library: contexts (Context),
 * scalar expressions (Exp, with the number protocol), array computations
 * (Acc), the builders of the API, the callback trampolines that call
 * Python functions once with fresh variables (HOAS), NumPy arrays wrapped
 * without copying, results handed to NumPy without copying, and compiled
 * programs run with new arguments (Program).  The Python half of the
 * package (__init__.py) adds the jit decorator, dumps and the options.
 *
 * Lifetimes.
 *  - Terms live in their context's arena until ax_ctx_reset.  Every Exp
 *    and Acc object holding a term counts as "live" on its Context; when
 *    an operation starts on a Context with no live term and terms built
 *    since the last reset, the context is reset first.  So a term is never
 *    freed while Python can reach it, and memory stays flat in loops.
 *  - A NumPy array wrapped for ax_use is kept alive (Context.borrowed)
 *    until the reset that drops the use nodes, and by every Program
 *    compiled meanwhile (a program keeps its used arrays).
 *  - A result is a NumPy array whose base object (ArrayRef) holds one
 *    reference to the ax_array and one to its Context; the reference is
 *    released when NumPy drops the base.  A result that is an input array
 *    itself (a program returning its argument) gets the input as base.
 *  - A context is used by one thread at a time: each Context has a lock,
 *    taken when an operation starts (re-entered by the callbacks the
 *    operation calls) and released when it ends; the GIL is released while
 *    axle compiles or runs.  Releases of arrays and programs that happen
 *    while another thread is inside the context wait until it leaves.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <pythread.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>

#if NPY_ABI_VERSION < 0x02000000
#define PyDataType_ELSIZE(d) ((d)->elsize)
#endif

#include <axle.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ types */

typedef struct Pending {
    int kind;            /* 0: array, 1: program */
    void *p;
} Pending;

typedef struct {
    PyObject_HEAD
    ax_ctx *cx;
    PyThread_type_lock lock;
    unsigned long owner;   /* the thread inside, while depth > 0 */
    int depth;             /* nesting of operations of that thread */
    Py_ssize_t live;       /* Exp and Acc objects holding terms */
    int dirty;             /* terms built since the last reset */
    PyObject *borrowed;    /* dict: address of a wrapped ax_array -> the object it borrows */
    PyObject *opts;        /* dict: the options given (for repr and reuse) */
    Pending *pending;
    int npending, cappending;
    /* notices from axle's log hook, turned into Python warnings */
    char **notices;
    int nnotices;
    /* the cancel hook (Ctrl-C during a long run) */
    int running;
    double last_check;
    PyObject *exc_type, *exc_value, *exc_tb;
    int64_t resets;        /* statistics for tests */
} CtxObject;

typedef struct {
    PyObject_HEAD
    ax_exp e;
    CtxObject *c;          /* NULL for a context-free constant */
    PyObject *weak;        /* a weak scalar parameter of the jit: materialise(type) */
} ExpObject;

typedef struct {
    PyObject_HEAD
    ax_acc a;
    CtxObject *c;
} AccObject;

typedef struct {
    PyObject_HEAD
    CtxObject *c;
    ax_array *a;
} ArrayRefObject;

typedef struct {
    int param;             /* parameter index */
    int argpos;            /* position in the call's arguments */
    int scalar;            /* -1: an array; else the ax_scalar of a scalar parameter */
} PlanEntry;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    CtxObject *c;
    ax_program *p;
    const ax_type *type;   /* the result's type */
    PyObject *keep;        /* objects the program borrows (its used arrays) */
    PlanEntry *plan;
    int nplan, nparams, nargs;
    int nout;              /* flattened results */
    int64_t calls;
} ProgramObject;

static PyObject *Program_call(ProgramObject *p, PyObject *const *args, size_t nargsf, PyObject *kwnames);
static PyTypeObject Ctx_Type, Exp_Type, Acc_Type, ArrayRef_Type, Program_Type;
static PyObject *AxleError;
static CtxObject *default_ctx;

#define Exp_Check(o) PyObject_TypeCheck(o, &Exp_Type)
#define Acc_Check(o) PyObject_TypeCheck(o, &Acc_Type)
#define Ctx_Check(o) PyObject_TypeCheck(o, &Ctx_Type)

static const char *const status_names[] = {"ok", "build", "index", "divzero", "shape", "nomem",
                                           "compile", "backend", "arg", "cancelled"};

/* ------------------------------------------------------------------ errors */

static PyObject *raise_axle(int status, const char *msg)
{
    const char *kind = status >= 0 && status < (int)(sizeof status_names / sizeof *status_names)
                           ? status_names[status] : "unknown";
    PyObject *exc = PyObject_CallFunction(AxleError, "s", msg);
    if (!exc) return NULL;
    PyObject *k = PyUnicode_FromString(kind), *st = PyLong_FromLong(status);
    if (k && st && PyObject_SetAttrString(exc, "kind", k) == 0 && PyObject_SetAttrString(exc, "status", st) == 0)
        PyErr_SetObject(AxleError, exc);
    Py_XDECREF(k);
    Py_XDECREF(st);
    Py_DECREF(exc);
    return NULL;
}

/* Turns the context's pending error into an AxleError (and clears it).
 * A Python exception already set (a callback raised) wins. */
static PyObject *raise_ctx(CtxObject *c, const char *fallback)
{
    if (PyErr_Occurred()) {
        if (c) ax_clear_error(c->cx);
        return NULL;
    }
    if (!c) return raise_axle(AX_ERR_BUILD, fallback);
    ax_status s = ax_status_of(c->cx);
    const char *m = ax_error(c->cx);
    if (!m || !*m) m = fallback;
    raise_axle(s == AX_OK ? AX_ERR_BUILD : (int)s, m);
    ax_clear_error(c->cx);
    return NULL;
}

/* ---------------------------------------------------------------- contexts */

static void pending_push(CtxObject *c, int kind, void *p)
{
    if (c->npending == c->cappending) {
        int cap = c->cappending ? 2 * c->cappending : 16;
        Pending *v = PyMem_Realloc(c->pending, sizeof *v * (size_t)cap);
        if (!v) return;   /* leaked rather than freed under another thread */
        c->pending = v;
        c->cappending = cap;
    }
    c->pending[c->npending].kind = kind;
    c->pending[c->npending].p = p;
    c->npending++;
}

static void pending_drain(CtxObject *c)
{
    while (c->npending > 0) {
        Pending q = c->pending[--c->npending];
        if (q.kind == 0) ax_array_release(q.p);
        else ax_program_free(q.p);
    }
}

static void notices_flush(CtxObject *c)
{
    char **v = c->notices;
    int n = c->nnotices;
    c->notices = NULL;
    c->nnotices = 0;
    for (int i = 0; i < n; i++) {
        if (!PyErr_Occurred() && PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "axle: %s", v[i]) < 0)
            PyErr_Clear();   /* (a warning filter that raises: the notice is dropped) */
        free(v[i]);
    }
    free(v);
}

/* Starts an operation on c: waits for another thread inside, resets the
 * arena when no term is reachable.  build: the operation builds terms. */
static int ctx_enter(CtxObject *c, int build)
{
    unsigned long me = PyThread_get_thread_ident();
    if (c->depth > 0 && c->owner == me) {
        c->depth++;
        if (build) c->dirty = 1;
        return 0;
    }
    if (c->depth > 0 || !PyThread_acquire_lock(c->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(c->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    c->owner = me;
    c->depth = 1;
    pending_drain(c);
    if (c->live == 0 && c->dirty) {
        ax_ctx_reset(c->cx);
        c->resets++;
        PyDict_Clear(c->borrowed);
        c->dirty = 0;
    }
    if (build) c->dirty = 1;
    return 0;
}

static void ctx_leave(CtxObject *c)
{
    /* notices become warnings while the context is still this thread's (a
     * warning filter may call axle again: that nests) */
    if (c->depth == 1 && c->nnotices) notices_flush(c);
    if (--c->depth > 0) return;
    pending_drain(c);
    c->owner = 0;
    PyThread_release_lock(c->lock);
}

static void log_hook(void *arg, const char *msg)
{
    CtxObject *c = arg;
    char **v = realloc(c->notices, sizeof *v * (size_t)(c->nnotices + 1));
    if (!v) return;
    c->notices = v;
    if ((v[c->nnotices] = strdup(msg))) c->nnotices++;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Ctrl-C during a run: at most every 0.1 s the hook takes the GIL and asks
 * Python whether a signal arrived; the exception is kept for the caller. */
static bool cancel_hook(void *arg)
{
    CtxObject *c = arg;
    if (!c->running) return false;
    double t = now_s();
    if (t - c->last_check < 0.1) return false;
    c->last_check = t;
    bool stop = false;
    PyGILState_STATE st = PyGILState_Ensure();
    if (PyErr_CheckSignals() < 0) {
        if (!c->exc_type) PyErr_Fetch(&c->exc_type, &c->exc_value, &c->exc_tb);
        else PyErr_Clear();
        stop = true;
    }
    PyGILState_Release(st);
    return stop;
}

/* Around a call that releases the GIL. */
static void run_begin(CtxObject *c)
{
    c->running = 1;
    c->last_check = now_s();
}

/* After it (GIL held): a Python exception caught by the cancel hook wins. */
static int run_end(CtxObject *c)
{
    c->running = 0;
    if (c->exc_type) {
        ax_clear_error(c->cx);
        PyErr_Restore(c->exc_type, c->exc_value, c->exc_tb);
        c->exc_type = c->exc_value = c->exc_tb = NULL;
        return -1;
    }
    return 0;
}

static int parse_backend(PyObject *o, ax_backend_kind *k)
{
    if (!o || o == Py_None) { *k = AX_BACKEND_DEFAULT; return 0; }
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (!s) { PyErr_SetString(PyExc_TypeError, "backend: a string: 'cpu', 'interp', 'cuda', 'opencl' or 'default'"); return -1; }
    static const char *const names[] = {"default", "interp", "cpu", "cuda", "opencl"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, names[i])) { *k = (ax_backend_kind)i; return 0; }
    PyErr_Format(PyExc_ValueError, "backend '%s': expected 'cpu', 'interp', 'cuda', 'opencl' or 'default'", s);
    return -1;
}

static int parse_debug(PyObject *o, unsigned *flags)
{
    *flags = 0;
    if (!o || o == Py_None) return 0;
    if (PyLong_Check(o)) { *flags = (unsigned)PyLong_AsUnsignedLong(o); return PyErr_Occurred() ? -1 : 0; }
    static const char *const names[] = {"no-sharing", "no-fusion", "no-simplify", "no-cse", "dump",
                                        "timing", "verify", "cache", "code", "profile"};
    PyObject *items = NULL;
    if (PyUnicode_Check(o)) {
        PyObject *comma = PyUnicode_FromString(",");
        items = comma ? PyUnicode_Split(o, comma, -1) : NULL;
        Py_XDECREF(comma);
    } else {
        items = PySequence_List(o);
    }
    if (!items) return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *it = PyList_GET_ITEM(items, i);
        const char *s = PyUnicode_Check(it) ? PyUnicode_AsUTF8(it) : NULL;
        if (!s) { Py_DECREF(items); PyErr_SetString(PyExc_TypeError, "debug: names of flags"); return -1; }
        while (*s == ' ') s++;
        if (!*s) continue;
        int k = -1;
        for (int j = 0; j < 10; j++)
            if (!strncmp(s, names[j], strlen(names[j])) && (s[strlen(names[j])] == 0 || s[strlen(names[j])] == ' '))
                k = j;
        if (k < 0) {
            PyErr_Format(PyExc_ValueError, "debug flag '%s': expected no-sharing, no-fusion, no-simplify, no-cse, "
                         "dump, timing, verify, cache, code or profile", s);
            Py_DECREF(items);
            return -1;
        }
        *flags |= 1u << k;
    }
    Py_DECREF(items);
    return 0;
}

static const char *opt_str(PyObject *o, const char *what)
{
    if (!o || o == Py_None) return NULL;
    if (!PyUnicode_Check(o)) { PyErr_Format(PyExc_TypeError, "%s: a string", what); return NULL; }
    return PyUnicode_AsUTF8(o);
}

static PyObject *Ctx_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"backend", "threads", "debug", "unsafe", "mem_limit", "cc", "cflags", "cache_dir",
                             "no_cache", "cache_limit", "cc_timeout", "quiet", "strict", NULL};
    PyObject *backend = NULL, *debug = NULL, *cc = NULL, *cflags = NULL, *cache_dir = NULL;
    int threads = 0, unsafe = 0, no_cache = 0, quiet = 0, strict = 0;
    long long mem_limit = 0, cache_limit = 0;
    double cc_timeout = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OiOpLOOOpLdpp:Context", kwlist, &backend, &threads, &debug, &unsafe,
                                     &mem_limit, &cc, &cflags, &cache_dir, &no_cache, &cache_limit, &cc_timeout,
                                     &quiet, &strict))
        return NULL;
    ax_options o;
    memset(&o, 0, sizeof o);
    if (parse_backend(backend, &o.backend) < 0 || parse_debug(debug, &o.debug) < 0) return NULL;
    if (threads < 0) { PyErr_SetString(PyExc_ValueError, "threads: 0 (all cores) or more"); return NULL; }
    o.threads = threads;
    o.unsafe = unsafe;
    o.mem_limit = mem_limit;
    o.cc = opt_str(cc, "cc");
    o.cflags = opt_str(cflags, "cflags");
    o.cache_dir = opt_str(cache_dir, "cache_dir");
    if (PyErr_Occurred()) return NULL;
    o.no_cache = no_cache;
    o.cache_limit = cache_limit;
    o.cc_timeout = cc_timeout;
    o.quiet = quiet;
    o.strict = strict;
    CtxObject *c = (CtxObject *)type->tp_alloc(type, 0);
    if (!c) return NULL;
    c->lock = PyThread_allocate_lock();
    c->borrowed = PyDict_New();
    c->opts = kw ? PyDict_Copy(kw) : PyDict_New();
    if (!c->lock || !c->borrowed || !c->opts) { Py_DECREF(c); return PyErr_NoMemory(); }
    o.log = log_hook;
    o.log_arg = c;
    o.cancel = cancel_hook;
    o.cancel_arg = c;
    c->cx = ax_ctx_new(&o);   /* copies the strings */
    if (!c->cx) { Py_DECREF(c); return PyErr_NoMemory(); }
    return (PyObject *)c;
}

static void Ctx_dealloc(CtxObject *c)
{
    if (c->cx) {
        pending_drain(c);
        ax_ctx_free(c->cx);
    }
    if (c->lock) PyThread_free_lock(c->lock);
    Py_XDECREF(c->borrowed);
    Py_XDECREF(c->opts);
    PyMem_Free(c->pending);
    for (int i = 0; i < c->nnotices; i++) free(c->notices[i]);
    free(c->notices);
    Py_XDECREF(c->exc_type);
    Py_XDECREF(c->exc_value);
    Py_XDECREF(c->exc_tb);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static CtxObject *get_default(void)
{
    if (!default_ctx) {
        PyObject *args = PyTuple_New(0);
        if (!args) return NULL;
        default_ctx = (CtxObject *)Ctx_new(&Ctx_Type, args, NULL);
        Py_DECREF(args);
    }
    return default_ctx;
}

/* The current context of this thread: the innermost `with ctx:`, else the
 * default.  A borrowed reference. */
static CtxObject *current_ctx(void)
{
    PyObject *d = PyThreadState_GetDict();
    if (d) {
        PyObject *stack = PyDict_GetItemString(d, "axle.contexts");
        if (stack && PyList_Check(stack) && PyList_GET_SIZE(stack) > 0)
            return (CtxObject *)PyList_GET_ITEM(stack, PyList_GET_SIZE(stack) - 1);
    }
    return get_default();
}

static PyObject *Ctx_enter_with(CtxObject *c, PyObject *unused)
{
    PyObject *d = PyThreadState_GetDict();
    if (!d) { PyErr_SetString(PyExc_RuntimeError, "no thread state"); return NULL; }
    PyObject *stack = PyDict_GetItemString(d, "axle.contexts");
    if (!stack) {
        stack = PyList_New(0);
        if (!stack || PyDict_SetItemString(d, "axle.contexts", stack) < 0) { Py_XDECREF(stack); return NULL; }
        Py_DECREF(stack);
    }
    if (PyList_Append(stack, (PyObject *)c) < 0) return NULL;
    Py_INCREF(c);
    return (PyObject *)c;
}

static PyObject *Ctx_exit_with(CtxObject *c, PyObject *args)
{
    PyObject *d = PyThreadState_GetDict();
    PyObject *stack = d ? PyDict_GetItemString(d, "axle.contexts") : NULL;
    if (stack && PyList_GET_SIZE(stack) > 0) {
        Py_ssize_t n = PyList_GET_SIZE(stack);
        if (PyList_SetSlice(stack, n - 1, n, NULL) < 0) return NULL;
    }
    Py_RETURN_FALSE;
}

static PyObject *Ctx_get_options(CtxObject *c, void *closure)
{
    const ax_options *o = ax_ctx_options(c->cx);
    static const char *const names[] = {"default", "interp", "cpu", "cuda", "opencl"};
    return Py_BuildValue("{s:s,s:i,s:I,s:O,s:L,s:s,s:s,s:s,s:O,s:L,s:d,s:O,s:O}", "backend",
                         (unsigned)o->backend < 5 ? names[o->backend] : "?", "threads", o->threads, "debug", o->debug,
                         "unsafe", o->unsafe ? Py_True : Py_False, "mem_limit", (long long)o->mem_limit, "cc",
                         o->cc ? o->cc : "cc", "cflags", o->cflags ? o->cflags : "", "cache_dir",
                         o->cache_dir ? o->cache_dir : "", "no_cache", o->no_cache ? Py_True : Py_False,
                         "cache_limit", (long long)o->cache_limit, "cc_timeout", o->cc_timeout, "quiet",
                         o->quiet ? Py_True : Py_False, "strict", o->strict ? Py_True : Py_False);
}

static PyObject *Ctx_get_stats(CtxObject *c, void *closure)
{
    return Py_BuildValue("{s:n,s:L,s:n,s:i}", "live", c->live, "resets", (long long)c->resets, "borrowed",
                         PyDict_Size(c->borrowed), "depth", c->depth);
}

static PyObject *Ctx_repr(CtxObject *c)
{
    return PyUnicode_FromFormat("axle.Context(%R)", c->opts);
}

/* --------------------------------------------------------- element types */

/* The ax_scalar of a NumPy dtype, or -1 (no exception set). */
static int scalar_of_descr(PyArray_Descr *d)
{
    if (!PyArray_ISNBO(d->byteorder)) return -1;
    int sz = (int)PyDataType_ELSIZE(d);
    switch (d->kind) {
    case 'b': return sz == 1 ? AX_BOOL : -1;
    case 'i': return sz == 1 ? AX_I8 : sz == 2 ? AX_I16 : sz == 4 ? AX_I32 : sz == 8 ? AX_I64 : -1;
    case 'u': return sz == 1 ? AX_U8 : sz == 2 ? AX_U16 : sz == 4 ? AX_U32 : sz == 8 ? AX_U64 : -1;
    case 'f': return sz == 4 ? AX_F32 : sz == 8 ? AX_F64 : -1;
    default: return -1;
    }
}

static int npy_of_scalar(ax_scalar s)
{
    switch (s) {
    case AX_BOOL: return NPY_BOOL;
    case AX_I8: return NPY_INT8;
    case AX_I16: return NPY_INT16;
    case AX_I32: return NPY_INT32;
    case AX_I64: return NPY_INT64;
    case AX_U8: return NPY_UINT8;
    case AX_U16: return NPY_UINT16;
    case AX_U32: return NPY_UINT32;
    case AX_U64: return NPY_UINT64;
    case AX_F32: return NPY_FLOAT32;
    case AX_F64: return NPY_FLOAT64;
    default: return -1;
    }
}

/* A dtype-like (np.dtype, np.float32, "f32", "float32", bool, int,
 * float) to an ax_scalar; -1 with an exception. */
static int scalar_of_obj(PyObject *o)
{
    if (PyUnicode_Check(o)) {
        const char *s = PyUnicode_AsUTF8(o);
        static const char *const short_names[] = {"bool", "i8", "i16", "i32", "i64", "u8",
                                                  "u16", "u32", "u64", "f32", "f64"};
        for (int i = 0; i < AX_NSCALAR; i++)
            if (s && !strcmp(s, short_names[i])) return i;
    }
    PyArray_Descr *d = NULL;
    if (!PyArray_DescrConverter2(o, &d) || !d) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "not an element type: %R", o);
        return -1;
    }
    int s = scalar_of_descr(d);
    Py_DECREF(d);
    if (s < 0) PyErr_Format(PyExc_TypeError, "axle has no element type for %R (it has bool, int8..int64, "
                            "uint8..uint64, float32, float64)", o);
    return s;
}

/* A dtype-like or a tuple of them to an element type. */
static const ax_type *type_of_obj(CtxObject *c, PyObject *o)
{
    if (PyTuple_Check(o)) {
        Py_ssize_t n = PyTuple_GET_SIZE(o);
        if (n > 64) { PyErr_SetString(PyExc_ValueError, "a tuple type of more than 64 components"); return NULL; }
        const ax_type *el[64];
        for (Py_ssize_t i = 0; i < n; i++)
            if (!(el[i] = type_of_obj(c, PyTuple_GET_ITEM(o, i)))) return NULL;
        const ax_type *t = ax_type_tuple(c->cx, (int)n, el);
        if (!t) return (const ax_type *)raise_ctx(c, "ax_type_tuple failed");
        return t;
    }
    int s = scalar_of_obj(o);
    return s < 0 ? NULL : ax_type_scalar((ax_scalar)s);
}

/* An element type to Python: a NumPy dtype, a tuple of them, or for an
 * index of rank r a tuple of r int64 dtypes. */
static PyObject *py_of_type(const ax_type *t)
{
    switch (ax_type_kind_of(t)) {
    case AX_KIND_SCALAR: return (PyObject *)PyArray_DescrFromType(npy_of_scalar(ax_type_scalar_of(t)));
    case AX_KIND_TUPLE: {
        int n = ax_type_arity(t);
        PyObject *r = PyTuple_New(n);
        for (int i = 0; r && i < n; i++) {
            PyObject *x = py_of_type(ax_type_elem(t, i));
            if (!x) { Py_DECREF(r); return NULL; }
            PyTuple_SET_ITEM(r, i, x);
        }
        return r;
    }
    case AX_KIND_INDEX: {
        int n = ax_type_arity(t);
        PyObject *r = PyTuple_New(n);
        for (int i = 0; r && i < n; i++) PyTuple_SET_ITEM(r, i, (PyObject *)PyArray_DescrFromType(NPY_INT64));
        return r;
    }
    default: Py_RETURN_NONE;
    }
}

static PyObject *type_str(const ax_type *t)
{
    char buf[512];
    return PyUnicode_FromString(t ? ax_type_str(t, buf, sizeof buf) : "invalid");
}

/* ------------------------------------------------------------ wrappers */

static PyObject *wrap_exp(CtxObject *c, ax_exp e)
{
    ExpObject *x = PyObject_New(ExpObject, &Exp_Type);
    if (!x) return NULL;
    x->e = e;
    x->weak = NULL;
    x->c = NULL;
    if (ax_exp_ctx(e) && c) {
        x->c = c;
        Py_INCREF(c);
        c->live++;
    }
    return (PyObject *)x;
}

static PyObject *wrap_acc(CtxObject *c, ax_acc a)
{
    AccObject *x = PyObject_New(AccObject, &Acc_Type);
    if (!x) return NULL;
    x->a = a;
    x->c = c;
    Py_INCREF(c);
    c->live++;
    return (PyObject *)x;
}

static void Exp_dealloc(ExpObject *x)
{
    if (x->c) {
        x->c->live--;
        Py_DECREF(x->c);
    }
    Py_XDECREF(x->weak);
    PyObject_Free(x);
}

static void Acc_dealloc(AccObject *x)
{
    x->c->live--;
    Py_DECREF(x->c);
    PyObject_Free(x);
}

/* A checked Exp result of a builder. */
static PyObject *done_exp(CtxObject *c, ax_exp r, const char *op)
{
    if (PyErr_Occurred() || !ax_exp_ok(r)) {
        if (!c && !PyErr_Occurred()) {
            /* a context-free constant expression failed: report it through
             * the default context to get axle's message */
            CtxObject *d = get_default();
            if (d) {
                ctx_enter(d, 1);
                (void)ax_const(d->cx, r);
                raise_ctx(d, op);
                ctx_leave(d);
                return NULL;
            }
        }
        return raise_ctx(c, op);
    }
    return wrap_exp(c, r);
}

static PyObject *done_acc(CtxObject *c, ax_acc r, const char *op)
{
    if (PyErr_Occurred() || !r) return raise_ctx(c, op);
    return wrap_acc(c, r);
}

/* --------------------------------------------------- NumPy arrays in */

/* Collects the leaves of obj (an array-like or a tuple of them) as
 * C-contiguous NumPy arrays: appends to `leaves`, builds the element type.
 * The shapes of all leaves must agree. */
static const ax_type *collect_leaves(CtxObject *c, PyObject *obj, PyObject *leaves, int depth)
{
    if (PyTuple_Check(obj)) {
        Py_ssize_t n = PyTuple_GET_SIZE(obj);
        if (n < 2 || n > 64 || depth > 16) {
            PyErr_SetString(PyExc_ValueError, "an array of tuples is given as a tuple of 2 or more arrays of one shape");
            return NULL;
        }
        const ax_type *el[64];
        for (Py_ssize_t i = 0; i < n; i++)
            if (!(el[i] = collect_leaves(c, PyTuple_GET_ITEM(obj, i), leaves, depth + 1))) return NULL;
        const ax_type *t = ax_type_tuple(c->cx, (int)n, el);
        if (!t) return (const ax_type *)raise_ctx(c, "ax_type_tuple failed");
        return t;
    }
    PyArrayObject *a;
    if (PyArray_Check(obj) && PyArray_IS_C_CONTIGUOUS((PyArrayObject *)obj) &&
        PyArray_ISALIGNED((PyArrayObject *)obj) && PyArray_ISNOTSWAPPED((PyArrayObject *)obj)) {
        a = (PyArrayObject *)obj;
        Py_INCREF(a);
    } else {
        if (Exp_Check(obj) || Acc_Check(obj)) {
            PyErr_SetString(PyExc_TypeError, "an axle term where a NumPy array is expected");
            return NULL;
        }
        a = (PyArrayObject *)PyArray_FROM_OF(obj, NPY_ARRAY_IN_ARRAY | NPY_ARRAY_NOTSWAPPED);
        if (!a) return NULL;
        if (!PyArray_ISNOTSWAPPED(a)) {
            PyArrayObject *b = (PyArrayObject *)PyArray_NewCopy(a, NPY_CORDER);
            Py_DECREF(a);
            if (!b) return NULL;
            a = b;
        }
    }
    int s = scalar_of_descr(PyArray_DESCR(a));
    if (s < 0) {
        PyErr_Format(PyExc_TypeError, "axle has no element type for arrays of %R (it has bool, int8..int64, "
                     "uint8..uint64, float32, float64)", (PyObject *)PyArray_DESCR(a));
        Py_DECREF(a);
        return NULL;
    }
    if (PyArray_NDIM(a) > AX_MAX_RANK) {
        PyErr_Format(PyExc_ValueError, "an array of rank %d: axle's highest rank is %d", PyArray_NDIM(a), AX_MAX_RANK);
        Py_DECREF(a);
        return NULL;
    }
    if (PyList_GET_SIZE(leaves) > 0) {
        PyArrayObject *f = (PyArrayObject *)PyList_GET_ITEM(leaves, 0);
        if (!PyArray_SAMESHAPE(a, f)) {
            PyErr_SetString(PyExc_ValueError, "the arrays of a tuple have different shapes");
            Py_DECREF(a);
            return NULL;
        }
    }
    int rc = PyList_Append(leaves, (PyObject *)a);
    Py_DECREF(a);
    return rc < 0 ? NULL : ax_type_scalar((ax_scalar)s);
}

/* Wraps obj (an array-like or a tuple of them) as a borrowed ax_array;
 * *keep receives the object that owns the memory (to keep alive). */
static ax_array *wrap_array(CtxObject *c, PyObject *obj, PyObject **keep)
{
    /* fast path: one C-contiguous native NumPy array */
    if (PyArray_Check(obj)) {
        PyArrayObject *a = (PyArrayObject *)obj;
        int s = scalar_of_descr(PyArray_DESCR(a));
        if (s >= 0 && PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISALIGNED(a) && PyArray_NDIM(a) <= AX_MAX_RANK) {
            int64_t shape[AX_MAX_RANK];
            for (int d = 0; d < PyArray_NDIM(a); d++) shape[d] = PyArray_DIM(a, d);
            ax_array *r = ax_array_wrap(c->cx, (ax_scalar)s, PyArray_NDIM(a), shape, PyArray_DATA(a));
            if (!r) return (ax_array *)raise_ctx(c, "ax_array_wrap failed");
            Py_INCREF(obj);
            *keep = obj;
            return r;
        }
    }
    PyObject *leaves = PyList_New(0);
    if (!leaves) return NULL;
    const ax_type *t = collect_leaves(c, obj, leaves, 0);
    if (!t) { Py_DECREF(leaves); return NULL; }
    Py_ssize_t n = PyList_GET_SIZE(leaves);
    PyArrayObject *f = (PyArrayObject *)PyList_GET_ITEM(leaves, 0);
    int64_t shape[AX_MAX_RANK];
    for (int d = 0; d < PyArray_NDIM(f); d++) shape[d] = PyArray_DIM(f, d);
    void *bufs[64];
    for (Py_ssize_t i = 0; i < n; i++) bufs[i] = PyArray_DATA((PyArrayObject *)PyList_GET_ITEM(leaves, i));
    ax_array *r = n == 1 ? ax_array_wrap(c->cx, ax_type_scalar_of(t), PyArray_NDIM(f), shape, bufs[0])
                         : ax_array_wrap_n(c->cx, t, PyArray_NDIM(f), shape, bufs);
    if (!r) { Py_DECREF(leaves); return (ax_array *)raise_ctx(c, "ax_array_wrap failed"); }
    *keep = leaves;
    return r;
}

/* ax_use of an array-like; the borrowed object is kept until the next
 * reset.  Called inside an operation (ctx entered). */
static ax_acc use_array(CtxObject *c, PyObject *obj)
{
    PyObject *keep = NULL;
    ax_array *a = wrap_array(c, obj, &keep);
    if (!a) return NULL;
    ax_acc u = ax_use(c->cx, a);
    if (u) {
        PyObject *k = PyLong_FromVoidPtr(a);
        if (!k || PyDict_SetItem(c->borrowed, k, keep) < 0) u = NULL;
        Py_XDECREF(k);
    }
    ax_array_release(a);
    Py_DECREF(keep);
    if (!u && !PyErr_Occurred()) raise_ctx(c, "ax_use failed");
    return u;
}

/* -------------------------------------------------- NumPy arrays out */

static PyObject *new_ref(CtxObject *c, ax_array *a)
{
    ArrayRefObject *r = PyObject_New(ArrayRefObject, &ArrayRef_Type);
    if (!r) return NULL;
    r->c = c;
    Py_INCREF(c);
    r->a = a;
    return (PyObject *)r;
}

static void ArrayRef_dealloc(ArrayRefObject *r)
{
    CtxObject *c = r->c;
    if (c->depth == 0) ax_array_release(r->a);
    else pending_push(c, 0, r->a);
    Py_DECREF(c);
    PyObject_Free(r);
}

/* One NumPy array over component k of a; base: a new reference stolen. */
static PyObject *component_array(ax_array *a, int k, PyObject *base, void *data)
{
    npy_intp dims[AX_MAX_RANK];
    int r = ax_array_rank(a);
    const int64_t *sh = ax_array_shape(a);
    for (int d = 0; d < r; d++) dims[d] = (npy_intp)sh[d];
    int tn = npy_of_scalar(ax_array_component_type(a, k));
    static char dummy[16];
    PyObject *arr = PyArray_New(&PyArray_Type, r, dims, tn, NULL, data ? data : dummy, 0, NPY_ARRAY_CARRAY, NULL);
    if (!arr) { Py_DECREF(base); return NULL; }
    if (PyArray_SetBaseObject((PyArrayObject *)arr, base) < 0) { Py_DECREF(arr); return NULL; }
    return arr;
}

/* The components of an array as nested tuples following the element type. */
static PyObject *components_of(ax_array *a, const ax_type *t, int *k, PyObject *base, void **data)
{
    ax_type_kind kind = ax_type_kind_of(t);
    if (kind == AX_KIND_TUPLE || kind == AX_KIND_INDEX) {
        int n = ax_type_arity(t);
        PyObject *r = PyTuple_New(n);
        if (!r) return NULL;
        for (int i = 0; i < n; i++) {
            PyObject *x;
            if (kind == AX_KIND_INDEX) {
                Py_INCREF(base);
                x = component_array(a, *k, base, data[*k]);
                ++*k;
            } else {
                x = components_of(a, ax_type_elem(t, i), k, base, data);
            }
            if (!x) { Py_DECREF(r); return NULL; }
            PyTuple_SET_ITEM(r, i, x);
        }
        return r;
    }
    Py_INCREF(base);
    PyObject *x = component_array(a, *k, base, data[*k]);
    ++*k;
    return x;
}

/* Whether the memory of a borrowed input (an array, or the list of a
 * tuple's arrays) may be written. */
static int alias_writeable(PyObject *o)
{
    if (PyArray_Check(o)) return PyArray_ISWRITEABLE((PyArrayObject *)o);
    if (PyList_Check(o))
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o); i++)
            if (!alias_writeable(PyList_GET_ITEM(o, i))) return 0;
    return 1;
}

/* Marks a result (an array or nested tuples of them) read-only. */
static void readonly(PyObject *r)
{
    if (PyArray_Check(r)) PyArray_CLEARFLAGS((PyArrayObject *)r, NPY_ARRAY_WRITEABLE);
    else if (PyTuple_Check(r))
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(r); i++) readonly(PyTuple_GET_ITEM(r, i));
}

/* A result array (a reference given by axle) to NumPy; the reference is
 * taken over.  `alias`: the object whose memory a is (an input returned
 * as it is), or NULL. */
static PyObject *numpy_of(CtxObject *c, ax_array *a, PyObject *alias)
{
    int nc = ax_array_components(a);
    void *data[64];
    for (int i = 0; i < nc && i < 64; i++) {
        data[i] = ax_array_data(a, i);
        if (!data[i] && ax_array_size(a) > 0) {
            ax_array_release(a);
            return raise_ctx(c, "reading a result failed");
        }
    }
    PyObject *base;
    if (alias) {
        base = alias;
        Py_INCREF(base);
        ax_array_release(a);   /* the memory is alias's */
    } else {
        base = new_ref(c, a);
        if (!base) { ax_array_release(a); return NULL; }
    }
    int k = 0;
    PyObject *r = components_of(a, ax_array_type(a), &k, base, data);
    Py_DECREF(base);
    if (r && alias && !alias_writeable(alias)) readonly(r);
    return r;
}

/* Results out[*pos..] following the type of the computation (an array or
 * a tuple of arrays).  Takes over the references it consumes. */
static PyObject *results_of(CtxObject *c, const ax_type *t, ax_array **out, int n, int *pos, PyObject *(*alias)(void *, ax_array *), void *aenv)
{
    if (ax_type_kind_of(t) == AX_KIND_ARRAYS) {
        int m = ax_type_arity(t);
        PyObject *r = PyTuple_New(m);
        if (!r) return NULL;
        for (int i = 0; i < m; i++) {
            PyObject *x = results_of(c, ax_type_elem(t, i), out, n, pos, alias, aenv);
            if (!x) { Py_DECREF(r); return NULL; }
            PyTuple_SET_ITEM(r, i, x);
        }
        return r;
    }
    if (*pos >= n) return raise_axle(AX_ERR_BACKEND, "fewer results than the type says");
    ax_array *a = out[*pos];
    out[*pos] = NULL;
    ++*pos;
    return numpy_of(c, a, alias ? alias(aenv, a) : NULL);
}

static PyObject *alias_borrowed(void *env, ax_array *a)
{
    CtxObject *c = env;
    PyObject *k = PyLong_FromVoidPtr(a);
    if (!k) return NULL;
    PyObject *v = PyDict_GetItem(c->borrowed, k);
    Py_DECREF(k);
    return v;
}

/* ---------------------------------------------------- scalars to terms */

static PyObject *materialise(ExpObject *w, const ax_type *hint);

/* The scalar hint of a type, or -1. */
static int hint_scalar(const ax_type *t)
{
    return ax_type_kind_of(t) == AX_KIND_SCALAR ? (int)ax_type_scalar_of(t) : -1;
}

static int is_float(int s) { return s == AX_F32 || s == AX_F64; }

static int const_of_int(PyObject *o, int s, ax_exp *out)
{
    if (s < 0) s = AX_I64;
    if (s == AX_BOOL) {
        PyErr_SetString(PyExc_TypeError, "an integer where a bool is expected");
        return -1;
    }
    if (is_float(s)) {
        double v = PyLong_AsDouble(o);
        if (v == -1.0 && PyErr_Occurred()) return -1;
        *out = ax_constf((ax_scalar)s, v);
        return 0;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (s == AX_U64 && overflow > 0) {
        unsigned long long u = PyLong_AsUnsignedLongLong(o);
        if (PyErr_Occurred()) return -1;
        *out = ax_u64(u);
        return 0;
    }
    int bits = (int)ax_scalar_size((ax_scalar)s) * 8;
    int sgn = s <= AX_I64;
    int ok = !overflow;
    if (ok && bits < 64) {
        if (sgn) ok = v >= -(1LL << (bits - 1)) && v < (1LL << (bits - 1));
        else ok = v >= 0 && v < (1LL << bits);
    } else if (ok && !sgn) {
        ok = v >= 0;
    }
    if (!ok) {
        PyErr_Format(PyExc_OverflowError, "%R does not fit %s", o, ax_scalar_name((ax_scalar)s));
        return -1;
    }
    *out = ax_consti((ax_scalar)s, v);
    return 0;
}

static int exp_of(CtxObject *c, PyObject *o, const ax_type *hint, ax_exp *out);

/* A Python tuple to an index (hint an index type) or a tuple. */
static int tuple_exp(CtxObject *c, PyObject *o, const ax_type *hint, ax_exp *out)
{
    Py_ssize_t n = PyTuple_GET_SIZE(o);
    if (n > AX_MAX_PARAMS) { PyErr_SetString(PyExc_ValueError, "a tuple too long"); return -1; }
    int idx = ax_type_kind_of(hint) == AX_KIND_INDEX;
    int tup = ax_type_kind_of(hint) == AX_KIND_TUPLE && ax_type_arity(hint) == n;
    ax_exp comps[AX_MAX_PARAMS];
    for (Py_ssize_t i = 0; i < n; i++) {
        const ax_type *h = idx ? ax_type_scalar(AX_I64) : tup ? ax_type_elem(hint, (int)i) : NULL;
        if (exp_of(c, PyTuple_GET_ITEM(o, i), h, &comps[i]) < 0) return -1;
    }
    *out = idx ? ax_index((int)n, comps) : ax_tuple((int)n, comps);
    if (!ax_exp_ok(*out) && c) {
        /* a constant tuple nested in a constant tuple: make the parts terms */
        for (Py_ssize_t i = 0; i < n; i++) comps[i] = ax_const(c->cx, comps[i]);
        *out = idx ? ax_index((int)n, comps) : ax_tuple((int)n, comps);
    }
    if (!ax_exp_ok(*out)) {
        raise_ctx(c, idx ? "ax_index: invalid components" : "ax_tuple: invalid components");
        return -1;
    }
    return 0;
}

/* Converts a Python value to an expression of context c (may be NULL for
 * constants), typed after hint when it is a bare number. */
static int exp_of(CtxObject *c, PyObject *o, const ax_type *hint, ax_exp *out)
{
    if (Exp_Check(o)) {
        ExpObject *x = (ExpObject *)o;
        if (x->weak) {
            PyObject *m = materialise(x, hint);
            if (!m) return -1;
            int rc = exp_of(c, m, hint, out);
            Py_DECREF(m);
            return rc;
        }
        if (x->c && c && x->c != c) {
            PyErr_SetString(PyExc_ValueError, "expressions of two different axle contexts");
            return -1;
        }
        *out = x->e;
        /* an index expected, an i64 given: a rank-1 index */
        if (ax_type_kind_of(hint) == AX_KIND_INDEX && ax_type_arity(hint) == 1) {
            const ax_type *t = ax_exp_type(x->e);
            if (ax_type_kind_of(t) == AX_KIND_SCALAR) *out = ax_ix1(x->e);
        }
        return 0;
    }
    int hs = hint_scalar(hint);
    if (ax_type_kind_of(hint) == AX_KIND_INDEX && ax_type_arity(hint) == 1 && PyLong_Check(o) && !PyBool_Check(o)) {
        ax_exp i;
        if (const_of_int(o, AX_I64, &i) < 0) return -1;
        *out = ax_ix1(i);
        return 0;
    }
    if (PyBool_Check(o)) {
        if (hs >= 0 && hs != AX_BOOL) {
            *out = ax_consti((ax_scalar)hs, o == Py_True);
            return 0;
        }
        *out = ax_bool(o == Py_True);
        return 0;
    }
    if (PyLong_Check(o)) return const_of_int(o, hs, out);
    if (PyFloat_Check(o)) {
        double v = PyFloat_AS_DOUBLE(o);
        if (hs >= 0 && !is_float(hs)) {
            PyErr_Format(PyExc_TypeError, "the float %R with an expression of %s: axle does not convert "
                         "implicitly (use an integer, or .astype(...) on the expression)", o,
                         ax_scalar_name((ax_scalar)hs));
            return -1;
        }
        *out = ax_constf(hs >= 0 ? (ax_scalar)hs : AX_F64, v);
        return 0;
    }
    if (PyArray_IsScalar(o, Generic) || (PyArray_Check(o) && PyArray_NDIM((PyArrayObject *)o) == 0)) {
        PyArray_Descr *d = PyArray_DescrFromScalar(o);
        int s = d ? scalar_of_descr(d) : -1;
        Py_XDECREF(d);
        if (s < 0) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "axle has no element type for %R", o);
            return -1;
        }
        char buf[16] = {0};
        PyArray_Descr *dd = PyArray_DescrFromType(npy_of_scalar((ax_scalar)s));
        if (PyArray_Check(o)) memcpy(buf, PyArray_DATA((PyArrayObject *)o), ax_scalar_size((ax_scalar)s));
        else PyArray_ScalarAsCtype(o, buf);
        Py_XDECREF(dd);
        switch (s) {
        case AX_BOOL: *out = ax_bool(buf[0] != 0); break;
        case AX_I8: *out = ax_i8(*(int8_t *)buf); break;
        case AX_I16: *out = ax_i16(*(int16_t *)buf); break;
        case AX_I32: *out = ax_i32(*(int32_t *)buf); break;
        case AX_I64: *out = ax_i64(*(int64_t *)buf); break;
        case AX_U8: *out = ax_u8(*(uint8_t *)buf); break;
        case AX_U16: *out = ax_u16(*(uint16_t *)buf); break;
        case AX_U32: *out = ax_u32(*(uint32_t *)buf); break;
        case AX_U64: *out = ax_u64(*(uint64_t *)buf); break;
        case AX_F32: *out = ax_f32(*(float *)buf); break;
        default: *out = ax_f64(*(double *)buf); break;
        }
        return 0;
    }
    if (PyTuple_Check(o)) return tuple_exp(c, o, hint, out);
    if (Acc_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "an array where a scalar expression is expected (read an element "
                        "with a[ix] or axle.at(a, ix))");
        return -1;
    }
    if (PyArray_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "a NumPy array in a scalar expression: embed it with axle.use(x) and "
                        "read it with axle.use(x)[ix]");
        return -1;
    }
    PyErr_Format(PyExc_TypeError, "%.100s is not an axle expression", Py_TYPE(o)->tp_name);
    return -1;
}

/* The context an object belongs to, or NULL. */
static CtxObject *ctx_of_obj(PyObject *o)
{
    if (Exp_Check(o)) {
        ExpObject *x = (ExpObject *)o;
        if (x->c) return x->c;
        return NULL;
    }
    if (Acc_Check(o)) return ((AccObject *)o)->c;
    if (PyTuple_Check(o)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++) {
            CtxObject *c = ctx_of_obj(PyTuple_GET_ITEM(o, i));
            if (c) return c;
        }
    }
    return NULL;
}

/* The context of an operation over these arguments: theirs, else the
 * current one.  A borrowed reference; NULL with an exception on a clash. */
static CtxObject *ctx_of_args(PyObject *const *args, Py_ssize_t n, int need)
{
    CtxObject *c = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!args[i]) continue;
        CtxObject *d = ctx_of_obj(args[i]);
        if (d) {
            if (c && c != d) {
                PyErr_SetString(PyExc_ValueError, "terms of two different axle contexts in one operation");
                return NULL;
            }
            c = d;
        }
    }
    if (!c && need) c = current_ctx();
    return c;
}

static PyObject *tuple_of(PyObject *const *args, Py_ssize_t n)
{
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t && i < n; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(t, i, args[i]);
    }
    return t;
}

/* ------------------------------------------------------------- Exp */

static PyObject *materialise(ExpObject *w, const ax_type *hint)
{
    PyObject *h;
    int s = hint_scalar(hint);
    if (s >= 0) h = PyLong_FromLong(s);
    else { h = Py_None; Py_INCREF(h); }
    if (!h) return NULL;
    PyObject *r = PyObject_CallOneArg(w->weak, h);
    Py_DECREF(h);
    if (r && !Exp_Check(r)) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_TypeError, "a weak parameter did not give an expression");
        return NULL;
    }
    return r;
}

/* The type of an Exp argument, for typing the other operand. */
static const ax_type *hint_of(PyObject *o)
{
    if (Exp_Check(o) && !((ExpObject *)o)->weak) return ax_exp_type(((ExpObject *)o)->e);
    if (PyArray_IsScalar(o, Generic)) {
        PyArray_Descr *d = PyArray_DescrFromScalar(o);
        int s = d ? scalar_of_descr(d) : -1;
        Py_XDECREF(d);
        PyErr_Clear();
        if (s >= 0) return ax_type_scalar((ax_scalar)s);
    }
    return NULL;
}

typedef ax_exp (*Fn1)(ax_exp);
typedef ax_exp (*Fn2)(ax_exp, ax_exp);
typedef ax_exp (*Fn3)(ax_exp, ax_exp, ax_exp);

static int is_exp_operand(PyObject *o)
{
    return Exp_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyArray_IsScalar(o, Generic) || PyTuple_Check(o);
}

/* Applies f to a, b: the typed operand gives the hint to the other. */
static PyObject *apply2(Fn2 f, PyObject *a, PyObject *b, const char *name)
{
    PyObject *args[2] = {a, b};
    CtxObject *c = ctx_of_args(args, 2, 0);
    if (!c && PyErr_Occurred()) return NULL;
    const ax_type *ha = hint_of(a), *hb = hint_of(b);
    if (c && ctx_enter(c, 1) < 0) return NULL;
    ax_exp x, y;
    PyObject *r = NULL;
    /* the typed side first, so that a weak parameter or a number takes its
     * type; between two untyped ones, a weak parameter or a float first */
    int afirst = ha || (!hb && !(PyFloat_Check(b) || (Exp_Check(b) && ((ExpObject *)b)->weak)));
    if (afirst) {
        if (exp_of(c, a, hb, &x) < 0) goto out;
        if (exp_of(c, b, ha ? ha : ax_exp_type(x), &y) < 0) goto out;
    } else {
        if (exp_of(c, b, ha, &y) < 0) goto out;
        if (exp_of(c, a, hb, &x) < 0) goto out;
    }
    r = done_exp(c, f(x, y), name);
out:
    if (c) ctx_leave(c);
    return r;
}

static PyObject *apply1(Fn1 f, PyObject *a, const char *name)
{
    CtxObject *c = ctx_of_args(&a, 1, 0);
    if (!c && PyErr_Occurred()) return NULL;
    if (c && ctx_enter(c, 1) < 0) return NULL;
    ax_exp x;
    PyObject *r = NULL;
    if (exp_of(c, a, NULL, &x) == 0) r = done_exp(c, f(x), name);
    if (c) ctx_leave(c);
    return r;
}

static PyObject *not_operand(PyObject *a, PyObject *b)
{
    if (PyArray_Check(a) || PyArray_Check(b) || Acc_Check(a) || Acc_Check(b)) {
        ax_exp e;
        (void)exp_of(NULL, PyArray_Check(a) || Acc_Check(a) ? a : b, NULL, &e);
        return NULL;
    }
    Py_RETURN_NOTIMPLEMENTED;
}

#define BINOP(pyname, cfn, boolfn)                                                       \
    static PyObject *Exp_##pyname(PyObject *a, PyObject *b)                               \
    {                                                                                     \
        if (!is_exp_operand(a) || !is_exp_operand(b)) return not_operand(a, b);            \
        Fn2 bf = boolfn;                                                                  \
        if (bf) {                                                                         \
            const ax_type *t = hint_of(a);                                                \
            if (!t) t = hint_of(b);                                                       \
            if (hint_scalar(t) == AX_BOOL) return apply2(bf, a, b, #pyname);               \
        }                                                                                 \
        return apply2(cfn, a, b, #pyname);                                                \
    }

static ax_exp bool_xor(ax_exp a, ax_exp b) { return ax_ne(a, b); }
BINOP(add, ax_add, NULL)
BINOP(sub, ax_sub, NULL)
BINOP(mul, ax_mul, NULL)
BINOP(truediv, ax_div, NULL)
/* // and % as in Python: integers round towards negative infinity (ax_idiv,
 * ax_mod); floats floor the quotient, and a % b = a - b * (a // b). */
static ax_exp float_floordiv(ax_exp a, ax_exp b)
{
    ax_exp q = ax_div(a, b);
    const ax_type *t = ax_exp_type(q);
    return ax_type_kind_of(t) == AX_KIND_SCALAR ? ax_floor(q, ax_type_scalar_of(t)) : q;
}
static ax_exp float_mod(ax_exp a, ax_exp b) { return ax_sub(a, ax_mul(b, float_floordiv(a, b))); }
static ax_exp py_floordiv(ax_exp a, ax_exp b)
{
    return is_float(hint_scalar(ax_exp_type(a))) ? float_floordiv(a, b) : ax_idiv(a, b);
}
static ax_exp py_mod(ax_exp a, ax_exp b) { return is_float(hint_scalar(ax_exp_type(a))) ? float_mod(a, b) : ax_mod(a, b); }
BINOP(floordiv, py_floordiv, NULL)
BINOP(mod, py_mod, NULL)
BINOP(and, ax_band, ax_and)
BINOP(or, ax_bor, ax_or)
BINOP(xor, ax_bxor, bool_xor)
BINOP(lshift, ax_shl, NULL)
BINOP(rshift, ax_shr, NULL)

static PyObject *Exp_pow(PyObject *a, PyObject *b, PyObject *m)
{
    if (m != Py_None) Py_RETURN_NOTIMPLEMENTED;
    if (!is_exp_operand(a) || !is_exp_operand(b)) Py_RETURN_NOTIMPLEMENTED;
    return apply2(ax_pow, a, b, "pow");
}

static PyObject *Exp_neg(PyObject *a) { return apply1(ax_neg, a, "neg"); }
static PyObject *Exp_pos(PyObject *a) { Py_INCREF(a); return a; }
static PyObject *Exp_abs(PyObject *a) { return apply1(ax_abs, a, "abs"); }
static PyObject *Exp_invert(PyObject *a)
{
    const ax_type *t = hint_of(a);
    return apply1(hint_scalar(t) == AX_BOOL ? ax_not : ax_bnot, a, "invert");
}

static int Exp_bool(PyObject *a)
{
    PyErr_SetString(PyExc_TypeError, "an axle expression has no truth value when the function is traced: "
                    "use axle.where(c, t, e) (or axle.cond) instead of if, and & | ~ instead of and, or, not");
    return -1;
}

static PyObject *Exp_richcompare(PyObject *a, PyObject *b, int op)
{
    if (!is_exp_operand(a) || !is_exp_operand(b)) Py_RETURN_NOTIMPLEMENTED;
    static const Fn2 fns[] = {ax_lt, ax_le, ax_eq, ax_ne, ax_gt, ax_ge};
    static const char *const names[] = {"lt", "le", "eq", "ne", "gt", "ge"};
    return apply2(fns[op], a, b, names[op]);
}

static PyObject *Exp_get_type(ExpObject *x, void *closure)
{
    if (x->weak) return PyUnicode_FromString("weak");
    return type_str(ax_exp_type(x->e));
}

static PyObject *Exp_get_dtype(ExpObject *x, void *closure)
{
    if (x->weak) Py_RETURN_NONE;
    return py_of_type(ax_exp_type(x->e));
}

static PyObject *Exp_repr(ExpObject *x)
{
    if (x->weak) return PyUnicode_FromString("axle.Exp(<a number argument>)");
    char buf[256];
    const ax_type *t = ax_exp_type(x->e);
    return PyUnicode_FromFormat("axle.Exp(%s%s)", t ? ax_type_str(t, buf, sizeof buf) : "tuple",
                                x->c ? "" : ", constant");
}

static PyObject *Exp_astype(ExpObject *x, PyObject *dt)
{
    int s = scalar_of_obj(dt);
    if (s < 0) return NULL;
    PyObject *a = (PyObject *)x;
    CtxObject *c = ctx_of_args(&a, 1, 0);
    if (c) ctx_enter(c, 1);
    ax_exp e;
    PyObject *r = NULL;
    if (exp_of(c, a, NULL, &e) == 0) r = done_exp(c, ax_cvt(e, (ax_scalar)s), "astype");
    if (c) ctx_leave(c);
    return r;
}

static Py_ssize_t Exp_len(ExpObject *x)
{
    const ax_type *t = x->weak ? NULL : ax_exp_type(x->e);
    ax_type_kind k = ax_type_kind_of(t);
    if (k == AX_KIND_TUPLE || k == AX_KIND_INDEX) return ax_type_arity(t);
    if (!t && !x->weak && ax_exp_ok(x->e)) {
        /* a constant tuple: count by projecting */
        Py_ssize_t n = 0;
        while (n < 64 && ax_exp_ok(ax_get(x->e, (int)n))) n++;
        return n;
    }
    PyErr_SetString(PyExc_TypeError, "only tuple and index expressions have components");
    return -1;
}

static PyObject *Exp_item(ExpObject *x, Py_ssize_t i)
{
    Py_ssize_t n = Exp_len(x);
    if (n < 0) return NULL;
    if (i < 0 || i >= n) { PyErr_SetString(PyExc_IndexError, "component out of range"); return NULL; }
    CtxObject *c = x->c;
    if (c) ctx_enter(c, 1);
    PyObject *r = done_exp(c, ax_get(x->e, (int)i), "ax_get");
    if (c) ctx_leave(c);
    return r;
}

static PyObject *Exp_array_ufunc_none(PyObject *self, void *closure) { Py_RETURN_NONE; }

static PyNumberMethods Exp_as_number = {
    .nb_add = Exp_add, .nb_subtract = Exp_sub, .nb_multiply = Exp_mul, .nb_true_divide = Exp_truediv,
    .nb_floor_divide = Exp_floordiv, .nb_remainder = Exp_mod, .nb_power = Exp_pow, .nb_negative = Exp_neg,
    .nb_positive = Exp_pos, .nb_absolute = Exp_abs, .nb_invert = Exp_invert, .nb_and = Exp_and,
    .nb_or = Exp_or, .nb_xor = Exp_xor, .nb_lshift = Exp_lshift, .nb_rshift = Exp_rshift, .nb_bool = Exp_bool,
};

static PySequenceMethods Exp_as_sequence = {
    .sq_length = (lenfunc)Exp_len, .sq_item = (ssizeargfunc)Exp_item,
};

static PyMethodDef Exp_methods[] = {
    {"astype", (PyCFunction)Exp_astype, METH_O, "The expression converted to another scalar type (ax_cvt)."},
    {NULL}
};

static PyGetSetDef Exp_getset[] = {
    {"type", (getter)Exp_get_type, NULL, "axle's name of the type", NULL},
    {"dtype", (getter)Exp_get_dtype, NULL, "the NumPy dtype (a tuple of them for a tuple)", NULL},
    {"__array_ufunc__", Exp_array_ufunc_none, NULL, NULL, NULL},
    {NULL}
};

/* ------------------------------------------------------ callbacks */

typedef struct {
    CtxObject *c;
    PyObject *fn;
    const ax_type *hint;     /* for a bare number returned */
    int nsize;               /* stencils: rank and sizes of the neighbourhoods */
    int size_a[AX_MAX_RANK], size_b[AX_MAX_RANK];
    int two;                 /* stencil2 */
    PyObject *cond;          /* while loops: the condition (fn is the body) */
} Cb;

static ax_exp invalid_exp(void)
{
    ax_exp e;
    memset(&e, 0, sizeof e);
    return e;
}

static ax_exp cb_result(Cb *b, PyObject *r, const ax_type *hint)
{
    ax_exp e;
    if (!r) return invalid_exp();
    int rc = exp_of(b->c, r, hint, &e);
    Py_DECREF(r);
    return rc < 0 ? invalid_exp() : e;
}

static ax_exp tramp1(ax_exp x, void *env)
{
    Cb *b = env;
    if (PyErr_Occurred()) return invalid_exp();
    PyObject *a = wrap_exp(b->c, x);
    if (!a) return invalid_exp();
    PyObject *r = PyObject_CallOneArg(b->fn, a);
    Py_DECREF(a);
    return cb_result(b, r, b->hint);
}

static ax_exp tramp2(ax_exp x, ax_exp y, void *env)
{
    Cb *b = env;
    if (PyErr_Occurred()) return invalid_exp();
    PyObject *args[2] = {wrap_exp(b->c, x), wrap_exp(b->c, y)};
    PyObject *r = NULL;
    if (args[0] && args[1]) r = PyObject_Vectorcall(b->fn, args, 2, NULL);
    Py_XDECREF(args[0]);
    Py_XDECREF(args[1]);
    return cb_result(b, r, b->hint);
}

static ax_exp tramp3(ax_exp x, ax_exp y, ax_exp z, void *env)
{
    Cb *b = env;
    if (PyErr_Occurred()) return invalid_exp();
    PyObject *args[3] = {wrap_exp(b->c, x), wrap_exp(b->c, y), wrap_exp(b->c, z)};
    PyObject *r = NULL;
    if (args[0] && args[1] && args[2]) r = PyObject_Vectorcall(b->fn, args, 3, NULL);
    for (int i = 0; i < 3; i++) Py_XDECREF(args[i]);
    return cb_result(b, r, b->hint);
}

/* while: cond and body share the env */
static ax_exp tramp_cond(ax_exp x, void *env)
{
    Cb *b = env;
    if (PyErr_Occurred()) return invalid_exp();
    PyObject *a = wrap_exp(b->c, x);
    if (!a) return invalid_exp();
    PyObject *r = PyObject_CallOneArg(b->cond, a);
    Py_DECREF(a);
    return cb_result(b, r, ax_type_scalar(AX_BOOL));
}

/* A nested tuple of the neighbourhood's elements, row-major. */
static PyObject *neighbourhood(CtxObject *c, const ax_exp *xs, const int *size, int rank, int *pos)
{
    PyObject *t = PyTuple_New(size[0]);
    if (!t) return NULL;
    for (int i = 0; i < size[0]; i++) {
        PyObject *x = rank == 1 ? wrap_exp(c, xs[(*pos)++]) : neighbourhood(c, xs, size + 1, rank - 1, pos);
        if (!x) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

static ax_exp tramp_stencil(const ax_exp *xs, void *env)
{
    Cb *b = env;
    if (PyErr_Occurred()) return invalid_exp();
    int pos = 0;
    PyObject *na = neighbourhood(b->c, xs, b->size_a, b->nsize, &pos);
    if (!na) return invalid_exp();
    PyObject *r;
    if (b->two) {
        PyObject *nb = neighbourhood(b->c, xs, b->size_b, b->nsize, &pos);
        if (!nb) { Py_DECREF(na); return invalid_exp(); }
        PyObject *args[2] = {na, nb};
        r = PyObject_Vectorcall(b->fn, args, 2, NULL);
        Py_DECREF(nb);
    } else {
        r = PyObject_CallOneArg(b->fn, na);
    }
    Py_DECREF(na);
    return cb_result(b, r, b->hint);
}

static ax_acc acc_of(CtxObject *c, PyObject *o);

static ax_acc tramp_afn(ax_acc x, void *env, PyObject *fn)
{
    Cb *b = env;
    if (PyErr_Occurred()) return NULL;
    PyObject *a = wrap_acc(b->c, x);
    if (!a) return NULL;
    PyObject *r = PyObject_CallOneArg(fn, a);
    Py_DECREF(a);
    if (!r) return NULL;
    ax_acc res = acc_of(b->c, r);
    Py_DECREF(r);
    return res;
}
static ax_acc tramp_acond_(ax_acc x, void *env) { return tramp_afn(x, env, ((Cb *)env)->cond); }
static ax_acc tramp_abody(ax_acc x, void *env) { return tramp_afn(x, env, ((Cb *)env)->fn); }

static int check_callable(PyObject *f, const char *op)
{
    if (!PyCallable_Check(f)) {
        PyErr_Format(PyExc_TypeError, "%s: the function is not callable (%.80s)", op, Py_TYPE(f)->tp_name);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------- Acc */

/* An array computation from a Python value: an Acc, a NumPy array (or
 * array-like: ax_use, borrowed), a tuple (an array tuple of its parts),
 * an expression or number (a unit). */
static ax_acc acc_of(CtxObject *c, PyObject *o)
{
    if (Acc_Check(o)) {
        AccObject *a = (AccObject *)o;
        if (a->c != c) {
            PyErr_SetString(PyExc_ValueError, "an array computation of another axle context");
            return NULL;
        }
        return a->a;
    }
    if (PyTuple_Check(o)) {
        Py_ssize_t n = PyTuple_GET_SIZE(o);
        if (n > 64) { PyErr_SetString(PyExc_ValueError, "an array tuple of more than 64 arrays"); return NULL; }
        ax_acc parts[64];
        for (Py_ssize_t i = 0; i < n; i++)
            if (!(parts[i] = acc_of(c, PyTuple_GET_ITEM(o, i)))) return NULL;
        ax_acc r = ax_atuple((int)n, parts);
        if (!r) raise_ctx(c, "ax_atuple failed");
        return r;
    }
    if (Exp_Check(o) || PyFloat_Check(o) || PyLong_Check(o) || PyArray_IsScalar(o, Generic)) {
        ax_exp e;
        if (exp_of(c, o, NULL, &e) < 0) return NULL;
        ax_acc r = ax_unit(c->cx, e);
        if (!r) raise_ctx(c, "ax_unit failed");
        return r;
    }
    return use_array(c, o);
}

static PyObject *Acc_get_type(AccObject *a, void *closure) { return type_str(ax_acc_type(a->a)); }

static PyObject *Acc_get_dtype(AccObject *a, void *closure)
{
    const ax_type *t = ax_acc_elem(a->a);
    if (!t) Py_RETURN_NONE;
    return py_of_type(t);
}

static PyObject *Acc_get_ndim(AccObject *a, void *closure)
{
    int r = ax_acc_rank(a->a);
    if (r < 0) Py_RETURN_NONE;
    return PyLong_FromLong(r);
}

static PyObject *Acc_repr(AccObject *a)
{
    char buf[512];
    return PyUnicode_FromFormat("axle.Acc(%s)", ax_type_str(ax_acc_type(a->a), buf, sizeof buf));
}

/* Runs n computations of context c in one program; a tuple of results
 * (or one result when single). */
static PyObject *run_accs(CtxObject *c, PyObject *const *objs, Py_ssize_t n, int single)
{
    if (ctx_enter(c, 1) < 0) return NULL;
    PyObject *res = NULL;
    ax_array **out = NULL;
    ax_acc parts[64], a;
    if (n < 1 || n > 64) { PyErr_SetString(PyExc_ValueError, "run: 1 to 64 computations"); goto done; }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!(parts[i] = acc_of(c, objs[i]))) goto done;
    a = n == 1 ? parts[0] : ax_atuple((int)n, parts);
    if (!a) { raise_ctx(c, "ax_atuple failed"); goto done; }
    const ax_type *t = ax_acc_type(a);
    int nout = 0;
    {
        /* the number of flattened results */
        const ax_type *st[128];
        int sp = 0;
        st[sp++] = t;
        while (sp > 0) {
            const ax_type *u = st[--sp];
            if (ax_type_kind_of(u) == AX_KIND_ARRAYS) {
                for (int i = 0; i < ax_type_arity(u) && sp < 128; i++) st[sp++] = ax_type_elem(u, i);
            } else nout++;
        }
    }
    out = PyMem_Calloc((size_t)(nout ? nout : 1), sizeof *out);
    if (!out) { PyErr_NoMemory(); goto done; }
    int got;
    run_begin(c);
    Py_BEGIN_ALLOW_THREADS
    got = ax_run_n(c->cx, a, out, nout);
    Py_END_ALLOW_THREADS
    if (run_end(c) < 0) { if (got > 0) for (int i = 0; i < got; i++) ax_array_release(out[i]); goto done; }
    if (got < 0) { raise_ctx(c, "ax_run failed"); goto done; }
    int pos = 0;
    res = results_of(c, t, out, got, &pos, alias_borrowed, c);
    for (int i = pos; i < got; i++) if (out[i]) ax_array_release(out[i]);
    if (res && !single && n == 1) {
        PyObject *tup = PyTuple_Pack(1, res);
        Py_DECREF(res);
        res = tup;
    }
done:
    PyMem_Free(out);
    ctx_leave(c);
    return res;
}

static PyObject *Acc_numpy(AccObject *a, PyObject *unused)
{
    PyObject *o = (PyObject *)a;
    return run_accs(a->c, &o, 1, 1);
}

static PyObject *Acc_array(AccObject *a, PyObject *args, PyObject *kw)
{
    PyObject *dtype = NULL, *copy = NULL;
    static char *kwlist[] = {"dtype", "copy", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO", kwlist, &dtype, &copy)) return NULL;
    PyObject *r = Acc_numpy(a, NULL);
    if (!r) return NULL;
    if (!PyArray_Check(r)) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_TypeError, "a computation of tuples gives a tuple of arrays: use .numpy()");
        return NULL;
    }
    if (dtype && dtype != Py_None) {
        PyArray_Descr *d = NULL;
        if (!PyArray_DescrConverter(dtype, &d)) { Py_DECREF(r); return NULL; }
        PyObject *c = PyArray_CastToType((PyArrayObject *)r, d, 0);
        Py_DECREF(r);
        return c;
    }
    return r;
}

static PyObject *Acc_str(AccObject *a)
{
    PyObject *r = Acc_numpy(a, NULL);
    if (!r) return NULL;
    PyObject *s = PyObject_Str(r);
    Py_DECREF(r);
    return s;
}

static PyObject *Acc_float(PyObject *a)
{
    PyObject *r = Acc_numpy((AccObject *)a, NULL);
    if (!r) return NULL;
    PyObject *f = PyNumber_Float(r);
    Py_DECREF(r);
    return f;
}

static PyObject *Acc_int(PyObject *a)
{
    PyObject *r = Acc_numpy((AccObject *)a, NULL);
    if (!r) return NULL;
    PyObject *f = PyNumber_Long(r);
    Py_DECREF(r);
    return f;
}

static int Acc_bool(PyObject *a)
{
    PyErr_SetString(PyExc_TypeError, "an axle array has no truth value: for a rank-0 bool result use "
                    "bool(a.numpy()), inside a program axle.acond or axle.awhile");
    return -1;
}

static ax_slice slice_all(void) { return ax_all(); }

/* a[...]: an array tuple's component; an element (as many indices as the
 * rank, or an index expression); otherwise a slice (':' or axle.ALL keeps a
 * dimension, a number or expression fixes it). */
static PyObject *Acc_subscript(AccObject *a, PyObject *key)
{
    CtxObject *c = a->c;
    const ax_type *t = ax_acc_type(a->a);
    PyObject *r = NULL;
    ctx_enter(c, 1);
    if (ax_type_kind_of(t) == AX_KIND_ARRAYS) {
        Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
        if (i == -1 && PyErr_Occurred()) goto out;
        if (i < 0) i += ax_type_arity(t);
        if (i < 0 || i >= ax_type_arity(t)) { PyErr_SetString(PyExc_IndexError, "array tuple index out of range"); goto out; }
        r = done_acc(c, ax_aget(a->a, (int)i), "ax_aget");
        goto out;
    }
    int rank = ax_acc_rank(a->a);
    if (Exp_Check(key) && ax_type_kind_of(ax_exp_type(((ExpObject *)key)->e)) == AX_KIND_INDEX) {
        ax_exp ix;
        if (exp_of(c, key, NULL, &ix) == 0) r = done_exp(c, ax_at(a->a, ix), "ax_at");
        goto out;
    }
    PyObject *k = PyTuple_Check(key) ? key : NULL;
    Py_ssize_t n = k ? PyTuple_GET_SIZE(k) : 1;
    if (n > rank) { PyErr_Format(PyExc_IndexError, "%zd indices for an array of rank %d", n, rank); goto out; }
    int anyall = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = k ? PyTuple_GET_ITEM(k, i) : key;
        if (PySlice_Check(x) || x == Py_None || x == Py_Ellipsis) anyall = 1;
    }
    if (!anyall && n == rank) {
        ax_exp ix;
        if (exp_of(c, k ? k : key, ax_type_index(c->cx, rank), &ix) == 0) {
            if (rank == 0) ix = ax_index(0, NULL);
            r = done_exp(c, ax_at(a->a, ix), "ax_at");
        }
        goto out;
    }
    ax_slice spec[AX_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        PyObject *x = i < n ? (k ? PyTuple_GET_ITEM(k, i) : key) : NULL;
        if (!x || x == Py_None || x == Py_Ellipsis) { spec[i] = slice_all(); continue; }
        if (PySlice_Check(x)) {
            PySliceObject *s = (PySliceObject *)x;
            if (s->start != Py_None || s->stop != Py_None || s->step != Py_None) {
                PyErr_SetString(PyExc_IndexError, "only ':' (all of a dimension) is a slice axle takes; "
                                "ranges are a backpermute");
                goto out;
            }
            spec[i] = slice_all();
            continue;
        }
        ax_exp e;
        if (exp_of(c, x, ax_type_scalar(AX_I64), &e) < 0) goto out;
        spec[i] = ax_fixed(e);
    }
    r = done_acc(c, ax_slice_(rank, spec, a->a), "ax_slice");
out:
    ctx_leave(c);
    return r;
}

static Py_ssize_t Acc_len(AccObject *a)
{
    const ax_type *t = ax_acc_type(a->a);
    if (ax_type_kind_of(t) == AX_KIND_ARRAYS) return ax_type_arity(t);
    PyErr_SetString(PyExc_TypeError, "an axle array has no length before it runs (axle.size(a) is its size "
                    "as an expression)");
    return -1;
}

static PyObject *Acc_item(AccObject *a, Py_ssize_t i)
{
    const ax_type *t = ax_acc_type(a->a);
    if (ax_type_kind_of(t) != AX_KIND_ARRAYS) {
        PyErr_SetString(PyExc_TypeError, "only an array tuple can be unpacked");
        return NULL;
    }
    if (i < 0 || i >= ax_type_arity(t)) { PyErr_SetString(PyExc_IndexError, "array tuple index out of range"); return NULL; }
    ctx_enter(a->c, 1);
    PyObject *r = done_acc(a->c, ax_aget(a->a, (int)i), "ax_aget");
    ctx_leave(a->c);
    return r;
}

static PyNumberMethods Acc_as_number = {
    .nb_float = Acc_float, .nb_int = Acc_int, .nb_bool = Acc_bool,
};
static PyMappingMethods Acc_as_mapping = {
    .mp_subscript = (binaryfunc)Acc_subscript,
};
static PySequenceMethods Acc_as_sequence = {
    .sq_length = (lenfunc)Acc_len, .sq_item = (ssizeargfunc)Acc_item,
};

static PyMethodDef Acc_methods[] = {
    {"numpy", (PyCFunction)Acc_numpy, METH_NOARGS, "Runs the computation: a NumPy array (tuples of them for tuples)."},
    {"__array__", (PyCFunction)(void (*)(void))Acc_array, METH_VARARGS | METH_KEYWORDS, NULL},
    {NULL}
};

static PyObject *Acc_get_context(AccObject *a, void *closure)
{
    Py_INCREF(a->c);
    return (PyObject *)a->c;
}

static PyGetSetDef Acc_getset[] = {
    {"type", (getter)Acc_get_type, NULL, "axle's name of the type", NULL},
    {"dtype", (getter)Acc_get_dtype, NULL, "the element type as a NumPy dtype (a tuple of them for tuples)", NULL},
    {"ndim", (getter)Acc_get_ndim, NULL, "the rank (None for an array tuple)", NULL},
    {"context", (getter)Acc_get_context, NULL, "the Context the computation belongs to", NULL},
    {"__array_ufunc__", Exp_array_ufunc_none, NULL, NULL, NULL},
    {NULL}
};

/* ------------------------------------------------------ builders */

/* Common frame of a builder: the context of the arguments, entered. */
#define BEGIN(args, n)                                              \
    CtxObject *c = ctx_of_args(args, n, 1);                         \
    if (!c) return NULL;                                            \
    Py_INCREF(c);                                                   \
    ctx_enter(c, 1);                                                \
    PyObject *res = NULL;
#define END                                                         \
    goto out;                                                       \
    out:                                                            \
    ctx_leave(c);                                                   \
    Py_DECREF(c);                                                   \
    return res;

static int nargs_check(Py_ssize_t n, Py_ssize_t lo, Py_ssize_t hi, const char *name)
{
    if (n < lo || n > hi) {
        if (lo == hi) PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", name, lo, n);
        else PyErr_Format(PyExc_TypeError, "%s() takes %zd to %zd arguments (%zd given)", name, lo, hi, n);
        return -1;
    }
    return 0;
}

/* The element type of a computation, for typing a bare number. */
static const ax_type *elem_hint(ax_acc a) { return ax_acc_elem(a); }

static PyObject *f_use(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 1, 1, "use") < 0) return NULL;
    if (Acc_Check(args[0])) { Py_INCREF(args[0]); return args[0]; }
    BEGIN(args, 1)
    ax_acc a = use_array(c, args[0]);
    if (a) res = wrap_acc(c, a);
    END
}

static PyObject *f_unit(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 1, 1, "unit") < 0) return NULL;
    BEGIN(args, 1)
    ax_exp e;
    if (exp_of(c, args[0], NULL, &e) < 0) goto out;
    res = done_acc(c, ax_unit(c->cx, e), "ax_unit");
    END
}

/* A shape: an int, a tuple of ints/expressions, or an index expression. */
static int shape_of(CtxObject *c, PyObject *o, ax_exp *out)
{
    if (PyLong_Check(o) || (Exp_Check(o) && ax_type_kind_of(ax_exp_type(((ExpObject *)o)->e)) == AX_KIND_SCALAR) ||
        (Exp_Check(o) && ((ExpObject *)o)->weak)) {
        ax_exp i;
        if (exp_of(c, o, ax_type_scalar(AX_I64), &i) < 0) return -1;
        *out = ax_ix1(i);
        return 0;
    }
    if (PyTuple_Check(o)) return exp_of(c, o, ax_type_index(c->cx, (int)PyTuple_GET_SIZE(o)), out);
    if (PyList_Check(o)) {
        PyObject *t = PyList_AsTuple(o);
        if (!t) return -1;
        int rc = exp_of(c, t, ax_type_index(c->cx, (int)PyTuple_GET_SIZE(t)), out);
        Py_DECREF(t);
        return rc;
    }
    return exp_of(c, o, NULL, out);
}

static PyObject *f_generate(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 2, 2, "generate") < 0 || check_callable(args[1], "generate") < 0) return NULL;
    BEGIN(args, 1)
    ax_exp sh;
    if (shape_of(c, args[0], &sh) < 0) goto out;
    Cb b = {.c = c, .fn = args[1]};
    res = done_acc(c, ax_generate(c->cx, sh, tramp1, &b), "ax_generate");
    END
}

static PyObject *f_map(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 2, 2, "map") < 0 || check_callable(args[0], "map") < 0) return NULL;
    BEGIN(args + 1, 1)
    ax_acc a = acc_of(c, args[1]);
    if (!a) goto out;
    Cb b = {.c = c, .fn = args[0]};
    res = done_acc(c, ax_map(tramp1, &b, a), "ax_map");
    END
}

static PyObject *f_zip_with(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 3, 4, "zip_with") < 0 || check_callable(args[0], "zip_with") < 0) return NULL;
    BEGIN(args + 1, n - 1)
    ax_acc a = acc_of(c, args[1]), b2 = a ? acc_of(c, args[2]) : NULL, c3 = NULL;
    if (!b2) goto out;
    if (n == 4 && !(c3 = acc_of(c, args[3]))) goto out;
    Cb b = {.c = c, .fn = args[0]};
    res = done_acc(c, n == 4 ? ax_zip_with3(tramp3, &b, a, b2, c3) : ax_zip_with(tramp2, &b, a, b2), "ax_zip_with");
    END
}

typedef ax_acc (*FoldZ)(ax_fn2, void *, ax_exp, ax_acc);
typedef ax_acc (*Fold1)(ax_fn2, void *, ax_acc);

static PyObject *foldz(PyObject *const *args, Py_ssize_t n, FoldZ f, const char *name)
{
    if (nargs_check(n, 3, 3, name) < 0 || check_callable(args[0], name) < 0) return NULL;
    BEGIN(args + 1, 2)
    ax_acc a = acc_of(c, args[2]);
    if (!a) goto out;
    const ax_type *h = elem_hint(a);
    ax_exp z;
    if (exp_of(c, args[1], h, &z) < 0) goto out;
    Cb b = {.c = c, .fn = args[0], .hint = h};
    res = done_acc(c, f(tramp2, &b, z, a), name);
    END
}

static PyObject *fold1(PyObject *const *args, Py_ssize_t n, Fold1 f, const char *name)
{
    if (nargs_check(n, 2, 2, name) < 0 || check_callable(args[0], name) < 0) return NULL;
    BEGIN(args + 1, 1)
    ax_acc a = acc_of(c, args[1]);
    if (!a) goto out;
    Cb b = {.c = c, .fn = args[0], .hint = elem_hint(a)};
    res = done_acc(c, f(tramp2, &b, a), name);
    END
}

#define FOLDZ(py, cf) static PyObject *f_##py(PyObject *m, PyObject *const *a, Py_ssize_t n) { return foldz(a, n, cf, #py); }
#define FOLD1(py, cf) static PyObject *f_##py(PyObject *m, PyObject *const *a, Py_ssize_t n) { return fold1(a, n, cf, #py); }
FOLDZ(fold, ax_fold)
FOLDZ(fold_all, ax_fold_all)
FOLDZ(scanl, ax_scanl)
FOLDZ(scanr, ax_scanr)
FOLD1(fold1, ax_fold1)
FOLD1(scanl1, ax_scanl1)
FOLD1(scanr1, ax_scanr1)

static PyObject *scan_ex(PyObject *const *args, Py_ssize_t n, FoldZ f, const char *name)
{
    PyObject *t = foldz(args, n, f, name);
    if (!t) return NULL;
    /* an exclusive scan and the totals: a Python pair */
    PyObject *a = PySequence_GetItem(t, 0), *b = a ? PySequence_GetItem(t, 1) : NULL;
    Py_DECREF(t);
    if (!b) { Py_XDECREF(a); return NULL; }
    PyObject *r = PyTuple_Pack(2, a, b);
    Py_DECREF(a);
    Py_DECREF(b);
    return r;
}
static PyObject *f_scanl_ex(PyObject *m, PyObject *const *a, Py_ssize_t n) { return scan_ex(a, n, ax_scanl_ex, "scanl_ex"); }
static PyObject *f_scanr_ex(PyObject *m, PyObject *const *a, Py_ssize_t n) { return scan_ex(a, n, ax_scanr_ex, "scanr_ex"); }

static PyObject *f_fold_seg(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 4, 4, "fold_seg") < 0 || check_callable(args[0], "fold_seg") < 0) return NULL;
    BEGIN(args + 1, 3)
    ax_acc a = acc_of(c, args[2]), s = a ? acc_of(c, args[3]) : NULL;
    if (!s) goto out;
    const ax_type *h = elem_hint(a);
    ax_exp z;
    if (exp_of(c, args[1], h, &z) < 0) goto out;
    Cb b = {.c = c, .fn = args[0], .hint = h};
    res = done_acc(c, ax_fold_seg(tramp2, &b, z, a, s), "fold_seg");
    END
}

static PyObject *f_fold1_seg(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 3, 3, "fold1_seg") < 0 || check_callable(args[0], "fold1_seg") < 0) return NULL;
    BEGIN(args + 1, 2)
    ax_acc a = acc_of(c, args[1]), s = a ? acc_of(c, args[2]) : NULL;
    if (!s) goto out;
    Cb b = {.c = c, .fn = args[0], .hint = elem_hint(a)};
    res = done_acc(c, ax_fold1_seg(tramp2, &b, a, s), "fold1_seg");
    END
}

static PyObject *f_backpermute(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 3, 3, "backpermute") < 0 || check_callable(args[1], "backpermute") < 0) return NULL;
    PyObject *ctxargs[2] = {args[0], args[2]};
    BEGIN(ctxargs, 2)
    ax_acc a = acc_of(c, args[2]);
    if (!a) goto out;
    ax_exp sh;
    if (shape_of(c, args[0], &sh) < 0) goto out;
    int r = ax_acc_rank(a);
    Cb b = {.c = c, .fn = args[1], .hint = r >= 0 ? ax_type_index(c->cx, r) : NULL};
    res = done_acc(c, ax_backpermute(sh, tramp1, &b, a), "ax_backpermute");
    END
}

static PyObject *f_permute(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 4, 4, "permute") < 0 || check_callable(args[0], "permute") < 0 ||
        check_callable(args[2], "permute") < 0)
        return NULL;
    PyObject *ctxargs[2] = {args[1], args[3]};
    BEGIN(ctxargs, 2)
    ax_acc d = acc_of(c, args[1]), a = d ? acc_of(c, args[3]) : NULL;
    if (!a) goto out;
    int r = ax_acc_rank(d);
    Cb cb = {.c = c, .fn = args[0], .hint = elem_hint(d)};
    Cb pb = {.c = c, .fn = args[2], .hint = r >= 0 ? ax_type_index(c->cx, r) : NULL};
    res = done_acc(c, ax_permute(tramp2, &cb, d, tramp1, &pb, a), "ax_permute");
    END
}

/* A replicate or slice specification: a tuple of ALL (':' or None) and
 * numbers or expressions. */
static int spec_of(CtxObject *c, PyObject *o, ax_slice *spec, int *n, PyObject *all)
{
    PyObject *t = PySequence_Tuple(o);
    if (!t) return -1;
    Py_ssize_t k = PyTuple_GET_SIZE(t);
    if (k > AX_MAX_RANK) { Py_DECREF(t); PyErr_SetString(PyExc_ValueError, "a specification longer than the highest rank"); return -1; }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *x = PyTuple_GET_ITEM(t, i);
        if (x == all || x == Py_None || PySlice_Check(x)) { spec[i] = ax_all(); continue; }
        ax_exp e;
        if (exp_of(c, x, ax_type_scalar(AX_I64), &e) < 0) { Py_DECREF(t); return -1; }
        spec[i] = ax_fixed(e);
    }
    *n = (int)k;
    Py_DECREF(t);
    return 0;
}

static PyObject *ALL_obj;

static PyObject *rep_slice(PyObject *const *args, Py_ssize_t n, int rep)
{
    const char *name = rep ? "replicate" : "slice";
    if (nargs_check(n, 2, 2, name) < 0) return NULL;
    PyObject *ctxargs[2] = {args[0], args[1]};
    BEGIN(ctxargs, 2)
    ax_acc a = acc_of(c, args[1]);
    if (!a) goto out;
    ax_slice spec[AX_MAX_RANK];
    int k;
    if (spec_of(c, args[0], spec, &k, ALL_obj) < 0) goto out;
    res = done_acc(c, rep ? ax_replicate(k, spec, a) : ax_slice_(k, spec, a), rep ? "ax_replicate" : "ax_slice");
    END
}
static PyObject *f_replicate(PyObject *m, PyObject *const *a, Py_ssize_t n) { return rep_slice(a, n, 1); }
static PyObject *f_slice(PyObject *m, PyObject *const *a, Py_ssize_t n) { return rep_slice(a, n, 0); }

static PyObject *f_reshape(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 2, 2, "reshape") < 0) return NULL;
    PyObject *ctxargs[2] = {args[0], args[1]};
    BEGIN(ctxargs, 2)
    ax_acc a = acc_of(c, args[1]);
    if (!a) goto out;
    ax_exp sh;
    if (shape_of(c, args[0], &sh) < 0) goto out;
    res = done_acc(c, ax_reshape(sh, a), "ax_reshape");
    END
}

static PyObject *f_flatten(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 1, 1, "flatten") < 0) return NULL;
    BEGIN(args, 1)
    ax_acc a = acc_of(c, args[0]);
    if (a) res = done_acc(c, ax_flatten(a), "ax_flatten");
    END
}

static PyObject *f_filter(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 2, 2, "filter") < 0 || check_callable(args[0], "filter") < 0) return NULL;
    BEGIN(args + 1, 1)
    ax_acc a = acc_of(c, args[1]);
    if (!a) goto out;
    Cb b = {.c = c, .fn = args[0], .hint = ax_type_scalar(AX_BOOL)};
    res = done_acc(c, ax_filter(tramp1, &b, a), "ax_filter");
    END
}

/* A boundary: "clamp", "mirror", "wrap", or a value (constant). */
static int boundary_of(CtxObject *c, PyObject *o, const ax_type *elem, ax_boundary *b)
{
    if (!o || o == Py_None) { *b = ax_clamp(); return 0; }
    if (PyUnicode_Check(o)) {
        const char *s = PyUnicode_AsUTF8(o);
        if (s && !strcmp(s, "clamp")) { *b = ax_clamp(); return 0; }
        if (s && !strcmp(s, "mirror")) { *b = ax_mirror(); return 0; }
        if (s && !strcmp(s, "wrap")) { *b = ax_wrap(); return 0; }
        PyErr_Format(PyExc_ValueError, "boundary '%s': 'clamp', 'mirror', 'wrap' or a value", s ? s : "?");
        return -1;
    }
    ax_exp v;
    if (exp_of(c, o, elem, &v) < 0) return -1;
    *b = ax_constant(v);
    return 0;
}

static int sizes_of(PyObject *o, int *size, int rank)
{
    if (PyLong_Check(o)) {
        if (rank != 1) { PyErr_Format(PyExc_ValueError, "a stencil over rank %d needs %d sizes", rank, rank); return -1; }
        size[0] = (int)PyLong_AsLong(o);
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *t = PySequence_Tuple(o);
    if (!t) return -1;
    if (PyTuple_GET_SIZE(t) != rank) {
        PyErr_Format(PyExc_ValueError, "a stencil over rank %d needs %d sizes (%zd given)", rank, rank, PyTuple_GET_SIZE(t));
        Py_DECREF(t);
        return -1;
    }
    for (int i = 0; i < rank; i++) {
        size[i] = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, i));
        if (PyErr_Occurred()) { Py_DECREF(t); return -1; }
    }
    Py_DECREF(t);
    return 0;
}

static PyObject *f_stencil(PyObject *m, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"f", "size", "a", "boundary", NULL};
    PyObject *f, *size, *arr, *bnd = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O:stencil", kwlist, &f, &size, &arr, &bnd)) return NULL;
    if (check_callable(f, "stencil") < 0) return NULL;
    PyObject *ctxargs[2] = {arr, bnd};
    BEGIN(ctxargs, bnd ? 2 : 1)
    ax_acc a = acc_of(c, arr);
    if (!a) goto out;
    Cb b = {.c = c, .fn = f, .hint = elem_hint(a)};
    b.nsize = ax_acc_rank(a);
    if (b.nsize < 1) { PyErr_SetString(PyExc_ValueError, "stencil: an array of rank 1 or more"); goto out; }
    ax_boundary bd;
    if (sizes_of(size, b.size_a, b.nsize) < 0 || boundary_of(c, bnd, elem_hint(a), &bd) < 0) goto out;
    res = done_acc(c, ax_stencil(tramp_stencil, &b, b.size_a, bd, a), "ax_stencil");
    END
}

static PyObject *f_stencil2(PyObject *m, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"f", "size_a", "a", "size_b", "b", "boundary_a", "boundary_b", NULL};
    PyObject *f, *sa, *aa, *sb, *ab, *ba = NULL, *bb = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOO|OO:stencil2", kwlist, &f, &sa, &aa, &sb, &ab, &ba, &bb))
        return NULL;
    if (check_callable(f, "stencil2") < 0) return NULL;
    PyObject *ctxargs[2] = {aa, ab};
    BEGIN(ctxargs, 2)
    ax_acc a = acc_of(c, aa), b2 = a ? acc_of(c, ab) : NULL;
    if (!b2) goto out;
    Cb b = {.c = c, .fn = f, .hint = elem_hint(a), .two = 1};
    b.nsize = ax_acc_rank(a);
    if (b.nsize < 1 || ax_acc_rank(b2) != b.nsize) {
        PyErr_SetString(PyExc_ValueError, "stencil2: two arrays of one rank, 1 or more");
        goto out;
    }
    ax_boundary bda, bdb;
    if (sizes_of(sa, b.size_a, b.nsize) < 0 || sizes_of(sb, b.size_b, b.nsize) < 0 ||
        boundary_of(c, ba, elem_hint(a), &bda) < 0 || boundary_of(c, bb, elem_hint(b2), &bdb) < 0)
        goto out;
    res = done_acc(c, ax_stencil2(tramp_stencil, &b, b.size_a, bda, a, b.size_b, bdb, b2), "ax_stencil2");
    END
}

/* A bool condition: an expression, a Python bool or a rank-0 bool array. */
static int cond_of(CtxObject *c, PyObject *o, ax_exp *e)
{
    if (Acc_Check(o) || PyArray_Check(o)) {
        ax_acc a = acc_of(c, o);
        if (!a) return -1;
        *e = ax_at(a, ax_index(0, NULL));
        return ax_exp_ok(*e) ? 0 : (raise_ctx(c, "acond: the condition"), -1);
    }
    return exp_of(c, o, ax_type_scalar(AX_BOOL), e);
}

static PyObject *f_acond(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 3, 3, "acond") < 0) return NULL;
    BEGIN(args, 3)
    ax_exp e;
    if (cond_of(c, args[0], &e) < 0) goto out;
    ax_acc t = acc_of(c, args[1]), f = t ? acc_of(c, args[2]) : NULL;
    if (!f) goto out;
    res = done_acc(c, ax_acond(e, t, f), "ax_acond");
    END
}

static PyObject *f_awhile(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 3, 3, "awhile") < 0 || check_callable(args[0], "awhile") < 0 ||
        check_callable(args[1], "awhile") < 0)
        return NULL;
    BEGIN(args + 2, 1)
    ax_acc init = acc_of(c, args[2]);
    if (!init) goto out;
    Cb b = {.c = c, .fn = args[1], .cond = args[0]};
    res = done_acc(c, ax_awhile(tramp_acond_, tramp_abody, &b, init), "ax_awhile");
    END
}

static PyObject *f_atuple(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    BEGIN(args, n)
    PyObject *t = tuple_of(args, n);
    if (!t) goto out;
    ax_acc a = acc_of(c, t);
    Py_DECREF(t);
    if (a) res = wrap_acc(c, a);
    END
}

/* --- scalar builders */

static PyObject *f_where(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 3, 3, "where") < 0) return NULL;
    CtxObject *c = ctx_of_args(args, 3, 0);
    if (!c && PyErr_Occurred()) return NULL;
    if (c) ctx_enter(c, 1);
    ax_exp x, t, e;
    PyObject *res = NULL;
    const ax_type *ht = hint_of(args[1]), *he = hint_of(args[2]);
    if (exp_of(c, args[0], ax_type_scalar(AX_BOOL), &x) < 0) goto out;
    if (ht || !he) {
        if (exp_of(c, args[1], he, &t) < 0 || exp_of(c, args[2], ht ? ht : ax_exp_type(t), &e) < 0) goto out;
    } else {
        if (exp_of(c, args[2], ht, &e) < 0 || exp_of(c, args[1], he, &t) < 0) goto out;
    }
    res = done_exp(c, ax_cond(x, t, e), "ax_cond");
out:
    if (c) ctx_leave(c);
    return res;
}

static PyObject *f_while_loop(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 3, 3, "while_loop") < 0 || check_callable(args[0], "while_loop") < 0 ||
        check_callable(args[1], "while_loop") < 0)
        return NULL;
    BEGIN(args + 2, 1)
    ax_exp init;
    if (exp_of(c, args[2], NULL, &init) < 0) goto out;
    if (!ax_exp_ctx(init)) init = ax_const(c->cx, init);
    Cb b = {.c = c, .fn = args[1], .cond = args[0], .hint = ax_exp_type(init)};
    res = done_exp(c, ax_while(tramp_cond, tramp1, &b, init), "ax_while");
    END
}

static PyObject *f_tuple(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    CtxObject *c = ctx_of_args(args, n, 0);
    if (!c && PyErr_Occurred()) return NULL;
    if (c) ctx_enter(c, 1);
    PyObject *res = NULL, *t = tuple_of(args, n);
    ax_exp e;
    if (t && tuple_exp(c, t, NULL, &e) == 0) res = done_exp(c, e, "ax_tuple");
    Py_XDECREF(t);
    if (c) ctx_leave(c);
    return res;
}

static PyObject *f_index(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (n > AX_MAX_RANK) { PyErr_Format(PyExc_ValueError, "an index of rank %zd (at most %d)", n, AX_MAX_RANK); return NULL; }
    CtxObject *c = ctx_of_args(args, n, 0);
    if (!c && PyErr_Occurred()) return NULL;
    if (c) ctx_enter(c, 1);
    PyObject *res = NULL;
    ax_exp comps[AX_MAX_RANK];
    for (Py_ssize_t i = 0; i < n; i++)
        if (exp_of(c, args[i], ax_type_scalar(AX_I64), &comps[i]) < 0) goto out;
    res = done_exp(c, ax_index((int)n, comps), "ax_index");
out:
    if (c) ctx_leave(c);
    return res;
}

static PyObject *f_ignore(PyObject *m, PyObject *arg)
{
    long r = PyLong_AsLong(arg);
    if (r == -1 && PyErr_Occurred()) return NULL;
    return done_exp(NULL, ax_ignore((int)r), "ax_ignore");
}

/* Reading arrays: at(a, ix), at_linear(a, i), shape(a), size(a). */
static PyObject *f_at(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 2, 2, "at") < 0) return NULL;
    BEGIN(args, 2)
    ax_acc a = acc_of(c, args[0]);
    if (!a) goto out;
    ax_exp ix;
    int r = ax_acc_rank(a);
    if (exp_of(c, args[1], r >= 0 ? ax_type_index(c->cx, r) : NULL, &ix) < 0) goto out;
    res = done_exp(c, ax_at(a, ix), "ax_at");
    END
}

static PyObject *f_at_linear(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 2, 2, "at_linear") < 0) return NULL;
    BEGIN(args, 2)
    ax_acc a = acc_of(c, args[0]);
    if (!a) goto out;
    ax_exp i;
    if (exp_of(c, args[1], ax_type_scalar(AX_I64), &i) < 0) goto out;
    res = done_exp(c, ax_at_linear(a, i), "ax_at_linear");
    END
}

static PyObject *f_shape(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 1, 1, "shape") < 0) return NULL;
    BEGIN(args, 1)
    ax_acc a = acc_of(c, args[0]);
    if (a) res = done_exp(c, ax_shape(a), "ax_shape");
    END
}

static PyObject *f_size(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 1, 1, "size") < 0) return NULL;
    BEGIN(args, 1)
    ax_acc a = acc_of(c, args[0]);
    if (a) res = done_exp(c, ax_size(a), "ax_size");
    END
}

/* Unary and binary scalar functions by table. */
typedef struct {
    const char *name;
    Fn1 f1;
    Fn2 f2;
    ax_exp (*fr)(ax_exp, ax_scalar);   /* rounding/conversion: (x, to) */
} Prim;

static const Prim prims[] = {
    {"exp", ax_exp_}, {"log", ax_log}, {"sqrt", ax_sqrt}, {"sin", ax_sin}, {"cos", ax_cos}, {"tan", ax_tan},
    {"asin", ax_asin}, {"acos", ax_acos}, {"atan", ax_atan}, {"sinh", ax_sinh}, {"cosh", ax_cosh},
    {"tanh", ax_tanh}, {"asinh", ax_asinh}, {"acosh", ax_acosh}, {"atanh", ax_atanh}, {"isnan", ax_is_nan},
    {"isinf", ax_is_infinite}, {"signum", ax_signum}, {"neg", ax_neg}, {"abs", ax_abs}, {"bnot", ax_bnot},
    {"not_", ax_not}, {"popcount", ax_popcount}, {"clz", ax_clz}, {"ctz", ax_ctz},
    {"add", NULL, ax_add}, {"sub", NULL, ax_sub}, {"mul", NULL, ax_mul}, {"div", NULL, ax_div},
    {"quot", NULL, ax_quot}, {"rem", NULL, ax_rem}, {"idiv", NULL, ax_idiv}, {"mod", NULL, ax_mod},
    {"min", NULL, ax_min}, {"max", NULL, ax_max}, {"pow", NULL, ax_pow}, {"logbase", NULL, ax_logbase},
    {"atan2", NULL, ax_atan2}, {"band", NULL, ax_band}, {"bor", NULL, ax_bor}, {"bxor", NULL, ax_bxor},
    {"shl", NULL, ax_shl}, {"shr", NULL, ax_shr}, {"rotl", NULL, ax_rotl}, {"rotr", NULL, ax_rotr},
    {"eq", NULL, ax_eq}, {"ne", NULL, ax_ne}, {"lt", NULL, ax_lt}, {"le", NULL, ax_le}, {"gt", NULL, ax_gt},
    {"ge", NULL, ax_ge}, {"and_", NULL, ax_and}, {"or_", NULL, ax_or},
    {"floor", NULL, NULL, ax_floor}, {"ceil", NULL, NULL, ax_ceiling}, {"round", NULL, NULL, ax_round},
    {"trunc", NULL, NULL, ax_truncate}, {"cvt", NULL, NULL, ax_cvt}, {"bitcast", NULL, NULL, ax_bitcast},
    {NULL}
};

static PyObject *f_prim(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    /* args[0]: the table index (bound by the Python layer) */
    long k = PyLong_AsLong(args[0]);
    if (k < 0 || k >= (long)(sizeof prims / sizeof *prims) - 1) { PyErr_SetString(PyExc_ValueError, "prim"); return NULL; }
    const Prim *p = &prims[k];
    args++, n--;
    if (p->f1) {
        if (nargs_check(n, 1, 1, p->name) < 0) return NULL;
        return apply1(p->f1, args[0], p->name);
    }
    if (p->f2) {
        if (nargs_check(n, 2, 2, p->name) < 0) return NULL;
        return apply2(p->f2, args[0], args[1], p->name);
    }
    if (nargs_check(n, 1, 2, p->name) < 0) return NULL;
    CtxObject *c = ctx_of_args(args, 1, 0);
    if (!c && PyErr_Occurred()) return NULL;
    if (c) ctx_enter(c, 1);
    PyObject *res = NULL;
    ax_exp x;
    if (exp_of(c, args[0], NULL, &x) < 0) goto out;
    int to;
    if (n == 2 && args[1] != Py_None) to = scalar_of_obj(args[1]);
    else {
        to = hint_scalar(ax_exp_type(x));
        if (p->fr == ax_cvt || p->fr == ax_bitcast) {
            PyErr_Format(PyExc_TypeError, "%s: the type to convert to is needed", p->name);
            goto out;
        }
        if (to < 0) { PyErr_Format(PyExc_TypeError, "%s: a scalar expression", p->name); goto out; }
    }
    if (to < 0) goto out;
    res = done_exp(c, p->fr(x, (ax_scalar)to), p->name);
out:
    if (c) ctx_leave(c);
    return res;
}

static PyObject *f_prim_names(PyObject *m, PyObject *unused)
{
    PyObject *l = PyList_New(0);
    for (int i = 0; l && prims[i].name; i++) {
        PyObject *s = Py_BuildValue("(si)", prims[i].name, prims[i].f1 ? 1 : prims[i].f2 ? 2 : 0);
        if (!s || PyList_Append(l, s) < 0) { Py_XDECREF(s); Py_DECREF(l); return NULL; }
        Py_DECREF(s);
    }
    return l;
}

static PyObject *f_const(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (nargs_check(n, 2, 2, "const") < 0) return NULL;
    int s = scalar_of_obj(args[1]);
    if (s < 0) return NULL;
    ax_exp e;
    PyObject *v = args[0];
    if (PyBool_Check(v) || PyLong_Check(v)) {
        if (s == AX_BOOL) e = ax_bool(PyObject_IsTrue(v));
        else if (const_of_int(v, s, &e) < 0) return NULL;
    } else {
        double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) return NULL;
        if (is_float(s)) e = ax_constf((ax_scalar)s, d);
        else if (s == AX_BOOL) e = ax_bool(d != 0);
        else {
            if (d != d || isinf(d) || d != floor(d)) {
                PyErr_Format(PyExc_ValueError, "%R is not a value of %s", v, ax_scalar_name((ax_scalar)s));
                return NULL;
            }
            e = ax_constf((ax_scalar)s, d);
        }
    }
    return done_exp(NULL, e, "const");
}

/* ------------------------------------------------------- running */

static PyObject *f_run(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (n < 1) { PyErr_SetString(PyExc_TypeError, "run() takes one or more computations"); return NULL; }
    CtxObject *c = ctx_of_args(args, n, 1);
    if (!c) return NULL;
    Py_INCREF(c);
    PyObject *r = run_accs(c, args, n, n == 1);
    Py_DECREF(c);
    return r;
}

static PyObject *f_dump(PyObject *m, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"a", "stage", "json", NULL};
    PyObject *a;
    const char *stage = "fusion";
    int json = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|sp:dump", kwlist, &a, &stage, &json)) return NULL;
    CtxObject *c = ctx_of_args(&a, 1, 1);
    if (!c) return NULL;
    Py_INCREF(c);
    ctx_enter(c, 1);
    PyObject *res = NULL;
    ax_acc x = acc_of(c, a);
    if (x) {
        char *s;
        Py_BEGIN_ALLOW_THREADS
        s = ax_dump(c->cx, x, stage, json);
        Py_END_ALLOW_THREADS
        if (!s) raise_ctx(c, "ax_dump failed");
        else {
            res = PyUnicode_FromString(s);
            free(s);
        }
    }
    ctx_leave(c);
    Py_DECREF(c);
    return res;
}

/* ------------------------------------------------------- parameters */

static PyObject *Ctx_param(CtxObject *c, PyObject *args)
{
    int index, rank;
    PyObject *dt;
    if (!PyArg_ParseTuple(args, "iOi:param", &index, &dt, &rank)) return NULL;
    ctx_enter(c, 1);
    PyObject *res = NULL;
    const ax_type *t = type_of_obj(c, dt);
    if (t) res = done_acc(c, ax_param(c->cx, index, t, rank), "ax_param");
    ctx_leave(c);
    return res;
}

static PyObject *Ctx_param_exp(CtxObject *c, PyObject *args)
{
    int index;
    PyObject *dt;
    if (!PyArg_ParseTuple(args, "iO:param_exp", &index, &dt)) return NULL;
    ctx_enter(c, 1);
    PyObject *res = NULL;
    const ax_type *t = type_of_obj(c, dt);
    if (t) res = done_exp(c, ax_param_exp(c->cx, index, t), "ax_param_exp");
    ctx_leave(c);
    return res;
}

/* A weak number parameter: an Exp whose type is decided by what it meets;
 * materialise(scalar or None) gives the typed parameter expression. */
static PyObject *f_weak(PyObject *m, PyObject *args)
{
    CtxObject *c;
    PyObject *fn;
    if (!PyArg_ParseTuple(args, "O!O:weak", &Ctx_Type, &c, &fn)) return NULL;
    ExpObject *x = PyObject_New(ExpObject, &Exp_Type);
    if (!x) return NULL;
    x->e = invalid_exp();
    x->c = c;
    Py_INCREF(c);
    c->live++;
    Py_INCREF(fn);
    x->weak = fn;
    return (PyObject *)x;
}

/* The number of arrays a result of type t flattens into (ax_run_n's
 * count): the leaves of nested array tuples. */
static int count_results(const ax_type *t)
{
    if (ax_type_kind_of(t) != AX_KIND_ARRAYS) return 1;
    int n = 0;
    for (int i = 0; i < ax_type_arity(t); i++) n += count_results(ax_type_elem(t, i));
    return n;
}

/* A plan entry's argument position must index the call's arguments
 * (Program_call reads args[argpos] once it has checked that the call has
 * argpos + 1 of them); this bound keeps argpos + 1 far from overflowing
 * and is far beyond any real function's arguments. */
#define MAX_ARGPOS (1 << 20)

static PyObject *Ctx_compile(CtxObject *c, PyObject *args)
{
    PyObject *a, *plan;
    if (!PyArg_ParseTuple(args, "OO:compile", &a, &plan)) return NULL;
    ctx_enter(c, 1);
    ProgramObject *p = NULL;
    ax_acc x = acc_of(c, a);
    if (!x) goto out;
    PyObject *seq = PySequence_Fast(plan, "plan: a sequence of (param, argpos, scalar)");
    if (!seq) goto out;
    p = PyObject_New(ProgramObject, &Program_Type);
    if (!p) { Py_DECREF(seq); goto out; }
    p->vectorcall = (vectorcallfunc)Program_call;
    p->c = c;
    Py_INCREF(c);
    p->p = NULL;
    p->type = NULL;
    p->nout = 0;
    p->calls = 0;
    p->nplan = (int)PySequence_Fast_GET_SIZE(seq);
    p->plan = PyMem_Calloc((size_t)(p->nplan ? p->nplan : 1), sizeof *p->plan);
    p->keep = PyDict_Values(c->borrowed);
    p->nparams = 0;
    p->nargs = 0;
    if (!p->plan || !p->keep) { Py_DECREF(seq); Py_CLEAR(p); PyErr_NoMemory(); goto out; }
    for (int i = 0; i < p->nplan; i++) {
        PlanEntry *e = &p->plan[i];
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "iii", &e->param, &e->argpos, &e->scalar)) {
            Py_DECREF(seq);
            Py_CLEAR(p);
            goto out;
        }
        /* Program_call indexes its argument vector with argpos and its
         * parameter vector with param, and makes an array of the scalar
         * type: each must be in range, or a call would read outside them. */
        int bad = 1;
        if (e->param < 0 || e->param >= AX_MAX_PARAMS)
            PyErr_Format(PyExc_ValueError, "compile: plan entry %d: the parameter index %d is not in 0..%d", i,
                         e->param, AX_MAX_PARAMS - 1);
        else if (e->argpos < 0 || e->argpos >= MAX_ARGPOS)
            PyErr_Format(PyExc_ValueError, "compile: plan entry %d: the argument position %d is not in 0..%d", i,
                         e->argpos, MAX_ARGPOS - 1);
        else if (e->scalar < -1 || e->scalar >= AX_NSCALAR)
            PyErr_Format(PyExc_ValueError,
                         "compile: plan entry %d: the scalar code %d is neither -1 (an array) nor a scalar type "
                         "(0..%d)", i, e->scalar, AX_NSCALAR - 1);
        else bad = 0;
        if (bad) {
            Py_DECREF(seq);
            Py_CLEAR(p);
            goto out;
        }
        if (e->param + 1 > p->nparams) p->nparams = e->param + 1;
        if (e->argpos + 1 > p->nargs) p->nargs = e->argpos + 1;
    }
    Py_DECREF(seq);
    ax_program *pr;
    run_begin(c);
    Py_BEGIN_ALLOW_THREADS
    pr = ax_compile(c->cx, x);
    Py_END_ALLOW_THREADS
    if (run_end(c) < 0) { if (pr) ax_program_free(pr); Py_CLEAR(p); goto out; }
    if (!pr) { raise_ctx(c, "ax_compile failed"); Py_CLEAR(p); goto out; }
    p->p = pr;
    /* The result's type from the program, not ax_acc_type(x): that one
     * lives in the context's term arena, which is reset once the caller
     * lets go of the terms (the jit does, right after compiling), and a
     * later call would read freed memory to unpack its results. */
    p->type = ax_program_type(pr);
    if (!p->type) { raise_axle(AX_ERR_BACKEND, "compile: the program has no result type"); Py_CLEAR(p); goto out; }
    p->nout = count_results(p->type);
    if (ax_program_params(pr) > p->nparams) p->nparams = ax_program_params(pr);
out:
    ctx_leave(c);
    return (PyObject *)p;
}

static void Program_dealloc(ProgramObject *p)
{
    if (p->p) {
        if (p->c->depth == 0) ax_program_free(p->p);
        else pending_push(p->c, 1, p->p);
    }
    PyMem_Free(p->plan);
    Py_XDECREF(p->keep);
    Py_DECREF(p->c);
    PyObject_Free(p);
}

/* A rank-0 array holding the number o as scalar s. */
static ax_array *scalar_array(CtxObject *c, PyObject *o, int s)
{
    union { int8_t i8; int16_t i16; int32_t i32; int64_t i64; uint8_t u8; uint16_t u16; uint32_t u32; uint64_t u64;
            float f32; double f64; } v;
    memset(&v, 0, sizeof v);
    if (is_float(s)) {
        double d = PyFloat_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) return NULL;
        if (s == AX_F32) v.f32 = (float)d;
        else v.f64 = d;
    } else if (s == AX_BOOL) {
        int t = PyObject_IsTrue(o);
        if (t < 0) return NULL;
        v.u8 = (uint8_t)t;
    } else {
        ax_exp e;
        if (exp_of(NULL, o, ax_type_scalar((ax_scalar)s), &e) < 0) return NULL;   /* range check */
        if (s == AX_U64) {
            v.u64 = PyLong_AsUnsignedLongLong(o);
        } else {
            long long x = PyLong_AsLongLong(o);
            switch (s) {
            case AX_I8: v.i8 = (int8_t)x; break;
            case AX_I16: v.i16 = (int16_t)x; break;
            case AX_I32: v.i32 = (int32_t)x; break;
            case AX_I64: v.i64 = x; break;
            case AX_U8: v.u8 = (uint8_t)x; break;
            case AX_U16: v.u16 = (uint16_t)x; break;
            default: v.u32 = (uint32_t)x; break;
            }
        }
        if (PyErr_Occurred()) return NULL;
    }
    ax_array *r = ax_array_from(c->cx, (ax_scalar)s, 0, NULL, &v);
    if (!r) raise_ctx(c, "ax_array_from failed");
    return r;
}

typedef struct {
    ax_array **args;
    PyObject **keeps;
    int n;
} Aliases;

static PyObject *alias_args(void *env, ax_array *a)
{
    Aliases *al = env;
    for (int i = 0; i < al->n; i++)
        if (al->args[i] == a && al->keeps[i]) return al->keeps[i];
    return NULL;
}

/* program(args): runs with the parameters taken from the call's arguments
 * as the plan says. */
static PyObject *Program_call(ProgramObject *p, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (kwnames && PyTuple_GET_SIZE(kwnames)) { PyErr_SetString(PyExc_TypeError, "no keyword arguments"); return NULL; }
    if (n < p->nargs) { PyErr_Format(PyExc_TypeError, "the program takes %d arguments (%zd given)", p->nargs, n); return NULL; }
    if (!p->p) { PyErr_SetString(PyExc_RuntimeError, "the program is not compiled"); return NULL; }
    CtxObject *c = p->c;
    ctx_enter(c, 0);
    ax_array *argv_s[16], **argv = argv_s;
    PyObject *keep_s[16], **keeps = keep_s;
    ax_array *out_s[16], **out = out_s;
    PyObject *res = NULL;
    int np = p->nparams, got = -1;
    if (np > 16 || p->nout > 16) {
        argv = PyMem_Calloc((size_t)np + 1, sizeof *argv);
        keeps = PyMem_Calloc((size_t)np + 1, sizeof *keeps);
        out = PyMem_Calloc((size_t)p->nout + 1, sizeof *out);
        if (!argv || !keeps || !out) { PyErr_NoMemory(); goto done; }
    }
    for (int i = 0; i < np; i++) { argv[i] = NULL; keeps[i] = NULL; }
    for (int i = 0; i < p->nplan; i++) {
        const PlanEntry *e = &p->plan[i];
        PyObject *o = args[e->argpos];
        if (argv[e->param]) continue;
        if (e->scalar < 0) argv[e->param] = wrap_array(c, o, &keeps[e->param]);
        else argv[e->param] = scalar_array(c, o, e->scalar);
        if (!argv[e->param]) goto done;
    }
    run_begin(c);
    Py_BEGIN_ALLOW_THREADS
    got = ax_program_run_with(p->p, argv, np, out, p->nout);
    Py_END_ALLOW_THREADS
    if (run_end(c) < 0) goto done;
    if (got < 0) { raise_ctx(c, "ax_program_run_with failed"); goto done; }
    p->calls++;
    {
        Aliases al = {argv, keeps, np};
        int pos = 0;
        res = results_of(c, p->type, out, got, &pos, alias_args, &al);
        for (int i = pos; i < got; i++) if (out[i]) ax_array_release(out[i]);
    }
done:
    if (got < 0 && out) { /* nothing to release */ }
    for (int i = 0; i < np; i++) {
        if (argv && argv[i]) ax_array_release(argv[i]);
        if (keeps) Py_XDECREF(keeps[i]);
    }
    if (argv != argv_s) PyMem_Free(argv);
    if (keeps != keep_s) PyMem_Free(keeps);
    if (out != out_s) PyMem_Free(out);
    ctx_leave(c);
    return res;
}

static PyObject *Program_get_stats(ProgramObject *p, void *closure)
{
    const ax_stats *s = ax_program_stats(p->p);
    if (!s) Py_RETURN_NONE;
    return Py_BuildValue("{s:s,s:O,s:L,s:L,s:L,s:L,s:d,s:d,s:d,s:d,s:d,s:L}", "backend", s->backend ? s->backend : "",
                         "fallback", s->fallback ? Py_True : Py_False, "nodes", (long long)s->nodes, "lets",
                         (long long)s->lets, "kernels", (long long)s->kernels, "intermediates",
                         (long long)s->intermediates, "sharing_ms", s->sharing_ms, "optimise_ms", s->optimise_ms,
                         "codegen_ms", s->codegen_ms, "compile_ms", s->compile_ms, "run_ms", s->run_ms, "calls",
                         (long long)p->calls);
}

static PyObject *Program_get_params(ProgramObject *p, void *closure)
{
    return PyLong_FromLong(p->p ? ax_program_params(p->p) : 0);
}

static PyObject *Program_get_type(ProgramObject *p, void *closure) { return type_str(p->type); }

static PyGetSetDef Program_getset[] = {
    {"stats", (getter)Program_get_stats, NULL, "ax_program_stats of the compile, and the calls", NULL},
    {"params", (getter)Program_get_params, NULL, "ax_program_params", NULL},
    {"type", (getter)Program_get_type, NULL, "the result's type", NULL},
    {NULL}
};

/* ---------------------------------------------------- jit signatures */

/* The signature of a call's arguments, for the jit's cache: per argument
 * a small int, 16 * scalar + rank for an array (-1 for an element type
 * axle lacks), 1000 + scalar for a Python number (bool, int64 or float64:
 * its kind), 2000 + scalar for a NumPy scalar; a tuple ("t", ...) for a
 * tuple; ("o", object) for anything else (static; must be hashable). */
static PyObject *sig_of(PyObject *o, int depth)
{
    if (PyArray_Check(o)) {
        PyArrayObject *a = (PyArrayObject *)o;
        int s = scalar_of_descr(PyArray_DESCR(a));
        return PyLong_FromLong(s < 0 ? -1 : 16 * s + PyArray_NDIM(a));
    }
    if (PyBool_Check(o)) return PyLong_FromLong(1000 + AX_BOOL);
    if (PyLong_Check(o)) return PyLong_FromLong(1000 + AX_I64);
    if (PyFloat_Check(o)) return PyLong_FromLong(1000 + AX_F64);
    if (PyArray_IsScalar(o, Generic)) {
        PyArray_Descr *d = PyArray_DescrFromScalar(o);
        int s = d ? scalar_of_descr(d) : -1;
        Py_XDECREF(d);
        return PyLong_FromLong(s < 0 ? -2 : 2000 + s);
    }
    if (PyTuple_Check(o) && depth < 16) {
        Py_ssize_t n = PyTuple_GET_SIZE(o);
        PyObject *t = PyTuple_New(n + 1);
        if (!t) return NULL;
        PyTuple_SET_ITEM(t, 0, PyUnicode_FromString("t"));
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = sig_of(PyTuple_GET_ITEM(o, i), depth + 1);
            if (!x) { Py_DECREF(t); return NULL; }
            PyTuple_SET_ITEM(t, i + 1, x);
        }
        return t;
    }
    Py_INCREF(o);
    return Py_BuildValue("(sN)", "o", o);
}

/* signature(ctx, args): (ctx, per-argument signatures...), or None when an
 * argument is an axle term (a jitted function called while another is
 * traced: it is then traced inline). */
static PyObject *f_signature(PyObject *m, PyObject *const *argv, Py_ssize_t nargv)
{
    if (nargv != 2 || !PyTuple_Check(argv[1])) { PyErr_SetString(PyExc_TypeError, "signature(ctx, args)"); return NULL; }
    PyObject *args = argv[1];
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(args, i);
        if (Acc_Check(x) || Exp_Check(x)) Py_RETURN_NONE;
    }
    PyObject *t = PyTuple_New(n + 1);
    if (!t) return NULL;
    Py_INCREF(argv[0]);
    PyTuple_SET_ITEM(t, 0, argv[0]);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = sig_of(PyTuple_GET_ITEM(args, i), 0);
        if (!x) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, i + 1, x);
    }
    return t;
}
/* ------------------------------------------------------- misc */

static PyObject *f_current(PyObject *m, PyObject *unused)
{
    CtxObject *c = current_ctx();
    Py_XINCREF(c);
    return (PyObject *)c;
}

static PyObject *f_default_context(PyObject *m, PyObject *unused)
{
    CtxObject *c = get_default();
    Py_XINCREF(c);
    return (PyObject *)c;
}

static PyObject *f_set_default(PyObject *m, PyObject *c)
{
    if (!Ctx_Check(c)) { PyErr_SetString(PyExc_TypeError, "set_default: a Context"); return NULL; }
    Py_INCREF(c);
    Py_XSETREF(default_ctx, (CtxObject *)c);
    Py_RETURN_NONE;
}

static PyObject *f_cache_stats(PyObject *m, PyObject *args)
{
    const char *dir = NULL;
    if (!PyArg_ParseTuple(args, "|z:cache_stats", &dir)) return NULL;
    ax_options o;
    memset(&o, 0, sizeof o);
    o.cache_dir = dir;
    ax_cache_info info;
    if (ax_cache_stats(&o, &info) < 0) return PyErr_SetFromErrno(PyExc_OSError);
    return Py_BuildValue("{s:s,s:L,s:L,s:L}", "dir", info.dir, "entries", (long long)info.entries, "bytes",
                         (long long)info.bytes, "limit", (long long)info.limit);
}

static PyObject *f_cache_clear(PyObject *m, PyObject *args)
{
    const char *dir = NULL;
    if (!PyArg_ParseTuple(args, "|z:cache_clear", &dir)) return NULL;
    ax_options o;
    memset(&o, 0, sizeof o);
    o.cache_dir = dir;
    ax_cache_info info;
    if (ax_cache_clear(&o, &info) < 0) return PyErr_SetFromErrno(PyExc_OSError);
    return Py_BuildValue("{s:s,s:L,s:L}", "dir", info.dir, "entries", (long long)info.entries, "bytes",
                         (long long)info.bytes);
}

/* The C side of the call-overhead measurement (axle.bench): runs a
 * compiled program n times from C with the same arguments, as a C user
 * would; returns seconds per call. */
static PyObject *f_c_loop(PyObject *m, PyObject *args)
{
    ProgramObject *p;
    PyObject *argt;
    long n;
    if (!PyArg_ParseTuple(args, "O!Ol:c_loop", &Program_Type, &p, &argt, &n)) return NULL;
    PyObject *seq = PySequence_Fast(argt, "arguments");
    if (!seq) return NULL;
    CtxObject *c = p->c;
    ctx_enter(c, 0);
    int np = p->nparams;
    ax_array *argv[64] = {0};
    PyObject *keeps[64] = {0};
    PyObject *res = NULL;
    if (np > 64 || p->nout > 64) { PyErr_SetString(PyExc_ValueError, "too many parameters"); goto done; }
    /* the plan reads arguments up to nargs - 1 (as Program_call checks) */
    if (PySequence_Fast_GET_SIZE(seq) < p->nargs) {
        PyErr_Format(PyExc_TypeError, "c_loop: the program takes %d arguments (%zd given)", p->nargs,
                     PySequence_Fast_GET_SIZE(seq));
        goto done;
    }
    for (int i = 0; i < p->nplan; i++) {
        const PlanEntry *e = &p->plan[i];
        if (argv[e->param]) continue;
        PyObject *o = PySequence_Fast_GET_ITEM(seq, e->argpos);
        argv[e->param] = e->scalar < 0 ? wrap_array(c, o, &keeps[e->param]) : scalar_array(c, o, e->scalar);
        if (!argv[e->param]) goto done;
    }
    double t0 = now_s(), t1;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (long k = 0; k < n && !bad; k++) {
        ax_array *out[64];
        int got = ax_program_run_with(p->p, argv, np, out, p->nout);
        if (got < 0) bad = 1;
        for (int i = 0; i < got; i++) {
            (void)ax_array_data(out[i], 0);
            ax_array_release(out[i]);
        }
    }
    Py_END_ALLOW_THREADS
    t1 = now_s();
    if (bad) raise_ctx(c, "run failed");
    else res = PyFloat_FromDouble((t1 - t0) / (double)(n > 0 ? n : 1));
done:
    for (int i = 0; i < 64; i++) {
        if (argv[i]) ax_array_release(argv[i]);
        Py_XDECREF(keeps[i]);
    }
    Py_DECREF(seq);
    ctx_leave(c);
    return res;
}

/* ------------------------------------------------------- types, module */

static PyMethodDef Ctx_methods[] = {
    {"__enter__", (PyCFunction)Ctx_enter_with, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Ctx_exit_with, METH_VARARGS, NULL},
    {"param", (PyCFunction)Ctx_param, METH_VARARGS, "param(index, dtype, rank): an array parameter (ax_param)."},
    {"param_exp", (PyCFunction)Ctx_param_exp, METH_VARARGS, "param_exp(index, dtype): a scalar parameter."},
    {"compile", (PyCFunction)Ctx_compile, METH_VARARGS, "compile(acc, plan): a Program."},
    {NULL}
};

static PyGetSetDef Ctx_getset[] = {
    {"options", (getter)Ctx_get_options, NULL, "the options in force (ax_ctx_options)", NULL},
    {"stats", (getter)Ctx_get_stats, NULL, "live terms, resets, borrowed arrays", NULL},
    {NULL}
};

static PyTypeObject Ctx_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "axle.Context",
    .tp_basicsize = sizeof(CtxObject),
    .tp_dealloc = (destructor)Ctx_dealloc,
    .tp_repr = (reprfunc)Ctx_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Context(backend=None, threads=0, debug=None, unsafe=False, mem_limit=0, cc=None, cflags=None,\n"
              "        cache_dir=None, no_cache=False, cache_limit=0, cc_timeout=0, quiet=False, strict=False)\n\n"
              "An axle context with its options (ax_options); `with ctx:` makes it the current one.",
    .tp_methods = Ctx_methods,
    .tp_getset = Ctx_getset,
    .tp_new = Ctx_new,
};

static PyTypeObject Exp_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "axle.Exp",
    .tp_basicsize = sizeof(ExpObject),
    .tp_dealloc = (destructor)Exp_dealloc,
    .tp_repr = (reprfunc)Exp_repr,
    .tp_as_number = &Exp_as_number,
    .tp_as_sequence = &Exp_as_sequence,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A scalar expression of axle (operators build terms; functions receive them).",
    .tp_richcompare = Exp_richcompare,
    .tp_methods = Exp_methods,
    .tp_getset = Exp_getset,
};

static PyTypeObject Acc_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "axle.Acc",
    .tp_basicsize = sizeof(AccObject),
    .tp_dealloc = (destructor)Acc_dealloc,
    .tp_repr = (reprfunc)Acc_repr,
    .tp_str = (reprfunc)Acc_str,
    .tp_as_number = &Acc_as_number,
    .tp_as_mapping = &Acc_as_mapping,
    .tp_as_sequence = &Acc_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An array computation of axle, run when its value is asked for (numpy(), np.asarray, print).",
    .tp_methods = Acc_methods,
    .tp_getset = Acc_getset,
};

static PyTypeObject ArrayRef_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "axle._ArrayRef",
    .tp_basicsize = sizeof(ArrayRefObject),
    .tp_dealloc = (destructor)ArrayRef_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The owner of a result's memory (one reference to an ax_array).",
};

static PyTypeObject Program_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "axle.Program",
    .tp_basicsize = sizeof(ProgramObject),
    .tp_dealloc = (destructor)Program_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(ProgramObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_doc = "A compiled program with parameters; calling it runs it (ax_program_run_with).",
    .tp_getset = Program_getset,
};

#define FC(name, doc) {#name, (PyCFunction)(void (*)(void))f_##name, METH_FASTCALL, doc}
static PyMethodDef module_methods[] = {
    FC(use, "use(x): an array computation over a NumPy array (or a tuple of them: an array of tuples), no copy."),
    FC(unit, "unit(e): a rank-0 array holding e."),
    FC(generate, "generate(shape, f): the array of the shape whose element at ix is f(ix)."),
    FC(map, "map(f, a)"),
    FC(zip_with, "zip_with(f, a, b[, c])"),
    FC(fold, "fold(f, z, a): reduces the innermost dimension."),
    FC(fold1, "fold1(f, a)"),
    FC(fold_all, "fold_all(f, z, a): reduces every element into a rank-0 array."),
    FC(fold_seg, "fold_seg(f, z, a, segs)"),
    FC(fold1_seg, "fold1_seg(f, a, segs)"),
    FC(scanl, "scanl(f, z, a)"),
    FC(scanl1, "scanl1(f, a)"),
    FC(scanr, "scanr(f, z, a)"),
    FC(scanr1, "scanr1(f, a)"),
    FC(scanl_ex, "scanl_ex(f, z, a): (the exclusive scan, the totals)"),
    FC(scanr_ex, "scanr_ex(f, z, a): (the exclusive scan from the right, the totals)"),
    FC(backpermute, "backpermute(shape, p, a): result[ix] = a[p(ix)]"),
    FC(permute, "permute(comb, default, p, a): a[ix] combined into result[p(ix)]"),
    FC(replicate, "replicate(spec, a)"),
    FC(slice, "slice(spec, a)"),
    FC(reshape, "reshape(shape, a)"),
    FC(flatten, "flatten(a)"),
    FC(filter, "filter(p, a)"),
    {"stencil", (PyCFunction)(void (*)(void))f_stencil, METH_VARARGS | METH_KEYWORDS,
     "stencil(f, size, a, boundary='clamp')"},
    {"stencil2", (PyCFunction)(void (*)(void))f_stencil2, METH_VARARGS | METH_KEYWORDS,
     "stencil2(f, size_a, a, size_b, b, boundary_a='clamp', boundary_b='clamp')"},
    FC(acond, "acond(c, t, e)"),
    FC(awhile, "awhile(cond, body, init)"),
    FC(atuple, "atuple(*arrays): an array tuple."),
    FC(where, "where(c, t, e): t if c else e (ax_cond)."),
    FC(while_loop, "while_loop(cond, body, init): a scalar loop."),
    FC(tuple, "tuple(*exps)"),
    FC(index, "index(*components): an index (shape) expression."),
    {"ignore", (PyCFunction)f_ignore, METH_O, "ignore(rank): the index that drops an element in permute."},
    FC(at, "at(a, ix): the element of a at an index."),
    FC(at_linear, "at_linear(a, i)"),
    FC(shape, "shape(a): a's extent, an index expression."),
    FC(size, "size(a): a's number of elements (i64)."),
    FC(prim, NULL),
    {"prim_names", (PyCFunction)f_prim_names, METH_NOARGS, NULL},
    FC(const, "const(value, dtype)"),
    FC(run, "run(*computations): runs them in one program."),
    {"dump", (PyCFunction)(void (*)(void))f_dump, METH_VARARGS | METH_KEYWORDS, "dump(a, stage='fusion', json=False)"},
    {"weak", (PyCFunction)f_weak, METH_VARARGS, NULL},
    {"signature", (PyCFunction)(void (*)(void))f_signature, METH_FASTCALL, NULL},
    {"current", (PyCFunction)f_current, METH_NOARGS, "The current context."},
    {"default_context", (PyCFunction)f_default_context, METH_NOARGS, "The default context."},
    {"set_default", (PyCFunction)f_set_default, METH_O, "Makes a Context the default."},
    {"cache_stats", (PyCFunction)f_cache_stats, METH_VARARGS, NULL},
    {"cache_clear", (PyCFunction)f_cache_clear, METH_VARARGS, NULL},
    {"c_loop", (PyCFunction)f_c_loop, METH_VARARGS, NULL},
    {NULL}
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "axle._axle", "The C half of axle's Python binding.", -1, module_methods,
};

PyMODINIT_FUNC PyInit__axle(void)
{
    import_array();
    if (PyType_Ready(&Ctx_Type) < 0 || PyType_Ready(&Exp_Type) < 0 || PyType_Ready(&Acc_Type) < 0 ||
        PyType_Ready(&ArrayRef_Type) < 0 || PyType_Ready(&Program_Type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    AxleError = PyErr_NewExceptionWithDoc("axle.AxleError",
                                          "An error axle reported: .kind is its status ('build', 'index', "
                                          "'divzero', 'shape', 'nomem', 'compile', 'backend', 'arg', "
                                          "'cancelled'), .args[0] the message.",
                                          NULL, NULL);
    ALL_obj = PyUnicode_InternFromString("axle.ALL");
    if (!AxleError || !ALL_obj) return NULL;
    Py_INCREF(&Ctx_Type);
    Py_INCREF(&Exp_Type);
    Py_INCREF(&Acc_Type);
    Py_INCREF(&Program_Type);
    Py_INCREF(ALL_obj);
    if (PyModule_AddObject(m, "Context", (PyObject *)&Ctx_Type) < 0 ||
        PyModule_AddObject(m, "Exp", (PyObject *)&Exp_Type) < 0 ||
        PyModule_AddObject(m, "Acc", (PyObject *)&Acc_Type) < 0 ||
        PyModule_AddObject(m, "Program", (PyObject *)&Program_Type) < 0 ||
        PyModule_AddObject(m, "AxleError", AxleError) < 0 || PyModule_AddObject(m, "ALL", ALL_obj) < 0)
        return NULL;
    Py_INCREF(AxleError);
    PyModule_AddStringConstant(m, "version", AX_VERSION_STRING);
    PyModule_AddIntConstant(m, "MAX_RANK", AX_MAX_RANK);
    PyModule_AddIntConstant(m, "MAX_PARAMS", AX_MAX_PARAMS);
    return m;
}
