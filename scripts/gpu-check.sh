#!/bin/sh
# The GPU check in one command, for a machine with an NVIDIA GPU and the
# CUDA toolkit (make gpu-check runs it):
#
#   sh scripts/gpu-check.sh [OUT]        (OUT: the logs' folder, default gpu-check)
#
# builds axle with the hand-written CUDA baselines, then runs, each step
# bounded in time so that the whole stays under ten minutes:
#
#   device       one program on CUDA, checked (is there a device at all?)
#   suite        every operation against the interpreter on CUDA (the
#                per-operation tests test_op_* and test_backend_common)
#   gpu          the GPU backend's own behaviour on CUDA: residency, reuse,
#                the memory limit (test_gpu)
#   programs     the benchmark programs, small and at their test sizes,
#                checked against plain C (test_bench_small, test_bench_programs)
#   random       random programs, CUDA against the interpreter (test_random)
#   memcheck, racecheck, synccheck
#                a small suite (maps, folds, scans, permutes, stencils)
#                under compute-sanitizer's three tools
#   bench        axle bench --backend cuda against the CUDA baselines
#                (cuBLAS, cuSPARSE, CUB, kernels) at the benchmark sizes
#
# and prints one table (step, result, seconds, log), with the benchmark's
# table after it.  Every log is in OUT.  Exit status: 0 if every step
# passed; 1 if one failed; 2 if this machine has no NVIDIA GPU or no CUDA
# toolkit (said in one line).  GPU_CHECK_FORCE=1 goes on without a GPU,
# to try the script itself (the steps then fail with "no CUDA device").
# SPDX-License-Identifier: BSD-3-Clause
set -u
cd "$(dirname "$0")/.."
OUT=${1:-gpu-check}
BUILD=${GPU_CHECK_BUILD:-build-gpu}
JOBS=$(nproc 2>/dev/null || echo 2)
# the per-operation tests, one binary per family of operations
OPS="test_op_map test_op_fold test_op_scan test_op_permute test_op_stencil test_op_filter test_op_control test_op_scalar test_op_faults"
PATH=$PATH:/usr/local/cuda/bin
export PATH

if ! nvidia-smi -L >/dev/null 2>&1 && [ "${GPU_CHECK_FORCE:-0}" != 1 ]; then
    echo "gpu-check: no NVIDIA GPU on this machine (nvidia-smi finds none): nothing to check"
    exit 2
fi
if ! command -v nvcc >/dev/null 2>&1; then
    echo "gpu-check: no CUDA toolkit (nvcc is not on PATH or in /usr/local/cuda/bin)"
    exit 2
fi
mkdir -p "$OUT"
: >"$OUT/summary.txt"
fails=0
t_start=$(date +%s)

# step NAME SECONDS COMMAND...: runs the command with its output in
# OUT/NAME.log, under a time limit, and adds a row to the summary.
step() {
    name=$1 limit=$2
    shift 2
    t0=$(date +%s)
    timeout -k 10 "$limit" "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    t=$(($(date +%s) - t0))
    case $rc in
        # a step that passed by skipping its CUDA runs did not check them
        0) if grep -q "no CUDA device" "$OUT/$name.log"; then res="skipped: no CUDA device"; fails=$((fails + 1)); else res=ok; fi ;;
        124|137) res="timed out ($limit s)"; fails=$((fails + 1)) ;;
        *) res="FAILED (exit $rc)"; fails=$((fails + 1)) ;;
    esac
    printf '%-10s  %-30s %6s  %s\n' "$name" "$res" "$t" "$OUT/$name.log" >>"$OUT/summary.txt"
    printf 'gpu-check: %-10s %s (%s s)\n' "$name" "$res" "$t"
}

nvidia-smi >"$OUT/nvidia-smi.log" 2>&1
step build 420 sh -c "cmake -S . -B '$BUILD' -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAXLE_MPI=OFF && \
    cmake --build '$BUILD' -j $JOBS --target axle_cli $OPS test_backend_common test_gpu test_bench_small test_bench_programs test_random"
if [ "$(sed -n 's/^build *ok.*/ok/p' "$OUT/summary.txt")" = ok ]; then
    B=$BUILD
    export AXLE_DEBUG=verify
    step device 60 "$B/axle" run dotp --backend cuda --size 1000000 --check
    step suite 240 env AXLE_TEST_BACKEND=cuda sh -c "for t in $OPS test_backend_common; do '$B'/\$t || exit 1; done"
    step gpu 60 env AXLE_TEST_BACKEND=cuda "$B/test_gpu"
    step programs 120 sh -c "'$B/test_bench_small' bench_programs_cuda && '$B/test_bench_programs' bench_programs_cuda"
    step random 90 env AXLE_RANDOM_ONLY=cuda AXLE_RANDOM_SEEDS=200 "$B/test_random"
    unset AXLE_DEBUG
    SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null)
    for tool in memcheck racecheck synccheck; do
        if [ -n "$SAN" ]; then
            # the small suite: one test of each skeleton family, at small sizes
            step "$tool" 90 env AXLE_TEST_BACKEND=cuda AXLE_TEST_SMALL=1 \
                sh -c "for t in 'test_op_map map_zip_with_all_shapes' 'test_op_fold folds_all_shapes segmented_folds' \
                    'test_op_scan scans_all_variants' 'test_op_permute permute_collisions' \
                    'test_op_stencil stencils_every_boundary' 'test_op_filter filter_all_shapes'; do
                  set -- \$t; b=\$1; shift
                  '$SAN' --tool $tool --error-exitcode 9 --target-processes all '$B'/\$b \"\$@\" || exit 1
                done"
        else
            printf '%-10s  %-30s %6s  %s\n' "$tool" "skipped: no compute-sanitizer" 0 - >>"$OUT/summary.txt"
        fi
    done
    step bench 240 "$B/axle" bench --backend cuda --runs 5 --max-time 20 --json-file "$OUT/bench.json"
fi

echo
gpu=$(nvidia-smi -L 2>/dev/null | head -n 1)
echo "gpu-check on ${gpu:-no GPU}, $(($(date +%s) - t_start)) s in all"
printf '%-10s  %-30s %6s  %s\n' step result seconds log
cat "$OUT/summary.txt"
if [ -s "$OUT/bench.log" ]; then
    echo
    sed -n '/^program/,$p' "$OUT/bench.log"
fi
[ "$fails" -eq 0 ]
