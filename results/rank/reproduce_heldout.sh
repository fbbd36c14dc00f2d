#!/bin/sh
# Issue 13, item 2: the multi-workload default model and its held-out evaluation (run from the repository root,
# torch needed for --train and for the fine-tuned rows: pip install -e '.[train]').
# Training mix: 4 Lublin-Feitelson workloads with jittered parameters (seeds 11-14), the heterogeneous synthetic
# workload (seed 1), and the tuning part (first 70 % by submit time) of every shared SWF trace. Held out: Lublin
# seeds 901-903, synthetic seed 2, and the last 30 % of every shared trace.
set -e
W=../shared/workloads/swf
OUT=results/rank
OLD=slurm_plugin/rank/models/dqn_default.npz   # the shipped (single-workload) model: "old"
NEW=$OUT/dqn_multi.npz                          # the multi-workload model (not shipped: worse on held-out data)
if [ "$1" = "--train" ]; then
  hetsched -v rank train --site demo \
    -w "lublin:nodes=256,jobs=10000,seed=11,jitter=0.2,load=0.9" \
    -w "lublin:nodes=128,jobs=10000,seed=12,jitter=0.2,load=1.0,overestimate=3" \
    -w "lublin:nodes=1024,jobs=10000,seed=13,jitter=0.2,load=0.8,overestimate=2" \
    -w "lublin:nodes=512,jobs=10000,seed=14,jitter=0.2,load=1.1,typed=1" \
    -w "synthetic:jobs=10000,seed=1,load=0.9" \
    -w $W/lublin_256.swf@tune -w $W/KTH-SP2-1996-2.1-cln.swf.gz@tune \
    -w $W/LANL-CM5-1994-4.1-cln.swf.gz@tune -w $W/CEA-Curie-sample30k_predictsim.swf@tune \
    --train-frac 0.85 --val-frac 0.15 --val-seqs 8 --episodes 300 --eval-every 20 --seed 1 --budget-s 1200 \
    --out $NEW
fi
HELD="-w lublin:nodes=256,jobs=10000,seed=901,jitter=0.2,load=0.9
  -w lublin:nodes=128,jobs=10000,seed=902,jitter=0.2,load=1.0,overestimate=3
  -w lublin:nodes=512,jobs=10000,seed=903,jitter=0.2,load=1.1,typed=1
  -w synthetic:jobs=10000,seed=2,load=0.9"
TRACES="-w $W/lublin_256.swf -w $W/KTH-SP2-1996-2.1-cln.swf.gz -w $W/CEA-Curie-sample30k_predictsim.swf
  -w $W/LANL-CM5-1994-4.1-cln.swf.gz"
# shellcheck disable=SC2086
hetsched rank heldout $HELD $TRACES --model old=$OLD --model multi=$NEW \
  --output $OUT/heldout.json --plot $OUT/heldout.png > $OUT/heldout.md
# the fine-tune API on three shared traces' tuning parts (60 s each), compared on their held-back parts
hetsched rank heldout -w $W/lublin_256.swf -w $W/KTH-SP2-1996-2.1-cln.swf.gz -w $W/CEA-Curie-sample30k_predictsim.swf \
  --model dqn=$OLD --policy sjf --fine-tune-s 60 --seed 1 \
  --output $OUT/heldout_finetune.json --plot $OUT/heldout_finetune.png > $OUT/heldout_finetune.md
