#!/usr/bin/env bash
# Tuning time (issue 13 target: 30 days of a 1,000-node site's history, ~100k jobs, within 15 min on 2 cores):
# `hetsched tune` on a synthetic 100,000-job history of site_configs/large.yaml (2,240 nodes; load 0.5 and a
# 63,000 s median run time make it span about 30 days), backfill on, -j 2 (the tuning part has 70,000 jobs, so
# the ranking sweep races: every candidate on its first 20 %, the leaders in full: slurm_plugin/tune/sweep.py).
# Usage: [JOBS=N] timing.sh [NAME [EXTRA ARGS...]], e.g. `timing.sh large-nopower --no-power` (default NAME: large,
# JOBS 100000).
# Writes results/tune/timing-NAME.{txt,json,explain.md}; the .txt has the load before/after and /usr/bin/time -v.
set -euo pipefail
cd "$(dirname "$0")/../.."
name=${1:-large}; shift || true
out=results/tune
{ date -u; uptime; git rev-parse --short HEAD 2>/dev/null || echo "commit ${HETSCHED_COMMIT:-unknown}"; } > $out/timing-$name.txt
nice -n 15 /usr/bin/time -v python3 -m slurm_plugin ${VERBOSE:+-v} tune --site site_configs/large.yaml \
  --history "synthetic:jobs=${JOBS:-100000},seed=1,load=0.5,median_run_s=63000" -j 2 --explain \
  --out "${TMPDIR:-/tmp}/hetsched-tune-$name-policy.yaml" --output $out/timing-$name.json "$@" \
  > $out/timing-$name.explain.md 2>> $out/timing-$name.txt
{ date -u; uptime; } >> $out/timing-$name.txt
