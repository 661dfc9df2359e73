/*
 * axle._axle: contexts (Context: its options, its lock, the default and
 * the current context, the reset of its terms, the cancel and log hooks
 * while it runs) and errors (AxleError, raised from the context's status
 * and message).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "_axle.h"
#include <math.h>
#include <string.h>
#include <time.h>

static const char *const status_names[] = {"ok", "build", "index", "divzero", "shape", "nomem",
                                           "compile", "backend", "arg", "cancelled"};

static CtxObject *default_ctx;
PyObject *AxleError;

/* ------------------------------------------------------------------ errors */

PyObject *pyctx_raise_axle(int status, const char *msg)
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
PyObject *pyctx_raise(CtxObject *c, const char *fallback)
{
    if (PyErr_Occurred()) {
        if (c) ax_clear_error(c->cx);
        return NULL;
    }
    if (!c) return pyctx_raise_axle(AX_ERR_BUILD, fallback);
    ax_status s = ax_status_of(c->cx);
    const char *m = ax_error(c->cx);
    if (!m || !*m) m = fallback;
    pyctx_raise_axle(s == AX_OK ? AX_ERR_BUILD : (int)s, m);
    ax_clear_error(c->cx);
    return NULL;
}

/* ---------------------------------------------------------------- contexts */

void pyctx_pending_push(CtxObject *c, int kind, void *p)
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
int pyctx_enter(CtxObject *c, int build)
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

void pyctx_leave(CtxObject *c)
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

double pyctx_now_s(void)
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
    double t = pyctx_now_s();
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
void pyctx_run_begin(CtxObject *c)
{
    c->running = 1;
    c->last_check = pyctx_now_s();
}

/* After it (GIL held): a Python exception caught by the cancel hook wins. */
int pyctx_run_end(CtxObject *c)
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

PyObject *Ctx_new(PyTypeObject *type, PyObject *args, PyObject *kw)
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

void Ctx_dealloc(CtxObject *c)
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

CtxObject *pyctx_default(void)
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
CtxObject *pyctx_current(void)
{
    PyObject *d = PyThreadState_GetDict();
    if (d) {
        PyObject *stack = PyDict_GetItemString(d, "axle.contexts");
        if (stack && PyList_Check(stack) && PyList_GET_SIZE(stack) > 0)
            return (CtxObject *)PyList_GET_ITEM(stack, PyList_GET_SIZE(stack) - 1);
    }
    return pyctx_default();
}

PyObject *Ctx_enter_with(CtxObject *c, PyObject *unused)
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

PyObject *Ctx_exit_with(CtxObject *c, PyObject *args)
{
    PyObject *d = PyThreadState_GetDict();
    PyObject *stack = d ? PyDict_GetItemString(d, "axle.contexts") : NULL;
    if (stack && PyList_GET_SIZE(stack) > 0) {
        Py_ssize_t n = PyList_GET_SIZE(stack);
        if (PyList_SetSlice(stack, n - 1, n, NULL) < 0) return NULL;
    }
    Py_RETURN_FALSE;
}

PyObject *Ctx_get_options(CtxObject *c, void *closure)
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

PyObject *Ctx_get_stats(CtxObject *c, void *closure)
{
    return Py_BuildValue("{s:n,s:L,s:n,s:i}", "live", c->live, "resets", (long long)c->resets, "borrowed",
                         PyDict_Size(c->borrowed), "depth", c->depth);
}

PyObject *Ctx_repr(CtxObject *c)
{
    return PyUnicode_FromFormat("axle.Context(%R)", c->opts);
}

/* ------------------------------------------------------- misc */

PyObject *f_current(PyObject *m, PyObject *unused)
{
    CtxObject *c = pyctx_current();
    Py_XINCREF(c);
    return (PyObject *)c;
}

PyObject *f_default_context(PyObject *m, PyObject *unused)
{
    CtxObject *c = pyctx_default();
    Py_XINCREF(c);
    return (PyObject *)c;
}

PyObject *f_set_default(PyObject *m, PyObject *c)
{
    if (!Ctx_Check(c)) { PyErr_SetString(PyExc_TypeError, "set_default: a Context"); return NULL; }
    Py_INCREF(c);
    Py_XSETREF(default_ctx, (CtxObject *)c);
    Py_RETURN_NONE;
}
