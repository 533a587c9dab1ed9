"""The study's vocabulary: its conditions, the mechanisms they vary, its contrasts and its
dose ladder, stated once. Everything else asks this module (a predicate, an enum member)
instead of comparing a condition's name or a mechanism's string; ``tests/test_study_vocabulary``
keeps it so. Standard library only: the settings derive their enumerations from here, so it
sits below every other module of the package.

A condition varies exactly three things (the paper's §3.1 and Table 4; docs/conditions.md):
where chunk boundaries fall (:class:`Boundaries`, and for structural boundaries the
:class:`Structure` they follow), what precedes each chunk's content when it is embedded
(:class:`Prefix`, with the breadcrumb's ``depth``), and how retrieval searches
(:class:`Retrieval`). Conditions that differ only in retrieval read one chunkset and so one
embedding file (A4 reads A3's, G4 reads G3's). A1 takes A0's fixed windows unchanged and adds
a context an LLM writes (the ``contexts`` stage): its chunk table is made from A0's, not cut.

Two controls are structablate's own, beyond the paper (:data:`BEYOND_PAPER`):

* ``GP``, the gold-structure placebo: G3's chunks (gold boundaries, depth-3 breadcrumb) with
  heading paths shuffled across documents exactly as P shuffles A3's, so G3 − GP asks C2's
  question on structure that is right by construction;
* ``A0g``, fixed windows whose per-document size follows the *gold* structural chunks
  whatever ``size_match_structure`` says (A0 keeps following ``size_match_structure``), so
  G2 − A0g is the chunking contrast with a size control on the gold arm.

Adding a condition of an existing kind is one entry in :data:`CONDITIONS` (and, if it is one
of the paper's, in :data:`PAPER_CONDITIONS`); the settings' enumeration, the rules' wildcard
constraints, the chunk and code-fingerprint logic all follow from its fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Literal


class Boundaries(StrEnum):
    """Where chunk boundaries fall."""

    FIXED = "fixed"
    """Fixed windows, sized per document to structural chunks (:func:`size_reference`)."""
    STRUCTURAL = "structural"
    """One chunk per section (split or merged by size), following a :class:`Structure`."""


class Structure(StrEnum):
    """Whose section tree structural boundaries follow."""

    GOLD = "gold"
    """The documents' own headings."""
    INDUCED = "induced"
    """Sections an inducer finds in the heading-free paragraphs."""


class Prefix(StrEnum):
    """What precedes a chunk's content in the embedded text."""

    NONE = "none"
    BREADCRUMB = "breadcrumb"
    """The chunk's own heading path, to ``depth`` levels below the title."""
    PLACEBO = "placebo"
    """A heading path of another document, of the same depth (shuffled)."""
    CONTEXT = "context"
    """A situating context an LLM writes for the chunk (the ``contexts`` stage)."""


class Retrieval(StrEnum):
    """How retrieval searches the chunk vectors."""

    FLAT = "flat"
    TWO_STAGE = "two_stage"
    """Route to sections first, then rank the routed sections' chunks."""


LLMStage = Literal["induction", "contexts", "queries"]
LLM_STAGES: tuple[LLMStage, ...] = ("induction", "contexts", "queries")
"""The stages that call an LLM: structure induction (for conditions on induced structure),
the situating contexts of :attr:`Prefix.CONTEXT` conditions, and question generation (per
corpus)."""


@dataclass(frozen=True)
class Condition:
    """One condition of the study (see the module docstring)."""

    name: str
    boundaries: Boundaries
    structure: Structure | None
    """The structure structural boundaries follow; None for fixed windows."""
    prefix: Prefix
    depth: int
    """Breadcrumb depth (heading levels below the title); 0 without a breadcrumb."""
    retrieval: Retrieval
    chunkset: str
    """The chunk table and embedding file this condition reads (its own name, or that of the
    condition it shares them with)."""
    size_match: Structure | None = None
    """Fixed windows only: the structure whose structural chunks set each document's window
    size; None follows the ``size_match_structure`` setting."""
    windows_of: str | None = None
    """A chunkset made from another chunkset's chunk table rather than cut (A1: A0's
    windows, to which its LLM stage adds the prefix); None for chunksets the chunk rule cuts."""


_B, _S, _P, _R = Boundaries, Structure, Prefix, Retrieval

CONDITIONS: Mapping[str, Condition] = MappingProxyType({
    c.name: c
    for c in [
        Condition("A0", _B.FIXED, None, _P.NONE, 0, _R.FLAT, "A0"),
        Condition("A1", _B.FIXED, None, _P.CONTEXT, 0, _R.FLAT, "A1", windows_of="A0"),
        Condition("A2", _B.STRUCTURAL, _S.INDUCED, _P.NONE, 0, _R.FLAT, "A2"),
        Condition("A3-d1", _B.STRUCTURAL, _S.INDUCED, _P.BREADCRUMB, 1, _R.FLAT, "A3-d1"),
        Condition("A3-d2", _B.STRUCTURAL, _S.INDUCED, _P.BREADCRUMB, 2, _R.FLAT, "A3-d2"),
        Condition("A3", _B.STRUCTURAL, _S.INDUCED, _P.BREADCRUMB, 3, _R.FLAT, "A3"),
        Condition("P", _B.STRUCTURAL, _S.INDUCED, _P.PLACEBO, 3, _R.FLAT, "P"),
        Condition("A4", _B.STRUCTURAL, _S.INDUCED, _P.BREADCRUMB, 3, _R.TWO_STAGE, "A3"),
        Condition("G2", _B.STRUCTURAL, _S.GOLD, _P.NONE, 0, _R.FLAT, "G2"),
        Condition("G3", _B.STRUCTURAL, _S.GOLD, _P.BREADCRUMB, 3, _R.FLAT, "G3"),
        Condition("G4", _B.STRUCTURAL, _S.GOLD, _P.BREADCRUMB, 3, _R.TWO_STAGE, "G3"),
        # beyond the paper (BEYOND_PAPER)
        Condition("GP", _B.STRUCTURAL, _S.GOLD, _P.PLACEBO, 3, _R.FLAT, "GP"),
        Condition("A0g", _B.FIXED, None, _P.NONE, 0, _R.FLAT, "A0g", size_match=_S.GOLD),
    ]
})
"""Every condition by name, in the order the settings list them."""

CONDITION_NAMES: tuple[str, ...] = tuple(CONDITIONS)
"""The names :data:`CONDITIONS` holds, in order (the settings' enumeration of ``conditions``
and of the contrasts' members)."""

PAPER_CONDITIONS: tuple[str, ...] = (
    "A0", "A1", "A2", "A3-d1", "A3-d2", "A3", "P", "A4", "G2", "G3", "G4")
"""The eleven conditions of the paper's Table 4, in its order."""

BEYOND_PAPER: tuple[str, ...] = tuple(c for c in CONDITIONS if c not in PAPER_CONDITIONS)
"""Exploratory controls of structablate's own (GP, A0g); the paper defines neither."""

STRUCTURE_NAMES: tuple[str, ...] = tuple(s.value for s in Structure)
"""The values of :class:`Structure` (the settings' enumeration of ``size_match_structure``)."""


# ---------------------------------------------------------------------- lookup


def condition(name: str | Condition) -> Condition:
    """A condition by name (a :class:`Condition` passes through), with a clear error for an
    unknown one."""
    if isinstance(name, Condition):
        return name
    try:
        return CONDITIONS[name]
    except KeyError:
        raise KeyError(
            f"unknown condition {name!r}; known: {', '.join(CONDITIONS)}"
        ) from None


def is_condition(name: str) -> bool:
    """Whether ``name`` names a condition."""
    return name in CONDITIONS


def chunksets_for(conditions: Iterable[str]) -> list[str]:
    """The distinct chunksets the given conditions read, in first-seen order."""
    return list(dict.fromkeys(condition(c).chunkset for c in conditions))


# ---------------------------------------------------------------------- boundaries


def is_fixed_window(c: str | Condition) -> bool:
    """Whether the condition's chunks are fixed windows (A0, A1, A0g)."""
    return condition(c).boundaries is Boundaries.FIXED


def is_structural(c: str | Condition) -> bool:
    """Whether the condition's chunks follow a section tree (one chunk per section)."""
    return condition(c).boundaries is Boundaries.STRUCTURAL


def structure_of(c: str | Condition) -> Structure | None:
    """The structure the condition's boundaries follow; None for fixed windows."""
    return condition(c).structure


def sections_of(c: str | Condition) -> Structure:
    """The sections table a condition's chunking reads: the structure its boundaries follow,
    or for fixed windows the one that labels each window with a section (gold)."""
    return condition(c).structure or Structure.GOLD


def on_gold(c: str | Condition) -> bool:
    """Whether the condition's boundaries follow the documents' own headings."""
    return condition(c).structure is Structure.GOLD


def on_induced(c: str | Condition) -> bool:
    """Whether the condition's boundaries follow induced sections."""
    return condition(c).structure is Structure.INDUCED


def size_reference(c: str | Condition, default: Structure | str) -> Structure | None:
    """Whose structural chunks size a fixed-window condition's windows: its own
    ``size_match`` (A0g: gold), else ``default`` (the ``size_match_structure`` setting);
    None for structural conditions."""
    cond = condition(c)
    if cond.boundaries is not Boundaries.FIXED:
        return None
    return cond.size_match or Structure(default)


PAPER_SIZE_MATCH = Structure.INDUCED
"""The paper sizes its fixed windows to the induced structural chunks (Appendix J): the
default of ``size_match_structure``."""


def reads_induced_structure(c: str | Condition, size_match_structure: Structure | str) -> bool:
    """Whether the condition reads induced sections: its boundaries follow them, or its fixed
    windows are sized to them (:func:`size_reference`)."""
    return on_induced(c) or size_reference(c, size_match_structure) is Structure.INDUCED


def same_boundaries(a: str | Condition, b: str | Condition) -> bool:
    """Whether two conditions cut the same spans (same boundaries, same structure)."""
    ca, cb = condition(a), condition(b)
    return (ca.boundaries, ca.structure) == (cb.boundaries, cb.structure)


# ---------------------------------------------------------------------- prefix


def uses_breadcrumb(c: str | Condition) -> bool:
    """Whether the chunking renders a heading-path breadcrumb as the prefix: the chunk's own
    path or, for the placebo, another document's (``structablate.chunking.prefix``)."""
    return condition(c).prefix in (Prefix.BREADCRUMB, Prefix.PLACEBO)


def uses_real_breadcrumb(c: str | Condition) -> bool:
    """Whether the prefix is the chunk's own heading path."""
    return condition(c).prefix is Prefix.BREADCRUMB


def uses_placebo(c: str | Condition) -> bool:
    """Whether the prefix is a shuffled heading path of another document (P, GP)."""
    return condition(c).prefix is Prefix.PLACEBO


def needs_llm_contexts(c: str | Condition) -> bool:
    """Whether the prefix is a situating context an LLM writes (A1)."""
    return condition(c).prefix is Prefix.CONTEXT


def llm_stage(c: str | Condition) -> LLMStage | None:
    """The LLM stage the condition's own chunks need (``contexts`` for A1), None if none.
    Induced structure is a stage of the corpus, not of a condition: see
    :func:`reads_induced_structure`."""
    return "contexts" if needs_llm_contexts(c) else None


# ---------------------------------------------------------------------- retrieval


def is_two_stage(c: str | Condition) -> bool:
    """Whether retrieval routes to sections before ranking chunks (A4, G4)."""
    return condition(c).retrieval is Retrieval.TWO_STAGE


def is_flat(c: str | Condition) -> bool:
    """Whether retrieval searches every chunk vector at once."""
    return condition(c).retrieval is Retrieval.FLAT


# ---------------------------------------------------------------------- chunksets


def derived_from(c: str | Condition) -> str | None:
    """The chunkset whose chunks a condition reuses rather than cutting its own: the one it
    shares chunks and vectors with (A4 → A3, G4 → G3), or the one whose windows its LLM stage
    prefixes (A1 → A0); None for a condition that cuts its own."""
    cond = condition(c)
    if cond.chunkset != cond.name:
        return cond.chunkset
    return cond.windows_of


def is_cut(chunkset: str) -> bool:
    """Whether the chunk rule cuts this chunkset (every one not made from another's windows)."""
    return condition(chunkset).windows_of is None


def _only(what: str, found: list[str]) -> str:
    if len(found) != 1:
        raise RuntimeError(f"study: expected exactly one {what}, found {found}")
    return found[0]


BM25_CHUNKSET: str = _only("gold structural chunkset without prefix", [
    c.name for c in CONDITIONS.values()
    if c.boundaries is Boundaries.STRUCTURAL and c.structure is Structure.GOLD
    and c.prefix is Prefix.NONE and c.retrieval is Retrieval.FLAT])
"""The chunkset of the BM25 non-lexicality check (the paper's Appendix I): gold structural
chunks without prefix (G2), cut for every corpus whether or not G2 is among the conditions."""


# ---------------------------------------------------------------------- contrasts


PAPER_CONTRASTS: Mapping[str, tuple[str, str]] = MappingProxyType({
    "C1": ("A3", "A1"),
    "C2": ("A3", "P"),
    "C3": ("G3", "A3"),
    "C4": ("A4", "A3"),
})
"""The paper's pre-registered contrasts (§3.2, Table 5), ``name -> (a, b)`` with
``delta = a − b``: C1 structure with heading paths against LLM contexts on fixed windows, C2
real against shuffled heading paths, C3 gold against induced structure, C4 two-stage against
flat retrieval over the same vectors. The default of ``statistics.contrasts``."""


def paper_contrast_name(pair: tuple[str, str]) -> str | None:
    """The paper's name (C1–C4) of the contrast ``a − b``, None if it is not one of them."""
    return next((n for n, p in PAPER_CONTRASTS.items() if tuple(pair) == p), None)


PRIMARY_METRIC = "covNDCG@10"
"""The metric of the pre-registered primary cell (with the strong embedder and no reranker;
the paper's §A.4)."""


QUESTION_PAIRS: Mapping[str, tuple[tuple[str, str], ...]] = MappingProxyType({
    "boundaries": (("A2", "A0"), ("G2", "A0g"), ("G2", "A0")),
    "paths": (("A3", "A2"), ("G3", "G2")),
    "metadata": (("A3", "P"), ("G3", "GP")),
    "contexts": (("A3", "A1"),),
    "routing": (("A4", "A3"), ("G4", "G3")),
})
"""For each mechanism question the verdict answers, its candidate contrasts ``(a, b)``: the
paper's arm (induced structure) first, then the gold-structure arm (G2 − A0g and G3 − GP use
the controls beyond the paper)."""


CONTROLS: Mapping[tuple[str, str], tuple[tuple[str, str], ...]] = MappingProxyType({
    ("A3", "P"): (("G3", "GP"),),
    ("A4", "A3"): (("G4", "G3"),),
    ("G2", "A0"): (("G2", "A0g"),),
    ("A2", "A0"): (("G2", "A0g"),),
    ("A3", "A2"): (("G3", "G2"),),
})
"""For a contrast ``a − b`` of the paper, the contrasts that ask the same question with one
known difference from the paper's set-up removed: the gold arm (structure right by
construction: G3 − GP for C2, G4 − G3 for C4, G3 − G2 for the heading-path step) and windows
sized to gold (G2 − A0g). Controls of structablate's own (docs/conditions.md); the results
pages' side-by-side with the paper explains a difference by them
(:func:`structablate.report.comparisons.against_paper`)."""


# ---------------------------------------------------------------------- dose ladder


def dose_ladder(structure: Structure | str = Structure.INDUCED) -> Mapping[str, int]:
    """The breadcrumb-depth ladder on ``structure``: the flat structural conditions on it
    whose prefix is none or their own heading path, by depth (name -> depth; on induced
    structure A2 = 0, A3-d1 = 1, A3-d2 = 2, A3 = 3, the paper's §6.6)."""
    st = Structure(structure)
    rungs = sorted((c for c in CONDITIONS.values()
                    if c.boundaries is Boundaries.STRUCTURAL and c.structure is st
                    and c.retrieval is Retrieval.FLAT
                    and c.prefix in (Prefix.NONE, Prefix.BREADCRUMB)),
                   key=lambda c: c.depth)
    depths = [c.depth for c in rungs]
    if len(set(depths)) != len(depths):
        raise RuntimeError(f"study: two rungs of the {st} dose ladder share a depth: "
                           f"{[(c.name, c.depth) for c in rungs]}")
    return MappingProxyType({c.name: c.depth for c in rungs})


DOSE_LADDER: Mapping[str, int] = dose_ladder(Structure.INDUCED)
"""The paper's exploratory dose ladder (induced structure), name -> breadcrumb depth."""


def breadcrumb_rungs(ladder: Mapping[str, int] = DOSE_LADDER) -> list[str]:
    """The rungs of a ladder that carry a breadcrumb (all but the depth-0 one)."""
    return [c for c in ladder if uses_breadcrumb(c)]
