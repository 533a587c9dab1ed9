"""Every path the workflow writes, as a function of the results folder.

Pure (strings in, strings out) and below the plan, which hands it on as ``Plan.paths``: the
report and the fidelity gate read a results folder through it without importing the plan.
Rules build their ``input:``/``output:``/``log:`` entries from these methods (passing
``"{corpus}"``-style wildcard placeholders where Snakemake should match), glue scripts receive
paths from Snakemake and never build or split them, and the report finds its files the same
way. Logs and benchmarks live under the results folder too, so two runs with different
``results:`` folders never write over each other's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Paths:
    """Paths under ``results`` (``results/{corpus}/…``; see docs/contracts.md)."""

    results: str

    # ---------------------------------------------------------------- corpus
    def corpus(self, corpus: str) -> str:
        return f"{self.results}/{corpus}"

    def documents(self, corpus: str) -> str:
        return f"{self.corpus(corpus)}/documents.parquet"

    def paragraphs(self, corpus: str) -> str:
        return f"{self.corpus(corpus)}/paragraphs.parquet"

    def sections(self, corpus: str, kind: str) -> str:
        """Gold (``kind="gold"``) or induced (``"induced"``) sections."""
        return f"{self.corpus(corpus)}/sections_{kind}.parquet"

    def queries(self, corpus: str) -> str:
        return f"{self.corpus(corpus)}/queries.parquet"

    def qrels(self, corpus: str) -> str:
        return f"{self.corpus(corpus)}/qrels.parquet"

    def funnel(self, corpus: str) -> str:
        """The question funnel (QASPER, user questions, generated questions)."""
        return f"{self.corpus(corpus)}/funnel.json"

    def corpus_report(self, corpus: str) -> str:
        """The document build report of corpora whose questions come from a later rule."""
        return f"{self.corpus(corpus)}/corpus_report.json"

    def build_report(self, corpus: str, questions_generated: bool) -> str:
        """The corpus build report: the question funnel of a corpus that brings its questions
        (QASPER, user questions), the document build report of one whose questions are
        generated afterwards (``questions_generated``: Wikipedia, user corpora without
        questions)."""
        return self.corpus_report(corpus) if questions_generated else self.funnel(corpus)

    def question_funnel(self, corpus: str, questions_generated: bool) -> str | None:
        """The query-generation funnel of a corpus whose questions are generated, else None."""
        return self.funnel(corpus) if questions_generated else None

    def query_candidates(self, corpus: str) -> str:
        return f"{self.corpus(corpus)}/query_candidates.parquet"

    def induction_report(self, corpus: str) -> str:
        return f"{self.corpus(corpus)}/induction_report.json"

    def bm25(self, corpus: str) -> str:
        return f"{self.corpus(corpus)}/bm25.json"

    def bm25_per_query(self, corpus: str) -> str:
        return f"{self.corpus(corpus)}/bm25_per_query.parquet"

    def tokens(self, corpus: str) -> str:
        """The corpus token table (every document tokenized once, read by every chunk job)."""
        return f"{self.corpus(corpus)}/tokens.parquet"

    # ---------------------------------------------------------------- chunks and vectors
    def chunks(self, corpus: str, chunkset: str) -> str:
        return f"{self.corpus(corpus)}/chunks/{chunkset}.parquet"

    def chunk_stats(self, corpus: str, chunkset: str) -> str:
        return f"{self.corpus(corpus)}/chunks/{chunkset}.json"

    def vectors(self, corpus: str, embedder: str, chunkset: str) -> str:
        """Chunk vectors; ``chunkset="queries"`` holds the question vectors."""
        return f"{self.corpus(corpus)}/{embedder}/embeddings/{chunkset}.npy"

    def vector_stats(self, corpus: str, embedder: str, chunkset: str) -> str:
        return f"{self.corpus(corpus)}/{embedder}/embeddings/{chunkset}.json"

    # ---------------------------------------------------------------- cells
    def cell(self, corpus: str, embedder: str, reranker: str) -> str:
        return f"{self.corpus(corpus)}/{embedder}/{reranker}"

    def run(self, corpus: str, embedder: str, reranker: str, condition: str) -> str:
        return f"{self.cell(corpus, embedder, reranker)}/runs/{condition}.parquet"

    def run_report(self, corpus: str, embedder: str, condition: str) -> str:
        """What a first-stage search did (exact or HNSW, why, recall against exact)."""
        return f"{self.cell(corpus, embedder, 'none')}/runs/{condition}.json"

    def rerank_report(self, corpus: str, embedder: str, reranker: str, condition: str) -> str:
        """What a rerank job did: resolved precision, pairs scored vs served from the cache."""
        return f"{self.cell(corpus, embedder, reranker)}/runs/{condition}.json"

    def scores(self, corpus: str, embedder: str, reranker: str, condition: str) -> str:
        return f"{self.cell(corpus, embedder, reranker)}/scores/{condition}.parquet"

    def trec_run(self, corpus: str, embedder: str, reranker: str, condition: str) -> str:
        return f"{self.cell(corpus, embedder, reranker)}/trec/{condition}.run"

    def trec_qrels(self, corpus: str, embedder: str, reranker: str, condition: str) -> str:
        return f"{self.cell(corpus, embedder, reranker)}/trec/{condition}.qrels"

    def cell_table(self, corpus: str, embedder: str, reranker: str, name: str) -> str:
        """``summary``, ``contrasts``, ``contrasts_qtype`` or ``dose_response`` (Parquet)."""
        return f"{self.cell(corpus, embedder, reranker)}/{name}.parquet"

    def summary_markdown(self) -> str:
        return f"{self.results}/summary.md"

    # ---------------------------------------------------------------- report
    def report(self) -> str:
        return f"{self.results}/report"

    def report_cell(self, corpus: str, embedder: str, reranker: str, name: str) -> str:
        return f"{self.report()}/{corpus}/{embedder}/{reranker}/{name}"

    def condition_cis(self, corpus: str, embedder: str, reranker: str) -> str:
        """Per-condition means with bootstrap CIs of a cell (rule ``cell_statistics``)."""
        return self.report_cell(corpus, embedder, reranker, "condition_cis.parquet")

    def section_recall(self, corpus: str, embedder: str, reranker: str) -> str:
        """Stage-1 section recall of a cell's two-stage conditions (``cell_statistics``)."""
        return self.report_cell(corpus, embedder, reranker, "section_recall.parquet")

    def ranking_identity(self, corpus: str, embedder: str, reranker: str) -> str:
        """How often two conditions of a cell rank identically (``cell_statistics``)."""
        return self.report_cell(corpus, embedder, reranker, "ranking_identity.parquet")

    def report_corpus(self, corpus: str, name: str) -> str:
        return f"{self.report()}/{corpus}/{name}"

    def report_page(self, suffix: str) -> str:
        """``index.md``, ``index.html`` or ``overview.html``."""
        return f"{self.report()}/{suffix}"

    @classmethod
    def of_report_page(cls, path: str) -> Paths:
        """The layout whose :meth:`report_page` file is ``path`` (its inverse), so the page's
        glue reads the folder its own output sits in without parsing the config again;
        ValueError where ``path`` is not such a file."""
        page = os.path.normpath(path)
        layout = cls(os.path.dirname(os.path.dirname(page)) or ".")
        if os.path.normpath(layout.report_page(os.path.basename(page))) != page:
            raise ValueError(f"{path}: not a report page of a results folder "
                             f"(<results>/report/<file>)")
        return layout

    # ---------------------------------------------------------------- caches, logs
    def cache(self, name: str) -> str:
        """A content-addressed cache shared by jobs (``embeddings``, ``llm``, …)."""
        return f"{self.results}/cache/{name}"

    def wikipedia_pages(self, corpus: str) -> str:
        """The MediaWiki page cache of an API-sourced corpus."""
        return f"{self.results}/cache/wikipedia/{corpus}"

    def log(self, name: str) -> str:
        """A job's log, ``name`` relative to ``{results}/logs`` (wildcards allowed)."""
        return f"{self.results}/logs/{name}.log"

    def benchmark(self, name: str) -> str:
        """A job's Snakemake ``benchmark:`` file (wall time, peak memory)."""
        return f"{self.results}/benchmarks/{name}.tsv"


# ---------------------------------------------------------------- the files the report reads

CELL_FILES: dict[str, Callable[[Paths, str, str, str], str]] = {
    "summary": lambda p, c, e, r: p.cell_table(c, e, r, "summary"),
    "contrasts": lambda p, c, e, r: p.report_cell(c, e, r, "contrasts_marked.parquet"),
    "contrasts_raw": lambda p, c, e, r: p.cell_table(c, e, r, "contrasts"),
    "qtype": lambda p, c, e, r: p.cell_table(c, e, r, "contrasts_qtype"),
    "dose": lambda p, c, e, r: p.cell_table(c, e, r, "dose_response"),
    "cis": Paths.condition_cis,
    "section_recall": Paths.section_recall,
    "ranking_identity": Paths.ranking_identity,
    "cell": lambda p, c, e, r: p.report_cell(c, e, r, "cell.json"),
}
"""A cell's files the report reads, by name: its summary (per-condition means), the contrasts
as the guard marked them (``contrasts``) and as the statistics wrote them (``contrasts_raw``),
the contrasts per question type, the breadcrumb-depth dose-response, the condition CIs,
stage-1 section recall, ranking identity, and ``cell.json`` (what the report recorded of the
cell). Read by :mod:`structablate.report.folder`."""

CORPUS_FILES: dict[str, Callable[[Paths, str], str]] = {
    "funnel": Paths.funnel,
    "corpus_report": Paths.corpus_report,
    "bm25": Paths.bm25,
    "structure_quality": lambda p, c: p.report_corpus(c, "structure_quality.parquet"),
    "comparison_checks": lambda p, c: p.report_corpus(c, "comparison_checks.parquet"),
    "size_matching": lambda p, c: p.report_corpus(c, "size_matching.parquet"),
}
"""A corpus's files the report reads, by name: the question funnel (``funnel.json``: QASPER's,
user questions', generated questions'), the document build report of a corpus whose questions
are generated afterwards (``corpus_report.json``), the BM25 report, the structure-quality
guard's two tables and the size-matching table."""

CELL_FIGURES = {"bars": "condition_bars", "dose": "dose_response",
                "section_recall": "section_recall"}
"""A cell's figures on the report page: name -> file stem (PNG) under the cell's report
folder."""

CORPUS_FIGURES = {"forest": "forest", "funnel": "funnel"}
"""A corpus's figures on the report page: name -> file stem under the corpus's report
folder."""

PAGE_CELL_FILES = ("summary", "contrasts", "cis", "section_recall", "dose", "cell",
                   "ranking_identity")
"""The files of a cell the report page reads (:data:`CELL_FILES` names)."""


def page_corpus_files(paths: Paths, corpus: str, *, questions_generated: bool,
                      contextualized: Sequence[str]) -> dict[str, str | None]:
    """The files of a corpus the report page reads, ``None`` where the corpus has none:
    ``build_report`` (the question funnel of a corpus that brings its questions, the document
    build report of one whose questions are generated), ``question_funnel`` (the
    query-generation funnel, generated questions only), the structure-quality tables, BM25,
    size matching, and ``a1_stats`` (the statistics of the first chunkset of
    ``contextualized``, those whose prefix an LLM writes, where one ran)."""
    f = {k: CORPUS_FILES[k](paths, corpus) for k in CORPUS_FILES}
    return {
        "build_report": paths.build_report(corpus, questions_generated),
        "question_funnel": paths.question_funnel(corpus, questions_generated),
        "size_matching": f["size_matching"],
        "structure_quality": f["structure_quality"],
        "comparison_checks": f["comparison_checks"],
        "bm25": f["bm25"],
        "a1_stats": paths.chunk_stats(corpus, contextualized[0]) if contextualized else None,
    }


def page_files(paths: Paths, cells: Sequence[tuple[str, str, str]],
               corpora: Mapping[str, bool], contextualized: Sequence[str]
               ) -> dict[str, list[str]]:
    """Every file the report page reads or links, by kind: :data:`PAGE_CELL_FILES` of each
    cell ``(corpus, embedder, reranker)``, :func:`page_corpus_files` of each corpus
    (``corpora``: name -> whether its questions are generated), and the figures the page
    links. The rule ``report_page`` declares exactly these as its inputs, and its reader
    (:mod:`structablate.report.folder`) opens exactly these."""
    per_corpus = [page_corpus_files(paths, name, questions_generated=generated,
                                    contextualized=contextualized)
                  for name, generated in corpora.items()]

    def of_cells(which: str) -> list[str]:
        return [CELL_FILES[which](paths, *c) for c in cells]

    def of_corpora(which: str) -> list[str]:
        return [f[which] for f in per_corpus if f[which] is not None]

    return {
        "summaries": of_cells("summary"),
        "contrasts": of_cells("contrasts"),
        "dose": of_cells("dose"),
        "cis": of_cells("cis"),
        "section_recall": of_cells("section_recall"),
        "cell": of_cells("cell"),
        "ranking_identity": of_cells("ranking_identity"),
        "structure_quality": of_corpora("structure_quality"),
        "comparison_checks": of_corpora("comparison_checks"),
        "bm25": of_corpora("bm25"),
        "question_funnels": of_corpora("question_funnel"),
        "size_matching": of_corpora("size_matching"),
        "corpus_reports": of_corpora("build_report"),
        "a1_stats": of_corpora("a1_stats"),
        "figures": [paths.report_cell(*c, f"{stem}.png") for stem in CELL_FIGURES.values()
                    for c in cells]
        + [paths.report_corpus(name, f"{stem}.png") for name in corpora
           for stem in CORPUS_FIGURES.values()],
    }
