#!/bin/sh
# Reproduces results/cost/pareto-*.json, plan-*.json and pareto.png (from the repository root; long: the figures
# in the README were made under `nice -n 15` at load 15-19; HiGHS's --time-limit is wall-clock).
set -e
export PYTHONPATH="${PYTHONPATH:-$PWD}"
h="python3 -m slurm_plugin cost"
$h pareto --site demo -w synthetic:jobs=300,seed=1,load=0.8 --horizon 24h --points 8 --time-limit 30 --output results/cost/pareto-demo-24h.json
$h pareto --site demo -w synthetic:jobs=300,seed=2,load=0.9 --horizon 12h --points 6 --time-limit 600 --output results/cost/pareto-demo-12h-s2.json
$h plan --site demo -w synthetic:jobs=300,seed=1,load=0.8 --horizon 24h --time-limit 900 --json > results/cost/plan-demo-24h.json
$h plan --site demo -w synthetic:jobs=3000,seed=1,load=0.8 --horizon 7d --time-limit 60 --json > results/cost/plan-demo-7d.json
T=../shared/workloads/gpu/gavel/philly_vc_traces/0e4a51.trace
$h pareto --site site_configs/gavel-het.yaml -w $T --horizon 24h --points 6 --time-limit 60 --output results/cost/pareto-philly-0e4a51-24h.json
$h plan --site site_configs/gavel-het.yaml -w $T --horizon 7d --time-limit 120 --json > results/cost/plan-philly-0e4a51-7d.json
python3 -c "from pathlib import Path; from slurm_plugin.cost.pareto_plot import plot_fronts; \
plot_fronts([Path('results/cost/pareto-demo-24h.json'), Path('results/cost/pareto-demo-12h-s2.json')], Path('results/cost/pareto.png'))"
