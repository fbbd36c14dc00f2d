#!/bin/sh
# Reproduce results/rank (run from the repository root; traces read in place from ../shared/workloads).
# The default model: Double DQN over band offsets on SJF, warm-started from the size-offset teacher, 2 training
# sources, checkpoint chosen on their validation splits and LANL-CM5's (never trained on), seed 1 (needs the
# train extra: pip install -e '.[train]'). KTH-SP2 is the held-out trace: used by no step of training.
set -e
W=../shared/workloads/swf
OUT=results/rank
if [ "$1" = "--train" ]; then
  hetsched -v rank train --site demo -w $W/lublin_256.swf -w "synthetic:jobs=10000,seed=1,load=0.9" \
    --val-workload $W/LANL-CM5-1994-4.1-cln.swf.gz \
    --episodes 300 --eval-every 10 --seed 1 --out slurm_plugin/rank/models/dqn_default.npz
fi
# Slurm-like semantics, 50 held-out 256-job sequences, with/without backfill, plus a 24 h age floor (backfill on)
hetsched rank eval -w $W/lublin_256.swf --split test --sequences 50 --age-floor 24 \
  --output $OUT/lublin_slurm.json --plot $OUT/lublin_slurm.png > $OUT/lublin_slurm.md
hetsched rank eval -w "synthetic:jobs=10000,seed=2,load=0.9" --site demo --split all --sequences 50 --age-floor 24 \
  --output $OUT/synthetic_demo_seed2.json --plot $OUT/synthetic_demo_seed2.png > $OUT/synthetic_demo_seed2.md
hetsched rank eval -w $W/KTH-SP2-1996-2.1-cln.swf.gz --split all --sequences 50 --age-floor 24 \
  --output $OUT/kth_sp2_heldout.json --plot $OUT/kth_sp2_heldout.png > $OUT/kth_sp2_heldout.md
# RLScheduler's protocol and semantics on Lublin-1: 10 windows of 1,024 jobs, seed 1
hetsched rank eval -w $W/lublin_256.swf --semantics rlscheduler --windows --sequences 10 --length 1024 \
  --output $OUT/lublin_rlscheduler.json --plot $OUT/lublin_rlscheduler.png > $OUT/lublin_rlscheduler.md
hetsched bench rank --output $OUT/bench_rank.json
# the figures above go into the model file's metadata (weights unchanged)
hetsched rank record --model slurm_plugin/rank/models/dqn_default.npz $OUT/lublin_slurm.json \
  $OUT/synthetic_demo_seed2.json $OUT/kth_sp2_heldout.json $OUT/lublin_rlscheduler.json
