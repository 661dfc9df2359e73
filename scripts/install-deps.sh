#!/bin/sh
# What building, testing, the demo and the documentation need on Debian or
# Ubuntu, and installing what is missing.
#
#   install-deps.sh [--check] [PURPOSE...]
#
# PURPOSE is any of build, test, python, demo, docs (default: build test
# demo; test includes python, CBC, the planner's optional ILP solver, and
# OpenBLAS, the fast modes' optional matrix products).
# With --check nothing is installed: the missing packages are listed and
# the exit status is 1 if there are any.  The check is quick (command -v,
# dpkg -s and one small compile) and never runs apt-get.  Without --check,
# the missing packages are installed with apt-get (with sudo when not root).
# AXLE_EXTRA_PACKAGES names more Debian packages to check or install.
set -e
check=no
if [ "${1:-}" = --check ]; then check=yes; shift; fi
[ $# -gt 0 ] || set -- build test demo

need=""
lean=""
want_python=no
add() { case " $need " in *" $1 "*) ;; *) need="$need $1" ;; esac; }
# installed without the packages it recommends
add_lean() { add "$1"; lean="$lean $1"; }
have_pkg() { dpkg -s "$1" >/dev/null 2>&1; }

for purpose in "$@"; do
  case $purpose in
    build|test|python|demo|docs) ;;
    *) echo "install-deps.sh: unknown purpose '$purpose' (build, test, python, demo, docs)" >&2; exit 2 ;;
  esac
  # everything but the documentation builds axle
  if [ "$purpose" != docs ]; then
    command -v cc >/dev/null 2>&1 || { add gcc; add libc6-dev; }
    command -v make >/dev/null 2>&1 || add make
    command -v cmake >/dev/null 2>&1 || add cmake
  fi
  case $purpose in
    test)
      # valgrind (the quick tests), clang (the Clang build and the fuzz
      # run, which needs libFuzzer's runtime), pkg-config (the test of an
      # installed copy), MPICH, and what the Python binding's tests need
      # (below)
      command -v valgrind >/dev/null 2>&1 || add valgrind
      command -v pkg-config >/dev/null 2>&1 || add pkg-config
      command -v clang >/dev/null 2>&1 || add clang
      # MPI (libaxle_mpi and its tests under mpirun): MPICH
      command -v mpicc >/dev/null 2>&1 || { add mpich; add libmpich-dev; }
      command -v mpirun >/dev/null 2>&1 || add mpich
      # The runtime's package carries clang's major version on Debian 12
      # (libclang-rt-14-dev); newer releases also have an unversioned
      # libclang-rt-dev.
      if ! printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }\n' |
           clang -fsanitize=fuzzer -x c - -o /dev/null >/dev/null 2>&1; then
        v=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9][0-9]*\).*/\1/p' | head -n 1)
        if [ -z "$v" ] && [ $check = no ] && command -v apt-cache >/dev/null 2>&1; then
          # clang itself is about to be installed: the default version's runtime
          v=$(apt-cache depends clang 2>/dev/null | sed -n 's/.*Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1)
        fi
        add "libclang-rt-${v:-14}-dev"
      fi
      # CBC, the planner's ILP solver (COIN-OR, EPL-2.0): optional at build
      # and run time (libaxle loads it with dlopen; without it the planner
      # is greedy and the tests that need it say so and skip), installed
      # so that they run
      have_pkg coinor-libcbc-dev || add coinor-libcbc-dev
      # OpenBLAS (BSD): optional at build and run time (libaxle loads it
      # with dlopen for matrix products in the fast modes; without it the
      # generated kernel runs and the tests of the BLAS path say so and
      # skip), installed so that they run
      have_pkg libopenblas0-pthread || add libopenblas0-pthread
      # the GPU backends' tests: OpenCL on the CPU (PoCL and the ICD
      # loader) and Oclgrind's race checks; Doxygen for the documentation
      # test (each test is left out, with a line saying so, when its part
      # is missing: installed here so that they run)
      have_pkg pocl-opencl-icd || add pocl-opencl-icd
      have_pkg ocl-icd-opencl-dev || add ocl-icd-opencl-dev
      command -v oclgrind >/dev/null 2>&1 || add oclgrind
      command -v doxygen >/dev/null 2>&1 || add doxygen
      want_python=yes
      ;;
    python)
      want_python=yes
      ;;
    demo)
      # gnuplot draws the demo's plots (the demo goes on without it);
      # without its recommends (ImageMagick, Ghostscript, ...: 44 packages)
      command -v gnuplot >/dev/null 2>&1 || add_lean gnuplot-nox
      ;;
    docs)
      command -v doxygen >/dev/null 2>&1 || add doxygen
      ;;
  esac
done
# The Python binding (`make python`, `make test-python`): the python3 on
# PATH (or $PYTHON) with its C headers, setuptools, wheel, NumPy and
# pytest.  A Python that pip may install into (pyenv, a virtual
# environment) gets them from PyPI; Debian's own python3 (externally
# managed) from Debian.
py_pip=no
if [ "$want_python" = yes ]; then
  PY=${PYTHON:-python3}
  py_ok() {
    "$PY" -c 'import os, sysconfig, numpy, pytest, setuptools, wheel
assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' >/dev/null 2>&1
  }
  if ! command -v "$PY" >/dev/null 2>&1; then
    for p in python3 python3-dev python3-numpy python3-pytest python3-setuptools python3-wheel; do add $p; done
  elif ! py_ok; then
    if "$PY" -c 'import os, sys, sysconfig
sys.exit(os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))' &&
       "$PY" -m pip --version >/dev/null 2>&1; then
      py_pip=yes
    else
      for p in python3-dev python3-numpy python3-pytest python3-setuptools python3-wheel; do add $p; done
    fi
  fi
fi
for pkg in $AXLE_EXTRA_PACKAGES; do
  have_pkg "$pkg" || add "$pkg"
done

[ -z "$need" ] && [ $py_pip = no ] && exit 0
if [ $check = yes ]; then
  [ -z "$need" ] || echo "axle: missing for $*:$need"
  [ $py_pip = no ] || echo "axle: missing for $*: numpy, pytest, setuptools or wheel for $PY (pip)"
  exit 1
fi
if [ -n "$need" ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "axle: please install:$need" >&2
    exit 1
  fi
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "axle: installing$need"
  $SUDO apt-get update -qq
  full=""
  for p in $need; do case " $lean " in *" $p "*) ;; *) full="$full $p" ;; esac; done
  if [ -n "$full" ]; then DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $full; fi
  if [ -n "$lean" ]; then DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $lean; fi
fi
if [ $py_pip = yes ]; then
  echo "axle: installing numpy, pytest, setuptools and wheel for $PY (pip)"
  PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install -q --disable-pip-version-check \
    "numpy>=1.22" pytest setuptools wheel
fi
