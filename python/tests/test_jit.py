# The jit: one trace and one compile per signature, new arrays, lengths and
# values without compiling again; zero-copy in and out.
# SPDX-License-Identifier: BSD-3-Clause
import threading

import numpy as np
import pytest

import axle


def test_one_compile_for_many_calls(tmp_path):
    @axle.jit(cache_dir=str(tmp_path), quiet=True)
    def saxpy(a, x, y):
        return axle.zip_with(lambda xi, yi: a * xi + yi, x, y)

    rng = np.random.default_rng(0)
    for k in range(100):
        n = [10, 1000, 7, 0][k % 4]
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        a = float(k) / 3
        np.testing.assert_allclose(saxpy(a, x, y), np.float32(a) * x + y, rtol=1e-6)
    assert saxpy.compiles == 1
    assert len(saxpy.programs) == 1
    p = next(iter(saxpy.programs.values()))
    assert p.stats["calls"] == 100
    # on disk one compiled kernel and the program's entry (which finds
    # it in a new process): the values and lengths were data
    assert axle.cache_stats(str(tmp_path))["entries"] == 2


def test_a_new_signature_compiles_once_more():
    @axle.jit
    def total(x):
        return axle.fold_all(axle.add, 0, x)
    assert total(np.arange(5, dtype=np.float32)) == 10
    assert total(np.arange(6, dtype=np.float32)) == 15
    assert total.compiles == 1
    assert total(np.arange(5, dtype=np.int64)) == 10          # another element type
    assert total(np.ones((2, 3), dtype=np.int64)) == 6        # another rank
    assert total.compiles == 3
    assert total(np.arange(4, dtype=np.int64)) == 6
    assert total.compiles == 3


def test_scalar_arguments_are_parameters_of_the_right_type():
    @axle.jit
    def f(x, a, b, flag):
        return axle.map(lambda v: axle.where(flag, v * a + b, v), x)

    x32 = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(f(x32, 2.0, 1, True), x32 * 2 + 1)
    np.testing.assert_array_equal(f(x32, 3.5, -1, True), x32 * 3.5 - 1)
    np.testing.assert_array_equal(f(x32, 3.5, -1, False), x32)
    assert f.compiles == 1
    xi = np.arange(4, dtype=np.int16)
    np.testing.assert_array_equal(f(xi, 3, 2, True), xi * 3 + 2)
    assert f.compiles == 2
    with pytest.raises(OverflowError):
        f(xi, 100000, 2, True)                       # does not fit i16
    # NumPy scalars are typed parameters
    np.testing.assert_array_equal(f(x32, np.float32(0.5), 0, True), x32 * np.float32(0.5))


def test_number_alone_defaults_to_float64_and_int64():
    @axle.jit
    def g(a, b):
        return axle.unit(a * 2), axle.unit(b + 1)
    r, s = g(1.25, 7)
    assert r.dtype == np.float64 and float(r) == 2.5
    assert s.dtype == np.int64 and int(s) == 8


def test_shape_arguments_as_parameters():
    @axle.jit
    def iota(n):
        return axle.generate(n, lambda ix: ix[0])
    np.testing.assert_array_equal(iota(5), np.arange(5))
    np.testing.assert_array_equal(iota(9), np.arange(9))
    assert iota.compiles == 1


def test_static_arguments():
    @axle.jit(static_argnums=(1,))
    def blur(x, size):
        return axle.stencil(lambda n: sum(n) / size, size, x)
    x = np.arange(10, dtype=np.float64)
    r3 = blur(x, 3)
    r5 = blur(x, 5)
    assert blur.compiles == 2
    np.testing.assert_allclose(r3[1:-1], x[1:-1])
    np.testing.assert_allclose(r5[2:-2], x[2:-2])
    blur(x, 3)
    assert blur.compiles == 2


def test_non_numeric_arguments_are_static():
    @axle.jit
    def apply(x, how):
        return axle.map({"neg": lambda v: -v, "sq": lambda v: v * v}[how], x)
    x = np.arange(4.0)
    np.testing.assert_array_equal(apply(x, "neg"), -x)
    np.testing.assert_array_equal(apply(x, "sq"), x * x)
    assert apply.compiles == 2


def test_tuple_arguments_and_results():
    @axle.jit
    def swap_scale(pairs, k):
        return axle.map(lambda p: (p[1] * k, p[0]), pairs)
    a = np.arange(5, dtype=np.float32)
    b = np.arange(5, dtype=np.int32)
    r0, r1 = swap_scale((a, b), 3)
    np.testing.assert_array_equal(r0, b * 3)
    np.testing.assert_array_equal(r1, a)
    assert r0.dtype == np.int32 and r1.dtype == np.float32

    @axle.jit
    def stats(x):
        return axle.fold_all(axle.add, 0, x), axle.fold_all(axle.max, -np.inf, x), axle.map(lambda v: v + 1, x)
    s, m, y = stats(np.arange(6.0))
    assert float(s) == 15 and float(m) == 5
    np.testing.assert_array_equal(y, np.arange(6.0) + 1)


def test_zero_copy_in_and_out():
    @axle.jit
    def ident(x):
        return x

    @axle.jit
    def double(x):
        return axle.map(lambda v: v * 2, x)

    x = np.arange(1000, dtype=np.float64)
    r = ident(x)
    assert np.shares_memory(r, x)
    assert r.__array_interface__["data"][0] == x.__array_interface__["data"][0]
    d = double(x)
    base = d.base
    assert type(base).__name__ == "_ArrayRef"      # axle's memory, no copy
    assert d.__array_interface__["data"][0] % 64 == 0
    # eager computations too
    assert np.shares_memory(axle.use(x).numpy(), x)
    # an input that may not be written gives a result that may not either
    ro = np.frombuffer(np.arange(4, dtype=np.int32).tobytes(), np.int32)
    assert not ident(ro).flags.writeable and not axle.use(ro).numpy().flags.writeable
    assert ident(x).flags.writeable
    e = axle.map(lambda v: v + 1, x).numpy()
    assert type(e.base).__name__ == "_ArrayRef"


def test_results_outlive_everything():
    @axle.jit
    def f(x):
        return axle.map(lambda v: v * 3, x)
    r = f(np.arange(5, dtype=np.int32))
    del f
    import gc
    gc.collect()
    np.testing.assert_array_equal(r, np.arange(5) * 3)
    r[0] = 42                     # results are writable
    assert r[0] == 42


def test_closures_over_arrays_are_data():
    table = np.array([10, 20, 30, 40], np.int32)

    @axle.jit
    def lookup(ix):
        t = axle.use(table)
        return axle.map(lambda i: t[i.astype(np.int64)], ix)
    np.testing.assert_array_equal(lookup(np.array([3, 0, 1], np.int32)), [40, 10, 20])
    np.testing.assert_array_equal(lookup(np.array([2], np.int32)), [30])
    assert lookup.compiles == 1


def test_nested_jit_is_inlined():
    @axle.jit
    def inner(x):
        return axle.map(lambda v: v + 1, x)

    @axle.jit
    def outer(x):
        return axle.fold_all(axle.add, 0, inner(x))
    assert float(outer(np.arange(4.0))) == 10.0
    assert inner.compiles == 0 and outer.compiles == 1


def test_backend_options():
    @axle.jit(backend="interp")
    def f(x):
        return axle.map(lambda v: v * v, x)
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(f(x), x * x)
    assert next(iter(f.programs.values())).stats["backend"] == "interp"

    @axle.jit
    def g(x):
        return axle.map(lambda v: v * v, x)
    with axle.context(backend="interp"):
        g(x)
    g(x)
    assert g.compiles == 2                       # one per context
    backends = sorted(p.stats["backend"] for p in g.programs.values())
    assert backends == ["cpu", "interp"]


def test_debug_flags_reach_the_compiler():
    x = np.arange(100, dtype=np.float32)

    def prog(x):
        return axle.fold_all(axle.add, 0, axle.map(lambda v: v * 2, x))
    fused = axle.jit(prog)
    unfused = axle.jit(prog, debug="no-fusion", threads=1)
    assert float(fused(x)) == float(unfused(x)) == 9900.0
    assert fused.lower(x).stats["kernels"] < unfused.lower(x).stats["kernels"]
    assert axle.context(debug="no-fusion", threads=1).options["threads"] == 1


def test_dump_stages():
    x = np.arange(4, dtype=np.float32)

    def dotp(a, b):
        return axle.fold(axle.add, 0, axle.zip_with(axle.mul, a, b))
    s = axle.dump(dotp, x, x, stage="fusion")
    assert "fold" in s
    k = axle.dump(axle.jit(dotp), x, x, stage="kernels", json=True)
    assert '"kernels":1' in k
    c = axle.dump(axle.map(lambda v: v + 1, x), stage="c")
    assert "void" in c or "static" in c
    with pytest.raises(ValueError):
        axle.dump(dotp, x, x, stage="nope")
    # a jitted function as its last call compiled it
    j = axle.jit(lambda a, s: axle.map(lambda v: v * s, a))
    with pytest.raises(ValueError, match="not been called"):
        axle.dump(j, stage="fusion")
    j(np.ones((2, 3), np.float64), 2.0)
    d = axle.dump(j, stage="source")
    assert "[f64]^2" in d and "param" in d


def test_threads_share_a_jitted_function():
    @axle.jit
    def f(x, a):
        return axle.fold_all(axle.add, 0, axle.map(lambda v: v * a, x))
    x = np.arange(1000, dtype=np.float64)
    errors = []

    def work(k):
        try:
            for i in range(200):
                assert float(f(x, float(k))) == k * 499500.0
        except Exception as e:         # pragma: no cover
            errors.append(e)
    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    assert f.compiles == 1


def test_tuple_results_on_every_call(backend):
    # The result's type that unpacks a call's results must outlive the
    # trace: after the first call the context is reset (the trace's terms
    # are gone), and each later call still returns every result, right.
    @axle.jit
    def f(x, y, k):
        s = axle.zip_with(lambda a, b: a * k + b, x, y)
        return s, axle.fold(axle.add, 0, s), axle.scanl1(axle.max, x), (axle.map(lambda v: -v, y),)

    resets = axle.current_context().stats["resets"]
    rng = np.random.default_rng(7)
    for i in range(40):
        shape = [(5,), (3, 4), (0,), (2, 0), (1,), (6, 1), (17,)][i % 7]
        x = rng.integers(-50, 50, shape).astype(np.int32)
        y = rng.integers(-50, 50, shape).astype(np.int32)
        k = int(rng.integers(-4, 5))
        r = f(x, y, k)
        assert isinstance(r, tuple) and len(r) == 4, "call %d returned %r" % (i, r)
        assert isinstance(r[3], tuple) and len(r[3]) == 1
        s = x * np.int32(k) + y
        np.testing.assert_array_equal(r[0], s)
        np.testing.assert_array_equal(r[1], s.sum(axis=-1, dtype=np.int32))
        np.testing.assert_array_equal(r[2], np.maximum.accumulate(x, axis=-1) if x.size else x)
        np.testing.assert_array_equal(r[3][0], -y)
        assert r[0].dtype == r[1].dtype == r[2].dtype == r[3][0].dtype == np.int32
    # one compile per rank
    assert f.compiles == 2
    # (the calls ran on a context reset since their compile: the case)
    assert axle.current_context().stats["resets"] > resets


# Run in a child process, so that a deadlock fails the test (by the
# timeout) instead of hanging the suite.
_SELF_CALLS = r'''
import numpy as np, pytest, axle

@axle.jit(static_argnums=(1,))
def f(x, depth):
    if depth == 0:
        return axle.map(lambda v: v + 1, x)
    # a call on concrete arrays while f is traced: another signature,
    # compiled and run inside this trace; its result is data of this one
    inner = f(np.arange(4, dtype=np.float64), depth - 1)
    return axle.zip_with(lambda a, b: a * 10 + b, x, axle.use(inner))

def f_numpy(x, depth):
    if depth == 0:
        return x + 1
    inner = f_numpy(np.arange(4, dtype=np.float64), depth - 1)
    n = min(len(x), len(inner))
    return x[:n] * 10 + inner[:n]

for x in (np.ones(4), np.arange(3.0), np.zeros(0), np.arange(9.0) - 4):
    for depth in (3, 1, 0, 2):
        np.testing.assert_array_equal(f(x, depth), f_numpy(x, depth))
assert f.compiles == 4

# the same from inside a scalar function of the trace
@axle.jit(static_argnums=(1,))
def g(x, k):
    if k == 0:
        return axle.map(lambda v: v * 2, x)
    return axle.map(lambda v: v + axle.f64(float(g(np.arange(3.0), k - 1).sum())), x)
np.testing.assert_array_equal(g(np.ones(5), 1), np.ones(5) + 6)
np.testing.assert_array_equal(g(np.ones(2), 2), np.ones(2) + (np.arange(3.0) + 6).sum())
assert g.compiles == 3

# a call of the very signature being traced would trace it again without
# end: an error that says so, and the function stays usable
@axle.jit
def h(x):
    return axle.map(lambda v: v + 1, h(np.ones(2)))
with pytest.raises(RecursionError, match="signature it is being compiled for"):
    h(np.ones(2))
with pytest.raises(RecursionError):
    h(np.ones(2))
assert h.compiles == 0
print("ok")
'''


def test_a_jitted_function_calls_itself_while_traced():
    import subprocess
    import sys
    try:
        r = subprocess.run([sys.executable, "-c", _SELF_CALLS], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("a jitted function calling itself while traced hung (a deadlock?)")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
