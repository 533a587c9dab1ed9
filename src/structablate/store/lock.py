"""The stage lock: at most one live process does a stage's work on one cache, across nodes.

A lock is one small JSON file (pid, host, host identity, start time, a random token, a label
and the command line). It is created complete under its final name, atomically (a temporary
file hard-linked to the name, or ``O_EXCL`` where the filesystem has no hard links), so two
processes never both believe they hold it. The holder touches the file's mtime every
``heartbeat_s`` seconds from a daemon thread; a lock is *stale* when its holder ran on this
host and its pid is gone, or when its heartbeat is older than ``stale_after_s`` seconds. A
stale lock is renamed aside (one process wins) and taken. Times are wall-clock seconds; keep
``stale_after_s`` several heartbeats long and above the clock skew between nodes.

At interpreter exit every lock this process still holds is released. No ``fcntl``/``flock``
is used: the same NFS-safe primitives as the shards (:mod:`structablate.store.files`).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import logging
import os
import secrets
import sys
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from structablate.store.files import (
    StoreError,
    StoreUnwritable,
    host_identity,
    host_key,
    hostname,
    pid_alive,
    safe_name,
    write_new,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LockSettings:
    """The stale-lock rule of :class:`StageLock`."""

    stale_after_s: float = 120.0
    """A lock whose heartbeat (the lock file's mtime) is older than this is stale (seconds).
    Keep it several heartbeats long, and above the clock skew between nodes."""
    heartbeat_s: float = 15.0
    """The holder refreshes the lock file's mtime this often (seconds)."""
    wait_s: float = 150.0
    """How long to wait for a holder before giving up (seconds). Longer than
    ``stale_after_s``, so a rerun on another node outwaits the lock of a holder that was killed
    (whose heartbeat stops) and fails only when the holder is alive; 0: fail at once."""


class StageLocked(StoreError):
    """Another live process holds the stage lock; the message names it."""

    def __init__(self, message: str, holder: dict[str, Any]):
        super().__init__(message)
        self.holder = holder


class StageLockLost(StoreError):
    """This process held the stage lock, and it was broken or taken since (a heartbeat that
    stalled longer than ``stale_after_s``, or a hand deleting the file): another process may be
    doing the same work, so the holder must stop generating."""


class StageLock:
    """At most one live holder per lock file, across nodes; stale locks are broken.

    The lock file is created atomically, complete with its content (a temporary file linked to
    the lock name: ``link`` fails if the name exists, like ``O_EXCL``; where the filesystem has
    no hard links, ``O_EXCL`` create). It holds the holder's pid, host, start time and a random
    token. The holder touches the file every ``heartbeat_s`` from a daemon thread. A lock is
    stale when its holder runs on this host (same hostname, boot and pid namespace) and its
    pid is dead, or when its heartbeat is older than ``stale_after_s``; a stale lock is renamed
    aside (atomic: one process wins) and the acquisition retried. Otherwise :meth:`acquire`
    raises :class:`StageLocked` naming the holder.
    """

    def __init__(self, path: str | os.PathLike[str], *, settings: LockSettings | None = None,
                 label: str = "stage"):
        self.path = Path(path)
        self.settings = settings or LockSettings()
        self.label = label
        self.token: str | None = None
        self.broken: list[dict[str, Any]] = []
        """Holders of stale locks this instance broke."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost = False

    @property
    def held(self) -> bool:
        return self.token is not None

    def _content(self, token: str) -> bytes:
        now = time.time()
        info = {"pid": os.getpid(), "host": hostname(), "host_identity": host_identity(),
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
                "started_ts": now, "token": token, "label": self.label,
                "argv": " ".join(sys.argv)[:300]}
        return json.dumps(info, sort_keys=True).encode() + b"\n"

    def read_holder(self) -> dict[str, Any] | None:
        """The current holder's record (``mtime`` added), ``{}`` if unreadable, None if free."""
        try:
            with open(self.path, "rb") as fh:
                st = os.fstat(fh.fileno())
                raw = fh.read(65536)
        except FileNotFoundError:
            return None
        try:
            info = json.loads(raw)
            if not isinstance(info, dict):
                info = {}
        except ValueError:
            info = {}
        info["mtime"] = st.st_mtime
        return info

    def _stale_reason(self, holder: dict[str, Any]) -> str | None:
        age = time.time() - float(holder.get("mtime", 0.0))
        if holder.get("host_identity") == host_identity() and "pid" in holder:
            pid = int(holder["pid"])
            if pid != os.getpid() and not pid_alive(pid):
                return f"its process {pid} on this host is gone"
        if age > self.settings.stale_after_s:
            return (f"no heartbeat for {age:.0f} s (more than {self.settings.stale_after_s:.0f} "
                    "s)")
        return None

    def _try_create(self, token: str) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}_{os.getpid()}_{host_key()}_{token}.tmp")
        write_new(tmp, self._content(token))
        try:
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                pass
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV,
                                     errno.EMLINK):
                    raise
                return self._try_create_excl(token)
            # a lost reply over NFS can make a successful link look failed: trust the count
            return os.stat(tmp).st_nlink == 2
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def _try_create_excl(self, token: str) -> bool:
        try:
            write_new(self.path, self._content(token))
        except FileExistsError:
            return False
        return True

    def _break(self, holder: dict[str, Any], reason: str) -> None:
        aside = self.path.with_name(f".{self.path.name}.stale_{secrets.token_hex(4)}.tmp")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return  # someone else broke or released it
        moved = self.read_holder_at(aside)
        if moved.get("token") != holder.get("token"):
            # the lock changed hands between our look and the rename: put the new one back
            with contextlib.suppress(OSError):
                os.link(aside, self.path)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(aside)
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(aside)
        self.broken.append(holder)
        log.warning("%s: broke the stale lock %s of pid %s on %s (started %s): %s", self.label,
                    self.path, holder.get("pid", "?"), holder.get("host", "?"),
                    holder.get("started", "?"), reason)

    @staticmethod
    def read_holder_at(path: Path) -> dict[str, Any]:
        try:
            return json.loads(path.read_bytes())
        except (OSError, ValueError):
            return {}

    def describe(self, holder: dict[str, Any]) -> str:
        beat = time.time() - float(holder.get("mtime", time.time()))
        return (f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, started "
                f"{holder.get('started', '?')}, last heartbeat {beat:.0f} s ago")

    def acquire(self) -> StageLock:
        """Take the lock (breaking a stale one); raise :class:`StageLocked` if it is held."""
        if self.held:
            return self
        deadline = time.monotonic() + self.settings.wait_s
        token = secrets.token_hex(8)
        while True:
            try:
                ok = self._try_create(token)
            except OSError as exc:
                raise StoreUnwritable(
                    f"{self.label}: cannot create the lock {self.path} ({exc.strerror or exc}); "
                    "make its folder writable") from exc
            if ok:
                self.token = token
                self._start_heartbeat()
                _HELD_LOCKS.add(self)
                return self
            holder = self.read_holder()
            if holder is None:
                continue  # released meanwhile
            reason = self._stale_reason(holder)
            if reason is not None:
                self._break(holder, reason)
                continue
            if time.monotonic() < deadline:
                poll = min(5.0, self.settings.stale_after_s / 4, deadline - time.monotonic())
                time.sleep(max(0.05, poll))
                continue
            raise StageLocked(
                f"{self.label} is already running elsewhere: the lock {self.path} is held by "
                f"{self.describe(holder)}. Two generators would do the same work twice. Wait "
                f"for it to finish or stop it (on {holder.get('host', '?')}: kill "
                f"{holder.get('pid', '?')}); if that process no longer exists, delete "
                f"{self.path}. A lock without heartbeat for "
                f"{self.settings.stale_after_s:.0f} s is broken automatically.", holder)

    def _start_heartbeat(self) -> None:
        self._stop.clear()
        t = threading.Thread(target=self._beat, name=f"heartbeat {self.path.name}", daemon=True)
        self._thread = t
        t.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.settings.heartbeat_s):
            holder = self.read_holder()
            if holder is None or holder.get("token") != self.token:
                self.lost = True
                log.warning("%s: lost the lock %s (now %s); another process may be doing this "
                            "stage's work too", self.label, self.path,
                            "free" if holder is None else self.describe(holder))
                return
            with contextlib.suppress(OSError):
                os.utime(self.path)

    def ensure_held(self) -> None:
        """Raise :class:`StageLockLost` unless this instance still holds its lock: the lock
        file is there with this holder's token. A holder calls it before each generation (a
        read of one small file), so when another process broke the lock — this one's
        heartbeat stalled past ``stale_after_s``, say under a frozen filesystem — this one stops
        instead of generating side by side with the new holder. The heartbeat thread's finding
        (:attr:`lost`) counts too."""
        if not self.held:
            return
        holder = self.read_holder()
        if self.lost or holder is None or holder.get("token") != self.token:
            self.lost = True
            raise StageLockLost(
                f"{self.label}: lost the lock {self.path} "
                + ("(it was deleted)" if holder is None else
                   f"(now held by {self.describe(holder)})")
                + "; stopping so that two processes do not generate the same work; the "
                "other holder (or a rerun) continues from what this one committed")

    def release(self) -> None:
        """Give the lock up (only if this instance still holds it)."""
        if not self.held:
            return
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        holder = self.read_holder()
        if holder is not None and holder.get("token") == self.token:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        self.token = None
        _HELD_LOCKS.discard(self)

    def __enter__(self) -> StageLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def stage_lock_name(stage: str) -> str:
    """A file name for a stage's lock (``induction`` → ``induction.lock``)."""
    return f"{safe_name(stage, 120)}.lock"


_HELD_LOCKS: weakref.WeakSet[StageLock] = weakref.WeakSet()


@atexit.register
def _release_at_exit() -> None:  # pragma: no cover - exercised by subprocess tests
    """A process that exits (normally or by an exception) gives its locks up. Registered
    before the stores' own exit hook (:mod:`structablate.store.folder` imports this module),
    so it runs after it: the stores commit first, then the locks are released."""
    for lock in list(_HELD_LOCKS):
        with contextlib.suppress(Exception):
            lock.release()
