"""Measure names in the ir_measures style: ``covNDCG@10``, ``R@50``, ``RR``, ``nDCG@10``,
``TokCov@512``.

The cutoff after ``@`` is parsed from the name, so any positive integer works
(``covNDCG@5``, ``R@100``, ``TokCov@4096``). ``RR`` takes an optional cutoff (``RR@10`` counts
only the first 10 ranks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("covNDCG", "nDCG", "R", "RR", "TokCov")
_CUTOFF_REQUIRED = {"covNDCG", "nDCG", "R", "TokCov"}
_NAME = re.compile(r"^(covNDCG|nDCG|RR|R|TokCov)(?:@([0-9]+))?$")


@dataclass(frozen=True)
class Measure:
    """A parsed measure name: ``kind`` is one of :data:`KINDS`, ``cutoff`` is ``k`` (ranks) for
    the rank measures and the token budget for ``TokCov``; ``None`` for a bare ``RR``."""

    name: str
    kind: str
    cutoff: int | None


def parse_measure(name: str) -> Measure:
    """Parse ``name`` (e.g. ``"covNDCG@10"``); raise ``ValueError`` for anything else."""
    m = _NAME.match(name.strip()) if isinstance(name, str) else None
    if m is None:
        raise ValueError(
            f"unknown measure {name!r}; expected one of covNDCG@k, nDCG@k, R@k, RR, RR@k, TokCov@B"
        )
    kind, cut = m.group(1), m.group(2)
    if cut is None and kind in _CUTOFF_REQUIRED:
        raise ValueError(f"measure {name!r} needs a cutoff, e.g. {kind}@10")
    cutoff = int(cut) if cut is not None else None
    if cutoff is not None and cutoff < 1:
        raise ValueError(f"measure {name!r}: the cutoff must be a positive integer")
    return Measure(name=name, kind=kind, cutoff=cutoff)
