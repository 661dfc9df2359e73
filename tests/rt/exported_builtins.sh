#!/bin/sh
# Every built-in program exported as C (tests/rt/rt_builtins.c), compiled
# into an application by GCC and by Clang (those found) with warnings as
# errors, linked against libaxle_rt alone, and run where no C compiler can
# be found: its results, and those of the saved program, must be the
# JIT's, bit for bit; built by another compiler than the JIT's (cc), the
# exported program's floats close (tests/rt/rt_builtin_app.c).
# Usage: exported_builtins.sh RT_BUILTINS BUILD_DIR SOURCE_DIR CC [APP_FLAGS]
# SPDX-License-Identifier: BSD-3-Clause
set -u
gen=$1 build=$2 src=$3 cc=$4 flags=${5:-}
d="$build/exported_builtins"
rm -rf "$d" && mkdir -p "$d" || exit 1
"$gen" "$d" || exit 1
compilers=""
for c in gcc clang; do command -v "$c" >/dev/null 2>&1 && compilers="$compilers $c"; done
[ -n "$compilers" ] || compilers=$cc
# the JIT's compiler: cc, unless AXLE_CC says otherwise
jit=$(readlink -f "$(command -v "${AXLE_CC:-cc}")" 2>/dev/null)
fail=0 runs=0
for n in $(cat "$d/list"); do
  for c in $compilers; do
    app="$d/$n-$c"
    # shellcheck disable=SC2086 # flags: words
    if ! "$c" -O2 -march=native -fopenmp-simd -Wall -Wextra -Werror $flags -I "$src/include" -I "$d" \
         -DPROG="$n" -include "$d/$n.h" -o "$app" "$src/tests/rt/rt_builtin_app.c" "$d/$n.c" \
         -L "$build" -laxle_rt -Wl,-rpath,"$build" -lm; then
      echo "exported_builtins: $n: $c failed"; fail=1; continue
    fi
    how=close
    [ "$(readlink -f "$(command -v "$c")")" = "$jit" ] && how=
    # shellcheck disable=SC2086 # how: a word or none
    if ! PATH=/nonexistent AXLE_CC=/nonexistent/cc "$app" "$d/$n.ref" "$d/$n.axle" $how >/dev/null; then
      echo "exported_builtins: $n built by $c: wrong${how:+ (compared as close)}"; fail=1
    fi
    runs=$((runs + 1))
  done
done
echo "exported_builtins: $runs applications (compilers:$compilers), $( [ $fail = 0 ] && echo all right || echo FAILED)"
[ $fail = 0 ] && rm -rf "$d"
exit $fail
