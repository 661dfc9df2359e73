# Saved functions: a jitted function saved with every signature it was
# called with, loaded in a process with no C compiler and no disk cache,
# gives what the function gives; a signature not saved, and damaged or
# foreign files, are clear errors.
# SPDX-License-Identifier: BSD-3-Clause
import os
import subprocess
import sys

import numpy as np
import pytest

import axle

W = np.linspace(-3.0, 3.0, 7)


def _weighted(a, x):
    # a used array (saved with the program), a scalar and an array parameter
    w = axle.use(W.astype(x.dtype))
    return axle.zip_with(lambda xi, wi: a * xi + axle.sqrt(axle.abs(wi)), x, w)


def _expect(a, x):
    n = min(len(x), len(W))
    return a * x[:n] + np.sqrt(np.abs(W[:n])).astype(x.dtype)


@pytest.mark.parametrize("backend", ["cpu", "interp"])
def test_saved_function_runs_without_a_compiler(tmp_path, backend):
    f = axle.jit(_weighted, backend=backend, cache_dir=str(tmp_path / "cache"))
    x32 = np.arange(5, dtype=np.float32)
    x64 = np.arange(9, dtype=np.float64)
    want = [f(2.0, x32), f(0.5, x64)]
    path = tmp_path / "weighted.axle"
    f.save(path)

    # in this process, a context without a compiler or a disk cache
    g = axle.load(path, backend=backend, cc="/nonexistent/axle-no-cc", no_cache=True, quiet=True)
    np.testing.assert_allclose(g(2.0, x32), want[0], rtol=1e-6)
    np.testing.assert_allclose(g(0.5, x64), want[1], rtol=1e-12)
    y = np.arange(3, dtype=np.float64) - 1
    np.testing.assert_allclose(g(-1.5, y), _expect(-1.5, y), rtol=1e-12)
    assert all(p.stats["compile_ms"] >= 0 for p in g.programs.values())
    assert len(g.programs) == 2

    # a signature not saved is an error naming the function
    with pytest.raises(TypeError, match="_weighted was not saved for arguments of this signature"):
        g(1.0, np.arange(3, dtype=np.int32))

    # in a new process where no compiler can be found, with the options the
    # function was jitted with (read from the file) but for the compiler
    code = ("import sys, numpy as np, axle\n"
            "g = axle.load(sys.argv[1], backend=sys.argv[2], no_cache=True, quiet=True)\n"
            "r = g(2.0, np.arange(5, dtype=np.float32))\n"
            "print(' '.join('%.6f' % v for v in r))\n")
    env = dict(os.environ, AXLE_CC="/nonexistent/axle-no-cc", PATH="/nonexistent")
    out = subprocess.run([sys.executable, "-c", code, str(path), backend], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    np.testing.assert_allclose([float(v) for v in out.stdout.split()], want[0], rtol=1e-6)


def test_static_arguments_are_part_of_what_is_saved(tmp_path):
    @axle.jit(static_argnums=(1,), cache_dir=str(tmp_path / "cache"))
    def power(x, k):
        r = x
        for _ in range(k - 1):
            r = axle.zip_with(axle.mul, r, x)
        return r

    x = np.arange(4, dtype=np.float64)
    np.testing.assert_allclose(power(x, 3), x ** 3)
    path = tmp_path / "power.axle"
    power.save(path)
    g = axle.load(path, cc="/nonexistent/axle-no-cc", no_cache=True)
    np.testing.assert_allclose(g(x + 1, 3), (x + 1) ** 3)
    with pytest.raises(TypeError, match="was not saved"):
        g(x, 2)


def test_a_static_value_that_cannot_be_saved(tmp_path):
    @axle.jit(static_argnums=(1,))
    def scaled(x, table):
        return axle.map(lambda v: v * table[0], x)

    np.testing.assert_allclose(scaled(np.ones(3), (2.0, 3.0)), [2.0, 2.0, 2.0])
    scaled.save(tmp_path / "ok.axle")             # a tuple of numbers can be saved
    g = axle.load(tmp_path / "ok.axle", cc="/nonexistent/axle-no-cc", no_cache=True)
    np.testing.assert_allclose(g(np.ones(2), (2.0, 3.0)), [2.0, 2.0])

    @axle.jit(static_argnums=(1,))
    def scaled2(x, obj):
        return axle.map(lambda v: v * obj.k, x)

    class K:
        k = 2.0
    scaled2(np.ones(3), K())
    with pytest.raises(TypeError, match="only None, numbers, strings and tuples of them"):
        scaled2.save(tmp_path / "bad.axle")
    assert not (tmp_path / "bad.axle").exists()


def test_nothing_to_save():
    f = axle.jit(_weighted)
    with pytest.raises(ValueError, match="has not been compiled yet"):
        f.save("/tmp/never.axle")


def test_damaged_and_foreign_files_are_refused(tmp_path):
    f = axle.jit(_weighted, cache_dir=str(tmp_path / "cache"))
    f(1.0, np.arange(3, dtype=np.float64))
    path = tmp_path / "f.axle"
    f.save(path)
    data = path.read_bytes()
    bad = tmp_path / "bad.axle"
    opts = dict(cc="/nonexistent/axle-no-cc", no_cache=True)

    bad.write_bytes(b"#!/bin/sh\n")
    with pytest.raises(ValueError, match="not an axle saved function"):
        axle.load(bad, **opts)
    bad.write_bytes(data[:-10])
    with pytest.raises(ValueError, match="truncated"):
        axle.load(bad, **opts)
    bad.write_bytes(data + b"x")
    with pytest.raises(ValueError, match="bytes after its end"):
        axle.load(bad, **opts)
    flipped = bytearray(data)
    flipped[-5] ^= 1                                # inside the program: its content hash
    bad.write_bytes(bytes(flipped))
    with pytest.raises(axle.AxleError, match="content hash"):
        axle.load(bad, **opts)
    head = bytearray(data)
    i = head.index(b'"plan"')
    head[i + 9] = ord("x")                          # the header is no longer JSON
    bad.write_bytes(bytes(head))
    with pytest.raises(ValueError, match="malformed header"):
        axle.load(bad, **opts)
    with pytest.raises(FileNotFoundError):
        axle.load(tmp_path / "none.axle")
    # a program saved in one mode, loaded into another
    with pytest.raises(axle.AxleError, match="compiled in safe, exact maths mode"):
        axle.load(path, unsafe=True, **opts)
    # the good file still loads
    g = axle.load(path, **opts)
    np.testing.assert_allclose(g(1.0, np.arange(3.0)), f(1.0, np.arange(3.0)))


def test_program_save_and_context_load(tmp_path):
    ctx = axle.context(cache_dir=str(tmp_path / "cache"))
    with ctx:
        x = ctx.param(0, "f32", 1)
        p = ctx.compile(axle.fold_all(axle.add, 0, x), [(0, 0, -1)])
    assert p.plan == [(0, 0, -1)]
    path = tmp_path / "sum.axle"
    p.save(str(path))
    bare = axle.context(cc="/nonexistent/axle-no-cc", no_cache=True)
    q = bare.load(path.read_bytes(), p.plan)
    assert float(q(np.arange(10, dtype=np.float32))) == 45.0
    with pytest.raises(axle.AxleError, match="not an axle program file"):
        bare.load(b"nothing", [])
    with pytest.raises(axle.AxleError, match="/nonexistent/dir"):
        p.save("/nonexistent/dir/sum.axle")
