# Redraw with: gnuplot plots.gp (in this directory)
set key top left
set grid
set terminal pngcairo size 1000,640 font ',10'
set output 'latency.png'
set title "bench-fp32.cellpack, wmt15, cpu: latency against throughput"
set xlabel 'served requests/s'
set ylabel 'latency (ms)'
set logscale y
plot 'latency.dat' index 0 using 1:2 with linespoints lw 2 lc 1 dt 1 title "cellular p50", '' index 0 using 1:3 with linespoints lw 2 lc 1 dt 2 title "cellular p90", \
     'latency.dat' index 1 using 1:2 with linespoints lw 2 lc 2 dt 1 title "onnxruntime p50", '' index 1 using 1:3 with linespoints lw 2 lc 2 dt 2 title "onnxruntime p90"
unset logscale y
set output 'batch.png'
set title "bench-fp32.cellpack, wmt15, cpu: mean batch a task over time"
set xlabel 'seconds'
set ylabel 'request rows a task'
plot 'batch.dat' index 0 using 1:2 with lines lw 1.5 lc 1 title "cellular at 300/s, lstm"
set terminal svg size 1000,640 font 'sans,10'
set output 'latency.svg'
set title "bench-fp32.cellpack, wmt15, cpu: latency against throughput"
set xlabel 'served requests/s'
set ylabel 'latency (ms)'
set logscale y
plot 'latency.dat' index 0 using 1:2 with linespoints lw 2 lc 1 dt 1 title "cellular p50", '' index 0 using 1:3 with linespoints lw 2 lc 1 dt 2 title "cellular p90", \
     'latency.dat' index 1 using 1:2 with linespoints lw 2 lc 2 dt 1 title "onnxruntime p50", '' index 1 using 1:3 with linespoints lw 2 lc 2 dt 2 title "onnxruntime p90"
unset logscale y
set output 'batch.svg'
set title "bench-fp32.cellpack, wmt15, cpu: mean batch a task over time"
set xlabel 'seconds'
set ylabel 'request rows a task'
plot 'batch.dat' index 0 using 1:2 with lines lw 1.5 lc 1 title "cellular at 300/s, lstm"
