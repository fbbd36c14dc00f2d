"""The policy file's one error type (below :mod:`.spec` and :mod:`.twin`, which both raise it)."""

from ..errors import PicklableError


class PolicyError(PicklableError, ValueError):
    """A bad policy: ``where`` (file and field path) and what is wrong."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}" if where else message)
        self.where, self.message = where, message
