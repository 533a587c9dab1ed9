"""The measure registry: every measure is declared once, in its own module, ir_measures style.

A measure module (``cov_ndcg.py``, ``ndcg.py``, ``rr.py``, ``recall.py``, ``tokcov.py``)
defines its exact per-query reference and its vectorized form and calls :func:`register` with
a :class:`MeasureDef`. Everything else is derived from the registry:

- :func:`parse_measure` turns a name such as ``covNDCG@10``, ``R@50``, ``RR``, ``RR@10`` or
  ``TokCov@512`` into a :class:`Measure`, with an error that lists the valid forms;
- :func:`measure_pattern` is the regular expression of exactly the names :func:`parse_measure`
  accepts (ECMAScript-compatible, for the config schema's ``pattern``);
- :func:`structablate.metrics.score_run` and :func:`structablate.metrics.score_query`
  dispatch through it.

Adding a measure is one new module that calls :func:`register` (plus one line importing it
in ``metrics/__init__.py``, and its section in ``docs/metrics.md``).

Name syntax: ``<kind>`` or ``<kind>@<cutoff>``, where ``<cutoff>`` is a positive integer
written without leading zeros (ranks ``k`` for rank measures, a token budget ``B`` for
``TokCov``). Whether a cutoff is required, optional or not allowed is the measure's choice.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

CUTOFF = "[1-9][0-9]*"


@dataclass(frozen=True)
class MeasureDef:
    """A measure as the registry holds it.

    ``kind``: the name before ``@`` (letters only); ``cutoff``: ``"required"``,
    ``"optional"`` or ``"none"``; ``cutoff_symbol``: how the docs write the cutoff (``k`` or
    ``B``); ``summary``: one line for listings and errors.
    ``reference(ranked, doc_chunks, gold, cutoff) -> float``: the exact per-query definition
    on plain spans. ``fast(layout, bound_run, cutoff) -> ndarray``: the same score for every
    query of a :class:`structablate.metrics.layout.Layout` at once (valid for documents whose
    chunks do not overlap; the others take ``reference``).
    """

    kind: str
    cutoff: Literal["required", "optional", "none"]
    cutoff_symbol: str
    summary: str
    reference: Callable[..., float]
    fast: Callable[..., Any]

    def forms(self) -> list[str]:
        """The name forms, e.g. ``["RR", "RR@k"]``."""
        with_cut = f"{self.kind}@{self.cutoff_symbol}"
        return {"required": [with_cut], "optional": [self.kind, with_cut],
                "none": [self.kind]}[self.cutoff]

    def pattern(self) -> str:
        """The regular expression of this measure's names (no anchors)."""
        kind = re.escape(self.kind)
        return {"required": f"{kind}@{CUTOFF}", "optional": f"{kind}(?:@{CUTOFF})?",
                "none": kind}[self.cutoff]


@dataclass(frozen=True)
class Measure:
    """A parsed measure name: ``kind`` names a registered measure, ``cutoff`` is ``k`` (ranks)
    for the rank measures and the token budget for ``TokCov``; ``None`` for a bare ``RR``."""

    name: str
    kind: str
    cutoff: int | None

    @property
    def definition(self) -> MeasureDef:
        return MEASURES[self.kind]


MEASURES: dict[str, MeasureDef] = {}
"""Registered measures by kind, in registration order."""

_KIND = re.compile(r"^[A-Za-z]+$")


def register(defn: MeasureDef) -> MeasureDef:
    """Add a measure to the registry (its module calls this once, at import)."""
    if not _KIND.match(defn.kind):
        raise ValueError(f"measure kind {defn.kind!r} must be letters only")
    if defn.kind in MEASURES and MEASURES[defn.kind] is not defn:
        raise ValueError(f"measure kind {defn.kind!r} is registered twice")
    if defn.cutoff not in ("required", "optional", "none"):
        raise ValueError(f"measure {defn.kind!r}: cutoff must be required, optional or none")
    MEASURES[defn.kind] = defn
    return defn


def measure_forms() -> list[str]:
    """Every accepted name form, e.g. ``["covNDCG@k", "nDCG@k", "RR", "RR@k", ...]``."""
    return [f for d in MEASURES.values() for f in d.forms()]


def measure_pattern() -> str:
    """An anchored regular expression matching exactly the names :func:`parse_measure`
    accepts; ECMAScript-compatible, so the config schema can use it as a ``pattern``."""
    return "^(?:" + "|".join(d.pattern() for d in MEASURES.values()) + ")$"


_SPLIT = re.compile(r"^([A-Za-z]+)(?:@([0-9]+))?$")


def parse_measure(name: str) -> Measure:
    """Parse ``name`` (e.g. ``"covNDCG@10"``); ``ValueError`` naming the problem otherwise."""
    forms = ", ".join(measure_forms())
    m = _SPLIT.match(name) if isinstance(name, str) else None
    if m is None or m.group(1) not in MEASURES:
        raise ValueError(f"unknown measure {name!r}; expected one of {forms}")
    defn = MEASURES[m.group(1)]
    cut = m.group(2)
    if cut is None and defn.cutoff == "required":
        raise ValueError(f"measure {name!r} needs a cutoff, e.g. {defn.kind}@10")
    if cut is not None and defn.cutoff == "none":
        raise ValueError(f"measure {name!r} takes no cutoff; write {defn.kind}")
    if cut is not None and not re.fullmatch(CUTOFF, cut):
        raise ValueError(
            f"measure {name!r}: the cutoff must be a positive integer without leading zeros")
    return Measure(name=name, kind=defn.kind, cutoff=int(cut) if cut is not None else None)
