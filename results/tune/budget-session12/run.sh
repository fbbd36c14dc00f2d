#!/usr/bin/env bash
# Session 12: the ranking halving under the budget rule (slurm_plugin/tune/sweep.py budget_cut; hetsched tune
# --budget-cpu-s, default 1800, the ranking sweep planning on 50 %), on the LANL-CM5 cells that were WORSE in
# results/tune/rerun-session11/ (same options as there: --evaluate, both backfill modes, --no-power, -j 2, nice 15).
# `lanl`: the default (the budget rule); compare with ../rerun-session11/LANL-CM5-1994-4.1-cln{,-nohalving}.*
# Writes NAME.{json,explain.md,time.txt} here. python3 must be the repository's environment (PATH=.venv/bin:$PATH).
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=results/tune/budget-session12
W=${W:-../shared/workloads}
run() {  # name trace [extra args]
  local f=$out/$1 t=$2; shift 2
  { date -u; uptime; git rev-parse --short HEAD; } > $f.time.txt
  nice -n 15 /usr/bin/time -v python3 -m slurm_plugin tune --evaluate "$t" --drop-unfit --no-power --dqn-budget 300 \
    -j 2 --explain --output $f.json "$@" > $f.explain.md 2>> $f.time.txt
  { date -u; uptime; } >> $f.time.txt
}
case "${1:-all}" in
  lanl|all) run LANL-CM5-1994-4.1-cln $W/swf/LANL-CM5-1994-4.1-cln.swf.gz ;;&
  *) ;;
esac
