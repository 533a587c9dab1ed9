"""A real single-node SLURM cluster on loopback, for the tests of the cluster path.

:func:`start` runs ``munged``, ``slurmctld`` and ``slurmd`` (Debian's ``munge`` and
``slurm-wlm``) as root, with every file in one temporary folder (the ``slurm.conf`` also at
SLURM's default path ``/etc/slurm/slurm.conf`` while it runs, see :func:`start`): a munge key
and socket of its own, a ``slurm.conf`` whose only node is this machine (its CPUs and memory as
``slurmd -C`` reports them), one partition ``cpu``, no accounting daemon, free TCP ports. The
SLURM client commands find that cluster through ``SLURM_CONF`` in :attr:`Cluster.env`.
:meth:`Cluster.stop` cancels every job and stops the three daemons by their process ids, also
after a failed start. :func:`unavailable` says why a cluster cannot start here (not root, a
missing binary), or None.

``python tests/slurm_cluster.py DIR`` starts one in DIR and waits until SIGTERM or Ctrl-C
stops it: for trying the documented commands by hand against a real controller.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo", "scancel")
PARTITION = "cpu"
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")


def unavailable() -> str | None:
    """Why a single-node cluster cannot start on this machine (None when it can)."""
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        return ("SLURM is not installed (missing " + ", ".join(missing)
                + "; Debian: apt-get install slurm-wlm munge, as .ci/run does)")
    if SYSTEM_CONF.exists():
        return f"{SYSTEM_CONF} exists: this machine has a SLURM of its own, left alone"
    if os.geteuid() != 0:
        return "slurmd must run as root to start jobs as their user (this test runs as uid " \
               f"{os.geteuid()})"
    return None


def node_hardware() -> dict[str, int]:
    """This machine as ``slurmd -C`` sees it: ``CPUs``, ``RealMemory`` (MB) and the topology
    keys slurm.conf needs."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    line = out.splitlines()[0]
    keys = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore",
            "RealMemory")
    return {k: int(m.group(1)) for k in keys if (m := re.search(rf"\b{k}=(\d+)", line))}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    """A started cluster: its folder, its ``slurm.conf``, the node's CPUs and memory (MB),
    the partition's name, and the environment the SLURM commands need."""

    root: Path
    conf: Path
    cpus: int
    mem_mb: int
    partition: str = PARTITION
    ctld_port: int = 0
    system_conf: bool = False
    pids: dict[str, int] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *cmd: str, check: bool = True, timeout: float = 60) -> str:
        """A SLURM client command against this cluster; its stdout."""
        proc = subprocess.run(list(cmd), env=self.env, capture_output=True, text=True,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr}")
        return proc.stdout

    def jobs(self) -> list[dict[str, str]]:
        """Every job the controller still knows: id, name, state, comment, restart count."""
        out = self.run("squeue", "-h", "-t", "all", "-o", "%i|%j|%T|%k|%r")
        return [dict(zip(("id", "name", "state", "comment", "reason"), line.split("|"),
                         strict=False))
                for line in out.splitlines() if line.strip()]

    def logs(self) -> str:
        """The tails of the daemons' logs (for a failure message)."""
        out = []
        for name in ("munged", "slurmctld", "slurmd"):
            p = self.root / f"{name}.log"
            if p.exists():
                out.append(f"--- {name}.log\n" + "\n".join(
                    p.read_text(errors="replace").splitlines()[-20:]))
        return "\n".join(out)

    def stop(self) -> None:
        """Cancel every job, then stop slurmd, slurmctld and munged (by their pids)."""
        if "slurmctld" in self.pids:
            subprocess.run(["scancel", "--full", "-u", str(os.getuid())], env=self.env,
                           capture_output=True, timeout=30, check=False)
        for name in ("slurmd", "slurmctld", "munged"):
            pid = self.pids.pop(name, None)
            if pid is None:
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self.system_conf:
            SYSTEM_CONF.unlink(missing_ok=True)
            self.system_conf = False


def _pid(path: Path, timeout: float = 30) -> int:
    for _ in range(int(timeout * 10)):
        if path.exists() and path.read_text().strip():
            return int(path.read_text().split()[0])
        time.sleep(0.1)
    raise RuntimeError(f"no pid file {path}")


def slurm_conf(root: Path, hw: dict[str, int], host: str, ports: tuple[int, int],
               min_job_age: int = 300) -> str:
    """The cluster's slurm.conf: controller and only node ``host`` on 127.0.0.1, one
    partition, no accounting, state and spool under ``root``. ``MinJobAge`` (s) keeps an ended
    job visible to ``squeue`` that long (the workflow's status check wants ≥ 120 s)."""
    topo = " ".join(f"{k}={v}" for k, v in hw.items())
    return "\n".join([
        "ClusterName=structablate",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={ports[0]}",
        f"SlurmdPort={ports[1]}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={root / 'munge.socket'}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool'}",
        f"SlurmctldPidFile={root / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'slurmd.pid'}",
        f"SlurmctldLogFile={root / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "ReturnToService=2",
        f"MinJobAge={min_job_age}",
        "SchedulerType=sched/backfill",
        "SchedulerParameters=sched_interval=2",
        "SlurmctldParameters=enable_configless",
        f"NodeName={host} NodeAddr=127.0.0.1 {topo} State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes={host} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


def start(root: Path, *, min_job_age: int = 300, timeout: float = 60) -> Cluster:
    """Start munged, slurmctld and slurmd with everything under ``root``; wait until the node
    is idle. Stops what it started and raises RuntimeError (with the daemons' logs) when the
    cluster does not come up."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    for sub in ("state", "spool"):
        (root / sub).mkdir(exist_ok=True)
    if SYSTEM_CONF.exists():
        raise RuntimeError(f"{SYSTEM_CONF} exists: this machine has a SLURM of its own")
    hw = node_hardware()
    host = socket.gethostname().split(".")[0]
    conf = root / "slurm.conf"
    ports = (_free_port(), _free_port())
    conf.write_text(slurm_conf(root, hw, host, ports, min_job_age))
    cluster = Cluster(root, conf, hw["CPUs"], hw["RealMemory"], ctld_port=ports[0])
    # Also at SLURM's default path: snakemake-executor-plugin-slurm-jobstep drops SLURM_CONF
    # from the environment of the srun it starts inside a job, which then reads this file
    # (removed by stop()).
    SYSTEM_CONF.parent.mkdir(parents=True, exist_ok=True)
    SYSTEM_CONF.write_text(conf.read_text())
    cluster.system_conf = True
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    try:
        subprocess.run(["munged", "--force", f"--socket={root / 'munge.socket'}",
                        f"--key-file={key}", f"--pid-file={root / 'munged.pid'}",
                        f"--log-file={root / 'munged.log'}",
                        f"--seed-file={root / 'munged.seed'}"],
                       check=True, capture_output=True, timeout=30)
        cluster.pids["munged"] = _pid(root / "munged.pid")
        subprocess.run(["slurmctld", "-c", "-i", "-f", str(conf)], check=True,
                       capture_output=True, env=cluster.env, timeout=30)
        cluster.pids["slurmctld"] = _pid(root / "slurmctld.pid")
        subprocess.run(["slurmd", "-f", str(conf)], check=True, capture_output=True,
                       env=cluster.env, timeout=30)
        cluster.pids["slurmd"] = _pid(root / "slurmd.pid")
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            state = cluster.run("sinfo", "-h", "-o", "%t", check=False).strip()
            if state in ("idle", "mix", "alloc"):
                return cluster
            time.sleep(0.5)
        raise RuntimeError(f"the node did not come up (sinfo: {state!r})")
    except (RuntimeError, subprocess.SubprocessError, OSError) as err:
        logs = cluster.logs()
        cluster.stop()
        raise RuntimeError(f"single-node SLURM did not start: {err}\n{logs}") from err


if __name__ == "__main__":
    import sys

    c = start(Path(sys.argv[1]).resolve())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"export SLURM_CONF={c.conf}   # {c.cpus} CPUs, {c.mem_mb} MB, partition {c.partition}")
    try:
        signal.pause()
    finally:
        c.stop()
