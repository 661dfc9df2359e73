# Reference counting and memory: no leak over 10,000 calls, measured (the
# process's resident memory, Python's allocations and reference counts).
# SPDX-License-Identifier: BSD-3-Clause
import gc
import os
import sys
import tracemalloc

import numpy as np

import axle

CALLS = 10_000
# AXLE_PYTEST_RSS=0 (python/tools/test-san.sh) leaves out the checks of
# the resident size: under AddressSanitizer it measures the quarantine
# that holds freed memory back to catch its use, not axle (LeakSanitizer
# checks leaks there).
RSS = os.environ.get("AXLE_PYTEST_RSS", "1") != "0"


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def measure(step, calls=CALLS):
    """Runs step() `calls` times after a warm-up; returns (RSS growth KiB,
    Python allocation growth bytes)."""
    for _ in range(calls // 10):
        step()
    gc.collect()
    tracemalloc.start()
    r0 = rss_kib()
    t0, _ = tracemalloc.get_traced_memory()
    for _ in range(calls):
        step()
    gc.collect()
    t1, _ = tracemalloc.get_traced_memory()
    r1 = rss_kib()
    tracemalloc.stop()
    return r1 - r0, t1 - t0


def test_jit_calls_do_not_leak():
    @axle.jit
    def step(x, y, a):
        return axle.zip_with(lambda u, v: u * a + v, x, y), axle.fold_all(axle.add, 0, x)

    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, dtype=np.float32)
    rx, ry = sys.getrefcount(x), sys.getrefcount(y)
    keep = []

    def call():
        r, s = step(x, y, 2.0)
        assert r[3] == 7.0
        keep.append(r) if len(keep) < 3 else None
    drss, dpy = measure(call)
    del keep[:]
    gc.collect()
    assert sys.getrefcount(x) == rx and sys.getrefcount(y) == ry
    assert not RSS or drss < 2048, "resident memory grew by %d KiB over %d calls" % (drss, CALLS)
    assert dpy < 64 * 1024, "Python allocations grew by %d bytes over %d calls" % (dpy, CALLS)
    assert step.compiles == 1


def test_eager_computations_do_not_leak():
    x = np.arange(100, dtype=np.float32)
    rx = sys.getrefcount(x)
    c = axle.current_context()

    def call():
        assert float(axle.fold(axle.add, 0, axle.zip_with(axle.mul, x, x))) == 328350.0
    drss, dpy = measure(call, CALLS // 2)
    axle.unit(axle.i32(0)).numpy()              # the next operation resets the context
    gc.collect()
    assert sys.getrefcount(x) == rx
    assert not RSS or drss < 4096, "resident memory grew by %d KiB" % drss
    assert dpy < 64 * 1024
    # the context was reset between the runs: terms do not pile up
    assert c.stats["live"] == 0
    assert c.stats["resets"] > CALLS // 4


def test_results_release_axle_memory():
    @axle.jit
    def big(n):
        return axle.generate(n, lambda ix: ix[0].astype(np.float64))

    big(10)
    r0 = rss_kib()
    for _ in range(50):
        r = big(2_000_000)          # 16 MB each, released as each result goes
        assert r[-1] == 1_999_999
        del r
    assert not RSS or rss_kib() - r0 < 64 * 1024


def test_borrowed_arrays_are_released_after_reset():
    c = axle.current_context()
    x = np.arange(50, dtype=np.int64)
    before = sys.getrefcount(x)
    a = axle.map(lambda v: v + 1, x)
    assert sys.getrefcount(x) > before          # the computation borrows x
    np.testing.assert_array_equal(a.numpy(), x + 1)
    del a
    axle.unit(axle.i32(0)).numpy()              # the next operation resets the context
    assert c.stats["borrowed"] <= 1
    assert sys.getrefcount(x) == before


def test_results_keep_their_inputs_alive():
    # a result that is an input (the identity) keeps the input's memory
    x = np.arange(10, dtype=np.float32)
    r = axle.use(x).numpy()
    del x
    gc.collect()
    np.testing.assert_array_equal(r, np.arange(10, dtype=np.float32))


def test_callbacks_and_terms_are_freed():
    class F:
        def __call__(self, v):
            return v * 2
    f = F()
    rf = sys.getrefcount(f)
    x = np.arange(10, dtype=np.float32)
    for _ in range(100):
        axle.map(f, x).numpy()
    assert sys.getrefcount(f) == rf
