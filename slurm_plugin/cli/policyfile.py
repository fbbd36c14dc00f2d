"""``--policy-file F``: one policy (:class:`~slurm_plugin.policy.PolicySpec`) for ``cycle once|run`` and
``sim run``, several side by side for ``sim compare`` and ``scale eval``; a policy file replaces the
per-choice options, so giving both is an error."""

from __future__ import annotations

import click

policy_file_option = click.option(
    "--policy-file", type=click.Path(exists=True, dir_okay=False), default=None,
    help="Policy file (YAML/JSON: ranking, packing, scaling; README 'Policy files'); replaces the per-choice "
         "options, and `cycle` and `sim run` given one file run the same policy.")


policy_files_option = click.option(
    "--policy-file", "policy_files", type=click.Path(exists=True, dir_okay=False), multiple=True,
    help="Policy file (YAML/JSON; README 'Policy files'), built as `sim run --policy-file` builds it; repeat to "
         "compare several side by side (one row each, labelled by file name).")


def _refuse_replaced(replaced: tuple[str, ...]) -> None:
    ctx = click.get_current_context()
    given = [f"--{name.replace('_', '-')}" for name in replaced
             if ctx.get_parameter_source(name) not in (click.core.ParameterSource.DEFAULT, None)]
    if given:
        raise click.UsageError(f"--policy-file replaces {', '.join(given)}: give one or the other")


def _load(path: str):
    from ..policy import PolicyError, load_policy

    try:
        return load_policy(path)
    except PolicyError as err:
        raise click.BadParameter(str(err), param_hint="--policy-file") from None


def load_policy_file(path: str | None, replaced: tuple[str, ...]):
    """The spec in ``path`` (None without one). The options in ``replaced`` must not be given with it."""
    if path is None:
        return None
    _refuse_replaced(replaced)
    return _load(path)


def load_policy_files(paths: tuple[str, ...], replaced: tuple[str, ...]) -> list:
    """(label, spec) per file, every file checked before any runs; labels are the file names (the paths when
    two names are equal)."""
    if not paths:
        return []
    _refuse_replaced(replaced)
    from pathlib import Path

    names = [Path(p).name for p in paths]
    labels = names if len(set(names)) == len(names) else list(paths)
    return [(label, _load(path)) for label, path in zip(labels, paths)]
