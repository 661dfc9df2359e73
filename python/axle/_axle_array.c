/*
 * axle._axle: arrays and NumPy: element types (NumPy dtypes and axle's
 * scalar types, types as strings), NumPy arrays wrapped for ax_use without
 * copying, results handed to NumPy without copying (ArrayRef, the base
 * object that holds the ax_array).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "_axle.h"
#include <string.h>

/* --------------------------------------------------------- element types */

/* The ax_scalar of a NumPy dtype, or -1 (no exception set). */
int pyarr_scalar_of_descr(PyArray_Descr *d)
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

int pyarr_npy_of_scalar(ax_scalar s)
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
int pyarr_scalar_of_obj(PyObject *o)
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
    int s = pyarr_scalar_of_descr(d);
    Py_DECREF(d);
    if (s < 0) PyErr_Format(PyExc_TypeError, "axle has no element type for %R (it has bool, int8..int64, "
                            "uint8..uint64, float32, float64)", o);
    return s;
}

/* A dtype-like or a tuple of them to an element type. */
const ax_type *pyarr_type_of_obj(CtxObject *c, PyObject *o)
{
    if (PyTuple_Check(o)) {
        Py_ssize_t n = PyTuple_GET_SIZE(o);
        if (n > 64) { PyErr_SetString(PyExc_ValueError, "a tuple type of more than 64 components"); return NULL; }
        const ax_type *el[64];
        for (Py_ssize_t i = 0; i < n; i++)
            if (!(el[i] = pyarr_type_of_obj(c, PyTuple_GET_ITEM(o, i)))) return NULL;
        const ax_type *t = ax_type_tuple(c->cx, (int)n, el);
        if (!t) return (const ax_type *)pyctx_raise(c, "ax_type_tuple failed");
        return t;
    }
    int s = pyarr_scalar_of_obj(o);
    return s < 0 ? NULL : ax_type_scalar((ax_scalar)s);
}

/* An element type to Python: a NumPy dtype, a tuple of them, or for an
 * index of rank r a tuple of r int64 dtypes. */
PyObject *pyarr_py_of_type(const ax_type *t)
{
    switch (ax_type_kind_of(t)) {
    case AX_KIND_SCALAR: return (PyObject *)PyArray_DescrFromType(pyarr_npy_of_scalar(ax_type_scalar_of(t)));
    case AX_KIND_TUPLE: {
        int n = ax_type_arity(t);
        PyObject *r = PyTuple_New(n);
        for (int i = 0; r && i < n; i++) {
            PyObject *x = pyarr_py_of_type(ax_type_elem(t, i));
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

PyObject *pyarr_type_str(const ax_type *t)
{
    char buf[512];
    return PyUnicode_FromString(t ? ax_type_str(t, buf, sizeof buf) : "invalid");
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
        if (!t) return (const ax_type *)pyctx_raise(c, "ax_type_tuple failed");
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
    int s = pyarr_scalar_of_descr(PyArray_DESCR(a));
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
ax_array *pyarr_wrap(CtxObject *c, PyObject *obj, PyObject **keep)
{
    /* fast path: one C-contiguous native NumPy array */
    if (PyArray_Check(obj)) {
        PyArrayObject *a = (PyArrayObject *)obj;
        int s = pyarr_scalar_of_descr(PyArray_DESCR(a));
        if (s >= 0 && PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISALIGNED(a) && PyArray_NDIM(a) <= AX_MAX_RANK) {
            int64_t shape[AX_MAX_RANK];
            for (int d = 0; d < PyArray_NDIM(a); d++) shape[d] = PyArray_DIM(a, d);
            ax_array *r = ax_array_wrap(c->cx, (ax_scalar)s, PyArray_NDIM(a), shape, PyArray_DATA(a));
            if (!r) return (ax_array *)pyctx_raise(c, "ax_array_wrap failed");
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
    if (!r) { Py_DECREF(leaves); return (ax_array *)pyctx_raise(c, "ax_array_wrap failed"); }
    *keep = leaves;
    return r;
}

/* ax_use of an array-like; the borrowed object is kept until the next
 * reset.  Called inside an operation (ctx entered). */
ax_acc pyarr_use(CtxObject *c, PyObject *obj)
{
    PyObject *keep = NULL;
    ax_array *a = pyarr_wrap(c, obj, &keep);
    if (!a) return NULL;
    ax_acc u = ax_use(c->cx, a);
    if (u) {
        PyObject *k = PyLong_FromVoidPtr(a);
        if (!k || PyDict_SetItem(c->borrowed, k, keep) < 0) u = NULL;
        Py_XDECREF(k);
    }
    ax_array_release(a);
    Py_DECREF(keep);
    if (!u && !PyErr_Occurred()) pyctx_raise(c, "ax_use failed");
    return u;
}

/* Before a run: every array given to `use` may have been written since
 * the last run (NumPy arrays are mutable, and axle reads an input when
 * the program runs).  On a GPU backend its device copy would be reused;
 * ax_array_data marks that copy out of date, so the run uploads the
 * array again (the C API's rule for wrapped memory, axle.h).  On the CPU
 * it costs a lookup per array. */
void pyarr_touch_borrowed(CtxObject *c)
{
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(c->borrowed, &pos, &k, &v)) {
        ax_array *a = PyLong_AsVoidPtr(k);
        if (a) (void)ax_array_data(a, 0);
    }
    PyErr_Clear();
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

void ArrayRef_dealloc(ArrayRefObject *r)
{
    CtxObject *c = r->c;
    if (c->depth == 0) ax_array_release(r->a);
    else pyctx_pending_push(c, 0, r->a);
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
    int tn = pyarr_npy_of_scalar(ax_array_component_type(a, k));
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
            return pyctx_raise(c, "reading a result failed");
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
PyObject *pyarr_results_of(CtxObject *c, const ax_type *t, ax_array **out, int n, int *pos, PyObject *(*alias)(void *, ax_array *), void *aenv)
{
    if (ax_type_kind_of(t) == AX_KIND_ARRAYS) {
        int m = ax_type_arity(t);
        PyObject *r = PyTuple_New(m);
        if (!r) return NULL;
        for (int i = 0; i < m; i++) {
            PyObject *x = pyarr_results_of(c, ax_type_elem(t, i), out, n, pos, alias, aenv);
            if (!x) { Py_DECREF(r); return NULL; }
            PyTuple_SET_ITEM(r, i, x);
        }
        return r;
    }
    if (*pos >= n) return pyctx_raise_axle(AX_ERR_BACKEND, "fewer results than the type says");
    ax_array *a = out[*pos];
    out[*pos] = NULL;
    ++*pos;
    return numpy_of(c, a, alias ? alias(aenv, a) : NULL);
}

PyObject *pyarr_alias_borrowed(void *env, ax_array *a)
{
    CtxObject *c = env;
    PyObject *k = PyLong_FromVoidPtr(a);
    if (!k) return NULL;
    PyObject *v = PyDict_GetItem(c->borrowed, k);
    Py_DECREF(k);
    return v;
}
