"""Pure reproduction on the live snapshot: pack decided with different caps, applied, decided again."""
import sys, pickle, collections, dataclasses, time, logging
from slurm_plugin.slurm.client import SlurmClient
from slurm_plugin.snapshot.collect import collect_snapshot
from slurm_plugin.site import load_site
from slurm_plugin.cycle.steps import pack_moves, bands_from, RankStep, CycleMemory, StepInputs
from slurm_plugin.cycle.policy import live_ranker
from slurm_plugin.policy import RankingSpec
from slurm_plugin.decision.actions import MoveJob
root = "/var/lib/hetsched/test-scale/churn"
site = load_site(f"{root}/site.yaml")
try:
    snap = pickle.load(open("/tmp/scale/live-snap.pkl", "rb"))
except FileNotFoundError:
    snap = collect_snapshot(SlurmClient(f"{root}/etc/slurm.conf"))
    pickle.dump(dataclasses.replace(snap, _memo={}), open("/tmp/scale/live-snap.pkl", "wb"))
now = snap.taken_at
rank = live_ranker(RankingSpec(name="dqn"), f"{root}/etc/slurm.conf")
bands = bands_from(rank(snap, site, now))
print("pending", sum(j.pending for j in snap.jobs), "bands", collections.Counter(bands.values()))

def moved(s, cap, dt=0.0):
    b = bands_from(rank(s, site, now + dt))
    d = pack_moves(s, site, b, cap)
    return [a for a in d.actions if isinstance(a, MoveJob)], dict(d.notes)

def apply(s, moves):
    mv = {m.job_id: m for m in moves}
    return dataclasses.replace(s, jobs=tuple(dataclasses.replace(j, partition=mv[j.job_id].partition or j.partition,
        features=mv[j.job_id].features if mv[j.job_id].features is not None else j.features) if j.job_id in mv else j
        for j in s.jobs), _memo={})

place = lambda s: {j.job_id: (j.partition, j.features) for j in s.jobs}
seq = [tuple(map(float, (x + ":0").split(":")[:2])) for x in sys.argv[1:]]
s, p0 = snap, place(snap)
hist = collections.defaultdict(list)
for i, (cap, dt) in enumerate(seq):
    c0 = time.process_time()
    ms, notes = moved(s, cap, dt)
    here = place(s)
    again = sum(1 for m in ms if hist[m.job_id])
    back = sum(1 for m in ms if (m.partition, m.features) == p0[m.job_id] or (m.partition, m.features) in hist[m.job_id][:-1])
    print(f"decide {i + 1} (cap {cap} s, ranked at +{dt:g} s): {len(ms)} moves, status {notes.get('pack.status')}, {again} of jobs moved "
          f"by an earlier decide, {back} back to where they were; {time.process_time() - c0:.2f} CPU s")
    for m in ms:
        hist[m.job_id].append(here[m.job_id])
    s = apply(s, ms)
