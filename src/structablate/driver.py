"""The NVIDIA driver floor of the GPU runtime, checked on the node before CUDA is touched.

PyPI's torch 2.13.0 Linux wheel (and so vllm 0.30.0, containers/gpu.lock.txt) is built against
CUDA 13.0, which needs an NVIDIA driver of branch :data:`DRIVER_FLOOR` or newer. With an older
driver torch reports no GPU (or vLLM fails deep in its start-up) after the job has waited for
an H200; :func:`check_driver` says so in one line instead. ``python -m structablate.driver``
runs it (the Apptainer image's ``%test`` and ``%runscript`` do)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

__all__ = ["DRIVER_FLOOR", "DriverError", "check_driver", "driver_version", "main"]

DRIVER_FLOOR = 580
"""The oldest NVIDIA driver branch (major version) CUDA 13.0 runs on."""

PROC_VERSION = Path("/proc/driver/nvidia/version")


class DriverError(RuntimeError):
    """No NVIDIA driver, or one older than :data:`DRIVER_FLOOR`."""


def driver_version(proc_text: str | None = None) -> tuple[int, ...] | None:
    """The loaded NVIDIA kernel driver's version (``(580, 65, 6)``), from
    ``/proc/driver/nvidia/version`` (``proc_text`` in tests), else from ``nvidia-smi``; None
    when neither is there."""
    text = proc_text
    if text is None and PROC_VERSION.exists():
        text = PROC_VERSION.read_text(errors="replace")
    if text:
        m = re.search(r"Kernel Module(?: for \w+)?\s+(\d+(?:\.\d+)+)", text)
        if m:
            return tuple(int(p) for p in m.group(1).split("."))
    if proc_text is not None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    first = out.strip().splitlines()[0] if out.strip() else ""
    return tuple(int(p) for p in first.split(".")) if re.fullmatch(r"\d+(\.\d+)+", first) else None


def check_driver(version: tuple[int, ...] | None = None, *, floor: int = DRIVER_FLOOR) -> str:
    """``"NVIDIA driver X (>= floor)"``, or raise :class:`DriverError` naming the version found,
    the floor and why (``version`` defaults to :func:`driver_version`)."""
    if version is None:
        version = driver_version()
    if version is None:
        raise DriverError("no NVIDIA driver found (/proc/driver/nvidia/version, nvidia-smi): "
                          "this node has no GPU, or the container was started without --nv")
    shown = ".".join(map(str, version))
    if version[0] < floor:
        raise DriverError(f"NVIDIA driver {shown} is older than {floor}: the GPU runtime's torch "
                          "2.13.0 / vllm 0.30.0 are CUDA 13.0 builds, which need driver "
                          f">= {floor}; run on nodes with a newer driver (ask your admins), "
                          "or build the runtime from CUDA 12 wheels")
    return f"NVIDIA driver {shown} (>= {floor})"


def main() -> int:
    """Print the driver check; exit 1 when it fails."""
    try:
        print(check_driver())
    except DriverError as exc:
        print(f"structablate: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
