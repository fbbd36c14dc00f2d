"""The ``hetsched`` admin command. Each command group lives in its own module, registered in ``GROUPS``.

Groups are imported only when one of their commands runs (:class:`~.lazy.LazyGroup`): ``hetsched --help``
and ``hetsched power ...`` (which slurmctld runs on every power event) stay cheap to start.
"""

from __future__ import annotations

import click

from .. import __version__
from .lazy import LazyCommand, LazyGroup

# name -> (module under slurm_plugin.cli:attribute, the group's one-line help): every command group, in one place.
# The help is what `hetsched --help` lists without importing the group; tests/unit/cli/test_lazy.py says when a
# group's docstring changed and this copy must follow.
GROUPS: dict[str, LazyCommand] = {
    "conf": LazyCommand(".conf:conf",
                        "Validate site files and merge the suite's slurm.conf / gres.conf parts into a site's config."),
    "cluster": LazyCommand(".cluster:cluster",
                           "Run a real Slurm cluster (slurmctld + one slurmd per node) on this host."),
    "accounting": LazyCommand(".accounting:accounting",
                              "Slurm accounting (slurmdbd) from the site file: QOS tiers, class accounts, users."),
    "sla": LazyCommand(".sla:sla", "SLA attainment per QoS tier (the site file's target_pct and max_wait) from "
                                   "Slurm accounting."),
    "power": LazyCommand(".power:power", "Power nodes up/down through their BMCs (what Slurm's power-save programs "
                                         "run, with a hostlist)."),
    "sim": LazyCommand(".sim:sim", "Discrete-event simulation of a Slurm cluster: baselines, metrics, plots."),
    "daemon": LazyCommand(".daemon:daemon", "Run or query the admission daemon (see daemon/hetsched.yaml)."),
    "why": LazyCommand(".why:why",
                       "Explain where a job or node is and which of the suite's decisions put it there."),
    "bench": LazyCommand(".bench:bench", "Measure the suite: submit path, packing, simulator, ranking, CLI start-up."),
    "scale": LazyCommand(".scale:scale", "Follow demand and the calendar: power nodes up/down, reshape partitions."),
    "cycle": LazyCommand(".cycle:cycle",
                         "Steer the cluster: priority bands, job moves, partition reshaping, node power."),
    "rank": LazyCommand(".rank:rank", "Learned job ranking (DQN over 8 priority bands): train, evaluate."),
    "tune": LazyCommand(".tune:tune",
                        "Choose the ranking by replaying the site's history (the twin); write it as a policy file."),
    "health": LazyCommand(".health:health", "Node health: fault signatures (NVIDIA, AMD, Intel, Ascend, NICs, "
                                             "CPU/memory, PCIe, NVMe, BMC) and checks."),
    "hw": LazyCommand(".hw:hw", "Vendor hardware profiles: BIOS settings per node model through Redfish (apply, "
                                "audit drift)."),
    "status": LazyCommand(".status:status",
                          "One screen for the whole pool: node groups, power states, queue, last cycle, daemon health."),
    "decisions": LazyCommand(".decisions:decisions",
                             "List the cycle's decisions (oldest first): time, outcome, kind, cause, target and "
                             "reason; --json adds each one's full record with the inputs it was made from."),
    "dag": LazyCommand(".dag:dag", "Workflows as requirement graphs: split into parallel units, matched to node "
                                   "classes, run on Slurm."),
    "cost": LazyCommand(".cost:cost", "Cost and performance: hourly capacity plan, Pareto front, cost reports, "
                                      "scenario comparisons."),
    "deploy": LazyCommand(".deploy:deploy", "Containers (images, bundle cache, oci.conf), isolated sensitive work "
                                            "(audit, power cycle)."),
    "fn": LazyCommand(".fn:fn", "Serverless functions on warm pilot jobs: deploy, invoke, serve the HTTP gateway."),
    "submit": LazyCommand(".submit:submit", "Submit SCRIPT with the sbatch options an intent derives (class, GPUs, "
                                            "types, array, begin, deadline, time limit, cost bound), checked "
                                            "against the site and the cost plan first; refused with the reason "
                                            "(exit 1) when it cannot be met, exit 2 on a parse error (the column "
                                            "is named)."),
    "completion": LazyCommand(".docs:completion", "Print the shell completion script for SHELL."),
    "man": LazyCommand(".docs:man", "Write the man pages (troff) into DIRECTORY."),
}


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from ..data import import_root

    click.echo(f"hetsched, version {__version__}\npackage: {import_root() / 'slurm_plugin'}")
    ctx.exit()


@click.group(cls=LazyGroup, lazy=GROUPS, package=__name__,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and where the package (code and data) is installed, then exit.")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
@click.option("--log-format", type=click.Choice(["auto", "text", "journal", "json"]), default="auto",
              envvar="HETSCHED_LOG_FORMAT", show_default=True,
              help="Log lines as text, for journald (priority prefix, no timestamp; auto when run by systemd) or "
                   "as JSON objects with the structured fields (node, job, action, cause, status, reason).")
def main(verbose: int, log_format: str) -> None:
    """slurm-hetsched: one elastic Slurm pool out of ARM, x86 and accelerator nodes."""
    import logging  # here, not at the top: `hetsched --help` exits before this runs and need not import it

    from .logs import configure

    configure(logging.WARNING - 10 * min(verbose, 2), log_format)
