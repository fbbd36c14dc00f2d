#!/bin/bash
# the earlier engineer's series up to the 10k budgeted run (run-series.sh), snapshot before the 10k cycles
set -x
cd /work/wt/scale
export PYTHONPATH=$PWD HETSCHED_SLURM_TIMEOUT=600 HETSCHED_TEST_PORT_BASE=20000 HETSCHED_TEST_ROOT=/var/lib/hetsched/test-scale
R=/var/lib/hetsched/test-scale/churn
P=results/cycle/policies/budget-10s.json
PY=/work/main/.venv/bin/python
$PY results/cycle/large_live.py --pending 1000 --max-jobs 120000 --unheld --cycles 3 --keep --root $R --port 20000 --policy-file $P --output /tmp/scale/s-1k.json || exit 1
export SLURM_CONF=$R/etc/slurm.conf
$PY -m slurm_plugin bench cycle --live --root $R --cycles 2 --output /tmp/scale/s-nobudget-1k.json || exit 1
$PY - <<'PY'
from slurm_plugin.cluster.local import LocalCluster
from slurm_plugin.cluster.queue_fill import fill_queue
c = LocalCluster("/var/lib/hetsched/test-scale/churn"); cl = c.client()
have = len(cl.run("squeue", "-h", "-r", "-t", "PD", "-o", "%i").stdout.split())
print(fill_queue(cl, 10000 - have, hold=False, say=print))
PY
rm -f /tmp/scale/live-snap.pkl
$PY results/cycle/churn/pure_redecide.py 5:0 5:0 0.001:0 5:0 || exit 1
cp /tmp/scale/live-snap.pkl /tmp/scale/pre10k-snap.pkl
$PY -m slurm_plugin bench cycle --live --root $R --cycles 3 --policy-file $P --output /tmp/scale/s-10k.json || exit 1
echo done
