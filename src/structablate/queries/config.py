"""Settings of the synthetic query generator (``corpora.<name>.queries``).

The settings class is :class:`structablate.settings.QueryGenSettings`; its defaults follow the
paper (Appendix F, Table 11: ``per_type`` 250, ``rouge_max`` 0.35, ``ngram_block`` 4), and the
span sizes and candidates per document are structablate's choices (the paper does not state
them), documented in ``docs/queries.md``.
"""

from __future__ import annotations

from structablate.settings import QTYPES, QueryGenSettings

__all__ = ["QTYPES", "QueryGenSettings", "per_doc_count"]

_DEFAULT_PER_DOC = QueryGenSettings().per_doc


def per_doc_count(cfg: QueryGenSettings, qtype: str) -> int:
    """Candidate spans drawn per document for ``qtype``: ``per_doc`` itself when it is an
    int, else its entry for the type (the default's entry when the mapping leaves it out)."""
    if isinstance(cfg.per_doc, int):
        return cfg.per_doc
    return int(cfg.per_doc.get(qtype, _DEFAULT_PER_DOC[qtype]))
