"""Atomic, deterministic file writing.

Every table the workflow produces goes through :func:`write_parquet`, so a killed job never
leaves a half-written file under its final name, and the same frame always gives the same bytes.

Files are created with mode ``0o666`` filtered by the process umask (and by a folder's default
ACL), like any file ``open`` creates: a research group that shares a results folder under
``umask 002`` can read (and replace) each other's outputs. ``tempfile.mkstemp`` is not used
because it creates ``0o600`` whatever the umask says.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl


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
    target, tmp = _atomic_target(path)
    try:
        df.write_parquet(tmp, compression="zstd", compression_level=3, statistics=True)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(obj: Any, path: str | os.PathLike[str]) -> None:
    """Write ``obj`` as pretty, key-sorted JSON atomically."""
    target, tmp = _atomic_target(path)
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=2, sort_keys=True, ensure_ascii=False)
            fh.write("\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_npy(array: np.ndarray, path: str | os.PathLike[str]) -> None:
    """Write a numpy array atomically in ``.npy`` format."""
    target, tmp = _atomic_target(path)
    try:
        with open(tmp, "wb") as fh:
            np.save(fh, array, allow_pickle=False)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_parquet(path: str | os.PathLike[str], columns: list[str] | None = None) -> pl.DataFrame:
    """Read a Parquet table, naming the file in the error if it is missing or unreadable."""
    try:
        return pl.read_parquet(path, columns=columns)
    except Exception as exc:  # pragma: no cover - message enrichment only
        raise type(exc)(f"{path}: {exc}") from exc
