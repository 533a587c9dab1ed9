"""One layout per chunkset, many runs: score_runs equals score_run run by run, every way of
binding a run gives the same scores, and the string lookup is exact."""

import numpy as np
import polars as pl
import pytest
from test_metrics_random import MEASURES, synth

from structablate.chunking.build import build_chunks
from structablate.corpus.flatten import documents_frame, paragraphs_frame, sections_frame
from structablate.corpus.qasper import qrels_frame, queries_frame
from structablate.metrics import layout as layout_mod
from structablate.metrics import prepare_layout, score_layout, score_run, score_runs
from structablate.metrics.layout import StringCodes
from structablate.settings import ChunkingSettings
from structablate.study import condition


@pytest.fixture(scope="module")
def real(sample_corpus, counter):
    """Real QASPER sample chunk tables (G3, A0), queries and qrels, and a run per chunkset:
    half of each query's own document's chunks and random others, in random order."""
    docs = sample_corpus.documents
    d, p = documents_frame(docs, "qasper"), paragraphs_frame(docs)
    s = sections_frame([(x.doc_id, x.sections) for x in docs])
    queries = queries_frame(sample_corpus.questions)
    qrels = qrels_frame(sample_corpus.questions)
    rng = np.random.default_rng(3)
    chunks, runs = {}, {}
    for name in ("G3", "A0"):
        ch = build_chunks(condition(name), d, p, s, counter, ChunkingSettings(), size_reference=s,
                          progress=False)
        ids = ch["chunk_id"].to_numpy()
        rows = []
        for qid, doc in queries.select("qid", "doc_id").iter_rows():
            own = ch.filter(pl.col("doc_id") == doc)["chunk_id"].to_list()
            pick = list(dict.fromkeys(list(rng.permutation(own)[: len(own) // 2 + 1])
                                      + list(rng.choice(ids, size=20, replace=False))))
            rows += [(qid, r + 1, c) for r, c in enumerate(rng.permutation(pick))]
        chunks[name] = ch
        runs[name] = pl.DataFrame(rows, schema=["qid", "rank", "chunk_id"], orient="row")
    return chunks, runs, qrels, queries


def test_real_chunks_fast_path_equals_reference(real):
    chunks, runs, qrels, queries = real
    for name in chunks:
        fast = score_run(runs[name], chunks[name], qrels, queries, MEASURES)
        exact = score_run(runs[name], chunks[name], qrels, queries, MEASURES, exact=True)
        for m in MEASURES:
            np.testing.assert_allclose(fast[m].to_numpy(), exact[m].to_numpy(), atol=1e-12,
                                       err_msg=f"{name} {m}")
        assert (fast["covNDCG@10"] > 0).sum() > 10


def test_score_runs_shares_layouts_and_equals_score_run(real, monkeypatch):
    chunks, runs, qrels, queries = real
    calls = []
    real_prepare = layout_mod.prepare_layout

    def counting(*a, **k):
        calls.append(1)
        return real_prepare(*a, **k)

    monkeypatch.setattr("structablate.metrics.prepare_layout", counting)
    # A3/A4 style: two conditions read one chunk table (the same frame object)
    keyed = {"G3": runs["G3"], "G4": runs["G3"].sample(fraction=1.0, seed=1),
             "A0": runs["A0"]}
    tables = {"G3": chunks["G3"], "G4": chunks["G3"], "A0": chunks["A0"]}
    out = score_runs(keyed, tables, qrels, queries, MEASURES)
    assert list(out) == ["G3", "G4", "A0"] and len(calls) == 2
    for key in keyed:
        assert out[key].equals(score_run(keyed[key], tables[key], qrels, queries, MEASURES))
    assert out["G4"].equals(out["G3"])  # row order of a run never matters
    bad = {"A0": runs["A0"].with_columns(pl.lit("nope").alias("chunk_id"))}
    with pytest.raises(ValueError, match="A0: score_run: .* absent from the chunk table"):
        score_runs(bad, tables, qrels, queries, ["RR"])
    with pytest.raises(ValueError, match="no chunk table"):
        score_runs({"X": runs["A0"]}, tables, qrels, queries, ["RR"])


@pytest.mark.parametrize("seed", [1, 2])
def test_every_binding_path_gives_the_same_scores(seed, monkeypatch):
    run, chunks, qrels, queries = synth(seed, overlap=seed == 2)
    lay = prepare_layout(chunks, qrels, queries)
    ref = score_layout(run, lay, MEASURES)
    shuffled = run.sample(fraction=1.0, seed=seed)  # rows interleaved across queries
    blocks = run.sort("qid", descending=True)  # one block per query, blocks out of order
    for variant in (shuffled, blocks):
        assert score_layout(variant, lay, MEASURES).equals(ref)
    monkeypatch.setattr(layout_mod, "DENSE_LIMIT", 0)  # the sort-based lookup
    for variant in (run, shuffled):
        assert score_layout(variant, lay, MEASURES).equals(ref)
    twice = pl.concat([run.head(1), run.head(1).with_columns(pl.col("rank") + 1000)])
    with pytest.raises(ValueError, match="twice"):
        score_layout(twice, lay, ["RR"])
    monkeypatch.setattr(layout_mod, "DENSE_LIMIT", 10**9)
    with pytest.raises(ValueError, match="twice"):
        score_layout(twice, lay, ["RR"])


def test_string_codes_are_exact(real):
    chunks, runs, *_ = real
    ids = chunks["G3"]["chunk_id"]
    sc = StringCodes(ids.to_list())
    probe = pl.concat([runs["G3"]["chunk_id"], pl.Series(["x", "G3:", ids[0] + " "]),
                       pl.Series([None], dtype=pl.String)])
    expect = probe.cast(pl.Enum(ids), strict=False).to_physical().fill_null(-1).to_numpy()
    assert np.array_equal(sc.codes(probe), expect)
    assert sc.codes(probe)[-4:].tolist() == [-1, -1, -1, -1]
    # repeated values (a qid column) go through the run-length path, same answer
    rep = pl.Series(np.repeat(ids.head(50).to_numpy(), 100))
    assert np.array_equal(sc.codes(rep), rep.cast(pl.Enum(ids)).to_physical().to_numpy())
    # the collision-safe fallback gives the same codes
    sc.exact, sc.enum = False, pl.Enum(sc.categories)
    assert np.array_equal(sc.codes(probe), expect)
