#!/usr/bin/env bash
# Successive halving vs every candidate in full, and the amended rule 3 (session 10), on two Lublin-model
# histories with seeds not used before (1313, 1314): `hetsched tune --evaluate` both backfill modes, no power,
# no fine-tuned DQN, one process each. Writes NAME-{halving,exhaustive}.{json,explain.md,time.txt} here.
# Then: python3 results/tune/rule_compare.py results/tune/halving/*.json
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=results/tune/halving
run() {  # name spec flag label
  local f=$out/$1-$4
  { date -u; uptime; git rev-parse --short HEAD; } > $f.time.txt
  nice -n 15 /usr/bin/time -v python3 -m slurm_plugin tune --evaluate "$2" --$3 --no-power --dqn-budget 0 -j 1 \
    --explain --output $f.json > $f.explain.md 2>> $f.time.txt
  { date -u; uptime; } >> $f.time.txt
}
for mode in halving:halving no-halving:exhaustive; do
  run lublin-128-5000-seed1313 "lublin:nodes=128,jobs=5000,seed=1313,jitter=0.2,load=1.0" ${mode%:*} ${mode#*:} &
  run lublin-256-5000-seed1314 "lublin:nodes=256,jobs=5000,seed=1314,jitter=0.2,load=0.95,overestimate=3" \
    ${mode%:*} ${mode#*:} &
done
wait
