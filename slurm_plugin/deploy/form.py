"""Admission's deployment step (pure): the form a job runs in, chosen per workload class from the site policy
(``policy.workload_classes[].form``), always said in the reason.

- ``batch``: unchanged (a job that names an image with ``#HETSCHED image=`` or ``--comment image=`` becomes
  ``container``);
- ``container``: the image (the job's, else the class's ``image``) resolved in the image store and mapped to
  its bundle in the cache: ``--container=<cache>/sha256-<hex>``; refused when containers are off, the image is
  unknown, or the cache has no room for it;
- ``sensitive``: ``--partition`` = the exclusive partitions made only of node groups marked ``sensitive``
  (Slurm then gives whole nodes; the Prolog/Epilog audit it and drain the node for its power cycle);
  refused when the site has no such partition. With ``deploy.vm`` set, the partitions whose node groups are
  all flagged ``kvm`` are chosen instead and the job gets ``--container=<deploy.vm.run_dir>/bundle``: it runs
  inside a QEMU guest the Prolog starts (:mod:`.vm`);
- ``function``: served by ``hetsched fn`` pilots; a pilot job (comment ``fn=NAME``) is accepted as batch.

Any job that is not sensitive and asks for a sensitive partition is refused (the enclave holds only audited
work).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .cache import CacheView
from .images import Image, ImageError, parse_ref
from .vm import vm_partitions


@dataclass(frozen=True)
class DeployView:
    """What the daemon read for this step: the images of the store (``name:tag`` -> Image) and the cache."""

    catalog: dict[str, Image] = field(default_factory=dict)
    cache: CacheView = CacheView("")


@dataclass(frozen=True)
class FormChoice:
    """``form`` chosen; ``changes`` (job_desc fields) and ``reason``; ``refuse`` True: reject with ``reason``;
    ``image``: the resolved image of a container job (the daemon prepares its bundle)."""

    form: str
    reason: str
    changes: dict = field(default_factory=dict)
    refuse: bool = False
    image: Image | None = None


def deploy_active(site) -> bool:
    """Whether the site uses deployment forms at all (else admission skips this step: the fast path)."""
    return site.deploy.image_store is not None or any(c.form != "batch" for c in site.policy.workload_classes) \
        or any(p.exclusive for p in site.partitions)


def sensitive_partitions(site) -> tuple[str, ...]:
    """Partitions that are exclusive and made only of node groups marked ``sensitive``."""
    return site.sensitive_partitions()


def job_image(req) -> str | None:
    """The image a job names: its ``image`` field (the shim's ``#HETSCHED image=`` line) or ``image=`` in
    its comment tags."""
    if getattr(req, "image", None):
        return req.image
    for part in (req.comment or "").replace(",", " ").split():
        if part.startswith("image="):
            return part[len("image="):]
    return None


def choose_form(req, wclass, site, view: DeployView) -> FormChoice:
    """The form for ``req`` of class ``wclass`` (None: no class) at ``site`` (see the module docstring)."""
    cname = wclass.name if wclass else "-"
    form = wclass.form if wclass else "batch"
    image_ref = job_image(req)
    asked = set(filter(None, (req.partition or "").split(",")))
    enclave = sensitive_partitions(site)
    if form != "sensitive" and asked & set(enclave):
        return FormChoice(form, f"partition {','.join(sorted(asked & set(enclave)))} holds only sensitive work "
                                f"(class {cname} is {form})", refuse=True)
    if form == "sensitive":
        if not enclave:
            return FormChoice(form, f"class {cname} is sensitive but the site has no exclusive partition of node "
                                    "groups marked sensitive", refuse=True)
        in_vm = vm_partitions(site, enclave)
        if in_vm:
            vm = site.deploy.vm
            return FormChoice(form, f"form sensitive in a VM (class {cname}): QEMU guest (accel {vm.accel}) started "
                                    f"by the Prolog on exclusive kvm nodes of partition {','.join(in_vm)}, audited, "
                                    "node power-cycled before reuse",
                              {"partition": ",".join(in_vm), "container": f"{vm.run_dir}/bundle"})
        return FormChoice(form, f"form sensitive (class {cname}): exclusive nodes of partition {','.join(enclave)}, "
                                "audited, node power-cycled before reuse", {"partition": ",".join(enclave)})
    if form == "function" and "fn=" in (req.comment or ""):
        return FormChoice(form, f"form function (class {cname}): a pilot job of the function service")
    if form == "batch" and not image_ref:
        return FormChoice("batch", f"form batch (class {cname})")
    if form == "function":
        return FormChoice(form, f"form function (class {cname}): invoke it with `hetsched fn invoke`; this job "
                                "runs as batch")
    image_ref = image_ref or (wclass.image if wclass else None)
    if not image_ref:
        return FormChoice("container", f"class {cname} runs in containers but names no image and the job gives "
                                       "none (#HETSCHED image=NAME)", refuse=True)
    if site.deploy.image_store is None:
        return FormChoice("container", f"image {image_ref} asked but containers are off at this site "
                                       "(deploy.image_store is not set)", refuse=True)
    try:
        name, tag = parse_ref(image_ref)
    except ImageError as err:
        return FormChoice("container", str(err), refuse=True)
    image = view.catalog.get(f"{name}:{tag}")
    if image is None:
        known = ", ".join(sorted(view.catalog)) or "none"
        return FormChoice("container", f"unknown image {name}:{tag} (images in {site.deploy.image_store}: {known})",
                          refuse=True)
    if not view.cache.room_for(image):
        return FormChoice("container", f"no room for image {image.ref} in the bundle cache {view.cache.root}: "
                                       f"{view.cache.used_bytes >> 20} of {view.cache.max_bytes >> 20} MB used",
                          refuse=True)
    warm = "warm" if image.key in view.cache.unpacked else "cold: unpacked on the node at start"
    bundle = f"{view.cache.root}/{image.key}"
    return FormChoice("container", f"form container (class {cname}): image {image.ref} -> bundle {image.key[:19]} "
                                   f"({warm})", {"container": bundle}, image=image)
