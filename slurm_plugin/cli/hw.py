"""Vendor hardware profiles: apply a node group's BIOS profile through Redfish, audit for drift."""

from __future__ import annotations

import json
import sys

import click

from .common import site_from

_site = click.option("--site", "site_option", metavar="SITE", help="Site file (default $HETSCHED_SITE, then /etc/hetsched/site.yaml).")


@click.group()
def hw() -> None:
    """Vendor hardware profiles: BIOS settings per node model through Redfish (apply, audit drift)."""


def _setup(site_path, hostlist):
    import hostlist as hl

    from ..hw.bios import RedfishBios
    from ..hw.profiles import ProfileError, profiles_of
    from ..power.redfish import targets_from_site
    from ..site import load_site

    site = load_site(site_path)
    hosts = hl.expand_hostlist(hostlist) if hostlist else None
    try:
        profiles = profiles_of(site, hosts)
    except ProfileError as exc:
        raise click.UsageError(str(exc)) from None
    return RedfishBios(targets_from_site(site, list(profiles))), profiles


def _rows(bios, profiles, apply: bool) -> list[dict]:
    from ..hw.profiles import changes, compare
    from ..power.base import PowerError

    rows = []
    for node, prof in sorted(profiles.items()):
        try:
            current, pending = bios.read(node)
            patch = changes(prof, current, pending)
            if apply and patch:
                bios.patch(node, patch)
                current, pending = bios.read(node)  # read back: the BMC must now hold them as pending
            settings = compare(prof, current, pending)
            rows.append({"node": node, "profile": prof.name, "patched": patch if apply else {},
                         "settings": [s.__dict__ for s in settings],
                         "drift": [s.attribute for s in settings if s.state == "drift"],
                         "pending": [s.attribute for s in settings if s.state == "pending"], "error": ""})
        except PowerError as exc:
            rows.append({"node": node, "profile": prof.name, "patched": {}, "settings": [], "drift": [],
                         "pending": [], "error": str(exc)})
    return rows


def _report(rows: list[dict], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"nodes": rows}, indent=1))
    else:
        for r in rows:
            state = r["error"] or ("drift: " + ", ".join(r["drift"]) if r["drift"] else
                                   "pending reboot: " + ", ".join(r["pending"]) if r["pending"] else "ok")
            click.echo(f"{r['node']:<16} {r['profile']:<24} {state}")


@hw.command()
@_site
@click.argument("hostlist", required=False)
@click.option("--json", "as_json", is_flag=True)
def audit(site_option: str | None, hostlist: str | None, as_json: bool) -> None:
    """Compare each node's BIOS (current and pending) with its group's profile; exit 1 on drift or error."""
    bios, profiles = _setup(site_from(None, site_option), hostlist)
    rows = _rows(bios, profiles, apply=False)
    _report(rows, as_json)
    if any(r["drift"] or r["error"] for r in rows):
        sys.exit(1)


@hw.command()
@_site
@click.argument("hostlist", required=False)
@click.option("--json", "as_json", is_flag=True)
def apply(site_option: str | None, hostlist: str | None, as_json: bool) -> None:
    """PATCH what differs from the profile into each node's BIOS settings (applied at its next reboot), then read
    them back; exit 1 if a node still drifts or failed."""
    bios, profiles = _setup(site_from(None, site_option), hostlist)
    rows = _rows(bios, profiles, apply=True)
    _report(rows, as_json)
    if any(r["drift"] or r["error"] for r in rows):
        sys.exit(1)
