"""One entry point for every workload source: ``load_workload(spec, site)``.

``spec`` is a path to an SWF file (``.swf``/``.swf.gz``), ``sacct -P`` output (``.txt``/``.psv``/``.sacct``),
``sacct --json`` output (``.json``), a Gavel/Philly job stream (``.trace``, needs a site with GPUs), an Alibaba
OpenB pod list (``.csv`` with its header; its node list is the machine), ``synthetic:jobs=..,seed=..,load=..``
(needs a site), or ``lublin:nodes=..,jobs=..,seed=..`` (the Lublin-Feitelson model; names its own machine).
"""

from __future__ import annotations

from pathlib import Path

from ..site import Site
from .errors import WorkloadError
from .gavel import read_philly
from .jobs import Workload
from .lublin import LublinSpec, generate_lublin
from .openb import is_openb_pod_list, read_openb
from .sacct import read_sacct_json, read_sacct_parsable
from .swf import read_swf
from .synthetic import SyntheticSpec, generate


def load_workload(spec: str, site: Site | None = None) -> Workload:
    if spec.startswith("lublin:") or spec == "lublin":
        try:
            return generate_lublin(LublinSpec.parse(spec))
        except WorkloadError:
            raise
        except ValueError as err:
            raise WorkloadError(spec, str(err)) from None
    if spec.startswith("synthetic"):
        if site is None:
            raise WorkloadError(spec, "a synthetic workload needs a site (--site)")
        try:
            return generate(site, SyntheticSpec.parse(spec))
        except WorkloadError:
            raise
        except ValueError as err:
            raise WorkloadError(spec, str(err)) from None
    path = Path(spec)
    name = path.name.lower()
    if name.endswith((".swf", ".swf.gz")):
        return read_swf(path)
    if name.endswith(".trace"):
        return read_philly(path, site=site)
    if name.endswith(".json"):
        return read_sacct_json(path)
    if name.endswith(".csv") and is_openb_pod_list(path):
        return read_openb(path)
    if name.endswith((".txt", ".psv", ".sacct", ".csv")):
        return read_sacct_parsable(path)
    raise WorkloadError(spec, "unknown workload kind (want .swf[.gz], sacct .json / -P .txt, Philly .trace, "
                                 "OpenB pod list .csv, synthetic:... or lublin:...)")
