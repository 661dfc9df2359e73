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
 * The files (one extension; _axle.h is what they share):
 *   _axle.c          the module: its functions table, the types, the
 *                    init; the disk cache's functions
 *   _axle_program.c  running, parameters, programs, the jit's signatures
 *   _axle_acc.c      Acc and the array operations' builders
 *   _axle_exp.c      the objects holding terms, Python values made terms,
 *                    Exp, callbacks, the scalar builders
 *   _axle_array.c    element types, NumPy arrays in and out
 *   _axle_ctx.c      contexts and errors
 * Each calls only those below it (and the types and tables of _axle.c).
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
#define AXLE_PY_INIT   /* this file imports NumPy's C API for all (_axle.h) */
#include "_axle.h"
#include <string.h>

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

/* ------------------------------------------------------- types, module */

static PyMethodDef Ctx_methods[] = {
    {"__enter__", (PyCFunction)Ctx_enter_with, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Ctx_exit_with, METH_VARARGS, NULL},
    {"param", (PyCFunction)Ctx_param, METH_VARARGS, "param(index, dtype, rank): an array parameter (ax_param)."},
    {"param_exp", (PyCFunction)Ctx_param_exp, METH_VARARGS, "param_exp(index, dtype): a scalar parameter."},
    {"compile", (PyCFunction)Ctx_compile, METH_VARARGS, "compile(acc, plan): a Program."},
    {"load", (PyCFunction)Ctx_load, METH_VARARGS,
     "load(data, plan): the Program of a saved program's bytes (ax_program_load_mem)."},
    {NULL}
};

static PyGetSetDef Ctx_getset[] = {
    {"options", (getter)Ctx_get_options, NULL, "the options in force (ax_ctx_options)", NULL},
    {"stats", (getter)Ctx_get_stats, NULL, "live terms, resets, borrowed arrays", NULL},
    {NULL}
};

PyTypeObject Ctx_Type = {
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

PyTypeObject Exp_Type = {
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

PyTypeObject Acc_Type = {
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

PyTypeObject ArrayRef_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "axle._ArrayRef",
    .tp_basicsize = sizeof(ArrayRefObject),
    .tp_dealloc = (destructor)ArrayRef_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The owner of a result's memory (one reference to an ax_array).",
};

PyMethodDef Program_methods[] = {
    {"save", (PyCFunction)Program_save, METH_VARARGS,
     "save(path): writes the compiled program to path (ax_program_save), to be loaded without a compiler."},
    {NULL}
};

PyTypeObject Program_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "axle.Program",
    .tp_basicsize = sizeof(ProgramObject),
    .tp_dealloc = (destructor)Program_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(ProgramObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_doc = "A compiled program with parameters; calling it runs it (ax_program_run_with).",
    .tp_getset = Program_getset,
    .tp_methods = Program_methods,
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
    FC(scanl_seg, "scanl_seg(f, z, a, segs): each segment of the innermost dimension scanned from z "
                  "(one element more per segment)"),
    FC(scanl1_seg, "scanl1_seg(f, a, segs): each segment's inclusive scan"),
    FC(scanr_seg, "scanr_seg(f, z, a, segs): from the right, z behind each segment"),
    FC(scanr1_seg, "scanr1_seg(f, a, segs): each segment's inclusive scan from the right"),
    FC(scanl_ex_seg, "scanl_ex_seg(f, z, a, segs): (each segment's exclusive scan, the segments' totals)"),
    FC(scanr_ex_seg, "scanr_ex_seg(f, z, a, segs): (the same from the right, the totals)"),
    FC(backpermute, "backpermute(shape, p, a): result[ix] = a[p(ix)]"),
    FC(permute, "permute(comb, default, p, a): a[ix] combined into result[p(ix)]"),
    FC(replicate, "replicate(spec, a)"),
    FC(slice, "slice(spec, a)"),
    FC(reshape, "reshape(shape, a)"),
    FC(flatten, "flatten(a)"),
    FC(transpose, "transpose(a, axes=None): the dimensions in NumPy's order of axes (None reverses them)."),
    FC(filter, "filter(p, a)"),
    {"stencil", (PyCFunction)(void (*)(void))f_stencil, METH_VARARGS | METH_KEYWORDS,
     "stencil(f, size, a, boundary='clamp', index=False): f(n), or f(n, ix) with index=True"},
    {"stencil2", (PyCFunction)(void (*)(void))f_stencil2, METH_VARARGS | METH_KEYWORDS,
     "stencil2(f, size_a, a, size_b, b, boundary_a='clamp', boundary_b='clamp', index=False)"},
    FC(acond, "acond(c, t, e)"),
    FC(awhile, "awhile(cond, body, init)"),
    FC(sort, "sort(keys, descending=False): each row sorted, stably (floats in IEEE total order, NaN last)"),
    FC(sort_by, "sort_by(keys, vals, descending=False): (the sorted keys, vals in their order)"),
    FC(group_by, "group_by(keys, vals, nbuckets): (the count of each key, vals in key order)"),
    FC(reduce_by_key, "reduce_by_key(f, z, keys, vals, nbuckets): per key in [0, nbuckets), f folded over its vals from z"),
    FC(compute, "compute(a): a made as an array of its own; fusion stops there (Accelerate's compute)"),
    FC(for_loop, "for_loop(n, body, init): n times x = body(step, x) from init, step 0 .. n-1 (an expression)"),
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
    /* __array_ufunc__ = None on the classes (NumPy looks it up on the type):
     * NumPy then leaves `ndarray op axle` to axle's reflected operator
     * (a @ of a NumPy array and an Acc builds axle's product) instead of
     * converting the axle operand. */
    if (PyDict_SetItemString(Exp_Type.tp_dict, "__array_ufunc__", Py_None) < 0 ||
        PyDict_SetItemString(Acc_Type.tp_dict, "__array_ufunc__", Py_None) < 0)
        return NULL;
    PyType_Modified(&Exp_Type);
    PyType_Modified(&Acc_Type);
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    AxleError = PyErr_NewExceptionWithDoc("axle.AxleError",
                                          "An error axle reported: .kind is its status ('build', 'index', "
                                          "'divzero', 'shape', 'nomem', 'compile', 'backend', 'arg', "
                                          "'cancelled'), .args[0] the message.",
                                          NULL, NULL);
    pyacc_ALL_obj = PyUnicode_InternFromString("axle.ALL");
    if (!AxleError || !pyacc_ALL_obj) return NULL;
    Py_INCREF(&Ctx_Type);
    Py_INCREF(&Exp_Type);
    Py_INCREF(&Acc_Type);
    Py_INCREF(&Program_Type);
    Py_INCREF(pyacc_ALL_obj);
    if (PyModule_AddObject(m, "Context", (PyObject *)&Ctx_Type) < 0 ||
        PyModule_AddObject(m, "Exp", (PyObject *)&Exp_Type) < 0 ||
        PyModule_AddObject(m, "Acc", (PyObject *)&Acc_Type) < 0 ||
        PyModule_AddObject(m, "Program", (PyObject *)&Program_Type) < 0 ||
        PyModule_AddObject(m, "AxleError", AxleError) < 0 || PyModule_AddObject(m, "ALL", pyacc_ALL_obj) < 0)
        return NULL;
    Py_INCREF(AxleError);
    PyModule_AddStringConstant(m, "version", AX_VERSION_STRING);
    PyModule_AddIntConstant(m, "MAX_RANK", AX_MAX_RANK);
    PyModule_AddIntConstant(m, "MAX_PARAMS", AX_MAX_PARAMS);
    return m;
}
