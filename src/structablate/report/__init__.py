"""The report: formatted tables, figures and the summary page built from the workflow's outputs.
The report formats; the numbers come from :mod:`structablate.stats` (bootstraps, power) and
:mod:`structablate.structure.quality` (the structure-quality guard's measurements).

* :mod:`~structablate.report.blocks` — frames → page tables (Table 1, Table 2, per-condition
  CIs, section recall, size matching, funnel, structure quality, resolving power).
* :mod:`~structablate.report.figures` — frames → matplotlib figures (forest plot, bars,
  dose-response, section recall, funnel).
* :mod:`~structablate.report.guard` — which comparisons the inputs cannot support, and why.
* :mod:`~structablate.report.verdict` — the four plain-words answers per corpus.
* :mod:`~structablate.report.provenance` — which models ran, and the flags (untrained
  reranker, replayed LLM outputs, gold size matching).
* :mod:`~structablate.report.summary` — per-condition means of a cell and the Markdown
  summary of all cells (``results/summary.md``).
* :mod:`~structablate.report.page` — the summary page; :mod:`~structablate.report.render` —
  the page's blocks (:class:`TableBlock`, :class:`FigureBlock`, :class:`Note`,
  :class:`PageSection`) and their Markdown / HTML rendering.
"""

from .guard import GuardSettings
from .page import (
    CellData,
    CorpusData,
    PageSettings,
    build_page,
    corpus_html,
    overview_html,
    write_page,
)
from .render import (
    FigureBlock,
    Note,
    PageSection,
    TableBlock,
    page_html,
    page_markdown,
    standalone_html,
)

__all__ = [
    "CellData",
    "CorpusData",
    "PageSettings",
    "FigureBlock",
    "GuardSettings",
    "Note",
    "PageSection",
    "TableBlock",
    "build_page",
    "corpus_html",
    "overview_html",
    "page_html",
    "page_markdown",
    "standalone_html",
    "write_page",
]
