"""Builders for site-file tests: the demo site as data, changed by one mutation."""

from __future__ import annotations

import copy

import yaml

from slurm_plugin.site import SITE_CONFIGS

DEMO = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())


def mutate(fn) -> dict:
    """A deep copy of the demo site's data after ``fn(data)``."""
    data = copy.deepcopy(DEMO)
    fn(data)
    return data


def group(data, i=0):
    """Node group ``i`` of the first cluster."""
    return data["clusters"][0]["node_groups"][i]
