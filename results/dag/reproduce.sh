#!/bin/sh
# Every figure in results/dag/README.md (from the repository root, PYTHONPATH=$PWD; ~15 CPU min on the 2-core VM).
set -e
TPCH=../shared/workloads/dag/decima_tpch_dags.json.gz
for load in 0.5 0.7 0.9; do
  nice -n 15 python3 -m slurm_plugin dag eval --dags $TPCH --count 100 --load $load --output results/dag/tpch-load$load.json
  nice -n 15 python3 -m slurm_plugin dag eval --dags pipelines --site demo --count 100 --load $load --output results/dag/pipelines-demo-load$load.json
  nice -n 15 python3 -m slurm_plugin dag eval --dags pipelines --site large --count 200 --load $load --output results/dag/pipelines-large-load$load.json
done
nice -n 15 python3 -m slurm_plugin dag eval --dags $TPCH --count 100 --load 0.7 --launch-s 0 --output results/dag/tpch-load0.7-launch0.json
nice -n 15 python3 results/dag/plan_bench.py
python3 results/dag/plot.py
