#!/bin/sh
# The Python binding's pytest suite under AddressSanitizer (with
# LeakSanitizer) and UndefinedBehaviorSanitizer:
#
#     sh python/tools/test-san.sh BUILD_DIR [pytest arguments...]
#
# builds libaxle (CMake, AX_SANITIZE=ON) and the extension with
# -fsanitize=address,undefined into BUILD_DIR (`make python BUILD=BUILD_DIR`,
# the flags passed through setup.py's AXLE_CMAKE_ARGS, AXLE_EXT_CFLAGS and
# AXLE_EXT_LDFLAGS), then runs python/tests against it (default arguments:
# -q).  Any ASan, LSan or UBSan report fails the run.
#
# Python itself is not rebuilt: the sanitizer runtime is preloaded
# (LD_PRELOAD, the library `$CC -print-file-name=libasan.so` names; GCC's),
# and PYTHONMALLOC=malloc sends Python's allocations to it, so that ASan
# sees the objects the extension makes and frees.
#
# Children inherit the preload.  Python children (tests run some) need it;
# the C compiler that axle runs for its kernels must not have it (GCC leaks
# on purpose and LSan would fail every compile), so AXLE_CC is a wrapper
# that drops it.  The kernels are cached in BUILD_DIR/cache (the wrapper's
# name is part of their cache key, so they would not be shared anyway).
# The install test (pip building the package afresh, without sanitizers)
# is left out, and so are test_memory's checks of the resident size (ASan
# holds freed memory in quarantine): the plain `make test-python` runs
# them.  LeakSanitizer's check runs at the end of the session, before the
# interpreter finalises (lsan_check.py: CPython leaves objects unfreed at
# exit on purpose), not at exit (so the Python children of tests have
# none), with lsan-python.supp for what CPython's tracemalloc and the
# OpenCL platform keep (never axle's allocations).  It finds what was
# lost: a Python object the extension never released, memory it never
# freed; an ax_array or program it never released is still its context's
# (a context owns them), which the tests' counts of references and
# resident size look at instead.
#
# A report ends the process at once: pytest captures only sys.stdout and
# sys.stderr (--capture=sys), so that the sanitizers' reports, written to
# the process's stderr, are not lost with its capture files, and the
# sanitizers abort (abort_on_error), so that pytest's faulthandler prints
# the Python stack of the test that was running.  intercept_tls_get_addr=0, as
# in the Makefile's SAN_ENV: GCC 12's runtime can misread a dynamic
# thread-local block's bounds and crash LeakSanitizer's tracer, which then
# aborts the session's leak check without having found a leak.
#
# A leak's stack stops where it enters CPython's own code (built without
# frame pointers); ASAN_OPTIONS=fast_unwind_on_malloc=0 (added to this
# script's options, as LSAN_OPTIONS and UBSAN_OPTIONS are) gives the whole
# stack, at a large cost in time: run one test so.
#
# Environment: CC (the compiler of everything, default cc; GCC, for
# libasan.so), MAKE (default make), DEPS and JOBS (as for `make python`).
#
# SPDX-License-Identifier: BSD-3-Clause
set -eu

if [ $# -lt 1 ] || [ -z "$1" ]; then
    echo "usage: sh python/tools/test-san.sh BUILD_DIR [pytest arguments...]" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
mkdir -p "$1"
build=$(cd "$1" && pwd)
shift
[ $# -gt 0 ] || set -- -q

CC=${CC:-cc}
export CC
asan_rt=$("$CC" -print-file-name=libasan.so)
case $asan_rt in
    /*) [ -e "$asan_rt" ] || asan_rt= ;;
    *) asan_rt= ;;
esac
if [ -z "$asan_rt" ]; then
    echo "test-san: $CC has no libasan.so (-print-file-name=libasan.so); GCC with libasan is needed" >&2
    exit 1
fi

# The build: the same as `make python`, with the sanitizers (and debug
# information, for readable reports).
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
AXLE_CMAKE_ARGS="-DAX_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo" \
AXLE_EXT_CFLAGS="$san -g" \
AXLE_EXT_LDFLAGS="-fsanitize=address,undefined" \
    "${MAKE:-make}" -C "$repo" --no-print-directory python BUILD="$build"

# The kernels' compiler, without the preloaded runtime.
real_cc=${AXLE_CC:-cc}
cat > "$build/cc-nosan" <<EOF
#!/bin/sh
# (written by python/tools/test-san.sh) the kernels' C compiler, run
# without the sanitizer runtime that the Python process preloads
unset LD_PRELOAD
exec "$real_cc" "\$@"
EOF
chmod +x "$build/cc-nosan"
mkdir -p "$build/cache"

# The interpreter itself, not a wrapper script (pyenv's shims are bash
# scripts, which would run under the preloaded runtime).
python=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')

cd "$repo"
echo "test-san: $python -m pytest $* python/tests (ASan, LSan, UBSan: $asan_rt)"
env LD_PRELOAD="$asan_rt" \
    PYTHONMALLOC=malloc \
    ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:abort_on_error=1:intercept_tls_get_addr=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
    LSAN_OPTIONS="suppressions=$here/lsan-python.supp:print_suppressions=0:leak_check_at_exit=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:abort_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
    AXLE_CC="$build/cc-nosan" \
    XDG_CACHE_HOME="$build/cache" \
    AXLE_PYTEST_INSTALL=0 AXLE_PYTEST_RSS=0 \
    AXLE_CMAKE_BUILD_DIR="${PYLIB:-$build/pylib}" \
    PYTHONPATH="$build/python:$here" \
    PYTHONUNBUFFERED=1 \
    "$python" -m pytest -p no:cacheprovider -p lsan_check --capture=sys "$@" python/tests
