# Misuse raises Python exceptions carrying axle's message; the context
# stays usable after each.
# SPDX-License-Identifier: BSD-3-Clause
import numpy as np
import pytest

import axle

X = np.arange(8, dtype=np.float32)


def still_works():
    assert float(axle.fold(axle.add, 0, X)) == 28.0


def test_type_mismatch_is_a_build_error_with_the_message():
    i = np.arange(8, dtype=np.int32)
    with pytest.raises(axle.AxleError) as e:
        axle.zip_with(axle.add, X, i)
    assert e.value.kind == "build"
    assert "f32" in str(e.value) and "i32" in str(e.value)
    still_works()


def test_float_constant_with_an_integer_expression():
    with pytest.raises(TypeError, match="does not convert"):
        axle.map(lambda v: v * 1.5, np.arange(3, dtype=np.int32))
    still_works()


def test_integer_constant_out_of_range():
    with pytest.raises(OverflowError):
        axle.map(lambda v: v + 300, np.arange(3, dtype=np.uint8))


def test_callback_exception_propagates_unchanged():
    class Boom(Exception):
        pass

    def f(v):
        raise Boom("inside")
    with pytest.raises(Boom, match="inside"):
        axle.map(f, X)
    # nested callbacks too
    with pytest.raises(Boom):
        axle.map(lambda v: axle.while_loop(lambda s: s < 3.0, f, v), X)
    still_works()


def test_truth_value_of_an_expression():
    def f(v):
        if v > 0:            # a Python if on a traced value
            return v
        return -v
    with pytest.raises(TypeError, match="axle.where"):
        axle.map(f, X)
    with pytest.raises(TypeError, match="truth value"):
        bool(axle.map(lambda v: v, X))


def test_wrong_callback_result_type():
    with pytest.raises(axle.AxleError) as e:
        axle.fold(lambda a, b: (a < b), 0, X)     # a fold's function must return the element type
    assert e.value.kind == "build"
    with pytest.raises(TypeError):
        axle.map(lambda v: "text", X)
    still_works()


def test_not_callable_and_arity():
    with pytest.raises(TypeError, match="not callable"):
        axle.map(3, X)
    with pytest.raises(TypeError):
        axle.map(lambda v: v)
    with pytest.raises(TypeError):
        axle.map(lambda a, b: a, X)          # called with one argument


def test_unsupported_dtype():
    with pytest.raises(TypeError, match="no element type"):
        axle.use(np.zeros(3, np.float16))
    with pytest.raises(TypeError, match="no element type"):
        axle.use(np.zeros(3, np.complex64))
    with pytest.raises(TypeError):
        axle.use(np.array(["a", "b"]))


def test_run_time_index_out_of_bounds():
    xs = axle.use(X)
    with pytest.raises(axle.AxleError) as e:
        axle.generate(3, lambda ix: xs[ix[0] + 7]).numpy()
    assert e.value.kind == "index"
    still_works()


def test_run_time_integer_division_by_zero():
    z = np.array([1, 0, 2], np.int32)
    with pytest.raises(axle.AxleError) as e:
        axle.map(lambda v: 10 // v, z).numpy()
    assert e.value.kind == "divzero"


def test_reshape_of_the_wrong_size():
    with pytest.raises(axle.AxleError) as e:
        axle.reshape((3, 3), X).numpy()
    assert e.value.kind == "shape"
    still_works()


def test_segments_that_do_not_add_up():
    with pytest.raises(axle.AxleError) as e:
        axle.fold_seg(axle.add, 0, X, np.array([3, 3], np.int32)).numpy()
    assert e.value.kind == "shape"


def test_rank_errors():
    with pytest.raises(axle.AxleError):
        axle.slice((1, 2, axle.ALL), X)
    with pytest.raises(IndexError):
        axle.use(X)[1, 2]
    with pytest.raises(axle.AxleError, match="odd"):
        axle.stencil(lambda n: n[0], 2, X)
    with pytest.raises(ValueError, match="sizes"):
        axle.stencil(lambda n: n[0], (3, 3), X)
    with pytest.raises(ValueError, match="boundary"):
        axle.stencil(lambda n: n[1], 3, X, boundary="nearest")


def test_two_contexts_do_not_mix():
    a = axle.use(X)
    with axle.context(backend="interp"):
        b = axle.use(X)
    with pytest.raises(ValueError, match="context"):
        axle.zip_with(axle.add, a, b)


def test_an_array_in_scalar_code():
    with pytest.raises(TypeError, match="axle.use"):
        axle.map(lambda v: v + X, X)
    with pytest.raises(TypeError, match="element"):
        axle.map(lambda v: v + axle.use(X), X)


def test_unknown_backend_and_debug_flag():
    with pytest.raises(ValueError, match="backend"):
        axle.context(backend="tpu")
    with pytest.raises(ValueError, match="debug"):
        axle.context(debug="no-such-flag")


def test_cuda_without_a_gpu_is_a_clear_error():
    c = axle.context(backend="cuda", quiet=True)
    with c:
        try:
            r = axle.map(lambda v: v + 1, X).numpy()
        except axle.AxleError as e:
            assert e.kind == "backend" and "CUDA" in str(e)
        else:
            np.testing.assert_array_equal(r, X + 1)


def test_jit_misuse():
    @axle.jit
    def f(x, a):
        return axle.map(lambda v: v * a, x)
    with pytest.raises(TypeError, match="float"):
        f(np.arange(3, dtype=np.int32), 2.5)       # a float meets an i32 expression
    np.testing.assert_array_equal(f(np.arange(3, dtype=np.int32), 2), [0, 2, 4])
    with pytest.raises(TypeError):
        f(np.arange(3, dtype=np.int32), [1, 2])    # unhashable, not an array or number


def test_a_signal_stops_an_endless_loop():
    import os
    import signal
    import threading
    import time

    class Stop(Exception):
        pass

    def handler(signum, frame):
        raise Stop()
    old = signal.signal(signal.SIGINT, handler)
    try:
        x = np.zeros(10, np.float32)
        threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        t = time.monotonic()
        with pytest.raises(Stop):
            axle.awhile(lambda a: axle.fold_all(axle.add, 0, a)[()] >= 0,
                        lambda a: axle.map(lambda v: v + 1, a), x).numpy()
        assert time.monotonic() - t < 10
    finally:
        signal.signal(signal.SIGINT, old)
    still_works()


def test_notices_are_warnings(monkeypatch):
    monkeypatch.setenv("AXLE_THREADS", "lots")
    c = axle.Context(backend="interp")
    with pytest.warns(RuntimeWarning, match="AXLE_THREADS"):
        with c:
            axle.unit(axle.i32(1)).numpy()


def test_compile_checks_the_plan():
    # A plan entry says which argument of a call (argpos) becomes which
    # parameter, as an array (-1) or a scalar of a type: each is checked
    # when the program is compiled, since a call indexes its arguments
    # with it.
    ctx = axle.current_context()
    x = ctx.param(0, np.float32, 1)
    acc = axle.map(lambda v: v + 1, x)
    for entry, what in [((0, -1, -1), "argument position -1"), ((0, -(2 ** 31), -1), "argument position"),
                        ((0, 2 ** 31 - 1, -1), "argument position"), ((-1, 0, -1), "parameter index -1"),
                        ((axle._axle.MAX_PARAMS, 0, -1), "parameter index"), ((0, 0, -2), "scalar code -2"),
                        ((0, 0, 11), "scalar code 11"), ((0, 0, 10 ** 6), "scalar code")]:
        with pytest.raises(ValueError, match="plan entry 0: the " + what):
            ctx.compile(acc, [entry])
    with pytest.raises(ValueError, match="plan entry 1"):
        ctx.compile(acc, [(0, 0, -1), (1, -5, 10)])
    # a good plan compiles and runs, with the argument where it says
    p = ctx.compile(acc, [(0, 2, -1)])
    np.testing.assert_array_equal(p(None, "unused", X), X + 1)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        p(X)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        axle._axle.c_loop(p, (X,), 1)          # (the benchmark's loop in C)
    # and a scalar parameter of the largest type code (f64)
    e = ctx.param_exp(1, np.float64)
    q = ctx.compile(axle.map(lambda v: v.astype(np.float64) * e, x), [(0, 0, -1), (1, 1, 10)])
    np.testing.assert_array_equal(q(X, 2.5), X.astype(np.float64) * 2.5)
    still_works()
