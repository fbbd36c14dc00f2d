#!/usr/bin/env bash
# Power tuning on every shared SWF trace and two synthetic site histories (issue 13, item 3; results/tune/power.md).
# Each line: tune on the first 70 % of jobs, report on the last 30 %; JSON + PNG under results/tune/power-*.
# A stopped run resumes from the cache (each finished candidate's scores). Run under `nice -n 15` on a shared host.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/tune
cache=${TMPDIR:-/tmp}/hetsched-power-cache
J=${J:-2}
run() {  # name trace [args...]
  local name=$1 trace=$2; shift 2
  nice -n 15 python3 -m slurm_plugin.tune.power_eval "$trace" --jobs "$J" --cache "$cache" \
    --json "$out/power-$name.json" --plot "$out/power-$name.png" "$@" > "$out/power-$name.txt"
}
w=../shared/workloads/swf
case "${1:-all}" in
  lublin|all) run lublin-256 $w/lublin_256.swf ;;&
  kth|all) run kth-sp2 $w/KTH-SP2-1996-2.1-cln.swf.gz ;;&
  lanl|all) run lanl-cm5 $w/LANL-CM5-1994-4.1-cln.swf.gz ;;&
  curie|all) run cea-curie $w/CEA-Curie-sample30k_predictsim.swf ;;&
  demo|all) run demo-week-load25 synthetic:jobs=3000,seed=1,load=0.25 --site demo ;;&
  large|all) run large-10k "synthetic:jobs=10000,seed=1,load=0.5,median_run_s=63000" --site site_configs/large.yaml ;;&
  *) ;;
esac
