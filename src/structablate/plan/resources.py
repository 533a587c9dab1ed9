"""Named resource requests of the rules (in the style of PyPSA-Eur's rules): a rule asks for
``mem_mb=scaled(8000)`` rather than writing its own attempt arithmetic.

Snakemake retries a failed job (``--retries``, the profiles set it) with ``attempt`` 2, 3, …;
every memory and run-time request here grows linearly with it, so a job killed for memory or
time asks for twice as much on its second try. Units are Snakemake's: ``mem_mb`` in megabytes
(10^6 bytes), ``runtime`` in minutes, ``gpu`` a count of GPUs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Base = int | Callable[[Any], int]
"""A request on the first attempt: a number, or a function of the job's wildcards."""


def scaled(base: Base) -> Callable[[Any, int], int]:
    """A Snakemake resource function: ``base`` (a number, or a function of the wildcards)
    times ``attempt`` (1 on the first try)."""

    def resource(wildcards: Any, attempt: int) -> int:
        value = base(wildcards) if callable(base) else base
        return value * attempt

    return resource


def sized(mem_mb: int, runtime: int, *, gpu: int | None = None) -> dict[str, Any]:
    """The ``resources`` of a job as keyword arguments: ``mem_mb`` megabytes and ``runtime``
    minutes on the first attempt, each :func:`scaled`; with ``gpu`` also that many GPUs (a
    rule that may run on a GPU says ``gpu=0`` when it does not, so SLURM profiles see the
    key either way)."""
    out: dict[str, Any] = {} if gpu is None else {"gpu": int(gpu)}
    out.update(mem_mb=scaled(mem_mb), runtime=scaled(runtime))
    return out
