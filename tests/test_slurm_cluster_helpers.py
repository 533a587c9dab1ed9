"""The test cluster's own safety, without SLURM (tests/slurm_cluster.py): ``Cluster.stop()``
signals a recorded process only while its pid still names that process (start time and
executable), and the socket listing that the loopback test relies on reads addresses right."""

import os
import socket
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest
import slurm_cluster
from slurm_cluster import Cluster, Proc


@pytest.fixture
def sleeper():
    """A process that would run for a minute (stands in for a daemon)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def _cluster(tmp_path: Path, **procs: Proc) -> Cluster:
    return Cluster(tmp_path, tmp_path / "slurm.conf", 1, 1000, procs=dict(procs))


def test_a_process_is_recorded_with_its_start_time_and_executable(sleeper):
    rec = Proc.of(sleeper.pid)
    assert rec.exe == os.readlink(f"/proc/{sleeper.pid}/exe")
    assert rec.start_time > 0
    assert rec.is_running()
    assert not Proc.of(os.getpid()) == rec


def test_stop_signals_the_process_it_started(tmp_path, sleeper):
    reaper = threading.Thread(target=sleeper.wait)  # as init reaps a daemon
    reaper.start()
    _cluster(tmp_path, slurmd=Proc.of(sleeper.pid)).stop()
    reaper.join(15)
    assert sleeper.returncode == -15  # SIGTERM
    with pytest.raises(ProcessLookupError):
        os.kill(sleeper.pid, 0)


@pytest.mark.parametrize("changed", ["start_time", "exe"])
def test_stop_leaves_a_reused_pid_alone(tmp_path, sleeper, changed):
    """A pid whose process no longer matches what was recorded (the daemon ended and the
    kernel gave its pid to another process) is not signalled, with a warning naming it."""
    rec = Proc.of(sleeper.pid)
    stale = Proc(rec.pid, rec.start_time - 1, rec.exe) if changed == "start_time" \
        else Proc(rec.pid, rec.start_time, "/usr/sbin/slurmd-wlm")
    c = _cluster(tmp_path, slurmd=stale)
    with pytest.warns(RuntimeWarning, match=rf"slurmd: pid {rec.pid} is now another process"):
        c.stop()
    assert sleeper.poll() is None
    assert not c.procs


def test_stop_passes_over_a_process_that_ended(tmp_path, sleeper):
    rec = Proc.of(sleeper.pid)
    sleeper.kill()
    sleeper.wait(10)
    c = _cluster(tmp_path, slurmd=rec, munged=rec)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither an error nor a warning
        c.stop()
    assert not c.procs


def test_listening_names_a_process_its_address_and_port():
    exe = os.path.basename(os.readlink("/proc/self/exe"))
    with socket.socket() as s4, socket.socket(socket.AF_INET6) as s6:
        s4.bind(("127.0.0.1", 0))
        s4.listen()
        s6.bind(("::1", 0))
        s6.listen()
        found = slurm_cluster.listening([exe])
        mine = {(a, p) for name, pid, a, p in found if pid == os.getpid()}
        assert ("127.0.0.1", s4.getsockname()[1]) in mine
        assert ("::1", s6.getsockname()[1]) in mine
    assert not any(pid == os.getpid() for _, pid, _, _ in slurm_cluster.listening([exe]))


@pytest.mark.parametrize(("address", "loopback"), [
    ("127.0.0.1", True), ("127.0.1.1", True), ("::1", True), ("::ffff:127.0.0.1", True),
    ("0.0.0.0", False), ("::", False), ("10.1.2.3", False), ("172.17.0.2", False)])
def test_loopback_addresses(address, loopback):
    assert slurm_cluster.is_loopback(address) is loopback


@pytest.mark.parametrize("ci", ["", "true"])
def test_a_cluster_that_does_not_start_fails_under_ci_and_skips_elsewhere(monkeypatch, tmp_path,
                                                                          ci):
    """SLURM installed (unavailable() is None) but the start fails: a failure where CI is set,
    a skip (saying why) where it is not; a machine without SLURM skips either way."""
    def broken(root, **kwargs):
        raise RuntimeError("single-node SLURM did not start: slurmctld exited")

    monkeypatch.setattr(slurm_cluster, "start", broken)
    monkeypatch.setattr(slurm_cluster, "unavailable", lambda accounting=False: None)
    monkeypatch.setenv("CI", ci)
    expected = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(expected, match="slurmctld exited"):
        slurm_cluster.start_or_skip(tmp_path)
    monkeypatch.setattr(slurm_cluster, "unavailable",
                        lambda accounting=False: "SLURM is not installed")
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        slurm_cluster.start_or_skip(tmp_path)
