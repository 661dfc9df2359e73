# Random differential tests through the binding: random programs built
# with the binding's operations from a seeded generator, each run eagerly,
# through @axle.jit (several calls with new values and shapes, tuples of
# results) and on the reference interpreter, and compared with a NumPy
# evaluation of the same program.
#
# AXLE_PY_RANDOM_SEEDS (default 250) programs from AXLE_PY_RANDOM_SEED0
# (default 0); a failure names its seed and the program, and
#     AXLE_PY_RANDOM_SEED0=<seed> AXLE_PY_RANDOM_SEEDS=1 make test-python PYTEST_ARGS='-q -k random'
# runs that one again.
#
# Integers and booleans are compared exactly (both sides wrap on
# overflow).  Floating point: +, -, *, /, sqrt, min, max, conversions are
# correctly rounded IEEE operations on both sides, so they agree bit for
# bit on equal operands; only sums (folds and scans with +) may be
# associated differently (axle's kernels split a row among lanes, NumPy
# sums pairwise).  Any order of summing n terms t_i lies within
# (n-1)u * sum|t_i| of the exact sum (Higham, "Accuracy and Stability of
# Numerical Algorithms", 4.2; u = 2^-24 for f32, 2^-53 for f64), so two
# orders differ by at most twice that.  Each value carries a bound on its
# difference from the reference, 0 until a float sum makes one, and the
# operations after a sum carry it on (a Lipschitz constant times the
# bound, plus the rounding of two different operands); the generator never
# applies an operation whose result a small difference could change
# arbitrarily (a comparison, a square root near 0) to a value with a bound.
# SPDX-License-Identifier: BSD-3-Clause
import math
import os
import random

import numpy as np
import pytest

import axle

SEEDS = int(os.environ.get("AXLE_PY_RANDOM_SEEDS", "250"))
SEED0 = int(os.environ.get("AXLE_PY_RANDOM_SEED0", "0"))

TYPES = ("i32", "i64", "f32", "f64", "bool")
NP = {"i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64, "bool": np.bool_}
UNIT = {"f32": 2.0 ** -24, "f64": 2.0 ** -53}
MAXEXT = 5          # extents of the inputs: 0..MAXEXT
MAXRANK = 3
MAXMAG = 1e6        # a float value's magnitude stays below this (statically): far from overflow
KMAX = 3            # the scalar argument k is in -KMAX..KMAX


def is_float(t):
    return t in UNIT


def is_num(t):
    return t != "bool"


# ------------------------------------------------------ the two evaluators


class AxLib:
    """Scalar functions over axle expressions."""
    def __init__(self, k):
        self.k = k

    @staticmethod
    def c(v, t):
        return axle.const(v, t)

    where, min, max, sqrt = staticmethod(axle.where), staticmethod(axle.min), staticmethod(axle.max), \
        staticmethod(axle.sqrt)

    @staticmethod
    def cast(x, t):
        return x.astype(NP[t])


class NpLib:
    """The same over NumPy arrays (whole arrays at once: every function is
    elementwise).  fmin and fmax are axle's min and max (the other operand
    when one is NaN)."""
    def __init__(self, k):
        self.k = k

    @staticmethod
    def c(v, t):
        return NP[t](v)

    where, min, max, sqrt = staticmethod(np.where), staticmethod(np.fmin), staticmethod(np.fmax), \
        staticmethod(np.sqrt)

    @staticmethod
    def cast(x, t):
        return np.asarray(x).astype(NP[t])


class Val:
    """What the generator knows of a value: element type, rank, the largest
    extent of each dimension, whether it is exact (no bound), and a bound
    on the magnitude of its elements (to keep floats far from overflow)."""
    def __init__(self, t, ext, exact=True, mag=0.0):
        self.t, self.ext, self.exact, self.mag = t, tuple(ext), exact, mag

    @property
    def rank(self):
        return len(self.ext)

    @property
    def size(self):
        return math.prod(self.ext)


def capped(t, m):
    """A magnitude bound of type t: integers wrap, so theirs is at most
    2^63 (what a conversion to a float may meet)."""
    return min(m, 2.0 ** 63) if t in ("i32", "i64") else 1.0 if t == "bool" else m


def rounding(t, v, b):
    """The bound after a rounding of two operands that differ by b (and lie
    near the reference v): each result is within u of its operand's
    magnitude."""
    return b + 2 * UNIT[t] * (np.abs(v.astype(np.float64)) + b)


# --------------------------------------------------------- scalar functions
#
# One definition serves both sides: f(x, L) with L an AxLib builds the
# axle expression, with an NpLib computes the NumPy arrays.


def unary_ops(v, rng):
    """The unary functions that may apply to v, as (text, result type,
    f(x, L), lipschitz, rounds): how a bound on x passes to the result,
    times the Lipschitz constant, plus a rounding when the function
    rounds (the functions after "exact operands only" are given no bounded
    operand, and have None)."""
    t = v.t
    ops = []
    if is_num(t):
        c = rng.choice([-3, -1, 2, 5]) if not is_float(t) else rng.choice([-2.5, -1.0, 0.5, 1.75, 3.0])
        ops += [("x + %r" % c, t, lambda x, L: x + L.c(c, t), 1, True),
                ("%r - x" % c, t, lambda x, L: L.c(c, t) - x, 1, True),
                ("-x", t, lambda x, L: -x, 1, False),
                ("min(x, %r)" % c, t, lambda x, L: L.min(x, L.c(c, t)), 1, False),
                ("max(x, %r)" % c, t, lambda x, L: L.max(x, L.c(c, t)), 1, False),
                ("x + k", t, lambda x, L: x + (L.k if isinstance(L, AxLib) else NP[t](L.k)), 1, True),
                ("x * k", t, lambda x, L: x * (L.k if isinstance(L, AxLib) else NP[t](L.k)), KMAX, True)]
        m = rng.choice([-3, -2, 2, 3]) if not is_float(t) else rng.choice([-1.5, 0.5, 2.0, 3.0])
        ops.append(("x * %r" % m, t, lambda x, L: x * L.c(m, t), abs(m), True))
    if is_float(t):
        d = rng.choice([2.0, -4.0, 3.0, 0.75])
        ops += [("x / %r" % d, t, lambda x, L: x / L.c(d, t), 1 / abs(d), True),
                ("abs(x)", t, lambda x, L: abs(x), 1, False)]
        o = "f64" if t == "f32" else "f32"
        ops.append(("x.astype(%s)" % o, o, lambda x, L: L.cast(x, o), 1, t == "f64"))
    if not v.exact:
        return ops
    # exact operands only from here: results a small difference could change
    if t in ("i32", "i64"):
        q = rng.randint(1, 5)
        b = rng.randint(0, 255)
        ops += [("x // %d" % q, t, lambda x, L: x // L.c(q, t), None, False),
                ("x %% %d" % q, t, lambda x, L: x % L.c(q, t), None, False),
                ("x & %d" % b, t, lambda x, L: x & L.c(b, t), None, False),
                ("x | %d" % b, t, lambda x, L: x | L.c(b, t), None, False),
                ("x ^ %d" % b, t, lambda x, L: x ^ L.c(b, t), None, False)]
        for o in ("i32", "i64", "f32", "f64"):
            if o != t:
                ops.append(("x.astype(%s)" % o, o, lambda x, L, o=o: L.cast(x, o), None, False))
    if is_float(t):
        ops.append(("sqrt(abs(x))", t, lambda x, L: L.sqrt(abs(x)), None, False))
    if is_num(t):
        c = rng.choice([-1, 0, 2]) if not is_float(t) else rng.choice([-0.5, 0.0, 1.25])
        ops += [("x > %r" % c, "bool", lambda x, L: x > L.c(c, t), None, False),
                ("x <= %r" % c, "bool", lambda x, L: x <= L.c(c, t), None, False),
                ("x == %r" % c, "bool", lambda x, L: x == L.c(c, t), None, False),
                ("where(x > %r, x, -x)" % c, t, lambda x, L: L.where(x > L.c(c, t), x, -x), None, False)]
    if t == "bool":
        ops.append(("~x", t, lambda x, L: ~x, None, False))
        for o in ("i32", "i64", "f32", "f64"):
            ops.append(("x.astype(%s)" % o, o, lambda x, L, o=o: L.cast(x, o), None, False))
    return ops


def binary_ops(a, b):
    """Functions of two values of one type: (text, result type, f, kind)
    where kind says how a bound passes through ("add", "mul", "max",
    None: exact operands only)."""
    t = a.t
    exact = a.exact and b.exact
    ops = []
    if is_num(t):
        ops += [("x + y", t, lambda x, y, L: x + y, "add"), ("x - y", t, lambda x, y, L: x - y, "add"),
                ("x * y", t, lambda x, y, L: x * y, "mul"), ("min(x, y)", t, lambda x, y, L: L.min(x, y), "max"),
                ("max(x, y)", t, lambda x, y, L: L.max(x, y), "max")]
        if exact:
            ops += [("x < y", "bool", lambda x, y, L: x < y, None),
                    ("where(x > y, x - y, y)", t, lambda x, y, L: L.where(x > y, x - y, y), None)]
    if t in ("i32", "i64", "bool"):
        ops += [("x & y", t, lambda x, y, L: x & y, None), ("x | y", t, lambda x, y, L: x | y, None),
                ("x ^ y", t, lambda x, y, L: x ^ y, None)]
    return ops


# -------------------------------------------------------------- programs


def intersect(vals):
    """NumPy's view of zip_with's intersection of shapes."""
    ext = [min(e) for e in zip(*(v.shape for v in vals))]
    return [v[tuple(slice(0, n) for n in ext)] for v in vals]


def bound_in(b, shape):
    """An operand's bound over the intersection (zeros for an exact one)."""
    return np.zeros(shape) if b is None else b[tuple(slice(0, n) for n in shape)]


class Program:
    """A random program: inputs (element type, rank), steps, each a new
    value from earlier ones, and the values it returns.  It runs two ways:
    build(accs, k) with axle (the results as a tuple of computations), and
    reference(arrays, k) with NumPy (the results and their bounds)."""

    def __init__(self, seed):
        self.seed = seed
        r = self.r = random.Random(seed)
        self.vals = []
        self.steps = []          # (text, args, axle builder, numpy evaluator)
        self.inputs = []
        # mostly one element type and rank, so that operations of two
        # arrays find their operands
        main_t, main_rank = r.choice(TYPES), r.choice([0, 1, 1, 2, 2, 2])
        for _ in range(r.randint(1, 3)):
            t = main_t if r.random() < 0.7 else r.choice(TYPES)
            rank = main_rank if r.random() < 0.7 else r.choice([0, 1, 2])
            self.inputs.append((t, rank))
            self.vals.append(Val(t, (MAXEXT,) * rank, True, capped(t, 20.0)))
        for _ in range(r.randint(2, 8)):
            for _attempt in range(20):
                if self._step():
                    break
        # the last value, and up to two others (inputs too: a program may
        # return its argument)
        n = len(self.vals)
        self.outputs = [n - 1] + [r.randrange(n) for _ in range(r.randint(0, 2))]
        r.shuffle(self.outputs)

    def text(self):
        lines = ["seed %d: inputs %s" % (self.seed, ", ".join("v%d: [%s]^%d" % (i, t, k)
                                                               for i, (t, k) in enumerate(self.inputs)))]
        for i, (txt, args, _, _) in enumerate(self.steps):
            lines.append("  v%d = %s" % (len(self.inputs) + i, txt.format(*("v%d" % a for a in args))))
        lines.append("  return (%s)" % ", ".join("v%d" % o for o in self.outputs))
        return "\n".join(lines)

    def _add(self, val, text, args, ax, ref):
        if is_float(val.t) and val.mag > MAXMAG:
            return False
        self.vals.append(val)
        self.steps.append((text, args, ax, ref))
        return True

    def _step(self):
        r = self.r
        kind = r.choice(["map", "map", "map", "zip", "zip", "zip3", "fold", "fold", "fold_all", "scan", "scan",
                         "reverse", "transpose", "flatten", "row", "replicate"])
        # mostly one of the latest values, so that the steps make chains
        n = len(self.vals)
        i = r.randrange(max(0, n - 3), n) if r.random() < 0.7 else r.randrange(n)
        v = self.vals[i]
        return getattr(self, "_" + kind)(i, v)

    # elementwise
    def _map(self, i, v):
        ops = unary_ops(v, self.r)
        text, t, f, lip, rounds = self.r.choice(ops)
        # (|c| <= 3 for floats; integers: factors up to 3, or'ed bits up to 255)
        mag = capped(t, v.mag * (lip or 1) + 10 if is_float(t) else v.mag * 3 + 300)
        exact = v.exact

        def ax(a, k):
            return axle.map(lambda x: f(x, AxLib(k)), a)

        def ref(a, b, k):
            with np.errstate(all="ignore"):
                y = np.asarray(f(a, NpLib(k)))
            if b is None:
                return y, None
            b2 = lip * b
            return y, rounding(t, y, b2) if rounds else b2
        return self._add(Val(t, v.ext, exact, mag), "map(%s, {0})" % text, [i], ax, ref)

    def _pick(self, like, pred=lambda w: True, other=None):
        """A value of like's type and rank (not `other` where there is one)."""
        cands = [j for j, w in enumerate(self.vals) if w.t == like.t and w.rank == like.rank and pred(w)]
        apart = [j for j in cands if j != other]
        return self.r.choice(apart or cands) if cands else None

    def _zip(self, i, v):
        j = self._pick(v, other=i)
        w = self.vals[j]
        ops = binary_ops(v, w)
        if not ops:
            return False
        text, t, f, how = self.r.choice(ops)
        ext = tuple(min(p, q) for p, q in zip(v.ext, w.ext))
        mag = capped(t, v.mag * w.mag if how == "mul" else 2 * (v.mag + w.mag))

        def ax(a, b, k):
            return axle.zip_with(lambda x, y: f(x, y, AxLib(k)), a, b)

        def ref(a, ba, b, bb, k):
            a2, b2 = intersect([a, b])
            with np.errstate(all="ignore"):
                y = np.asarray(f(a2, b2, NpLib(k)))
            if ba is None and bb is None:
                return y, None
            ea, eb = bound_in(ba, y.shape), bound_in(bb, y.shape)
            if how == "max":
                return y, np.maximum(ea, eb)
            if how == "add":
                e = ea + eb
            else:
                e = np.abs(a2.astype(np.float64)) * eb + np.abs(b2.astype(np.float64)) * ea + ea * eb
            return y, rounding(t, y, e)
        return self._add(Val(t, ext, v.exact and w.exact, mag), "zip_with(%s, {0}, {1})" % text, [i, j], ax, ref)

    def _zip3(self, i, v):
        # where(c, x, y) elementwise: c a bool array of the rank
        c = self._pick(Val("bool", v.ext), lambda w: w.exact)
        if c is None:
            return False
        j = self._pick(v, other=i)
        w = self.vals[j]
        cv = self.vals[c]
        ext = tuple(min(p, q, s) for p, q, s in zip(cv.ext, v.ext, w.ext))

        def ax(cc, a, b, k):
            return axle.zip_with(lambda p, x, y: axle.where(p, x, y), cc, a, b)

        def ref(cc, _bc, a, ba, b, bb, k):
            c2, a2, b2 = intersect([cc, a, b])
            y = np.where(c2, a2, b2)
            if ba is None and bb is None:
                return y, None
            ea, eb = bound_in(ba, y.shape), bound_in(bb, y.shape)
            return y, np.where(c2, ea, eb)
        return self._add(Val(v.t, ext, v.exact and w.exact, max(v.mag, w.mag)),
                         "zip_with(where, {0}, {1}, {2})", [c, i, j], ax, ref)

    # reductions
    def _combiner(self, v):
        """(name, axle function, NumPy ufunc, z) for a fold or scan of v."""
        r = self.r
        t = v.t
        if t == "bool":
            return r.choice([("and", lambda x, y: x & y, np.logical_and, True),
                             ("or", lambda x, y: x | y, np.logical_or, False)])
        z = r.choice([0, 1, -2]) if not is_float(t) else r.choice([0.0, 1.5, -0.25])
        choices = [("add", axle.add, np.add, z), ("max", axle.max, np.fmax, z), ("min", axle.min, np.fmin, z)]
        if not is_float(t):
            choices.append(("mul", axle.mul, np.multiply, r.choice([1, -1, 3])))
        return r.choice(choices)

    def _fold(self, i, v):
        if v.rank == 0:
            return False
        name, fa, uf, z = self._combiner(v)
        t = v.t
        n = v.ext[-1]
        mag = capped(t, 2.0 ** 63 if name == "mul" else (v.mag + abs(z)) * (n + 1))

        def ax(a, k):
            return axle.fold(fa, axle.const(z, t), a)

        def ref(a, b, k):
            return reduce_rows(uf, name, t, z, a, b)
        return self._add(Val(t, v.ext[:-1], v.exact and name != "add" or not is_float(t), mag),
                         "fold(%s, %r, {0})" % (name, z), [i], ax, ref)

    def _fold_all(self, i, v):
        if v.t == "bool":
            return False
        t = v.t
        z = 0 if not is_float(t) else 0.5
        mag = capped(t, (v.mag + 1) * (v.size + 1))

        def ax(a, k):
            return axle.fold_all(axle.add, axle.const(z, t), a)

        def ref(a, b, k):
            return reduce_rows(np.add, "add", t, z, a.reshape(-1), None if b is None else b.reshape(-1))
        return self._add(Val(t, (), not is_float(t), mag), "fold_all(add, %r, {0})" % z, [i], ax, ref)

    def _scan(self, i, v):
        if v.rank == 0 or v.t == "bool":
            return False
        name, fa, uf, z = self._combiner(v)
        if name == "mul":
            return False
        t = v.t
        how = self.r.choice(["scanl", "scanl1", "scanr", "scanr1"])
        n = v.ext[-1]
        ext = v.ext if how.endswith("1") else v.ext[:-1] + (n + 1,)
        mag = capped(t, (v.mag + abs(z)) * (n + 1))
        op = getattr(axle, how)

        def ax(a, k):
            return op(fa, a) if how.endswith("1") else op(fa, axle.const(z, t), a)

        def ref(a, b, k):
            return scan_rows(uf, name, t, None if how.endswith("1") else z, how.startswith("scanr"), a, b)
        text = "%s(%s, {0})" % (how, name) if how.endswith("1") else "%s(%s, %r, {0})" % (how, name, z)
        return self._add(Val(t, ext, v.exact and name != "add" or not is_float(t), mag), text, [i], ax, ref)

    # structure
    def _reverse(self, i, v):
        if v.rank == 0:
            return False

        def ax(a, k):
            sh = axle.shape(a)
            n = sh[v.rank - 1]
            if v.rank == 1:
                return axle.backpermute(sh, lambda ix: n - 1 - ix[0], a)
            return axle.backpermute(sh, lambda ix: tuple(ix[d] for d in range(v.rank - 1)) + (n - 1 - ix[v.rank - 1],),
                                    a)

        def ref(a, b, k):
            return a[..., ::-1], None if b is None else b[..., ::-1]
        return self._add(Val(v.t, v.ext, v.exact, v.mag), "reverse({0})", [i], ax, ref)

    def _transpose(self, i, v):
        if v.rank != 2:
            return False

        def ax(a, k):
            sh = axle.shape(a)
            return axle.backpermute((sh[1], sh[0]), lambda ix: (ix[1], ix[0]), a)

        def ref(a, b, k):
            return a.T, None if b is None else b.T
        return self._add(Val(v.t, v.ext[::-1], v.exact, v.mag), "transpose({0})", [i], ax, ref)

    def _flatten(self, i, v):
        if v.rank < 2:
            return False

        def ax(a, k):
            return axle.flatten(a)

        def ref(a, b, k):
            return a.reshape(-1), None if b is None else b.reshape(-1)
        return self._add(Val(v.t, (v.size,), v.exact, v.mag), "flatten({0})", [i], ax, ref)

    def _row(self, i, v):
        # a vector as a matrix of one row, or of one column
        if v.rank != 1:
            return False
        col = self.r.random() < 0.5

        def ax(a, k):
            n = axle.size(a)
            return axle.reshape((n, 1) if col else (1, n), a)

        def ref(a, b, k):
            sh = (-1, 1) if col else (1, -1)
            return a.reshape(sh), None if b is None else b.reshape(sh)
        ext = (v.ext[0], 1) if col else (1, v.ext[0])
        return self._add(Val(v.t, ext, v.exact, v.mag), "reshape(%s, {0})" % ("(n, 1)" if col else "(1, n)"),
                         [i], ax, ref)

    def _replicate(self, i, v):
        if v.rank >= MAXRANK:
            return False
        n = self.r.randint(0, 3)
        outer = self.r.random() < 0.5
        spec = (n,) + (axle.ALL,) * v.rank if outer else (axle.ALL,) * v.rank + (n,)

        def ax(a, k):
            return axle.replicate(spec, a)

        def rep(x):
            return np.broadcast_to(x, (n,) + x.shape) if outer else np.broadcast_to(x[..., None], x.shape + (n,))

        def ref(a, b, k):
            return rep(a), None if b is None else rep(b)
        ext = (n,) + v.ext if outer else v.ext + (n,)
        return self._add(Val(v.t, ext, v.exact, v.mag), "replicate(%s, {0})" % (("(%d, ALL...)" if outer else
                                                                                  "(ALL..., %d)") % n),
                         [i], ax, ref)

    # running it
    def build(self, accs, k):
        vals = list(accs)
        for _, args, ax, _ in self.steps:
            vals.append(ax(*[vals[a] for a in args], k))
        return tuple(vals[o] for o in self.outputs)

    def reference(self, arrays, k):
        vals = [(np.asarray(a), None) for a in arrays]
        for _, args, _, ref in self.steps:
            ins = []
            for a in args:
                ins += list(vals[a])
            y, b = ref(*ins, k)
            vals.append((np.asarray(y), b))
        return [vals[o] for o in self.outputs]

    def arguments(self, rng):
        """Arrays for the inputs (random shapes, some empty) and k."""
        out = []
        for t, rank in self.inputs:
            shape = tuple(int(rng.choice([0, 1, 1, 2, 3, 4, 5])) for _ in range(rank))
            if t == "bool":
                a = rng.random(shape) < 0.5
            elif is_float(t):
                a = np.asarray(rng.standard_normal(shape)) * 3
            else:
                a = rng.integers(-20, 21, shape)
            out.append(np.asarray(a).astype(NP[t]))
        return out, int(rng.integers(-KMAX, KMAX + 1))


def reduce_rows(uf, name, t, z, a, b):
    """fold(f, z, a) along the innermost dimension: z combined once per row
    (an empty row gives z)."""
    zt = NP[t](z)
    with np.errstate(all="ignore"):
        if name in ("max", "min"):
            y = uf.reduce(a, axis=-1, initial=zt)
        else:   # the reduction of an empty row is the ufunc's identity
            y = uf(uf.reduce(a, axis=-1, dtype=NP[t]), zt)
    y = np.asarray(y).astype(NP[t])
    if not is_float(t):
        return y, None
    if name == "add":
        n = a.shape[-1] + 1
        e = 0.0 if b is None else b.sum(axis=-1)
        mags = np.abs(a.astype(np.float64)).sum(axis=-1) + abs(z) + e
        return y, e + 2 * (n + 1) * UNIT[t] * mags
    return y, None if b is None else b.max(axis=-1, initial=0.0)


def scan_rows(uf, name, t, z, right, a, b):
    """The scans along the innermost dimension: with z (scanl, scanr: one
    more element) or without (scanl1, scanr1); from the right when right."""
    def flip(x):
        return x[..., ::-1] if right else x
    x = flip(a)
    e = None if b is None else flip(b)
    if z is not None:
        zcol = np.full(a.shape[:-1] + (1,), NP[t](z))
        x = np.concatenate([zcol, x], axis=-1)
        if e is not None:
            e = np.concatenate([np.zeros(zcol.shape), e], axis=-1)
    with np.errstate(all="ignore"):
        y = uf.accumulate(x, axis=-1, dtype=NP[t]) if x.shape[-1] else x.copy()
    y = flip(np.asarray(y, NP[t]))
    if not is_float(t):
        return y, None
    if name == "add":
        cnt = np.arange(1, x.shape[-1] + 1)
        ce = 0.0 if e is None else np.cumsum(e, axis=-1)
        mags = np.cumsum(np.abs(x.astype(np.float64)), axis=-1) + ce
        return y, flip(ce + 2 * (cnt + 1) * UNIT[t] * mags)
    return y, None if e is None else flip(np.maximum.accumulate(e, axis=-1) if e.shape[-1] else e)


# ----------------------------------------------------------------- checks


def check(got, want, what):
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want), "%s: %d results, %d expected" % (what, len(got), len(want))
    for n, (g, (w, b)) in enumerate(zip(got, want)):
        where = "%s: result %d" % (what, n)
        assert isinstance(g, np.ndarray), "%s is %r" % (where, type(g))
        assert g.dtype == w.dtype, "%s: dtype %s, expected %s" % (where, g.dtype, w.dtype)
        assert g.shape == w.shape, "%s: shape %s, expected %s" % (where, g.shape, w.shape)
        if b is None:
            np.testing.assert_array_equal(g, w, err_msg=where)
        else:
            # a float sum in it: within the bound of its association
            d = np.abs(g.astype(np.float64) - w.astype(np.float64))
            bad = ~(d <= b) & ~((g == w) | (np.isnan(g) & np.isnan(w)))
            assert not bad.any(), "%s: %s differs from %s by %s, more than the bound %s" % (
                where, g[bad][:3], w[bad][:3], d[bad][:3], np.asarray(b)[bad][:3])


CALLS = 3       # calls per backend, each with new shapes and values


def run_program(seed):
    prog = Program(seed)
    rng = np.random.default_rng(seed)
    for backend in (None, "interp"):
        # (b) compiled once (on the first call), and (a) eagerly, on each
        # call's arguments: the eager run between two calls builds terms
        # where the jit's trace was, as a program does
        opts = {"backend": backend} if backend else {}
        f = axle.jit(lambda *args: prog.build(args[:-1], args[-1]), **opts)
        for call in range(CALLS):
            arrays, k = prog.arguments(rng)
            want = prog.reference(arrays, k)
            on = " on %s" % backend if backend else ""
            check(f(*arrays, k), want, "jit call %d%s" % (call, on))
            with axle.context(**opts) if backend else axle.current_context():
                got = axle.run(*prog.build([axle.use(a) for a in arrays], k))
            check(got, want, "eager run %d%s" % (call, on))
        assert f.compiles == 1, "jit: %d compiles" % f.compiles


@pytest.mark.parametrize("seed", range(SEED0, SEED0 + SEEDS))
def test_random_program(seed):
    try:
        run_program(seed)
    except Exception as e:
        raise AssertionError("%s\n%s: %s\n(again: AXLE_PY_RANDOM_SEED0=%d AXLE_PY_RANDOM_SEEDS=1)"
                             % (Program(seed).text(), type(e).__name__, e, seed)) from e
