#!/bin/sh
# The layers of libaxle call only downward (docs/ARCHITECTURE.md):
#
#   1 core       src/core          IR, types, arenas, the context record, errors
#   2 runtime    src/runtime       host arrays, options, thread pool, the C compiler
#                                  and its disk cache, the host walk, scalar evaluation
#   3 frontend   src/frontend      builders, sharing recovery, source keys
#   4 opt        src/opt           the optimiser's passes and the planner
#   5 cgen       src/backend/cgen  the code generator the compiling backends share
#   6 backends   src/backend/interp | src/backend/cpu | src/backend/gpu (with cuda,
#                opencl): siblings, which do not call each other
#   7 driver     src/driver        the pipeline, the programs, the context's life
#   8 mpi        src/mpi           libaxle_mpi, over the driver
#
#   sh scripts/check-layers.sh BUILD_DIR
#
# reads the compiled objects' defined and undefined symbols (nm) and fails
# when an object uses a symbol defined by an object of a higher layer, or
# of a sibling backend, or when objects of different folders call each
# other in a circle; each offence is named (the two files and a symbol).
# SPDX-License-Identifier: BSD-3-Clause
set -eu
B=${1:-build}
cd "$(dirname "$0")/.."
# The objects of today's sources (a build directory may hold objects of
# files since removed): libaxle's, and libaxle_mpi's where MPI was found.
objs=""
for c in $(find src -name '*.c' | sort); do
    case $c in
        src/mpi/*) o="$B/CMakeFiles/axle_mpi_objects.dir/$c.o"; [ -d "$B/CMakeFiles/axle_mpi_objects.dir" ] || continue ;;
        *) o="$B/CMakeFiles/axle_objects.dir/$c.o" ;;
    esac
    if [ ! -f "$o" ]; then
        echo "check-layers: $o is missing (build first: make build)" >&2
        exit 2
    fi
    objs="$objs $o"
done
# The sources' #include lines first: a file includes no header of a
# higher layer or of a sibling backend (a header declares what its own
# layer defines).  Each resolved as the compiler does: beside the file,
# then under src/, then src/core/.
inc_bad=$(for c in $(find src -name '*.[ch]' | sort); do
    d=$(dirname "$c")
    sed -n 's/^#include "\(.*\)".*/\1/p' "$c" | while read -r h; do
        for r in "$d/$h" "src/$h" "src/core/$h"; do
            if [ -f "$r" ]; then echo "${c#src/} $(echo "$r" | sed 's|^src/||; s|/\./|/|g')"; break; fi
        done
    done
done | awk '
function layer(f) {
    if (f ~ /^core\//) return 1
    if (f ~ /^runtime\//) return 2
    if (f ~ /^frontend\//) return 3
    if (f ~ /^opt\//) return 4
    if (f ~ /^backend\/cgen\//) return 5
    if (f ~ /^backend\//) return 6
    if (f ~ /^driver\//) return 7
    if (f ~ /^mpi\//) return 8
    return 0
}
function group(f) {
    if (f ~ /^backend\/interp\//) return "interp"
    if (f ~ /^backend\/cpu\//) return "cpu"
    if (f ~ /^backend\/(gpu|cuda|opencl)\//) return "gpu"
    return ""
}
{
    if (layer($2) > layer($1) || (layer($1) == 6 && layer($2) == 6 && group($1) != group($2)))
        printf "check-layers: %s includes %s, a header of a higher layer or of another backend\n", $1, $2
}')
if [ -n "$inc_bad" ]; then
    echo "$inc_bad"
    exit 1
fi
NM=${NM:-nm}
for o in $objs; do
    # the source path relative to src/, e.g. backend/cpu/cpu.c
    f=$(echo "$o" | sed 's|.*_objects.dir/src/||; s|\.o$||')
    $NM -g "$o" | awk -v f="$f" '
        $1 == "U" { print "U", f, $2; next }
        NF == 3 && $2 ~ /^[TDBRCGSV]$/ { print "D", f, $3 }'
done | awk '
function layer(f) {
    if (f ~ /^core\//) return 1
    if (f ~ /^runtime\//) return 2
    if (f ~ /^frontend\//) return 3
    if (f ~ /^opt\//) return 4
    if (f ~ /^backend\/cgen\//) return 5
    if (f ~ /^backend\//) return 6
    if (f ~ /^driver\//) return 7
    if (f ~ /^mpi\//) return 8
    return 0
}
function lname(n) { return n == 1 ? "core" : n == 2 ? "runtime" : n == 3 ? "frontend" : n == 4 ? "opt" : n == 5 ? "cgen" : n == 6 ? "backends" : n == 7 ? "driver" : n == 8 ? "mpi" : "unknown" }
# the sibling group of a backend file: interp, cpu, or gpu (cuda and opencl are the GPU runtime)
function group(f) {
    if (f ~ /^backend\/interp\//) return "interp"
    if (f ~ /^backend\/cpu\//) return "cpu"
    if (f ~ /^backend\/(gpu|cuda|opencl)\//) return "gpu"
    return ""
}
function folder(f) { sub(/\/[^\/]*$/, "", f); return f }
$1 == "D" { def[$3] = $2; next }
$1 == "U" { nu++; uf[nu] = $2; us[nu] = $3 }
END {
    bad = 0
    for (i = 1; i <= nu; i++) {
        s = us[i]; f = uf[i]
        if (!(s in def)) continue
        g = def[s]
        if (g == f) continue
        lf = layer(f); lg = layer(g)
        if (lf == 0 || lg == 0) { printf "check-layers: %s or %s is in no layer (add its folder to the list)\n", f, g; bad = 1; continue }
        if (lg > lf) {
            printf "check-layers: %s (%s) uses %s, defined in %s (%s, a higher layer)\n", f, lname(lf), s, g, lname(lg)
            bad = 1
        } else if (lf == 6 && lg == 6 && group(f) != group(g)) {
            printf "check-layers: %s (backend %s) uses %s, defined in %s (backend %s): backends do not call each other\n", f, group(f), s, g, group(g)
            bad = 1
        }
        # (calls within one layer, between folders: checked for circles below)
        if (lf == lg && folder(f) != folder(g) && !(lf == 6 && group(f) != group(g))) {
            k = f SUBSEP g
            if (!(k in edge)) { edge[k] = s; ne++; ef[ne] = f; eg[ne] = g }
        }
    }
    # circles between the folders of one layer (a circle across layers
    # needs an upward call, reported above): an edge f -> g from which a
    # path leads back to f
    for (i = 1; i <= ne; i++) { adj[ef[i]] = adj[ef[i]] " " eg[i] }
    for (i = 1; i <= ne; i++) {
        f = ef[i]; g = eg[i]
        delete seen; n = 0; stack[++n] = g; seen[g] = 1; found = 0
        while (n > 0 && !found) {
            x = stack[n--]
            m = split(adj[x], nx, " ")
            for (j = 1; j <= m; j++) {
                y = nx[j]
                if (y == f) { found = 1; break }
                if (!(y in seen)) { seen[y] = 1; stack[++n] = y }
            }
        }
        if (found) {
            printf "check-layers: %s and %s call each other (a circle across the folders of one layer; %s uses %s)\n", f, g, f, edge[f SUBSEP g]
            bad = 1
        }
    }
    if (!bad) print "check-layers: every call goes down the layers (core < runtime < frontend < opt < cgen < backends < driver < mpi)"
    exit bad
}'
