"""The SiteFactor scale a site's tiers and classes map to: one definition for admission, the live ranker and
the site file's bounds.

A job's band is ``tier.priority + CLASS_STEP x (classes below its class)``; its SiteFactor is ``band x
BAND_SPAN + level x LEVEL_STEP`` (:func:`band_site_factor`; admission sets level 0, the live ranker levels
0..RANK_LEVELS-1, and jobs past the age floor get band ``top_band + 1``). Every value must stay within
:data:`SITE_FACTOR_MAX`, the largest SiteFactor the job_submit shim accepts from the daemon
(``NUMBER_RANGE.site_factor`` in job_submit/job_submit.lua; Slurm itself keeps SiteFactor in a uint32 offset
by 2^31, so +-2.1e9).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .schema import Site

CLASS_STEP = 10
RANK_LEVELS = 40  # levels the live ranker orders jobs by inside one band
LEVEL_STEP = 100  # SiteFactor per level
BAND_SPAN = RANK_LEVELS * LEVEL_STEP  # SiteFactor per band unit
SITE_FACTOR_MAX = 1_000_000_000  # the shim refuses a larger site_factor (and the job then fails open)


def band_site_factor(band: int, level: int = 0, level_step: int = LEVEL_STEP) -> int:
    """The SiteFactor of a job in ``band`` at ``level`` (0 = admission's value before any ranking)."""
    return int(band) * RANK_LEVELS * level_step + int(level) * level_step


def top_band(site: Site) -> int:
    """The highest band admission can give on ``site`` (top tier, first class)."""
    policy = site.policy
    return (max([t.priority for t in policy.qos_tiers] or [0])
            + CLASS_STEP * max(len(policy.workload_classes) - 1, 0))


def highest_site_factor(site: Site) -> int:
    """The largest SiteFactor the suite sets on ``site``: the age floor band (``top_band + 1``) with one band
    of room for the hours waited."""
    return band_site_factor(top_band(site) + 2)
