"""The cycle's active policy file, re-read when its content changes (a re-tune, or a rollback by the guard).

:class:`ActivePolicy` gives the cycle its config and ranker for the file's current content, with the live guard
(:class:`~.guard.GuardStep`) watching that content. A file that turns bad while the cycle runs (a hand edit
with a typo) is reported and the last good policy keeps running; a bad file at start is an error.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from pathlib import Path

from ..policy import PolicyError, load_policy
from ..decision.policy_file import content_sha256
from .decide import CycleConfig
from .guard import GuardOptions, GuardStep
from .steps import Ranker

log = logging.getLogger(__name__)


class ActivePolicy:
    """``refresh()`` -> (config, ranker) for the policy file at ``path`` as it is now."""

    def __init__(self, path: str | Path, options: GuardOptions = GuardOptions(), slurm_conf: str | None = None,
                 groups: Mapping[str, int] | None = None):
        # groups: the site's node group -> size, what the policy's capacity plan is checked against
        self.path, self.options, self.slurm_conf, self.groups = Path(path), options, slurm_conf, groups
        self.sha256 = ""
        self.built: tuple[CycleConfig, Ranker | None] | None = None

    def refresh(self) -> tuple[CycleConfig, Ranker | None]:
        """The config and ranker of the file's current content (rebuilt only when the content changed).
        Raises PolicyError if the file cannot be read or is not a policy and no earlier content was good."""
        from .policy import cycle_config, live_ranker

        try:
            sha = content_sha256(self.path.read_bytes())
            if sha == self.sha256 and self.built is not None:
                return self.built
            spec = load_policy(self.path)
            config = cycle_config(spec, self.groups)  # reads (and checks) the capacity plan the policy names
        except (OSError, PolicyError) as err:
            if self.built is None:
                raise PolicyError(str(self.path), str(err)) if isinstance(err, OSError) else err from None
            log.error("policy file %s unusable, the last good policy keeps running: %s", self.path, err)
            return self.built
        guard = GuardStep(str(self.path), sha, spec.twin, self.options)
        self.built = (dataclasses.replace(config, guard=guard), live_ranker(spec.ranking, self.slurm_conf))
        if self.sha256:
            log.warning("policy file %s changed (sha256 %s -> %s): running it now", self.path, self.sha256[:12],
                        sha[:12])
        self.sha256 = sha
        return self.built
