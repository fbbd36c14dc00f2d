"""Isolation never fails open, on a real local cluster: with the admission daemon stopped, the shim still routes a
sensitive job to the sensitive partition (its static table, `conf render`'s `sensitive` section) and still refuses
another job asking for it; other jobs fail open unchanged. Its own cluster: the daemon stays stopped until the
cluster is taken down (restarting it inside another module's cluster raced in CI once)."""

from __future__ import annotations

import pytest

from slurm_plugin.deploy.site_patch import patch_site
from tests.system.conftest import Needs, cluster_fixture

pytestmark = pytest.mark.system

cluster = cluster_fixture("deploy-no-daemon", Needs(job_submit=True, daemon=True, patch=patch_site))


def test_without_the_daemon_isolation_does_not_fail_open(cluster):
    client = cluster.client()
    cluster.stop_daemon()
    proc = client.run("sbatch", "--parsable", "--hold", "--comment=class=secret", "-p", "batch",
                      "--wrap", "true", check=False)
    assert proc.returncode == 0 and "is sensitive; admission unavailable" in proc.stderr, proc.stderr
    assert client.show_job(proc.stdout.strip().split(";")[0])["Partition"] == "secure"
    proc = client.run("sbatch", "-p", "secure", "--hold", "--wrap", "true", check=False)
    assert proc.returncode != 0 and "holds only sensitive work" in proc.stderr, proc.stderr
    proc = client.run("sbatch", "--parsable", "--hold", "-p", "batch", "--wrap", "true", check=False)
    assert proc.returncode == 0, proc.stderr
    assert client.show_job(proc.stdout.strip().split(";")[0])["Partition"] == "batch"
    client.run("scancel", "-u", "root", check=False)
