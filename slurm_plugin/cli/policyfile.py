"""``--policy-file F``: one policy (:class:`~slurm_plugin.policy.PolicySpec`) for ``cycle once|run`` and
``sim run``; a policy file replaces the per-choice options, so giving both is an error."""

from __future__ import annotations

import click

policy_file_option = click.option(
    "--policy-file", type=click.Path(exists=True, dir_okay=False), default=None,
    help="Policy file (YAML/JSON: ranking, packing, scaling; README 'Policy files'); replaces the per-choice "
         "options, and `cycle` and `sim run` given one file run the same policy.")


def load_policy_file(path: str | None, replaced: tuple[str, ...]):
    """The spec in ``path`` (None without one). The options in ``replaced`` must not be given with it."""
    if path is None:
        return None
    from ..policy import PolicyError, load_policy

    ctx = click.get_current_context()
    given = [f"--{name.replace('_', '-')}" for name in replaced
             if ctx.get_parameter_source(name) not in (click.core.ParameterSource.DEFAULT, None)]
    if given:
        raise click.UsageError(f"--policy-file replaces {', '.join(given)}: give one or the other")
    try:
        return load_policy(path)
    except PolicyError as err:
        raise click.BadParameter(str(err), param_hint="--policy-file") from None
