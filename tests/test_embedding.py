"""Embedding with the real offline model: batch invariance, precision and backend, cache,
truncation accounting."""

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import MODEL, shared_file
from hermetic import pythonpath

from structablate.embedding import (
    Embedder,
    EmbedderConfigError,
    EmbeddingCache,
    check_embedder,
    cpu_has_native_bf16,
    embed_texts,
    embedder_signature,
    padded_tokens,
    plan_batches,
    resolve_dtype,
)
from structablate.errors import ConfigError
from structablate.settings import EmbedderSettings, parse

TEXTS = [
    "Structure-aligned chunks cut where the author cut.",
    "A placebo prefix carries a heading path of another document. " * 3,
    "short",
    "Two-stage retrieval routes a query to sections before it ranks chunks within them.",
]


@pytest.fixture(scope="module")
def embedder():
    return Embedder(EmbedderSettings(model=MODEL, batch_size=4, length_bucket=16))


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
    cache = EmbeddingCache(tmp_path / "embeddings")
    v1, s1 = embed_texts(TEXTS + [TEXTS[0]], embedder, cache, progress=False)
    assert (s1.texts, s1.unique_texts, s1.cache_hits, s1.computed) == (5, 4, 0, 4)
    assert np.array_equal(v1[0], v1[4])
    v2, s2 = embed_texts([TEXTS[2], "new text"], embedder, cache, progress=False)
    assert (s2.cache_hits, s2.computed) == (1, 1)
    assert np.array_equal(v2[0], v1[2])
    cache.close()
    # a new instance (another job) sees the committed vectors
    again = EmbeddingCache(tmp_path / "embeddings")
    assert len(again) == 5
    v3, s3 = embed_texts(TEXTS, embedder, again, progress=False)
    assert s3.computed == 0 and np.array_equal(v3, v1[:4])


def test_a_job_in_another_process_reuses_committed_vectors(embedder, tmp_path):
    job = textwrap.dedent("""
        import sys
        from structablate.embedding import Embedder, EmbeddingCache, embed_texts
        from structablate.settings import EmbedderSettings
        emb = Embedder(EmbedderSettings(model=sys.argv[2], batch_size=4, length_bucket=16))
        cache = EmbeddingCache(sys.argv[1])
        _, stats = embed_texts(sys.argv[3:], emb, cache, progress=False)
        cache.close()
        print(stats.computed)
    """)
    src = str(Path(__file__).resolve().parents[1] / "src")
    out = subprocess.run([sys.executable, "-c", job, str(tmp_path / "emb"), MODEL, *TEXTS[:2]],
                         capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "PYTHONPATH": pythonpath(src)})
    assert out.returncode == 0 and out.stdout.split()[-1] == "2", out.stderr
    cache = EmbeddingCache(tmp_path / "emb")
    v, stats = embed_texts(TEXTS, embedder, cache, progress=False)
    assert (stats.cache_hits, stats.computed) == (2, 2)
    assert np.array_equal(v, embedder.encode(TEXTS))  # cached vectors are the computed ones


class _ConcurrentJob:
    """The real embedder, with another job committing TEXTS[3] while this one computes."""

    def __init__(self, embedder, other_cache):
        self._e, self._other, self.encoded = embedder, other_cache, []

    def __getattr__(self, name):
        return getattr(self._e, name)

    def encode_tokens(self, tok, **kw):
        self.encoded.extend(tuple(ids) for ids in tok.ids)
        if len(self.encoded) == 1:
            key = EmbeddingCache.key(self._e.signature, TEXTS[3])
            self._other.put_many([(key, self._e.encode([TEXTS[3]])[0])])
        return self._e.encode_tokens(tok, **kw)


def test_vectors_committed_meanwhile_by_another_job_are_not_recomputed(embedder, tmp_path):
    cache = EmbeddingCache(tmp_path / "emb")
    job = _ConcurrentJob(embedder, EmbeddingCache(tmp_path / "emb"))
    v, stats = embed_texts(TEXTS, job, cache, progress=False, commit_every=1)
    assert tuple(embedder.tokenize([TEXTS[3]]).ids[0]) not in job.encoded
    assert len(job.encoded) == 3
    assert (stats.cache_hits, stats.computed) == (1, 3)
    assert np.array_equal(v, embedder.encode(TEXTS))


def test_a_corrupt_cache_shard_is_quarantined_and_recomputed_identically(
        embedder, tmp_path, caplog):
    root = tmp_path / "embeddings"
    cache = EmbeddingCache(root)
    v1, _ = embed_texts(TEXTS, embedder, cache, progress=False)
    cache.close()
    (shard,) = (root / "shards").glob("*.shard")
    shard.write_bytes(shard.read_bytes()[:-100])  # truncated, e.g. by a full disk
    with caplog.at_level(logging.WARNING):
        again = EmbeddingCache(root)
        v2, s2 = embed_texts(TEXTS, embedder, again, progress=False)
    assert str(shard) in caplog.text and "quarantine" in caplog.text
    assert (s2.cache_hits, s2.computed) == (0, 4)
    assert s2.as_dict()["cache_quarantined"] == [str(shard)]
    assert np.array_equal(v1, v2) and (root / "quarantine" / shard.name).exists()
    again.close()
    _, s3 = embed_texts(TEXTS, embedder, EmbeddingCache(root), progress=False)
    assert s3.computed == 0  # rebuilt


def test_an_sqlite_cache_of_earlier_versions_names_the_fix(tmp_path):
    import sqlite3

    from structablate.store.files import StoreError

    old = tmp_path / "embeddings.sqlite"
    sqlite3.connect(old).execute("CREATE TABLE vectors (key BLOB)").connection.commit()
    with pytest.raises(StoreError, match="import-sqlite") as err:
        EmbeddingCache(old)
    assert str(old) in str(err.value)


def test_cache_key_separates_models_and_texts():
    a = EmbeddingCache.key("m1|x", "text")
    assert a != EmbeddingCache.key("m2|x", "text") and a != EmbeddingCache.key("m1|x", "text ")


class _CountingTokenizer:
    """The real tokenizer, counting the texts it is asked to tokenize."""

    def __init__(self, inner):
        self._inner, self.texts = inner, 0

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def __call__(self, texts, *args, **kw):
        self.texts += len(texts)
        return self._inner(texts, *args, **kw)


def test_each_text_is_tokenized_once(tmp_path):
    emb = Embedder(EmbedderSettings(model=MODEL, batch_size=4, length_bucket=16))
    reference = emb.encode(TEXTS)
    emb.tokenizer = counting = _CountingTokenizer(emb.tokenizer)
    texts = TEXTS + TEXTS[:2]  # duplicates are embedded (and tokenized) once
    v, stats = embed_texts(texts, emb, EmbeddingCache(tmp_path / "c"), progress=False,
                           commit_every=3)
    assert counting.texts == len(TEXTS)
    assert np.array_equal(v, np.concatenate([reference, reference[:2]]))
    assert stats.extra["real_tokens"] == sum(len(x) for x in emb.tokenize(TEXTS).ids)
    assert stats.extra["padded_tokens"] >= stats.extra["real_tokens"]
    counting.texts = 0  # a rerun from the cache tokenizes only for the truncation count
    again, stats = embed_texts(texts, emb, EmbeddingCache(tmp_path / "c"), progress=False)
    assert counting.texts == len(TEXTS) and stats.computed == 0
    assert np.array_equal(again, v)


def test_ids_equal_the_tokenizers_own_padded_batches(embedder):
    """Batches built from the ids once are what the tokenizer pads (and truncates) itself."""
    long = "structure " * (embedder.max_seq_length + 5)
    texts = [*TEXTS, long, ""]
    tok = embedder.tokenize(texts)
    for padded, rows in embedder.plan(tok):
        built = embedder._builder.build(tok, rows, padded, embedder.cfg.batch_size)
        batch = [texts[i] for i in rows] + [""] * (embedder.cfg.batch_size - len(rows))
        ref = embedder.tokenizer(batch, padding="max_length", truncation=True,
                                 max_length=padded, return_tensors="np")
        assert sorted(built) == sorted(ref.keys())
        for key, arr in built.items():
            assert np.array_equal(arr, ref[key]), key
    assert tok.lengths[len(TEXTS)] > embedder.max_seq_length
    assert len(tok.ids[len(TEXTS)]) == embedder.max_seq_length


def test_truncation_is_counted(embedder, tmp_path):
    long = "word " * (embedder.max_seq_length + 10)
    _, stats = embed_texts([long, "short"], embedder, None, progress=False)
    assert stats.truncated == 1 and stats.as_dict()["truncation_rate"] == 0.5


# ------------------------------------------------------------------------------------------
# batch plan, precision and backend settings


def test_plan_has_fixed_shapes_and_covers_every_text_once():
    lengths = [5, 17, 16, 40, 3, 600, 33, 18, 1]
    plan = plan_batches(lengths, length_bucket=16, batch_size=2, max_seq_length=512)
    rows = sorted(i for _, r in plan for i in r)
    assert rows == list(range(len(lengths)))
    assert [p for p, _ in plan] == sorted(p for p, _ in plan)  # buckets ascending
    for padded, r in plan:
        assert 1 <= len(r) <= 2
        assert padded % 16 == 0
        assert all(min(lengths[i], 512) <= padded < min(lengths[i], 512) + 16 for i in r)
    # bucket 16 holds 5, 16, 3, 1 (in input order), two batches of two
    assert [r for p, r in plan if p == 16] == [[0, 2], [4, 8]]
    assert [r for p, r in plan if p == 512] == [[5]]
    assert padded_tokens(plan, 2) == 2 * sum(p for p, _ in plan)


def test_bad_settings_name_the_field():
    with pytest.raises(ConfigError, match="embedders.e.dtype: 'half' is not one of"):
        parse(EmbedderSettings, {"model": MODEL, "dtype": "half"}, "embedders.e")
    with pytest.raises(ConfigError, match="embedders.e.backend: 'onnx' is not one of"):
        parse(EmbedderSettings, {"model": MODEL, "backend": "onnx"}, "embedders.e")
    with pytest.raises(EmbedderConfigError, match="embedders.e.backend: 'openvino' runs on "
                       "device 'cpu' only"):
        check_embedder(EmbedderSettings(model=MODEL, backend="openvino", device="cuda"),
                       "embedders.e")
    with pytest.raises(ConfigError, match="embedders.e.batch_size: 0 is less than"):
        parse(EmbedderSettings, {"model": MODEL, "batch_size": 0}, "embedders.e")


def test_auto_dtype_follows_the_hardware_and_enters_the_signature():
    assert resolve_dtype("float16", "cpu") == "float16"
    assert resolve_dtype("auto", "mps") == "float32"
    # on CPUs bf16 fails the ranking half of the fidelity gate: auto never picks it there
    assert resolve_dtype("auto", "cpu") == "float32"
    assert isinstance(cpu_has_native_bf16(), bool)
    auto = EmbedderSettings(model=MODEL, dtype="auto")
    resolved = EmbedderSettings(model=MODEL, dtype=resolve_dtype("auto", "cpu"))
    assert embedder_signature(auto) == embedder_signature(resolved)
    sigs = {embedder_signature(EmbedderSettings(model=MODEL, dtype=d, backend=b))
            for d in ("float32", "bfloat16") for b in ("torch", "openvino")}
    assert len(sigs) == 4


def _check_variant(emb: Embedder, reference: np.ndarray) -> None:
    """Batch invariance (bit-exact), a second instance agrees byte for byte, fidelity."""
    together = emb.encode(TEXTS)
    alone = np.stack([emb.encode([t])[0] for t in TEXTS])
    mixed = emb.encode(["other text " * 5, TEXTS[0], "x", TEXTS[3]])
    assert together.dtype == np.float32
    assert np.array_equal(alone, together)
    assert np.array_equal(mixed[1], together[0]) and np.array_equal(mixed[3], together[3])
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    again = Embedder(emb.cfg).encode(TEXTS)
    assert np.array_equal(again, together)
    assert np.min(np.sum(together * reference, axis=1)) >= 0.999


def test_torch_bfloat16_is_batch_invariant_and_close_to_float32(embedder):
    emb = Embedder(EmbedderSettings(model=MODEL, batch_size=4, length_bucket=16, dtype="bfloat16"))
    assert emb.dtype == "bfloat16"
    _check_variant(emb, embedder.encode(TEXTS))


def test_encode_batches_yields_every_row_once(embedder):
    texts = TEXTS + ["another " * 30, "y"]
    seen = {}
    for rows, vecs in embedder.encode_batches(texts):
        assert len(rows) == len(vecs) <= embedder.cfg.batch_size
        for r, v in zip(rows, vecs, strict=True):
            assert r not in seen
            seen[r] = v
    assert sorted(seen) == list(range(len(texts)))
    assert np.array_equal(np.stack([seen[i] for i in range(len(texts))]),
                          embedder.encode(texts))


@pytest.fixture(scope="module")
def openvino_f32():
    pytest.importorskip("openvino")
    return Embedder(EmbedderSettings(model=MODEL, batch_size=4, length_bucket=16,
                                   backend="openvino", dtype="float32"))


def test_openvino_backend_is_batch_invariant_and_close_to_float32(openvino_f32, embedder):
    assert openvino_f32.dtype == "float32"
    _check_variant(openvino_f32, embedder.encode(TEXTS))


def test_openvino_bfloat16_runs_only_on_cpus_with_native_bf16(embedder):
    pytest.importorskip("openvino")
    cfg = EmbedderSettings(model=MODEL, batch_size=4, length_bucket=16, backend="openvino",
                         dtype="bfloat16")
    if not cpu_has_native_bf16():
        with pytest.raises(EmbedderConfigError, match="bfloat16"):
            Embedder(cfg)
        return
    _check_variant(Embedder(cfg), embedder.encode(TEXTS))


def test_openvino_on_real_qasper_paragraphs_passes_the_cosine_gate(openvino_f32, embedder):
    """The bench's fidelity gate on a small real slice (the full gate lives in bench/)."""
    import json

    papers = json.loads(shared_file("qasper", "qasper-test-v0.3.json").read_text())
    paras = [p for pid in sorted(papers)[:3] for s in papers[pid]["full_text"]
             for p in s["paragraphs"] if p.strip()][:24]
    ref = embedder.encode(paras)
    got = openvino_f32.encode(paras)
    assert np.min(np.sum(got * ref, axis=1)) >= 0.999


def test_openvino_runs_a_buckets_last_batch_without_filler_rows_at_the_same_bytes(
        openvino_f32, embedder):
    """A text's vector is the same bytes alone, in a small call and in a large call, where
    the batches of a bucket run with only their real rows (no empty filler rows) on OpenVINO,
    and equal those of batches filled to ``batch_size``; torch keeps the filler rows."""
    assert openvino_f32.rows_invariant()
    assert openvino_f32.fill_batches is False and embedder.fill_batches is True
    # 41 texts: buckets holding 1, 2, 3, 4 and more texts, so every count of real rows runs
    many = ([f"{TEXTS[i % 4]} number {i}" + " more" * (i % 7) for i in range(37)]
            + ["a text alone in its bucket " * 40] + TEXTS)
    tok = openvino_f32.tokenize(many)
    plan = openvino_f32.plan(tok)
    assert {len(rows) for _, rows in plan} == {1, 2, 3, 4}
    large = openvino_f32.encode(many)
    small = openvino_f32.encode(TEXTS[1:3] + many[:3])
    alone = np.stack([openvino_f32.encode([t])[0] for t in TEXTS])
    assert np.array_equal(large[-4:], alone)
    assert np.array_equal(small[:2], alone[1:3]) and np.array_equal(small[2:], large[:3])
    before = openvino_f32.padded_tokens
    openvino_f32.encode_tokens(tok)
    trimmed_tokens = openvino_f32.padded_tokens - before
    assert trimmed_tokens == padded_tokens(plan, None) < padded_tokens(plan, 4)
    openvino_f32.fill_batches = True
    try:
        filled = openvino_f32.encode(many)
    finally:
        openvino_f32.fill_batches = False
    assert np.array_equal(filled, large)
