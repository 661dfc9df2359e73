#!/bin/sh
# Installs what building and testing axle needs on Debian or Ubuntu, and
# nothing that is already there.  Uses sudo when not root.
set -e
need=""
command -v cc >/dev/null 2>&1 || need="$need gcc libc6-dev"
command -v make >/dev/null 2>&1 || need="$need make"
command -v cmake >/dev/null 2>&1 || need="$need cmake"
# `make test`: valgrind (the quick tests), clang with libFuzzer's runtime
# (the bounded fuzz run).  The runtime's package carries clang's major
# version on Debian 12 (libclang-rt-14-dev); newer releases also have an
# unversioned libclang-rt-dev.
command -v valgrind >/dev/null 2>&1 || need="$need valgrind"
if ! command -v clang >/dev/null 2>&1; then
  need="$need clang"
fi
if ! printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }\n' |
     clang -fsanitize=fuzzer -x c - -o /dev/null >/dev/null 2>&1; then
  v=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9][0-9]*\).*/\1/p' | head -n 1)
  if [ -z "$v" ] && command -v apt-cache >/dev/null 2>&1; then
    # clang itself is about to be installed: the default version's runtime
    v=$(apt-cache depends clang 2>/dev/null | sed -n 's/.*Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1)
  fi
  need="$need libclang-rt-${v:-14}-dev"
fi
# The Python binding's tests (`make test-python`): the python3 on PATH (or
# $PYTHON) with its C headers, setuptools, wheel, NumPy and pytest.  A
# Python that pip may install into (pyenv, a virtual environment) gets them
# from PyPI; Debian's own python3 (externally managed) from Debian.
PY=${PYTHON:-python3}
py_ok() {
  "$PY" -c 'import os, sysconfig, numpy, pytest, setuptools, wheel
assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' >/dev/null 2>&1
}
py_pip=no
if ! command -v "$PY" >/dev/null 2>&1; then
  need="$need python3 python3-dev python3-numpy python3-pytest python3-setuptools python3-wheel"
elif ! py_ok; then
  if "$PY" -c 'import os, sys, sysconfig
sys.exit(os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))' &&
     "$PY" -m pip --version >/dev/null 2>&1; then
    py_pip=yes
  else
    need="$need python3-dev python3-numpy python3-pytest python3-setuptools python3-wheel"
  fi
fi
for pkg in $AXLE_EXTRA_PACKAGES; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need="$need $pkg"
done
if [ -n "$need" ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "axle: please install:$need" >&2
    exit 1
  fi
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "axle: installing$need"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need
fi
if [ "$py_pip" = yes ]; then
  echo "axle: installing numpy, pytest, setuptools and wheel for $PY (pip)"
  PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install -q --disable-pip-version-check \
    "numpy>=1.22" pytest setuptools wheel
fi
