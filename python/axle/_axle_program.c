/*
 * axle._axle: running and programs: run and dump of a computation,
 * parameters (arrays, scalars, the jit's weak scalars), compiled programs
 * (Program: compiled once, called with new arguments through a plan of
 * its parameters), the jit's call signatures, and the C side of the
 * call-overhead measurement (c_loop).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "_axle.h"
#include <string.h>
#include <time.h>

static PyObject *Program_call(ProgramObject *p, PyObject *const *args, size_t nargsf, PyObject *kwnames);

/* ------------------------------------------------------- running */

PyObject *f_run(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (n < 1) { PyErr_SetString(PyExc_TypeError, "run() takes one or more computations"); return NULL; }
    CtxObject *c = pyexp_ctx_of_args(args, n, 1);
    if (!c) return NULL;
    Py_INCREF(c);
    PyObject *r = pyacc_run_accs(c, args, n, n == 1);
    Py_DECREF(c);
    return r;
}

PyObject *f_dump(PyObject *m, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"a", "stage", "json", NULL};
    PyObject *a;
    const char *stage = "fusion";
    int json = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|sp:dump", kwlist, &a, &stage, &json)) return NULL;
    CtxObject *c = pyexp_ctx_of_args(&a, 1, 1);
    if (!c) return NULL;
    Py_INCREF(c);
    pyctx_enter(c, 1);
    PyObject *res = NULL;
    ax_acc x = pyexp_acc_of(c, a);
    if (x) {
        char *s;
        Py_BEGIN_ALLOW_THREADS
        s = ax_dump(c->cx, x, stage, json);
        Py_END_ALLOW_THREADS
        if (!s) pyctx_raise(c, "ax_dump failed");
        else {
            res = PyUnicode_FromString(s);
            free(s);
        }
    }
    pyctx_leave(c);
    Py_DECREF(c);
    return res;
}

/* ------------------------------------------------------- parameters */

PyObject *Ctx_param(CtxObject *c, PyObject *args)
{
    int index, rank;
    PyObject *dt;
    if (!PyArg_ParseTuple(args, "iOi:param", &index, &dt, &rank)) return NULL;
    pyctx_enter(c, 1);
    PyObject *res = NULL;
    const ax_type *t = pyarr_type_of_obj(c, dt);
    if (t) res = pyexp_done_acc(c, ax_param(c->cx, index, t, rank), "ax_param");
    pyctx_leave(c);
    return res;
}

PyObject *Ctx_param_exp(CtxObject *c, PyObject *args)
{
    int index;
    PyObject *dt;
    if (!PyArg_ParseTuple(args, "iO:param_exp", &index, &dt)) return NULL;
    pyctx_enter(c, 1);
    PyObject *res = NULL;
    const ax_type *t = pyarr_type_of_obj(c, dt);
    if (t) res = pyexp_done(c, ax_param_exp(c->cx, index, t), "ax_param_exp");
    pyctx_leave(c);
    return res;
}

/* A weak number parameter: an Exp whose type is decided by what it meets;
 * materialise(scalar or None) gives the typed parameter expression. */
PyObject *f_weak(PyObject *m, PyObject *args)
{
    CtxObject *c;
    PyObject *fn;
    if (!PyArg_ParseTuple(args, "O!O:weak", &Ctx_Type, &c, &fn)) return NULL;
    ExpObject *x = PyObject_New(ExpObject, &Exp_Type);
    if (!x) return NULL;
    x->e = pyexp_invalid();
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

/* A Program of c with this plan (a sequence of (param, argpos, scalar)),
 * not yet given its compiled program (program_finish); NULL with an
 * exception. */
static ProgramObject *program_new(CtxObject *c, PyObject *plan)
{
    PyObject *seq = PySequence_Fast(plan, "plan: a sequence of (param, argpos, scalar)");
    if (!seq) return NULL;
    ProgramObject *p = PyObject_New(ProgramObject, &Program_Type);
    if (!p) { Py_DECREF(seq); return NULL; }
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
    if (!p->plan || !p->keep) { Py_DECREF(seq); Py_DECREF(p); PyErr_NoMemory(); return NULL; }
    for (int i = 0; i < p->nplan; i++) {
        PlanEntry *e = &p->plan[i];
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "iii", &e->param, &e->argpos, &e->scalar)) {
            Py_DECREF(seq);
            Py_DECREF(p);
            return NULL;
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
            Py_DECREF(p);
            return NULL;
        }
        if (e->param + 1 > p->nparams) p->nparams = e->param + 1;
        if (e->argpos + 1 > p->nargs) p->nargs = e->argpos + 1;
    }
    Py_DECREF(seq);
    return p;
}

/* p given its compiled program pr (taken); -1 with an exception. */
static int program_finish(ProgramObject *p, ax_program *pr)
{
    p->p = pr;
    /* The result's type from the program, not ax_acc_type(x): that one
     * lives in the context's term arena, which is reset once the caller
     * lets go of the terms (the jit does, right after compiling), and a
     * later call would read freed memory to unpack its results. */
    p->type = ax_program_type(pr);
    if (!p->type) { pyctx_raise_axle(AX_ERR_BACKEND, "compile: the program has no result type"); return -1; }
    p->nout = count_results(p->type);
    if (ax_program_params(pr) > p->nparams) p->nparams = ax_program_params(pr);
    return 0;
}

PyObject *Ctx_compile(CtxObject *c, PyObject *args)
{
    PyObject *a, *plan;
    if (!PyArg_ParseTuple(args, "OO:compile", &a, &plan)) return NULL;
    pyctx_enter(c, 1);
    ProgramObject *p = NULL;
    ax_acc x = pyexp_acc_of(c, a);
    if (!x || !(p = program_new(c, plan))) goto out;
    ax_program *pr;
    pyctx_run_begin(c);
    Py_BEGIN_ALLOW_THREADS
    pr = ax_compile(c->cx, x);
    Py_END_ALLOW_THREADS
    if (pyctx_run_end(c) < 0) { if (pr) ax_program_free(pr); Py_CLEAR(p); goto out; }
    if (!pr) { pyctx_raise(c, "ax_compile failed"); Py_CLEAR(p); goto out; }
    if (program_finish(p, pr)) Py_CLEAR(p);
out:
    pyctx_leave(c);
    return (PyObject *)p;
}

/* ctx.load(data, plan): the Program of a file's bytes (ax_program_load_mem),
 * called through plan as a compiled one. */
PyObject *Ctx_load(CtxObject *c, PyObject *args)
{
    Py_buffer data;
    PyObject *plan;
    if (!PyArg_ParseTuple(args, "y*O:load", &data, &plan)) return NULL;
    pyctx_enter(c, 1);
    ProgramObject *p = program_new(c, plan);
    if (p) {
        ax_program *pr;
        Py_BEGIN_ALLOW_THREADS
        pr = ax_program_load_mem(c->cx, data.buf, (size_t)data.len);
        Py_END_ALLOW_THREADS
        if (!pr) { pyctx_raise(c, "ax_program_load failed"); Py_CLEAR(p); }
        else if (program_finish(p, pr)) Py_CLEAR(p);
    }
    pyctx_leave(c);
    PyBuffer_Release(&data);
    return (PyObject *)p;
}

/* program.save(path): ax_program_save. */
PyObject *Program_save(ProgramObject *p, PyObject *args)
{
    PyObject *path;
    if (!PyArg_ParseTuple(args, "O&:save", PyUnicode_FSConverter, &path)) return NULL;
    if (!p->p) { Py_DECREF(path); PyErr_SetString(PyExc_RuntimeError, "the program is not compiled"); return NULL; }
    CtxObject *c = p->c;
    pyctx_enter(c, 0);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ax_program_save(p->p, PyBytes_AS_STRING(path));
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (rc) pyctx_raise(c, "ax_program_save failed");
    pyctx_leave(c);
    if (rc) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Program_get_plan(ProgramObject *p, void *closure)
{
    PyObject *l = PyList_New(p->nplan);
    for (int i = 0; l && i < p->nplan; i++) {
        PyObject *t = Py_BuildValue("(iii)", p->plan[i].param, p->plan[i].argpos, p->plan[i].scalar);
        if (!t) { Py_CLEAR(l); break; }
        PyList_SET_ITEM(l, i, t);
    }
    return l;
}

void Program_dealloc(ProgramObject *p)
{
    if (p->p) {
        if (p->c->depth == 0) ax_program_free(p->p);
        else pyctx_pending_push(p->c, 1, p->p);
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
    if (pyexp_is_float(s)) {
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
        if (pyexp_of(NULL, o, ax_type_scalar((ax_scalar)s), &e) < 0) return NULL;   /* range check */
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
    if (!r) pyctx_raise(c, "ax_array_from failed");
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
    pyctx_enter(c, 0);
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
        if (e->scalar < 0) argv[e->param] = pyarr_wrap(c, o, &keeps[e->param]);
        else argv[e->param] = scalar_array(c, o, e->scalar);
        if (!argv[e->param]) goto done;
    }
    pyarr_touch_borrowed(c);
    pyctx_run_begin(c);
    Py_BEGIN_ALLOW_THREADS
    got = ax_program_run_with(p->p, argv, np, out, p->nout);
    Py_END_ALLOW_THREADS
    if (pyctx_run_end(c) < 0) goto done;
    if (got < 0) { pyctx_raise(c, "ax_program_run_with failed"); goto done; }
    p->calls++;
    {
        Aliases al = {argv, keeps, np};
        int pos = 0;
        res = pyarr_results_of(c, p->type, out, got, &pos, alias_args, &al);
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
    pyctx_leave(c);
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

static PyObject *Program_get_type(ProgramObject *p, void *closure) { return pyarr_type_str(p->type); }

PyGetSetDef Program_getset[] = {
    {"stats", (getter)Program_get_stats, NULL, "ax_program_stats of the compile, and the calls", NULL},
    {"params", (getter)Program_get_params, NULL, "ax_program_params", NULL},
    {"type", (getter)Program_get_type, NULL, "the result's type", NULL},
    {"plan", (getter)Program_get_plan, NULL, "its parameters' places in a call: (param, argpos, scalar)", NULL},
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
        int s = pyarr_scalar_of_descr(PyArray_DESCR(a));
        return PyLong_FromLong(s < 0 ? -1 : 16 * s + PyArray_NDIM(a));
    }
    if (PyBool_Check(o)) return PyLong_FromLong(1000 + AX_BOOL);
    if (PyLong_Check(o)) return PyLong_FromLong(1000 + AX_I64);
    if (PyFloat_Check(o)) return PyLong_FromLong(1000 + AX_F64);
    if (PyArray_IsScalar(o, Generic)) {
        PyArray_Descr *d = PyArray_DescrFromScalar(o);
        int s = d ? pyarr_scalar_of_descr(d) : -1;
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
PyObject *f_signature(PyObject *m, PyObject *const *argv, Py_ssize_t nargv)
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

/* The C side of the call-overhead measurement (axle.bench): runs a
 * compiled program n times from C with the same arguments, as a C user
 * would; returns seconds per call. */
PyObject *f_c_loop(PyObject *m, PyObject *args)
{
    ProgramObject *p;
    PyObject *argt;
    long n;
    if (!PyArg_ParseTuple(args, "O!Ol:c_loop", &Program_Type, &p, &argt, &n)) return NULL;
    PyObject *seq = PySequence_Fast(argt, "arguments");
    if (!seq) return NULL;
    CtxObject *c = p->c;
    pyctx_enter(c, 0);
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
        argv[e->param] = e->scalar < 0 ? pyarr_wrap(c, o, &keeps[e->param]) : scalar_array(c, o, e->scalar);
        if (!argv[e->param]) goto done;
    }
    pyarr_touch_borrowed(c);
    double t0 = pyctx_now_s(), t1;
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
    t1 = pyctx_now_s();
    if (bad) pyctx_raise(c, "run failed");
    else res = PyFloat_FromDouble((t1 - t0) / (double)(n > 0 ? n : 1));
done:
    for (int i = 0; i < 64; i++) {
        if (argv[i]) ax_array_release(argv[i]);
        Py_XDECREF(keeps[i]);
    }
    Py_DECREF(seq);
    pyctx_leave(c);
    return res;
}
