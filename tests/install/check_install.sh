#!/bin/sh
# Installs the build into a temporary prefix and uses it as a user would:
#  - the files (header, libraries and the soname links, command, axle.pc,
#    the CMake package) are there;
#  - example.c built with pkg-config, against the shared library and the
#    static one, runs and prints the expected line;
#  - the runtime-only library: a program saved by an application of
#    libaxle (rt_example.c) loads and runs in one linked against
#    libaxle_rt alone, where no C compiler can be found;
#  - the same with a CMake project (consumer/) that calls
#    find_package(axle VERSION EXACT): axle::axle (shared) and
#    axle::axle_static;
#  - a project that adds axle's source tree with add_subdirectory
#    (subproject/) gets the libraries and none of the tests, benchmarks or
#    the command (configured only: the targets are listed, not built).
# Usage: check_install.sh BUILD_DIR SOURCE_DIR VERSION CC [CMAKE]
# SPDX-License-Identifier: BSD-3-Clause
set -eu
build=$1 src=$2 version=$3 cc=$4 cmake=${5:-cmake}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/axle-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "check_install: $*" >&2; exit 1; }
# the kernels these runs compile go to a private cache
export XDG_CACHE_HOME="$tmp/cache"

"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install failed"; }
echo "== installed into $prefix:"
(cd "$prefix" && find . ! -type d | sort)

libdir=$(dirname "$(find "$prefix" -name axle.pc)")
libdir=${libdir%/pkgconfig}
major=${version%%.*}
for f in include/axle.h bin/axle; do
  [ -f "$prefix/$f" ] || fail "$f not installed"
done
for f in libaxle.a libaxle.so.$version pkgconfig/axle.pc cmake/axle/axleConfig.cmake \
         cmake/axle/axleConfigVersion.cmake cmake/axle/axleTargets.cmake; do
  [ -f "$libdir/$f" ] || fail "$libdir/$f not installed"
done
[ "$(readlink "$libdir/libaxle.so")" = "libaxle.so.$major" ] || fail "libaxle.so does not point to libaxle.so.$major"
[ "$(readlink "$libdir/libaxle.so.$major")" = "libaxle.so.$version" ] || fail "libaxle.so.$major does not point to libaxle.so.$version"
readelf -d "$libdir/libaxle.so.$version" | grep -q "SONAME.*\[libaxle\.so\.$major\]" || fail "soname is not libaxle.so.$major"

expect="axle $version (header $version): dotp = 70"
# run NAME [NEEDS_SHARED]: runs $tmp/NAME, checks its output and whether it
# needs libaxle.so
run() {
  out=$("$tmp/$1") || fail "$1 failed: $out"
  [ "$out" = "$expect" ] || fail "$1 printed '$out', not '$expect'"
  if readelf -d "$tmp/$1" | grep -q 'NEEDED.*libaxle'; then needs=yes; else needs=no; fi
  [ "$needs" = "$2" ] || fail "$1: needs libaxle.so: $needs, expected $2"
  echo "$1: $out"
}

echo "== pkg-config"
command -v pkg-config >/dev/null 2>&1 || fail "pkg-config is not installed (make deps installs it)"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
[ "$(pkg-config --modversion axle)" = "$version" ] || fail "pkg-config --modversion axle: $(pkg-config --modversion axle)"
# shared: the usual line
"$cc" -o "$tmp/pc_shared" "$src/tests/install/example.c" $(pkg-config --cflags --libs axle)
LD_LIBRARY_PATH="$libdir" run pc_shared yes
# static: the archive named, then the libraries it needs (Libs.private)
private=""
for w in $(pkg-config --static --libs-only-l axle); do
  [ "$w" = -laxle ] || private="$private $w"
done
"$cc" -o "$tmp/pc_static" "$src/tests/install/example.c" $(pkg-config --cflags axle) \
  "$(pkg-config --variable=libdir axle)/libaxle.a" $private
run pc_static no

echo "== the runtime-only library"
[ -f "$libdir/libaxle_rt.so.$version" ] || fail "$libdir/libaxle_rt.so.$version not installed"
[ "$(readlink "$libdir/libaxle_rt.so")" = "libaxle_rt.so.$major" ] || fail "libaxle_rt.so does not point to libaxle_rt.so.$major"
# a program saved by an application of libaxle, loaded and run by one of
# libaxle_rt alone where no C compiler can be found
"$cc" -DRT_SAVE -o "$tmp/rt_save" "$src/tests/install/rt_example.c" $(pkg-config --cflags --libs axle)
"$cc" -o "$tmp/rt_load" "$src/tests/install/rt_example.c" $(pkg-config --cflags axle) -L"$libdir" -laxle_rt
LD_LIBRARY_PATH="$libdir" "$tmp/rt_save" "$tmp/dotp.axle" || fail "rt_save failed"
out=$(PATH=/nonexistent AXLE_CC=/nonexistent/cc LD_LIBRARY_PATH="$libdir" "$tmp/rt_load" "$tmp/dotp.axle") ||
  fail "rt_load failed: $out"
[ "$out" = "$expect" ] || fail "rt_load printed '$out', not '$expect'"
readelf -d "$tmp/rt_load" | grep -q 'NEEDED.*libaxle_rt\.so' || fail "rt_load does not need libaxle_rt.so"
if readelf -d "$tmp/rt_load" | grep -q 'NEEDED.*libaxle\.so'; then fail "rt_load needs libaxle.so"; fi
echo "rt_load: $out"

echo "== find_package(axle $version EXACT)"
"$cmake" -S "$src/tests/install/consumer" -B "$tmp/consumer" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_PREFIX_PATH="$prefix" -DAXLE_EXPECT_VERSION="$version" >"$tmp/consumer.log" 2>&1 ||
  { cat "$tmp/consumer.log"; fail "configuring the find_package project failed"; }
"$cmake" --build "$tmp/consumer" >>"$tmp/consumer.log" 2>&1 ||
  { cat "$tmp/consumer.log"; fail "building the find_package project failed"; }
cp "$tmp/consumer/example_shared" "$tmp/cmake_shared"
cp "$tmp/consumer/example_static" "$tmp/cmake_static"
# (the shared one finds libaxle.so.0 through the RPATH CMake gave it)
run cmake_shared yes
ldd "$tmp/cmake_shared" | grep -q "$libdir/libaxle.so.$major" || fail "cmake_shared does not load the installed library"
run cmake_static no

echo "== add_subdirectory(axle)"
"$cmake" -S "$src/tests/install/subproject" -B "$tmp/sub" -G "Unix Makefiles" -DCMAKE_C_COMPILER="$cc" \
  -DAXLE_SOURCE_DIR="$src" >"$tmp/sub.log" 2>&1 || { cat "$tmp/sub.log"; fail "configuring the subproject failed"; }
targets=$("$cmake" --build "$tmp/sub" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p')
for t in axle_shared axle_static example; do
  echo "$targets" | grep -qx "$t" || fail "add_subdirectory: no target $t"
done
for t in axle_cli axle_examples axle_internal test_sharing replay_api axle_baselines_std; do
  if echo "$targets" | grep -qx "$t"; then fail "add_subdirectory: target $t is defined"; fi
done
[ ! -f "$tmp/sub/axle/CTestTestfile.cmake" ] || ! grep -q add_test "$tmp/sub/axle/CTestTestfile.cmake" ||
  fail "add_subdirectory: tests are defined"
echo "add_subdirectory: $(echo $targets | tr ' ' '\n' | grep -c .) targets, the libraries and no tests"
echo "check_install: ok"
