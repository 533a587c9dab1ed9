"""Atomic, deterministic file writing.

Every table the workflow produces goes through :func:`write_parquet`, so a killed job never
leaves a half-written file under its final name, and the same frame always gives the same bytes.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl


def _atomic_target(path: str | os.PathLike[str]) -> tuple[Path, str]:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    return target, tmp


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
