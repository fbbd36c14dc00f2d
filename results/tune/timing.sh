#!/usr/bin/env bash
# Tuning time (issue 13 target: 30 days of a 1,000-node site's history, ~100k jobs, within 15 min on 2 cores):
# `hetsched tune` on a synthetic 100,000-job history of site_configs/large.yaml (2,240 nodes; load 0.5 and a
# 63,000 s median run time make it span about 30 days), backfill on, -j 2. Writes results/tune/timing-large.*.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/tune
{ date -u; uptime; } > $out/timing-large.txt
/usr/bin/time -v python3 -m slurm_plugin tune --site site_configs/large.yaml \
  --history "synthetic:jobs=100000,seed=1,load=0.5,median_run_s=63000" -j 2 --explain \
  --out "${TMPDIR:-/tmp}/hetsched-tune-large-policy.yaml" --output $out/timing-large.json \
  > $out/timing-large.explain.md 2>> $out/timing-large.txt
{ date -u; uptime; } >> $out/timing-large.txt
