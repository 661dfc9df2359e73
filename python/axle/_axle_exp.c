/*
 * axle._axle: expressions: the Python objects that hold terms (Exp, Acc:
 * made, counted live on their context, freed), Python values made terms
 * (numbers, tuples, arrays), Exp with the number protocol, the callback
 * trampolines that call a Python function once with fresh variables
 * (HOAS), and the scalar builders (where, while_loop, tuple, index, at,
 * shape, the primitives by name, const).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "_axle.h"
#include <math.h>
#include <string.h>

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

PyObject *pyexp_wrap_acc(CtxObject *c, ax_acc a)
{
    AccObject *x = PyObject_New(AccObject, &Acc_Type);
    if (!x) return NULL;
    x->a = a;
    x->c = c;
    Py_INCREF(c);
    c->live++;
    return (PyObject *)x;
}

void Exp_dealloc(ExpObject *x)
{
    if (x->c) {
        x->c->live--;
        Py_DECREF(x->c);
    }
    Py_XDECREF(x->weak);
    PyObject_Free(x);
}

void Acc_dealloc(AccObject *x)
{
    x->c->live--;
    Py_DECREF(x->c);
    PyObject_Free(x);
}

/* A checked Exp result of a builder. */
PyObject *pyexp_done(CtxObject *c, ax_exp r, const char *op)
{
    if (PyErr_Occurred() || !ax_exp_ok(r)) {
        if (!c && !PyErr_Occurred()) {
            /* a context-free constant expression failed: report it through
             * the default context to get axle's message */
            CtxObject *d = pyctx_default();
            if (d) {
                pyctx_enter(d, 1);
                (void)ax_const(d->cx, r);
                pyctx_raise(d, op);
                pyctx_leave(d);
                return NULL;
            }
        }
        return pyctx_raise(c, op);
    }
    return wrap_exp(c, r);
}

PyObject *pyexp_done_acc(CtxObject *c, ax_acc r, const char *op)
{
    if (PyErr_Occurred() || !r) return pyctx_raise(c, op);
    return pyexp_wrap_acc(c, r);
}

/* ---------------------------------------------------- scalars to terms */

static PyObject *materialise(ExpObject *w, const ax_type *hint);

/* The scalar hint of a type, or -1. */
static int hint_scalar(const ax_type *t)
{
    return ax_type_kind_of(t) == AX_KIND_SCALAR ? (int)ax_type_scalar_of(t) : -1;
}

int pyexp_is_float(int s) { return s == AX_F32 || s == AX_F64; }

static int const_of_int(PyObject *o, int s, ax_exp *out)
{
    if (s < 0) s = AX_I64;
    if (s == AX_BOOL) {
        PyErr_SetString(PyExc_TypeError, "an integer where a bool is expected");
        return -1;
    }
    if (pyexp_is_float(s)) {
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
        if (pyexp_of(c, PyTuple_GET_ITEM(o, i), h, &comps[i]) < 0) return -1;
    }
    *out = idx ? ax_index((int)n, comps) : ax_tuple((int)n, comps);
    if (!ax_exp_ok(*out) && c) {
        /* a constant tuple nested in a constant tuple: make the parts terms */
        for (Py_ssize_t i = 0; i < n; i++) comps[i] = ax_const(c->cx, comps[i]);
        *out = idx ? ax_index((int)n, comps) : ax_tuple((int)n, comps);
    }
    if (!ax_exp_ok(*out)) {
        pyctx_raise(c, idx ? "ax_index: invalid components" : "ax_tuple: invalid components");
        return -1;
    }
    return 0;
}

/* Converts a Python value to an expression of context c (may be NULL for
 * constants), typed after hint when it is a bare number. */
int pyexp_of(CtxObject *c, PyObject *o, const ax_type *hint, ax_exp *out)
{
    if (Exp_Check(o)) {
        ExpObject *x = (ExpObject *)o;
        if (x->weak) {
            PyObject *m = materialise(x, hint);
            if (!m) return -1;
            int rc = pyexp_of(c, m, hint, out);
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
        if (hs >= 0 && !pyexp_is_float(hs)) {
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
        int s = d ? pyarr_scalar_of_descr(d) : -1;
        Py_XDECREF(d);
        if (s < 0) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "axle has no element type for %R", o);
            return -1;
        }
        char buf[16] = {0};
        PyArray_Descr *dd = PyArray_DescrFromType(pyarr_npy_of_scalar((ax_scalar)s));
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
CtxObject *pyexp_ctx_of_args(PyObject *const *args, Py_ssize_t n, int need)
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
    if (!c && need) c = pyctx_current();
    return c;
}

PyObject *pyexp_tuple_of(PyObject *const *args, Py_ssize_t n)
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
        int s = d ? pyarr_scalar_of_descr(d) : -1;
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
    CtxObject *c = pyexp_ctx_of_args(args, 2, 0);
    if (!c && PyErr_Occurred()) return NULL;
    const ax_type *ha = hint_of(a), *hb = hint_of(b);
    if (c && pyctx_enter(c, 1) < 0) return NULL;
    ax_exp x, y;
    PyObject *r = NULL;
    /* the typed side first, so that a weak parameter or a number takes its
     * type; between two untyped ones, a weak parameter or a float first */
    int afirst = ha || (!hb && !(PyFloat_Check(b) || (Exp_Check(b) && ((ExpObject *)b)->weak)));
    if (afirst) {
        if (pyexp_of(c, a, hb, &x) < 0) goto out;
        if (pyexp_of(c, b, ha ? ha : ax_exp_type(x), &y) < 0) goto out;
    } else {
        if (pyexp_of(c, b, ha, &y) < 0) goto out;
        if (pyexp_of(c, a, hb, &x) < 0) goto out;
    }
    r = pyexp_done(c, f(x, y), name);
out:
    if (c) pyctx_leave(c);
    return r;
}

static PyObject *apply1(Fn1 f, PyObject *a, const char *name)
{
    CtxObject *c = pyexp_ctx_of_args(&a, 1, 0);
    if (!c && PyErr_Occurred()) return NULL;
    if (c && pyctx_enter(c, 1) < 0) return NULL;
    ax_exp x;
    PyObject *r = NULL;
    if (pyexp_of(c, a, NULL, &x) == 0) r = pyexp_done(c, f(x), name);
    if (c) pyctx_leave(c);
    return r;
}

static PyObject *not_operand(PyObject *a, PyObject *b)
{
    if (PyArray_Check(a) || PyArray_Check(b) || Acc_Check(a) || Acc_Check(b)) {
        ax_exp e;
        (void)pyexp_of(NULL, PyArray_Check(a) || Acc_Check(a) ? a : b, NULL, &e);
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
    return pyexp_is_float(hint_scalar(ax_exp_type(a))) ? float_floordiv(a, b) : ax_idiv(a, b);
}
static ax_exp py_mod(ax_exp a, ax_exp b) { return pyexp_is_float(hint_scalar(ax_exp_type(a))) ? float_mod(a, b) : ax_mod(a, b); }
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

PyObject *Exp_richcompare(PyObject *a, PyObject *b, int op)
{
    if (!is_exp_operand(a) || !is_exp_operand(b)) Py_RETURN_NOTIMPLEMENTED;
    static const Fn2 fns[] = {ax_lt, ax_le, ax_eq, ax_ne, ax_gt, ax_ge};
    static const char *const names[] = {"lt", "le", "eq", "ne", "gt", "ge"};
    return apply2(fns[op], a, b, names[op]);
}

static PyObject *Exp_get_type(ExpObject *x, void *closure)
{
    if (x->weak) return PyUnicode_FromString("weak");
    return pyarr_type_str(ax_exp_type(x->e));
}

static PyObject *Exp_get_dtype(ExpObject *x, void *closure)
{
    if (x->weak) Py_RETURN_NONE;
    return pyarr_py_of_type(ax_exp_type(x->e));
}

PyObject *Exp_repr(ExpObject *x)
{
    if (x->weak) return PyUnicode_FromString("axle.Exp(<a number argument>)");
    char buf[256];
    const ax_type *t = ax_exp_type(x->e);
    return PyUnicode_FromFormat("axle.Exp(%s%s)", t ? ax_type_str(t, buf, sizeof buf) : "tuple",
                                x->c ? "" : ", constant");
}

static PyObject *Exp_astype(ExpObject *x, PyObject *dt)
{
    int s = pyarr_scalar_of_obj(dt);
    if (s < 0) return NULL;
    PyObject *a = (PyObject *)x;
    CtxObject *c = pyexp_ctx_of_args(&a, 1, 0);
    if (c) pyctx_enter(c, 1);
    ax_exp e;
    PyObject *r = NULL;
    if (pyexp_of(c, a, NULL, &e) == 0) r = pyexp_done(c, ax_cvt(e, (ax_scalar)s), "astype");
    if (c) pyctx_leave(c);
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
    if (c) pyctx_enter(c, 1);
    PyObject *r = pyexp_done(c, ax_get(x->e, (int)i), "ax_get");
    if (c) pyctx_leave(c);
    return r;
}

PyNumberMethods Exp_as_number = {
    .nb_add = Exp_add, .nb_subtract = Exp_sub, .nb_multiply = Exp_mul, .nb_true_divide = Exp_truediv,
    .nb_floor_divide = Exp_floordiv, .nb_remainder = Exp_mod, .nb_power = Exp_pow, .nb_negative = Exp_neg,
    .nb_positive = Exp_pos, .nb_absolute = Exp_abs, .nb_invert = Exp_invert, .nb_and = Exp_and,
    .nb_or = Exp_or, .nb_xor = Exp_xor, .nb_lshift = Exp_lshift, .nb_rshift = Exp_rshift, .nb_bool = Exp_bool,
};

PySequenceMethods Exp_as_sequence = {
    .sq_length = (lenfunc)Exp_len, .sq_item = (ssizeargfunc)Exp_item,
};

PyMethodDef Exp_methods[] = {
    {"astype", (PyCFunction)Exp_astype, METH_O, "The expression converted to another scalar type (ax_cvt)."},
    {NULL}
};

PyGetSetDef Exp_getset[] = {
    {"type", (getter)Exp_get_type, NULL, "axle's name of the type", NULL},
    {"dtype", (getter)Exp_get_dtype, NULL, "the NumPy dtype (a tuple of them for a tuple)", NULL},
    {NULL}
};

/* ------------------------------------------------------ callbacks */

ax_exp pyexp_invalid(void)
{
    ax_exp e;
    memset(&e, 0, sizeof e);
    return e;
}

static ax_exp cb_result(Cb *b, PyObject *r, const ax_type *hint)
{
    ax_exp e;
    if (!r) return pyexp_invalid();
    int rc = pyexp_of(b->c, r, hint, &e);
    Py_DECREF(r);
    return rc < 0 ? pyexp_invalid() : e;
}

ax_exp pyexp_tramp1(ax_exp x, void *env)
{
    Cb *b = env;
    if (PyErr_Occurred()) return pyexp_invalid();
    PyObject *a = wrap_exp(b->c, x);
    if (!a) return pyexp_invalid();
    PyObject *r = PyObject_CallOneArg(b->fn, a);
    Py_DECREF(a);
    return cb_result(b, r, b->hint);
}

ax_exp pyexp_tramp2(ax_exp x, ax_exp y, void *env)
{
    Cb *b = env;
    if (PyErr_Occurred()) return pyexp_invalid();
    PyObject *args[2] = {wrap_exp(b->c, x), wrap_exp(b->c, y)};
    PyObject *r = NULL;
    if (args[0] && args[1]) r = PyObject_Vectorcall(b->fn, args, 2, NULL);
    Py_XDECREF(args[0]);
    Py_XDECREF(args[1]);
    return cb_result(b, r, b->hint);
}

ax_exp pyexp_tramp3(ax_exp x, ax_exp y, ax_exp z, void *env)
{
    Cb *b = env;
    if (PyErr_Occurred()) return pyexp_invalid();
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
    if (PyErr_Occurred()) return pyexp_invalid();
    PyObject *a = wrap_exp(b->c, x);
    if (!a) return pyexp_invalid();
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

/* f(neighbourhood[, neighbourhood of b][, ix]): ix (the element's index)
 * for the stencils made with index=True. */
static ax_exp tramp_stencil(const ax_exp *xs, const ax_exp *ix, Cb *b)
{
    if (PyErr_Occurred()) return pyexp_invalid();
    int pos = 0, n = 0;
    PyObject *args[3] = {NULL, NULL, NULL}, *r = NULL;
    if ((args[n] = neighbourhood(b->c, xs, b->size_a, b->nsize, &pos))) n++;
    if (n == 1 && b->two && (args[n] = neighbourhood(b->c, xs, b->size_b, b->nsize, &pos))) n++;
    if (n == 1 + b->two && ix && (args[n] = wrap_exp(b->c, *ix))) n++;
    if (n == 1 + b->two + (ix != NULL)) r = PyObject_Vectorcall(b->fn, args, (size_t)n, NULL);
    for (int i = 0; i < n; i++) Py_DECREF(args[i]);
    return cb_result(b, r, b->hint);
}

ax_exp pyexp_tramp_stencil(const ax_exp *xs, void *env) { return tramp_stencil(xs, NULL, env); }
ax_exp pyexp_tramp_stencil_ix(ax_exp ix, const ax_exp *xs, void *env) { return tramp_stencil(xs, &ix, env); }

static ax_acc tramp_afn(ax_acc x, void *env, PyObject *fn)
{
    Cb *b = env;
    if (PyErr_Occurred()) return NULL;
    PyObject *a = pyexp_wrap_acc(b->c, x);
    if (!a) return NULL;
    PyObject *r = PyObject_CallOneArg(fn, a);
    Py_DECREF(a);
    if (!r) return NULL;
    ax_acc res = pyexp_acc_of(b->c, r);
    Py_DECREF(r);
    return res;
}
ax_acc pyexp_tramp_acond_(ax_acc x, void *env) { return tramp_afn(x, env, ((Cb *)env)->cond); }
ax_acc pyexp_tramp_abody(ax_acc x, void *env) { return tramp_afn(x, env, ((Cb *)env)->fn); }

/* for_loop's body: fn(step, x). */
ax_acc pyexp_tramp_astep(ax_exp step, ax_acc x, void *env)
{
    Cb *b = env;
    if (PyErr_Occurred()) return NULL;
    PyObject *args[2] = {wrap_exp(b->c, step), NULL};
    if (args[0]) args[1] = pyexp_wrap_acc(b->c, x);
    PyObject *r = args[1] ? PyObject_Vectorcall(b->fn, args, 2, NULL) : NULL;
    Py_XDECREF(args[0]);
    Py_XDECREF(args[1]);
    if (!r) return NULL;
    ax_acc res = pyexp_acc_of(b->c, r);
    Py_DECREF(r);
    return res;
}

int pyexp_check_callable(PyObject *f, const char *op)
{
    if (!PyCallable_Check(f)) {
        PyErr_Format(PyExc_TypeError, "%s: the function is not callable (%.80s)", op, Py_TYPE(f)->tp_name);
        return -1;
    }
    return 0;
}

/* An array computation from a Python value: an Acc, a NumPy array (or
 * array-like: ax_use, borrowed), a tuple (an array tuple of its parts),
 * an expression or number (a unit). */
ax_acc pyexp_acc_of(CtxObject *c, PyObject *o)
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
            if (!(parts[i] = pyexp_acc_of(c, PyTuple_GET_ITEM(o, i)))) return NULL;
        ax_acc r = ax_atuple((int)n, parts);
        if (!r) pyctx_raise(c, "ax_atuple failed");
        return r;
    }
    if (Exp_Check(o) || PyFloat_Check(o) || PyLong_Check(o) || PyArray_IsScalar(o, Generic)) {
        ax_exp e;
        if (pyexp_of(c, o, NULL, &e) < 0) return NULL;
        ax_acc r = ax_unit(c->cx, e);
        if (!r) pyctx_raise(c, "ax_unit failed");
        return r;
    }
    return pyarr_use(c, o);
}

int pyexp_nargs_check(Py_ssize_t n, Py_ssize_t lo, Py_ssize_t hi, const char *name)
{
    if (n < lo || n > hi) {
        if (lo == hi) PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", name, lo, n);
        else PyErr_Format(PyExc_TypeError, "%s() takes %zd to %zd arguments (%zd given)", name, lo, hi, n);
        return -1;
    }
    return 0;
}

/* --- scalar builders */

PyObject *f_where(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 3, 3, "where") < 0) return NULL;
    CtxObject *c = pyexp_ctx_of_args(args, 3, 0);
    if (!c && PyErr_Occurred()) return NULL;
    if (c) pyctx_enter(c, 1);
    ax_exp x, t, e;
    PyObject *res = NULL;
    const ax_type *ht = hint_of(args[1]), *he = hint_of(args[2]);
    if (pyexp_of(c, args[0], ax_type_scalar(AX_BOOL), &x) < 0) goto out;
    if (ht || !he) {
        if (pyexp_of(c, args[1], he, &t) < 0 || pyexp_of(c, args[2], ht ? ht : ax_exp_type(t), &e) < 0) goto out;
    } else {
        if (pyexp_of(c, args[2], ht, &e) < 0 || pyexp_of(c, args[1], he, &t) < 0) goto out;
    }
    res = pyexp_done(c, ax_cond(x, t, e), "ax_cond");
out:
    if (c) pyctx_leave(c);
    return res;
}

PyObject *f_while_loop(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 3, 3, "while_loop") < 0 || pyexp_check_callable(args[0], "while_loop") < 0 ||
        pyexp_check_callable(args[1], "while_loop") < 0)
        return NULL;
    BEGIN(args + 2, 1)
    ax_exp init;
    if (pyexp_of(c, args[2], NULL, &init) < 0) goto out;
    if (!ax_exp_ctx(init)) init = ax_const(c->cx, init);
    Cb b = {.c = c, .fn = args[1], .cond = args[0], .hint = ax_exp_type(init)};
    res = pyexp_done(c, ax_while(tramp_cond, pyexp_tramp1, &b, init), "ax_while");
    END
}

PyObject *f_tuple(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    CtxObject *c = pyexp_ctx_of_args(args, n, 0);
    if (!c && PyErr_Occurred()) return NULL;
    if (c) pyctx_enter(c, 1);
    PyObject *res = NULL, *t = pyexp_tuple_of(args, n);
    ax_exp e;
    if (t && tuple_exp(c, t, NULL, &e) == 0) res = pyexp_done(c, e, "ax_tuple");
    Py_XDECREF(t);
    if (c) pyctx_leave(c);
    return res;
}

PyObject *f_index(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (n > AX_MAX_RANK) { PyErr_Format(PyExc_ValueError, "an index of rank %zd (at most %d)", n, AX_MAX_RANK); return NULL; }
    CtxObject *c = pyexp_ctx_of_args(args, n, 0);
    if (!c && PyErr_Occurred()) return NULL;
    if (c) pyctx_enter(c, 1);
    PyObject *res = NULL;
    ax_exp comps[AX_MAX_RANK];
    for (Py_ssize_t i = 0; i < n; i++)
        if (pyexp_of(c, args[i], ax_type_scalar(AX_I64), &comps[i]) < 0) goto out;
    res = pyexp_done(c, ax_index((int)n, comps), "ax_index");
out:
    if (c) pyctx_leave(c);
    return res;
}

PyObject *f_ignore(PyObject *m, PyObject *arg)
{
    long r = PyLong_AsLong(arg);
    if (r == -1 && PyErr_Occurred()) return NULL;
    return pyexp_done(NULL, ax_ignore((int)r), "ax_ignore");
}

/* Reading arrays: at(a, ix), at_linear(a, i), shape(a), size(a). */
PyObject *f_at(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 2, 2, "at") < 0) return NULL;
    BEGIN(args, 2)
    ax_acc a = pyexp_acc_of(c, args[0]);
    if (!a) goto out;
    ax_exp ix;
    int r = ax_acc_rank(a);
    if (pyexp_of(c, args[1], r >= 0 ? ax_type_index(c->cx, r) : NULL, &ix) < 0) goto out;
    res = pyexp_done(c, ax_at(a, ix), "ax_at");
    END
}

PyObject *f_at_linear(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 2, 2, "at_linear") < 0) return NULL;
    BEGIN(args, 2)
    ax_acc a = pyexp_acc_of(c, args[0]);
    if (!a) goto out;
    ax_exp i;
    if (pyexp_of(c, args[1], ax_type_scalar(AX_I64), &i) < 0) goto out;
    res = pyexp_done(c, ax_at_linear(a, i), "ax_at_linear");
    END
}

PyObject *f_shape(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 1, 1, "shape") < 0) return NULL;
    BEGIN(args, 1)
    ax_acc a = pyexp_acc_of(c, args[0]);
    if (a) res = pyexp_done(c, ax_shape(a), "ax_shape");
    END
}

PyObject *f_size(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 1, 1, "size") < 0) return NULL;
    BEGIN(args, 1)
    ax_acc a = pyexp_acc_of(c, args[0]);
    if (a) res = pyexp_done(c, ax_size(a), "ax_size");
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

PyObject *f_prim(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    /* args[0]: the table index (bound by the Python layer) */
    long k = PyLong_AsLong(args[0]);
    if (k < 0 || k >= (long)(sizeof prims / sizeof *prims) - 1) { PyErr_SetString(PyExc_ValueError, "prim"); return NULL; }
    const Prim *p = &prims[k];
    args++, n--;
    if (p->f1) {
        if (pyexp_nargs_check(n, 1, 1, p->name) < 0) return NULL;
        return apply1(p->f1, args[0], p->name);
    }
    if (p->f2) {
        if (pyexp_nargs_check(n, 2, 2, p->name) < 0) return NULL;
        return apply2(p->f2, args[0], args[1], p->name);
    }
    if (pyexp_nargs_check(n, 1, 2, p->name) < 0) return NULL;
    CtxObject *c = pyexp_ctx_of_args(args, 1, 0);
    if (!c && PyErr_Occurred()) return NULL;
    if (c) pyctx_enter(c, 1);
    PyObject *res = NULL;
    ax_exp x;
    if (pyexp_of(c, args[0], NULL, &x) < 0) goto out;
    int to;
    if (n == 2 && args[1] != Py_None) to = pyarr_scalar_of_obj(args[1]);
    else {
        to = hint_scalar(ax_exp_type(x));
        if (p->fr == ax_cvt || p->fr == ax_bitcast) {
            PyErr_Format(PyExc_TypeError, "%s: the type to convert to is needed", p->name);
            goto out;
        }
        if (to < 0) { PyErr_Format(PyExc_TypeError, "%s: a scalar expression", p->name); goto out; }
    }
    if (to < 0) goto out;
    res = pyexp_done(c, p->fr(x, (ax_scalar)to), p->name);
out:
    if (c) pyctx_leave(c);
    return res;
}

PyObject *f_prim_names(PyObject *m, PyObject *unused)
{
    PyObject *l = PyList_New(0);
    for (int i = 0; l && prims[i].name; i++) {
        PyObject *s = Py_BuildValue("(si)", prims[i].name, prims[i].f1 ? 1 : prims[i].f2 ? 2 : 0);
        if (!s || PyList_Append(l, s) < 0) { Py_XDECREF(s); Py_DECREF(l); return NULL; }
        Py_DECREF(s);
    }
    return l;
}

PyObject *f_const(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (pyexp_nargs_check(n, 2, 2, "const") < 0) return NULL;
    int s = pyarr_scalar_of_obj(args[1]);
    if (s < 0) return NULL;
    ax_exp e;
    PyObject *v = args[0];
    if (PyBool_Check(v) || PyLong_Check(v)) {
        if (s == AX_BOOL) e = ax_bool(PyObject_IsTrue(v));
        else if (const_of_int(v, s, &e) < 0) return NULL;
    } else {
        double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) return NULL;
        if (pyexp_is_float(s)) e = ax_constf((ax_scalar)s, d);
        else if (s == AX_BOOL) e = ax_bool(d != 0);
        else {
            if (d != d || isinf(d) || d != floor(d)) {
                PyErr_Format(PyExc_ValueError, "%R is not a value of %s", v, ax_scalar_name((ax_scalar)s));
                return NULL;
            }
            e = ax_constf((ax_scalar)s, d);
        }
    }
    return pyexp_done(NULL, e, "const");
}
