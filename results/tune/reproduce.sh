#!/usr/bin/env bash
# Issue 13's evaluation protocol on every trace of ../shared/workloads the simulator reads: tune on the first
# 70 % of jobs by submit time, score every fixed ranking and the tuned choice on the last 30 %, backfill on
# and off. Writes results/tune/<trace>.json, .png and .explain.md. Usage: results/tune/reproduce.sh [TRACE...]
# (-j defaults to every core: HETSCHED_TUNE_JOBS=N to change it; the power sweep is off here, its results are
# tunepower's results/tune/power*: HETSCHED_TUNE_POWER=1 adds it to each JSON).
set -euo pipefail
cd "$(dirname "$0")/../.."
W=../shared/workloads
traces=("$@")
if [ ${#traces[@]} -eq 0 ]; then
  traces=("$W/swf/lublin_256.swf" "$W/swf/KTH-SP2-1996-2.1-cln.swf.gz" "$W/swf/CEA-Curie-sample30k_predictsim.swf"
          "$W/swf/LANL-CM5-1994-4.1-cln.swf.gz" "$W/gpu/alibaba_gpu_v2023/openb_pod_list_default.csv")
fi
for t in "${traces[@]}"; do
  name=$(basename "$t"); name=${name%.gz}; name=${name%.*}
  start=$(date +%s)
  power=--no-power; [ "${HETSCHED_TUNE_POWER:-0}" = 1 ] && power=--power
  python3 -m slurm_plugin tune --evaluate "$t" --drop-unfit $power ${HETSCHED_TUNE_JOBS:+-j "$HETSCHED_TUNE_JOBS"} \
    --explain --output "results/tune/$name.json" --plot "results/tune/$name.png" > "results/tune/$name.explain.md"
  echo "$name: $(( $(date +%s) - start )) s wall" >&2
done
python3 -c 'import json, sys; from slurm_plugin.tune.report import summary; print(summary([json.load(open(f)) for f in sys.argv[1:]]))' \
  results/tune/*.json > results/tune/summary.md
