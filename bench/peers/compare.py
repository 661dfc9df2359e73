#!/usr/bin/env python3
"""axle against the tools its users would pick instead.

    python3 bench/peers/compare.py --install     # make build/peers-venv, install the peers, then run
    python3 bench/peers/compare.py               # run (in build/peers-venv when it exists)
    python3 bench/peers/compare.py --quick       # small sizes, 3 runs: a smoke test
    python3 bench/peers/compare.py --asm build/peers/asm   # also write the peers' generated code

Runs the same programs on the same inputs in axle, the hand-written OpenMP C
baselines (through `axle bench --json`: its baseline-std and
baseline-fastmath rows), Halide, Numba, JAX and NumPy, interleaved (each
repetition runs every system once, in an order that rotates from one
repetition to the next), with the same number of threads each (2 by
default), checks that every system's result agrees with a reference, and
prints the medians (ms) and their ratios against axle (exact peers against
axle's exact mode, relaxed ones against its fast mode).

The inputs are the programs' own: build/axle-peer-io (bench/peers/peer_io.c)
runs a program's setup from examples/*.c, writes every input array it makes
and axle's result, and this script loads those bytes.  The references are
computed here from the same bytes (double precision where the program's
check uses one, exact for integers) and the tolerances are the programs'
own (examples/*.c): histogram exact; dot product 1e-5 of the sum of
|x*y|; Black-Scholes 1e-4 of price + strike; N-body the per-component
f32 bound of examples/nbody.c; Mandelbrot at most 1% of the pixels (+1)
different from the plain f32 loop.  axle's own result (from axle-peer-io)
is checked the same way, and `axle bench` checks axle and both C builds
against the plain-C reference.

Not part of `make test`.  Nothing is installed unless --install is given;
a peer that is not installed, or fails, is said so and its column is left
empty.  The C side is built as needed (cmake, -j2).
SPDX-License-Identifier: BSD-3-Clause
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
VENV = os.path.join(BUILD, "peers-venv")
PEER_PACKAGES = ["numpy", "numba", "jax[cpu]", "halide"]

# The rows of the table: (program, size, label, size label).
ROWS = [
    ("histogram", 10_000_000, "histogram (256 bins, `permute (+)`)", "10M i32"),
    ("nbody", 4096, "N-body accelerations + step", "4,096"),
    ("nbody", 32768, "N-body accelerations + step", "32,768"),
    ("blackscholes", 20_000_000, "Black-Scholes", "20M"),
    ("dotp", 100_000_000, "dot product", "100M"),
    ("mandelbrot-while", 1 << 20, "Mandelbrot (while form)", None),
]
QUICK_SIZES = {"histogram": [1_000_000], "nbody": [1024], "blackscholes": [1_000_000], "dotp": [1_000_000],
               "mandelbrot-while": [65536]}

# Columns: key, heading.  The first four come from `axle bench`.
COLUMNS = [
    ("axle", "axle"),
    ("axle-fast", "axle fast"),
    ("axle-finite", "axle finite"),
    ("c-std", "hand C (OpenMP)"),
    ("c-fast", "hand C (-ffast-math)"),
    ("halide", "Halide"),
    ("numba", "Numba"),
    ("jax", "JAX"),
    ("numpy", "NumPy"),
]
PEERS = ["halide", "numba", "jax", "numpy"]
# Which axle column a column's ratio is taken against: the peers that
# relax floating point (-ffast-math C, Numba's fastmath=True, Halide's
# polynomial exp/log and contraction) against axle's fast mode, the exact
# ones (C without -ffast-math, NumPy, JAX: XLA's CPU fast math is off by
# default) against axle's exact mode.
RATIO_BASE = {"axle-fast": "axle", "c-std": "axle", "jax": "axle", "numpy": "axle",
              "c-fast": "axle-fast", "halide": "axle-fast", "numba": "axle-fast"}
# axle's finite level (fast mode that also assumes no NaN or infinity,
# AXLE_FAST_MATH=finite; `axle bench`'s `finite` row) is a column of its own
# when the axle has it, against axle fast; the ratios of the peers that
# assume the same (-ffast-math C, Numba's fastmath=True, Halide: LLVM's
# nnan and ninf) are then also printed against it, in a table of their own.
FINITE_RATIO_BASE = {"axle-finite": "axle-fast", "c-fast": "axle-finite", "halide": "axle-finite",
                     "numba": "axle-finite"}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- installing

def venv_python():
    return os.path.join(VENV, "bin", "python")


def install():
    """Makes build/peers-venv and installs each peer into it; a failure is
    reported and the others go on.  Returns {package: why} for those that
    did not install."""
    os.makedirs(BUILD, exist_ok=True)
    if not os.path.exists(venv_python()):
        log(f"peers: making the virtual environment {os.path.relpath(VENV, ROOT)}")
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    pip = [venv_python(), "-m", "pip", "install", "--disable-pip-version-check"]
    # one resolution for all of them (NumPy must suit Numba and JAX alike);
    # if that fails, each alone, to find the one that does not install
    log(f"peers: pip install {' '.join(PEER_PACKAGES)}")
    r = subprocess.run(pip + PEER_PACKAGES, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    failed = {}
    if r.returncode != 0:
        for pkg in PEER_PACKAGES:
            log(f"peers: that failed; pip install {pkg}")
            r = subprocess.run(pip + [pkg], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0:
                failed[pkg] = " / ".join(r.stdout.strip().splitlines()[-3:])
                log(f"peers: {pkg} did not install: {failed[pkg]}")
    return failed


def reexec_in_venv(argv):
    """Runs this script again with the virtual environment's Python, if it
    exists and is not the one running."""
    py = venv_python()
    if os.path.exists(py) and os.path.realpath(sys.prefix) != os.path.realpath(VENV):
        os.execv(py, [py, os.path.abspath(__file__)] + argv)


# ---------------------------------------------------------------- threads

def pin_threads(threads):
    """Every system gets `threads` threads: the environment read by each
    runtime when it starts (so this runs before any of them is imported),
    and the process's CPU affinity (inherited by axle bench) limited to
    `threads` CPUs, which also sizes XLA's and Halide's thread pools."""
    t = str(threads)
    env = {
        "AXLE_THREADS": t, "OMP_NUM_THREADS": t, "NUMBA_NUM_THREADS": t, "HL_NUM_THREADS": t,
        "OPENBLAS_NUM_THREADS": t, "MKL_NUM_THREADS": t,
        # libgomp's threads sleep at barriers instead of spinning (axle bench
        # sets the same for its baselines); a spinning pool in this process
        # would take a core from the system being timed.
        "OMP_WAIT_POLICY": "passive",
    }
    for k, v in env.items():
        os.environ[k] = v
    flags = os.environ.get("XLA_FLAGS", "")
    flags += f" --xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads={threads}"
    os.environ["XLA_FLAGS"] = flags.strip()
    try:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) > threads:
            os.sched_setaffinity(0, cpus[:threads])
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


# ---------------------------------------------------------------- the C side

def build_c(no_build):
    axle = os.path.join(BUILD, "axle")
    pio = os.path.join(BUILD, "axle-peer-io")
    if no_build:
        return axle, pio
    if not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
        subprocess.run(["cmake", "-S", ROOT, "-B", BUILD, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"], check=True,
                       stdout=subprocess.DEVNULL)
    log("peers: building axle and axle-peer-io")
    subprocess.run(["cmake", "--build", BUILD, "-j2", "--target", "axle_cli", "axle_peer_io"], check=True,
                   stdout=subprocess.DEVNULL)
    return axle, pio


def read_defines():
    """The programs' constants, read from examples/*.c so that the peers
    compute what the programs define."""
    want = {
        "programs.c": ["RISKFREE", "VOLATILITY"],
        "nbody.c": ["NB_EPS2", "NB_DT"],
        "mandelbrot.c": ["MB_DEPTH", "MB_X0", "MB_Y0", "MB_SX", "MB_SY"],
    }
    d = {}
    for f, names in want.items():
        text = open(os.path.join(ROOT, "examples", f)).read()
        for n in names:
            m = re.search(r"^#define\s+" + n + r"\s+\(?\s*([-+0-9.eE]+)f?\s*\)?", text, re.M)
            if not m:
                sys.exit(f"peers: cannot find #define {n} in examples/{f}")
            d[n] = float(m.group(1))
    m = re.search(r"enum\s*\{\s*NBINS\s*=\s*(\d+)", open(os.path.join(ROOT, "examples", "histogram.c")).read())
    if not m:
        sys.exit("peers: cannot find NBINS in examples/histogram.c")
    d["NBINS"] = int(m.group(1))
    return d


def peer_io(pio, program, size, datadir, np):
    """The program's inputs and axle's result, as written by axle-peer-io:
    (inputs, results, check), each a list of arrays per component."""
    if os.path.isdir(datadir):
        shutil.rmtree(datadir)
    os.makedirs(datadir)
    r = subprocess.run([pio, program, str(size), datadir], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    inputs, results, summary = {}, {}, None
    dtypes = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "u32": np.uint32,
              "u64": np.uint64, "i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16,
              "bool": np.bool_}
    for line in r.stdout.splitlines():
        o = json.loads(line)
        if "role" in o:
            a = np.fromfile(os.path.join(datadir, o["file"]), dtype=dtypes[o["type"]]).reshape(o["shape"])
            (inputs if o["role"] == "input" else results)[(o["array"], o["component"])] = a
        else:
            summary = o
    shutil.rmtree(datadir, ignore_errors=True)
    if r.returncode != 0 or summary is None:
        raise RuntimeError(f"axle-peer-io {program} {size} failed: {r.stderr.strip()} {summary}")
    return ([inputs[k] for k in sorted(inputs)], [results[k] for k in sorted(results)], summary)


def bench_help(axle):
    r = subprocess.run([axle, "bench", "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return r.stdout


def axle_bench(axle, program, size, threads, extra=()):
    """One `axle bench` run of program at size: one warm-up and the median
    of three timed runs of each configuration (the repetitions are this
    script's).  Three, not one: with one, the configuration timed first in
    the process (axle's own) ran about 10% slower than later ones (the
    histogram at 2 threads, 5 processes: 4 of them slower than the hand C
    timed last, by 5-15%; medians of 15 in one process were equal).
    Returns {config: (run_ms or None, check)}."""
    # (--max-time: the configurations this table does not show, such as
    # nofusion, stop after one timed run once they have taken 2 s)
    cmd = [axle, "bench", program, "--size", str(size), "--runs", "3", "--max-time", "2", "--json",
           "--threads", str(threads),
           "--mem-limit", "6G"] + list(extra)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rows = {}
    for line in r.stdout.splitlines():
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if o.get("program") == program and "config" in o:   # (not the ablation's summary line)
            rows[o["config"]] = (o.get("run_ms"), o.get("check", "?") + ("" if o.get("check") == "ok" else
                                                                          ": " + str(o.get("error", ""))))
    if not rows:
        raise RuntimeError(f"axle bench {program} gave no rows: {r.stderr.strip()[-300:]}")
    return rows


def axle_columns(rows, fast_from_extra=None):
    """axle bench's configurations as this table's columns."""
    out = {}
    names = {"fused": "axle", "baseline-std": "c-std", "baseline-fastmath": "c-fast"}
    for cfg, v in rows.items():
        if cfg in names:
            out[names[cfg]] = v
        elif cfg == "finite":
            out["axle-finite"] = v
        elif "fast" in cfg and not cfg.startswith("baseline"):
            out["axle-fast"] = v
    if fast_from_extra is not None and "axle-fast" not in out:
        for cfg, v in fast_from_extra.items():
            if "fast" in cfg and not cfg.startswith("baseline"):
                out["axle-fast"] = v
                break
        else:
            if "fused" in fast_from_extra:
                out["axle-fast"] = fast_from_extra["fused"]
    return out


# ---------------------------------------------------------------- the programs

class Program:
    """One program at one size: its inputs, its reference, a check, and an
    implementation per peer (each a function of no arguments returning the
    result as NumPy arrays, made after a one-time setup)."""

    def __init__(self, name, size, inputs, axle_result, consts, mods):
        self.name, self.size, self.inputs, self.axle_result = name, size, inputs, axle_result
        self.c, self.m = consts, mods
        self.np = mods["numpy"]

    def make(self, system):
        return getattr(self, f"{system}_{self.key}")()

    def hl_params(self, names):
        """The inputs as Halide ImageParams bound to their arrays (no copy),
        so that a pipeline can also be compiled ahead of time (--asm)."""
        hl, np = self.m["halide"], self.np
        ps = []
        for a, nm in zip(self.inputs, names):
            p = hl.ImageParam(hl.Float(32) if a.dtype == np.float32 else hl.Int(32), a.ndim, nm)
            p.set(hl.Buffer(a))
            ps.append(p)
        self.halide_args = ps
        return ps


# ---- histogram: permute (+) (fill [256] 0) (\i -> ix1 (xs ! i)) (map (const 1) xs)

class Histogram(Program):
    key = "hist"

    def reference(self):
        np = self.np
        (x,) = self.inputs
        self.nbins = self.c["NBINS"]
        self.ref = np.bincount(x, minlength=self.nbins).astype(np.int64)

    def check(self, res):
        np = self.np
        got = np.asarray(res[0]).astype(np.int64).reshape(-1)
        if got.shape != self.ref.shape:
            return False, f"shape {got.shape}, expected {self.ref.shape}"
        bad = np.nonzero(got != self.ref)[0]
        if bad.size:
            b = bad[0]
            return False, f"{bad.size} bins differ; bin {b}: {got[b]}, expected {self.ref[b]}"
        return True, "exact"

    def numpy_hist(self):
        np = self.np
        (x,) = self.inputs
        nb = self.nbins
        return lambda: (np.bincount(x, minlength=nb).astype(np.int32),)

    def numba_hist(self):
        numba, np = self.m["numba"], self.np
        (x,) = self.inputs
        nb, nt = self.nbins, numba.get_num_threads()

        # per-thread bins (a block of the input each), added up at the end
        @numba.njit(parallel=True, fastmath=True)
        def hist(x, nbins, nchunks):
            n = x.shape[0]
            local = np.zeros((nchunks, nbins), np.int32)
            chunk = (n + nchunks - 1) // nchunks
            for c in numba.prange(nchunks):
                lo = c * chunk
                hi = min(n, lo + chunk)
                for i in range(lo, hi):
                    local[c, x[i]] += 1
            out = np.zeros(nbins, np.int32)
            for c in range(nchunks):
                out += local[c]
            return out

        self.numba_fn = hist
        return lambda: (hist(x, nb, nt),)

    def jax_hist(self):
        jax, jnp = self.m["jax"], self.m["jnp"]
        xd = jnp.asarray(self.inputs[0])
        nb = self.nbins
        f = jax.jit(lambda x: jnp.bincount(x, length=nb).astype(jnp.int32))
        return lambda: (jax.block_until_ready(f(xd)),)

    def halide_hist(self):
        hl, np = self.m["halide"], self.np
        (x,) = self.inputs
        n, nb = x.shape[0], self.nbins
        (X,) = self.hl_params(["xs"])
        b, u = hl.Var("b"), hl.Var("u")
        r = hl.RDom([(0, n)], "r")
        hist = hl.Func("hist")
        hist[b] = 0
        hist[hl.clamp(X[r.x], 0, nb - 1)] += 1
        # per-thread partial histograms (rfactor over blocks of the input),
        # added up with vectors
        chunks = 4 * int(os.environ.get("HL_NUM_THREADS", "2"))
        ro, ri = hl.RVar("ro"), hl.RVar("ri")
        hist.update().split(r.x, ro, ri, (n + chunks - 1) // chunks)
        intm = hist.update().rfactor(ro, u)
        # (vectorising the final sum, hist.update(), crashes Halide 21's JIT
        # code on its second run: left scalar, 256 x chunks additions)
        vl = self.m["hl_vl"]
        intm.compute_root().vectorize(b, vl).update().parallel(u)
        hist.vectorize(b, vl)
        self.halide_funcs = [hist]
        p = hl.Pipeline(hist)

        def run():
            out = np.empty(nb, np.int32)
            p.realize([hl.Buffer(out)])
            return (out,)
        return run


# ---- dotp xs ys = fold (+) 0 (zipWith (*) xs ys), f32

class Dotp(Program):
    key = "dotp"

    def reference(self):
        np = self.np
        x, y = self.inputs
        s = mag = 0.0
        step = 1 << 22
        for i in range(0, x.shape[0], step):
            p = x[i:i + step].astype(np.float64) * y[i:i + step]
            s += float(p.sum())
            mag += float(np.abs(p).sum())
        self.ref, self.tol = s, 1e-5 * mag + 1e-6   # examples/programs.c dotp_check

    def check(self, res):
        got = float(self.np.asarray(res[0]).reshape(()))
        err = abs(got - self.ref)
        if not err <= self.tol:
            return False, f"{got:.9g}, expected {self.ref:.9g} (tolerance {self.tol:.3g})"
        return True, f"error {err / self.tol:.2g} of the tolerance"

    def numpy_dotp(self):
        np = self.np
        x, y = self.inputs
        return lambda: (np.dot(x, y),)

    def numba_dotp(self):
        numba, np = self.m["numba"], self.np
        x, y = self.inputs

        @numba.njit(parallel=True, fastmath=True)
        def dotp(x, y):
            s = np.float32(0)
            for i in numba.prange(x.shape[0]):
                s += x[i] * y[i]
            return s

        self.numba_fn = dotp
        return lambda: (dotp(x, y),)

    def jax_dotp(self):
        jax, jnp = self.m["jax"], self.m["jnp"]
        xd, yd = (jnp.asarray(a) for a in self.inputs)
        f = jax.jit(jnp.dot)
        return lambda: (jax.block_until_ready(f(xd, yd)),)

    def halide_dotp(self):
        hl, np = self.m["halide"], self.np
        x, y = self.inputs
        n = x.shape[0]
        X, Y = self.hl_params(["xs", "ys"])
        r = hl.RDom([(0, n)], "r")
        dot = hl.Func("dot")
        dot[()] = hl.f32(0)
        dot[()] += X[r.x] * Y[r.x]
        # blocks of the input summed in parallel (rfactor), each block by
        # vector lanes (rfactor again), four vectors at a time
        vl = self.m["hl_vl"]
        u, v = hl.Var("u"), hl.Var("v")
        ro, ri, rio, rii = hl.RVar("ro"), hl.RVar("ri"), hl.RVar("rio"), hl.RVar("rii")
        # 16 tasks a thread (thousands of small ones cost Halide's thread
        # pool more than the work on a busy machine)
        tasks = 16 * int(os.environ.get("HL_NUM_THREADS", "2"))
        block = max(4 * vl, -(-n // tasks // (4 * vl)) * 4 * vl)
        dot.update().split(r.x, ro, ri, block)
        intm = dot.update().rfactor(ro, u)
        intm.compute_root().update().parallel(u)
        intm.update().split(ri, rio, rii, 4 * vl)
        lanes = intm.update().rfactor(rii, v)
        lanes.compute_at(intm, u).vectorize(v, vl).update().vectorize(v, vl)
        self.halide_funcs = [dot]
        p = hl.Pipeline(dot)

        def run():
            out = np.empty((), np.float32)
            p.realize([hl.Buffer(out)])
            return (out,)
        return run


# ---- Black-Scholes (examples/programs.c callput), f32

class BlackScholes(Program):
    key = "bs"
    COEFF = (0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429)
    K = 0.2316419
    RSQRT2PI = 0.39894228040143267793994605993438

    def reference(self):
        np = self.np
        price, strike, years = (a.astype(np.float64) for a in self.inputs)
        r, v = float(np.float32(self.c["RISKFREE"])), float(np.float32(self.c["VOLATILITY"]))

        def cnd(d):
            k = 1.0 / (1.0 + self.K * np.abs(d))
            c = self.COEFF
            poly = k * (c[0] + k * (c[1] + k * (c[2] + k * (c[3] + k * c[4]))))
            cn = self.RSQRT2PI * np.exp(-0.5 * d * d) * poly
            return np.where(d > 0, 1.0 - cn, cn)

        vs = v * np.sqrt(years)
        d1 = (np.log(price / strike) + (r + 0.5 * v * v) * years) / vs
        d2 = d1 - vs
        c1, c2 = cnd(d1), cnd(d2)
        xe = strike * np.exp(-r * years)
        self.ref = (price * c1 - xe * c2, xe * (1 - c2) - price * (1 - c1))
        self.tol = 1e-4 * (price + strike)   # examples/programs.c bs_check

    def check(self, res):
        np = self.np
        worst = 0.0
        for k, name in ((0, "call"), (1, "put")):
            got = np.asarray(res[k], dtype=np.float64)
            err = np.abs(got - self.ref[k])
            bad = ~(err <= self.tol)
            if bad.any():
                i = int(np.argmax(bad))
                return False, f"{name} {i}: {got[i]:.7g}, expected {self.ref[k][i]:.7g} ({int(bad.sum())} out)"
            worst = max(worst, float((err / self.tol).max()))
        return True, f"error at most {worst:.2g} of the tolerance"

    def consts32(self):
        np = self.np
        r, v = np.float32(self.c["RISKFREE"]), np.float32(self.c["VOLATILITY"])
        drift = np.float32(r + np.float32(np.float32(0.5) * v) * v)
        return r, v, drift

    def numpy_bs(self):
        np = self.np
        price, strike, years = self.inputs
        r, v, drift = self.consts32()
        C = [np.float32(c) for c in self.COEFF]
        K, R2P = np.float32(self.K), np.float32(self.RSQRT2PI)
        one, half = np.float32(1), np.float32(-0.5)

        def cnd(d):
            k = one / (one + K * np.abs(d))
            poly = k * (C[0] + k * (C[1] + k * (C[2] + k * (C[3] + k * C[4]))))
            c = R2P * np.exp(half * d * d) * poly
            return np.where(d > 0, one - c, c)

        def run():
            vs = v * np.sqrt(years)
            d1 = (np.log(price / strike) + drift * years) / vs
            d2 = d1 - vs
            c1, c2 = cnd(d1), cnd(d2)
            xe = strike * np.exp(-r * years)
            return price * c1 - xe * c2, xe * (one - c2) - price * (one - c1)
        return run

    def numba_bs(self):
        numba, np = self.m["numba"], self.np
        price, strike, years = self.inputs
        r, v, drift = self.consts32()
        c0, c1_, c2_, c3, c4 = (np.float32(c) for c in self.COEFF)
        K, R2P = np.float32(self.K), np.float32(self.RSQRT2PI)
        one, mhalf, zero = np.float32(1), np.float32(-0.5), np.float32(0)

        @numba.njit(fastmath=True, inline="always")
        def cnd(d):
            k = one / (one + K * abs(d))
            poly = k * (c0 + k * (c1_ + k * (c2_ + k * (c3 + k * c4))))
            c = R2P * np.exp(mhalf * d * d) * poly
            return one - c if d > zero else c

        @numba.njit(parallel=True, fastmath=True)
        def bs(price, strike, years, call, put):
            n = price.shape[0]
            for i in numba.prange(n):
                p, s, t = price[i], strike[i], years[i]
                vs = v * np.sqrt(t)
                d1 = (np.log(p / s) + drift * t) / vs
                d2 = d1 - vs
                cd1, cd2 = cnd(d1), cnd(d2)
                xe = s * np.exp(-r * t)
                call[i] = p * cd1 - xe * cd2
                put[i] = xe * (one - cd2) - p * (one - cd1)
            return call, put

        self.numba_fn = bs
        call, put = np.empty_like(price), np.empty_like(price)   # written by every run
        return lambda: bs(price, strike, years, call, put)

    def jax_bs(self):
        jax, jnp = self.m["jax"], self.m["jnp"]
        args = [jnp.asarray(a) for a in self.inputs]
        r, v, drift = (float(c) for c in self.consts32())
        C, K, R2P = self.COEFF, self.K, self.RSQRT2PI

        def cnd(d):
            k = 1.0 / (1.0 + K * jnp.abs(d))
            poly = k * (C[0] + k * (C[1] + k * (C[2] + k * (C[3] + k * C[4]))))
            c = R2P * jnp.exp(-0.5 * d * d) * poly
            return jnp.where(d > 0, 1.0 - c, c)

        @jax.jit
        def bs(price, strike, years):
            vs = v * jnp.sqrt(years)
            d1 = (jnp.log(price / strike) + drift * years) / vs
            d2 = d1 - vs
            c1, c2 = cnd(d1), cnd(d2)
            xe = strike * jnp.exp(-r * years)
            return price * c1 - xe * c2, xe * (1.0 - c2) - price * (1.0 - c1)

        return lambda: jax.block_until_ready(bs(*args))

    def halide_bs(self):
        hl, np = self.m["halide"], self.np
        price, strike, years = self.inputs
        n = price.shape[0]
        P, S, T = self.hl_params(["price", "strike", "years"])
        r, v, drift = (hl.f32(float(c)) for c in self.consts32())
        C = [hl.f32(c) for c in self.COEFF]
        K, R2P, one = hl.f32(self.K), hl.f32(self.RSQRT2PI), hl.f32(1)
        i = hl.Var("i")

        def cnd(d):
            k = one / (one + K * hl.abs(d))
            poly = k * (C[0] + k * (C[1] + k * (C[2] + k * (C[3] + k * C[4]))))
            c = R2P * hl.exp(hl.f32(-0.5) * d * d) * poly
            return hl.select(d > 0, one - c, c)

        p_, s_, t_ = P[i], S[i], T[i]
        vs = v * hl.sqrt(t_)
        d1 = (hl.log(p_ / s_) + drift * t_) / vs
        d2 = d1 - vs
        cd1, cd2 = cnd(d1), cnd(d2)
        xe = s_ * hl.exp(-r * t_)
        out = hl.Func("blackscholes")
        out[i] = (p_ * cd1 - xe * cd2, xe * (one - cd2) - p_ * (one - cd1))
        vl = self.m["hl_vl"]
        io, ii = hl.Var("io"), hl.Var("ii")
        out.split(i, io, ii, 64 * vl, hl.TailStrategy.GuardWithIf).parallel(io).vectorize(ii, vl)
        self.halide_funcs = [out]
        pl = hl.Pipeline(out)

        call, put = np.empty(n, np.float32), np.empty(n, np.float32)   # written by every run
        outs = [hl.Buffer(call), hl.Buffer(put)]

        def run():
            pl.realize(outs)
            return call, put
        return run


# ---- N-body: accelerations (all pairs, fused fold) and one step (examples/nbody.c)

class Nbody(Program):
    key = "nbody"

    def reference(self):
        np = self.np
        x, y, z, m = self.inputs[:4]
        vx, vy, vz = self.inputs[4:7]
        n = x.shape[0]
        eps2, dt = float(np.float32(self.c["NB_EPS2"])), float(np.float32(self.c["NB_DT"]))
        u = float(np.finfo(np.float32).eps)
        a = np.zeros((3, n))
        mag = np.zeros((3, n))
        if "numba" in self.m:
            numba = self.m["numba"]

            @numba.njit(parallel=True)   # double precision, no fast-math
            def accel64(x, y, z, m, eps2, a, mag):
                n = x.shape[0]
                for i in numba.prange(n):
                    for j in range(n):
                        rx = np.float64(x[j]) - x[i]
                        ry = np.float64(y[j]) - y[i]
                        rz = np.float64(z[j]) - z[i]
                        rs = rx * rx + ry * ry + rz * rz + eps2
                        sc = m[j] / (rs * np.sqrt(rs))
                        a[0, i] += sc * rx
                        a[1, i] += sc * ry
                        a[2, i] += sc * rz
                        mag[0, i] += abs(sc * rx)
                        mag[1, i] += abs(sc * ry)
                        mag[2, i] += abs(sc * rz)

            accel64(x, y, z, m, eps2, a, mag)
        else:
            P = [c.astype(np.float64) for c in (x, y, z)]
            M = m.astype(np.float64)
            B = max(1, (1 << 22) // max(n, 1))
            for i0 in range(0, n, B):
                rv = [p[None, :] - p[i0:i0 + B, None] for p in P]
                rs = rv[0] ** 2 + rv[1] ** 2 + rv[2] ** 2 + eps2
                sc = M[None, :] / (rs * np.sqrt(rs))
                for c in range(3):
                    t = sc * rv[c]
                    a[c, i0:i0 + B] = t.sum(1)
                    mag[c, i0:i0 + B] = np.abs(t).sum(1)
        vs, ps = [], []
        for c in range(3):
            vin, pin = self.inputs[4 + c].astype(np.float64), self.inputs[c].astype(np.float64)
            v = vin + dt * a[c]
            p = pin + dt * v
            ea = (n + 16) * u * mag[c]
            ev = 2 * u * (np.abs(vin) + dt * mag[c]) + dt * ea
            ep = 2 * u * (np.abs(pin) + dt * np.abs(v)) + dt * ev
            ps.append((p, 4 * ep + 1e-30))
            vs.append((v, 4 * ev + 1e-30))
        self.ref = [t[0] for t in ps + vs]   # x, y, z, vx, vy, vz as the results
        self.tol = [t[1] for t in ps + vs]

    def check(self, res):
        np = self.np
        names = ("x", "y", "z", "vx", "vy", "vz")
        worst = 0.0
        for c in range(6):
            got = np.asarray(res[c], dtype=np.float64)
            err = np.abs(got - self.ref[c])
            bad = ~(err <= self.tol[c])
            if bad.any():
                i = int(np.argmax(bad))
                return False, (f"body {i} {names[c]}: {got[i]:.9g}, expected {self.ref[c][i]:.9g} "
                               f"(tolerance {self.tol[c][i]:.3g}; {int(bad.sum())} out)")
            worst = max(worst, float((err / self.tol[c]).max()))
        return True, f"error at most {worst:.2g} of the tolerance"

    def consts32(self):
        np = self.np
        return np.float32(self.c["NB_EPS2"]), np.float32(self.c["NB_DT"])

    def numpy_nbody(self):
        np = self.np
        if self.size > 16384:
            raise Skip("its n x n temporaries make one run take minutes at this size")
        x, y, z, m, vx, vy, vz = self.inputs
        eps2, dt = self.consts32()
        n = x.shape[0]
        B = max(1, min(n, (1 << 21) // n))

        def run():
            a = np.empty((3, n), np.float32)
            for i0 in range(0, n, B):
                rx = x[None, :] - x[i0:i0 + B, None]
                ry = y[None, :] - y[i0:i0 + B, None]
                rz = z[None, :] - z[i0:i0 + B, None]
                rs = rx * rx + ry * ry + rz * rz + eps2
                invr = np.float32(1) / np.sqrt(rs)
                s = m[None, :] * (invr * invr * invr)
                a[0, i0:i0 + B] = (s * rx).sum(1)
                a[1, i0:i0 + B] = (s * ry).sum(1)
                a[2, i0:i0 + B] = (s * rz).sum(1)
            nvx, nvy, nvz = vx + dt * a[0], vy + dt * a[1], vz + dt * a[2]
            return x + dt * nvx, y + dt * nvy, z + dt * nvz, nvx, nvy, nvz
        return run

    def numba_nbody(self):
        numba, np = self.m["numba"], self.np
        eps2, dt = self.consts32()
        one = np.float32(1)

        @numba.njit(parallel=True, fastmath=True)
        def nbody(x, y, z, m, vx, vy, vz, ox, oy, oz, ovx, ovy, ovz):
            n = x.shape[0]
            for i in numba.prange(n):
                xi, yi, zi = x[i], y[i], z[i]
                ax = np.float32(0)
                ay = np.float32(0)
                az = np.float32(0)
                for j in range(n):
                    rx = x[j] - xi
                    ry = y[j] - yi
                    rz = z[j] - zi
                    rs = rx * rx + ry * ry + rz * rz + eps2
                    invr = one / np.sqrt(rs)
                    s = m[j] * (invr * invr * invr)
                    ax += s * rx
                    ay += s * ry
                    az += s * rz
                nvx = vx[i] + dt * ax
                nvy = vy[i] + dt * ay
                nvz = vz[i] + dt * az
                ovx[i], ovy[i], ovz[i] = nvx, nvy, nvz
                ox[i], oy[i], oz[i] = xi + dt * nvx, yi + dt * nvy, zi + dt * nvz

        self.numba_fn = nbody
        outs = tuple(np.empty_like(self.inputs[0]) for _ in range(6))   # written by every run
        args = tuple(self.inputs) + outs

        def run():
            nbody(*args)
            return outs
        return run

    def jax_nbody(self):
        jax, jnp = self.m["jax"], self.m["jnp"]
        x, y, z, m, vx, vy, vz = (jnp.asarray(a) for a in self.inputs)
        eps2, dt = (float(c) for c in self.consts32())
        n = self.size
        B = n   # rows of the n x n terms per block: at most 2^24 terms at once
        while B * n > (1 << 24) and B % 2 == 0:
            B //= 2

        def rows(ix):
            xi, yi, zi = x[ix], y[ix], z[ix]
            rx = x[None, :] - xi[:, None]
            ry = y[None, :] - yi[:, None]
            rz = z[None, :] - zi[:, None]
            rs = rx * rx + ry * ry + rz * rz + eps2
            invr = 1.0 / jnp.sqrt(rs)
            s = m[None, :] * (invr * invr * invr)
            return jnp.stack([(s * rx).sum(1), (s * ry).sum(1), (s * rz).sum(1)])

        @jax.jit
        def step(x, y, z, vx, vy, vz):
            idx = jnp.arange(n).reshape(n // B, B)
            a = jax.lax.map(rows, idx)                      # (n/B, 3, B)
            a = jnp.transpose(a, (1, 0, 2)).reshape(3, n)
            nvx, nvy, nvz = vx + dt * a[0], vy + dt * a[1], vz + dt * a[2]
            return x + dt * nvx, y + dt * nvy, z + dt * nvz, nvx, nvy, nvz

        return lambda: jax.block_until_ready(step(x, y, z, vx, vy, vz))

    def halide_nbody(self):
        hl, np = self.m["halide"], self.np
        n = self.size
        X, Y, Z, M, VX, VY, VZ = self.hl_params(["x", "y", "z", "m", "vx", "vy", "vz"])
        eps2, dt = (hl.f32(float(c)) for c in self.consts32())
        i = hl.Var("i")
        j = hl.RDom([(0, n)], "j")
        rx, ry, rz = X[j] - X[i], Y[j] - Y[i], Z[j] - Z[i]
        rs = rx * rx + ry * ry + rz * rz + eps2
        invr = hl.f32(1) / hl.sqrt(rs)
        s = M[j] * (invr * invr * invr)
        acc = hl.Func("accel")
        acc[i] = (hl.f32(0), hl.f32(0), hl.f32(0))
        acc[i] = (acc[i][0] + s * rx, acc[i][1] + s * ry, acc[i][2] + s * rz)
        nv = [V[i] + dt * acc[i][c] for c, V in enumerate((VX, VY, VZ))]
        out = hl.Func("step")
        out[i] = (X[i] + dt * nv[0], Y[i] + dt * nv[1], Z[i] + dt * nv[2], nv[0], nv[1], nv[2])
        # bodies i in vectors (two vectors of them a task), the loop over j
        # inside with j's values broadcast; tasks in parallel
        vl = self.m["hl_vl"]
        io, ii = hl.Var("io"), hl.Var("ii")
        out.split(i, io, ii, 2 * vl, hl.TailStrategy.GuardWithIf).parallel(io).vectorize(ii)
        acc.compute_at(out, io).vectorize(i)
        acc.update().vectorize(i)
        self.halide_funcs = [out]
        pl = hl.Pipeline(out)

        o = tuple(np.empty(n, np.float32) for _ in range(6))   # written by every run
        outs = [hl.Buffer(a) for a in o]

        def run():
            pl.realize(outs)
            return o
        return run


# ---- Mandelbrot, while form (examples/mandelbrot.c mandel_pixel)

class Mandelbrot(Program):
    key = "mandel"

    def geometry(self):
        np = self.np
        h, w = self.axle_result[0].shape
        X0, Y0, SX, SY = (np.float32(self.c[k]) for k in ("MB_X0", "MB_Y0", "MB_SX", "MB_SY"))
        return h, w, X0, Y0, SX, SY, int(self.c["MB_DEPTH"])

    def plane(self):
        """(cr, ci) of every pixel, in f32 as the program computes them."""
        np = self.np
        h, w, X0, Y0, SX, SY, _ = self.geometry()
        cr = X0 + (np.arange(w, dtype=np.float32) * SX) / np.float32(w)
        ci = Y0 + (np.arange(h, dtype=np.float32) * SY) / np.float32(h)
        return np.broadcast_to(cr[None, :], (h, w)), np.broadcast_to(ci[:, None], (h, w))

    def reference(self):
        # the plain f32 loop in the program's order, evaluated by NumPy's
        # elementwise operations (each rounded once, no contraction)
        self.ref = self.numpy_mandel()()[0]

    def check(self, res):
        np = self.np
        got = np.asarray(res[0]).reshape(self.ref.shape)
        diff = int((got != self.ref).sum())
        allowed = self.ref.size // 100 + 1
        if diff > allowed:
            return False, f"{diff} of {self.ref.size} pixels differ (at most {allowed} may)"
        return True, f"{diff} pixels differ ({100.0 * diff / self.ref.size:.2f}%)"

    def numpy_mandel(self):
        np = self.np
        h, w, *_, depth = self.geometry()
        crs, cis = self.plane()
        crs, cis = crs.reshape(-1).copy(), cis.reshape(-1).copy()

        def run():
            cr, ci = crs, cis
            zr = cr + (cr * cr - ci * ci)
            zi = ci + (cr * ci + ci * cr)
            cnt = np.zeros(h * w, np.int32)
            idx = np.arange(h * w)
            for _ in range(depth):   # the pixels still iterating, compacted
                live = zr * zr + zi * zi <= 4
                if not live.all():
                    idx, zr, zi, cr, ci = idx[live], zr[live], zi[live], cr[live], ci[live]
                    if idx.size == 0:
                        break
                cnt[idx] += 1
                zr, zi = cr + (zr * zr - zi * zi), ci + (zr * zi + zi * zr)
            return (cnt.reshape(h, w),)
        return run

    def numba_mandel(self):
        numba, np = self.m["numba"], self.np
        h, w, X0, Y0, SX, SY, depth = self.geometry()
        four = np.float32(4)

        @numba.njit(parallel=True, fastmath=True)
        def mandel(h, w, out):
            fw, fh = np.float32(w), np.float32(h)
            for y in numba.prange(h):
                ci = Y0 + (np.float32(y) * SY) / fh
                for x in range(w):
                    cr = X0 + (np.float32(x) * SX) / fw
                    zr = cr + (cr * cr - ci * ci)
                    zi = ci + (cr * ci + ci * cr)
                    i = 0
                    while i < depth and zr * zr + zi * zi <= four:
                        zr, zi = cr + (zr * zr - zi * zi), ci + (zr * zi + zi * zr)
                        i += 1
                    out[y, x] = i

        self.numba_fn = mandel
        out = np.empty((h, w), np.int32)   # written by every run

        def run():
            mandel(h, w, out)
            return (out,)
        return run

    def jax_mandel(self):
        jax, jnp = self.m["jax"], self.m["jnp"]
        h, w, X0, Y0, SX, SY, depth = self.geometry()
        X0, Y0, SX, SY = (float(c) for c in (X0, Y0, SX, SY))

        @jax.jit
        def mandel():
            cr = X0 + (jnp.arange(w, dtype=jnp.float32) * SX) / float(w)
            ci = Y0 + (jnp.arange(h, dtype=jnp.float32) * SY) / float(h)
            cr, ci = jnp.broadcast_to(cr[None, :], (h, w)), jnp.broadcast_to(ci[:, None], (h, w))

            def body(_, s):   # an escaped pixel keeps its z, so stays escaped
                zr, zi, cnt = s
                live = zr * zr + zi * zi <= 4.0
                nr, ni = cr + (zr * zr - zi * zi), ci + (zr * zi + zi * zr)
                return jnp.where(live, nr, zr), jnp.where(live, ni, zi), cnt + live.astype(jnp.int32)

            z0 = (cr + (cr * cr - ci * ci), ci + (cr * ci + ci * cr), jnp.zeros((h, w), jnp.int32))
            return jax.lax.fori_loop(0, depth, body, z0)[2]

        return lambda: (jax.block_until_ready(mandel()),)

    def halide_mandel(self):
        hl, np = self.m["halide"], self.np
        h, w, X0, Y0, SX, SY, depth = self.geometry()
        x, y = hl.Var("x"), hl.Var("y")
        cr = hl.f32(float(X0)) + (hl.f32(x) * hl.f32(float(SX))) / hl.f32(float(w))
        ci = hl.f32(float(Y0)) + (hl.f32(y) * hl.f32(float(SY))) / hl.f32(float(h))
        # Halide has no data-dependent loop: the 255 steps as an update over
        # an RDom, an escaped pixel keeping its z (so staying escaped)
        st = hl.Func("state")
        st[x, y] = (cr + (cr * cr - ci * ci), ci + (cr * ci + ci * cr), 0)
        t = hl.RDom([(0, depth)], "t")
        zr, zi, cnt = st[x, y][0], st[x, y][1], st[x, y][2]
        # (t must appear in the update, or Halide makes no loop over it)
        live = (zr * zr + zi * zi <= hl.f32(4)) & (t.x < depth)
        st[x, y] = (hl.select(live, cr + (zr * zr - zi * zi), zr), hl.select(live, ci + (zr * zi + zi * zr), zi),
                    hl.select(live, cnt + 1, cnt))
        out = hl.Func("mandel")
        out[x, y] = st[x, y][2]
        vl = self.m["hl_vl"]
        xo, xi = hl.Var("xo"), hl.Var("xi")
        out.split(x, xo, xi, 2 * vl, hl.TailStrategy.GuardWithIf).vectorize(xi).parallel(y)
        st.compute_at(out, xo).vectorize(x)
        st.update().vectorize(x)
        self.halide_funcs = [out]
        pl = hl.Pipeline(out)

        o = np.empty((h, w), np.int32)   # written by every run
        outs = [hl.Buffer(o)]

        def run():
            pl.realize(outs)
            return (o,)
        return run


class Skip(Exception):
    pass


PROGRAMS = {"histogram": Histogram, "dotp": Dotp, "blackscholes": BlackScholes, "nbody": Nbody,
            "mandelbrot-while": Mandelbrot}


# ---------------------------------------------------------------- measuring

def unavailable(e):
    if isinstance(e, ImportError):
        return f"not installed ({e}; --install installs the peers into build/peers-venv)"
    return f"not usable: {type(e).__name__}: {e}"


def load_peers(wanted, hugepages):
    """Imports each peer; returns (modules, versions, errors)."""
    mods, vers, errs = {}, {}, {}
    from importlib import metadata
    try:
        import numpy
        mods["numpy"] = numpy
        vers["numpy"] = numpy.__version__
    except ImportError as e:
        sys.exit(f"peers: NumPy is needed for the inputs and references ({e}); run with --install")
    # NumPy asks for transparent huge pages for its large arrays
    # (madvise); the C side's inputs (malloc in examples/*.c) get 4 KiB
    # pages where the kernel's THP setting is "madvise", and streaming
    # loops run measurably faster on huge pages (dot product of 10^8: 25
    # against 32 ms here).  The same pages for everyone unless --hugepages.
    if not hugepages:
        for modname in ("numpy._core.multiarray", "numpy.core.multiarray"):
            try:
                __import__(modname, fromlist=["_set_madvise_hugepage"])._set_madvise_hugepage(False)
                break
            except (ImportError, AttributeError):
                continue
    if "numba" in wanted:
        try:
            import numba
            numba.set_num_threads(int(os.environ["NUMBA_NUM_THREADS"]))
            mods["numba"] = numba
            vers["numba"] = f"{numba.__version__} (llvmlite {metadata.version('llvmlite')})"
        except Exception as e:   # noqa: BLE001 (any failure leaves the column empty)
            errs["numba"] = unavailable(e)
    if "jax" in wanted:
        try:
            import jax
            import jax.numpy as jnp
            jax.devices("cpu")
            mods["jax"], mods["jnp"] = jax, jnp
            vers["jax"] = f"{jax.__version__} (jaxlib {metadata.version('jaxlib')})"
        except Exception as e:   # noqa: BLE001
            errs["jax"] = unavailable(e)
    if "halide" in wanted:
        try:
            import halide
            mods["halide"] = halide
            tgt = halide_host_target(halide)
            mods["hl_vl"] = tgt.natural_vector_size(halide.Float(32))
            vers["halide"] = f"{metadata.version('halide')} (JIT target {tgt})"
        except Exception as e:   # noqa: BLE001
            errs["halide"] = unavailable(e)
    return mods, vers, errs


def cpu_flags():
    """The CPU features the kernel reports and enables (/proc/cpuinfo's
    flags), or None where that file is not there."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def halide_host_target(hl):
    """Halide's JIT target, less the AVX-512 features that the kernel does
    not enable.  Halide 21 takes them from CPUID alone, which on a virtual
    machine whose hypervisor hides AVX-512 (family 25 model 17 reporting
    only AVX2 in /proc/cpuinfo) still lists them: its code then dies of
    SIGILL.  HL_JIT_TARGET, when set, is the user's choice and is kept; the
    target chosen here is put there so that every realize() uses it."""
    if os.environ.get("HL_JIT_TARGET"):
        return hl.get_jit_target_from_environment()
    tgt = hl.get_jit_target_from_environment()
    flags = cpu_flags()
    if flags is not None and "avx512f" not in flags:
        for name in dir(hl.TargetFeature):
            if name.startswith("AVX512"):
                tgt = tgt.without_feature(getattr(hl.TargetFeature, name))
    os.environ["HL_JIT_TARGET"] = str(tgt)
    return tgt


def median(xs):
    return statistics.median(xs) if xs else None


def write_asm(prog, system, asmdir):
    """The generated code of a peer's implementation, for reading."""
    os.makedirs(asmdir, exist_ok=True)
    base = os.path.join(asmdir, f"{prog.name}-{prog.size}-{system}")
    if system == "numba" and getattr(prog, "numba_fn", None) is not None:
        with open(base + ".s", "w") as f:
            for sig, asm in prog.numba_fn.inspect_asm().items():
                f.write(f"# signature {sig}\n{asm}\n")
    elif system == "halide" and getattr(prog, "halide_funcs", None):
        hl = prog.m["halide"]
        tgt = hl.get_jit_target_from_environment().without_feature(hl.TargetFeature.JIT)
        for fn in prog.halide_funcs:
            hl.Pipeline(fn).compile_to_assembly(base + ".s", getattr(prog, "halide_args", []),
                                                fn.name().replace("-", "_"), tgt)


def axle_asm(axle, program, size, asmdir):
    """axle's generated C for the program (axle dump --stage c)."""
    os.makedirs(asmdir, exist_ok=True)
    with open(os.path.join(asmdir, f"{program}-{size}-axle.c"), "w") as f:
        subprocess.run([axle, "dump", program, "--size", str(size), "--stage", "c"], stdout=f,
                       stderr=subprocess.STDOUT)


def run_row(row, args, axle, pio, consts, mods, errs, fast_mode):
    name, size, label, size_label = row
    np = mods["numpy"]
    log(f"\n== {name} {size}")
    inputs, axle_result, summary = peer_io(pio, name, size, os.path.join(BUILD, "peers", "data"), np)
    prog = PROGRAMS[name](name, size, inputs, axle_result, consts, mods)
    t0 = time.time()
    prog.reference()
    log(f"   reference in {time.time() - t0:.1f} s")
    if name == "mandelbrot-while" and size_label is None:
        h, w = axle_result[0].shape
        size_label = f"{size:,} px ({h}x{w})"
    res = {"program": name, "size": size, "label": label, "size_label": size_label, "times": {}, "checks": {},
           "notes": {}}
    ok, why = prog.check(axle_result)
    res["axle_result_check"] = ("ok" if ok else "FAIL") + f" ({why})"
    log(f"   axle's result (axle-peer-io): {res['axle_result_check']}; C reference check: {summary['check']}")

    if args.asm:
        axle_asm(axle, name, size, args.asm)
    runners = {}
    for system in args.systems:
        if system in errs:
            res["notes"][system] = errs[system]
            continue
        try:
            fn = prog.make(system)
            t = time.perf_counter()
            out = fn()   # the warm-up (and JIT compilation)
            warm = time.perf_counter() - t
            ok, why = prog.check(out)
            res["checks"][system] = ("ok" if ok else "FAIL") + f" ({why})"
            log(f"   {system}: first run {warm * 1e3:.1f} ms (compiling, for the JITs); check {res['checks'][system]}")
            runners[system] = fn
            if args.asm:
                write_asm(prog, system, args.asm)
        except Skip as e:
            res["notes"][system] = f"not run: {e}"
            log(f"   {system}: not run: {e}")
        except Exception as e:   # noqa: BLE001 (a peer's failure empties its cell, the rest goes on)
            res["notes"][system] = f"failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            log(f"   {system}: {res['notes'][system]}")

    times = {k: [] for k, _ in COLUMNS}
    axle_checks = {}
    order = ["axle"] + list(runners)
    for rep in range(args.runs):
        k = rep % len(order)
        last = {}
        for system in order[k:] + order[:k]:
            if system == "axle":
                rows = axle_bench(axle, name, size, args.threads)
                extra = None
                if fast_mode == "option" and not any("fast" in c and not c.startswith("baseline") for c in rows):
                    extra = axle_bench(axle, name, size, args.threads, ["--fast-math"])
                for col, (ms, chk) in axle_columns(rows, extra).items():
                    if ms is not None:
                        times[col].append(ms)
                    if not chk.startswith("ok"):
                        axle_checks[col] = chk
            elif system in runners:
                try:
                    t = time.perf_counter()
                    out = runners[system]()
                    times[system].append((time.perf_counter() - t) * 1e3)
                except Exception as e:   # noqa: BLE001 (it leaves the rest of the table alone)
                    res["checks"][system] = f"FAIL (run {rep + 1}: {type(e).__name__}: {e})"
                    del runners[system]
                    continue
                if rep == args.runs - 1:
                    last[system] = out
        log(f"   run {rep + 1}/{args.runs}: " + ", ".join(f"{c} {times[c][-1]:.2f}" for c, _ in COLUMNS
                                                      if len(times[c]) == rep + 1))
    for system, out in last.items():   # the last timed result is checked too
        ok, why = prog.check(out)
        if not ok:
            res["checks"][system] = f"FAIL (last run: {why})"
    for col in ("axle", "axle-fast", "axle-finite", "c-std", "c-fast"):
        if times[col]:
            res["checks"][col] = axle_checks.get(col, "ok (axle bench: against the plain-C reference)")
    res["times"] = {c: v for c, v in times.items() if v}
    res["medians"] = {c: median(v) for c, v in times.items() if v}
    return res


# ---------------------------------------------------------------- the table

def fmt_ms(v):
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 1000 else f"{v:.1f}" if v >= 100 else f"{v:.2f}" if v >= 1 else f"{v:.3f}"


def table(results, cols, ratios, bases=None):
    bases = bases or RATIO_BASE
    head = "| program | size | " + " | ".join(h for _, h in cols) + " |"
    lines = [head, "|---|---|" + "---:|" * len(cols)]
    for r in results:
        med = r["medians"]
        cells = []
        for key, _ in cols:
            v = med.get(key)
            failed = r["checks"].get(key, "ok").startswith("FAIL")
            base = med.get(bases.get(key, "axle"))
            if v is None:
                c = "-"
            elif ratios:
                c = "1.00" if key == "axle" else (f"{v / base:.2f}" if base else "-")
            else:
                c = fmt_ms(v) + (" ms" if key == "axle" else "")
            cells.append(c + (" (wrong)" if failed and v is not None else ""))
        lines.append(f"| {r['label']} | {r['size_label']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cpu_name():
    """The model name, with family and model (a VM's name can be vague)."""
    info = {}
    try:
        for line in open("/proc/cpuinfo"):
            k, _, v = line.partition(":")
            info.setdefault(k.strip(), v.strip())
    except OSError:
        return "?"
    name = info.get("model name", "?")
    if "cpu family" in info:
        name += f" (family {info['cpu family']}, model {info.get('model', '?')}"
        name += ", AVX-512)" if "avx512f" in info.get("flags", "").split() else ")"
    return name


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--install", action="store_true", help="make build/peers-venv and pip install the peers")
    ap.add_argument("--runs", type=int, default=7, help="interleaved repetitions (default 7)")
    ap.add_argument("--threads", type=int, default=2, help="threads for every system (default 2)")
    ap.add_argument("--rows", help="program:size,... instead of the default rows (e.g. nbody:4096,dotp:1e6)")
    ap.add_argument("--systems", default=",".join(PEERS), help="peers to run (default: halide,numba,jax,numpy)")
    ap.add_argument("--quick", action="store_true", help="small sizes and 3 runs: a smoke test")
    ap.add_argument("--json", default=os.path.join(BUILD, "peers", "latest.json"), help="where to write the results")
    ap.add_argument("--asm", help="write the peers' generated code (Numba, Halide) into this folder")
    ap.add_argument("--hugepages", action="store_true",
                    help="leave NumPy's huge-page advice on (the peers' arrays then get huge pages, axle's inputs not)")
    ap.add_argument("--no-build", action="store_true", help="use build/axle and build/axle-peer-io as they are")
    args = ap.parse_args()

    argv = [a for a in sys.argv[1:] if a != "--install"]
    failed = {}
    if args.install:
        failed = install()
        os.environ["AXLE_PEERS_INSTALL_FAILED"] = json.dumps(failed)
    reexec_in_venv(argv)
    failed.update(json.loads(os.environ.get("AXLE_PEERS_INSTALL_FAILED", "{}")))

    cpus = pin_threads(args.threads)
    args.systems = [s for s in args.systems.split(",") if s]
    for s in args.systems:
        if s not in PEERS:
            sys.exit(f"peers: unknown system '{s}' (one of {', '.join(PEERS)})")
    if args.quick:
        args.runs = min(args.runs, 3)
    rows = []
    if args.rows:
        for spec in args.rows.split(","):
            prog, _, n = spec.partition(":")
            if prog not in PROGRAMS:
                sys.exit(f"peers: unknown program '{prog}' (one of {', '.join(PROGRAMS)})")
            base = next((r for r in ROWS if r[0] == prog), (prog, 0, prog, None))
            size = int(float(n)) if n else base[1]
            rows.append((prog, size, base[2], f"{size:,}" if prog != "mandelbrot-while" else None))
    elif args.quick:
        labels = {r[0]: r[2] for r in ROWS}
        rows = [(p, s, labels[p], f"{s:,}" if p != "mandelbrot-while" else None)
                for p, sizes in QUICK_SIZES.items() for s in sizes]
    else:
        rows = ROWS

    axle, pio = build_c(args.no_build)
    helptext = bench_help(axle)
    fast_mode = "option" if "--fast-math" in helptext else None
    mods, vers, errs = load_peers(args.systems, args.hugepages)
    for pkg, why in failed.items():
        key = pkg.split("[")[0]
        if key in args.systems and key not in mods:
            errs[key] = f"did not install: {why}"
    consts = read_defines()
    log(f"peers: {cpu_name()}, CPUs {cpus}, {args.threads} threads, {args.runs} runs; "
        + "; ".join(f"{k} {v}" for k, v in vers.items()))

    load0 = os.getloadavg()
    results = []
    for row in rows:
        results.append(run_row(row, args, axle, pio, consts, mods, errs, fast_mode))

    if "numba" in mods:
        try:
            vers["numba"] += f", threading layer {mods['numba'].threading_layer()}"
        except Exception:   # noqa: BLE001 (no parallel function ran)
            pass
    load1 = os.getloadavg()
    out = {"machine": cpu_name(), "cpus": cpus, "threads": args.threads, "runs": args.runs,
           "load_average": {"start": load0, "end": load1}, "numpy_hugepages": args.hugepages,
           "versions": vers, "peer_errors": errs, "axle_fast_math": fast_mode is not None, "results": results}
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)

    finite = any("axle-finite" in r["medians"] for r in results)
    cols = [c for c in COLUMNS if c[0] in ("axle", "axle-fast", "c-std", "c-fast") or c[0] in args.systems
            or (c[0] == "axle-finite" and finite)]
    print(f"\nMedians of {args.runs} interleaved runs, ms ({args.threads} threads each; {cpu_name()}):\n")
    print(table(results, cols, ratios=False))
    print("\nRatios: axle fast, hand C (OpenMP), JAX and NumPy against axle (exact); hand C (-ffast-math),"
          "\nHalide and Numba against axle fast (time / that axle time: below 1 is faster than axle):\n")
    print(table(results, cols, ratios=True))
    if finite:
        fcols = [c for c in cols if c[0] in FINITE_RATIO_BASE]
        print("\nRatios against axle finite (no NaN or infinity assumed, as these peers assume): axle finite"
              "\nagainst axle fast, the others against axle finite:\n")
        print(table(results, fcols, ratios=True, bases=FINITE_RATIO_BASE))
    print(f"\nLoad average (1 min) at the start and the end: {load0[0]:.1f}, {load1[0]:.1f} on "
          f"{os.cpu_count()} CPUs (other work on the machine slows every column; the ratios suffer less)")
    print("Versions: " + "; ".join(f"{k} {v}" for k, v in vers.items()))
    if not any("axle-fast" in r["medians"] for r in results):
        print("axle fast: empty, this axle's `axle bench` has no fast-math configuration")
    for k, v in errs.items():
        print(f"{k}: {v} (its column is empty)")
    print("\nChecks (each system against the reference, with the program's tolerance):")
    for r in results:
        marks = [f"axle-peer-io {r['axle_result_check']}"]
        marks += [f"{k} {v}" for k, v in r["checks"].items() if not k.startswith(("axle", "c-"))]
        bad = [f"{k} {v}" for k, v in r["checks"].items() if k.startswith(("axle", "c-")) and not v.startswith("ok")]
        notes = [f"{k} {v}" for k, v in r["notes"].items() if k not in errs]
        print(f"  {r['program']} {r['size']}: " + "; ".join(marks + bad + notes))
    print(f"\n(written to {os.path.relpath(args.json, ROOT) if args.json.startswith(ROOT) else args.json})")
    wrong = any(v.startswith("FAIL") for r in results for v in r["checks"].values()) or \
        any(r["axle_result_check"].startswith("FAIL") for r in results)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
