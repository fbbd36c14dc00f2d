"""SLA attainment per QoS tier: the share of a tier's jobs whose wait stayed within the tier's ``max_wait``,
against its ``target_pct`` (site file ``policy.qos_tiers``); ``hetsched sla report``."""

from .report import TierRow, sla_rows

__all__ = ["TierRow", "sla_rows"]
