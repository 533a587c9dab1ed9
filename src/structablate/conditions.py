"""The conditions of the study and the chunksets they embed: the eleven of the paper's Table 4,
and two controls of structablate's own (:data:`BEYOND_PAPER`).

A condition varies exactly three things: where chunk boundaries fall (``boundaries`` and
``structure``), what prefix precedes the content (``prefix``, ``depth``), and whether retrieval
is flat or two-stage (``retrieval``). Conditions that differ only in retrieval share one
chunkset and so one embedding file (A4 reads A3's vectors, G4 reads G3's).

The two controls beyond the paper (docs/conditions.md):

* ``GP``, the gold-structure placebo: G3's chunks (gold boundaries, depth-3 breadcrumb) with
  heading paths shuffled across documents exactly as P shuffles A3's, so G3 − GP asks C2's
  question on structure that is right by construction;
* ``A0g``, fixed windows whose per-document size follows the *gold* structural chunks
  whatever ``size_match_structure`` says (A0 keeps following ``size_match_structure``), so
  G2 − A0g is the chunking contrast with a size control on the gold arm.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Condition:
    name: str
    boundaries: str  # "fixed" | "structural"
    structure: str | None  # "gold" | "induced" | None (fixed windows)
    prefix: str  # "none" | "breadcrumb" | "placebo" | "context"
    depth: int  # breadcrumb depth (heading levels below the title); 0 without breadcrumb
    retrieval: str  # "flat" | "two_stage"
    chunkset: str  # name of the chunk table / embedding file this condition reads
    size_match: str | None = None
    """Fixed windows only: the structure (``gold`` | ``induced``) whose structural chunks set
    each document's window size; None follows the ``size_match_structure`` setting."""


CONDITIONS: dict[str, Condition] = {
    c.name: c
    for c in [
        Condition("A0", "fixed", None, "none", 0, "flat", "A0"),
        Condition("A1", "fixed", None, "context", 0, "flat", "A1"),
        Condition("A2", "structural", "induced", "none", 0, "flat", "A2"),
        Condition("A3-d1", "structural", "induced", "breadcrumb", 1, "flat", "A3-d1"),
        Condition("A3-d2", "structural", "induced", "breadcrumb", 2, "flat", "A3-d2"),
        Condition("A3", "structural", "induced", "breadcrumb", 3, "flat", "A3"),
        Condition("P", "structural", "induced", "placebo", 3, "flat", "P"),
        Condition("A4", "structural", "induced", "breadcrumb", 3, "two_stage", "A3"),
        Condition("G2", "structural", "gold", "none", 0, "flat", "G2"),
        Condition("G3", "structural", "gold", "breadcrumb", 3, "flat", "G3"),
        Condition("G4", "structural", "gold", "breadcrumb", 3, "two_stage", "G3"),
        # beyond the paper (BEYOND_PAPER)
        Condition("GP", "structural", "gold", "placebo", 3, "flat", "GP"),
        Condition("A0g", "fixed", None, "none", 0, "flat", "A0g", size_match="gold"),
    ]
}

PAPER_CONDITIONS: tuple[str, ...] = (
    "A0", "A1", "A2", "A3-d1", "A3-d2", "A3", "P", "A4", "G2", "G3", "G4")
"""The eleven conditions of the paper's Table 4, in its order."""

BEYOND_PAPER: tuple[str, ...] = ("GP", "A0g")
"""Exploratory controls of structablate's own; the paper defines neither."""


def condition(name: str) -> Condition:
    """Look a condition up by name, with a clear error for an unknown one."""
    try:
        return CONDITIONS[name]
    except KeyError:
        raise KeyError(
            f"unknown condition {name!r}; known: {', '.join(CONDITIONS)}"
        ) from None


def chunksets_for(conditions: list[str]) -> list[str]:
    """The distinct chunksets the given conditions need, in first-seen order."""
    out: list[str] = []
    for name in conditions:
        cs = condition(name).chunkset
        if cs not in out:
            out.append(cs)
    return out
