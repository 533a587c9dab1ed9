"""Files known by their content: the sha256 of a file (:meth:`DigestCache.file`) and of a
model folder's files (:meth:`DigestCache.folder`), each file read once and its digest cached by
its ``(size, mtime_ns, ctime_ns, inode)``.

A file whose modification time is set back after an edit (``cp -p``, ``tar``, ``rsync -a`` of
another copy, ``os.utime``) still gets a new change time (``ctime``, which no user can set), so
its cached digest is not reused; a file staged again with the same bytes gets the same digest.
The workflow puts these digests into each job's rerun trigger (:func:`structablate.plan.jobs.
trigger`), so Snakemake reruns a job whose inputs' content changed whatever the clocks say.

The cache of a working folder is :data:`CACHE_FILE` (one JSON file, keyed by absolute path,
written atomically and merged with what other processes wrote); outside a working folder (no
``.snakemake/``) digests are cached in memory only.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["CACHE_FILE", "DigestCache", "model_files", "sha256_file", "stat_key"]

CACHE_FILE = ".snakemake/structablate-digests.json"
"""The digest cache of a working folder, relative to it (beside Snakemake's own records)."""

BLOCK = 1 << 20
"""Bytes read at a time while hashing."""


def stat_key(st: os.stat_result) -> list[int]:
    """What a cached digest is valid for: ``[size, mtime_ns, ctime_ns, inode]``."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def sha256_file(path: str | os.PathLike[str]) -> str:
    """The sha256 (hex) of a file's bytes, read in blocks of :data:`BLOCK`."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()


def model_files(folder: str | os.PathLike[str]) -> list[str]:
    """The files of a model folder that can change what it computes, as sorted paths relative
    to ``folder`` (``/``-separated): every regular file below it (links followed, as the
    loaders do), except hidden ones (a name starting with ``.``: the unpack marker,
    ``.gitattributes``, a ``.git`` or ``.cache`` folder) and Markdown (``README.md``, the model
    card)."""
    root = Path(folder)
    out = []
    for here, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.startswith(".") or name.lower().endswith(".md"):
                continue
            path = Path(here) / name
            if path.is_file():
                out.append(path.relative_to(root).as_posix())
    return sorted(out)


def combine(digests: Iterable[tuple[str, str]]) -> str:
    """One sha256 (hex) over ``(relative path, file digest)`` pairs, in the given order."""
    h = hashlib.sha256()
    for rel, d in digests:
        h.update(rel.encode("utf-8", "surrogateescape") + b"\x00" + d.encode() + b"\n")
    return h.hexdigest()


class DigestCache:
    """sha256 digests of files, cached by :func:`stat_key` in memory and, with a ``path``, in
    that JSON file (see the module docstring)."""

    _default: dict[str, DigestCache] = {}

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else None
        self._entries: dict[str, list] | None = None
        self._new: dict[str, list] = {}

    @classmethod
    def default(cls) -> DigestCache:
        """This process's cache for the current working folder: :data:`CACHE_FILE` where the
        folder holds a ``.snakemake/`` (Snakemake and its jobs), in memory otherwise."""
        cwd = os.getcwd()
        have = cls._default.get(cwd)
        if have is None or have.path is None:
            path = Path(cwd) / CACHE_FILE
            if have is None or path.parent.is_dir():
                have = cls._default[cwd] = cls(path if path.parent.is_dir() else None)
        return have

    def _load(self) -> dict[str, list]:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    def _read(self) -> dict[str, list]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # none yet, or damaged: it only saves reading
            return {}
        return data if isinstance(data, dict) else {}

    def file(self, path: str | os.PathLike[str]) -> str:
        """The sha256 (hex) of the file at ``path``; read only when its size, modification
        time, change time or inode differ from the cached entry's. ``OSError`` (no such
        file, unreadable) propagates."""
        real = os.path.abspath(path)
        entries = self._load()
        st = os.stat(real)
        key = stat_key(st)
        cached = entries.get(real)
        if isinstance(cached, list) and len(cached) == 5 and cached[:4] == key:
            return str(cached[4])
        digest = sha256_file(real)
        if stat_key(os.stat(real)) == key:  # not changed while it was read
            entries[real] = self._new[real] = [*key, digest]
        return digest

    def files(self, paths: Iterable[str]) -> dict[str, str]:
        """``path -> sha256`` of each of ``paths`` (in their order); a path that cannot be
        read maps to ``"unreadable: <why>"`` (the job that reads it names the file). Saves
        the cache."""
        out = {}
        for p in paths:
            try:
                out[p] = self.file(p)
            except OSError as exc:
                out[p] = f"unreadable: {exc.strerror or exc}"
        self.save()
        return out

    def folder(self, folder: str | os.PathLike[str],
               only: Callable[[str], bool] | None = None) -> str:
        """One sha256 (hex) over a model folder's files (:func:`model_files`: their relative
        paths and contents; with ``only``, those whose relative path it accepts), each file
        hashed once (:meth:`file`). Saves the cache."""
        root = Path(folder)
        files = [rel for rel in model_files(root) if only is None or only(rel)]
        digest = combine((rel, self.file(root / rel)) for rel in files)
        self.save()
        return digest

    def save(self) -> None:
        """Write the entries computed since the last save into :attr:`path`, merged with what
        other processes wrote meanwhile, in one atomic replace; an unwritable folder only
        costs reading the files again next time."""
        if self.path is None or not self._new:
            self._new.clear()
            return
        merged = {**self._read(), **self._new}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".digests-")
        except OSError:
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(merged, fh, separators=(",", ":"))
            os.replace(tmp, self.path)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            return
        self._entries = merged
        self._new.clear()
