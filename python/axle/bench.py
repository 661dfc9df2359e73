"""python3 -m axle.bench: axle from Python against NumPy, and against Numba
and JAX when they are installed, on the dot product, Black-Scholes, N-body,
a histogram and a sort (of size/2 keys); and the time a Python call adds to a compiled program.

Runs are interleaved (every implementation once per round, the rounds
repeated), after a warm-up call that compiles; the table gives medians in
ms and each one's ratio to axle (above 1: slower than axle).

    python3 -m axle.bench [--size N] [--bodies N] [--runs R] [--only dotp,bs,...]
"""
import argparse
import math
import statistics
import sys
import time

import numpy as np

import axle

# ------------------------------------------------------------ the programs


@axle.jit
def dotp(xs, ys):
    """dotp xs ys = fold (+) 0 (zipWith (*) xs ys)"""
    return axle.fold(axle.add, 0, axle.zip_with(axle.mul, xs, ys))


RISKFREE, VOLATILITY = 0.02, 0.30


def cnd(d):
    """The cumulative normal distribution (Abramowitz and Stegun 26.2.17)."""
    k = 1.0 / (1.0 + 0.2316419 * abs(d))
    poly = k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
    c = 0.39894228040143267794 * axle.exp(-0.5 * d * d) * poly
    return axle.where(d > 0, 1.0 - c, c)


def callput(price, strike, years):
    """Black-Scholes for one option: (call, put)."""
    r, v = RISKFREE, VOLATILITY
    v_sqrt_t = v * axle.sqrt(years)
    d1 = (axle.log(price / strike) + (r + 0.5 * v * v) * years) / v_sqrt_t
    d2 = d1 - v_sqrt_t
    cnd_d1, cnd_d2 = cnd(d1), cnd(d2)
    x_exp_rt = strike * axle.exp(-r * years)
    return (price * cnd_d1 - x_exp_rt * cnd_d2,
            x_exp_rt * (1.0 - cnd_d2) - price * (1.0 - cnd_d1))


@axle.jit
def black_scholes(price, strike, years):
    return axle.zip_with(callput, price, strike, years)


EPS2, DT = 0.01, 0.01


def accel(bi, bj):
    """The acceleration of body i by body j: m_j r / (|r|^2 + eps^2)^(3/2)."""
    rx, ry, rz = bj[0] - bi[0], bj[1] - bi[1], bj[2] - bi[2]
    invr = 1.0 / axle.sqrt(rx * rx + ry * ry + rz * rz + EPS2)
    s = bj[3] * invr * invr * invr
    return s * rx, s * ry, s * rz


def vadd(a, b):
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


@axle.jit
def nbody(bodies, vels):
    """One step of the all-pairs N-body simulation: (positions, velocities).
    bodies: (x, y, z, m) and vels: (vx, vy, vz), tuples of vectors."""
    n = axle.size(bodies)
    cols = axle.replicate((n, axle.ALL), bodies)     # [i][j] = body j
    rows = axle.replicate((axle.ALL, n), bodies)     # [i][j] = body i
    accels = axle.fold(vadd, (0, 0, 0), axle.zip_with(accel, rows, cols))
    vels2 = axle.zip_with(lambda v, a: (v[0] + DT * a[0], v[1] + DT * a[1], v[2] + DT * a[2]), vels, accels)
    pos = axle.zip_with(lambda p, v: (p[0] + DT * v[0], p[1] + DT * v[1], p[2] + DT * v[2]), bodies, vels2)
    return pos, vels2


@axle.jit(static_argnums=(1,))
def histogram(values, bins):
    """The count of each value in 0..bins-1 (a forward permutation)."""
    vs = axle.use(values) if not isinstance(values, axle.Acc) else values
    zeros = axle.generate(bins, lambda ix: axle.i32(0))
    ones = axle.map(lambda v: axle.i32(1), vs)
    return axle.permute(axle.add, zeros, lambda ix: vs[ix].astype(np.int64), ones)


# ------------------------------------------------------- NumPy references


def black_scholes_numpy(price, strike, years):
    r, v = RISKFREE, VOLATILITY

    def cnd_np(d):
        k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
        poly = k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
        c = 0.39894228040143267794 * np.exp(-0.5 * d * d) * poly
        return np.where(d > 0, 1.0 - c, c)
    dt = price.dtype.type
    v_sqrt_t = dt(v) * np.sqrt(years)
    d1 = (np.log(price / strike) + dt(r + 0.5 * v * v) * years) / v_sqrt_t
    d2 = d1 - v_sqrt_t
    c1, c2 = cnd_np(d1).astype(price.dtype), cnd_np(d2).astype(price.dtype)
    x = strike * np.exp(dt(-r) * years)
    return price * c1 - x * c2, x * (dt(1) - c2) - price * (dt(1) - c1)


def nbody_numpy(bodies, vels):
    x, y, z, m = bodies
    rx = x[None, :] - x[:, None]
    ry = y[None, :] - y[:, None]
    rz = z[None, :] - z[:, None]
    invr = np.float32(1) / np.sqrt(rx * rx + ry * ry + rz * rz + np.float32(EPS2))
    s = m[None, :] * invr * invr * invr
    ax_, ay, az = (s * rx).sum(1), (s * ry).sum(1), (s * rz).sum(1)
    dt = np.float32(DT)
    v2 = (vels[0] + dt * ax_, vels[1] + dt * ay, vels[2] + dt * az)
    return (x + dt * v2[0], y + dt * v2[1], z + dt * v2[2]), v2


# ------------------------------------------------------ Numba and JAX


def numba_impls():
    try:
        import numba
    except ImportError:
        return {}
    from numba import njit, prange

    @njit(parallel=True, fastmath=False, cache=False)
    def nb_dotp(x, y):
        s = np.float32(0)
        for i in prange(x.shape[0]):
            s += x[i] * y[i]
        return s

    @njit(fastmath=False, inline="always")
    def nb_cnd(d):
        k = np.float32(1) / (np.float32(1) + np.float32(0.2316419) * abs(d))
        poly = k * (np.float32(0.31938153) + k * (np.float32(-0.356563782) + k * (np.float32(1.781477937) + k * (
            np.float32(-1.821255978) + k * np.float32(1.330274429)))))
        c = np.float32(0.39894228040143267794) * math.exp(np.float32(-0.5) * d * d) * poly
        return np.float32(1) - c if d > 0 else c

    @njit(parallel=True, fastmath=False)
    def nb_bs(price, strike, years):
        n = price.shape[0]
        call = np.empty(n, np.float32)
        put = np.empty(n, np.float32)
        r, v = np.float32(RISKFREE), np.float32(VOLATILITY)
        for i in prange(n):
            p, s, t = price[i], strike[i], years[i]
            vst = v * math.sqrt(t)
            d1 = (math.log(p / s) + (r + np.float32(0.5) * v * v) * t) / vst
            d2 = d1 - vst
            c1, c2 = nb_cnd(d1), nb_cnd(d2)
            x = s * math.exp(-r * t)
            call[i] = p * c1 - x * c2
            put[i] = x * (np.float32(1) - c2) - p * (np.float32(1) - c1)
        return call, put

    @njit(parallel=True, fastmath=False)
    def nb_nbody(x, y, z, m, vx, vy, vz):
        n = x.shape[0]
        ox, oy, oz = np.empty(n, np.float32), np.empty(n, np.float32), np.empty(n, np.float32)
        ovx, ovy, ovz = np.empty(n, np.float32), np.empty(n, np.float32), np.empty(n, np.float32)
        dt = np.float32(DT)
        for i in prange(n):
            ax_ = np.float32(0)
            ay = np.float32(0)
            az = np.float32(0)
            for j in range(n):
                rx, ry, rz = x[j] - x[i], y[j] - y[i], z[j] - z[i]
                invr = np.float32(1) / math.sqrt(rx * rx + ry * ry + rz * rz + np.float32(EPS2))
                s = m[j] * invr * invr * invr
                ax_ += s * rx
                ay += s * ry
                az += s * rz
            ovx[i], ovy[i], ovz[i] = vx[i] + dt * ax_, vy[i] + dt * ay, vz[i] + dt * az
            ox[i], oy[i], oz[i] = x[i] + dt * ovx[i], y[i] + dt * ovy[i], z[i] + dt * ovz[i]
        return (ox, oy, oz), (ovx, ovy, ovz)

    @njit
    def nb_hist(v, bins):
        h = np.zeros(bins, np.int32)
        for i in range(v.shape[0]):
            h[v[i]] += 1
        return h

    return {
        "dotp": lambda x, y: nb_dotp(x, y),
        "bs": lambda p, s, y: nb_bs(p, s, y),
        "nbody": lambda b, v: nb_nbody(*b, *v),
        "hist": lambda v, bins: nb_hist(v, bins),
    }


def jax_impls():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return {}

    @jax.jit
    def j_dotp(x, y):
        return jnp.dot(x, y)

    def j_cnd(d):
        k = 1.0 / (1.0 + 0.2316419 * jnp.abs(d))
        poly = k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
        c = 0.39894228040143267794 * jnp.exp(-0.5 * d * d) * poly
        return jnp.where(d > 0, 1.0 - c, c)

    @jax.jit
    def j_bs(price, strike, years):
        r, v = RISKFREE, VOLATILITY
        vst = v * jnp.sqrt(years)
        d1 = (jnp.log(price / strike) + (r + 0.5 * v * v) * years) / vst
        d2 = d1 - vst
        c1, c2 = j_cnd(d1), j_cnd(d2)
        x = strike * jnp.exp(-r * years)
        return price * c1 - x * c2, x * (1.0 - c2) - price * (1.0 - c1)

    @jax.jit
    def j_nbody(bodies, vels):
        x, y, z, m = bodies
        rx = x[None, :] - x[:, None]
        ry = y[None, :] - y[:, None]
        rz = z[None, :] - z[:, None]
        invr = 1.0 / jnp.sqrt(rx * rx + ry * ry + rz * rz + EPS2)
        s = m[None, :] * invr * invr * invr
        ax_, ay, az = (s * rx).sum(1), (s * ry).sum(1), (s * rz).sum(1)
        v2 = (vels[0] + DT * ax_, vels[1] + DT * ay, vels[2] + DT * az)
        return (x + DT * v2[0], y + DT * v2[1], z + DT * v2[2]), v2

    def j_hist(v, bins):
        return jnp.bincount(v, length=bins)
    j_hist = jax.jit(j_hist, static_argnums=1)

    @jax.jit
    def j_sort(k):
        return jnp.sort(k, stable=True)

    def ready(f):
        return lambda *a: jax.block_until_ready(f(*a))

    def put(*a):
        return jax.device_put(a)

    # inputs are moved to JAX once, outside the timing (as a JAX user keeps them)
    return {
        "dotp": ready(j_dotp), "bs": ready(j_bs), "nbody": ready(j_nbody), "hist": ready(j_hist),
        "sort": ready(j_sort), "_put": put,
    }


@axle.jit
def sort_u32(keys):
    """The keys sorted, ascending (stable)."""
    return axle.sort(keys)


# ------------------------------------------------------------ the harness


def _time(f, *a):
    t = time.perf_counter()
    f(*a)
    return (time.perf_counter() - t) * 1e3


def interleaved(impls, runs, pause=0.05):
    """impls: name -> zero-argument callable. Medians (ms) of interleaved
    runs: each round runs every implementation once, in an order rotated
    round by round (so that none always follows the same one: the thread
    pools of Numba and JAX spin for a while after their work), with a pause
    between calls."""
    for f in impls.values():   # warm-up: compiles, first touches
        f()
    names = list(impls)
    times = {k: [] for k in impls}
    for r in range(runs):
        for i in range(len(names)):
            k = names[(i + r) % len(names)]
            time.sleep(pause)
            times[k].append(_time(impls[k]))
    return {k: statistics.median(v) for k, v in times.items()}


def workloads(size, bodies, bins, rng):
    f32 = np.float32
    x = rng.random(size, dtype=f32)
    y = rng.random(size, dtype=f32)
    p = rng.uniform(5, 30, size).astype(f32)
    s = rng.uniform(1, 100, size).astype(f32)
    t = rng.uniform(0.25, 10, size).astype(f32)
    bod = tuple(rng.uniform(-1, 1, bodies).astype(f32) for _ in range(3)) + (rng.uniform(0.1, 1, bodies).astype(f32),)
    vel = tuple(np.zeros(bodies, f32) for _ in range(3))
    hv = rng.integers(0, bins, size).astype(np.int32)
    keys = rng.integers(0, 2**32, size // 2, dtype=np.uint64).astype(np.uint32)
    return {
        "dotp": ("dot product", size, (x, y), dotp, lambda a, b: np.dot(a, b)),
        "bs": ("Black-Scholes", size, (p, s, t), black_scholes, black_scholes_numpy),
        "nbody": ("N-body (one step)", bodies, (bod, vel), nbody, nbody_numpy),
        "hist": ("histogram (%d bins)" % bins, size, (hv, bins), histogram, lambda v, b: np.bincount(v, minlength=b)),
        "sort": ("sort (u32 keys)", size // 2, (keys,), sort_u32, lambda k: np.sort(k, kind="stable")),
    }


def call_overhead(n=20000, rounds=7):
    """Microseconds per call of a compiled dot product over 100 elements:
    from Python (axle.jit) and from C (ax_program_run_with in a loop)."""
    x = np.ones(100, np.float32)
    p = dotp.lower(x, x)
    dotp(x, x)
    py, c = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(n):
            dotp(x, x)
        py.append((time.perf_counter() - t) / n * 1e6)
        c.append(axle._axle.c_loop(p, (x, x), n) * 1e6)
    return statistics.median(py), statistics.median(c)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m axle.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=float, default=20e6, help="elements (dot product, Black-Scholes, histogram)")
    ap.add_argument("--bodies", type=int, default=4096, help="bodies of the N-body step")
    ap.add_argument("--bins", type=int, default=256)
    ap.add_argument("--runs", type=int, default=11, help="interleaved rounds")
    ap.add_argument("--only", default="", help="comma-separated: dotp, bs, nbody, hist, sort, overhead")
    ap.add_argument("--no-numba", action="store_true")
    ap.add_argument("--no-jax", action="store_true")
    a = ap.parse_args(argv)
    only = set(filter(None, a.only.split(",")))
    rng = np.random.default_rng(42)
    size = int(a.size)
    others = {}
    if not a.no_numba:
        nb = numba_impls()
        if nb:
            others["Numba"] = nb
    if not a.no_jax:
        jx = jax_impls()
        if jx:
            others["JAX"] = jx
    print("axle %s, NumPy %s%s; %s; medians of %d interleaved runs, ms (ratio to axle)"
          % (axle.__version__, np.__version__, "".join(", %s" % k for k in others),
             axle.current_context().options["backend"], a.runs))
    cols = ["axle", "axle from C", "NumPy"] + list(others)
    print("| program | size | " + " | ".join(cols) + " |")
    print("|---|---:|" + "---:|" * len(cols))
    for key, (name, n, args, prog, ref) in workloads(size, a.bodies, a.bins, rng).items():
        if only and key not in only:
            continue
        impls = {"axle": lambda prog=prog, args=args: prog(*args)}
        p = prog.lower(*args)
        impls["axle from C"] = lambda p=p, args=args: axle._axle.c_loop(p, args, 1)
        impls["NumPy"] = lambda ref=ref, args=args: ref(*args)
        for lib, fs in others.items():
            if key in fs:
                fa = fs["_put"](*args) if "_put" in fs and key != "hist" else args
                if key == "hist" and "_put" in fs:
                    fa = (fs["_put"](args[0])[0], args[1])
                impls[lib] = lambda f=fs[key], fa=fa: f(*fa)
        med = interleaved(impls, a.runs)
        base = med["axle"]
        cells = ["%.2f (%.2fx)" % (med[c], med[c] / base) if c in med else "-" for c in cols]
        print("| %s | %d | %s |" % (name, n, " | ".join(cells)), flush=True)
    if not only or "overhead" in only:
        py, c = call_overhead()
        print("\ncall of a compiled dot product over 100 elements: %.2f us from Python, %.2f us from C "
              "(the Python call adds %.2f us)" % (py, c, py - c))
    return 0


if __name__ == "__main__":
    sys.exit(main())
