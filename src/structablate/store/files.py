"""The ground the store stands on: its two errors and the file and host primitives.

Every other module of :mod:`structablate.store` writes and reads through these, so the
guarantees below are stated once:

* :func:`write_all` writes every byte of its chunks to a file descriptor (``os.write`` may
  write less than asked; it loops), :func:`write_new` creates a file exclusively with its
  bytes ``fsync``-ed, :func:`pread_exact` reads ``n`` bytes at a byte offset
  (fewer only at the end of the file), :func:`fsync_dir` makes a rename or link in a folder
  durable (best effort: a filesystem that cannot ``fsync`` a folder is not an error).
* A *host identity* is hostname + boot id + pid namespace: two processes with equal
  identities share one pid space, so a pid recorded by one can be checked by the other with
  :func:`pid_alive`. :func:`host_key` is its 8-hex-digit short form, carried in the names of
  shards, temporary files and lock files so that garbage collection can tell its own host's
  dead writers from live writers elsewhere.
* :func:`safe_name` turns any text into a file-name fragment (letters, digits, ``.``, ``-``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import socket
from collections.abc import Iterable
from pathlib import Path

from structablate.errors import StructablateError


class StoreError(StructablateError, RuntimeError):
    """A cache folder cannot be used; the message names the path and what to do."""


class StoreUnwritable(StoreError, PermissionError):
    """The cache folder (or its parent) cannot be written."""


def hostname() -> str:
    """This machine's host name (``unknown-host`` when it has none)."""
    return socket.gethostname() or "unknown-host"


def host_identity() -> str:
    """Hostname + boot id + pid namespace: two processes with equal identities share pids."""
    boot = ""
    with contextlib.suppress(OSError):
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    pidns = 0
    with contextlib.suppress(OSError):
        pidns = os.stat("/proc/self/ns/pid").st_ino
    return f"{hostname()}|{boot}|{pidns}"


def host_key(identity: str | None = None) -> str:
    """The first 8 hex digits of the sha1 of a host identity (this host's when not given)."""
    return hashlib.sha1((identity or host_identity()).encode()).hexdigest()[:8]


def safe_name(name: str, limit: int = 48) -> str:
    """``name`` with every character but letters, digits, ``.`` and ``-`` replaced by ``-``,
    cut to ``limit`` characters (``x`` when nothing is left)."""
    return re.sub(r"[^A-Za-z0-9.-]", "-", name)[:limit] or "x"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (a zombie counts as dead)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
            return False
    return True


def fsync_dir(path: Path) -> None:
    """``fsync`` the folder ``path`` (best effort), so that a rename into it is durable."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_all(fd: int, chunks: Iterable[bytes | memoryview]) -> None:
    """Write every byte of ``chunks``, in order, to the file descriptor ``fd``."""
    for chunk in chunks:
        view = memoryview(chunk).cast("B")
        while view:
            n = os.write(fd, view)
            view = view[n:]


def write_new(path: Path, data: bytes) -> None:
    """Create the file ``path`` (exclusively: FileExistsError when it exists), write every
    byte of ``data`` with one :func:`write_all` and ``fsync`` it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        write_all(fd, [data])
        os.fsync(fd)
    finally:
        os.close(fd)


def pread_exact(fd: int, n: int, offset: int) -> bytes:
    """``n`` bytes of ``fd`` from byte ``offset`` (fewer only where the file ends first)."""
    parts = []
    while n > 0:
        b = os.pread(fd, n, offset)
        if not b:
            break
        parts.append(b)
        n -= len(b)
        offset += len(b)
    return b"".join(parts) if len(parts) != 1 else parts[0]
