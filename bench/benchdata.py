"""Where the benchmarks find the optional real data (QASPER, the Wikipedia dev export).

A benchmark that reads real data takes its path as an argument; the default is the file under
the folder named by ``$STRUCTABLATE_DATA`` (the same variable the tests read). Nothing here
knows a machine's layout: with neither an argument nor the variable, or with a path that does
not exist, the benchmark stops with a message saying what to pass.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DATA_ENV = "STRUCTABLATE_DATA"


def default_data_file(*parts: str) -> str | None:
    """``$STRUCTABLATE_DATA/<parts>``, or ``None`` when the variable is unset."""
    root = os.environ.get(DATA_ENV)
    return str(Path(root).joinpath(*parts)) if root else None


def require_file(path: str | None, *, what: str, flag: str, parts: tuple[str, ...]) -> Path:
    """``path`` as a ``Path``; exits with a clear message when it is missing or absent."""
    rel = "/".join(parts)
    if path is None:
        sys.exit(f"{what}: no data path. Pass {flag}, or set {DATA_ENV} to the data folder "
                 f"that holds {rel}.")
    p = Path(path)
    if not p.is_file():
        sys.exit(f"{what}: no file {p}. Pass {flag}, or set {DATA_ENV} to the data folder "
                 f"that holds {rel}.")
    return p
