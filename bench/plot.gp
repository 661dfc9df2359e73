# Run time against size for one program, fused, unfused, unshared and the
# hand-written baselines: the dot product and Black-Scholes plots of the
# Accelerate paper (McDonell et al., ICFP 2013, Figures 5 and 6).
#   gnuplot -e "prog='dotp'; data='out/dotp.dat'; png='out/dotp.png'" bench/plot.gp
# data: the columns of bench/json2dat.awk (size fused nofusion nosharing
# baseline baseline-std baseline-fastmath; "?" where a run failed).
# SPDX-License-Identifier: BSD-3-Clause

if (!exists("prog")) prog = "dotp"
if (!exists("data")) data = "out/".prog.".dat"
if (!exists("png")) png = "out/".prog.".png"

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 800,560 font ",11"
} else {
    set terminal png size 800,560
}
set output png
set title prog.": run time against size (median after a warm-up; lower is better)"
set xlabel "size (elements)"
set ylabel "run time (ms)"
set logscale xy
set format x "10^{%L}"
set key top left
set grid
set datafile missing "?"
# the x axis spans the sizes measured, with a little room each side
stats data using 1 nooutput
set xrange [STATS_min / 1.3 : STATS_max * 1.3]
set bmargin 5
set label 1 "Lines that lie on top of each other ran in the same time (for instance: dot product has no\nsharing to recover, so \"no sharing recovery\" is the fused program itself)." \
    at screen 0.5, screen 0.035 center font ",9"
plot data using 1:2 with linespoints lw 2 pt 7 title "axle (fused)", \
     data using 1:3 with linespoints lw 2 pt 5 title "axle, no fusion", \
     data using 1:4 with linespoints lw 1 pt 9 dt 2 title "axle, no sharing recovery", \
     data using 1:6 with linespoints lw 2 pt 13 title "hand-written C: OpenMP, -O3 -march=native", \
     data using 1:7 with linespoints lw 1 pt 11 dt 3 title "hand-written C: the same with -ffast-math"
