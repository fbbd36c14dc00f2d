#!/bin/bash
# Before/after side by side (bench-sim-lanl-fcfs-session11.json): BEFORE and AFTER are two checkouts (e.g. `git worktree add
# --detach DIR COMMIT`); each of ROUNDS (default 3) rounds runs `hetsched bench sim` on the three shared traces in BEFORE then AFTER,
# writing OUT/{before,after}-ROUND.json and the /usr/bin/time -v record beside it.
: "${BEFORE:?checkout of the tree before}" "${AFTER:?checkout of the tree after}"
OUT=${OUT:-/tmp/pair_fcfs}; mkdir -p "$OUT"
SWF=${SWF:-/work/shared/workloads/swf}
PY=${PY:-/work/main/.venv/bin/python}
W="-w $SWF/lublin_256.swf -w $SWF/KTH-SP2-1996-2.1-cln.swf.gz -w $SWF/LANL-CM5-1994-4.1-cln.swf.gz"
for round in $(seq 1 "${ROUNDS:-3}"); do
  for tag in before after; do
    echo "$(date -u +%T) load $(cut -d" " -f1-3 /proc/loadavg) $tag-$round" >> "$OUT/load.txt"
    if [ $tag = before ]; then TREE=$BEFORE; else TREE=$AFTER; fi
    cd "$TREE" && PYTHONPATH=$TREE nice -n 15 /usr/bin/time -v -o "$OUT/$tag-$round.time" "$PY" -m slurm_plugin bench sim $W \
      --policies fcfs,sjf,dqn --reference --repeat 3 --json "$OUT/$tag-$round.json" 2> "$OUT/$tag-$round.err"
  done
done
