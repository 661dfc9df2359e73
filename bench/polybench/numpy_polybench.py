#!/usr/bin/env python3
"""The PolyBench/C 4.2.1 kernels of examples/polybench in NumPy, as a NumPy
user writes them (matrix products with @, whole-array updates, slices for
the stencils), on the same inputs: the suite's initialisation and the same
sizes (n the suite's first dimension, the others derived from n by the
LARGE dataset's ratios, rounded to the nearest integer, as the C programs
do; see each examples/polybench/*.c).

    python3 bench/polybench/numpy_polybench.py                # LARGE sizes, 5 runs each
    python3 bench/polybench/numpy_polybench.py --quick        # the test sizes, 3 runs: a smoke test
    python3 bench/polybench/numpy_polybench.py gemm atax --size 500 --runs 11

Prints one JSON line per kernel: {"program", "size", "system": "numpy",
"runs", "median_ms", "min_ms"}.  The time is the kernel's only (the inputs
are made before; each run starts from fresh copies of the arrays a kernel
updates, copied outside the timing).  NumPy's @ calls its BLAS, which uses
as many threads as OPENBLAS_NUM_THREADS (or OMP_NUM_THREADS) allow: set it
to compare with axle at a given thread count.  floyd-warshall's k loop and
the stencils' time loops stay Python loops over whole-array operations.

--dump DIR writes each kernel's results as raw little-endian arrays
(DIR/<kernel>.<k>.bin, float64 or int32), to compare with the C results.
Not part of `make test`.
SPDX-License-Identifier: BSD-3-Clause
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np


def dim(n, num, den):
    """n * num / den rounded to the nearest integer (the C programs' pb_dim)."""
    return (n * num + den // 2) // den


def grid(*shape):
    """Index arrays (as int64) over shape, as np.indices gives them."""
    return [a.astype(np.int64) for a in np.indices(shape)]


# Each kernel: (bench size, test size, setup(n) -> (inputs, run)), where
# run(*copies) computes the results from fresh copies of the inputs.

def gemm(n):
    ni, nj, nk = n, dim(n, 1100, 1000), dim(n, 1200, 1000)
    i, j = grid(ni, nj)
    C = ((i * j + 1) % max(ni, 1)) / max(ni, 1)
    i, k = grid(ni, nk)
    A = (i * (k + 1) % max(nk, 1)) / max(nk, 1)
    k, j = grid(nk, nj)
    B = (k * (j + 2) % max(nj, 1)) / max(nj, 1)
    return (C, A, B), lambda C, A, B: (1.2 * C + 1.5 * (A @ B),)


def mm2(n):
    ni, nj, nk, nl = n, dim(n, 900, 800), dim(n, 1100, 800), dim(n, 1200, 800)
    i, k = grid(ni, nk)
    A = ((i * k + 1) % max(ni, 1)) / max(ni, 1)
    k, j = grid(nk, nj)
    B = (k * (j + 1) % max(nj, 1)) / max(nj, 1)
    j, l = grid(nj, nl)
    C = ((j * (l + 3) + 1) % max(nl, 1)) / max(nl, 1)
    i, l = grid(ni, nl)
    D = (i * (l + 2) % max(nk, 1)) / max(nk, 1)
    return (A, B, C, D), lambda A, B, C, D: (1.2 * D + (1.5 * (A @ B)) @ C,)


def mm3(n):
    ni, nj, nk, nl, nm = n, dim(n, 900, 800), dim(n, 1000, 800), dim(n, 1100, 800), dim(n, 1200, 800)
    i, k = grid(ni, nk)
    A = ((i * k + 1) % max(ni, 1)) / (5 * max(ni, 1))
    k, j = grid(nk, nj)
    B = ((k * (j + 1) + 2) % max(nj, 1)) / (5 * max(nj, 1))
    j, m = grid(nj, nm)
    C = (j * (m + 3) % max(nl, 1)) / (5 * max(nl, 1))
    m, l = grid(nm, nl)
    D = ((m * (l + 2) + 2) % max(nk, 1)) / (5 * max(nk, 1))
    return (A, B, C, D), lambda A, B, C, D: ((A @ B) @ (C @ D),)


def atax(n):
    m, nn = n, dim(n, 2100, 1900)
    x = 1 + np.arange(nn) / max(nn, 1)
    i, j = grid(m, nn)
    A = ((i + j) % max(nn, 1)) / (5 * max(m, 1))
    return (A, x), lambda A, x: (A.T @ (A @ x),)


def bicg(n):
    m = dim(n, 1900, 2100)
    p = (np.arange(m) % max(m, 1)) / max(m, 1)
    r = (np.arange(n) % max(n, 1)) / max(n, 1)
    i, j = grid(n, m)
    A = (i * (j + 1) % max(n, 1)) / max(n, 1)
    return (A, r, p), lambda A, r, p: (A.T @ r, A @ p)


def mvt(n):
    i = np.arange(n)
    d = max(n, 1)
    x1, x2, y1, y2 = (i % d) / d, ((i + 1) % d) / d, ((i + 3) % d) / d, ((i + 4) % d) / d
    a, b = grid(n, n)
    A = (a * b % d) / d
    return (A, x1, x2, y1, y2), lambda A, x1, x2, y1, y2: (x1 + A @ y1, x2 + A.T @ y2)


def gemver(n):
    fn = float(max(n, 1))
    i = np.arange(n)
    u1, u2, v1, v2 = i.astype(float), ((i + 1) / fn) / 2, ((i + 1) / fn) / 4, ((i + 1) / fn) / 6
    y, z = ((i + 1) / fn) / 8, ((i + 1) / fn) / 9
    a, b = grid(n, n)
    A = (a * b % max(n, 1)) / max(n, 1)

    def run(A, u1, v1, u2, v2, y, z):
        A = A + np.outer(u1, v1) + np.outer(u2, v2)
        x = 1.2 * (A.T @ y) + z
        return (1.5 * (A @ x),)
    return (A, u1, v1, u2, v2, y, z), run


def gesummv(n):
    d = max(n, 1)
    x = (np.arange(n) % d) / d
    i, j = grid(n, n)
    A, B = ((i * j + 1) % d) / d, ((i * j + 2) % d) / d
    return (A, B, x), lambda A, B, x: (1.5 * (A @ x) + 1.2 * (B @ x),)


def syrk(n):
    m = dim(n, 1000, 1200)
    i, j = grid(n, m)
    A = ((i * j + 1) % max(n, 1)) / max(n, 1)
    i, j = grid(n, n)
    C = ((i * j + 2) % max(m, 1)) / max(m, 1)
    lower = np.tril(np.ones((n, n), dtype=bool))
    return (C, A), lambda C, A: (np.where(lower, 1.2 * C + 1.5 * (A @ A.T), C),)


def syr2k(n):
    m = dim(n, 1000, 1200)
    i, j = grid(n, m)
    A, B = ((i * j + 1) % max(n, 1)) / max(n, 1), ((i * j + 2) % max(m, 1)) / max(m, 1)
    i, j = grid(n, n)
    C = ((i * j + 3) % max(n, 1)) / max(m, 1)
    lower = np.tril(np.ones((n, n), dtype=bool))
    return (C, A, B), lambda C, A, B: (np.where(lower, 1.2 * C + 1.5 * (B @ A.T + A @ B.T), C),)


def doitgen(n):
    nr, nq, np_ = n, dim(n, 140, 150), dim(n, 160, 150)
    r, q, p = grid(nr, nq, np_)
    A = ((r * q + p) % max(np_, 1)) / max(np_, 1)
    a, b = grid(np_, np_)
    C4 = (a * b % max(np_, 1)) / max(np_, 1)
    return (A, C4), lambda A, C4: (A @ C4,)


def covariance(n):
    m = dim(n, 1200, 1400)
    i, j = grid(n, m)
    data = (i.astype(float) * j) / max(m, 1)

    def run(data):
        with np.errstate(divide="ignore", invalid="ignore"):   # n = 1 divides 0 by 0, as the suite does
            d = data - data.sum(axis=0) / n
            return ((d.T @ d) / (n - 1.0),)
    return (data,), run


def correlation(n):
    m = dim(n, 1200, 1400)
    i, j = grid(n, m)
    data = (i * j) / max(m, 1) + i

    def run(data):
        mean = data.sum(axis=0) / n
        sd = np.sqrt(((data - mean) ** 2).sum(axis=0) / n)
        sd = np.where(sd <= 0.1, 1.0, sd)
        x = (data - mean) / (np.sqrt(float(n)) * sd)
        corr = x.T @ x
        np.fill_diagonal(corr, 1.0)
        return (corr,)
    return (data,), run


def jacobi1d(n):
    tsteps = dim(n, 500, 2000)
    i = np.arange(n, dtype=float)
    A, B = (i + 2) / max(n, 1), (i + 3) / max(n, 1)

    def run(A, B):
        for _ in range(tsteps):
            B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
            A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
        return (A,)
    return (A, B), run


def jacobi2d(n):
    tsteps = dim(n, 500, 1300)
    i, j = grid(n, n)
    A, B = (i.astype(float) * (j + 2) + 2) / max(n, 1), (i.astype(float) * (j + 3) + 3) / max(n, 1)

    def run(A, B):
        for _ in range(tsteps):
            B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
            A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
        return (A,)
    return (A, B), run


def heat3d(n):
    tsteps = dim(n, 500, 120)
    i, j, k = grid(n, n, n)
    A = (i + j + (n - k)).astype(float) * 10 / max(n, 1)

    def sweep(a, b):
        c = a[1:-1, 1:-1, 1:-1]
        b[1:-1, 1:-1, 1:-1] = (0.125 * (a[2:, 1:-1, 1:-1] - 2.0 * c + a[:-2, 1:-1, 1:-1])
                               + 0.125 * (a[1:-1, 2:, 1:-1] - 2.0 * c + a[1:-1, :-2, 1:-1])
                               + 0.125 * (a[1:-1, 1:-1, 2:] - 2.0 * c + a[1:-1, 1:-1, :-2]) + c)

    def run(A, B):
        for _ in range(tsteps):
            sweep(A, B)
            sweep(B, A)
        return (A,)
    return (A, A.copy()), run


def fdtd2d(n):
    nx, ny, tmax = n, dim(n, 1200, 1000), dim(n, 500, 1000)
    fict = np.arange(tmax, dtype=float)
    i, j = grid(nx, ny)
    ex = (i.astype(float) * (j + 1)) / max(nx, 1)
    ey = (i.astype(float) * (j + 2)) / max(ny, 1)
    hz = (i.astype(float) * (j + 3)) / max(nx, 1)

    def run(ex, ey, hz):
        for t in range(tmax):
            ey[0, :] = fict[t]
            ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
            ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
            hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
        return (ex, ey, hz)
    return (ex, ey, hz), run


def floyd(n):
    i, j = grid(n, n)
    path = (i * j % 7 + 1).astype(np.int32)
    s = i + j
    path[(s % 13 == 0) | (s % 7 == 0) | (s % 11 == 0)] = 999

    def run(path):
        for k in range(n):
            np.minimum(path, path[:, k:k + 1] + path[k:k + 1, :], out=path)
        return (path,)
    return (path,), run


KERNELS = {
    "gemm": (gemm, 1000, 20), "2mm": (mm2, 800, 16), "3mm": (mm3, 800, 16), "atax": (atax, 1900, 38),
    "bicg": (bicg, 2100, 42), "mvt": (mvt, 2000, 40), "gemver": (gemver, 2000, 40),
    "gesummv": (gesummv, 1300, 30), "syrk": (syrk, 1200, 30), "syr2k": (syr2k, 1200, 30),
    "doitgen": (doitgen, 150, 10), "covariance": (covariance, 1400, 32),
    "correlation": (correlation, 1400, 32), "jacobi-1d": (jacobi1d, 2000, 30),
    "jacobi-2d": (jacobi2d, 1300, 30), "heat-3d": (heat3d, 120, 10), "fdtd-2d": (fdtd2d, 1000, 20),
    "floyd-warshall": (floyd, 2800, 40),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kernels", nargs="*", help="kernels to run (default: all)")
    ap.add_argument("--size", type=int, help="the size n (default: each kernel's LARGE first dimension)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="the test sizes and 3 runs")
    ap.add_argument("--dump", metavar="DIR", help="write each kernel's results to DIR/<kernel>.<k>.bin")
    args = ap.parse_args()
    names = args.kernels or list(KERNELS)
    for name in names:
        if name not in KERNELS:
            sys.exit(f"unknown kernel {name}; known: {', '.join(KERNELS)}")
    runs = 3 if args.quick else args.runs
    for name in names:
        make, bench, test = KERNELS[name]
        n = args.size if args.size is not None else (test if args.quick else bench)
        inputs, run = make(n)
        times, out = [], None
        for _ in range(max(runs, 1)):
            copies = [np.array(a, copy=True) for a in inputs]
            t0 = time.perf_counter()
            out = run(*copies)
            times.append((time.perf_counter() - t0) * 1e3)
        if args.dump:
            os.makedirs(args.dump, exist_ok=True)
            for k, r in enumerate(out):
                np.ascontiguousarray(r).tofile(os.path.join(args.dump, f"{name}.{k}.bin"))
        print(json.dumps({"program": name, "size": n, "system": "numpy", "runs": len(times),
                          "median_ms": round(statistics.median(times), 4), "min_ms": round(min(times), 4)}),
              flush=True)


if __name__ == "__main__":
    main()
