# Start-up cost against the number of tasks, each mode: `make bench`
# runs gnuplot on the DATA lines of the guest (startup.dat):
#   DATA startup N TASKS MODE WALL CPU BYTES
set terminal pngcairo size 900,420 font ",10"
set output ARG2
set multiplot layout 1,2 title "perf record -a -- true under TCG: default synthesis against --buildid-offset"
set xlabel "tasks in the guest"
set key top left
set grid
set yrange [0:*]
def = "< grep ' default ' " . ARG1
offset = "< grep ' buildid-offset ' " . ARG1
task = "< grep ' buildid-offset-task ' " . ARG1
set ylabel "CPU seconds"
plot def using 4:7 with linespoints title "default", \
     offset using 4:7 with linespoints title "--buildid-offset --synth=no", \
     task using 4:7 with linespoints title "--buildid-offset --synth=task"
set ylabel "perf.data bytes"
set format y "%.1s%cB"
plot def using 4:8 with linespoints title "default", \
     offset using 4:8 with linespoints title "--buildid-offset --synth=no", \
     task using 4:8 with linespoints title "--buildid-offset --synth=task"
unset multiplot
