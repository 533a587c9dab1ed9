"""Slices of QASPER drawn for their question: a seeded sample stratified by structure depth,
split and year, with the slice's structure beside the whole source's.

A source's ``papers: N`` (:class:`~structablate.settings.corpora.QasperSource`) used to keep
the N smallest paper ids, the oldest papers: on the v0.3 test split the first 100 hold no
paper with a nested section, while 163 of its 416 papers have one. ``sample: stratified``
(the default) draws N papers instead:

* **Strata.** Each paper's key is ``(split, depth, year)``: ``split`` the source's label
  (one v0.3 file is one split; :func:`source_split`), ``depth`` ``"nested"`` when a section
  name holds QASPER's nesting separator ``" ::: "`` and ``"flat"`` otherwise, ``year`` the
  arXiv id's ``YYMM`` prefix read as ``20YY`` (``"unknown"`` for an id of another form).
* **Allocation.** Proportional with largest-remainder rounding (Hamilton's method): stratum
  ``k`` of ``N_k`` papers gets ``floor(n · N_k / N)``, and the ``n − Σ floor`` papers left go
  to the largest fractional parts, ties to the larger stratum, then to the smaller key. Every
  stratum gets at most its own size, and the counts sum to ``n``.
* **Draw.** Within a stratum, ``random.Random(f"{seed}:{split}:{depth}:{year}")`` samples
  from its ids in sorted order: the same seed and file give the same slice on any machine,
  and one stratum's draw does not depend on any other's.

``sample: first`` keeps the old slice (the N smallest ids), for pages built from it.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import PurePath

from structablate.corpus.evidence import SECTION_SEP

__all__ = [
    "SAMPLE_METHODS",
    "allocate",
    "draw",
    "paper_depth",
    "paper_stratum",
    "paper_year",
    "slice_profile",
    "source_split",
]

SAMPLE_METHODS = ("stratified", "first")
"""The ways a source's ``papers: N`` is drawn (:func:`draw`)."""

_ARXIV = re.compile(r"^(\d{2})(\d{2})\.\d{4,5}(v\d+)?$")


def paper_depth(paper: Mapping) -> str:
    """``"nested"`` when some section name of the paper's ``full_text`` holds QASPER's
    nesting separator ``" ::: "`` (a subsection), else ``"flat"`` (top-level sections only)."""
    return "nested" if any(SECTION_SEP in (sec.get("section_name") or "")
                           for sec in paper.get("full_text", ())) else "flat"


def paper_year(paper_id: str) -> str:
    """The year an arXiv-style id ``YYMM.NNNNN`` was submitted in (``"1909.00001"`` ->
    ``"2019"``); ``"unknown"`` for any other id or a month outside 1-12."""
    m = _ARXIV.match(paper_id)
    if not m or not 1 <= int(m.group(2)) <= 12:
        return "unknown"
    return str(2000 + int(m.group(1)))


def paper_sections(paper: Mapping) -> int:
    """The number of named sections of a paper's ``full_text`` (nested ones included)."""
    return sum(1 for sec in paper.get("full_text", ()) if (sec.get("section_name") or "").strip())


def paper_stratum(paper_id: str, paper: Mapping, split: str) -> tuple[str, str, str]:
    """``(split, depth, year)``: the stratum of one paper (module docstring)."""
    return split, paper_depth(paper), paper_year(paper_id)


def source_split(source: Mapping) -> str:
    """A source's split label: the Hugging Face ``split`` when given, else the file name's
    ``train`` / ``dev`` / ``test`` (``qasper-test-v0.3.json`` -> ``test``), else the file
    name itself."""
    if source.get("split"):
        return str(source["split"])
    name = PurePath(str(source["path"])).name
    found = [s for s in ("train", "dev", "validation", "test") if s in name.lower()]
    return found[0] if len(found) == 1 else name


def allocate(sizes: Mapping[tuple, int], n: int) -> dict[tuple, int]:
    """Proportional allocation of ``n`` over strata of ``sizes`` by largest remainder: each
    stratum gets ``floor(n · N_k / N)``, the rest go one each to the largest fractional parts
    (ties: larger stratum first, then smaller key). ``0 <= n <= N`` is required; the result
    sums to ``n`` and never exceeds a stratum's size."""
    total = sum(sizes.values())
    if not 0 <= n <= total:
        raise ValueError(f"allocate: {n} papers asked for from {total}")
    if total == 0:
        return {k: 0 for k in sizes}
    # exact integer arithmetic: quota_k = n * N_k / total
    base = {k: (n * v) // total for k, v in sizes.items()}
    rem = {k: (n * v) % total for k, v in sizes.items()}
    left = n - sum(base.values())
    for k in sorted(sizes, key=lambda k: (-rem[k], -sizes[k], k))[:left]:
        base[k] += 1
    return base


def draw(papers: Mapping[str, Mapping], n: int, *, method: str = "stratified",
         seed: int | None = None, split: str = "") -> list[str]:
    """The ids (sorted) of the ``n`` papers a source's ``papers: n`` keeps: the ``n`` smallest
    ids (``method="first"``) or the stratified sample of the module docstring (``seed``
    required). ``ValueError`` when ``n`` exceeds the papers or the method is unknown."""
    if n > len(papers):
        raise ValueError(f"{n} papers asked for, the source holds {len(papers)}")
    if method == "first":
        return sorted(papers)[:n]
    if method != "stratified":
        raise ValueError(f"sample: {method!r} is not one of {', '.join(SAMPLE_METHODS)}")
    if seed is None:
        raise ValueError("a stratified sample needs the run's seed")
    strata: dict[tuple[str, str, str], list[str]] = {}
    for pid in sorted(papers):
        strata.setdefault(paper_stratum(pid, papers[pid], split), []).append(pid)
    counts = allocate({k: len(v) for k, v in strata.items()}, n)
    kept: list[str] = []
    for key in sorted(strata):
        rng = random.Random(f"{seed}:{':'.join(key)}")
        kept += rng.sample(strata[key], counts[key])
    return sorted(kept)


def _shares(counts: Counter, total: int) -> dict[str, float]:
    return {k: counts[k] / total for k in sorted(counts)} if total else {}


def slice_profile(papers: Mapping[str, Mapping], splits: Mapping[str, str]) -> dict:
    """The structure of a set of papers, to compare a slice with the whole: ``papers``,
    ``nested_share`` (share with a nested section), ``mean_sections`` (named sections per
    paper), ``split`` and ``year`` (share of papers per label; ``splits``: paper id -> split
    label). Shares are fractions of ``papers``; NaN-free (0 papers give empty shares)."""
    n = len(papers)
    depth = Counter(paper_depth(p) for p in papers.values())
    sections = [paper_sections(p) for p in papers.values()]
    return {
        "papers": n,
        "nested_share": depth["nested"] / n if n else 0.0,
        "mean_sections": math.fsum(sections) / n if n else 0.0,
        "split": _shares(Counter(splits[pid] for pid in papers), n),
        "year": _shares(Counter(paper_year(pid) for pid in papers), n),
    }


def sample_report(whole: Mapping[str, Mapping], kept: Sequence[str],
                  splits: Mapping[str, str], *, method: str, seed: int | None) -> dict:
    """The ``sample`` block of a QASPER corpus's report (``funnel.json``): how the slice was
    drawn and :func:`slice_profile` of the slice beside the whole of its sources (the slice's
    split and year shares list every label of the whole, 0 where it kept none)."""
    out: dict = {"method": method}
    if method == "stratified":
        out["seed"] = seed
    out["slice"] = slice_profile({pid: whole[pid] for pid in kept}, splits)
    out["whole"] = slice_profile(whole, splits)
    for group in ("split", "year"):  # a label the slice missed: a share of 0, not absent
        out["slice"][group] = {k: out["slice"][group].get(k, 0.0)
                               for k in out["whole"][group]}
    return out
