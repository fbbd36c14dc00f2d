"""The learned ranking: a Double DQN over 8 priority bands, trained in the simulator (torch, offline) and run
with numpy only (simulator policy :class:`DqnRanking`, live ranker :func:`rank_pending`)."""

from .features import FEATURES, N_FEATURES, job_features
from .live import RankOptions, rank_pending
from .model import DEFAULT_MODEL, FORMAT, N_BANDS, DqnModel, ModelError, load_model, save_model
from .policy import AgeFloor, DqnRanking, dqn_ranking

__all__ = ["DEFAULT_MODEL", "FEATURES", "FORMAT", "N_BANDS", "N_FEATURES", "AgeFloor", "DqnModel", "DqnRanking",
           "ModelError", "RankOptions", "dqn_ranking", "job_features", "load_model", "rank_pending", "save_model"]
