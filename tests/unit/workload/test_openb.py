"""Alibaba OpenB pod lists: pods -> jobs (shared GPUs rounded up and counted, type alternatives, never-scheduled
pods skipped and counted), the node list -> a site, auto-detection, errors naming file and line."""

import numpy as np
import pytest

from slurm_plugin.sim.run import prepare, simulate
from slurm_plugin.workload import UnfitJobsError, WorkloadError, load_workload, read_openb
from slurm_plugin.workload.openb import NODE_COLUMNS, POD_COLUMNS, SHARED_GPU

NODES = [
    "n0,96000,393216,8,V100M32",
    "n1,96000,393216,8,V100M32",
    "n2,104000,524288,2,T4",
    "n3,32000,262144,0,",
]
PODS = [
    # name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, phase, creation, deletion, scheduled
    "openb-pod-0007,6000,12288,1,460,,LS,Running,100,400,110",
    "openb-pod-0003,152,1024,0,0,,BE,Succeeded,50,80,60",
    "openb-pod-0009,88000,327680,8,1000,V100M16|V100M32|V100M32,Burstable,Failed,0,1000,0",
    "openb-pod-0010,4000,15258,1,1000,,BE,Pending,20,500,",
]


def write(tmp_path, pods=PODS, nodes=NODES, name="openb_pod_list_default.csv"):
    (tmp_path / "openb_node_list_all_node.csv").write_text("\n".join([",".join(NODE_COLUMNS), *nodes]) + "\n")
    path = tmp_path / name
    path.write_text("\n".join([",".join(POD_COLUMNS), *pods]) + "\n")
    return path


def test_pods_become_jobs(tmp_path):
    w = read_openb(write(tmp_path))
    j = w.jobs
    assert j.id.tolist() == [9, 3, 7]  # by submit time; ids from the pod names
    assert j.submit.tolist() == [0, 50, 100] and j.run.tolist() == [1000, 20, 290]
    assert j.limit.tolist() == j.run.tolist()  # no estimates in the trace: the run time
    assert j.cores.tolist() == [88, 1, 6] and j.mem_gb.tolist() == [320.0, 1.0, 12.0]
    assert j.gres_count.tolist() == [8, 0, 1]  # the 460-milli share gets one whole GPU
    assert j.gres_label(0) == "gpu:V100M16|V100M32:8" and j.gres_label(1) == "" and j.gres_label(2) == "gpu:1"
    assert j.qos_priority.tolist() == pytest.approx([1 / 3, 0.0, 1.0])
    assert [j.class_names[c] for c in j.wclass] == ["Burstable", "BE", "LS"]
    assert w.skipped == {"never scheduled in the trace (phase Pending)": 1}
    assert w.adjusted == {SHARED_GPU: 1}
    assert set(w.recorded_wait) == {9, 3, 7} and min(w.recorded_wait.values()) >= 0  # scheduled - created


def test_node_list_is_the_site(tmp_path):
    site = read_openb(write(tmp_path)).site
    groups = {g.name: g for g in site.node_groups}
    assert {n: g.count for n, g in groups.items()} == {"cpu-c32-m256": 1, "t4x2-c104-m512": 1,
                                                      "v100m32x8-c96-m384": 2}
    v100 = groups["v100m32x8-c96-m384"]
    assert (v100.cpu.cores, v100.memory_gb, v100.gres) == (96, 384, (("gpu", "V100M32", 8),))
    assert [p.name for p in site.partitions] == ["openb"]


def test_auto_detected_and_machine_from_node_list(tmp_path):
    path = write(tmp_path)
    assert load_workload(str(path)).jobs.id.tolist() == [9, 3, 7]
    p = prepare(str(path))
    assert p.site.name == "openb" and p.machine.nodes == 4
    assert p.machine.gres_keys == (("gpu", "T4"), ("gpu", "V100M32"))


def test_gpu_type_alternatives_restrict_placement(tmp_path):
    """Two 8-GPU pods that may only use V100M16/V100M32, three V100 nodes' worth of demand on two: the third
    waits for the first to end although the T4 node is free; an untyped 2-GPU pod takes the T4 node."""
    pods = [f"openb-pod-000{i},8000,1024,8,1000,V100M32|V100M16,LS,Succeeded,0,100,0" for i in range(3)]
    pods.append("openb-pod-0003,8000,1024,2,1000,,LS,Succeeded,0,100,0")
    row, out = simulate(prepare(str(write(tmp_path, pods=pods))), "fcfs")
    assert out.begin.tolist() == [0.0, 0.0, 100.0, 0.0] and row["unstarted"] == 0


def test_pod_bigger_than_its_gpu_type_is_reported(tmp_path):
    pods = ["openb-pod-0001,120000,737280,2,1000,T4,LS,Running,0,10,0", PODS[1]]
    path = write(tmp_path, pods=pods)
    with pytest.raises(UnfitJobsError, match=r"job 1: per node 120 cores.*gpu:T4:2"):
        prepare(str(path))
    p = prepare(str(path), drop_unfit=True)
    assert p.workload.dropped and p.workload.dropped[0][0] == 1 and p.workload.jobs.id.tolist() == [3]


@pytest.mark.parametrize("row,message", [
    ("openb-pod-0001,6x00,12288,1,460,,LS,Running,100,400,110", r"pods.csv:3: cpu_milli is not an integer"),
    ("openb-pod-0001,6000,12288,1,460,,LS,Running,100", r"pods.csv:3: 9 fields, want 11"),
    ("openb-pod-0001,6000,12288,1,460,,Gold,Running,100,400,110", r"pods.csv:3: unknown qos 'Gold'"),
    ("openb-pod-0001,6000,12288,1,0,,LS,Running,100,400,110", r"pods.csv:3: gpu_milli 0 with 1 GPU"),
    ("openb-pod-0001,6000,12288,0,0,T4,LS,Running,100,400,110", r"pods.csv:3: gpu_spec 'T4' on a pod with no GPU"),
    ("openb-pod-0001,6000,12288,1,1000,,LS,Running,100,400,90", r"pods.csv:3: times out of order"),
])
def test_bad_pod_rows_name_file_and_line(tmp_path, row, message):
    path = write(tmp_path, pods=[PODS[1], row], name="pods.csv")
    with pytest.raises(WorkloadError, match=message):
        read_openb(path)


def test_bad_node_list(tmp_path):
    path = write(tmp_path, nodes=["n0,96000,393216,8,"])
    with pytest.raises(WorkloadError, match=r"openb_node_list_all_node.csv:2: node n0 has 8 GPU\(s\) but no model"):
        read_openb(path)
    (tmp_path / "openb_node_list_all_node.csv").unlink()
    with pytest.raises(WorkloadError, match=r"openb_node_list_all_node.csv: no such file"):
        read_openb(path)


def test_other_csv_is_not_taken_for_openb(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text("name,cpu_milli\n")
    with pytest.raises(WorkloadError, match="jobs.csv"):
        load_workload(str(path))  # goes to the sacct -P reader, which names the file


def test_shared_traces(workloads):
    folder = workloads / "gpu" / "alibaba_gpu_v2023"
    default, spec33 = (prepare(str(folder / f"openb_pod_list_{n}.csv"), drop_unfit=True)
                       for n in ("default", "gpuspec33"))
    for p in (default, spec33):
        assert p.machine.nodes == 1523 and sum(g.count * sum(g.gres.values()) for g in p.machine.groups) == 6212
        assert len({t for _, t in p.machine.gres_keys}) == 7
        assert p.workload.skipped == {"never scheduled in the trace (phase Pending)": 897}
        assert p.workload.adjusted[SHARED_GPU] > 2000
    assert len(default.workload.jobs) == 7255 and not default.workload.dropped
    assert len(spec33.workload.jobs) + len(spec33.workload.dropped) == 7255
    assert np.count_nonzero(spec33.workload.jobs.gres_type >= 0) > 2000
