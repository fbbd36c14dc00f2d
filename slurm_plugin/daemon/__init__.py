"""The admission daemon (``hetsched daemon run``): wire protocol, config, Unix-socket server.

Names are imported on first use (:func:`~slurm_plugin._lazy.lazy_exports`): reading the daemon's config (``hetsched
status``) does not import the server and admission."""

from .._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, globals(), {
    ".config": ["DaemonConfig"],
    ".protocol": ["MAX_REQUEST_BYTES", "VERSION", "ProtocolError", "encode_decision", "encode_error", "parse_request"],
    ".server": ["AdmissionServer", "PidFile", "run_until_signal"],
})
