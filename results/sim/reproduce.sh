#!/bin/sh
# Reproduces every figure in results/sim/ (run from the repository root; traces from ../shared/workloads).
set -e
OUT=results/sim
SWF=../shared/workloads/swf
for t in lublin_256.swf KTH-SP2-1996-2.1-cln.swf.gz LANL-CM5-1994-4.1-cln.swf.gz CEA-Curie-sample30k_predictsim.swf; do
  n=$(echo "$t" | sed 's/\.swf.*//')
  hetsched -v sim compare -w "$SWF/$t" --json "$OUT/$n.json" --plot "$OUT/$n.png" --table "$OUT/$n.md"
done
# RLScheduler's select-then-wait semantics on the whole Lublin-1 trace, and its published table (10 windows)
hetsched sim compare -w $SWF/lublin_256.swf --semantics rlscheduler --policies fcfs,sjf,wfp3,unicep,f1 \
  --json $OUT/lublin_256_rlscheduler.json --table $OUT/lublin_256_rlscheduler.md
hetsched sim rlrepro -w $SWF/lublin_256.swf --json $OUT/rlscheduler_lublin1.json > $OUT/rlscheduler_lublin1.md
# synthetic heterogeneous workload on the demo site (always on, and with Slurm-style idle suspend)
hetsched sim compare --site demo -w synthetic:jobs=20000,seed=1 --json $OUT/synthetic_demo.json \
  --plot $OUT/synthetic_demo.png --table $OUT/synthetic_demo.md
hetsched sim compare --site demo -w synthetic:jobs=20000,seed=1 --power idle-suspend --suspend-time 600 \
  --policies fcfs,sjf,multifactor --backfill on --json $OUT/synthetic_demo_suspend.json \
  --plot $OUT/synthetic_demo_suspend.png --table $OUT/synthetic_demo_suspend.md
# speed targets
hetsched sim run -w $SWF/LANL-CM5-1994-4.1-cln.swf.gz -p fcfs --backfill --json $OUT/speed_lanl_fcfs_easy.json > /dev/null
hetsched sim compare --site large -w synthetic:jobs=100000,seed=1 --policies fcfs --backfill on \
  --json $OUT/speed_large_100k.json --plot $OUT/speed_large_100k.png --table $OUT/speed_large_100k.md
hetsched sim bench --json $OUT/bench_scaling.json > $OUT/bench_scaling.md
# a Gavel/Philly GPU job stream on the demo site's 8 GPUs (run times from V100 throughputs; 8-GPU jobs
# do not fit a 4-GPU node: dropped and counted)
hetsched sim compare --site demo -w ../shared/workloads/gpu/gavel/philly_vc_traces/0e4a51.trace --drop-unfit \
  --policies fcfs,sjf,f1,multifactor --json $OUT/philly_0e4a51_demo.json --table $OUT/philly_0e4a51_demo.md \
  --plot $OUT/philly_0e4a51_demo.png
