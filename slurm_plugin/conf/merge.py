"""Merge the suite's config into a site's own: ``Include``d fragments, switched as one set.

In the site's config directory DIR (e.g. ``/etc/slurm``)::

    DIR/hetsched -> hetsched.d/<stamp>   the current set (a symlink, switched by one rename)
    DIR/hetsched.d/<stamp>/              nodes.conf partitions.conf power.conf job_submit.conf gres.conf
                                         hetsched-shim.json job_submit.lua resume suspend resume-fail
    DIR/slurm.conf, DIR/gres.conf        the site's own files; each gets one managed block of Include lines
    DIR/hetsched-shim.json, DIR/job_submit.lua -> hetsched/...   (slurmctld loads the shim from DIR)

The site's own settings (ClusterName, accounting, priority weights...) are never rewritten: a setting the
site makes that a fragment also makes is a conflict, reported with file:line, and nothing is written. A new set
is written completely into a fresh directory before the symlink moves, so a crash at any point leaves the old
set or the new one, never a mix; gres.conf gets its Include before slurm.conf (a gres.conf line for a node
slurm.conf does not know yet is harmless, the reverse is not). Any file replaced is first copied to
``NAME.hetsched-<stamp>.bak``; the previous sets stay in ``hetsched.d/`` (the last :data:`KEEP`).
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import hostlist

from ..data import data_file
from ..fsio import fsync_dir, write_file_atomic
from ..site import Site
from .programs import power_programs
from .render import GRES_FRAGMENT, SHIM_CONFIG, SLURM_FRAGMENTS, DeployPaths, conf_value, render_base, render_fragments

LINK, SETS = "hetsched", "hetsched.d"
KEEP = 5
BEGIN = "# BEGIN hetsched: Include lines managed by `hetsched conf render`; the rest of this file is the site's own"
END = "# END hetsched"
JOB_SUBMIT_LUA = data_file("job_submit", "job_submit.lua")
# Keys that may appear many times (one line per node or partition): compared by the names they define.
_NAMED = ("nodename", "partitionname")


class MergeError(ValueError):
    """The suite's parts cannot be merged into this directory; the message names every problem (file:line)."""


@dataclass
class MergePlan:
    """What :func:`apply_merge` would do in ``out_dir`` (built by :func:`plan_merge`, which writes nothing)."""

    out_dir: Path
    set_files: dict[str, str]
    executables: set[str]
    edits: dict[str, str]  # DIR-level files -> new text (only the changed ones)
    links: dict[str, str]  # DIR-level symlinks -> target
    unlink: list[str] = field(default_factory=list)  # DIR-level symlinks of the suite no longer wanted
    current: dict[str, str | None] = field(default_factory=dict)  # "hetsched/<name>" or "<name>" -> text now

    @property
    def set_changed(self) -> bool:
        now = {k.removeprefix(f"{LINK}/"): v for k, v in self.current.items() if k.startswith(f"{LINK}/")}
        return {n: t for n, t in now.items() if t is not None} != self.set_files


def include_block(lines: list[str]) -> str:
    return "\n".join([BEGIN, *lines, END]) + "\n"


def with_block(text: str, block: str) -> str:
    """``text`` with its managed block replaced by ``block``, or ``block`` appended after a blank line."""
    pattern = re.compile(rf"^{re.escape(BEGIN)}\n.*?^{re.escape(END)}\n?", re.S | re.M)
    if pattern.search(text):
        return pattern.sub(lambda _: block, text, count=1)
    return text + ("" if text.endswith("\n") or not text else "\n") + ("\n" if text.strip() else "") + block


def _settings(text: str) -> list[tuple[int, str, str]]:
    """(line number, key as written, value) of each ``Key=Value`` line outside the managed block."""
    out, inside = [], False
    for no, raw in enumerate(text.splitlines(), 1):
        if raw.startswith(BEGIN):
            inside = True
        if inside:
            inside = not raw.startswith(END)
            continue
        line = re.split(r"(?<!\\)#", raw, maxsplit=1)[0].strip()
        key, eq, value = line.partition("=")
        if eq and key.strip() and " " not in key.strip():
            out.append((no, key.strip(), value.split()[0].strip('"') if value.split() else ""))
    return out


def _names(key: str, value: str) -> set[str]:
    if value.upper() == "DEFAULT":
        return set()
    if key == "nodename":
        try:
            return set(hostlist.expand_hostlist(value))
        except hostlist.BadHostlist:
            return {value}
    return {value}


def conflicts(path: Path, text: str, fragments: dict[str, str]) -> list[str]:
    """Settings in the site's ``text`` (file ``path``) that a fragment also sets: ``path:line: ...`` each."""
    ours: dict[str, str] = {}
    names: dict[tuple[str, str], str] = {}
    for frag, body in fragments.items():
        for _, written, value in _settings(body):
            key = written.lower()
            if key in _NAMED:
                names.update({(key, n): frag for n in _names(key, value)})
            else:
                ours[key] = frag
    problems = []
    for no, written, value in _settings(text):
        key = written.lower()
        if key in _NAMED:
            clash = sorted(n for n in _names(key, value) if (key, n) in names)
            if clash:
                problems.append(f"{path}:{no}: {written} {','.join(clash[:3])} is also defined in the suite's "
                                f"{names[(key, clash[0])]}: remove it from {path.name} or from the site file")
        elif key in ours:
            hint = " (or render with --no-job-submit)" if key == "jobsubmitplugins" else ""
            problems.append(f"{path}:{no}: {written} is set here and in the suite's {ours[key]}: remove it from "
                            f"{path.name}, the suite owns it{hint}")
    return problems


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def plan_merge(site: Site, site_path: str | Path, out_dir: str | Path, socket: str, job_submit: bool = True,
               python: str | None = None, power_log: str | None = None) -> MergePlan:
    """Render the suite's set for ``out_dir`` and work out every change; writes nothing.

    Raises :class:`MergeError` naming each conflict with the site's own slurm.conf/gres.conf, or a path the
    suite would have to overwrite that is not its own (a real ``hetsched`` directory, the site's own
    job_submit.lua)."""
    out = Path(out_dir).resolve()
    link = out / LINK
    conf_value(str(link))  # a directory slurm.conf cannot name is refused before anything else
    layout = DeployPaths(etc=str(out), resume_program=f"{link}/resume", suspend_program=f"{link}/suspend",
                         resume_fail_program=f"{link}/resume-fail", daemon_socket=socket, job_submit=job_submit)
    files = render_fragments(site, layout, sets_dir=f"{out}/{SETS}")
    args = ["--site", str(Path(site_path).resolve()), "--slurm-conf", str(out / "slurm.conf")]
    programs = power_programs([*args, "--log-file", power_log] if power_log else args, python=python)
    files.update(programs)
    links = {SHIM_CONFIG: f"{LINK}/{SHIM_CONFIG}"}
    if job_submit:
        files["job_submit.lua"] = JOB_SUBMIT_LUA.read_text()
        links["job_submit.lua"] = f"{LINK}/job_submit.lua"
    problems = []
    if link.exists() and not link.is_symlink():
        problems.append(f"{link} is a real directory or file, not the suite's symlink: move it away first")
    lua = out / "job_submit.lua"
    if job_submit and lua.exists() and not lua.is_symlink():
        problems.append(f"{lua} is the site's own job_submit script: the suite's shim cannot replace it (merge "
                        "the two scripts by hand, or render with --no-job-submit)")
    old_set = sorted(p.name for p in link.iterdir()) if link.is_dir() else []
    current: dict[str, str | None] = {f"{LINK}/{n}": _read(link / n) for n in [*files, *old_set]}
    unlink = [n for n in ("job_submit.lua",) if n not in links and (out / n).is_symlink()
              and os.readlink(out / n) == f"{LINK}/{n}"]
    edits = {}
    slurm_block = include_block([f"Include {conf_value(f'{link}/{n}')}" for n in SLURM_FRAGMENTS])
    gres_block = include_block([f"Include {conf_value(f'{link}/{GRES_FRAGMENT}')}"])
    for name, block, frags in (("gres.conf", gres_block, {GRES_FRAGMENT: files[GRES_FRAGMENT]}),
                               ("slurm.conf", slurm_block, {n: files[n] for n in SLURM_FRAGMENTS})):
        text = current[name] = _read(out / name)
        if text is None:
            new = (render_base(site, layout, block) if name == "slurm.conf" else
                   f"# gres.conf of site '{site.name}': the site's own lines go here; the suite's come from "
                   f"the Include.\n{block}")
        else:
            problems += conflicts(out / name, text, frags)
            new = with_block(text, block)
        if new != text:
            edits[name] = new
    for name in [*links, *unlink]:
        current[name] = f"-> {os.readlink(out / name)}\n" if (out / name).is_symlink() else _read(out / name)
    if problems:
        raise MergeError(f"cannot merge the suite's config into {out}:\n" + "\n".join(problems))
    return MergePlan(out, files, set(programs), edits, links, unlink, current)


def render_diff(plan: MergePlan) -> str:
    """A unified diff of every file :func:`apply_merge` would change (empty when nothing would)."""
    out = []
    new: dict[str, str | None] = {k: None for k in plan.current if k.startswith(f"{LINK}/")}
    new |= {f"{LINK}/{n}": t for n, t in plan.set_files.items()} | plan.edits
    new |= {n: f"-> {t}\n" for n, t in plan.links.items()} | {n: None for n in plan.unlink}
    for name, text in new.items():
        old = plan.current.get(name)
        if old == text:
            continue
        out += difflib.unified_diff((old or "").splitlines(keepends=True), (text or "").splitlines(keepends=True),
                                    f"a/{name}" if old is not None else "/dev/null",
                                    f"b/{name}" if text is not None else "/dev/null")
    return "".join(line if line.endswith("\n") else line + "\n" for line in out)


def _fault(point: str) -> None:
    """Crash here if ``HETSCHED_FAULT=conf-render:<point>`` (chaos tests kill a render between switches)."""
    if os.environ.get("HETSCHED_FAULT") == f"conf-render:{point}":
        os.kill(os.getpid(), signal.SIGKILL)


def _backup(path: Path, stamp: str) -> Path | None:
    if not path.exists() or path.is_symlink():
        return None
    bak = path.with_name(f"{path.name}.hetsched-{stamp}.bak")
    write_file_atomic(bak, path.read_bytes(), mode=path.stat().st_mode & 0o777)
    return bak


def _write_set(sets: Path, stamp: str, plan: MergePlan) -> Path:
    """The whole set in ``sets/.new-<stamp>``, fsynced, then renamed to ``sets/<stamp>``."""
    tmp = sets / f".new-{stamp}"
    tmp.mkdir(parents=True)
    for name, text in plan.set_files.items():
        path = tmp / name
        with open(path, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        path.chmod(0o755 if name in plan.executables else 0o644)
        _fault("set-partial")
    fsync_dir(tmp)
    final = sets / stamp
    os.rename(tmp, final)
    fsync_dir(sets)
    return final


def _switch_link(directory: Path, name: str, target: str) -> None:
    """Point ``directory/name`` at ``target`` with one rename (a reader sees the old link or the new one)."""
    tmp = directory / f".{name}.link-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    os.symlink(target, tmp)
    os.replace(tmp, directory / name)
    fsync_dir(directory)


def _clean(out: Path, sets: Path, keep: int) -> None:
    """Remove what a crashed render left (``.new-*`` sets, temporary links, a set newer than the current one
    that was never switched to) and sets older than the last ``keep`` (never the current one)."""
    for leftover in [*sets.glob(".new-*"), *out.glob(".*.link-*")]:
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover)
        else:
            leftover.unlink(missing_ok=True)
    current = (out / LINK).resolve() if (out / LINK).is_symlink() else None
    old = sorted((p for p in sets.iterdir() if p.is_dir() and not p.name.startswith(".")), key=lambda p: p.name)
    orphans = [p for p in old if current is not None and p.name > current.name]
    for path in [*orphans, *(old[:-keep] if keep else old)]:
        if path.resolve() != current and path.exists():
            shutil.rmtree(path)


def apply_merge(plan: MergePlan, keep: int = KEEP) -> list[str]:
    """Carry out ``plan``: returns one line per change (``switched``, ``backed up``, ``updated``)."""
    out, sets = plan.out_dir, plan.out_dir / SETS
    sets.mkdir(parents=True, exist_ok=True)
    _clean(out, sets, keep)
    stamp = time.strftime("%Y%m%dT%H%M%S") + f"-{time.time_ns() % 10**9:09d}"
    done = []
    if plan.set_changed:
        final = _write_set(sets, stamp, plan)
        _fault("set-written")
        _switch_link(out, LINK, f"{SETS}/{final.name}")
        done.append(f"switched {out / LINK} -> {SETS}/{final.name}")
        _fault("switched")
    for name in ("gres.conf", "slurm.conf"):  # gres.conf first: see the module docstring
        if name in plan.edits:
            if bak := _backup(out / name, stamp):
                done.append(f"backed up {out / name} to {bak.name}")
            mode = (out / name).stat().st_mode & 0o777 if (out / name).exists() else 0o644
            write_file_atomic(out / name, plan.edits[name], mode=mode)
            done.append(f"updated {out / name} (Include block)")
            _fault(f"{name}-written")
    for name, target in plan.links.items():
        path = out / name
        if path.is_symlink() and os.readlink(path) == target:
            continue
        if bak := _backup(path, stamp):
            done.append(f"backed up {path} to {bak.name}")
        _switch_link(out, name, target)
        done.append(f"linked {path} -> {target}")
    for name in plan.unlink:
        (out / name).unlink()
        done.append(f"removed {out / name} (the suite's link; --no-job-submit)")
    _clean(out, sets, keep)
    return done
