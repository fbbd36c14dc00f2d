#!/usr/bin/env bash
# Session 22: the bound's price (select.py rule 1, --bound-price, default 1.5) out of sample. Six Lublin-Feitelson
# histories with seeds and parameters never used before, written down here and committed before any was run:
#   I  lublin:nodes=80,jobs=5000,seed=6001,load=0.85
#   J  lublin:nodes=160,jobs=5000,seed=6002,load=0.95,overestimate=2
#   K  lublin:nodes=384,jobs=5000,seed=6003,load=0.9
#   L  lublin:nodes=224,jobs=5000,seed=6004,load=0.8,overestimate=3
#   M  lublin:nodes=112,jobs=5000,seed=6005,load=0.7
#   N  lublin:nodes=448,jobs=5000,seed=6006,load=1.0,overestimate=2
# Each is evaluated twice with the shipped defaults (as unseen-session19/run.sh, but --no-power: this is about the
# ranking; power is unchanged by the price): --bound-price 1.5 (NAME.json) and --bound-price inf, the rule before
# session 22 (NAME-inf.json). Then `python3 results/tune/bound-price/summary.py`.
# Usage: results/tune/bound-price/run.sh [I J K L M N]   (-j 1 and nice 10 by default: JOBS=N, NICE=N;
#        PRICES="1.5 inf" by default)
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=results/tune/bound-price
if [ -z "${HETSCHED_TORCH_PYTHON:-}" ] && [ -x .venv/bin/python ]; then export HETSCHED_TORCH_PYTHON=$PWD/.venv/bin/python; fi
declare -A spec=(
  [I]="lublin:nodes=80,jobs=5000,seed=6001,load=0.85"
  [J]="lublin:nodes=160,jobs=5000,seed=6002,load=0.95,overestimate=2"
  [K]="lublin:nodes=384,jobs=5000,seed=6003,load=0.9"
  [L]="lublin:nodes=224,jobs=5000,seed=6004,load=0.8,overestimate=3"
  [M]="lublin:nodes=112,jobs=5000,seed=6005,load=0.7"
  [N]="lublin:nodes=448,jobs=5000,seed=6006,load=1.0,overestimate=2"
)
for key in ${@:-I J K L M N}; do
  for price in ${PRICES:-1.5 inf}; do
    t=${spec[$key]}; f=$out/$key-$(echo "$t" | sed 's/^lublin://; s/=//g; s/,/-/g')
    [ "$price" = 1.5 ] || f=$f-$price
    { date -u; uptime; git rev-parse --short HEAD; echo "$t --bound-price $price"; } > "$f.time.txt"
    nice -n "${NICE:-10}" /usr/bin/time -v python3 -m slurm_plugin tune --evaluate "$t" --drop-unfit --no-power \
      --bound-price "$price" --dqn-budget 300 -j "${JOBS:-1}" --explain --output "$f.json" --plot "$f.png" \
      > "$f.explain.md" 2>> "$f.time.txt"
    { date -u; uptime; } >> "$f.time.txt"
  done
done
