"""Atomic, deterministic file writing, and reads that name a damaged file.

Every table the workflow produces goes through :func:`write_parquet` (JSON :func:`write_json`,
vectors :func:`write_npy`, any other file :func:`atomic_path`), so a killed job never leaves a
half-written file under its final name, and the same frame always gives the same bytes. A write
that fails because the device is full (``ENOSPC``, a quota, or a short write, which numpy reports
as ``20736 requested and 16352 written``) raises :class:`NoSpaceError`, which says "no space
left on device" and names the folder; nothing partial is left. A vector file that cannot be read
(:func:`read_npy`: cut short by a full disk or a killed copy) is named with what to do.

Files are created with mode ``0o666`` filtered by the process umask (and by a folder's default
ACL), like any file ``open`` creates: a research group that shares a results folder under
``umask 002`` can read (and replace) each other's outputs. ``tempfile.mkstemp`` is not used
because it creates ``0o600`` whatever the umask says.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from structablate.errors import StructablateError


class NoSpaceError(StructablateError, OSError):
    """An output could not be written because its device is full or over quota; the message
    names the file and its folder. ``errno`` is ``ENOSPC``."""

    def __init__(self, message: str):
        super().__init__(message)
        self.errno = errno.ENOSPC


class DamagedFileError(StructablateError, ValueError):
    """An output of an earlier job cannot be read (cut short, overwritten); the message names
    the file and says to delete it so the workflow rebuilds it."""


_SHORT_WRITE = re.compile(r"\b\d+ requested and \d+ written\b")
_NO_SPACE_TEXT = ("no space left on device", "disk quota exceeded", "os error 28",
                  "os error 122")


def is_no_space(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) says the device is full: errno
    ``ENOSPC`` or ``EDQUOT``, the text of either (Rust writers such as polars' report ``No
    space left on device (os error 28)`` inside their own error), or a short write (numpy's
    ``N requested and M written``: the file system took fewer bytes than asked)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        text = str(e).lower()
        if any(t in text for t in _NO_SPACE_TEXT) or _SHORT_WRITE.search(text):
            return True
        e = e.__cause__ or e.__context__
    return False


def no_space_error(target: str | os.PathLike[str], exc: BaseException) -> NoSpaceError:
    """The :class:`NoSpaceError` for a failed write of ``target``."""
    folder = Path(target).parent
    return NoSpaceError(
        f"{target}: no space left on device in {folder} ({exc}); nothing partial was left "
        "under the output's name. Free space on that file system (or set results: to a folder "
        "on another), then run again: the job resumes from its inputs")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[str]:
    """Write ``path`` atomically: yields a new temporary file in its folder to write, renamed
    to ``path`` when the block ends, removed when it raises. A full device is reported as
    :class:`NoSpaceError` naming the folder."""
    try:
        target, tmp = _atomic_target(path)
    except OSError as exc:
        if is_no_space(exc):
            raise no_space_error(path, exc) from exc
        raise
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, Exception) and is_no_space(exc):
            raise no_space_error(target, exc) from exc
        raise


def create_temp(folder: str | os.PathLike[str], name: str) -> str:
    """Create a new empty file ``.{name}.<random>.tmp`` in ``folder`` and return its path.

    Unlike ``tempfile.mkstemp`` (always ``0o600``) the file gets ``0o666`` minus the umask,
    the mode a plain ``open(path, "w")`` would give it, so the renamed output is shared as the
    user's umask says. ``O_EXCL`` makes the name this process's own.
    """
    for _ in range(100):
        tmp = os.path.join(os.fspath(folder), f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(f"{folder}: no free temporary name for {name}")  # pragma: no cover


def _atomic_target(path: str | os.PathLike[str]) -> tuple[Path, str]:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    return target, create_temp(target.parent, target.name)


def write_parquet(df: pl.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write ``df`` to ``path`` atomically (temp file + rename), zstd, no row-group randomness."""
    with atomic_path(path) as tmp:
        df.write_parquet(tmp, compression="zstd", compression_level=3, statistics=True)


def write_json(obj: Any, path: str | os.PathLike[str]) -> None:
    """Write ``obj`` as pretty, key-sorted JSON atomically."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2, sort_keys=True, ensure_ascii=False)
        fh.write("\n")


def write_npy(array: np.ndarray, path: str | os.PathLike[str]) -> None:
    """Write a numpy array atomically in ``.npy`` format."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.save(fh, array, allow_pickle=False)


def read_npy(path: str | os.PathLike[str]) -> np.ndarray:
    """Read a ``.npy`` array written by :func:`write_npy`. A file that is not a whole ``.npy``
    (cut short by a full disk or a killed copy, overwritten) raises :class:`DamagedFileError`
    naming it and saying to delete it: Snakemake takes a file that exists for done, so every
    rerun would otherwise fail the same way."""
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (ValueError, EOFError, OSError) as exc:
        raise DamagedFileError(
            f"{path}: not a readable .npy array ({exc}); the file is damaged (cut short by a "
            "full disk, a killed copy or transfer). Delete it and run again: the workflow "
            "rebuilds it") from exc


def read_parquet(path: str | os.PathLike[str], columns: list[str] | None = None) -> pl.DataFrame:
    """Read a Parquet table, naming the file in the error if it is missing or unreadable (and
    for a file that exists but is not whole Parquet, saying to delete it)."""
    try:
        return pl.read_parquet(path, columns=columns)
    except Exception as exc:  # message enrichment only
        hint = ""
        if Path(path).is_file() and not isinstance(exc, pl.exceptions.ColumnNotFoundError):
            hint = ("; if the file is damaged (cut short by a full disk, a killed copy or "
                    "transfer), delete it and run again: the workflow rebuilds it")
        raise type(exc)(f"{path}: {exc}{hint}") from exc
