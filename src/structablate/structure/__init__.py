"""Structure induction: an LLM inducer (Appendix H) and an embedding-TextTiling inducer.

Entry point for the workflow: :func:`induce_documents` (config in, sections and report out).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from structablate.corpus.flatten import FlatDocument, Section
from structablate.structure.induce import (
    InducedStructure,
    InductionConfig,
    LLMInducer,
)
from structablate.structure.report import induction_report, span_identity, span_identity_share
from structablate.structure.texttiling import TextTilingConfig, TextTilingInducer

INDUCERS = ("llm", "texttiling")
"""``texttiling`` with ``texttiling.titles: llm`` is the hybrid: TextTiling boundaries and
levels, LLM headings (:mod:`structablate.structure.titles`)."""

__all__ = [
    "INDUCERS",
    "InducedStructure",
    "InductionConfig",
    "LLMInducer",
    "TextTilingConfig",
    "TextTilingInducer",
    "induce_documents",
    "induction_report",
    "make_inducer",
    "span_identity",
    "span_identity_share",
]


def make_inducer(
    induction_cfg: Mapping[str, Any] | None,
    llm_cfg: Mapping[str, Any] | None = None,
    *,
    base_dir: str | Path | None = None,
):
    """The inducer the ``induction`` config block names (``inducer: llm | texttiling``)."""
    cfg = dict(induction_cfg or {})
    kind = cfg.get("inducer", "llm")
    if kind == "texttiling":
        tt = TextTilingConfig.from_dict(cfg.get("texttiling"))
        titler = None
        if tt.titles == "llm":
            from structablate.llm.client import client_from_config
            from structablate.structure.titles import LLMTitler

            if not llm_cfg:
                raise ValueError("induction.texttiling.titles is 'llm' but there is no llm "
                                 "config block")
            titler = LLMTitler(client_from_config(llm_cfg, base_dir=base_dir),
                               InductionConfig.from_dict(cfg, llm_cfg))
        return TextTilingInducer(tt, titler=titler)
    if kind == "llm":
        from structablate.llm.client import client_from_config

        if not llm_cfg:
            raise ValueError("induction.inducer is 'llm' but there is no llm config block")
        client = client_from_config(llm_cfg, base_dir=base_dir)
        return LLMInducer(client, InductionConfig.from_dict(cfg, llm_cfg))
    raise ValueError(f"induction.inducer must be one of {INDUCERS}, got {kind!r}")


def induce_documents(
    docs: Sequence[FlatDocument],
    induction_cfg: Mapping[str, Any] | None,
    llm_cfg: Mapping[str, Any] | None = None,
    *,
    gold: Mapping[str, Sequence[Section]] | None = None,
    base_dir: str | Path | None = None,
) -> tuple[list[tuple[str, list[Section]]], dict[str, Any]]:
    """Induce every document; return ``(doc_id, sections)`` pairs and the induction report."""
    inducer = make_inducer(induction_cfg, llm_cfg, base_dir=base_dir)
    results = inducer.induce_many(docs)
    extra: dict[str, Any] = {}
    llm_user = getattr(inducer, "titler", None) or inducer
    client = getattr(llm_user, "client", None)
    if client is not None:
        from structablate.structure.induce import listing_budget

        cfg = llm_user.config
        extra = {"model": client.model, "llm_mode": client.mode, "llm": client.stats.as_dict(),
                 "context_tokens": cfg.context_tokens, "chars_per_token": cfg.chars_per_token,
                 "listing_budget_chars": (listing_budget(cfg) if llm_user is inducer
                                          else llm_user.budget())}
        client.close()
    if gold is None and any(d.sections for d in docs):
        gold = {d.doc_id: d.sections for d in docs}
    report = induction_report(results, gold, inducer=inducer.name, extra=extra)
    return [(r.doc_id, r.sections) for r in results], report
