"""The report's view of the grid, for rules/report.smk (kept out of the Snakefile so the rules
file holds rules only)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping


def report_cells(corpora: Iterable[str], embedders: Iterable[str],
                 rerankers_for: Callable[[str], list[str]],
                 corpus: str | None = None) -> list[tuple[str, str, str]]:
    """(corpus, embedder, reranker) of every cell, in grid order (of one corpus if given)."""
    embedders = list(embedders)
    return [(c, e, r) for c in corpora if corpus in (None, c)
            for e in embedders for r in rerankers_for(e)]


def corpus_report_file(results: str, corpora: Mapping[str, Mapping], corpus: str) -> str:
    """The funnel a corpus's builder writes: Wikipedia's selection report, or the question
    funnel every other builder writes (QASPER and bring-your-own corpora)."""
    kind = corpora[corpus]["type"]
    return f"{results}/{corpus}/" + ("corpus_report.json" if kind == "wikipedia"
                                     else "funnel.json")


def cell_paths(root: str, cells: Iterable[tuple[str, str, str]], name: str) -> list[str]:
    """``root/corpus/embedder/reranker/name`` for every cell."""
    return [f"{root}/{c}/{e}/{r}/{name}" for c, e, r in cells]
