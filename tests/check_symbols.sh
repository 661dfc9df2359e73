#!/bin/sh
# Symbol hygiene: a program that links axle must see the API and nothing
# else.  Fails if
#  - the shared library exports a defined symbol whose name is not ax_* or
#    AX_* (nm -D), or the static library defines a global symbol that is
#    not (nm -g: the internal functions must be local there);
#  - a function the header declares is missing from either library.
# Usage: check_symbols.sh STATIC_LIB SHARED_LIB HEADER CC [CPPFLAGS]
# (either library may be "-" when it is not built; CPPFLAGS: what the
# header's own includes need, as libaxle_mpi's mpi.h)
# SPDX-License-Identifier: BSD-3-Clause
set -eu
static=$1 shared=$2 header=$3 cc=$4 cppflags=${5:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/axle-nm.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
rc=0

# The functions the header declares (comments and macros gone).
# (function pointer types, "(*ax_fn1)(", are not functions)
"$cc" $cppflags -E -P -x c "$header" | sed 's/(\*[A-Za-z0-9_]*)//g' |
  grep -o '\(^\|[^A-Za-z0-9_]\)ax_[A-Za-z0-9_]*(' | sed 's/^[^a]//; s/($//' | sort -u >"$tmp/api"
[ -s "$tmp/api" ] || { echo "check_symbols: no declarations found in $header"; exit 1; }

check() {   # check WHAT FILE-OF-NAMES
  grep -v '^ax_\|^AX_' "$2" >"$tmp/bad" || true
  if [ -s "$tmp/bad" ]; then
    echo "$1: $(wc -l <"$tmp/bad") global symbols outside ax_/AX_:"
    sed 's/^/  /' "$tmp/bad" | head -n 50
    rc=1
  fi
  comm -23 "$tmp/api" "$2" >"$tmp/missing"
  if [ -s "$tmp/missing" ]; then
    echo "$1: $(wc -l <"$tmp/missing") functions of the header not defined:"
    sed 's/^/  /' "$tmp/missing" | head -n 50
    rc=1
  fi
  echo "$1: $(wc -l <"$2") global symbols, $(grep -c . "$tmp/api") functions declared"
}

if [ "$static" != - ]; then
  nm -g --defined-only "$static" | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/static"
  check "$static" "$tmp/static"
fi
if [ "$shared" != - ]; then
  nm -D --defined-only "$shared" | awk 'NF == 3 { print $3 }' | sed 's/@.*//' | sort -u >"$tmp/shared"
  check "$shared" "$tmp/shared"
fi
exit $rc
