"""The daemon's hold on the CPU wake-up latency limit (daemon/cpu_latency.py): what it writes, that it lets go,
and that a device it cannot open never stops the daemon."""

from __future__ import annotations

import logging
import os
import struct

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.daemon.config import DaemonConfig
from slurm_plugin.daemon.cpu_latency import CpuLatencyHold


def test_writes_the_limit_as_a_32_bit_number_and_closes_it_on_exit(tmp_path):
    dev = tmp_path / "cpu_dma_latency"  # a file stands in for the device: the kernel reads the same 4 bytes
    dev.write_bytes(b"")
    with CpuLatencyHold(25, device=dev) as hold:
        assert hold.held
        fd = hold.fd
        os.fstat(fd)  # open while the block runs
        assert struct.unpack("=i", dev.read_bytes()) == (25,)
    assert not hold.held
    with pytest.raises(OSError):
        os.fstat(fd)  # closed: the kernel drops the request with the file


def test_none_asks_nothing(tmp_path):
    dev = tmp_path / "cpu_dma_latency"
    with CpuLatencyHold(None, device=dev) as hold:
        assert not hold.held
    assert not dev.exists()


def test_a_device_that_cannot_be_opened_is_logged_and_the_block_still_runs(tmp_path, caplog):
    ran = False
    with caplog.at_level(logging.WARNING), CpuLatencyHold(0, device=tmp_path / "missing" / "dev") as hold:
        ran = True
        assert not hold.held
    assert ran
    assert "cpu_latency_us 0 not held: cannot open" in caplog.text


@pytest.mark.parametrize("bad", [-1, 2_000_000_001])
def test_out_of_range_is_refused(bad):
    with pytest.raises(ValueError, match="cpu_latency_us must be in"):
        CpuLatencyHold(bad)
    with pytest.raises(ValueError, match="cpu_latency_us"):
        DaemonConfig.model_validate({"cpu_latency_us": bad})


def test_config_and_cli_take_it():
    assert DaemonConfig.model_validate({}).cpu_latency_us is None
    assert DaemonConfig.model_validate({"cpu_latency_us": 0}).cpu_latency_us == 0
    out = CliRunner().invoke(main, ["daemon", "run", "--cpu-latency-us", "-3"])
    assert out.exit_code == 2 and "--cpu-latency-us" in out.output
