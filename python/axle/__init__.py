"""axle from Python: a data-parallel array language compiled at run time.

Array operations (``map``, ``zip_with``, ``fold``, ``scanl``, ``permute``,
``stencil``, ...) build a computation (an ``Acc``) over NumPy arrays, which
are borrowed, not copied.  Functions given to them are Python callables
that axle calls once, with fresh variables (``Exp`` objects), to learn what
they compute; their operators (``x * 2 + 1``, ``x > 0``, ``axle.exp(x)``,
``axle.where(c, t, e)``) build scalar expressions.  A computation runs when
its value is asked for (``.numpy()``, ``np.asarray(a)``, ``print(a)``,
``axle.run(a, b)``), fused into few kernels, compiled to C (cached), and
gives NumPy arrays that use axle's memory, without a copy.

``@axle.jit`` traces a function of arrays and numbers once per signature
(element types and ranks) into a program with parameters, and runs it on
new arrays and values without compiling again.

    >>> import axle, numpy as np
    >>> x = np.arange(10, dtype=np.float32)
    >>> print(axle.fold(axle.add, 0, axle.zip_with(axle.mul, x, x)))
    285.0
"""
import builtins as _b
import json as _json
import os as _os
import tempfile as _tempfile
import threading as _threading

import numpy as _np

from . import _axle
from ._axle import current as _current, signature as _signature
from ._axle import (ALL, Acc, AxleError, Context, Exp, Program, acond, at, at_linear, atuple, awhile,
                    backpermute, compute, filter, flatten, fold, fold1, fold1_seg, fold_all, fold_seg, for_loop, generate,
                    ignore, index, map, permute, replicate, reshape, run, scanl, scanl1, scanl1_seg, scanl_ex,
                    scanl_ex_seg, scanl_seg, scanr, scanr1, scanr1_seg, scanr_ex, scanr_ex_seg, scanr_seg, shape,
                    size, slice, stencil, stencil2, transpose, tuple, unit, use, where, while_loop, zip_with)

__version__ = _axle.version
MAX_RANK = _axle.MAX_RANK

cond = where

# Element types: NumPy's, or axle's short names.
bool_ = _np.bool_
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float32, float64 = _np.float32, _np.float64

_SNAMES = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64")
_DTYPES = (_np.bool_, _np.int8, _np.int16, _np.int32, _np.int64, _np.uint8, _np.uint16, _np.uint32, _np.uint64,
           _np.float32, _np.float64)
_BOOL, _I64, _F64 = 0, 4, 10


def sort(keys, descending=False):
    """Each row (the innermost dimension) of keys sorted, stably; floats in IEEE total order, every NaN last."""
    return _axle.sort(keys, descending)


def sort_by(keys, vals, descending=False):
    """(keys sorted, vals in the same order): vals (any element type, the keys' shape) sorted by keys, stably."""
    return _axle.sort_by(keys, vals, descending)


def group_by(keys, vals, nbuckets):
    """(counts, grouped) for integer keys in [0, nbuckets): counts[k] is the number of key k, and grouped
    holds vals in key order, each group in input order (the segments fold_seg and the segmented scans take)."""
    return _axle.group_by(keys, vals, nbuckets)


def reduce_by_key(f, z, keys, vals, nbuckets):
    """Per key k in [0, nbuckets): f (associative and commutative) folded over the vals whose key is k, from z."""
    return _axle.reduce_by_key(f, z, keys, vals, nbuckets)


def from_dlpack(x):
    """An array computation over a DLPack tensor (PyTorch, JAX, CuPy, NumPy, ...) in host memory, without a copy.

    axle reads the tensor's memory when the program runs, as ``use`` reads a NumPy array; a tensor on a GPU is
    refused (move it to the host first: ``t.cpu()``)."""
    try:
        a = _np.from_dlpack(x)
    except (BufferError, RuntimeError, TypeError, ValueError) as e:
        raise ValueError(f"from_dlpack: axle takes tensors in host memory (DLPack device 1): {e}") from e
    return use(a)


def const(value, dtype):
    """A constant of the given element type (compiled into the code)."""
    return _axle.const(value, dtype)


def _typed(name):
    def make(value):
        return _axle.const(value, name)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = "A constant of type %s." % name
    return make


i8, i16, i32, i64 = _typed("i8"), _typed("i16"), _typed("i32"), _typed("i64")
u8, u16, u32, u64 = _typed("u8"), _typed("u16"), _typed("u32"), _typed("u64")
f32, f64, boolean = _typed("f32"), _typed("f64"), _typed("bool")


# ------------------------------------------------------------- primitives

_PRIM_DOCS = {
    "exp": "e**x", "log": "natural logarithm", "sqrt": "square root", "pow": "x**y",
    "logbase": "logbase(b, x): the logarithm of x in base b", "atan2": "atan2(y, x)",
    "isnan": "x is NaN (bool)", "isinf": "x is infinite (bool)", "signum": "-1, 0 or 1",
    "div": "division: IEEE for floats, truncating for integers (like C)",
    "quot": "integer quotient towards zero", "rem": "remainder of quot",
    "idiv": "integer quotient towards negative infinity (Python's //)", "mod": "remainder of idiv (Python's %)",
    "min": "the smaller (for floats: if one is NaN, the other)", "max": "the larger",
    "floor": "floor(x, dtype=None): rounded down, delivered in dtype (default: x's type)",
    "ceil": "ceil(x, dtype=None)", "round": "round(x, dtype=None): halves to even", "trunc": "trunc(x, dtype=None)",
    "cvt": "cvt(x, dtype): conversion (as x.astype(dtype))", "bitcast": "bitcast(x, dtype): the same bits",
    "and_": "logical and (b only when a does not decide)", "or_": "logical or", "not_": "logical not",
    "band": "bitwise and", "bor": "bitwise or", "bxor": "bitwise xor", "bnot": "bitwise not",
    "shl": "shift left", "shr": "shift right (arithmetic for signed types)",
}


def _make_prim(k, name, arity):
    prim = _axle.prim
    if arity == 1:
        def f(x):
            return prim(k, x)
    elif arity == 2:
        def f(x, y):
            return prim(k, x, y)
    else:
        def f(x, dtype=None):
            return prim(k, x, dtype)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = _PRIM_DOCS.get(name, name)
    return f


for _k, (_name, _arity) in enumerate(_axle.prim_names()):
    globals()[_name] = _make_prim(_k, _name, _arity)
del _k, _name, _arity

minimum, maximum = min, max  # noqa: F821 (defined above)


def zip(a, b, c=None):
    """The array of pairs (or triples) of the elements of a and b (and c)."""
    if c is None:
        return zip_with(lambda x, y: (x, y), a, b)
    return zip_with(lambda x, y, z: (x, y, z), a, b, c)


def unzip(a):
    """An array of tuples as a tuple of arrays (one map per component)."""
    n = len(a.dtype) if isinstance(a, Acc) else None
    if not n:
        raise TypeError("unzip: an array of tuples")
    return _b.tuple(map(lambda t, i=i: t[i], a) for i in range(n))


# --------------------------------------------------------------- contexts

_contexts = {}
_contexts_lock = _threading.Lock()


def _freeze(v):
    if isinstance(v, (list, _b.tuple)):
        return _b.tuple(_freeze(x) for x in v)
    return v


def context(backend=None, threads=None, debug=None, **options):
    """The context for these options (one per set of options, made on first
    use): backend "cpu", "interp", "cuda", "opencl" or None (the best
    available), threads, debug flags ("no-fusion,dump", a list, or an int),
    unsafe, mem_limit, cc, cflags, cache_dir, no_cache, cache_limit,
    cc_timeout, quiet, strict (as ax_options).  ``with axle.context(...):``
    makes operations outside any other context use it."""
    opts = {k: v for k, v in dict(backend=backend, threads=threads, debug=debug, **options).items()
            if v is not None}
    if not opts:
        return _axle.default_context()
    key = _b.tuple(sorted((k, _freeze(v)) for k, v in opts.items()))
    with _contexts_lock:
        c = _contexts.get(key)
        if c is None:
            c = _contexts[key] = Context(**opts)
    return c


def set_default(backend=None, threads=None, debug=None, **options):
    """Makes the context of these options the default for every thread."""
    c = context(backend=backend, threads=threads, debug=debug, **options)
    _axle.set_default(c)
    return c


def current_context():
    """The context operations use now (the innermost ``with``, else the default)."""
    return _axle.current()


def cache_stats(cache_dir=None):
    """The disk cache of compiled kernels: dir, entries, bytes, limit."""
    return _axle.cache_stats(cache_dir)


def cache_clear(cache_dir=None):
    """Empties the disk cache of compiled kernels."""
    return _axle.cache_clear(cache_dir)


# -------------------------------------------------------------------- jit

class _Trace:
    """Turns a call's arguments into parameters: arrays into ax_param,
    NumPy scalars into typed scalar parameters, Python numbers into weak
    ones that take the type of what they first meet (float64, int64 or bool
    alone), and anything else is passed as it is (static)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.plan = []
        self.nparams = 0
        self.weak_index = {}

    def _index(self):
        i = self.nparams
        if i >= _axle.MAX_PARAMS:
            raise ValueError("a jitted function of more than %d parameters" % _axle.MAX_PARAMS)
        self.nparams += 1
        return i

    def arg(self, pos, value, sig):
        """A parameter for argument pos (see _axle.signature for sig)."""
        if isinstance(sig, int):
            if sig == -1 or sig == -2:
                raise TypeError("argument %d: axle has no element type for %r"
                                % (pos, getattr(value, "dtype", value)))
            if sig < 1000:
                i = self._index()
                self.plan.append((i, pos, -1))
                return self.ctx.param(i, _SNAMES[sig // 16], sig % 16)
            if sig < 2000:
                return _axle.weak(self.ctx, self._weak(pos, sig - 1000))
            i = self._index()
            self.plan.append((i, pos, sig - 2000))
            return self.ctx.param_exp(i, _SNAMES[sig - 2000])
        if sig[0] == "t":
            t, rank = self._tuple_type(value, pos)
            if t is None:
                return value
            i = self._index()
            self.plan.append((i, pos, -1))
            return self.ctx.param(i, t, rank)
        return value

    def _tuple_type(self, value, pos):
        """(element type, rank) of a tuple of equally shaped arrays, else (None, None)."""
        def walk(v):
            if isinstance(v, _b.tuple):
                parts = [walk(x) for x in v]
                if any(p is None for p in parts) or len(parts) < 2:
                    return None
                return (_b.tuple(p[0] for p in parts), [s for p in parts for s in p[1]])
            if isinstance(v, _np.ndarray):
                return (v.dtype, [v.shape])
            return None
        w = walk(value)
        if w is None:
            return None, None
        if len(set(w[1])) != 1:
            raise ValueError("argument %d: the arrays of a tuple have different shapes" % pos)
        return w[0], len(w[1][0])

    def _weak(self, pos, kind):
        def materialise(hint):
            s = kind if hint is None else hint
            if kind == _F64 and s not in (9, 10):
                raise TypeError("argument %d is a float and meets an expression of %s: axle does not "
                                "convert implicitly (pass an int, or use .astype on the expression)"
                                % (pos, _SNAMES[s]))
            if kind == _I64 and s == _BOOL:
                raise TypeError("argument %d is an int and meets a bool expression" % pos)
            i = self.weak_index.get((pos, s))
            if i is None:
                i = self.weak_index[(pos, s)] = self._index()
                self.plan.append((i, pos, s))
            return self.ctx.param_exp(i, _SNAMES[s])
        return materialise


class Jit:
    """A function compiled once per signature (element types and ranks of
    its array arguments, types of its scalar arguments) and run with new
    arrays and values without compiling again.  Made by ``axle.jit``."""

    def __init__(self, fn, static_argnums=(), **options):
        self.fn = fn
        self.options = options
        self.static_argnums = frozenset(static_argnums)
        self.programs = {}
        self.compiles = 0
        self._ctx = None
        # Reentrant: the function may call itself on concrete arrays while
        # it is traced (a new signature, through static_argnums), which
        # compiles that signature inside this one's compile.  Each trace
        # keeps its state in its own _Trace, and the context keeps the
        # outer trace's terms (they are live), so the nested compile and
        # run are those of an ordinary call.  _tracing holds the signatures
        # being traced, to refuse the one nesting that cannot end.
        self._lock = _threading.RLock()
        self._tracing = set()
        self.__wrapped__ = fn
        for a in ("__name__", "__qualname__", "__doc__", "__module__"):
            try:
                setattr(self, a, getattr(fn, a))
            except AttributeError:
                pass

    def _context(self):
        if not self.options:
            return _current()
        if self._ctx is None:
            self._ctx = context(**self.options)
        return self._ctx

    def _static(self, key, args):
        return key[:1] + _b.tuple(("o", a) if i in self.static_argnums else s
                                  for i, (s, a) in enumerate(_b.zip(key[1:], args)))

    def __call__(self, *args):
        ctx = self._ctx or (_current() if not self.options else self._context())
        key = _signature(ctx, args)
        if key is None:   # called while another function is traced: inline
            return self.fn(*args)
        if self.static_argnums:
            key = self._static(key, args)
        try:
            p = self.programs.get(key)
        except TypeError:
            raise TypeError("a jitted function's arguments are arrays, numbers, tuples of arrays, or "
                            "hashable values (static); use static_argnums for others") from None
        if p is None:
            p = self._compile(ctx, key, args)
        self._last = key
        return p(*args)

    @staticmethod
    def _example(sig, shape):
        """An argument with this signature (empty arrays, zeros)."""
        if isinstance(sig, int):
            if 0 <= sig < 1000:
                return _np.zeros(shape[:sig % 16] if sig % 16 else (), _DTYPES[sig // 16])
            if 1000 <= sig < 2000:
                return {_BOOL: False, _I64: 0, _F64: 0.0}[sig - 1000]
            return _DTYPES[sig - 2000](0)
        if sig[0] == "t":
            return _b.tuple(Jit._example(x, shape) for x in sig[1:])
        return sig[1]

    def example_args(self):
        """Arguments of the signature of the last call (empty arrays of its
        element types and ranks, zeros for numbers), for dump()."""
        key = getattr(self, "_last", None)
        if key is None:
            raise ValueError("%s has not been called yet: give dump() arguments" % self.__name__)
        return [self._example(s, (0,) * MAX_RANK) for s in key[1:]]

    def trace(self, *args, ctx=None):
        """The computation the function builds for these arguments (with
        parameters in place of arrays and numbers), and the plan."""
        ctx = ctx or self._context()
        sig = _signature(ctx, args)
        if sig is not None:
            sig = sig[1:]
            if self.static_argnums:
                sig = [None if i in self.static_argnums else x for i, x in enumerate(sig)]
        t = _Trace(ctx)
        with ctx:
            targs = [a if (sig is None or s is None) else t.arg(i, a, s)
                     for i, (a, s) in enumerate(_b.zip(args, sig or [None] * len(args)))]
            out = self.fn(*targs)
        return out, t

    def _compile(self, ctx, key, args):
        with self._lock:
            p = self.programs.get(key)
            if p is not None:
                return p
            if key in self._tracing:
                # A trace runs the function's Python code whatever the
                # values, so a call of the signature being traced from
                # inside its own trace would trace it again, endlessly.
                raise RecursionError("%s calls itself on arguments of the signature it is being compiled for: "
                                     "its trace would never end (a recursion ends through a static argument "
                                     "that changes: static_argnums)"
                                     % getattr(self.fn, "__name__", "the jitted function"))
            self._tracing.add(key)
            try:
                out, t = self.trace(*args, ctx=ctx)
                p = ctx.compile(out, t.plan)
                del out
            finally:
                self._tracing.discard(key)
            self.compiles += 1
            self.programs[key] = p
            return p

    def lower(self, *args):
        """The compiled Program for these arguments (compiled if needed)."""
        ctx = self._context()
        key = _signature(ctx, args)
        if self.static_argnums:
            key = self._static(key, args)
        return self.programs.get(key) or self._compile(ctx, key, args)

    def save(self, path):
        """Writes every signature compiled so far to path, to be loaded with
        ``axle.load`` where no C compiler is installed and run without
        compiling (a wheel can ship its programs compiled).  Each program
        is saved as ``ax_program_save`` saves it: its compiled code is for
        this machine's CPU, and it loads into a context with the same
        options.  Call the function once per signature first."""
        with self._lock:
            items = _b.list(self.programs.items())
        if not items:
            raise ValueError("%s has not been compiled yet: call it (once per signature to save) before save()"
                             % getattr(self.fn, "__name__", "the function"))
        try:
            options = _json.dumps(self.options)
        except (TypeError, ValueError):
            raise TypeError("save(): the jit's options must be numbers, strings or booleans") from None
        entries, blobs = [], []
        with _tempfile.TemporaryDirectory() as d:
            f = _os.path.join(d, "program")
            for key, p in items:
                p.save(f)
                with _b.open(f, "rb") as fh:
                    data = fh.read()
                entries.append({"sig": [_sig_to_json(x) for x in key[1:]], "plan": p.plan, "size": len(data)})
                blobs.append(data)
        head = _json.dumps({"name": getattr(self.fn, "__name__", "?"), "static_argnums": sorted(self.static_argnums),
                            "options": _json.loads(options), "programs": entries}).encode()
        tmp = "%s.tmp-%d" % (_os.fspath(path), _os.getpid())
        try:
            with _b.open(tmp, "wb") as fh:
                fh.write(_SAVED_MAGIC + len(head).to_bytes(8, "little") + head)
                for data in blobs:
                    fh.write(data)
            _os.replace(tmp, path)
        except BaseException:
            try:
                _os.unlink(tmp)
            except OSError:
                pass
            raise

    def __repr__(self):
        return "<axle.jit %s: %d signature%s>" % (getattr(self.fn, "__name__", "?"), len(self.programs),
                                                 "" if len(self.programs) == 1 else "s")


_SAVED_MAGIC = b"axle-jit-1\n"


def _sig_to_json(sig):
    """A signature of one argument as JSON: an int, ["t", ...] or ["o", value]."""
    if isinstance(sig, int):
        return sig
    if sig[0] == "t":
        return ["t"] + [_sig_to_json(x) for x in sig[1:]]
    return ["o", _static_to_json(sig[1])]


def _static_to_json(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, _b.tuple):
        return {"t": [_static_to_json(x) for x in v]}
    raise TypeError("save(): a static argument is %s; only None, numbers, strings and tuples of them can be "
                    "saved" % type(v).__name__)


def _static_of_json(j):
    if isinstance(j, dict):
        return _b.tuple(_static_of_json(x) for x in j["t"])
    return j


def _sig_of_json(j, path):
    if isinstance(j, int) and not isinstance(j, bool):
        return j
    if isinstance(j, list) and j and j[0] == "t":
        return ("t",) + _b.tuple(_sig_of_json(x, path) for x in j[1:])
    if isinstance(j, list) and len(j) == 2 and j[0] == "o":
        try:
            return ("o", _static_of_json(j[1]))
        except (KeyError, TypeError):
            pass
    raise ValueError("%s: not an axle saved function (a malformed signature)" % path)


class Saved:
    """Functions compiled by ``axle.jit`` and saved (``Jit.save``), loaded by
    ``axle.load``: called like the function, for the signatures that were
    saved, with no compiler and no compile."""

    def __init__(self, path, **options):
        path = _os.fspath(path)
        with _b.open(path, "rb") as fh:
            data = fh.read()
        m = len(_SAVED_MAGIC)
        if data[:m] != _SAVED_MAGIC or len(data) < m + 8:
            raise ValueError("%s: not an axle saved function" % path)
        n = int.from_bytes(data[m:m + 8], "little")
        if n > len(data) - m - 8:
            raise ValueError("%s: the file is truncated" % path)
        try:
            head = _json.loads(data[m + 8:m + 8 + n].decode())
            entries = head["programs"]
            sizes = [int(e["size"]) for e in entries]
            self.static_argnums = frozenset(int(i) for i in head["static_argnums"])
            saved_options = head["options"]
            self.__name__ = str(head["name"])
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
            raise ValueError("%s: not an axle saved function (a malformed header)" % path) from None
        if any(z < 0 for z in sizes) or sum(sizes) != len(data) - m - 8 - n:
            raise ValueError("%s: the file is truncated or has bytes after its end" % path)
        self.options = options or saved_options
        self._ctx = context(**self.options) if self.options else _current()
        self.programs = {}
        at = m + 8 + n
        for e, z in _b.zip(entries, sizes):
            key = _b.tuple(_sig_of_json(x, path) for x in e["sig"])
            try:
                plan = [_b.tuple(int(v) for v in t) for t in e["plan"]]
            except (TypeError, ValueError):
                raise ValueError("%s: not an axle saved function (a malformed plan)" % path) from None
            self.programs[key] = self._ctx.load(data[at:at + z], plan)
            at += z

    def __call__(self, *args):
        key = _signature(self._ctx, args)
        if key is None:
            raise TypeError("%s was loaded from a file: it has no Python code to trace inside another "
                            "function" % self.__name__)
        key = _b.tuple(("o", a) if i in self.static_argnums else x for i, (x, a) in enumerate(_b.zip(key[1:], args)))
        try:
            p = self.programs.get(key)
        except TypeError:
            raise TypeError("a saved function's arguments are arrays, numbers, tuples of arrays, or the "
                            "static values it was saved with") from None
        if p is None:
            raise TypeError("%s was not saved for arguments of this signature (element types and ranks, "
                            "number kinds, static values): call the function with such arguments before "
                            "saving it" % self.__name__)
        return p(*args)

    def __repr__(self):
        return "<axle.Saved %s: %d signature%s>" % (self.__name__, len(self.programs),
                                                    "" if len(self.programs) == 1 else "s")


def load(path, **options):
    """Loads the functions ``Jit.save`` wrote: a callable that runs the
    saved signatures with no C compiler installed and no compile.  The
    context is made with the options the function was jitted with, or
    with these."""
    return Saved(path, **options)


def jit(fn=None, *, static_argnums=(), **options):
    """Compiles a function of arrays and numbers once per signature::

        @axle.jit
        def saxpy(a, x, y):
            return axle.zip_with(lambda xi, yi: a * xi + yi, x, y)

        saxpy(2.0, xs, ys)       # traced and compiled on the first call
        saxpy(3.0, xs2, ys2)     # run again, new values and lengths: no compile

    Arrays (and tuples of arrays, as arrays of tuples) become array
    parameters, NumPy scalars typed scalar parameters, Python numbers
    scalar parameters that take the type of what they meet; other
    arguments, and those named by static_argnums, are passed as they are
    and are part of the signature.  Options (backend="interp", threads=2,
    debug="no-fusion", ...) choose the context, as ``axle.context``.
    The function returns an array computation, an expression (a rank-0
    result) or a tuple of them; the call returns NumPy arrays."""
    if fn is None:
        return lambda f: Jit(f, static_argnums=static_argnums, **options)
    return Jit(fn, static_argnums=static_argnums, **options)


# ------------------------------------------------------------------- dump

STAGES = ("source", "sharing", "simplify", "fusion", "kernels", "dot", "c", "cuda", "opencl", "ptx")


def dump(f, *args, stage="fusion", json=False):
    """The program at a stage, as text: ``axle.dump(acc, stage="kernels")``
    for a computation, ``axle.dump(fn, x, y, stage="c")`` for a (jitted)
    function traced with these arguments, ``axle.dump(jitted, stage=...)``
    for a jitted function as its last call compiled it.  Stages: source, sharing,
    simplify, fusion, kernels, dot (Graphviz), c (the generated C), cuda,
    opencl, ptx."""
    if stage not in STAGES:
        raise ValueError("stage %r: one of %s" % (stage, ", ".join(STAGES)))
    if isinstance(f, Acc) or not callable(f):
        return _axle.dump(f, stage, json)
    j = f if isinstance(f, Jit) else Jit(f)
    if not args and isinstance(f, Jit):
        args = f.example_args()
    out, _ = j.trace(*args)
    if not isinstance(out, Acc):
        out = atuple(*out) if isinstance(out, _b.tuple) else unit(out)
    return _axle.dump(out, stage, json)


__all__ = [n for n in globals() if not n.startswith("_")]
