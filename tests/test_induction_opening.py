"""The opening-words model of the supervised inducer (structure/lexical.py) and the
out-of-fold scores its trees are trained on (structure/supervised.py)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from structablate.corpus.flatten import DocumentBuilder
from structablate.corpus.qasper import build_qasper_corpus, read_v03
from structablate.settings import SupervisedSettings
from structablate.structure.lexical import (
    MIN_ROWS,
    OpeningModel,
    fit_opening_model,
    gap_tokens,
    word_tokens,
)
from structablate.structure.supervised import (
    GapModel,
    doc_rows,
    fold_of,
    opening_columns,
    out_of_fold_rows,
    train_model,
)

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "resources/qasper/qasper-sample-v0.3.json"
FAST = SupervisedSettings(folds=3, inner_folds=2, iterations=15, min_train_boundaries=50)


@lru_cache(maxsize=1)
def sample_items():
    docs = sorted(build_qasper_corpus(read_v03(SAMPLE)).documents, key=lambda d: d.doc_id)
    return tuple(doc_rows(docs, None))


def test_word_tokens_split_letters_digits_and_marks():
    assert word_tokens("In Table 2, BERT-base wins.") == [
        "in", "table", "2", ",", "bert", "-", "base", "wins", "."]


def test_gap_tokens_read_the_two_paragraphs_around_each_gap():
    b = DocumentBuilder("d", "D")
    b.add_paragraph("Our model uses attention layers.", ["A"])
    b.add_paragraph("In this section we train the attention model.", ["B"])
    b.add_paragraph("Results", ["B"])
    toks = gap_tokens(b.build())
    assert len(toks) == 2
    first = toks[0]
    # the next paragraph's opening, by word, position, bigram and trigram
    assert first[:4] == ["N_in", "N_this", "N_section", "N_we"]
    assert {"NB_in_this", "NB_this_section", "NB_section_we", "NF_in_this_section",
            "NI_0_in", "NI_5_the"} <= set(first)
    assert "NI_6_attention" not in first  # positions 0 … 5 only
    # the previous paragraph's end and the words both share
    assert {"P_attention", "P_layers", "P_.", "PB_layers_.", "PW_our", "NW_train"} <= set(first)
    assert [t for t in first if t.startswith("S_")] == ["S_attention", "S_model"]
    # the first sentence, the lengths (9 and 6 tokens: bucket 0), one paragraph further
    assert {"FS_in", "FS_attention", "FS_model", "LN_0", "LP_0", "N2_results"} <= set(first)
    assert "FS_." not in first and not any(t.startswith("P2_") for t in first)
    assert toks[1][:1] == ["N_results"] and "NF_results" in toks[1]
    assert {"P2_layers", "P2_.", "P2_attention"} <= set(toks[1])
    assert not any(t.startswith("N2_") for t in toks[1])


def test_scores_equal_scikit_learns_pipeline():
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import normalize

    items = sample_items()
    toks = [t for it in items for t in it.tokens]
    y = np.concatenate([it.boundary for it in items])
    model = fit_opening_model(toks, y)
    vec = CountVectorizer(analyzer=lambda t: t, min_df=MIN_ROWS, lowercase=False)
    x = normalize(vec.fit_transform(toks))
    lr = LogisticRegression(C=1.0, max_iter=500).fit(x, y)
    assert set(model.weights) == set(vec.get_feature_names_out())
    ours = model.score(toks)
    assert np.allclose(ours, lr.decision_function(x), atol=1e-12, rtol=0)
    # the JSON form scores the same, and an unknown-only gap gets the intercept
    back = OpeningModel.from_data(model.as_data())
    assert np.array_equal(back.score(toks), ours)
    assert back.score([["N_zzzunseen"]])[0] == model.intercept
    # the model separates: boundaries score higher on average (in-sample)
    assert ours[y == 1].mean() > ours[y == 0].mean() + 0.5


def test_one_class_training_gives_a_constant_model():
    m = fit_opening_model([["N_a"], ["N_b"]], np.zeros(2, dtype=np.int64))
    assert m.weights == {} and m.intercept < 0
    assert np.array_equal(m.score([["N_a"], []]), [m.intercept, m.intercept])
    with pytest.raises(ValueError, match="2 token lists for 3 labels"):
        fit_opening_model([["a"], ["b"]], np.zeros(3))


def test_out_of_fold_scores_come_from_a_model_without_the_documents_gold():
    items = list(sample_items())
    folds = fold_of([it.doc.doc_id for it in items], 2)
    rows = out_of_fold_rows(items, folds, 2)
    for k in (0, 1):
        others = [it for it in items if folds[it.doc.doc_id] != k]
        opening = fit_opening_model([t for it in others for t in it.tokens],
                                    np.concatenate([it.boundary for it in others]))
        for it in items:
            if folds[it.doc.doc_id] != k:
                continue
            want = np.hstack([it.rows, opening_columns(opening.score(it.tokens))])
            assert np.array_equal(rows[it.doc.doc_id], want)
    # changing a held-out document's gold leaves its own scores unchanged
    it0 = items[0]
    flipped = [type(it0)(it0.doc, it0.rows, 1 - it0.boundary, it0.level, it0.tokens),
               *items[1:]]
    again = out_of_fold_rows(flipped, folds, 2)
    assert np.array_equal(again[it0.doc.doc_id], rows[it0.doc.doc_id])


def test_opening_columns_hold_the_gap_and_its_neighbours():
    cols = opening_columns(np.array([1.0, 2.0, 3.0]))
    assert cols.tolist() == [[1, 0, 0, 2, 3], [2, 0, 1, 3, 0], [3, 1, 2, 0, 0]]


def test_the_model_file_carries_the_opening_model(tmp_path):
    items = list(sample_items())
    model = train_model(items, FAST, embedder=None)
    assert model.opening.weights  # trained on the sample's 218 gold boundaries
    model.write(tmp_path / "m.json")
    back = GapModel.read(tmp_path / "m.json")
    assert back.opening == model.opening
    assert back.rows(items[0]).shape[1] == len(model.features)
