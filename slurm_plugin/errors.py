"""Exceptions that cross process boundaries intact (the snapshot worker, the simulation and tuning pools).

Python pickles an exception as ``type(err)(*err.args)``, and ``err.args`` is the formatted message once an
``__init__`` that takes other arguments (a command and its exit code, a file and its problems) has run: such an
exception does not unpickle, and a ``ProcessPoolExecutor`` then reports a plain "process terminated abruptly"
instead of the error, and throws its worker away. Those classes derive from :class:`PicklableError`, which
pickles them as the call that made them."""

from __future__ import annotations


class PicklableError(Exception):
    """Pickled as ``type(self)(*args, **kwargs)`` of its construction (first in the bases of a subclass)."""

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls, *args)
        self._made_with = (args, kwargs)
        return self

    def __reduce__(self):
        args, kwargs = self._made_with
        return _rebuild, (type(self), args, kwargs)


def _rebuild(cls: type[PicklableError], args: tuple, kwargs: dict) -> PicklableError:
    return cls(*args, **kwargs)
