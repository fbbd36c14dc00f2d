"""``hetsched cost``: what the pool costs and what it buys (capacity plan, Pareto front, reports, comparisons).

Each subcommand imports its solver/simulator only when it runs.
"""

from __future__ import annotations

import click


@click.group()
def cost() -> None:
    """Cost and performance: hourly capacity plan, Pareto front, cost reports, scenario comparisons."""
