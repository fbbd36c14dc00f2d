"""NVIDIA GPU generations as the Xid catalog's columns, and what a Xid means on each (pure).

NVIDIA's Xid catalog for Ampere and newer GPUs (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html) says
per Xid whether it applies to A100, H100, B100 and GB200; the library keeps those columns as
``extra.applies_to`` of each ``nvidia-xid-*`` signature. On a node whose generation is known, a Xid the catalog
does not list for it (e.g. Xid 74, NVLink, on Blackwell, which reports NVLink5 faults as Xid 144-150; Xid 136 on
anything but H100) is not the fault the library's entry describes: it gets the bucket the catalog gives codes that
do not apply, CONTACT_SUPPORT, i.e. a drain for an admin to look at (:func:`for_generation`). Volta and older GPUs
have NVIDIA's older catalog (not modelled): their Xids, like those of an unknown GPU, keep the library's action.
"""

from __future__ import annotations

from dataclasses import replace

from .signatures import Signature

COLUMNS = ("a100", "h100", "b100", "gb200")  # the catalog's "Applies to" columns
PRE_AMPERE = "pre-ampere"
# GPU type (site gpu.type, lower case) -> catalog column; the longest matching prefix wins
FAMILIES = {
    "a100": "a100", "a800": "a100", "a30": "a100",                          # Ampere data-centre GPUs
    "h100": "h100", "h800": "h100", "h200": "h100", "h20": "h100", "gh200": "h100",  # Hopper (GH200: Grace Hopper)
    "b100": "b100", "b200": "b100", "b300": "b100",                         # Blackwell
    "gb200": "gb200", "gb300": "gb200",                                     # Grace Blackwell
    "v100": PRE_AMPERE, "p100": PRE_AMPERE, "p40": PRE_AMPERE, "k80": PRE_AMPERE,  # Volta and older
}
NOT_LISTED = "gpu_xid_not_in_catalog"


def generation(gpu_type: str | None) -> str | None:
    """The catalog column (or :data:`PRE_AMPERE`) of a GPU type such as ``h100`` or ``a100-sxm4-80gb``; None for
    a type it does not know."""
    if not gpu_type:
        return None
    t = gpu_type.strip().lower().removeprefix("nvidia").strip(" -_")
    best = max((p for p in FAMILIES if t.startswith(p)), key=len, default=None)
    return FAMILIES[best] if best else None


def for_generation(sig: Signature, gen: str | None) -> Signature:
    """``sig`` as it applies on a GPU of generation ``gen``: unchanged where the catalog lists the Xid for it (or
    the generation or the Xid's columns are unknown), else a drain naming the mismatch."""
    applies = sig.extra.get("applies_to")
    if gen not in COLUMNS or applies is None or gen in applies:
        return sig
    name = str(sig.extra.get("name") or sig.id)
    return replace(sig, action="drain", severity="error", fault_class=NOT_LISTED, threshold=None,
                   extra={**sig.extra, "name": f"{name} (not in the catalog for {gen.upper()})",
                          "immediate": "CONTACT_SUPPORT"})
