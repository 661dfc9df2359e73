#!/bin/sh
# Installs what building and testing axle needs on Debian or Ubuntu, and
# nothing that is already there.  Uses sudo when not root.
set -e
need=""
command -v cc >/dev/null 2>&1 || need="$need gcc libc6-dev"
command -v make >/dev/null 2>&1 || need="$need make"
command -v cmake >/dev/null 2>&1 || need="$need cmake"
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
