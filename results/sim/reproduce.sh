#!/bin/sh
# Reproduces every figure in results/sim/ (run from the repository root; traces from ../shared/workloads).
set -e
OUT=results/sim
SWF=../shared/workloads/swf
for t in lublin_256.swf KTH-SP2-1996-2.1-cln.swf.gz LANL-CM5-1994-4.1-cln.swf.gz CEA-Curie-sample30k_predictsim.swf; do
  n=$(echo "$t" | sed 's/\.swf.*//')
  hetsched -v sim compare -w "$SWF/$t" --output "$OUT/$n.json" --plot "$OUT/$n.png" --table "$OUT/$n.md"
done
# RLScheduler's select-then-wait semantics on the whole Lublin-1 trace, and its published table (10 windows)
hetsched sim compare -w $SWF/lublin_256.swf --semantics rlscheduler --policies fcfs,sjf,wfp3,unicep,f1 \
  --output $OUT/lublin_256_rlscheduler.json --table $OUT/lublin_256_rlscheduler.md
hetsched sim rlrepro -w $SWF/lublin_256.swf --output $OUT/rlscheduler_lublin1.json > $OUT/rlscheduler_lublin1.md
# synthetic heterogeneous workload on the demo site (always on, and with Slurm-style idle suspend)
hetsched sim compare --site demo -w synthetic:jobs=20000,seed=1 --output $OUT/synthetic_demo.json \
  --plot $OUT/synthetic_demo.png --table $OUT/synthetic_demo.md
hetsched sim compare --site demo -w synthetic:jobs=20000,seed=1 --power idle-suspend --suspend-time 600 \
  --policies fcfs,sjf,multifactor --backfill on --output $OUT/synthetic_demo_suspend.json \
  --plot $OUT/synthetic_demo_suspend.png --table $OUT/synthetic_demo_suspend.md
# speed targets
hetsched sim run -w $SWF/LANL-CM5-1994-4.1-cln.swf.gz -p fcfs --backfill --output $OUT/speed_lanl_fcfs_easy.json > /dev/null
hetsched sim compare --site large -w synthetic:jobs=100000,seed=1 --policies fcfs --backfill on \
  --output $OUT/speed_large_100k.json --plot $OUT/speed_large_100k.png --table $OUT/speed_large_100k.md
hetsched sim bench --output $OUT/bench_scaling.json > $OUT/bench_scaling.md
# issue 14: engine beside the reference EASY loop (same schedules), CPU and wall seconds
hetsched bench sim --reference --repeat 2 --policies fcfs,sjf,dqn --output $OUT/bench-sim.json
# a Gavel/Philly GPU job stream on the demo site's 8 GPUs (run times from V100 throughputs; 8-GPU jobs
# do not fit a 4-GPU node: dropped and counted)
hetsched sim compare --site demo -w ../shared/workloads/gpu/gavel/philly_vc_traces/0e4a51.trace --drop-unfit \
  --policies fcfs,sjf,f1,multifactor --output $OUT/philly_0e4a51_demo.json --table $OUT/philly_0e4a51_demo.md \
  --plot $OUT/philly_0e4a51_demo.png
# every Philly VC stream on Gavel's 500-V100 cluster (site_configs/philly-v100.yaml), as recorded and with
# arrivals 4x denser (--compress 4: submit times / 4, run times kept); >8-GPU jobs are skipped and counted
GAVEL=../shared/workloads/gpu/gavel/philly_vc_traces
for vc in 0e4a51 11cb48 2869ce 6214e9 7f04ca ee9e8c; do
  for c in 1 4; do
    hetsched sim compare --site site_configs/philly-v100.yaml -w $GAVEL/$vc.trace --compress $c \
      --policies fcfs,sjf,f1,multifactor --output $OUT/philly_${vc}_v100_x$c.json \
      --table $OUT/philly_${vc}_v100_x$c.md --plot $OUT/philly_${vc}_v100_x$c.png
  done
done
# Alibaba OpenB pod lists on their own node list (1,523 nodes, 6,212 GPUs of 7 types); the gpuspec33 list
# has one pod no node of its required GPU type can hold: dropped and listed (--drop-unfit)
OPENB=../shared/workloads/gpu/alibaba_gpu_v2023
for v in default gpuspec33; do
  hetsched sim compare -w $OPENB/openb_pod_list_$v.csv --drop-unfit --output $OUT/openb_$v.json \
    --table $OUT/openb_$v.md --plot $OUT/openb_$v.png
done
# fidelity against the real local cluster (issue 22): heterogeneous replays with power saving and SiteFactor
# bands, each bringing up and down its own cluster; records in results/sim/fidelity/ (summarize.py prints the
# table). The earlier homogeneous 20/30-job runs (fidelity_runs.json, fidelity_30jobs.json) used the old system
# test, which now replays 12 jobs of the heterogeneous workload.
for seed in 1 2 3; do
  hetsched sim fidelity --site demo --jobs 300 --seed $seed --output results/sim/fidelity/fidelity_300_seed$seed.json
done
hetsched sim fidelity --site demo --jobs 1000 --seed 4 --compress 120 --output results/sim/fidelity/fidelity_1000_seed4.json
