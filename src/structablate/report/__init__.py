"""The report: tables, figures and the summary page built from the workflow's outputs.

* :mod:`~structablate.report.tables` — data → frames and formatted tables (Table 1, Table 2,
  per-condition CIs, section recall, size matching, funnel).
* :mod:`~structablate.report.figures` — frames → matplotlib figures (forest plot, bars,
  dose-response, section recall, funnel).
* :mod:`~structablate.report.provenance` — which models ran, and the flags (untrained
  reranker, replayed LLM outputs, gold size matching).
* :mod:`~structablate.report.page` — the summary page; :mod:`~structablate.report.render` —
  Markdown / HTML rendering.
"""

from .page import CellData, CorpusData, build_page, overview_html, write_page
from .render import Figure, Note, Section, Table, page_html, page_markdown, standalone_html

__all__ = [
    "CellData",
    "CorpusData",
    "Figure",
    "Note",
    "Section",
    "Table",
    "build_page",
    "overview_html",
    "page_html",
    "page_markdown",
    "standalone_html",
    "write_page",
]
