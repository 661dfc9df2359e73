# Turns the JSON lines of `axle bench PROGRAM --sizes ... --json` into a
# gnuplot data file: one line per size, the median run time in ms of each
# configuration ("?" where it could not run, e.g. out of memory).
#   awk -f bench/json2dat.awk out/dotp.json > out/dotp.dat
# SPDX-License-Identifier: BSD-3-Clause

function num(key) {
    if (match($0, "\"" key "\":[-+0-9.eE]+"))
        return substr($0, RSTART + length(key) + 3, RLENGTH - length(key) - 3)
    return "?"
}
function str(key) {
    if (match($0, "\"" key "\":\"[^\"]*\""))
        return substr($0, RSTART + length(key) + 4, RLENGTH - length(key) - 5)
    return ""
}
/^\{/ {
    size = num("size"); config = str("config")
    if (!(size in seen)) { seen[size] = 1; order[++nsizes] = size }
    ms[size, config] = num("run_ms")
}
END {
    n = split("fused nofusion nosharing baseline baseline-std baseline-fastmath", configs, " ")
    printf "# size"
    for (c = 1; c <= n; c++) printf " %s", configs[c]
    printf "\n"
    for (i = 1; i <= nsizes; i++) {
        s = order[i]
        printf "%s", s
        for (c = 1; c <= n; c++) printf " %s", ((s, configs[c]) in ms) ? ms[s, configs[c]] : "?"
        printf "\n"
    }
}
