#!/usr/bin/env bash
# Session 12: the ranking halving under the budget rule (slurm_plugin/tune/sweep.py budget_cut; hetsched tune
# --budget-cpu-s, default 1800, the ranking sweep planning on 50 %), on the LANL-CM5 cells that were WORSE in
# results/tune/rerun-session11/: its run.sh's `lanl` case (--evaluate, both backfill modes, --no-power, -j 2,
# nice 15), written here. Compare with ../rerun-session11/LANL-CM5-1994-4.1-cln{,-nohalving}.*
# python3 must be the repository's environment (PATH=.venv/bin:$PATH).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=results/tune/budget-session12 exec bash "$here/../rerun-session11/run.sh" lanl
