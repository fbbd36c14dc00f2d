#!/usr/bin/env bash
# Session 11: the two ranking cells that were WORSE (KTH-SP2 backfill on +1.5 %, LANL-CM5 backfill off +0.7 %)
# re-run under the current selection rule (rolling origins + the consistency clause of session 10), with the
# options of results/tune/reproduce.sh but no power sweep (--no-power: the ranking cells only), -j 2, nice 15.
# `lanl-full`: LANL-CM5 with every candidate in full (--no-halving), to see what the halving's drops cost there.
# Writes NAME.{json,explain.md,time.txt} here. Then: python3 results/tune/diagnose.py results/tune/rerun-session11/*.json
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-results/tune/rerun-session11}  # OUT: another directory (budget-session12/run.sh)
W=${W:-../shared/workloads}
run() {  # name trace [extra args]
  local f=$out/$1 t=$2; shift 2
  { date -u; uptime; git rev-parse --short HEAD; } > $f.time.txt
  nice -n 15 /usr/bin/time -v python3 -m slurm_plugin tune --evaluate "$t" --drop-unfit --no-power --dqn-budget 300 \
    -j 2 --explain --output $f.json "$@" > $f.explain.md 2>> $f.time.txt
  { date -u; uptime; } >> $f.time.txt
}
case "${1:-all}" in
  kth|all) run KTH-SP2-1996-2.1-cln $W/swf/KTH-SP2-1996-2.1-cln.swf.gz ;;&
  lanl|all) run LANL-CM5-1994-4.1-cln $W/swf/LANL-CM5-1994-4.1-cln.swf.gz ;;&
  lanl-full|all) run LANL-CM5-1994-4.1-cln-nohalving $W/swf/LANL-CM5-1994-4.1-cln.swf.gz --no-halving ;;&
  *) ;;
esac
