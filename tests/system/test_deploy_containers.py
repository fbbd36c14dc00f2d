"""Container jobs on a real local cluster: oci.conf rendered from the site, the image store (a busybox image
built here with umoci, no registry), the bundle cache, and admission turning ``#HETSCHED image=`` into
``--container`` through the real shim and daemon (Slurm 22.05 here; oci.conf syntax per version)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from slurm_plugin.deploy.build import build_busybox
from slurm_plugin.deploy.cache import BundleCache
from slurm_plugin.deploy.images import resolve
from slurm_plugin.deploy.site_patch import patch_site
from tests.system.conftest import Needs, cluster_fixture

pytestmark = [pytest.mark.system,
              pytest.mark.skipif(not (shutil.which("umoci") and shutil.which("runc")
                                      and Path("/bin/busybox").exists()),
                                 reason="needs umoci, runc and busybox-static (make deps installs them)")]



def _site_with_image(data: dict, root: Path) -> None:
    """The deploy site, its store holding busybox before the daemon starts (the daemon prepares the bundles of
    the images it finds at its start: a job's admission then only touches the entry, well within the shim's
    50 ms even under load; see deploy/view.py), its bundle cache empty (the first job is a cold start)."""
    patch_site(data, root)
    shutil.rmtree(data["deploy"]["bundle_cache"], ignore_errors=True)
    build_busybox(data["deploy"]["image_store"], "busybox:latest")


cluster = cluster_fixture("deploy-containers", Needs(job_submit=True, daemon=True, patch=_site_with_image))


@pytest.fixture(scope="module")
def image(cluster):
    return resolve(cluster.site().deploy.image_store, "busybox:latest")


def _submit(cluster, script: str, *args: str):
    client = cluster.client()
    proc = client.run("sbatch", "--parsable", "-o", f"{cluster.root}/out-%j.txt", *args, input=script, check=False)
    job_id = int(proc.stdout.strip().split(";")[0]) if proc.returncode == 0 else None
    return proc, job_id


def _output(cluster, job_id: int) -> str:
    job = cluster.client().wait_job(job_id, timeout=120)
    assert job["JobState"] == "COMPLETED", job
    return (cluster.root / f"out-{job_id}.txt").read_text()


PROBE = "echo root=$(cat /etc/passwd); hostname; test -e /usr && echo host-fs || echo container-fs\n"


def test_oci_conf_is_rendered_for_this_slurm(cluster):
    text = (cluster.root / "etc" / "oci.conf").read_text()
    assert f'RunTimeRun="{cluster.root}/bin/oci-run %b %n.%u.%j.%s.%t"' in text
    assert ("CreateEnvFile=false" in text) == (cluster.client().version.major < 23)


def test_image_line_runs_the_job_in_the_container_cold_then_warm(cluster, image):
    cache = BundleCache(cluster.site().deploy.bundle_cache)
    assert image.key not in cache.view().unpacked
    proc, job_id = _submit(cluster, "#!/bin/sh\n#HETSCHED image=busybox\n" + PROBE)
    assert job_id, proc.stderr
    assert "form container" in proc.stderr and "cold" in proc.stderr, proc.stderr
    assert cluster.client().show_job(job_id)["Container"] == f"{cache.root}/{image.key}"
    out = _output(cluster, job_id)
    assert "root=root:x:0:0:root:/:/bin/sh" in out and "hetsched" in out and "container-fs" in out, out
    assert image.key in cache.view().unpacked  # the node's wrapper unpacked it on the cold start
    proc, job_id = _submit(cluster, "#!/bin/sh\n" + PROBE, "--comment", "class=boxed")  # the class's image
    assert job_id and "form container (class boxed)" in proc.stderr and "(warm)" in proc.stderr, proc.stderr
    assert "container-fs" in _output(cluster, job_id)


def test_job_without_image_runs_on_the_host(cluster, image):
    proc, job_id = _submit(cluster, "#!/bin/sh\n" + PROBE)
    assert job_id, proc.stderr
    assert cluster.client().show_job(job_id).get("Container", "") in ("", "(null)")
    assert "host-fs" in _output(cluster, job_id)


@pytest.mark.parametrize("line, message", [
    ("#HETSCHED image=nosuch", "unknown image nosuch:latest (images in"),
    ("#HETSCHED image=busybox:9.9", "unknown image busybox:9.9"),
])
def test_unknown_image_is_refused_with_the_reason(cluster, image, line, message):
    proc, job_id = _submit(cluster, f"#!/bin/sh\n{line}\ntrue\n")
    assert job_id is None and message in proc.stderr, proc.stderr


def test_no_room_is_refused(cluster, image, tmp_path):
    from slurm_plugin.admission import AdmissionOptions, admit
    from slurm_plugin.admission.request import JobRequest
    from slurm_plugin.deploy.form import DeployView
    from slurm_plugin.snapshot import Snapshot

    site = cluster.site()
    full = BundleCache(tmp_path, max_bytes=image.size)  # smaller than the image unpacked
    view = DeployView({image.ref: image}, full.view())
    decision = admit(JobRequest(image="busybox", user_id=0), Snapshot(), site, AdmissionOptions(deploy=view))
    assert decision.action == "reject" and "no room for image busybox:latest" in decision.reason
