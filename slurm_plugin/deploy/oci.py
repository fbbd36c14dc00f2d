"""``oci.conf`` for the site's OCI runtime (runc or crun from Debian), and the run wrapper it names.

Slurm reads ``oci.conf`` beside ``slurm.conf`` at each step (no restart needed). Syntax per version (checked
against slurmstepd 22.05.8's strings and the 23.02+/24.11 man page): 22.05 knows ContainerPath, CreateEnvFile
(a boolean), RunTimeCreate/Start/Query/Kill/Delete and RunTimeRun ("RunTimeRun and RunTimeCreate/Start are
mutually exclusive; all other RunTime* must be set"); 23.02+ reads CreateEnvFile as null|newline|disabled and
adds RunTimeEnvExclude, EnvExclude, IgnoreFileConfigJson, scrun's settings. Patterns %b %j %n %s %t %u
exist in both. The container id ``%n.%u.%j.%s.%t`` is unique per task.

The wrapper (``<bin>/oci-run BUNDLE ID``, plain sh: the warm path must stay fast) reads the rootfs path Slurm
wrote into its per-step ``config.json``; when that rootfs is missing it runs ``hetsched deploy cache unpack``
on its bundle (locked, atomic: :mod:`.cache`), then execs ``<runtime> run``.
"""

from __future__ import annotations

import re
import subprocess

import jinja2

from ..data import data_dir

MODERN = (23, 2)


def slurm_version() -> tuple[int, int]:
    """The installed Slurm's (major, minor) from ``slurmd -V`` (needs no config); (22, 5) if unreadable."""
    try:
        out = subprocess.run(["slurmd", "-V"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return (22, 5)
    m = re.search(r"(\d+)\.(\d+)", out)
    return (int(m[1]), int(m[2])) if m else (22, 5)


def runtime_command(runtime: str, state_dir: str) -> str:
    """The runtime with its state root (``runc --root=DIR``); ``state_dir`` keeps containers of this cluster apart."""
    if runtime not in ("runc", "crun"):
        raise ValueError(f"deploy.runtime {runtime!r}: expected runc or crun")
    return f"{runtime} --root={state_dir}"


def render_oci_conf(site, wrapper: str, state_dir: str, version: tuple[int, int]) -> str:
    """oci.conf text for ``site`` (pure): the runtime of ``site.deploy``, the wrapper path, Slurm ``version``."""
    for what, path in (("wrapper", wrapper), ("state_dir", state_dir)):
        if not re.fullmatch(r"/[A-Za-z0-9_./@+-]*", path):
            raise ValueError(f"{what} {path!r} cannot be written into oci.conf (absolute path without spaces, "
                             "quotes, '%' or '#')")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(data_dir("gres_templates"))),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.get_template("oci.conf.j2").render(
        site=site, version=f"{version[0]}.{version[1]:02d}", runtime=site.deploy.runtime,
        rt=runtime_command(site.deploy.runtime, state_dir), wrapper=wrapper, modern=tuple(version) >= MODERN)


def run_wrapper(runtime: str, state_dir: str, unpack: str, vm_exec: str | None = None) -> str:
    """The text of the ``oci-run`` wrapper (sh). ``unpack``: shell text of the command that unpacks the bundle
    directory appended to it (``python3 -m slurm_plugin deploy cache unpack``, paths already quoted);
    ``vm_exec``: of the command that runs the step in the job's VM (given the per-step bundle and the
    container id), for a bundle marked ``vm.json`` (:mod:`.vm`)."""
    vm = (f"""if [ -n "$rootfs" ] && [ -f "${{rootfs%/rootfs}}/vm.json" ]; then
  exec env {vm_exec} "$bundle" "$id"
fi
""" if vm_exec else "")
    return f"""#!/bin/sh
# hetsched OCI run wrapper (generated): $1 = Slurm's per-step bundle, $2 = container id.
set -e
bundle="$1"; id="$2"
rootfs=$(tr -d ' \\n\\t' < "$bundle/config.json" | sed -n 's/.*"root":{{[^}}]*"path":"\\([^"]*\\)".*/\\1/p' | sed 's#\\\\/#/#g')
{vm}if [ -n "$rootfs" ] && [ ! -d "$rootfs" ] && [ -f "${{rootfs%/rootfs}}/image.json" ]; then
  {unpack} "${{rootfs%/rootfs}}" >&2
fi
exec {runtime_command(runtime, state_dir)} run "$id" -b "$bundle"
"""
