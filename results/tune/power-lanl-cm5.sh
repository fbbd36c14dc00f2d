#!/usr/bin/env bash
# LANL-CM5's power pair at the SWF default SuspendTime (300 s), as CEA-Curie's (results/tune/power-cea-curie.*):
# the timer, its matched timer and the planner at both wait prices on the whole history, chosen on the first 70 %,
# reported on the last 30 %; every candidate in full (--no-halving: the evaluation). nice 15, -j 2, a cache so a
# stopped run resumes. Writes results/tune/power-lanl-cm5.{json,png,txt,time.txt}.
set -euo pipefail
cd "$(dirname "$0")/../.."
W=${W:-../shared/workloads}
out=results/tune
{ date -u; uptime; git rev-parse --short HEAD; } > $out/power-lanl-cm5.time.txt
nice -n 15 /usr/bin/time -v python3 -m slurm_plugin.tune.power_eval $W/swf/LANL-CM5-1994-4.1-cln.swf.gz --jobs 2 \
  --timers 300 --no-halving --cache "${TMPDIR:-/tmp}/hetsched-power-cache" --json $out/power-lanl-cm5.json \
  --plot $out/power-lanl-cm5.png > $out/power-lanl-cm5.txt 2>> $out/power-lanl-cm5.time.txt
{ date -u; uptime; } >> $out/power-lanl-cm5.time.txt
