"""The generated compose.yaml against the Compose Specification, as Docker Compose reads it: parsed by the
``compose_spec`` library (a strict, spec-complete parser: unknown keys and wrong types are errors; the
``containers`` extra). There is no Docker engine on these machines, so this is the check that the file Docker
would get is valid; running it under Docker is not tested here. Needs no cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from compose_spec import PyCompose

from slurm_plugin.cluster import compose as cc
from slurm_plugin.cluster.containers import ContainerCluster
from slurm_plugin.site import load_site

pytestmark = pytest.mark.containers


def test_the_written_compose_file_is_valid_compose_spec(tmp_path):
    state = ContainerCluster(tmp_path).write("demo", "trixie", ["alice"])
    parsed = PyCompose.from_yaml((tmp_path / "compose.yaml").read_text())
    assert set(parsed.service_names()) == set(state["addrs"])


def test_a_member_clusters_file_is_valid_too():
    site = load_site("demo")
    host = cc.plan(site, Path("/a"), "bookworm", [])
    member = cc.plan(site, Path("/b"), "bookworm", [], member_of=host)
    parsed = PyCompose.from_yaml(cc.compose_text(cc.compose(site, member, {}, Path("/c"))))
    assert "dbd" not in parsed.service_names() and "ctl" in parsed.service_names()


def test_the_parser_refuses_what_docker_would():
    with pytest.raises(ValueError, match="ulimit"):
        PyCompose.from_yaml("services:\n  a:\n    image: x\n    ulimits: {nofile: {soft: 1}}\n")
