#!/bin/sh
# Every figure in results/dag/README.md (from the repository root, PYTHONPATH=$PWD). Sized for the shared 2-core
# VM at load 30-40 (each TPC-H run simulates ~25,000 one-task jobs under naive and critical-path).
set -e
TPCH=../shared/workloads/dag/decima_tpch_dags.json.gz
E="nice -n 15 python3 -m slurm_plugin dag eval"
for load in 0.5 0.9; do
  $E --dags $TPCH --count 25 --load $load --output results/dag/tpch-load$load.json
  $E --dags pipelines --site demo --count 40 --load $load --output results/dag/pipelines-demo-load$load.json
done
$E --dags pipelines --site large --count 60 --load 0.9 --output results/dag/pipelines-large-load0.9.json
$E --dags $TPCH --count 25 --load 0.9 --launch-s 0 --output results/dag/tpch-load0.9-launch0.json
# validation of the matching and width rules on a seed and load they were not written against
$E --dags pipelines --site demo --count 40 --load 0.7 --seed 2 --output results/dag/pipelines-demo-load0.7-seed2.json
$E --dags $TPCH --count 25 --load 0.7 --seed 2 --output results/dag/tpch-load0.7-seed2.json
nice -n 15 python3 results/dag/plan_bench.py
python3 results/dag/plot.py
