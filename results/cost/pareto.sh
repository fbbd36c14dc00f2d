#!/bin/sh
# Reproduces results/cost/pareto-*.json and plan-*.json (from the repository root; long: run under nice -n 15).
set -e
export PYTHONPATH="${PYTHONPATH:-$PWD}"
h="python3 -m slurm_plugin cost"
$h pareto --site demo -w synthetic:jobs=300,seed=1,load=0.8 --horizon 24h --points 8 --time-limit 30 --output results/cost/pareto-demo-24h.json
$h pareto --site demo -w synthetic:jobs=300,seed=2,load=0.9 --horizon 24h --points 8 --time-limit 30 --output results/cost/pareto-demo-24h-s2.json
$h pareto --site demo -w synthetic:jobs=600,seed=3,load=0.8 --horizon 48h --points 6 --time-limit 30 --output results/cost/pareto-demo-48h.json
$h plan --site demo -w synthetic:jobs=3000,seed=1,load=0.8 --horizon 7d --time-limit 60 --json > results/cost/plan-demo-7d.json
