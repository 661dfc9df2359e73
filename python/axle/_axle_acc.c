/*
 * axle._axle: array operations: Acc (an array computation: its type,
 * indexing, conversion to NumPy by running it) and the builders of the
 * array operations (use, generate, map, zip_with, the folds and scans,
 * permutes, replicate and slice, reshape, filter, stencils, acond,
 * awhile, array tuples).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "_axle.h"
#include <string.h>

/* ---------------------------------------------------------- Acc */

static PyObject *Acc_get_type(AccObject *a, void *closure) { return pyarr_type_str(ax_acc_type(a->a)); }

static PyObject *Acc_get_dtype(AccObject *a, void *closure)
{
    const ax_type *t = ax_acc_elem(a->a);
    if (!t) Py_RETURN_NONE;
    return pyarr_py_of_type(t);
}

static PyObject *Acc_get_ndim(AccObject *a, void *closure)
{
    int r = ax_acc_rank(a->a);
    if (r < 0) Py_RETURN_NONE;
    return PyLong_FromLong(r);
}

PyObject *Acc_repr(AccObject *a)
{
    char buf[512];
    return PyUnicode_FromFormat("axle.Acc(%s)", ax_type_str(ax_acc_type(a->a), buf, sizeof buf));
}

/* Runs n computations of context c in one program; a tuple of results
 * (or one result when single). */
PyObject *pyacc_run_accs(CtxObject *c, PyObject *const *objs, Py_ssize_t n, int single)
{
    if (pyctx_enter(c, 1) < 0) return NULL;
    PyObject *res = NULL;
    ax_array **out = NULL;
    ax_acc parts[64], a;
    if (n < 1 || n > 64) { PyErr_SetString(PyExc_ValueError, "run: 1 to 64 computations"); goto done; }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!(parts[i] = pyexp_acc_of(c, objs[i]))) goto done;
    a = n == 1 ? parts[0] : ax_atuple((int)n, parts);
    if (!a) { pyctx_raise(c, "ax_atuple failed"); goto done; }
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
    pyarr_touch_borrowed(c);
    pyctx_run_begin(c);
    Py_BEGIN_ALLOW_THREADS
    got = ax_run_n(c->cx, a, out, nout);
    Py_END_ALLOW_THREADS
    if (pyctx_run_end(c) < 0) { if (got > 0) for (int i = 0; i < got; i++) ax_array_release(out[i]); goto done; }
    if (got < 0) { pyctx_raise(c, "ax_run failed"); goto done; }
    int pos = 0;
    res = pyarr_results_of(c, t, out, got, &pos, pyarr_alias_borrowed, c);
    for (int i = pos; i < got; i++) if (out[i]) ax_array_release(out[i]);
    if (res && !single && n == 1) {
        PyObject *tup = PyTuple_Pack(1, res);
        Py_DECREF(res);
        res = tup;
    }
done:
    PyMem_Free(out);
    pyctx_leave(c);
    return res;
}

static PyObject *Acc_numpy(AccObject *a, PyObject *unused)
{
    PyObject *o = (PyObject *)a;
    return pyacc_run_accs(a->c, &o, 1, 1);
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

/* DLPack out: the result, run, as NumPy's DLPack capsule (CPU memory;
 * NumPy's array of an axle result shares its buffer, so nothing is
 * copied).  PyTorch, JAX and CuPy take it with their from_dlpack. */
static PyObject *Acc_dlpack(AccObject *a, PyObject *args, PyObject *kw)
{
    PyObject *r = Acc_numpy(a, NULL);
    if (!r) return NULL;
    if (!PyArray_Check(r)) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_TypeError, "__dlpack__: a computation of tuples gives a tuple of arrays; "
                                         "pass its components (a[0], a[1], ...)");
        return NULL;
    }
    PyObject *f = PyObject_GetAttrString(r, "__dlpack__");
    PyObject *cap = f ? PyObject_Call(f, args, kw) : NULL;
    Py_XDECREF(f);
    Py_DECREF(r);
    return cap;
}

static PyObject *Acc_dlpack_device(AccObject *a, PyObject *unused)
{
    (void)a, (void)unused;
    return Py_BuildValue("(ii)", 1, 0);   /* kDLCPU, device 0: results live in host memory */
}

PyObject *Acc_str(AccObject *a)
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
    pyctx_enter(c, 1);
    if (ax_type_kind_of(t) == AX_KIND_ARRAYS) {
        Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
        if (i == -1 && PyErr_Occurred()) goto out;
        if (i < 0) i += ax_type_arity(t);
        if (i < 0 || i >= ax_type_arity(t)) { PyErr_SetString(PyExc_IndexError, "array tuple index out of range"); goto out; }
        r = pyexp_done_acc(c, ax_aget(a->a, (int)i), "ax_aget");
        goto out;
    }
    int rank = ax_acc_rank(a->a);
    if (Exp_Check(key) && ax_type_kind_of(ax_exp_type(((ExpObject *)key)->e)) == AX_KIND_INDEX) {
        ax_exp ix;
        if (pyexp_of(c, key, NULL, &ix) == 0) r = pyexp_done(c, ax_at(a->a, ix), "ax_at");
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
        if (pyexp_of(c, k ? k : key, ax_type_index(c->cx, rank), &ix) == 0) {
            if (rank == 0) ix = ax_index(0, NULL);
            r = pyexp_done(c, ax_at(a->a, ix), "ax_at");
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
        if (pyexp_of(c, x, ax_type_scalar(AX_I64), &e) < 0) goto out;
        spec[i] = ax_fixed(e);
    }
    r = pyexp_done_acc(c, ax_slice_(rank, spec, a->a), "ax_slice");
out:
    pyctx_leave(c);
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
    pyctx_enter(a->c, 1);
    PyObject *r = pyexp_done_acc(a->c, ax_aget(a->a, (int)i), "ax_aget");
    pyctx_leave(a->c);
    return r;
}

static PyObject *Acc_matmul(PyObject *x, PyObject *y);

PyNumberMethods Acc_as_number = {
    .nb_float = Acc_float, .nb_int = Acc_int, .nb_bool = Acc_bool, .nb_matrix_multiply = Acc_matmul,
};
PyMappingMethods Acc_as_mapping = {
    .mp_subscript = (binaryfunc)Acc_subscript,
};
PySequenceMethods Acc_as_sequence = {
    .sq_length = (lenfunc)Acc_len, .sq_item = (ssizeargfunc)Acc_item,
};

PyMethodDef Acc_methods[] = {
    {"numpy", (PyCFunction)Acc_numpy, METH_NOARGS, "Runs the computation: a NumPy array (tuples of them for tuples)."},
    {"__array__", (PyCFunction)(void (*)(void))Acc_array, METH_VARARGS | METH_KEYWORDS, NULL},
    {"__dlpack__", (PyCFunction)(void (*)(void))Acc_dlpack, METH_VARARGS | METH_KEYWORDS,
     "Runs the computation: its result as a DLPack capsule (host memory, not copied)."},
    {"__dlpack_device__", (PyCFunction)Acc_dlpack_device, METH_NOARGS, "(1, 0): results are in host memory."},
    {NULL}
};

static PyObject *Acc_get_context(AccObject *a, void *closure)
{
    Py_INCREF(a->c);
    return (PyObject *)a->c;
}

/* a.T: the dimensions reversed (NumPy's), a backpermute that fuses. */
static PyObject *Acc_get_T(PyObject *a, void *closure)
{
    (void)closure;
    return f_transpose(NULL, &a, 1);
}

PyGetSetDef Acc_getset[] = {
    {"T", (getter)Acc_get_T, NULL, "the transpose (the dimensions in reverse order), fused where it is read", NULL},
    {"type", (getter)Acc_get_type, NULL, "axle's name of the type", NULL},
    {"dtype", (getter)Acc_get_dtype, NULL, "the element type as a NumPy dtype (a tuple of them for tuples)", NULL},
    {"ndim", (getter)Acc_get_ndim, NULL, "the rank (None for an array tuple)", NULL},
    {"context", (getter)Acc_get_context, NULL, "the Context the computation belongs to", NULL},
    {NULL}
};

/* ------------------------------------------------------ builders */

/* The element type of a computation, for typing a bare number. */
static const ax_type *elem_hint(ax_acc a) { return ax_acc_elem(a); }

PyObject *f_use(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 1, 1, "use") < 0) return NULL;
    if (Acc_Check(args[0])) { Py_INCREF(args[0]); return args[0]; }
    BEGIN(args, 1)
    ax_acc a = pyarr_use(c, args[0]);
    if (a) res = pyexp_wrap_acc(c, a);
    END
}

PyObject *f_unit(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 1, 1, "unit") < 0) return NULL;
    BEGIN(args, 1)
    ax_exp e;
    if (pyexp_of(c, args[0], NULL, &e) < 0) goto out;
    res = pyexp_done_acc(c, ax_unit(c->cx, e), "ax_unit");
    END
}

/* A shape: an int, a tuple of ints/expressions, or an index expression. */
static int shape_of(CtxObject *c, PyObject *o, ax_exp *out)
{
    if (PyLong_Check(o) || (Exp_Check(o) && ax_type_kind_of(ax_exp_type(((ExpObject *)o)->e)) == AX_KIND_SCALAR) ||
        (Exp_Check(o) && ((ExpObject *)o)->weak)) {
        ax_exp i;
        if (pyexp_of(c, o, ax_type_scalar(AX_I64), &i) < 0) return -1;
        *out = ax_ix1(i);
        return 0;
    }
    if (PyTuple_Check(o)) return pyexp_of(c, o, ax_type_index(c->cx, (int)PyTuple_GET_SIZE(o)), out);
    if (PyList_Check(o)) {
        PyObject *t = PyList_AsTuple(o);
        if (!t) return -1;
        int rc = pyexp_of(c, t, ax_type_index(c->cx, (int)PyTuple_GET_SIZE(t)), out);
        Py_DECREF(t);
        return rc;
    }
    return pyexp_of(c, o, NULL, out);
}

PyObject *f_generate(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 2, 2, "generate") < 0 || pyexp_check_callable(args[1], "generate") < 0) return NULL;
    BEGIN(args, 1)
    ax_exp sh;
    if (shape_of(c, args[0], &sh) < 0) goto out;
    Cb b = {.c = c, .fn = args[1]};
    res = pyexp_done_acc(c, ax_generate(c->cx, sh, pyexp_tramp1, &b), "ax_generate");
    END
}

PyObject *f_map(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 2, 2, "map") < 0 || pyexp_check_callable(args[0], "map") < 0) return NULL;
    BEGIN(args + 1, 1)
    ax_acc a = pyexp_acc_of(c, args[1]);
    if (!a) goto out;
    Cb b = {.c = c, .fn = args[0]};
    res = pyexp_done_acc(c, ax_map(pyexp_tramp1, &b, a), "ax_map");
    END
}

PyObject *f_zip_with(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 3, 4, "zip_with") < 0 || pyexp_check_callable(args[0], "zip_with") < 0) return NULL;
    BEGIN(args + 1, n - 1)
    ax_acc a = pyexp_acc_of(c, args[1]), b2 = a ? pyexp_acc_of(c, args[2]) : NULL, c3 = NULL;
    if (!b2) goto out;
    if (n == 4 && !(c3 = pyexp_acc_of(c, args[3]))) goto out;
    Cb b = {.c = c, .fn = args[0]};
    res = pyexp_done_acc(c, n == 4 ? ax_zip_with3(pyexp_tramp3, &b, a, b2, c3) : ax_zip_with(pyexp_tramp2, &b, a, b2), "ax_zip_with");
    END
}

typedef ax_acc (*FoldZ)(ax_fn2, void *, ax_exp, ax_acc);
typedef ax_acc (*Fold1)(ax_fn2, void *, ax_acc);

static PyObject *foldz(PyObject *const *args, Py_ssize_t n, FoldZ f, const char *name)
{
    if (pyexp_nargs_check(n, 3, 3, name) < 0 || pyexp_check_callable(args[0], name) < 0) return NULL;
    BEGIN(args + 1, 2)
    ax_acc a = pyexp_acc_of(c, args[2]);
    if (!a) goto out;
    const ax_type *h = elem_hint(a);
    ax_exp z;
    if (pyexp_of(c, args[1], h, &z) < 0) goto out;
    Cb b = {.c = c, .fn = args[0], .hint = h};
    res = pyexp_done_acc(c, f(pyexp_tramp2, &b, z, a), name);
    END
}

static PyObject *fold1(PyObject *const *args, Py_ssize_t n, Fold1 f, const char *name)
{
    if (pyexp_nargs_check(n, 2, 2, name) < 0 || pyexp_check_callable(args[0], name) < 0) return NULL;
    BEGIN(args + 1, 1)
    ax_acc a = pyexp_acc_of(c, args[1]);
    if (!a) goto out;
    Cb b = {.c = c, .fn = args[0], .hint = elem_hint(a)};
    res = pyexp_done_acc(c, f(pyexp_tramp2, &b, a), name);
    END
}

#define FOLDZ(py, cf) PyObject *f_##py(PyObject *m, PyObject *const *a, Py_ssize_t n) { return foldz(a, n, cf, #py); }
#define FOLD1(py, cf) PyObject *f_##py(PyObject *m, PyObject *const *a, Py_ssize_t n) { return fold1(a, n, cf, #py); }
FOLDZ(fold, ax_fold)
FOLDZ(fold_all, ax_fold_all)
FOLDZ(scanl, ax_scanl)
FOLDZ(scanr, ax_scanr)
FOLD1(fold1, ax_fold1)
FOLD1(scanl1, ax_scanl1)
FOLD1(scanr1, ax_scanr1)

/* An array pair as a Python pair (t: a new reference, or NULL). */
static PyObject *as_pair(PyObject *t)
{
    if (!t) return NULL;
    PyObject *x = PySequence_GetItem(t, 0), *y = x ? PySequence_GetItem(t, 1) : NULL;
    Py_DECREF(t);
    if (!y) { Py_XDECREF(x); return NULL; }
    PyObject *r = PyTuple_Pack(2, x, y);
    Py_DECREF(x);
    Py_DECREF(y);
    return r;
}

/* an exclusive scan and the totals: a Python pair */
static PyObject *scan_ex(PyObject *const *args, Py_ssize_t n, FoldZ f, const char *name)
{
    return as_pair(foldz(args, n, f, name));
}
PyObject *f_scanl_ex(PyObject *m, PyObject *const *a, Py_ssize_t n) { return scan_ex(a, n, ax_scanl_ex, "scanl_ex"); }
PyObject *f_scanr_ex(PyObject *m, PyObject *const *a, Py_ssize_t n) { return scan_ex(a, n, ax_scanr_ex, "scanr_ex"); }

/* The segmented folds and scans (axle.h): f, [z,] a, segs; the exclusive
 * scans give (the scan, the totals). */
typedef ax_acc (*SegZ)(ax_fn2, void *, ax_exp, ax_acc, ax_acc);
typedef ax_acc (*Seg1)(ax_fn2, void *, ax_acc, ax_acc);

static PyObject *seg_z(PyObject *const *args, Py_ssize_t n, SegZ f, const char *name)
{
    if (pyexp_nargs_check(n, 4, 4, name) < 0 || pyexp_check_callable(args[0], name) < 0) return NULL;
    BEGIN(args + 1, 3)
    ax_acc a = pyexp_acc_of(c, args[2]), s = a ? pyexp_acc_of(c, args[3]) : NULL;
    if (!s) goto out;
    const ax_type *h = elem_hint(a);
    ax_exp z;
    if (pyexp_of(c, args[1], h, &z) < 0) goto out;
    Cb b = {.c = c, .fn = args[0], .hint = h};
    res = pyexp_done_acc(c, f(pyexp_tramp2, &b, z, a, s), name);
    END
}

static PyObject *seg_1(PyObject *const *args, Py_ssize_t n, Seg1 f, const char *name)
{
    if (pyexp_nargs_check(n, 3, 3, name) < 0 || pyexp_check_callable(args[0], name) < 0) return NULL;
    BEGIN(args + 1, 2)
    ax_acc a = pyexp_acc_of(c, args[1]), s = a ? pyexp_acc_of(c, args[2]) : NULL;
    if (!s) goto out;
    Cb b = {.c = c, .fn = args[0], .hint = elem_hint(a)};
    res = pyexp_done_acc(c, f(pyexp_tramp2, &b, a, s), name);
    END
}

PyObject *f_fold_seg(PyObject *m, PyObject *const *a, Py_ssize_t n) { return seg_z(a, n, ax_fold_seg, "fold_seg"); }
PyObject *f_fold1_seg(PyObject *m, PyObject *const *a, Py_ssize_t n) { return seg_1(a, n, ax_fold1_seg, "fold1_seg"); }
PyObject *f_scanl_seg(PyObject *m, PyObject *const *a, Py_ssize_t n) { return seg_z(a, n, ax_scanl_seg, "scanl_seg"); }
PyObject *f_scanr_seg(PyObject *m, PyObject *const *a, Py_ssize_t n) { return seg_z(a, n, ax_scanr_seg, "scanr_seg"); }
PyObject *f_scanl_ex_seg(PyObject *m, PyObject *const *a, Py_ssize_t n) { return as_pair(seg_z(a, n, ax_scanl_ex_seg, "scanl_ex_seg")); }
PyObject *f_scanr_ex_seg(PyObject *m, PyObject *const *a, Py_ssize_t n) { return as_pair(seg_z(a, n, ax_scanr_ex_seg, "scanr_ex_seg")); }
PyObject *f_scanl1_seg(PyObject *m, PyObject *const *a, Py_ssize_t n) { return seg_1(a, n, ax_scanl1_seg, "scanl1_seg"); }
PyObject *f_scanr1_seg(PyObject *m, PyObject *const *a, Py_ssize_t n) { return seg_1(a, n, ax_scanr1_seg, "scanr1_seg"); }

PyObject *f_backpermute(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 3, 3, "backpermute") < 0 || pyexp_check_callable(args[1], "backpermute") < 0) return NULL;
    PyObject *ctxargs[2] = {args[0], args[2]};
    BEGIN(ctxargs, 2)
    ax_acc a = pyexp_acc_of(c, args[2]);
    if (!a) goto out;
    ax_exp sh;
    if (shape_of(c, args[0], &sh) < 0) goto out;
    int r = ax_acc_rank(a);
    Cb b = {.c = c, .fn = args[1], .hint = r >= 0 ? ax_type_index(c->cx, r) : NULL};
    res = pyexp_done_acc(c, ax_backpermute(sh, pyexp_tramp1, &b, a), "ax_backpermute");
    END
}

PyObject *f_permute(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 4, 4, "permute") < 0 || pyexp_check_callable(args[0], "permute") < 0 ||
        pyexp_check_callable(args[2], "permute") < 0)
        return NULL;
    PyObject *ctxargs[2] = {args[1], args[3]};
    BEGIN(ctxargs, 2)
    ax_acc d = pyexp_acc_of(c, args[1]), a = d ? pyexp_acc_of(c, args[3]) : NULL;
    if (!a) goto out;
    int r = ax_acc_rank(d);
    Cb cb = {.c = c, .fn = args[0], .hint = elem_hint(d)};
    Cb pb = {.c = c, .fn = args[2], .hint = r >= 0 ? ax_type_index(c->cx, r) : NULL};
    res = pyexp_done_acc(c, ax_permute(pyexp_tramp2, &cb, d, pyexp_tramp1, &pb, a), "ax_permute");
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
        if (pyexp_of(c, x, ax_type_scalar(AX_I64), &e) < 0) { Py_DECREF(t); return -1; }
        spec[i] = ax_fixed(e);
    }
    *n = (int)k;
    Py_DECREF(t);
    return 0;
}

PyObject *pyacc_ALL_obj;

static PyObject *rep_slice(PyObject *const *args, Py_ssize_t n, int rep)
{
    const char *name = rep ? "replicate" : "slice";
    if (pyexp_nargs_check(n, 2, 2, name) < 0) return NULL;
    PyObject *ctxargs[2] = {args[0], args[1]};
    BEGIN(ctxargs, 2)
    ax_acc a = pyexp_acc_of(c, args[1]);
    if (!a) goto out;
    ax_slice spec[AX_MAX_RANK];
    int k;
    if (spec_of(c, args[0], spec, &k, pyacc_ALL_obj) < 0) goto out;
    res = pyexp_done_acc(c, rep ? ax_replicate(k, spec, a) : ax_slice_(k, spec, a), rep ? "ax_replicate" : "ax_slice");
    END
}
PyObject *f_replicate(PyObject *m, PyObject *const *a, Py_ssize_t n) { return rep_slice(a, n, 1); }
PyObject *f_slice(PyObject *m, PyObject *const *a, Py_ssize_t n) { return rep_slice(a, n, 0); }

PyObject *f_reshape(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 2, 2, "reshape") < 0) return NULL;
    PyObject *ctxargs[2] = {args[0], args[1]};
    BEGIN(ctxargs, 2)
    ax_acc a = pyexp_acc_of(c, args[1]);
    if (!a) goto out;
    ax_exp sh;
    if (shape_of(c, args[0], &sh) < 0) goto out;
    res = pyexp_done_acc(c, ax_reshape(sh, a), "ax_reshape");
    END
}

PyObject *f_flatten(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 1, 1, "flatten") < 0) return NULL;
    BEGIN(args, 1)
    ax_acc a = pyexp_acc_of(c, args[0]);
    if (a) res = pyexp_done_acc(c, ax_flatten(a), "ax_flatten");
    END
}

/* sort(keys, descending=False) and sort_by(keys, vals, descending=False):
 * stable, each row; sort_by gives (sorted keys, vals in that order). */
PyObject *f_sort(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 1, 2, "sort") < 0) return NULL;
    int desc = n == 2 ? PyObject_IsTrue(args[1]) : 0;
    if (desc < 0) return NULL;
    BEGIN(args, 1)
    ax_acc a = pyexp_acc_of(c, args[0]);
    if (a) res = pyexp_done_acc(c, ax_sort(a, desc), "ax_sort");
    END
}

static PyObject *sort_by_acc(PyObject *const *args, int desc)
{
    BEGIN(args, 2)
    ax_acc k = pyexp_acc_of(c, args[0]), v = k ? pyexp_acc_of(c, args[1]) : NULL;
    if (v) res = pyexp_done_acc(c, ax_sort_by(k, v, desc), "ax_sort_by");
    END
}

PyObject *f_sort_by(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 2, 3, "sort_by") < 0) return NULL;
    int desc = n == 3 ? PyObject_IsTrue(args[2]) : 0;
    if (desc < 0) return NULL;
    return as_pair(sort_by_acc(args, desc));
}

/* group_by(keys, vals, nbuckets): (counts, vals grouped by key);
 * reduce_by_key(f, z, keys, vals, nbuckets): per key, f folded from z. */
static PyObject *group_by_acc(PyObject *const *args)
{
    BEGIN(args, 2)
    ax_acc k = pyexp_acc_of(c, args[0]), v = k ? pyexp_acc_of(c, args[1]) : NULL;
    ax_exp nb;
    if (!v || pyexp_of(c, args[2], ax_type_scalar(AX_I64), &nb) < 0) goto out;
    res = pyexp_done_acc(c, ax_group_by(k, v, nb), "ax_group_by");
    END
}

PyObject *f_group_by(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 3, 3, "group_by") < 0) return NULL;
    return as_pair(group_by_acc(args));
}

PyObject *f_reduce_by_key(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 5, 5, "reduce_by_key") < 0 || pyexp_check_callable(args[0], "reduce_by_key") < 0)
        return NULL;
    BEGIN(args + 2, 2)
    ax_acc k = pyexp_acc_of(c, args[2]), v = k ? pyexp_acc_of(c, args[3]) : NULL;
    if (!v) goto out;
    const ax_type *h = elem_hint(v);
    ax_exp z, nb;
    if (pyexp_of(c, args[1], h, &z) < 0 || pyexp_of(c, args[4], ax_type_scalar(AX_I64), &nb) < 0) goto out;
    Cb b = {.c = c, .fn = args[0], .hint = h};
    res = pyexp_done_acc(c, ax_reduce_by_key(pyexp_tramp2, &b, z, k, v, nb), "ax_reduce_by_key");
    END
}

/* compute(a): a made as an array of its own (fusion stops there). */
PyObject *f_compute(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 1, 1, "compute") < 0) return NULL;
    BEGIN(args, 1)
    ax_acc a = pyexp_acc_of(c, args[0]);
    if (a) res = pyexp_done_acc(c, ax_compute(a), "ax_compute");
    END
}

/* transpose(a, axes=None): NumPy's order of axes (None reverses them). */
PyObject *f_transpose(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 1, 2, "transpose") < 0) return NULL;
    BEGIN(args, 1)
    ax_acc a = pyexp_acc_of(c, args[0]);
    if (!a) goto out;
    int perm[AX_MAX_RANK], *pp = NULL;
    if (n == 2 && args[1] != Py_None) {
        PyObject *t = PySequence_Tuple(args[1]);
        if (!t) goto out;
        Py_ssize_t k = PyTuple_GET_SIZE(t);
        int rank = ax_acc_rank(a);
        if (k != rank) {
            PyErr_Format(PyExc_ValueError, "transpose: axes has %zd entries for an array of rank %d", k, rank);
            Py_DECREF(t);
            goto out;
        }
        for (Py_ssize_t i = 0; i < k; i++) {
            long v = PyLong_AsLong(PyTuple_GET_ITEM(t, i));
            if (v == -1 && PyErr_Occurred()) { Py_DECREF(t); goto out; }
            /* out of range: ax_transpose names it */
            perm[i] = v < -1 ? -1 : v > AX_MAX_RANK ? AX_MAX_RANK : (int)v;
        }
        Py_DECREF(t);
        pp = perm;
    }
    res = pyexp_done_acc(c, ax_transpose(a, pp), "ax_transpose");
    END
}

PyObject *f_filter(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 2, 2, "filter") < 0 || pyexp_check_callable(args[0], "filter") < 0) return NULL;
    BEGIN(args + 1, 1)
    ax_acc a = pyexp_acc_of(c, args[1]);
    if (!a) goto out;
    Cb b = {.c = c, .fn = args[0], .hint = ax_type_scalar(AX_BOOL)};
    res = pyexp_done_acc(c, ax_filter(pyexp_tramp1, &b, a), "ax_filter");
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
    if (pyexp_of(c, o, elem, &v) < 0) return -1;
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

PyObject *f_stencil(PyObject *m, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"f", "size", "a", "boundary", "index", NULL};
    PyObject *f, *size, *arr, *bnd = NULL;
    int withix = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|Op:stencil", kwlist, &f, &size, &arr, &bnd, &withix)) return NULL;
    if (pyexp_check_callable(f, "stencil") < 0) return NULL;
    PyObject *ctxargs[2] = {arr, bnd};
    BEGIN(ctxargs, bnd ? 2 : 1)
    ax_acc a = pyexp_acc_of(c, arr);
    if (!a) goto out;
    Cb b = {.c = c, .fn = f, .hint = elem_hint(a)};
    b.nsize = ax_acc_rank(a);
    if (b.nsize < 1) { PyErr_SetString(PyExc_ValueError, "stencil: an array of rank 1 or more"); goto out; }
    ax_boundary bd;
    if (sizes_of(size, b.size_a, b.nsize) < 0 || boundary_of(c, bnd, elem_hint(a), &bd) < 0) goto out;
    res = withix ? pyexp_done_acc(c, ax_stencil_ix(pyexp_tramp_stencil_ix, &b, b.size_a, bd, a), "ax_stencil_ix")
                 : pyexp_done_acc(c, ax_stencil(pyexp_tramp_stencil, &b, b.size_a, bd, a), "ax_stencil");
    END
}

PyObject *f_stencil2(PyObject *m, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"f", "size_a", "a", "size_b", "b", "boundary_a", "boundary_b", "index", NULL};
    PyObject *f, *sa, *aa, *sb, *ab, *ba = NULL, *bb = NULL;
    int withix = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOO|OOp:stencil2", kwlist, &f, &sa, &aa, &sb, &ab, &ba, &bb,
                                     &withix))
        return NULL;
    if (pyexp_check_callable(f, "stencil2") < 0) return NULL;
    PyObject *ctxargs[2] = {aa, ab};
    BEGIN(ctxargs, 2)
    ax_acc a = pyexp_acc_of(c, aa), b2 = a ? pyexp_acc_of(c, ab) : NULL;
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
    res = withix ? pyexp_done_acc(c, ax_stencil2_ix(pyexp_tramp_stencil_ix, &b, b.size_a, bda, a, b.size_b, bdb, b2),
                                  "ax_stencil2_ix")
                 : pyexp_done_acc(c, ax_stencil2(pyexp_tramp_stencil, &b, b.size_a, bda, a, b.size_b, bdb, b2),
                                  "ax_stencil2");
    END
}

/* A bool condition: an expression, a Python bool or a rank-0 bool array. */
static int cond_of(CtxObject *c, PyObject *o, ax_exp *e)
{
    if (Acc_Check(o) || PyArray_Check(o)) {
        ax_acc a = pyexp_acc_of(c, o);
        if (!a) return -1;
        *e = ax_at(a, ax_index(0, NULL));
        return ax_exp_ok(*e) ? 0 : (pyctx_raise(c, "acond: the condition"), -1);
    }
    return pyexp_of(c, o, ax_type_scalar(AX_BOOL), e);
}

PyObject *f_acond(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 3, 3, "acond") < 0) return NULL;
    BEGIN(args, 3)
    ax_exp e;
    if (cond_of(c, args[0], &e) < 0) goto out;
    ax_acc t = pyexp_acc_of(c, args[1]), f = t ? pyexp_acc_of(c, args[2]) : NULL;
    if (!f) goto out;
    res = pyexp_done_acc(c, ax_acond(e, t, f), "ax_acond");
    END
}

PyObject *f_awhile(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 3, 3, "awhile") < 0 || pyexp_check_callable(args[0], "awhile") < 0 ||
        pyexp_check_callable(args[1], "awhile") < 0)
        return NULL;
    BEGIN(args + 2, 1)
    ax_acc init = pyexp_acc_of(c, args[2]);
    if (!init) goto out;
    Cb b = {.c = c, .fn = args[1], .cond = args[0]};
    res = pyexp_done_acc(c, ax_awhile(pyexp_tramp_acond_, pyexp_tramp_abody, &b, init), "ax_awhile");
    END
}

PyObject *f_for_loop(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 3, 3, "for_loop") < 0 || pyexp_check_callable(args[1], "for_loop") < 0) return NULL;
    BEGIN(args + 2, 1)
    ax_acc init = pyexp_acc_of(c, args[2]);
    if (!init) goto out;
    ax_exp steps;
    if (pyexp_of(c, args[0], ax_type_scalar(AX_I64), &steps) < 0) goto out;
    Cb b = {.c = c, .fn = args[1]};
    res = pyexp_done_acc(c, ax_for(steps, pyexp_tramp_astep, &b, init), "ax_for");
    END
}

PyObject *f_atuple(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    BEGIN(args, n)
    PyObject *t = pyexp_tuple_of(args, n);
    if (!t) goto out;
    ax_acc a = pyexp_acc_of(c, t);
    Py_DECREF(t);
    if (a) res = pyexp_wrap_acc(c, a);
    END
}

/* a @ b, NumPy's matmul for vectors and matrices of one scalar type:
 * fold (+) 0 (zipWith (*) ...) over the shared dimension, the operands
 * replicated (the matrix product the README teaches; the optimiser's
 * cost model stores the transposed right operand where its reuse pays). */
static ax_acc matmul_of(ax_acc a, ax_acc b)
{
    int ra = ax_acc_rank(a), rb = ax_acc_rank(b);
    const ax_type *t = ax_acc_elem(a);
    if (ra < 1 || ra > 2 || rb < 1 || rb > 2) {
        PyErr_Format(PyExc_ValueError, "matmul: the operands have ranks %d and %d; axle's @ takes vectors and matrices",
                     ra, rb);
        return NULL;
    }
    if (!t || ax_type_kind_of(t) != AX_KIND_SCALAR || !ax_type_equal(t, ax_acc_elem(b))) {
        PyErr_SetString(PyExc_TypeError, "matmul: the operands must have one scalar element type");
        return NULL;
    }
    ax_exp zero = ax_cvt(ax_i32(0), ax_type_scalar_of(t));
    ax_exp sa = ax_shape(a), sb = ax_shape(b);
    if (ra == 1 && rb == 1) return ax_fold(ax_fn_add, NULL, zero, ax_zip_with(ax_fn_mul, NULL, a, b));
    if (ra == 2 && rb == 1) {
        /* [n, k] . [k]: each row against b */
        ax_slice s[2] = {ax_fixed(ax_index_get(sa, 0)), ax_all()};
        return ax_fold(ax_fn_add, NULL, zero, ax_zip_with(ax_fn_mul, NULL, a, ax_replicate(2, s, b)));
    }
    ax_acc bt = ax_transpose(b, NULL);   /* [m, k] */
    if (ra == 1) {
        /* [k] . [k, m]: a against each column of b */
        ax_slice s[2] = {ax_fixed(ax_index_get(sb, 1)), ax_all()};
        return ax_fold(ax_fn_add, NULL, zero, ax_zip_with(ax_fn_mul, NULL, ax_replicate(2, s, a), bt));
    }
    /* [n, k] . [k, m]: [n, m, k] products, folded along k */
    ax_slice s1[3] = {ax_all(), ax_fixed(ax_index_get(sb, 1)), ax_all()};
    ax_slice s2[3] = {ax_fixed(ax_index_get(sa, 0)), ax_all(), ax_all()};
    return ax_fold(ax_fn_add, NULL, zero, ax_zip_with(ax_fn_mul, NULL, ax_replicate(3, s1, a), ax_replicate(3, s2, bt)));
}

static PyObject *Acc_matmul(PyObject *x, PyObject *y)
{
    PyObject *args[2] = {x, y};
    BEGIN(args, 2)
    ax_acc a = pyexp_acc_of(c, x), b = a ? pyexp_acc_of(c, y) : NULL;
    if (!b) goto out;
    ax_acc r = matmul_of(a, b);
    if (r || !PyErr_Occurred()) res = pyexp_done_acc(c, r, "matmul");
    END
}
