#!/usr/bin/env bash
# Tuning time (issue 13 target: 30 days of a 1,000-node site's history, ~100k jobs, within 15 min on 2 cores):
# `hetsched tune` on a synthetic 100,000-job history of site_configs/large.yaml (2,240 nodes; load 0.5 and a
# 63,000 s median run time make it span about 30 days), backfill on, -j 2 (the tuning part has 70,000 jobs, so
# both sweeps run successive halving: the rankings and the power candidates on the first ninth and third of the
# tuning part, the survivors in full: slurm_plugin/tune/sweep.py, tune/power.py).
# Usage: [JOBS=N] [VERBOSE=1] timing.sh [NAME [EXTRA ARGS...]], e.g. `timing.sh large-nopower --no-power` (default
# NAME: large, JOBS 100000; VERBOSE=1 logs each round's CPU s into the .txt as it ends). python3 must be the
# repository's environment (e.g. PATH=.venv/bin:$PATH).
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
