"""Pools and node classes derived from the demo site."""

from __future__ import annotations

import pytest

from slurm_plugin.pack import GroupState, Resources, classes_from_site
from slurm_plugin.site import load_site

SITE = load_site("demo")


def test_one_class_per_partition_and_group_with_arch_and_accel_features():
    _, classes = classes_from_site(SITE)
    by_name = {c.name: c for c in classes}
    assert len(classes) == sum(len(p.node_groups) for p in SITE.partitions)
    assert by_name["batch/cpu-arm"].features == ("aarch64",) and by_name["batch/cpu-arm"].pool == "cpu-arm"
    assert by_name["gpu/gpu-h100"].features == ("aarch64", "h100")
    assert by_name["npu/npu"].accel_type == "ascend910b"
    assert by_name["arm/cpu-arm"].pool == by_name["batch/cpu-arm"].pool  # two partitions, one capacity


@pytest.mark.parametrize("klass,workload,speed", [
    ("gpu/gpu-h100", "ai-training", 2.0), ("npu/npu", "ai-training", 0.8), ("batch/cpu-arm", "ai-training", 0.0),
    ("batch/cpu-arm", "web", 0.8), ("riscv/cpu-riscv", "video-render", 0.0), ("riscv/cpu-riscv", "web", 0.5),
    ("batch/cpu-x86", "batch", 1.0),
])
def test_speed_factors_come_from_the_workload_classes(klass, workload, speed):
    _, classes = classes_from_site(SITE)
    assert {c.name: c for c in classes}[klass].speed_for(workload) == speed


def test_pools_default_to_all_idle_and_take_the_given_state():
    pools, _ = classes_from_site(SITE)
    arm = {p.name: p for p in pools}["cpu-arm"]
    assert arm.free_now == Resources(3 * 64, 3 * 128, 0) and arm.down_nodes == 0
    assert arm.cost_per_hour == 0.55 and arm.boot_time_s == 60
    pools, _ = classes_from_site(SITE, {"gpu-a100": GroupState(free=Resources(8, 32, 1), down_nodes=1)})
    a100 = {p.name: p for p in pools}["gpu-a100"]
    assert a100.free_now == Resources(8, 32, 1) and a100.down_nodes == 1 and a100.per_node.accels == 4
