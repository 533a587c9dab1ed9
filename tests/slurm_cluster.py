"""A real single-node SLURM cluster on loopback, for the tests of the cluster path.

:func:`start` runs ``munged``, ``slurmctld`` and ``slurmd`` (Debian's ``munge`` and
``slurm-wlm``) as root, with every file in one temporary folder (the ``slurm.conf`` also at
SLURM's default path ``/etc/slurm/slurm.conf`` while it runs, see :func:`start`): a munge key
and socket of its own, a ``slurm.conf`` whose only node is this machine (its CPUs and memory as
``slurmd -C`` reports them), one partition ``cpu``, no accounting daemon, free TCP ports. The
SLURM client commands find that cluster through ``SLURM_CONF`` in :attr:`Cluster.env`.
:func:`unavailable` says why a cluster cannot start here (not root, a missing binary), or None.

**Loopback only.** SLURM's daemons bind to INADDR_ANY (every address of the machine) unless
``CommunicationParameters=NoCtldInAddrAny,NoInAddrAny``; with it, each binds to the address its
own host name (``gethostname()``) resolves to, which the configuration cannot name otherwise
(SLURM's ``slurm_setup_addr``). So the daemons must see a host name that resolves to loopback:
where this machine's does (``/etc/hosts`` maps it to 127.0.0.1 or Debian's 127.0.1.1), they
run as they are; where it does not (a container whose ``/etc/hosts`` maps it to its bridge
address, say), they run in a UTS namespace of their own (``unshare --uts``) whose host name is
``localhost``, and the node is named ``localhost``; where that is not allowed either (no
CAP_SYS_ADMIN), :func:`start` refuses rather than listen on another address. ``munged``
listens on its Unix socket only. :func:`listening` lists what the cluster's processes listen
on.

**Stopping.** :meth:`Cluster.stop` cancels every job and stops the three daemons by their
process ids, also after a failed start; it signals a process only while it is still the one
that was started (:class:`Proc`: its start time in ``/proc/PID/stat`` and its executable,
recorded at start), so a pid the kernel handed to another process since is never signalled.

``python tests/slurm_cluster.py DIR`` starts one in DIR and waits until SIGTERM or Ctrl-C
stops it: for trying the documented commands by hand against a real controller
(docs/cluster.md, "Trying the profile on one machine").
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo", "scancel",
            "unshare")
# the processes of a cluster: its daemons, the job steps' daemon and the job steps' srun
PROCESSES = ("munged", "slurmctld", "slurmd", "slurmstepd", "srun", "slurmdbd", "mariadbd")
# what the accounting variant needs besides (Debian: apt-get install slurmdbd mariadb-server)
ACCOUNTING_BINARIES = ("slurmdbd", "sacct", "sacctmgr", "mariadbd", "mariadb-install-db",
                       "mariadb")
# the account the accounting variant registers for this user (profile: slurm_account)
ACCOUNT = "structablate"
# the host name the daemons see in their own UTS namespace (resolves to loopback everywhere)
NAMESPACE_HOST = "localhost"
PARTITION = "cpu"
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")


def unavailable(accounting: bool = False) -> str | None:
    """Why a single-node cluster (with ``accounting``: and its slurmdbd on MariaDB) cannot
    start on this machine (None when it can)."""
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        return ("SLURM is not installed (missing " + ", ".join(missing)
                + "; Debian: apt-get install slurm-wlm munge, as .ci/run does)")
    missing = [b for b in ACCOUNTING_BINARIES if accounting and shutil.which(b) is None]
    if missing:
        return ("SLURM accounting is not installed (missing " + ", ".join(missing)
                + "; Debian: apt-get install slurmdbd mariadb-server, as .ci/run does)")
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


def is_loopback(address: str) -> bool:
    """Whether an IPv4 or IPv6 address is a loopback one (127.0.0.0/8, ::1, ::ffff:127.x)."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def resolves_to_loopback(name: str) -> bool:
    """Whether ``name`` resolves (IPv4, as SLURM 22.05 resolves it by default) to loopback
    addresses only."""
    try:
        infos = socket.getaddrinfo(name, None, socket.AF_INET)
    except OSError:
        return False
    return bool(infos) and all(is_loopback(str(i[4][0])) for i in infos)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Proc:
    """A process as it was when recorded: its pid, its start time (clock ticks after boot,
    field 22 of ``/proc/PID/stat``) and its executable (``/proc/PID/exe``). A pid is reused
    once its process ended; the pair (pid, start time) is not, within one boot."""

    pid: int
    start_time: int
    exe: str

    @classmethod
    def of(cls, pid: int) -> Proc:
        """The running process ``pid`` (OSError where there is none)."""
        return cls(pid, _start_time(pid), os.readlink(f"/proc/{pid}/exe"))

    def current(self) -> Proc | None:
        """What runs under this pid now (None when nothing does, or only a zombie)."""
        try:
            return Proc.of(self.pid)
        except (OSError, ValueError, IndexError):
            return None

    def status(self) -> str:
        """``running`` (the recorded process itself), ``zombie`` (it ended, not yet reaped),
        ``gone`` (no process has its pid) or ``other`` (its pid names another process now)."""
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return "gone"
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[19]) != self.start_time:
            return "other"
        if fields[0] in ("Z", "X"):
            return "zombie"
        return "running" if self.current() == self else "other"

    def is_running(self) -> bool:
        """Whether the recorded process itself still runs (not another one with its pid)."""
        return self.status() == "running"


def _start_time(pid: int) -> int:
    """A process's start time in clock ticks after boot, from ``/proc/PID/stat`` (field 22,
    counted after the parenthesised command name, which may hold spaces)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[19])


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
    node: str = ""
    account: str | None = None
    procs: dict[str, Proc] = field(default_factory=dict)

    @property
    def pids(self) -> dict[str, int]:
        """The daemons' process ids, by name."""
        return {name: p.pid for name, p in self.procs.items()}

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
        for name in ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd"):
            p = self.root / f"{name}.log"
            if p.exists():
                out.append(f"--- {name}.log\n" + "\n".join(
                    p.read_text(errors="replace").splitlines()[-20:]))
        return "\n".join(out)

    def stop(self) -> None:
        """Cancel every job, then stop slurmd, slurmctld, slurmdbd and mariadbd (where
        started) and munged. Each is signalled only while its pid still belongs to the process
        started (:class:`Proc`); one whose pid now names another process (or none) is left
        alone, with a warning in the first case."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].is_running():
            subprocess.run(["scancel", "--full", "-u", str(os.getuid())], env=self.env,
                           capture_output=True, timeout=30, check=False)
        for name in ("slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged"):
            proc = self.procs.pop(name, None)
            if proc is not None:
                _terminate(name, proc)
        if self.system_conf:
            SYSTEM_CONF.unlink(missing_ok=True)
            self.system_conf = False


def _terminate(name: str, proc: Proc, grace: float = 10, reap: float = 5) -> None:
    """SIGTERM to ``proc``, SIGKILL if it still runs ``grace`` seconds later; once it ended,
    wait up to ``reap`` seconds until its parent (init, for a daemon) has reaped it. Before
    each signal its pid is checked to still name the process recorded: one that names another
    process is left alone, with a warning."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        status = proc.status()
        if status == "other":
            now = proc.current()
            warnings.warn(f"{name}: pid {proc.pid} is now another process ("
                          + (f"started at tick {now.start_time}, {now.exe}" if now else
                             "unreadable")
                          + f"; recorded: tick {proc.start_time}, {proc.exe}): not signalled",
                          RuntimeWarning, stacklevel=3)
            return
        if status != "running":
            break
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while proc.status() == "running" and time.monotonic() < deadline:
            time.sleep(0.1)
    deadline = time.monotonic() + reap
    while proc.status() == "zombie" and time.monotonic() < deadline:
        time.sleep(0.1)


def listening(names: Iterable[str] = PROCESSES) -> list[tuple[str, int, str, int]]:
    """Every listening TCP socket (and bound UDP socket) of the processes whose executable is
    named in ``names`` (Debian's ``-wlm`` suffix dropped): (process name, pid, address, port),
    from ``/proc/net`` and each process's file descriptors."""
    sockets: dict[int, tuple[str, int]] = {}
    for table, v6 in (("tcp", False), ("tcp6", True), ("udp", False), ("udp6", True)):
        try:
            lines = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            state = f[3]
            if table.startswith("tcp") and state != "0A":  # TCP_LISTEN
                continue
            if table.startswith("udp") and state != "07":  # TCP_CLOSE: a bound UDP socket
                continue
            addr, port = f[1].split(":")
            sockets[int(f[9])] = (_proc_net_address(addr, v6), int(port, 16))
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # Debian installs the SLURM daemons as slurmctld-wlm etc. (alternatives)
            exe = os.path.basename(os.readlink(entry / "exe")).removesuffix("-wlm")
            if exe not in names:
                continue
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:  # a descriptor may close meanwhile (the one listing the folder does)
                link = os.readlink(fd)
            except OSError:
                continue
            m = re.fullmatch(r"socket:\[(\d+)\]", link)
            if m and int(m.group(1)) in sockets:
                found.append((exe, int(entry.name), *sockets[int(m.group(1))]))
    return sorted(found)


def _proc_net_address(hexaddr: str, v6: bool) -> str:
    """An address of ``/proc/net/tcp{,6}`` (host-order 32-bit words in hex) as text."""
    raw = bytes.fromhex(hexaddr)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.IPv6Address(words) if v6 else ipaddress.IPv4Address(words))


def _pid(path: Path, timeout: float = 30) -> int:
    for _ in range(int(timeout * 10)):
        if path.exists() and path.read_text().strip():
            return int(path.read_text().split()[0])
        time.sleep(0.1)
    raise RuntimeError(f"no pid file {path}")


def slurm_conf(root: Path, hw: dict[str, int], node: str, ports: tuple[int, int],
               min_job_age: int = 300, dbd_port: int | None = None) -> str:
    """The cluster's slurm.conf: controller and only node ``node`` at 127.0.0.1, every daemon
    bound to the address its host name resolves to (``CommunicationParameters``, see the
    module's docstring), one partition, no accounting, state and spool under ``root``.
    ``MinJobAge`` (s) keeps an ended job visible to ``squeue`` that long (the workflow's status
    check wants ≥ 120 s). With ``dbd_port``, accounting goes to the slurmdbd listening there
    (on 127.0.0.1)."""
    accounting = (["AccountingStorageType=accounting_storage/slurmdbd",
                   "AccountingStorageHost=127.0.0.1", f"AccountingStoragePort={dbd_port}",
                   # the munge socket for slurmdbd connections (AuthInfo is not used for them)
                   f"AccountingStoragePass={root / 'munge.socket'}"]
                  if dbd_port else ["AccountingStorageType=accounting_storage/none"])
    topo = " ".join(f"{k}={v}" for k, v in hw.items())
    return "\n".join([
        "ClusterName=structablate",
        f"SlurmctldHost={node}(127.0.0.1)",
        f"SlurmctldPort={ports[0]}",
        f"SlurmdPort={ports[1]}",
        "CommunicationParameters=NoCtldInAddrAny,NoInAddrAny",
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
        *accounting,
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "ReturnToService=2",
        f"MinJobAge={min_job_age}",
        "SchedulerType=sched/backfill",
        "SchedulerParameters=sched_interval=2",
        "SlurmctldParameters=enable_configless",
        f"NodeName={node} NodeAddr=127.0.0.1 {topo} State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes={node} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


def daemon_host(namespace: bool | None = None) -> tuple[str, list[str]]:
    """The node's name and the command prefix that runs a SLURM daemon so that its host name
    resolves to loopback: this machine's short host name and no prefix where its host name
    resolves to loopback; else (or with ``namespace=True``) ``localhost`` and a prefix that
    starts the daemon in a UTS namespace of its own named so. RuntimeError where the host name
    does not resolve to loopback and no such namespace can be made."""
    full = socket.gethostname()
    if namespace is None:
        namespace = not resolves_to_loopback(full)
    if not namespace:
        return full.split(".")[0], []
    probe = subprocess.run(["unshare", "--uts", "hostname", NAMESPACE_HOST],
                           capture_output=True, text=True, timeout=30, check=False)
    if probe.returncode != 0:
        try:
            addrs = sorted({str(i[4][0]) for i in socket.getaddrinfo(full, None,
                                                                     socket.AF_INET)})
        except OSError as err:
            addrs = [f"nothing ({err})"]
        raise RuntimeError(
            f"this machine's host name {full!r} resolves to {', '.join(addrs)}, not "
            f"loopback, and a UTS namespace cannot be made here ({probe.stderr.strip()}): "
            "SLURM's daemons would listen there, so the cluster does not start (map the "
            "name to 127.0.0.1 in /etc/hosts, or run with CAP_SYS_ADMIN)")
    return NAMESPACE_HOST, ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"',
                            NAMESPACE_HOST]


def slurmdbd_conf(root: Path, node: str, dbd_port: int, db_port: int) -> str:
    """slurmdbd.conf (next to slurm.conf, where slurmdbd looks for it): slurmdbd at
    127.0.0.1:``dbd_port`` storing into the MariaDB at 127.0.0.1:``db_port``."""
    return "\n".join([
        "AuthType=auth/munge",
        f"AuthInfo=socket={root / 'munge.socket'}",
        f"DbdHost={node}",
        "DbdAddr=127.0.0.1",
        f"DbdPort={dbd_port}",
        # as in slurm.conf: bind to the host name's address (undocumented for slurmdbd.conf in
        # 22.05, which lists only the IPv4/IPv6 options, but honoured; tested)
        "CommunicationParameters=NoInAddrAny",
        "SlurmUser=root",
        f"PidFile={root / 'slurmdbd.pid'}",
        f"LogFile={root / 'slurmdbd.log'}",
        "StorageType=accounting_storage/mysql",
        "StorageHost=127.0.0.1",
        f"StoragePort={db_port}",
        "StorageUser=slurm",
        "StoragePass=slurm",
        "StorageLoc=slurm_acct_db",
        "",
    ])


def _start_mariadb(root: Path, port: int) -> Proc:
    """A MariaDB of its own under ``root/db`` on 127.0.0.1:``port`` (and a Unix socket), with a
    user ``slurm`` for slurmdbd; detached so that init reaps it."""
    data, sock = root / "db", root / "mariadb.sock"
    subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root",
                    "--auth-root-authentication-method=normal", "--skip-test-db"],
                   check=True, capture_output=True, timeout=120)
    subprocess.run(["sh", "-c", 'exec "$@" >/dev/null 2>&1 </dev/null &', "sh", "mariadbd",
                    "--no-defaults", f"--datadir={data}", "--user=root",
                    "--bind-address=127.0.0.1", f"--port={port}", f"--socket={sock}",
                    f"--pid-file={root / 'mariadbd.pid'}",
                    f"--log-error={root / 'mariadbd.log'}", "--skip-name-resolve",
                    "--innodb-buffer-pool-size=16M"], check=True, timeout=30)
    proc = Proc.of(_pid(root / "mariadbd.pid"))
    sql = ("CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm'; "
           "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';")
    for _ in range(300):
        done = subprocess.run(["mariadb", "--no-defaults", f"--socket={sock}", "-u", "root",
                               "-e", sql], capture_output=True, text=True, timeout=30)
        if done.returncode == 0:
            return proc
        time.sleep(0.1)
    raise RuntimeError(f"MariaDB did not answer: {done.stderr}")


def start(root: Path, *, min_job_age: int = 300, timeout: float = 60,
          namespace: bool | None = None, accounting: bool = False) -> Cluster:
    """Start munged, slurmctld and slurmd with everything under ``root``, listening on
    loopback only (``namespace``: see :func:`daemon_host`; None decides from the host name);
    with ``accounting``, also a MariaDB and a slurmdbd (so ``sacct`` answers, as on most
    sites); wait until the node is idle. Stops what it started and raises RuntimeError (with the
    daemons' logs) when the cluster does not come up."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    for sub in ("state", "spool"):
        (root / sub).mkdir(exist_ok=True)
    if SYSTEM_CONF.exists():
        raise RuntimeError(f"{SYSTEM_CONF} exists: this machine has a SLURM of its own")
    hw = node_hardware()
    node, prefix = daemon_host(namespace)
    conf = root / "slurm.conf"
    ports = (_free_port(), _free_port())
    dbd_port, db_port = (_free_port(), _free_port()) if accounting else (None, None)
    conf.write_text(slurm_conf(root, hw, node, ports, min_job_age, dbd_port))
    cluster = Cluster(root, conf, hw["CPUs"], hw["RealMemory"], ctld_port=ports[0], node=node)
    # Also at SLURM's default path: snakemake-executor-plugin-slurm-jobstep drops SLURM_CONF
    # from the environment of the srun it starts inside a job, which then reads this file
    # (removed by stop()).
    SYSTEM_CONF.parent.mkdir(parents=True, exist_ok=True)
    SYSTEM_CONF.write_text(conf.read_text())
    cluster.system_conf = True
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    daemons = [
        ("munged", ["munged", "--force", f"--socket={root / 'munge.socket'}",
                    f"--key-file={key}", f"--pid-file={root / 'munged.pid'}",
                    f"--log-file={root / 'munged.log'}", f"--seed-file={root / 'munged.seed'}"]),
        ("slurmdbd", [*prefix, "slurmdbd"]),
        ("slurmctld", [*prefix, "slurmctld", "-c", "-i", "-f", str(conf)]),
        ("slurmd", [*prefix, "slurmd", "-f", str(conf)]),
    ]
    try:
        for name, cmd in daemons:
            if name == "slurmdbd":
                if not accounting:
                    continue
                assert dbd_port and db_port
                cluster.procs["mariadbd"] = _start_mariadb(root, db_port)
                dbd = root / "slurmdbd.conf"  # slurmdbd reads it next to SLURM_CONF
                dbd.write_text(slurmdbd_conf(root, node, dbd_port, db_port))
                os.chmod(dbd, 0o600)
            subprocess.run(cmd, check=True, capture_output=True, env=cluster.env, timeout=30)
            cluster.procs[name] = Proc.of(_pid(root / f"{name}.pid"))
            if name == "slurmdbd":
                _wait_for_slurmdbd(cluster)
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


def _wait_for_slurmdbd(cluster: Cluster, timeout: float = 60) -> None:
    """Wait until slurmdbd answers; register the cluster, the account :data:`ACCOUNT` and this
    user in it (before slurmctld starts), as a site does for its users."""
    deadline = time.monotonic() + timeout
    err = ""
    while time.monotonic() < deadline:
        proc = subprocess.run(["sacctmgr", "-i", "add", "cluster", "structablate"],
                              env=cluster.env, capture_output=True, text=True, timeout=30)
        if proc.returncode == 0 or "already exists" in proc.stdout + proc.stderr:
            break
        err = proc.stderr or proc.stdout
        time.sleep(0.5)
    else:
        raise RuntimeError(f"slurmdbd did not answer: {err}")
    user = pwd.getpwuid(os.getuid()).pw_name
    for cmd in (["add", "account", ACCOUNT, "cluster=structablate"],
                ["add", "user", user, f"account={ACCOUNT}", "cluster=structablate"]):
        cluster.run("sacctmgr", "-i", *cmd)
    cluster.account = ACCOUNT


def running(tmp_path_factory, accounting: bool = False):
    """The body of a module-scoped pytest fixture: the executor plugin (else a skip), a
    cluster from :func:`start_or_skip` in a fresh temporary folder, stopped when the module's
    tests end. ``accounting``: with slurmdbd and its database."""
    import pytest

    pytest.importorskip("snakemake_executor_plugin_slurm",
                        reason="the slurm extra (snakemake-executor-plugin-slurm) is missing")
    c = start_or_skip(tmp_path_factory.mktemp("slurmdbd" if accounting else "slurm"),
                      accounting=accounting)
    try:
        yield c
    finally:
        c.stop()


def site_profile(dest: Path, cluster: Cluster) -> Path:
    """profiles/slurm copied to ``dest`` with one edit, the documented one (docs/cluster.md,
    section 2): partitions.yaml names the cluster's partition and its limits."""
    import yaml

    shutil.copytree(Path(__file__).resolve().parents[1] / "profiles" / "slurm", dest)
    (dest / "partitions.yaml").write_text(yaml.safe_dump({"partitions": {cluster.partition: {
        "max_runtime": 1440, "max_mem_mb": cluster.mem_mb, "max_threads": cluster.cpus}}}))
    return dest


def start_or_skip(root: Path, **kwargs: object) -> Cluster:
    """:func:`start` for a test: skips (saying why) where :func:`unavailable` names a reason or
    the cluster does not start; but where the environment variable ``CI`` is set and SLURM is
    installed (:func:`unavailable` is None), a cluster that does not start fails the test, so
    CI tells a broken set-up from a machine without SLURM."""
    import pytest

    why = unavailable(bool(kwargs.get("accounting")))
    if why:
        pytest.skip(why)
    try:
        return start(root, **kwargs)  # type: ignore[arg-type]
    except RuntimeError as err:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and SLURM is installed, but the single-node cluster did "
                        f"not start: {str(err)[:4000]}")
        pytest.skip(str(err)[:2000])


def main(argv: list[str] | None = None) -> int:
    """``python tests/slurm_cluster.py DIR [--accounting]``: start a cluster in DIR, print the
    ``export SLURM_CONF=…`` line for the shell and the node's CPUs and memory (what
    ``profiles/slurm/partitions.yaml`` wants), and keep it up until SIGTERM or Ctrl-C."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("dir", type=Path, help="a folder for its state, logs and slurm.conf")
    ap.add_argument("--accounting", action="store_true",
                    help="also a slurmdbd on a MariaDB of its own (sacct answers)")
    args = ap.parse_args(argv)
    why = unavailable(args.accounting)
    if why:
        print(why, file=sys.stderr)
        return 1
    c = start(args.dir.resolve(), accounting=args.accounting)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"export SLURM_CONF={c.conf}   # partition {c.partition}: max_threads {c.cpus}, "
          f"max_mem_mb {c.mem_mb}; node {c.node}; Ctrl-C stops it", flush=True)
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        c.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
