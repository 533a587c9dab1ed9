"""Structure induction: an LLM inducer (Appendix H), an embedding-TextTiling inducer and a
supervised inducer (boosted trees on paragraph-gap features, cross-fitted on the corpus's gold
or pretrained).

Entry point for the workflow: :func:`induce_documents` (settings in, sections and report out).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from structablate.corpus.flatten import FlatDocument, Section
from structablate.settings import (
    INDUCERS,
    InductionSettings,
    LLMSettings,
    parse,
    with_context_tokens,
)
from structablate.structure.induce import InducedStructure, LLMInducer
from structablate.structure.report import induction_report, span_identity, span_identity_share
from structablate.structure.supervised import SupervisedInducer
from structablate.structure.texttiling import TextTilingInducer

__all__ = [
    "INDUCER_FACTORIES",
    "InducedStructure",
    "LLMInducer",
    "SupervisedInducer",
    "TextTilingInducer",
    "induce_documents",
    "induction_report",
    "make_inducer",
    "span_identity",
    "span_identity_share",
]


def _client(llm: LLMSettings, base_dir: str | Path | None, stage: str | None):
    from structablate.llm.client import client_from_config

    return client_from_config(llm, base_dir=base_dir, stage=stage)


def _llm_inducer(induction: InductionSettings, llm: LLMSettings | None,
                 base_dir: str | Path | None, stage: str | None = None) -> LLMInducer:
    if llm is None:
        raise ValueError("induction.inducer is 'llm' but there is no llm config block")
    return LLMInducer(_client(llm, base_dir, stage), with_context_tokens(induction, llm))


def _texttiling_inducer(induction: InductionSettings, llm: LLMSettings | None,
                        base_dir: str | Path | None, stage: str | None = None
                        ) -> TextTilingInducer:
    titler = None
    if INDUCERS["texttiling"].uses_llm(induction):  # texttiling.titles: llm, the hybrid
        from structablate.structure.titles import LLMTitler

        if llm is None:
            raise ValueError("induction.texttiling.titles is 'llm' but there is no llm "
                             "config block")
        titler = LLMTitler(_client(llm, base_dir, stage), with_context_tokens(induction, llm))
    return TextTilingInducer(induction.texttiling, titler=titler)


def _supervised_inducer(induction: InductionSettings, llm: LLMSettings | None,
                        base_dir: str | Path | None, stage: str | None = None
                        ) -> SupervisedInducer:
    return SupervisedInducer(induction.supervised, embedder=induction.texttiling.model,
                             base_dir=base_dir)


INDUCER_FACTORIES: dict[str, Callable[..., Any]] = {
    "llm": _llm_inducer,
    "texttiling": _texttiling_inducer,
    "supervised": _supervised_inducer,
}
"""``induction.inducer`` name -> ``factory(induction, llm, base_dir, stage)`` building the
inducer (``stage``: the LLM stage lock its client takes, None for none);
the names are those of :data:`structablate.settings.INDUCERS`, where each inducer's facts
live. ``texttiling`` with ``texttiling.titles: llm`` is the hybrid: TextTiling boundaries and
levels, LLM headings (:mod:`structablate.structure.titles`)."""


def make_inducer(
    induction: InductionSettings | Mapping[str, Any] | None,
    llm: LLMSettings | Mapping[str, Any] | None = None,
    *,
    base_dir: str | Path | None = None,
    stage: str | None = None,
):
    """The inducer ``induction.inducer`` names, built from the induction settings (a mapping
    is validated like the config's ``induction`` block) and the stage's llm settings (None:
    no LLM; an inducer that calls one refuses). ``stage`` names the LLM stage lock an inducer
    that generates takes on its cache before the first generation (the workflow passes
    ``induction/<corpus>``; None: no lock)."""
    if not isinstance(induction, InductionSettings):
        induction = parse(InductionSettings, induction, "induction")
    if llm is not None and not isinstance(llm, LLMSettings):
        llm = parse(LLMSettings, llm, "llm")
    return INDUCER_FACTORIES[induction.inducer](induction, llm, base_dir, stage)


def induce_documents(
    docs: Sequence[FlatDocument],
    induction: InductionSettings | Mapping[str, Any] | None,
    llm: LLMSettings | Mapping[str, Any] | None = None,
    *,
    gold: Mapping[str, Sequence[Section]] | None = None,
    base_dir: str | Path | None = None,
    stage: str | None = None,
) -> tuple[list[tuple[str, list[Section]]], dict[str, Any]]:
    """Induce every document; return ``(doc_id, sections)`` pairs and the induction report.
    ``stage``: the LLM stage lock (:func:`make_inducer`)."""
    inducer = make_inducer(induction, llm, base_dir=base_dir, stage=stage)
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
    extra |= getattr(inducer, "last_report", None) or {}
    if gold is None and any(d.sections for d in docs):
        gold = {d.doc_id: d.sections for d in docs}
    report = induction_report(results, gold, inducer=inducer.name, extra=extra)
    return [(r.doc_id, r.sections) for r in results], report
