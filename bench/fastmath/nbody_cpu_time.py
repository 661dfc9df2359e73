#!/usr/bin/env python3
"""N-body's step on one thread, by CPU time (not part of the build or of
`make test`): the measurement behind the README's note on axle's finite
fast-maths level against Numba and Halide.  Wall time with 2 threads on a
loaded 2-CPU machine moves 2x from run to run; the CPU time one thread
spends does far less.

  build/peers-venv/bin/python bench/fastmath/nbody_cpu_time.py N ROUNDS [LEVEL...]

LEVEL: exact, fast, finite (default: fast finite).  Each round times
Numba (njit parallel=True, fastmath=True: bench/peers/compare.py's loop),
Halide (compare.py's schedule: 16 bodies a task in two vectors, j's values
broadcast) and `build/axle run nbody` at each level, one thread each
(NUMBA_NUM_THREADS, HL_NUM_THREADS, AXLE_THREADS = 1); axle's CPU time per
step is that of `--runs 5` less `--runs 2` (6 and 3 executions with the
warm-up), divided by 3, so its start, inputs and kernel loading cancel.
Medians and minima of the rounds, in ms.  Random inputs of the same shape
as the program's (the loop has no data-dependent branch).  Halide's JIT
target is AVX2 (this VM's hypervisor hides AVX-512): HL_JIT_TARGET, when
set, is left as it is.
SPDX-License-Identifier: BSD-3-Clause
"""
import os, sys, time, resource, subprocess, statistics
os.environ["NUMBA_NUM_THREADS"] = "1"; os.environ["HL_NUM_THREADS"] = "1"
os.environ.setdefault("HL_JIT_TARGET", "x86-64-linux-avx-avx2-f16c-fma-sse41")
import numpy as np, numba, halide as hl
N = int(sys.argv[1]); ROUNDS = int(sys.argv[2]); AX = sys.argv[3:] or ["fast", "finite"]
AXLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "axle")
rng = np.random.default_rng(1)
x, y, z = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
m = rng.uniform(0.5, 1.5, N).astype(np.float32)
vx, vy, vz = (rng.standard_normal(N).astype(np.float32) * 0.1 for _ in range(3))
eps2, dt, one = np.float32(0.01), np.float32(0.01), np.float32(1)

@numba.njit(parallel=True, fastmath=True)
def nb(x, y, z, m, vx, vy, vz, ox, oy, oz, ovx, ovy, ovz):
    n = x.shape[0]
    for i in numba.prange(n):
        xi, yi, zi = x[i], y[i], z[i]
        ax = np.float32(0); ay = np.float32(0); az = np.float32(0)
        for j in range(n):
            rx = x[j] - xi; ry = y[j] - yi; rz = z[j] - zi
            rs = rx * rx + ry * ry + rz * rz + eps2
            invr = one / np.sqrt(rs)
            s = m[j] * (invr * invr * invr)
            ax += s * rx; ay += s * ry; az += s * rz
        nvx = vx[i] + dt * ax; nvy = vy[i] + dt * ay; nvz = vz[i] + dt * az
        ovx[i], ovy[i], ovz[i] = nvx, nvy, nvz
        ox[i], oy[i], oz[i] = xi + dt * nvx, yi + dt * nvy, zi + dt * nvz
outs = tuple(np.empty(N, np.float32) for _ in range(6))
nb(x, y, z, m, vx, vy, vz, *outs)

def halide_fn():
    P = [hl.ImageParam(hl.Float(32), 1, k) for k in ["x", "y", "z", "m", "vx", "vy", "vz"]]
    X, Y, Z, M, VX, VY, VZ = P
    i = hl.Var("i"); j = hl.RDom([(0, N)], "j")
    rx, ry, rz = X[j] - X[i], Y[j] - Y[i], Z[j] - Z[i]
    rs = rx * rx + ry * ry + rz * rz + hl.f32(0.01)
    invr = hl.f32(1) / hl.sqrt(rs)
    s = M[j] * (invr * invr * invr)
    acc = hl.Func("accel")
    acc[i] = (hl.f32(0), hl.f32(0), hl.f32(0))
    acc[i] = (acc[i][0] + s * rx, acc[i][1] + s * ry, acc[i][2] + s * rz)
    dtt = hl.f32(0.01)
    nv = [V[i] + dtt * acc[i][c] for c, V in enumerate((VX, VY, VZ))]
    out = hl.Func("step")
    out[i] = (X[i] + dtt * nv[0], Y[i] + dtt * nv[1], Z[i] + dtt * nv[2], nv[0], nv[1], nv[2])
    vl = 8
    io, ii = hl.Var("io"), hl.Var("ii")
    out.split(i, io, ii, 2 * vl, hl.TailStrategy.GuardWithIf).parallel(io).vectorize(ii)
    acc.compute_at(out, io).vectorize(i)
    acc.update().vectorize(i)
    for p, a in zip(P, (x, y, z, m, vx, vy, vz)):
        p.set(hl.Buffer(a))
    pl = hl.Pipeline(out)
    o = tuple(np.empty(N, np.float32) for _ in range(6))
    bufs = [hl.Buffer(a) for a in o]
    pl.compile_jit()
    return lambda: pl.realize(bufs)
hrun = halide_fn(); hrun()

def cpu(f):
    t = time.process_time(); f(); return time.process_time() - t
def axle_cpu(level, runs):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    args = [AXLE, "run", "nbody", "--size", str(N), "--runs", str(runs)]
    if level == "fast": args.append("--fast-math")
    elif level == "finite": args.append("--fast-math=finite")
    env = dict(os.environ, AXLE_THREADS="1")
    subprocess.run(args, env=env, stdout=subprocess.DEVNULL, check=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
T = {k: [] for k in ["numba", "halide"] + ["axle-" + a for a in AX]}
assert all(a in ("exact", "fast", "finite") for a in AX), "levels: exact, fast, finite"
for r in range(ROUNDS):
    T["numba"].append(cpu(lambda: nb(x, y, z, m, vx, vy, vz, *outs)))
    T["halide"].append(cpu(hrun))
    for a in AX:
        T["axle-" + a].append((axle_cpu(a, 5) - axle_cpu(a, 2)) / 3)
print(f"N={N}, {ROUNDS} rounds, 1 thread, CPU s per step; load {os.getloadavg()}")
for k, v in T.items():
    print(f"{k:14s} median {statistics.median(v)*1e3:8.1f} ms  min {min(v)*1e3:8.1f}")
