"""Embedding with the real offline model: batch invariance, cache, truncation accounting."""

import numpy as np
import pytest
from conftest import MODEL

from structablate.embedding import Embedder, EmbedderConfig, EmbeddingCache, embed_texts

TEXTS = [
    "Structure-aligned chunks cut where the author cut.",
    "A placebo prefix carries a heading path of another document. " * 3,
    "short",
    "Two-stage retrieval routes a query to sections before it ranks chunks within them.",
]


@pytest.fixture(scope="module")
def embedder():
    return Embedder(EmbedderConfig(model=MODEL, batch_size=4, length_bucket=16))


def test_vectors_are_normalised_and_semantic(embedder):
    v = embedder.encode(TEXTS)
    assert v.shape == (4, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    q = embedder.encode(["which retrieval first picks sections?"])[0]
    assert int(np.argmax(v @ q)) == 3


def test_vector_of_a_text_does_not_depend_on_its_batch(embedder):
    alone = np.stack([embedder.encode([t])[0] for t in TEXTS])
    together = embedder.encode(TEXTS)
    reversed_ = embedder.encode(TEXTS[::-1])[::-1]
    mixed = embedder.encode(["other text " * 5, TEXTS[0], "x", TEXTS[3]])
    assert np.array_equal(alone, together)
    assert np.array_equal(together, reversed_)
    assert np.array_equal(mixed[1], together[0]) and np.array_equal(mixed[3], together[3])


def test_cache_hits_skip_the_model_and_return_identical_vectors(embedder, tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    v1, s1 = embed_texts(TEXTS + [TEXTS[0]], embedder, cache, progress=False)
    assert (s1.texts, s1.unique_texts, s1.cache_hits, s1.computed) == (5, 4, 0, 4)
    assert np.array_equal(v1[0], v1[4])
    v2, s2 = embed_texts([TEXTS[2], "new text"], embedder, cache, progress=False)
    assert (s2.cache_hits, s2.computed) == (1, 1)
    assert np.array_equal(v2[0], v1[2])
    cache.close()
    # a new connection (another job) sees the committed vectors
    again = EmbeddingCache(tmp_path / "c.sqlite")
    assert len(again) == 5
    v3, s3 = embed_texts(TEXTS, embedder, again, progress=False)
    assert s3.computed == 0 and np.array_equal(v3, v1[:4])


def test_cache_key_separates_models_and_texts():
    a = EmbeddingCache.key("m1|x", "text")
    assert a != EmbeddingCache.key("m2|x", "text") and a != EmbeddingCache.key("m1|x", "text ")


def test_truncation_is_counted(embedder, tmp_path):
    long = "word " * (embedder.max_seq_length + 10)
    _, stats = embed_texts([long, "short"], embedder, None, progress=False)
    assert stats.truncated == 1 and stats.as_dict()["truncation_rate"] == 0.5
