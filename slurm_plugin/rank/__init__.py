"""Job ranking: heuristic baselines (and, later, the learned ranking) as vectorised scoring functions."""

from .heuristics import HEURISTICS, Multifactor, QueueView, Weighted, f1, fcfs, sjf, unicep, wfp3

__all__ = ["HEURISTICS", "Multifactor", "QueueView", "Weighted", "f1", "fcfs", "sjf", "unicep", "wfp3"]
