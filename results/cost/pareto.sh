#!/bin/sh
# Reproduces results/cost/pareto*.json and plan*.json (run from the repository root; long: nice -n 15).
set -e
export PYTHONPATH="${PYTHONPATH:-$PWD}"
h="python3 -m slurm_plugin cost"
$h pareto --site demo -w synthetic:jobs=300,seed=1,load=0.8 --horizon 24h --points 8 --time-limit 30 --json results/cost/pareto-demo-24h.json
$h pareto --site demo -w synthetic:jobs=600,seed=2,load=0.8 --horizon 48h --points 8 --time-limit 30 --json results/cost/pareto-demo-48h.json
$h pareto --site large -w synthetic:jobs=4000,seed=1,load=0.8 --horizon 24h --points 6 --time-limit 30 --json results/cost/pareto-large-24h.json
$h plan --site demo -w synthetic:jobs=3000,seed=1,load=0.8 --horizon 7d --time-limit 60 --json > results/cost/plan-demo-7d.json
$h plan --site large -w synthetic:jobs=8000,seed=1,load=0.8 --horizon 3d --time-limit 60 --json > results/cost/plan-large-3d.json
