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
for pkg in $AXLE_EXTRA_PACKAGES; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need="$need $pkg"
done
[ -z "$need" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "axle: please install:$need" >&2
  exit 1
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "axle: installing$need"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need
