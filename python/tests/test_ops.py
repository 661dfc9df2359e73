# Every array operation and the scalar language against NumPy, on each
# backend that runs here.
# SPDX-License-Identifier: BSD-3-Clause
import numpy as np
import pytest

import axle

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float32, np.float64]


def test_done_when_dot_product():
    x = np.arange(10, dtype=np.float32)
    r = axle.fold(axle.add, 0, axle.zip_with(axle.mul, x, x))
    assert str(r) == "285.0"
    assert float(r) == 285.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_use_round_trip_every_dtype(dtype, rng):
    x = (rng.integers(0, 2, 17) if dtype is np.bool_ else rng.integers(0, 100, 17)).astype(dtype)
    r = axle.use(x).numpy()
    assert r.dtype == x.dtype and np.array_equal(r, x)
    m = axle.map(lambda v: v, x).numpy()          # (the identity: may be x itself)
    assert m.dtype == x.dtype and np.array_equal(m, x)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16, np.uint64, np.float32, np.float64])
def test_map_arithmetic_every_numeric_dtype(dtype, rng):
    x = rng.integers(1, 50, 33).astype(dtype)
    got = axle.map(lambda v: v * 2 + 1 - v // 3, x).numpy()
    want = (x * dtype(2) + dtype(1) - x // dtype(3)).astype(dtype)
    np.testing.assert_array_equal(got, want)


def test_map_zip_with_fold(backend, rng):
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    np.testing.assert_allclose(axle.map(lambda v: axle.exp(v) * 2 - 1, x).numpy(), np.exp(x) * 2 - 1, rtol=1e-5)
    np.testing.assert_allclose(axle.zip_with(lambda a, b: a * b + a, x, y).numpy(), x * y + x, rtol=1e-6)
    np.testing.assert_allclose(float(axle.fold(axle.add, 0, axle.zip_with(axle.mul, x, y))), np.dot(x, y),
                               rtol=1e-4)
    z = rng.standard_normal(1000).astype(np.float32)
    np.testing.assert_allclose(axle.zip_with(lambda a, b, c: a * b + c, x, y, z).numpy(), x * y + z, rtol=1e-6)


def test_fold_along_innermost(backend, rng):
    m = rng.integers(-100, 100, (7, 13)).astype(np.int32)
    np.testing.assert_array_equal(axle.fold(axle.add, 0, m).numpy(), m.sum(axis=1, dtype=np.int32))
    np.testing.assert_array_equal(axle.fold1(axle.max, m).numpy(), m.max(axis=1))
    np.testing.assert_array_equal(axle.fold_all(axle.add, 5, m).numpy(), m.sum(dtype=np.int32) + 5)
    assert axle.fold(axle.add, 0, m).ndim == 1


def test_fold_non_commutative_order_kept(backend):
    # (a, b) . (c, d) = (a*c, a*d + b): affine maps composed in order
    a = np.array([2, 3, 1, 5], np.int64)
    b = np.array([1, 0, 4, 2], np.int64)
    f = lambda p, q: (p[0] * q[0], p[0] * q[1] + p[1])   # noqa: E731
    ra, rb = axle.fold1(f, axle.use((a, b))).numpy()
    ea, eb = a[0], b[0]
    for i in range(1, 4):
        ea, eb = ea * a[i], ea * b[i] + eb
    assert (ra, rb) == (ea, eb)


def test_segmented_folds(backend):
    x = np.arange(10, dtype=np.float64)
    segs = np.array([3, 0, 5, 2], np.int32)
    want = np.array([x[0:3].sum(), 0.0, x[3:8].sum(), x[8:10].sum()])
    np.testing.assert_array_equal(axle.fold_seg(axle.add, 0, x, segs).numpy(), want)
    segs1 = np.array([3, 5, 2], np.int64)
    np.testing.assert_array_equal(axle.fold1_seg(axle.max, x, segs1).numpy(), [2, 7, 9])


def _seg_rows(a, segs, fn):
    """fn applied to each segment of each row of a (innermost dimension), concatenated."""
    out = []
    for row in a.reshape(-1, a.shape[-1]):
        parts, at = [], 0
        for n in segs:
            parts.append(fn(row[at:at + n]))
            at += n
        out.append(np.concatenate(parts) if parts else np.zeros(0, a.dtype))
    return np.array(out).reshape(a.shape[:-1] + (-1,))


def test_segmented_scans(backend, rng):
    x = rng.integers(-50, 50, (3, 12)).astype(np.int64)
    segs = np.array([0, 4, 1, 0, 7, 0], np.int32)
    z = 5
    cs = np.cumsum
    want = {
        "scanl1_seg": _seg_rows(x, segs, cs),
        "scanr1_seg": _seg_rows(x, segs, lambda s: cs(s[::-1])[::-1]),
        "scanl_seg": _seg_rows(x, segs, lambda s: np.concatenate([[z], z + cs(s)])),
        "scanr_seg": _seg_rows(x, segs, lambda s: np.concatenate([z + cs(s[::-1])[::-1], [z]])),
    }
    got = {
        "scanl1_seg": axle.scanl1_seg(axle.add, x, segs),
        "scanr1_seg": axle.scanr1_seg(axle.add, x, segs),
        "scanl_seg": axle.scanl_seg(axle.add, z, x, segs),
        "scanr_seg": axle.scanr_seg(axle.add, z, x, segs),
    }
    for k in want:
        np.testing.assert_array_equal(got[k].numpy(), want[k], err_msg=k)
    ex, tot = axle.scanl_ex_seg(axle.add, z, x, segs)
    np.testing.assert_array_equal(ex.numpy(), _seg_rows(x, segs, lambda s: z + cs(s) - s))
    np.testing.assert_array_equal(tot.numpy(), _seg_rows(x, segs, lambda s: [z + s.sum()]))
    ex, tot = axle.scanr_ex_seg(axle.add, z, x, segs)
    np.testing.assert_array_equal(ex.numpy(), _seg_rows(x, segs, lambda s: z + cs(s[::-1])[::-1] - s))
    np.testing.assert_array_equal(tot.numpy(), _seg_rows(x, segs, lambda s: [z + s.sum()]))


def test_segmented_scans_keep_operand_order(backend):
    # affine maps (a, b) . (c, d) = (a*c, a*d + b), composed in order within each segment
    a = np.array([2, 3, 1, 5, 7, 2], np.int64)
    b = np.array([1, 0, 4, 2, 3, 9], np.int64)
    f = lambda p, q: (p[0] * q[0], p[0] * q[1] + p[1])   # noqa: E731
    ra, rb = axle.scanl1_seg(f, axle.use((a, b)), np.array([2, 0, 4], np.int32)).numpy()
    want = []
    for lo, hi in ((0, 2), (2, 6)):
        acc = None
        for i in range(lo, hi):
            acc = (a[i], b[i]) if acc is None else (acc[0] * a[i], acc[0] * b[i] + acc[1])
            want.append(acc)
    assert list(zip(ra.tolist(), rb.tolist())) == [tuple(int(v) for v in w) for w in want]


def test_segmented_scan_bad_segments(backend):
    x = np.arange(6, dtype=np.float32)
    for segs in ([2, 2, 1], [2, -1, 5], [7]):
        with pytest.raises(axle.AxleError, match="segment"):
            axle.scanl1_seg(axle.add, x, np.array(segs, np.int32)).numpy()
    with pytest.raises(axle.AxleError, match="scanl_seg"):
        axle.scanl_seg(axle.add, 0, x, np.array([1.0, 5.0], np.float32))


def test_scans(backend, rng):
    x = rng.integers(0, 10, 50).astype(np.int32)
    c = np.cumsum(x, dtype=np.int32)
    np.testing.assert_array_equal(axle.scanl(axle.add, 0, x).numpy(), np.concatenate([[0], c]))
    np.testing.assert_array_equal(axle.scanl1(axle.add, x).numpy(), c)
    rc = np.cumsum(x[::-1], dtype=np.int32)[::-1]
    np.testing.assert_array_equal(axle.scanr(axle.add, 0, x).numpy(), np.concatenate([rc, [0]]))
    np.testing.assert_array_equal(axle.scanr1(axle.add, x).numpy(), rc)
    ex, tot = axle.scanl_ex(axle.add, 0, x)
    np.testing.assert_array_equal(ex.numpy(), np.concatenate([[0], c[:-1]]))
    assert int(tot) == c[-1]
    exr, totr = axle.run(*axle.scanr_ex(axle.add, 0, x))
    np.testing.assert_array_equal(exr, np.concatenate([rc[1:], [0]]))
    assert int(totr) == rc[0]


def test_scan_rows_of_a_matrix(backend, rng):
    m = rng.standard_normal((4, 9))
    np.testing.assert_allclose(axle.scanl1(axle.add, m).numpy(), np.cumsum(m, axis=1), rtol=1e-12)


def test_generate(backend):
    g = axle.generate((3, 4), lambda ix: ix[0] * 10 + ix[1]).numpy()
    np.testing.assert_array_equal(g, np.arange(3)[:, None] * 10 + np.arange(4))
    assert g.dtype == np.int64
    v = axle.generate(5, lambda ix: (ix[0] * 2).astype(np.float32)).numpy()
    np.testing.assert_array_equal(v, np.arange(5, dtype=np.float32) * 2)


def test_backpermute_reverse_and_transpose(backend, rng):
    x = rng.standard_normal(11)
    n = axle.size(axle.use(x))
    rev = axle.backpermute(axle.shape(axle.use(x)), lambda ix: n - 1 - ix[0], x)
    np.testing.assert_array_equal(rev.numpy(), x[::-1])
    m = rng.standard_normal((3, 5))
    t = axle.backpermute((5, 3), lambda ix: (ix[1], ix[0]), m)
    np.testing.assert_array_equal(t.numpy(), m.T)


def test_permute_histogram_and_ignore(backend, rng):
    v = rng.integers(0, 8, 500).astype(np.int32)
    vs = axle.use(v)
    hist = axle.permute(axle.add, np.zeros(8, np.int32), lambda ix: vs[ix].astype(np.int64),
                        np.ones(500, np.int32))
    np.testing.assert_array_equal(hist.numpy(), np.bincount(v, minlength=8))
    # elements mapped to ignore are dropped
    kept = axle.permute(axle.add, np.zeros(8, np.int32),
                        lambda ix: axle.where(vs[ix] < 4, axle.index(vs[ix].astype(np.int64)), axle.ignore(1)),
                        np.ones(500, np.int32))
    want = np.bincount(v, minlength=8)
    want[4:] = 0
    np.testing.assert_array_equal(kept.numpy(), want)


def test_replicate_slice_reshape_flatten(backend):
    v = np.arange(4, dtype=np.float32)
    rows = axle.replicate((3, axle.ALL), v).numpy()
    np.testing.assert_array_equal(rows, np.tile(v, (3, 1)))
    cols = axle.replicate((axle.ALL, 2), v).numpy()
    np.testing.assert_array_equal(cols, np.repeat(v[:, None], 2, axis=1))
    m = np.arange(12, dtype=np.int32).reshape(3, 4)
    np.testing.assert_array_equal(axle.slice((1, axle.ALL), m).numpy(), m[1])
    np.testing.assert_array_equal(axle.slice((axle.ALL, 2), m).numpy(), m[:, 2])
    np.testing.assert_array_equal(axle.use(m)[2].numpy(), m[2])
    np.testing.assert_array_equal(axle.use(m)[:, 1].numpy(), m[:, 1])
    np.testing.assert_array_equal(axle.reshape((4, 3), m).numpy(), m.reshape(4, 3))
    np.testing.assert_array_equal(axle.flatten(m).numpy(), m.ravel())


def test_transpose(backend, rng):
    m = np.arange(12, dtype=np.int32).reshape(3, 4)
    np.testing.assert_array_equal(axle.transpose(m).numpy(), m.T)
    t = rng.standard_normal((2, 3, 5))
    for axes in [None, (0, 2, 1), (2, 0, 1), (1, 0, 2)]:
        np.testing.assert_array_equal(axle.transpose(t, axes).numpy(), np.transpose(t, axes))
    np.testing.assert_array_equal(axle.map(lambda e: e * 2, axle.transpose(m)).numpy(), m.T * 2)
    with pytest.raises(axle.AxleError, match="ax_transpose: perm names dimension 0 twice"):
        axle.transpose(m, (0, 0))
    with pytest.raises(ValueError, match="axes has 3 entries"):
        axle.transpose(m, (0, 1, 2))


def test_filter(backend, rng):
    x = rng.integers(-50, 50, 300).astype(np.int16)
    np.testing.assert_array_equal(axle.filter(lambda e: (e > 0) & (e % 3 == 0), x).numpy(),
                                  x[(x > 0) & (x % 3 == 0)])
    m = rng.standard_normal((5, 6))
    np.testing.assert_array_equal(axle.filter(lambda e: e < 0, m).numpy(), m[m < 0])


@pytest.mark.parametrize("boundary", ["clamp", "mirror", "wrap", 0.5])
def test_stencil_boundaries(backend, boundary, rng):
    m = rng.standard_normal((6, 7))
    got = axle.stencil(lambda n: n[0][1] + n[1][0] + n[1][2] + n[2][1] - 4 * n[1][1], (3, 3), m,
                       boundary=boundary).numpy()
    if isinstance(boundary, float):
        p = np.pad(m, 1, mode="constant", constant_values=boundary)
    else:
        p = np.pad(m, 1, mode={"clamp": "edge", "mirror": "reflect", "wrap": "wrap"}[boundary])
    want = p[:-2, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] + p[2:, 1:-1] - 4 * p[1:-1, 1:-1]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_stencil_1d_and_stencil2(backend):
    x = np.arange(8, dtype=np.float32)
    got = axle.stencil(lambda n: n[0] + n[1] + n[2], 3, x, boundary=0).numpy()
    p = np.pad(x, 1)
    np.testing.assert_array_equal(got, p[:-2] + p[1:-1] + p[2:])
    y = np.ones(8, dtype=np.float32) * 10
    got2 = axle.stencil2(lambda a, b: a[1] * b[0] + b[2], 3, x, 3, y, boundary_a="clamp", boundary_b="wrap").numpy()
    np.testing.assert_array_equal(got2, x * 10 + 10)


def test_stencil_with_index(backend, rng):
    # Jacobi's sweep in one pass: the interior averaged, the border kept
    m = rng.standard_normal((6, 7))
    rows, cols = m.shape

    def sweep(n, ix):
        i, j = ix
        border = (i == 0) | (j == 0) | (i == rows - 1) | (j == cols - 1)
        return axle.where(border, n[1][1], 0.2 * (n[0][1] + n[1][0] + n[1][1] + n[1][2] + n[2][1]))

    got = axle.stencil(sweep, (3, 3), m, index=True).numpy()
    want = m.copy()
    want[1:-1, 1:-1] = 0.2 * (m[:-2, 1:-1] + m[1:-1, :-2] + m[1:-1, 1:-1] + m[1:-1, 2:] + m[2:, 1:-1])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    x = np.arange(6, dtype=np.int64)
    got2 = axle.stencil2(lambda a, b, ix: a[1] + b[0] * 100 + ix[0] * 1000, 3, x, 1, x, index=True).numpy()
    np.testing.assert_array_equal(got2, x + x * 100 + np.arange(6) * 1000)


def test_acond_awhile(backend):
    x = np.arange(5, dtype=np.int32)
    xs = axle.use(x)
    s = axle.fold_all(axle.add, 0, xs)
    r = axle.acond(s[()] > 5, axle.map(lambda v: v * 2, xs), axle.map(lambda v: -v, xs))
    np.testing.assert_array_equal(r.numpy(), x * 2)
    r2 = axle.acond(False, xs, axle.map(lambda v: v + 1, xs))
    np.testing.assert_array_equal(r2.numpy(), x + 1)
    # double until the sum passes 1000
    w = axle.awhile(lambda a: axle.fold_all(axle.add, 0, a)[()] < 1000, lambda a: axle.map(lambda v: v * 2, a), x)
    np.testing.assert_array_equal(w.numpy(), x * 128)


def test_awhile_over_an_array_tuple(backend):
    x = np.arange(4, dtype=np.float64)
    init = axle.atuple(x, np.zeros((), np.int32))

    def body(t):
        a, k = t
        return (axle.map(lambda v: v + 1, a), axle.map(lambda i: i + 1, k))

    a, k = axle.awhile(lambda t: t[1][()] < 3, body, init).numpy()
    np.testing.assert_array_equal(a, x + 3)
    assert int(k) == 3


def test_sort(backend, rng):
    x = rng.integers(-5, 5, (3, 40)).astype(np.int32)
    np.testing.assert_array_equal(axle.sort(x).numpy(), np.sort(x, kind="stable"))
    np.testing.assert_array_equal(axle.sort(x, descending=True).numpy(), -np.sort(-x, kind="stable"))
    ids = np.arange(x.size, dtype=np.int64).reshape(x.shape)
    k, v = axle.sort_by(x, ids)
    np.testing.assert_array_equal(v.numpy(), np.argsort(x, kind="stable") + np.arange(3)[:, None] * 40)
    f = np.array([2.5, np.nan, -0.0, 0.0, -np.inf, 1.0, np.nan], np.float64)
    got = axle.sort(f).numpy()
    np.testing.assert_array_equal(got[:5], [-np.inf, -0.0, 0.0, 1.0, 2.5])
    assert np.signbit(got[1]) and not np.signbit(got[2]) and np.isnan(got[5:]).all()
    np.testing.assert_array_equal(axle.sort(axle.map(lambda v: v * v, np.array([3, -1, 2], np.int64))).numpy(),
                                  [1, 4, 9])


def test_group_by_and_reduce_by_key(backend, rng):
    keys = rng.integers(0, 6, 200).astype(np.int32)
    vals = np.arange(200, dtype=np.int64)
    counts, grouped = axle.group_by(keys, vals, 8)
    np.testing.assert_array_equal(counts.numpy(), np.bincount(keys, minlength=8))
    np.testing.assert_array_equal(grouped.numpy(), vals[np.argsort(keys, kind="stable")])
    w = rng.integers(0, 10, 200).astype(np.float64)
    sums = axle.reduce_by_key(lambda a, b: a + b, 0.0, keys, w, 8).numpy()
    np.testing.assert_array_equal(sums, np.bincount(keys, weights=w, minlength=8))
    with pytest.raises(axle.AxleError):
        axle.group_by(np.array([0, 9], np.int32), np.array([1, 2], np.int64), 8)[0].numpy()


def test_compute(backend):
    x = np.arange(6, dtype=np.float64)
    t = axle.compute(axle.map(lambda v: v * v + 1, x))
    np.testing.assert_array_equal(axle.zip_with(lambda a, b: a + b, t, axle.map(lambda v: v * 2, t)).numpy(),
                                  3 * (x * x + 1))
    k = axle.dump(lambda a: axle.map(lambda v: v + 1, axle.compute(axle.map(lambda v: v * 2, a))), x,
                  stage="kernels", json=True)
    assert '"kernels":2' in k.replace(" ", "")


def test_for_loop(backend):
    x = np.array([1, -2, 3, 0], np.int64)
    for n in (0, 1, 6, -2):
        want = x.copy()
        for s in range(max(n, 0)):
            want = want * 2 + s
        got = axle.for_loop(n, lambda step, a: axle.map(lambda v: v * 2 + step, a), x).numpy()
        np.testing.assert_array_equal(got, want)
    # a tuple state, unpacked like awhile's
    a, k = axle.for_loop(3, lambda step, t: (axle.map(lambda v: v + 1, t[0]), axle.map(lambda i: i + step, t[1])),
                         axle.atuple(x, np.zeros((), np.int64))).numpy()
    np.testing.assert_array_equal(a, x + 3)
    assert int(k) == 0 + 1 + 2


def test_transpose_property_and_matmul(backend, rng):
    a = rng.integers(-9, 9, (5, 3)).astype(np.int64)
    b = rng.integers(-9, 9, (3, 4)).astype(np.int64)
    v = rng.integers(-9, 9, 3).astype(np.int64)
    w = rng.integers(-9, 9, 5).astype(np.int64)
    A, B = axle.use(a), axle.use(b)
    np.testing.assert_array_equal(A.T.numpy(), a.T)
    np.testing.assert_array_equal((A @ B).numpy(), a @ b)
    np.testing.assert_array_equal((A @ v).numpy(), a @ v)
    np.testing.assert_array_equal((w @ A).numpy(), w @ a)          # NumPy on the left
    assert int((axle.use(v) @ v).numpy()) == int(v @ v)
    np.testing.assert_array_equal((B.T @ A.T).numpy(), (a @ b).T)
    x = rng.standard_normal((7, 6))
    np.testing.assert_allclose((axle.use(x) @ x.T).numpy(), x @ x.T, rtol=1e-12, atol=1e-12)
    with pytest.raises(TypeError, match="matmul"):
        axle.use(a) @ b.astype(np.float64)
    with pytest.raises(ValueError, match="matmul"):
        axle.use(np.zeros((2, 2, 2))) @ np.zeros((2, 2))


def test_use_reads_the_array_each_time_it_runs(backend):
    # a NumPy array changed after use() is read anew by the next run, on a GPU backend too
    # (whose device copy of the first run must not be reused)
    x = np.arange(5, dtype=np.int32)
    a = axle.use(x)
    s = axle.fold_all(axle.add, 0, a)
    assert int(s.numpy()) == 10
    x[:] = 1
    assert int(s.numpy()) == 5
    assert int(axle.fold_all(axle.add, 0, a).numpy()) == 5


def test_dlpack_in_and_out(backend):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = axle.from_dlpack(x)                       # NumPy speaks DLPack too
    r = axle.map(lambda v: v * 2, a)
    assert r.__dlpack_device__() == (1, 0)
    back = np.from_dlpack(r)
    np.testing.assert_array_equal(back, x * 2)
    # not copied on the way in: the program reads the tensor's memory when it runs
    x[0, 0] = 100
    assert axle.map(lambda v: v + 1, a).numpy()[0, 0] == 101
    with pytest.raises(TypeError, match="tuple"):
        axle.atuple(x, x).__dlpack__()


def test_dlpack_with_torch_if_installed(backend):
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float64)
    got = torch.from_dlpack(axle.map(lambda v: v + 1, axle.from_dlpack(t)))
    assert torch.equal(got, t + 1)


def test_scalar_language(backend):
    x = np.linspace(-3, 3, 61)
    cases = [
        (lambda v: axle.sqrt(axle.abs(v)), np.sqrt(np.abs(x))),
        (lambda v: axle.sin(v) + axle.cos(v) * axle.tanh(v), np.sin(x) + np.cos(x) * np.tanh(x)),
        (lambda v: axle.atan2(v, 2.0), np.arctan2(x, 2.0)),
        (lambda v: v ** 2, x ** 2),
        (lambda v: axle.where(v > 0, v, -v * 2), np.where(x > 0, x, -x * 2)),
        (lambda v: axle.min(v, 1.0) + axle.maximum(v, -1.0), np.minimum(x, 1) + np.maximum(x, -1)),
        (lambda v: axle.floor(v) + axle.ceil(v) + axle.round(v) + axle.trunc(v),
         np.floor(x) + np.ceil(x) + np.round(x) + np.trunc(x)),
        (lambda v: axle.signum(v) * -v, np.sign(x) * -x),
        (lambda v: axle.exp(axle.log(axle.abs(v) + 1)), np.abs(x) + 1),
    ]
    for f, want in cases:
        np.testing.assert_allclose(axle.map(f, x).numpy(), want, rtol=1e-12, atol=1e-15)


def test_integer_operators_follow_python():
    x = np.array([-7, -1, 0, 5, 9], np.int32)
    np.testing.assert_array_equal(axle.map(lambda v: v // 2, x).numpy(), x // 2)
    np.testing.assert_array_equal(axle.map(lambda v: v % 3, x).numpy(), x % 3)
    np.testing.assert_array_equal(axle.map(lambda v: axle.quot(v, 2), x).numpy(), np.trunc(x / 2).astype(np.int32))
    np.testing.assert_array_equal(axle.map(lambda v: (v & 6) | (v ^ 1), x).numpy(), (x & 6) | (x ^ 1))
    np.testing.assert_array_equal(axle.map(lambda v: (v << 2) >> 1, x).numpy(), (x << 2) >> 1)
    np.testing.assert_array_equal(axle.map(lambda v: ~v, x).numpy(), ~x)
    np.testing.assert_array_equal(axle.map(lambda v: axle.popcount(v.astype(np.uint32)), x).numpy(),
                                  [bin(int(v) & 0xFFFFFFFF).count("1") for v in x])


def test_comparisons_and_booleans():
    x = np.array([1, 5, 3, 7], np.int64)
    got = axle.map(lambda v: ((v > 2) & (v != 7)) | ~(v >= 1) ^ (v == 3), x).numpy()
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, ((x > 2) & (x != 7)) | ~(x >= 1) ^ (x == 3))
    np.testing.assert_array_equal(axle.map(lambda v: axle.not_(v < 4), x).numpy(), ~(x < 4))


def test_conversions():
    x = np.array([1.7, -2.5, 300.2], np.float64)
    np.testing.assert_array_equal(axle.map(lambda v: v.astype(np.int32), x).numpy(), x.astype(np.int32))
    np.testing.assert_array_equal(axle.map(lambda v: axle.round(v, np.int64), x).numpy(), [2, -2, 300])
    np.testing.assert_array_equal(axle.map(lambda v: axle.cvt(v, "u8"), x).numpy(), [1, 0, 255])   # saturates
    f = np.array([1.0, -0.0], np.float32)
    np.testing.assert_array_equal(axle.map(lambda v: axle.bitcast(v, np.uint32), f).numpy(), f.view(np.uint32))


def test_scalar_while_loop():
    # Collatz steps
    x = np.array([1, 6, 7, 27], np.int64)

    def steps(n):
        body = lambda s: (axle.where(s[0] % 2 == 0, s[0] // 2, 3 * s[0] + 1), s[1] + 1)  # noqa: E731
        return axle.while_loop(lambda s: s[0] != 1, body, (n, axle.i32(0)))[1]

    def ref(n):
        k = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            k += 1
        return k
    np.testing.assert_array_equal(axle.map(steps, x).numpy(), [ref(int(n)) for n in x])


def test_tuples_in_and_out(backend):
    a = np.arange(5, dtype=np.float32)
    b = np.arange(5, dtype=np.int32) * 3
    pairs = axle.zip(a, b)
    assert pairs.dtype == (np.dtype(np.float32), np.dtype(np.int32))
    ra, rb = pairs.numpy()
    np.testing.assert_array_equal(ra, a)
    np.testing.assert_array_equal(rb, b)
    # a tuple of arrays given to use is an array of tuples (struct of arrays)
    s = axle.map(lambda p: p[0] * 2 + p[1].astype(np.float32), axle.use((a, b))).numpy()
    np.testing.assert_array_equal(s, a * 2 + b)
    # nested tuples, unpacking in the function
    nested = axle.map(lambda p: (p[1], (p[0], p[0] > 2)), axle.use((a, b))).numpy()
    assert isinstance(nested, tuple) and isinstance(nested[1], tuple)
    np.testing.assert_array_equal(nested[1][1], a > 2)
    u0, u1 = axle.unzip(pairs)
    np.testing.assert_array_equal(u1.numpy(), b)

    def swap(p):
        x, y = p
        return y, x
    np.testing.assert_array_equal(axle.map(swap, axle.use((a, b))).numpy()[0], b)


def test_run_several_results_in_one_program():
    x = np.arange(6, dtype=np.float64)
    s, m, d = axle.run(axle.fold_all(axle.add, 0, x), axle.fold1(axle.max, x), axle.map(lambda v: v * 2, x))
    assert float(s) == 15 and float(m) == 5
    np.testing.assert_array_equal(d, x * 2)


def test_array_reads_in_scalar_code(backend):
    m = np.arange(12, dtype=np.int32).reshape(3, 4)
    ms = axle.use(m)
    got = axle.generate((4, 3), lambda ix: ms[ix[1], ix[0]] + axle.at_linear(ms, 0)).numpy()
    np.testing.assert_array_equal(got, m.T)
    got2 = axle.generate(3, lambda ix: axle.at(ms, (ix[0], 3)) * axle.size(ms).astype(np.int32)).numpy()
    np.testing.assert_array_equal(got2, m[:, 3] * 12)
    sh = axle.generate(1, lambda ix: axle.shape(ms)[1]).numpy()
    assert sh[0] == 4


def test_empty_and_rank0_arrays(backend):
    e = np.zeros(0, np.float32)
    assert axle.map(lambda v: v + 1, e).numpy().shape == (0,)
    assert float(axle.fold(axle.add, 2.5, e)) == 2.5
    s = np.array(3.0, np.float64)
    assert axle.map(lambda v: v * 2, s).numpy().shape == ()
    assert float(axle.map(lambda v: v * 2, s)) == 6.0
    assert float(axle.unit(axle.f64(1.5))) == 1.5


def test_higher_rank(backend, rng):
    t = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(axle.fold(axle.add, 0, t).numpy(), t.sum(axis=-1), rtol=1e-5)
    np.testing.assert_array_equal(axle.map(lambda v: -v, t).numpy(), -t)


def test_black_scholes_matches_numpy():
    from axle.bench import black_scholes, black_scholes_numpy
    rng = np.random.default_rng(5)
    n = 10000
    p = rng.uniform(5, 30, n).astype(np.float32)
    s = rng.uniform(1, 100, n).astype(np.float32)
    y = rng.uniform(0.25, 10, n).astype(np.float32)
    call, put = black_scholes(p, s, y)
    ec, ep = black_scholes_numpy(p.astype(np.float64), s.astype(np.float64), y.astype(np.float64))
    np.testing.assert_allclose(call, ec, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(put, ep, rtol=1e-3, atol=1e-3)


def test_float_floordiv_and_mod_follow_python():
    x = np.array([-7.5, -1.0, 0.25, 5.0, 9.75], np.float64)
    np.testing.assert_array_equal(axle.map(lambda v: v // 2, x).numpy(), x // 2)
    np.testing.assert_allclose(axle.map(lambda v: v % 3, x).numpy(), x % 3, rtol=1e-15)


def test_bench_programs_match_numpy():
    from axle.bench import histogram, nbody, nbody_numpy
    rng = np.random.default_rng(7)
    n = 64
    bodies = tuple(rng.uniform(-1, 1, n).astype(np.float32) for _ in range(3)) + (
        rng.uniform(0.1, 1, n).astype(np.float32),)
    vels = tuple(rng.uniform(-0.1, 0.1, n).astype(np.float32) for _ in range(3))
    (p, v), (ep, ev) = nbody(bodies, vels), nbody_numpy(bodies, vels)
    for got, want in zip(p + v, ep + ev):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    vals = rng.integers(0, 256, 100000).astype(np.int32)
    np.testing.assert_array_equal(histogram(vals, 256), np.bincount(vals, minlength=256))
