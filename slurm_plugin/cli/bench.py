"""``hetsched bench``: benchmarks (not tests): each writes a JSON result that names the machine and commit."""

from __future__ import annotations

import click

from .bench_pack import pack_cmd
from .bench_submit import submit_cmd
from .bench_rank import rank_cmd


@click.group()
def bench() -> None:
    """Measure the suite: submit path, packing, simulator, ranking."""


bench.add_command(pack_cmd)
bench.add_command(submit_cmd)
bench.add_command(rank_cmd)
