"""The admission daemon (``hetsched daemon run``): wire protocol, config, Unix-socket server."""

from .config import DaemonConfig
from .protocol import MAX_REQUEST_BYTES, VERSION, ProtocolError, encode_decision, encode_error, parse_request
from .server import AdmissionServer, PidFile, run_until_signal

__all__ = ["MAX_REQUEST_BYTES", "VERSION", "AdmissionServer", "DaemonConfig", "PidFile", "ProtocolError",
           "encode_decision", "encode_error", "parse_request", "run_until_signal"]
