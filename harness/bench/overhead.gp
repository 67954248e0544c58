# Overhead against the sampling frequency: `make bench` runs gnuplot on
# the DATA lines of the guest (overhead.dat), from `build_id_offset_cost -d`:
#   DATA overhead FREQ_HZ G% BIDO% DEFER_BIDO%
set terminal pngcairo size 700,420 font ",10"
set output ARG2
set title "Slowdown of a CPU-bound program (16-frame stacks) under cpu-clock, TCG guest"
set xlabel "samples per second (cpu-clock)"
set ylabel "CPU time over no profiling, %"
set logscale x
set key top left
set grid
set yrange [0:*]
plot ARG1 using 3:4 with linespoints title "-g", \
     ARG1 using 3:5 with linespoints title "-g --buildid-offset", \
     ARG1 using 3:6 with linespoints title "--call-graph fp,defer --buildid-offset"
