/*
 * What the files of the extension axle._axle share (_axle.c lists them):
 * the object types, the NumPy C API (one table for every file, imported
 * by the module's init), the builders' common frame, and each file's
 * functions and tables that another uses.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AXLE_PY_AXLE_H
#define AXLE_PY_AXLE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <pythread.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL axle_py_numpy_api
/* What the files share stays inside the extension, as when it was one
 * file of statics (it exports what it did: PyInit__axle, and libaxle's
 * API): hidden, from here (the NumPy table) and from the types on. */
#pragma GCC visibility push(hidden)
extern void **axle_py_numpy_api;
#pragma GCC visibility pop
#ifndef AXLE_PY_INIT
#define NO_IMPORT_ARRAY
#endif
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

#pragma GCC visibility push(hidden)

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

extern PyTypeObject Ctx_Type, Exp_Type, Acc_Type, ArrayRef_Type, Program_Type;
extern PyObject *AxleError;

#define Exp_Check(o) PyObject_TypeCheck(o, &Exp_Type)
#define Acc_Check(o) PyObject_TypeCheck(o, &Acc_Type)
#define Ctx_Check(o) PyObject_TypeCheck(o, &Ctx_Type)

/* A callback's environment (_axle_exp.c, "callbacks"). */
typedef struct {
    CtxObject *c;
    PyObject *fn;
    const ax_type *hint;     /* for a bare number returned */
    int nsize;               /* stencils: rank and sizes of the neighbourhoods */
    int size_a[AX_MAX_RANK], size_b[AX_MAX_RANK];
    int two;                 /* stencil2 */
    PyObject *cond;          /* while loops: the condition (fn is the body) */
} Cb;

/* ------------------------------------------------------------ builders */

/* Common frame of a builder: the context of the arguments, entered. */
#define BEGIN(args, n)                                              \
    CtxObject *c = pyexp_ctx_of_args(args, n, 1);                   \
    if (!c) return NULL;                                            \
    Py_INCREF(c);                                                   \
    pyctx_enter(c, 1);                                              \
    PyObject *res = NULL;
#define END                                                         \
    goto out;                                                       \
    out:                                                            \
    pyctx_leave(c);                                                 \
    Py_DECREF(c);                                                   \
    return res;

/* ------------------------------------------------------------ _axle_ctx.c: contexts and errors */

PyObject *pyctx_raise_axle(int status, const char *msg);
PyObject *pyctx_raise(CtxObject *c, const char *fallback);
void pyctx_pending_push(CtxObject *c, int kind, void *p);
int pyctx_enter(CtxObject *c, int build);
void pyctx_leave(CtxObject *c);
double pyctx_now_s(void);
void pyctx_run_begin(CtxObject *c);
int pyctx_run_end(CtxObject *c);
PyObject *Ctx_new(PyTypeObject *type, PyObject *args, PyObject *kw);
void Ctx_dealloc(CtxObject *c);
CtxObject *pyctx_default(void);
CtxObject *pyctx_current(void);
PyObject *Ctx_enter_with(CtxObject *c, PyObject *unused);
PyObject *Ctx_exit_with(CtxObject *c, PyObject *args);
PyObject *Ctx_get_options(CtxObject *c, void *closure);
PyObject *Ctx_get_stats(CtxObject *c, void *closure);
PyObject *Ctx_repr(CtxObject *c);
PyObject *f_current(PyObject *m, PyObject *unused);
PyObject *f_default_context(PyObject *m, PyObject *unused);
PyObject *f_set_default(PyObject *m, PyObject *c);

/* ------------------------------------------------------------ _axle_array.c: element types, NumPy arrays in and out */

int pyarr_scalar_of_descr(PyArray_Descr *d);
int pyarr_npy_of_scalar(ax_scalar s);
int pyarr_scalar_of_obj(PyObject *o);
const ax_type *pyarr_type_of_obj(CtxObject *c, PyObject *o);
PyObject *pyarr_py_of_type(const ax_type *t);
PyObject *pyarr_type_str(const ax_type *t);
ax_array *pyarr_wrap(CtxObject *c, PyObject *obj, PyObject **keep);
void pyarr_touch_borrowed(CtxObject *c);
ax_acc pyarr_use(CtxObject *c, PyObject *obj);
void ArrayRef_dealloc(ArrayRefObject *r);
PyObject *pyarr_results_of(CtxObject *c, const ax_type *t, ax_array **out, int n, int *pos, PyObject *(*alias)(void *, ax_array *), void *aenv);
PyObject *pyarr_alias_borrowed(void *env, ax_array *a);

/* ------------------------------------------------------------ _axle_exp.c: terms, Exp, callbacks, the scalar builders */

PyObject *pyexp_wrap_acc(CtxObject *c, ax_acc a);
void Exp_dealloc(ExpObject *x);
void Acc_dealloc(AccObject *x);
PyObject *pyexp_done(CtxObject *c, ax_exp r, const char *op);
PyObject *pyexp_done_acc(CtxObject *c, ax_acc r, const char *op);
int pyexp_is_float(int s);
int pyexp_of(CtxObject *c, PyObject *o, const ax_type *hint, ax_exp *out);
CtxObject *pyexp_ctx_of_args(PyObject *const *args, Py_ssize_t n, int need);
PyObject *pyexp_tuple_of(PyObject *const *args, Py_ssize_t n);
PyObject *Exp_richcompare(PyObject *a, PyObject *b, int op);
PyObject *Exp_repr(ExpObject *x);
extern PyNumberMethods Exp_as_number;
extern PySequenceMethods Exp_as_sequence;
extern PyMethodDef Exp_methods[];
extern PyGetSetDef Exp_getset[];
ax_exp pyexp_invalid(void);
ax_exp pyexp_tramp1(ax_exp x, void *env);
ax_exp pyexp_tramp2(ax_exp x, ax_exp y, void *env);
ax_exp pyexp_tramp3(ax_exp x, ax_exp y, ax_exp z, void *env);
ax_exp pyexp_tramp_stencil(const ax_exp *xs, void *env);
ax_exp pyexp_tramp_stencil_ix(ax_exp ix, const ax_exp *xs, void *env);
ax_acc pyexp_tramp_acond_(ax_acc x, void *env);
ax_acc pyexp_tramp_abody(ax_acc x, void *env);
ax_acc pyexp_tramp_astep(ax_exp step, ax_acc x, void *env);
int pyexp_check_callable(PyObject *f, const char *op);
ax_acc pyexp_acc_of(CtxObject *c, PyObject *o);
int pyexp_nargs_check(Py_ssize_t n, Py_ssize_t lo, Py_ssize_t hi, const char *name);
PyObject *f_where(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_while_loop(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_tuple(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_index(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_ignore(PyObject *m, PyObject *arg);
PyObject *f_at(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_at_linear(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_shape(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_size(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_prim(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_prim_names(PyObject *m, PyObject *unused);
PyObject *f_const(PyObject *m, PyObject *const *args, Py_ssize_t n);

/* ------------------------------------------------------------ _axle_acc.c: Acc and the array builders */

PyObject *Acc_repr(AccObject *a);
PyObject *pyacc_run_accs(CtxObject *c, PyObject *const *objs, Py_ssize_t n, int single);
PyObject *Acc_str(AccObject *a);
extern PyNumberMethods Acc_as_number;
extern PyMappingMethods Acc_as_mapping;
extern PySequenceMethods Acc_as_sequence;
extern PyMethodDef Acc_methods[];
extern PyGetSetDef Acc_getset[];
PyObject *f_use(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_unit(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_generate(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_map(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_zip_with(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_scanl_ex(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_scanr_ex(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_fold_seg(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_fold1_seg(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_scanl_seg(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_scanl1_seg(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_scanr_seg(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_scanr1_seg(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_scanl_ex_seg(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_scanr_ex_seg(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_backpermute(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_permute(PyObject *m, PyObject *const *args, Py_ssize_t n);
extern PyObject *pyacc_ALL_obj;
PyObject *f_replicate(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_slice(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_reshape(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_flatten(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_transpose(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_filter(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_stencil(PyObject *m, PyObject *args, PyObject *kw);
PyObject *f_stencil2(PyObject *m, PyObject *args, PyObject *kw);
PyObject *f_acond(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_sort(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_sort_by(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_group_by(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_reduce_by_key(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_compute(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_for_loop(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_awhile(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_atuple(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_fold(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_fold_all(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_scanl(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_scanr(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_fold1(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_scanl1(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *f_scanr1(PyObject *m, PyObject *const *a, Py_ssize_t n);

/* ------------------------------------------------------------ _axle_program.c: running, parameters, programs, signatures */

PyObject *f_run(PyObject *m, PyObject *const *args, Py_ssize_t n);
PyObject *f_dump(PyObject *m, PyObject *args, PyObject *kw);
PyObject *Ctx_param(CtxObject *c, PyObject *args);
PyObject *Ctx_param_exp(CtxObject *c, PyObject *args);
PyObject *f_weak(PyObject *m, PyObject *args);
PyObject *Ctx_compile(CtxObject *c, PyObject *args);
PyObject *Ctx_load(CtxObject *c, PyObject *args);
PyObject *Program_save(ProgramObject *p, PyObject *args);
extern PyMethodDef Program_methods[];
void Program_dealloc(ProgramObject *p);
extern PyGetSetDef Program_getset[];
PyObject *f_signature(PyObject *m, PyObject *const *argv, Py_ssize_t nargv);
PyObject *f_c_loop(PyObject *m, PyObject *args);

/* ------------------------------------------------------------ _axle.c: the types */

extern PyTypeObject Ctx_Type;
extern PyTypeObject Exp_Type;
extern PyTypeObject Acc_Type;
extern PyTypeObject ArrayRef_Type;
extern PyTypeObject Program_Type;

#pragma GCC visibility pop

#endif
