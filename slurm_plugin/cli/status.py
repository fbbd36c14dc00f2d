"""``hetsched status``: the whole pool on one screen - node groups by power state, the pending queue per
class and tier, the cycle's last run with the ranking in use (the cycle loop's metrics) and the admission
daemon's health (its metrics endpoint answering).

Read-only: it runs Slurm's read commands, reads the cycle's state file and scrapes the daemon's endpoint; a
part that cannot be read is shown as such and the others still are. Exit 0 when Slurm and the daemon
answer, 1 otherwise (so scripts and checks can use it).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..cycle.state import parse_cycle_state
from .common import emit_json, handle_errors, site_arguments, site_from
from .output import json_option

if TYPE_CHECKING:
    from ..site import Site

DEFAULT_STATE_DIR = "/var/lib/hetsched"
SCRAPE_TIMEOUT_S = 2.0


def last_cycle(state_dir: Path, now: float) -> dict:
    """The cycle's counters from ``cycle-state.json`` (never moved or rewritten here)."""
    path = state_dir / "cycle-state.json"
    try:
        state = parse_cycle_state(json.loads(path.read_bytes()))
    except FileNotFoundError:
        return {"state_file": str(path), "error": "no cycle has run (no state file)"}
    except (OSError, ValueError, TypeError) as err:
        return {"state_file": str(path), "error": f"unreadable: {err}"}
    return {"state_file": str(path), "cycles": state.cycles, "failures": state.failures,
            "consecutive_failures": state.consecutive_failures, "last_ok_t": state.last_ok_t,
            "last_ok_age_s": None if state.last_ok_t is None else round(now - state.last_ok_t, 1),
            "last_error": state.last_error}


def _scrape(url: str) -> list | str:
    """The samples at ``url`` (Prometheus text), or why there are none."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_S) as reply:
            text = reply.read().decode()
    except (OSError, urllib.error.URLError) as err:
        return f"no answer: {getattr(err, 'reason', err)}"
    try:
        return [s for fam in text_string_to_metric_families(text) for s in fam.samples]
    except ValueError as err:
        return f"not Prometheus text: {err}"


def daemon_health(url: str | None) -> dict:
    """Scrape ``url``: healthy when it answers with the daemon's series; its request counts and snapshot age."""
    if url is None:
        return {"metrics_url": None, "healthy": False, "error": "metrics are off in the daemon's config"}
    samples = _scrape(url)
    if isinstance(samples, str):
        return {"metrics_url": url, "healthy": False, "error": samples}
    requests, age = {}, None
    for s in samples:
        if s.name == "hetsched_admission_requests_total":
            requests[s.labels["decision"]] = int(s.value)
        elif s.name == "hetsched_admission_snapshot_age_seconds":
            age = None if s.value != s.value else round(s.value, 1)  # NaN: no snapshot yet
    if not requests:
        return {"metrics_url": url, "healthy": False, "error": "answers, but not with the daemon's series"}
    return {"metrics_url": url, "healthy": True, "requests": requests, "snapshot_age_s": age}


def ranking_in_use(url: str | None) -> dict:
    """The ranking the running cycle used last (``hetsched_cycle_ranking`` at its endpoint ``url``), e.g.
    ``rank:dqn`` or ``rank:fallback-multifactor``; None with the reason when the endpoint does not say."""
    if url is None:
        return {"cycle_metrics_url": None, "ranking": None}
    samples = _scrape(url)
    if isinstance(samples, str):
        return {"cycle_metrics_url": url, "ranking": None, "ranking_error": samples}
    used = [s.labels["source"] for s in samples if s.name == "hetsched_cycle_ranking" and s.value == 1]
    return {"cycle_metrics_url": url, "ranking": used[0] if used else None,
            **({} if used else {"ranking_error": "no cycle has ranked since the loop started"})}


def _text(doc: dict) -> None:
    slurm = doc["slurm"]
    click.echo(f"hetsched status of {doc['site']}  ({slurm.get('error') or 'Slurm ' + slurm['version']})")
    click.echo("\nnode groups:")
    for g in doc["node_groups"]:
        states = ", ".join(f"{n} {s}" for s, n in g["power"].items()) or "-"
        click.echo(f"  {g['group']:<16} {g['nodes']:>5} nodes  {g['watts']:>9.0f} W  {states}")
    click.echo("\npending (class / tier):")
    for q in doc["pending"] or [{"class": "none", "tier": "", "pending": 0, "oldest_wait_s": 0}]:
        click.echo(f"  {q['class']:<12} {q['tier']:<10} {q['pending']:>6} jobs  oldest {q['oldest_wait_s']} s")
    c = doc["cycle"]
    click.echo("\ncycle: " + (c["error"] if "error" in c else
                             f"{c['cycles']} run, last ok {c['last_ok_age_s']} s ago, "
                             f"{c['consecutive_failures']} failing in a row"
                             + (f" (last error: {c['last_error']})" if c["consecutive_failures"] else "")))
    if c.get("cycle_metrics_url"):
        click.echo(f"ranking: {c['ranking'] or 'unknown (' + c.get('ranking_error', '') + ')'} "
                   f"(from {c['cycle_metrics_url']})")
    d = doc["daemon"]
    if d["healthy"]:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(d["requests"].items()))
        click.echo(f"daemon: ok at {d['metrics_url']} ({counts}; snapshot {d['snapshot_age_s']} s old)")
    else:
        click.echo(f"daemon: NOT OK at {d['metrics_url']}: {d['error']}")


@click.command()
@site_arguments
@click.option("--slurm-conf", envvar="SLURM_CONF", help="slurm.conf of the cluster (default: $SLURM_CONF).")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_STATE_DIR,
              show_default=True, help="The cycle's state directory (its cycle-state.json).")
@click.option("--daemon-config", type=click.Path(exists=True, dir_okay=False),
              help="The daemon's settings file, for its metrics address (default: 127.0.0.1:9817).")
@click.option("--metrics-url", help="The daemon's scrape URL (overrides --daemon-config).")
@click.option("--cycle-metrics-url", default="http://127.0.0.1:9818/metrics", show_default=True,
              help="The scrape URL of 'hetsched cycle run' (the ranking in use); 'off' for none.")
@click.option("--watch", type=click.FloatRange(min=0.5), metavar="SECONDS",
              help="Redraw every SECONDS until interrupted (text only).")
@json_option
@handle_errors()
def status(site, site_option, slurm_conf, state_dir, daemon_config, metrics_url, cycle_metrics_url, watch,
           as_json) -> None:
    """One screen for the whole pool: node groups, power states, queue, last cycle, daemon health."""
    from ..daemon.config import DaemonConfig
    from ..site import load_site

    site_path = site_from(site, site_option)
    site_model = load_site(site_path)
    url = metrics_url or DaemonConfig.load(daemon_config).metrics.url
    cycle_url = None if cycle_metrics_url.strip().lower() in ("", "off") else cycle_metrics_url
    if watch and not as_json:
        try:
            while True:
                doc = _collect(site_path, site_model, slurm_conf, state_dir, url, cycle_url)
                click.clear()
                _text(doc)
                time.sleep(watch)
        except KeyboardInterrupt:
            return
    doc = _collect(site_path, site_model, slurm_conf, state_dir, url, cycle_url)
    emit_json(doc) if as_json else _text(doc)
    if "error" in doc["slurm"] or not doc["daemon"]["healthy"]:
        raise SystemExit(1)


def _collect(site_path: str, site_model: Site, slurm_conf: str | None, state_dir: Path, url: str | None,
             cycle_url: str | None = None) -> dict:
    """Everything ``status`` shows, as one JSON-ready document."""
    from ..daemon.pool import node_groups, pending_queue
    from ..slurm import SlurmClient, SlurmError
    from ..snapshot import Snapshot, collect_snapshot

    now = time.time()
    try:
        client = SlurmClient(slurm_conf)
        snap = collect_snapshot(client)
        slurm = {"version": str(client.version)}
    except (SlurmError, OSError) as err:
        snap, slurm = Snapshot.empty(), {"error": f"Slurm did not answer: {err}"}
    return {"site": site_path, "slurm": slurm, "metrics_url": url, "node_groups": node_groups(site_model, snap),
            "pending": pending_queue(site_model, snap, now),
            "cycle": {**last_cycle(state_dir, now), **ranking_in_use(cycle_url)},
            "daemon": daemon_health(url), "t": now}
