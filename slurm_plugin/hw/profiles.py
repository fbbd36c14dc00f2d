"""Vendor profiles as data, and the pure comparison of what a profile wants with what a BMC reports."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

import yaml

from ..site import Site


class ProfileError(ValueError):
    """A profile file or name that cannot be used (names the file and entry)."""


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    source: str
    bios: Mapping[str, object]


@dataclass(frozen=True)
class Setting:
    """One BIOS attribute of one node: ``state`` is ``ok`` (current = wanted), ``pending`` (set, applied at the
    next reboot) or ``drift`` (neither)."""

    attribute: str
    want: object
    current: object
    pending: object
    state: str


def profile_dir() -> Path:
    return Path(str(files(__package__) / "profiles"))


@lru_cache(maxsize=4)
def load_profiles(directory: Path | None = None) -> dict[str, Profile]:
    out: dict[str, Profile] = {}
    for path in sorted((directory or profile_dir()).glob("*.yaml")):
        try:
            doc = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise ProfileError(f"{path.name}: not valid YAML: {exc}") from None
        if not isinstance(doc, dict) or doc.get("version") != 1 or not isinstance(doc.get("profiles"), list):
            raise ProfileError(f"{path.name}: needs version: 1 and a list of profiles")
        for i, raw in enumerate(doc["profiles"]):
            where = f"{path.name}: profiles[{i}]"
            if not isinstance(raw, dict) or not raw.get("name") or not isinstance(raw.get("bios"), dict):
                raise ProfileError(f"{where}: needs name and a bios mapping")
            if raw["name"] in out:
                raise ProfileError(f"{where}: profile {raw['name']!r} defined twice")
            src = raw.get("source") or {}
            out[raw["name"]] = Profile(raw["name"], str(raw.get("description", "")),
                                       f"{src.get('name', '')} ({src.get('url', '')})", dict(raw["bios"]))
    return out


def profiles_of(site: Site, hosts: list[str] | None = None) -> dict[str, Profile]:
    """Node -> its group's profile, for every node (of ``hosts``) whose group names one."""
    known = load_profiles()
    out = {}
    for g in site.node_groups:
        if not g.hw_profile:
            continue
        if g.hw_profile not in known:
            raise ProfileError(f"node group {g.name}: hw_profile {g.hw_profile!r} is not a profile "
                               f"(known: {', '.join(sorted(known))})")
        out.update({n: known[g.hw_profile] for n in g.hostnames if hosts is None or n in hosts})
    return out


def _same(a: object, b: object) -> bool:
    return str(a).strip().lower() == str(b).strip().lower()


def compare(profile: Profile, current: Mapping[str, object], pending: Mapping[str, object]) -> list[Setting]:
    """One :class:`Setting` per attribute of ``profile`` (pure)."""
    out = []
    for attr, want in profile.bios.items():
        cur, pend = current.get(attr), pending.get(attr, current.get(attr))
        state = "ok" if _same(cur, want) else "pending" if _same(pend, want) else "drift"
        out.append(Setting(attr, want, cur, pend, state))
    return out


def changes(profile: Profile, current: Mapping[str, object], pending: Mapping[str, object]) -> dict[str, object]:
    """The attributes to PATCH so the node reaches ``profile`` at its next reboot (only those not already set)."""
    return {s.attribute: s.want for s in compare(profile, current, pending) if s.state == "drift"}
