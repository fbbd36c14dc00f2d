#!/usr/bin/env bash
# Issue 13's evaluation protocol on every trace of ../shared/workloads: tune on the first 70 % of jobs by
# submit time, score every fixed ranking and the tuned choice on the last 30 %, backfill on and off; the
# fidelity gate's replay of the recorded waits; the power sweep under the chosen ranking (backfill on).
# Writes results/tune/<trace>.json, .png and .explain.md, then summary.md (HETSCHED_TUNE_OUT=DIR: there instead).
# Usage: results/tune/reproduce.sh [TRACE[@SITE]...]   (run it under `nice -n 15` on a shared host)
# Environment: HETSCHED_TUNE_JOBS=N (-j, default every core); HETSCHED_TUNE_POWER=0 drops the power sweep;
# HETSCHED_TUNE_DQN_BUDGET=S (CPU s for the fine-tuned DQN, default 300; it needs torch in this Python or in
# HETSCHED_TORCH_PYTHON, e.g. the repository's .venv/bin/python, else it is skipped and the JSON says why).
set -euo pipefail
cd "$(dirname "$0")/../.."
W=../shared/workloads
out=${HETSCHED_TUNE_OUT:-results/tune}
mkdir -p "$out"
if [ -z "${HETSCHED_TORCH_PYTHON:-}" ] && [ -x .venv/bin/python ]; then export HETSCHED_TORCH_PYTHON=$PWD/.venv/bin/python; fi
traces=("$@")
if [ ${#traces[@]} -eq 0 ]; then
  traces=("$W/swf/lublin_256.swf" "$W/swf/KTH-SP2-1996-2.1-cln.swf.gz" "$W/swf/CEA-Curie-sample30k_predictsim.swf"
          "$W/swf/LANL-CM5-1994-4.1-cln.swf.gz" "$W/gpu/alibaba_gpu_v2023/openb_pod_list_default.csv")
  for t in "$W"/gpu/gavel/philly_vc_traces/*.trace; do traces+=("$t@site_configs/philly-v100.yaml"); done
fi
for spec in "${traces[@]}"; do
  t=${spec%@*}; site=(); [ "$spec" != "$t" ] && site=(--site "${spec#*@}")
  name=$(basename "$t"); name=${name%.gz}; name=${name%.*}
  case "$t" in *philly_vc_traces*) name="philly-$name";; esac
  power=--power; [ "${HETSCHED_TUNE_POWER:-1}" = 0 ] && power=--no-power
  /usr/bin/time -f "%U user s, %S system s, %e s wall, %P CPU" -o "$out/$name.time.txt" \
    python3 -m slurm_plugin tune --evaluate "$t" "${site[@]}" --drop-unfit $power \
    --dqn-budget "${HETSCHED_TUNE_DQN_BUDGET:-300}" ${HETSCHED_TUNE_JOBS:+-j "$HETSCHED_TUNE_JOBS"} \
    --explain --output "$out/$name.json" --plot "$out/$name.png" > "$out/$name.explain.md"
  echo "$name: $(cat "$out/$name.time.txt")" >&2
done
python3 -c 'import json, sys; from slurm_plugin.tune.report import summary; print(summary([json.load(open(f)) for f in sys.argv[1:]]))' \
  "$out"/*.json > "$out/summary.md"
