"""Package attributes imported on first use (PEP 562), so importing a package does not import its heavy parts.

``from slurm_plugin.site import SiteError`` then costs the small ``errors`` module, not pydantic; ``from
slurm_plugin.pack import pack`` does not import Pyomo. Usage, at the end of a package's ``__init__.py``::

    from .errors import SiteError  # light: imported eagerly

    __getattr__, __dir__, __all__ = lazy_exports(__name__, globals(), {
        ".loader": ["load_site", "parse_site"],
        ".schema": ["Site", "NodeGroup"],
    }, eager=["SiteError"])
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_exports(package: str, namespace: dict, modules: dict[str, list[str]], eager: list[str] = ()
                 ) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package``: each name in ``modules[sub]`` comes from ``sub``
    (relative to ``package``), imported on first access and then cached in the package's ``namespace``;
    ``eager`` names are already bound there and only join ``__all__``. A name may not be the name of one of the
    package's own submodules listed (ValueError): importing that submodule binds the module to the name, so the
    export would stop working as soon as anything imports it (``slurm_plugin.cycle.decide``)."""
    where = {name: sub for sub, names in modules.items() for name in names}
    shadowed = sorted(n for n in where if n in {s.lstrip(".").split(".")[0] for s in modules})
    if shadowed:
        raise ValueError(f"{package}: lazy export(s) {', '.join(shadowed)} share a submodule's name; import them "
                         "from the submodule instead")

    def __getattr__(name: str) -> object:
        sub = where.get(name)
        if sub is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(sub, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__, sorted({*eager, *where})
