#!/usr/bin/env python3
"""The scaling study of libaxle_mpi by simulation (README, "Several
processes: MPI").

On one machine with more ranks than cores, wall times say little about a
cluster.  So this measures, per Table-2 program at its benchmark size,

  - T1: the program's run time on this machine as one process (the "node":
    `axle run P --size S`, this machine's cores);
  - for each rank count P, with `mpirun -np P axle run P --mpi --check`:
    every rank's bytes and messages (the executor's own counts,
    ax_mpi_stats) and that the result checks;

and compares the busiest rank's bytes with the minimum the algorithm
needs (formulas below, per program), then projects the time on a cluster
of P such nodes:

    T(P) = T1mpi / P  +  max over ranks of [ alpha * (messages + collectives * ceil(log2 P))
                                          + beta * max(bytes sent, bytes received) ]

with T1mpi the program's time under the distributed executor with one
rank (`mpirun -np 1 axle run P --mpi`: T1 plus the executor's own costs),
alpha the latency of one message and beta the time per byte of an
InfiniBand link (defaults: EDR, 100 Gb/s: alpha = 1.5 us, beta = 1 / 12.5
GB/s).  T1 / P assumes the work splits evenly (the executor gives each
rank an even block of every distributed iteration) and that a node runs
its share as fast as this machine runs the whole program's 1/P.  The
table in the README also gives T1 (the plain axle run).

Usage: python3 bench/mpi/scaling.py [--axle build/axle] [--ranks 2,4,8]
           [--programs dotp,...] [--runs 5] [--alpha 1.5e-6] [--beta 8e-11] [--json FILE]
SPDX-License-Identifier: BSD-3-Clause
"""
import argparse
import json
import math
import os
import subprocess
import sys

# name -> (benchmark size, the minimum bytes the busiest rank must receive
# for P ranks, and how that minimum is found)
def w_of(n):
    return int(round(math.sqrt(n)))


def nbrs(p):
    """The neighbours of the busiest rank's block: none alone, one for two
    ranks (each holds an end), two from three ranks on (a middle block)."""
    return min(p - 1, 2)

MIN = {
    "dotp": (10_000_000, lambda n, p: 4 if p > 1 else 0,
             "its partial sum (4 B) combined with the others'"),
    "blackscholes": (4_000_000, lambda n, p: 0, "none: element-wise"),
    "nbody": (4096, lambda n, p: (p - 1) / p * n * 16,
              "every other rank's bodies (position and mass, 16 B each)"),
    "mandelbrot": (1 << 20, lambda n, p: 0, "none: element-wise"),
    # the neighbours (nbrs) x a row of W elements x the halo of each stencil: velocity
    # diffusion 20 sweeps of (f32,f32), two projections (divergence 8 B, 20
    # sweeps of f32, gradient 4 B), density diffusion 20 sweeps of f32;
    # the advections' reads beyond the block are data dependent (counted 0)
    "fluid": (1 << 20, lambda n, p: nbrs(p) * w_of(n) * (20 * 8 + 2 * (8 + 20 * 4 + 4) + 20 * 4),
              "the stencils' halo rows (per neighbour 424 B a column); advection 0"),
    # 5x1 blur (2 rows of f32), Sobel (1 row of f32), suppression (1 row of (f32, i32))
    "canny": (1 << 22, lambda n, p: nbrs(p) * w_of(n) * (2 * 4 + 4 + 8),
              "the stencils' halo rows (per neighbour 20 B a column)"),
    # 32 one-bit passes, each moving the elements whose place is on another rank
    "radixsort": (1 << 20, lambda n, p: 32 * (p - 1) / p * (n / p) * 4,
                  "per pass, the keys whose place is on another rank (4 B each)"),
    # 32 random columns per row: the x entries of other ranks' blocks a block of rows reads
    "smvm": (131072, lambda n, p: (n - n / p) * (1 - math.exp(-32 / p)) * 4,
             "the x entries of other blocks that a block of rows reads (32 random columns a row)"),
}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    line = [l for l in r.stdout.splitlines() if l.startswith("{")]
    if not line:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return json.loads(line[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--axle", default="build/axle")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--ranks", default="2,4,8")
    ap.add_argument("--programs", default=",".join(MIN))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--alpha", type=float, default=1.5e-6)
    ap.add_argument("--beta", type=float, default=1 / 12.5e9)
    ap.add_argument("--json")
    a = ap.parse_args()
    ranks = [int(x) for x in a.ranks.split(",")]
    rows = []
    for prog in a.programs.split(","):
        size, minf, how = MIN[prog]
        t1 = run([a.axle, "run", prog, "--size", str(size), "--runs", str(a.runs), "--json"])["run_ms"]
        t1m = run([a.mpirun, "-np", "1", a.axle, "run", prog, "--mpi", "--size", str(size), "--runs", str(a.runs),
                   "--json"])["run_ms"]
        for p in ranks:
            env = dict(os.environ, AXLE_MPI_TIMEOUT="600")
            r = subprocess.run([a.mpirun, "-np", str(p), a.axle, "run", prog, "--mpi", "--check", "--size", str(size),
                                "--runs", "1", "--json"], capture_output=True, text=True, env=env)
            line = [l for l in r.stdout.splitlines() if l.startswith("{")]
            if not line:
                sys.exit("failed: %s with %d ranks\n%s%s" % (prog, p, r.stdout, r.stderr))
            j = json.loads(line[-1])
            sent, recv, msgs, coll = j["bytes_sent"], j["bytes_recv"], j["msgs_sent"], j["collectives"]
            busiest = max(range(p), key=lambda q: max(sent[q], recv[q]))
            lg = math.ceil(math.log2(p)) if p > 1 else 0
            comm = max(a.alpha * (msgs[q] + coll[q] * lg) + a.beta * max(sent[q], recv[q]) for q in range(p))
            tp = t1m / 1e3 / p + comm
            row = {
                "program": prog, "size": size, "ranks": p, "check": j["check"], "t1_ms": t1, "t1mpi_ms": t1m,
                "max_sent": max(sent), "max_recv": max(recv), "min_bytes": minf(size, p), "min_how": how,
                "msgs_busiest": msgs[busiest], "collectives": max(coll), "comm_ms": comm * 1e3,
                "projected_ms": tp * 1e3, "speedup": t1 / 1e3 / tp if tp > 0 else 0,
            }
            rows.append(row)
            print("%-12s P=%d %-4s max sent %12d B, max recv %12d B, minimum %12.0f B, busiest rank %5d msgs + %4d "
                  "collectives; T1 %8.2f ms, T1mpi %8.2f ms -> projected %8.3f ms (comm %7.3f ms), speedup %5.2f"
                  % (prog, p, j["check"], max(sent), max(recv), minf(size, p), msgs[busiest], max(coll), t1, t1m,
                     tp * 1e3, comm * 1e3, row["speedup"]), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"alpha": a.alpha, "beta": a.beta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
