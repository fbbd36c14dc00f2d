#!/usr/bin/env bash
# Session 19: issue 13's evaluation protocol, shipped defaults (as reproduce.sh: power sweep, fine-tuned DQN with
# 300 CPU s, --drop-unfit), on four Lublin-Feitelson histories with seeds and parameters never used before,
# written down here before any of them was run (this file was committed first). Nothing is tuned to them.
#   A  lublin:nodes=64,jobs=5000,seed=4001,load=0.85
#   B  lublin:nodes=128,jobs=5000,seed=4002,load=0.95,overestimate=2
#   C  lublin:nodes=256,jobs=5000,seed=4003,load=0.9
#   D  lublin:nodes=512,jobs=5000,seed=4004,load=1.0,overestimate=3
# A second batch, written down after A-D had run and before E-H ran, to test alt_rules.py's hypotheses out of sample:
#   E  lublin:nodes=96,jobs=5000,seed=5001,load=0.8
#   F  lublin:nodes=192,jobs=5000,seed=5002,load=0.9,overestimate=2
#   G  lublin:nodes=320,jobs=5000,seed=5003,load=0.95
#   H  lublin:nodes=128,jobs=5000,seed=5004,load=0.75,overestimate=3
# Writes NAME.{json,explain.md,time.txt,png} here; then `python3 results/tune/diagnose.py results/tune/unseen-session19/*.json`.
# Usage: results/tune/unseen-session19/run.sh [A B C D | E F G H]   (-j 1 and nice 10 by default: JOBS=N, NICE=N)
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=results/tune/unseen-session19
if [ -z "${HETSCHED_TORCH_PYTHON:-}" ] && [ -x .venv/bin/python ]; then export HETSCHED_TORCH_PYTHON=$PWD/.venv/bin/python; fi
declare -A spec=(
  [A]="lublin:nodes=64,jobs=5000,seed=4001,load=0.85"
  [B]="lublin:nodes=128,jobs=5000,seed=4002,load=0.95,overestimate=2"
  [C]="lublin:nodes=256,jobs=5000,seed=4003,load=0.9"
  [D]="lublin:nodes=512,jobs=5000,seed=4004,load=1.0,overestimate=3"
  [E]="lublin:nodes=96,jobs=5000,seed=5001,load=0.8"
  [F]="lublin:nodes=192,jobs=5000,seed=5002,load=0.9,overestimate=2"
  [G]="lublin:nodes=320,jobs=5000,seed=5003,load=0.95"
  [H]="lublin:nodes=128,jobs=5000,seed=5004,load=0.75,overestimate=3"
)
for k in "${@:-A B C D}"; do
  for key in $k; do
    t=${spec[$key]}; f=$out/$key-$(echo "$t" | sed 's/^lublin://; s/=//g; s/,/-/g')
    { date -u; uptime; git rev-parse --short HEAD; echo "$t"; } > "$f.time.txt"
    nice -n "${NICE:-10}" /usr/bin/time -v python3 -m slurm_plugin tune --evaluate "$t" --drop-unfit --power \
      --dqn-budget 300 -j "${JOBS:-1}" --explain --output "$f.json" --plot "$f.png" > "$f.explain.md" 2>> "$f.time.txt"
    { date -u; uptime; } >> "$f.time.txt"
  done
done
