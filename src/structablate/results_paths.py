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
