"""slurmctld's own RPC statistics (``sdiag``): what each message type and each user cost the controller."""

from __future__ import annotations

import re
from dataclasses import dataclass

# "REQUEST_JOB_INFO                        ( 2003) count:12     ave_time:1042   total_time:12504"; the same
# shape per user ("root            (       0) count:...") under "Remote Procedure Call statistics by user"
_LINE = re.compile(r"^\s*(\S+)\s*\(\s*(\d+)\)\s*count:(\d+)\s+ave_time:(\d+)\s+total_time:(\d+)", re.M)
_BY_USER = "Remote Procedure Call statistics by user"


@dataclass(frozen=True)
class RpcStat:
    """One message type's (or user's) count and times (µs) since slurmctld started or ``sdiag --reset``."""

    count: int
    ave_time_us: int
    total_time_us: int


def rpc_stats(text: str) -> tuple[dict[str, RpcStat], dict[str, RpcStat]]:
    """(by message type, by user) from ``sdiag``'s output; a section sdiag did not print is empty."""
    by_type, _, by_user = text.partition(_BY_USER)

    def table(part: str) -> dict[str, RpcStat]:
        return {m[1]: RpcStat(int(m[3]), int(m[4]), int(m[5])) for m in _LINE.finditer(part)}

    return table(by_type), table(by_user)
