"""The two controls beyond the paper: GP (gold structure under the placebo's shuffled heading
paths) and A0g (fixed windows sized to the gold structural chunks), on the bundled QASPER
sample; and how the plan and the full-grid configs schedule them."""

import copy
import dataclasses
import io
import json

import polars as pl
import pytest
import yaml
from conftest import REPO

from structablate.chunking.build import build_chunks
from structablate.chunking.placebo import assign_placebo_paths, path_key
from structablate.chunking.prefix import render_breadcrumb
from structablate.corpus.flatten import (
    Section,
    documents_frame,
    paragraphs_frame,
    sections_frame,
)
from structablate.io import write_parquet
from structablate.plan import Plan
from structablate.settings import CONDITION_NAMES, ChunkingSettings
from structablate.study import BEYOND_PAPER, CONDITIONS, PAPER_CONDITIONS, condition

BASE = yaml.safe_load((REPO / "config.yaml").read_text())
GRID = REPO / "config" / "qasper-full-grid.yaml"
GRID_256 = REPO / "config" / "qasper-full-grid-256.yaml"
SAME = ["doc_id", "start", "end", "section_idx", "top_section", "content_tokens"]


@pytest.fixture(scope="module")
def tables(sample_corpus):
    docs = sample_corpus.documents
    return (docs, documents_frame(docs, "qasper"), paragraphs_frame(docs),
            sections_frame([(d.doc_id, d.sections) for d in docs]))


def _build(name, tables, counter, *, sections=None, size_reference=None, seed=20260710,
           params=None, report=None):
    _, d, p, gold = tables
    return build_chunks(condition(name), d, p, gold if sections is None else sections, counter,
                        params or ChunkingSettings(), size_reference=size_reference,
                        placebo_seed=seed, report=report, progress=False)


@pytest.fixture(scope="module")
def gp(tables, counter):
    report: dict = {}
    return _build("GP", tables, counter, report=report), report["placebo"]


def test_the_conditions_and_the_settings_name_the_same_thirteen():
    assert tuple(CONDITIONS) == CONDITION_NAMES == PAPER_CONDITIONS + BEYOND_PAPER
    gp_, g3 = condition("GP"), condition("G3")
    # GP differs from G3 in its prefix only, as P differs from A3
    assert (gp_.boundaries, gp_.structure, gp_.depth, gp_.retrieval) == (
        g3.boundaries, g3.structure, g3.depth, g3.retrieval)
    assert (gp_.prefix, condition("P").prefix) == ("placebo", "placebo")
    a0g, a0 = condition("A0g"), condition("A0")
    assert (a0g.boundaries, a0g.prefix, a0g.size_match) == ("fixed", "none", "gold")
    assert a0.size_match is None and all(CONDITIONS[c].size_match is None
                                         for c in PAPER_CONDITIONS)


def test_gp_is_g3_content_under_placebo_paths_from_other_documents(tables, counter, gp):
    docs, d, _, gold = tables
    gp_chunks, rep = gp
    g3 = _build("G3", tables, counter)
    # the same spans, sections and content as G3; its own chunk ids
    assert gp_chunks.select(SAME).equals(g3.select(SAME))
    assert gp_chunks["chunk_id"].str.starts_with("GP:").all()
    # the assignment is assign_placebo_paths over G3's (document, depth-3 path) pairs
    paths = {(x, int(i)): tuple(pth)[:3] for x, i, pth in
             gold.select("doc_id", "section_idx", "path").iter_rows()}
    pairs = [(x, paths[(x, int(i))]) for x, i in gp_chunks.select("doc_id", "section_idx")
             .iter_rows()]
    mapping, expected = assign_placebo_paths(pairs, 20260710)
    assert rep == expected
    titles = dict(zip(d["doc_id"], d["title"], strict=True))
    for (x, real), prefix in zip(pairs, gp_chunks["prefix"], strict=True):
        assert prefix == render_breadcrumb(titles[x], mapping[(x, real)], 3)
    # same depth, and from another document but for the unavoidable residual
    owners: dict[tuple, set] = {}
    for x, real in set(pairs):
        owners.setdefault(real, set()).add(x)
    assert all(len(mapping[p]) == len(p[1]) for p in set(pairs))
    own = sum(1 for p in set(pairs) if owners[mapping[p]] == {p[0]})
    assert own == rep["residual_same_doc"] == rep["min_same_doc"]
    moved = sum(1 for p in set(pairs) if mapping[p] != p[1])
    assert moved > 0.5 * rep["n_pairs"]
    # the leak audit counts exactly the pairs whose placebo path reads as their own
    identical = sum(1 for p in set(pairs) if path_key(mapping[p]) == path_key(p[1]))
    assert rep["identical_paths"] == identical
    assert rep["identical_cross_doc"] == identical - sum(
        1 for p in set(pairs) if path_key(mapping[p]) == path_key(p[1])
        and owners[mapping[p]] == {p[0]})


def test_gp_follows_the_placebo_rules_exactly(tables, counter, gp):
    """P cut along the same (gold) sections gives GP's prefixes and report: one construction,
    two structures."""
    gp_chunks, rep = gp
    report: dict = {}
    p = _build("P", tables, counter, report=report)
    assert p["prefix"].equals(gp_chunks["prefix"]) and report["placebo"] == rep
    # the identical-path repair applies to GP as to P
    strict: dict = {}
    forbid = ChunkingSettings(placebo_forbid_identical=True)
    _build("GP", tables, counter, params=forbid, report=strict)
    assert rep["identical_cross_doc"] > 0  # generic headings leak on QASPER
    assert strict["placebo"]["identical_cross_doc"] < rep["identical_cross_doc"]
    assert strict["placebo"]["residual_same_doc"] == rep["residual_same_doc"]


def test_gp_is_deterministic_under_the_seed(tables, counter, gp, tmp_path):
    gp_chunks, rep = gp
    report: dict = {}
    again = _build("GP", tables, counter, report=report)
    write_parquet(gp_chunks, tmp_path / "a.parquet")
    write_parquet(again, tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert report["placebo"] == rep
    other = _build("GP", tables, counter, seed=7)
    assert other.select(SAME).equals(gp_chunks.select(SAME))
    assert not other["prefix"].equals(gp_chunks["prefix"])


def _one_section_per_document(tables) -> pl.DataFrame:
    """A structure unlike gold (one section spanning each document), standing in for induced
    structure: A0's windows follow it while A0g's follow gold."""
    docs = tables[0]
    return sections_frame([(d.doc_id, [Section(
        0, d.sections[0].title, 1, 0, len(d.paragraphs), d.paragraphs[0].start,
        d.paragraphs[-1].end, (d.sections[0].title,))]) for d in docs])


def test_a0g_windows_follow_gold_and_a0_follows_its_reference(tables, counter):
    _, _, _, gold = tables
    induced = _one_section_per_document(tables)
    g2 = _build("G2", tables, counter)
    other = _build("G2", tables, counter, sections=induced)
    a0g = _build("A0g", tables, counter, size_reference=gold)
    a0 = _build("A0", tables, counter, size_reference=induced)

    def per_doc(df, col, agg):
        return dict(df.group_by("doc_id").agg(agg(pl.col(col)).alias("v")).iter_rows())

    # each document's target: the mean content tokens of its structural chunks under the
    # reference structure (content counts from the tokenizer; targets from token starts)
    gold_mean, other_mean = (per_doc(x, "content_tokens", pl.Expr.mean) for x in (g2, other))
    target_g, target_a0 = (per_doc(x, "size_target", pl.Expr.first) for x in (a0g, a0))
    assert all(abs(target_g[x] - gold_mean[x]) <= 1.0 for x in gold_mean)
    assert all(abs(target_a0[x] - other_mean[x]) <= 1.0 for x in other_mean)
    differ = [x for x in gold_mean if abs(gold_mean[x] - other_mean[x]) > 20]
    assert len(differ) >= 5  # the two references size most documents differently
    # so A0g has G2's window count per document, and A0 its reference's
    assert per_doc(a0g, "start", pl.Expr.len) == per_doc(g2, "start", pl.Expr.len)
    assert per_doc(a0, "start", pl.Expr.len) == per_doc(other, "start", pl.Expr.len)
    # A0g is A0's construction sized to gold: the same table but for the chunk ids
    a0_gold = _build("A0", tables, counter, size_reference=gold)
    assert a0g.drop("chunk_id").equals(a0_gold.drop("chunk_id"))
    assert a0g["chunk_id"].str.starts_with("A0g:").all()


# ---------------------------------------------------------------------- the plan


def _plan(monkeypatch, edit=None, base=BASE, check_files=True):
    monkeypatch.chdir(REPO)
    cfg = copy.deepcopy(base)
    if edit:
        edit(cfg)
    return Plan.from_config(cfg, check_files=check_files)


def test_the_plan_lists_the_new_chunksets_only_when_asked(monkeypatch):
    default = _plan(monkeypatch)
    assert not {"GP", "A0g"} & ({*default.chunksets, *default.chunked})
    plan = _plan(monkeypatch, lambda c: c.update(conditions=[*c["conditions"], "GP", "A0g"]))
    assert plan.chunksets[-2:] == ["GP", "A0g"] and {"GP", "A0g"} <= set(plan.chunked)
    assert plan.structure_of("GP") == "gold" and plan.size_reference("GP") is None
    # A0g is sized to gold whatever size_match_structure says; A0 follows the setting
    assert plan.size_reference("A0g") == "gold" and plan.size_reference("A0") == "induced"
    gold = _plan(monkeypatch, lambda c: c.update(size_match_structure="gold",
                                                 conditions=["A0", "A0g"]))
    assert gold.size_reference("A0") == gold.size_reference("A0g") == "gold"
    # the chunk job of GP keeps the placebo's keys and the seed, A0g's the fixed-window keys
    gp_keys = plan.rule_settings("chunk", {"corpus": "qasper", "chunkset": "GP"})
    p_keys = plan.rule_settings("chunk", {"corpus": "qasper", "chunkset": "P"})
    assert gp_keys == p_keys and gp_keys.seed == plan.settings.seed
    assert plan.rule_settings("chunk", {"corpus": "qasper", "chunkset": "A0g"}) == \
        plan.rule_settings("chunk", {"corpus": "qasper", "chunkset": "A0"})


def test_gold_controls_need_no_induced_structure(monkeypatch):
    """GP and A0g read gold only: with the LLM inducer and no model, a gold grid still plans,
    and A0 (sized to induced structure) is what asks for the LLM."""
    def gold_only(cfg):
        cfg.update(conditions=["G2", "G3", "GP", "A0g"])
        cfg["induction"] = {"inducer": "llm"}
        cfg["llm"] = {"backend": "llamacpp", "mode": "replay"}
    plan = _plan(monkeypatch, gold_only)
    assert not plan.needs_induced_structure
    assert plan.stage_conditions()["induction"] == []

    def with_a0(cfg):
        gold_only(cfg)
        cfg["conditions"].append("A0")
        cfg["llm"]["model"] = "qwen2.5-coder-0.5b-instruct-q4_k_m"
        cfg["induction"]["max_prompt_chars"] = 20000
    plan = _plan(monkeypatch, with_a0)
    assert plan.needs_induced_structure
    assert plan.stage_conditions()["induction"] == ["A0"]


def test_an_existing_grid_plans_as_before(monkeypatch):
    """The default grid (paper conditions only): its chunksets, the structure each follows and
    sizes by, and each chunk job's settings, as before GP and A0g existed."""
    plan = _plan(monkeypatch)
    assert plan.chunksets == ["A0", "A2", "A3-d1", "A3-d2", "A3", "P", "G2", "G3"]
    assert plan.chunked == plan.chunksets
    assert {cs: (plan.structure_of(cs), plan.size_reference(cs)) for cs in plan.chunked} == {
        "A0": ("gold", "induced"), "A2": ("induced", None), "A3-d1": ("induced", None),
        "A3-d2": ("induced", None), "A3": ("induced", None), "P": ("induced", None),
        "G2": ("gold", None), "G3": ("gold", None)}
    assert plan.needs_induced_structure


def _load(path):
    return yaml.safe_load(path.read_text())


def test_the_full_grid_config(monkeypatch):
    plan = _plan(monkeypatch, base=_load(GRID), check_files=False)
    assert set(plan.conditions) == (set(PAPER_CONDITIONS) - {"A1"}) | set(BEYOND_PAPER)
    assert plan.chunksets == ["A0", "A2", "A3-d1", "A3-d2", "A3", "P", "G2", "G3", "GP", "A0g"]
    st = plan.settings.statistics
    assert st.contrasts == {"C1": ("A3", "A1"), "C2": ("A3", "P"), "C3": ("G3", "A3"),
                            "C4": ("A4", "A3")}
    assert st.extra_contrasts == {
        "A2-A0": ("A2", "A0"), "A3-A2": ("A3", "A2"), "G2-A0": ("G2", "A0"),
        "G2-A0g": ("G2", "A0g"), "G3-G2": ("G3", "G2"), "G3-GP": ("G3", "GP"),
        "G4-G3": ("G4", "G3")}
    assert (plan.size_reference("A0"), plan.size_reference("A0g")) == ("induced", "gold")


def test_the_256_config_shares_the_grids_corpus_and_chunk_jobs(monkeypatch):
    """config/qasper-full-grid-256.yaml writes into the grid's results folder: every corpus
    and chunk job they share has the same settings and code, so Snakemake reuses the grid's
    files; only the embedder differs (its truncation length)."""
    grid = _plan(monkeypatch, base=_load(GRID), check_files=False)
    short = _plan(monkeypatch, base=_load(GRID_256), check_files=False)
    assert short.conditions == ["G2", "G3", "G4"]
    # the same declared families, so Holm adjusts over the same contrasts in both cells
    assert short.settings.statistics.contrasts == grid.settings.statistics.contrasts
    assert short.settings.statistics.extra_contrasts == grid.settings.statistics.extra_contrasts
    assert short.settings.results == grid.settings.results
    assert short.tokenizer == grid.tokenizer
    (name, emb), = short.settings.embedders.items()
    assert name not in grid.settings.embedders and emb.max_seq_length == 256
    assert emb == dataclasses.replace(grid.settings.embedders["minilm"], max_seq_length=256)
    scripts = REPO / "workflow_scripts"
    jobs = [("build_qasper", "build_qasper", {"corpus": "qasper"}),
            ("tokenize_corpus", "tokenize_corpus", {"corpus": "qasper"}),
            ("bm25_check", "bm25_check", {"corpus": "qasper"})]
    jobs += [("chunk", "chunk", {"corpus": "qasper", "chunkset": cs})
             for cs in ("G2", "G3")]
    for rule, script, w in jobs:
        assert short.trigger(rule, scripts / f"{script}.py")(w) == \
            grid.trigger(rule, scripts / f"{script}.py")(w), (rule, w)
    # and the same input files
    for cs in ("G2", "G3"):
        assert (short.structure_of(cs), short.size_reference(cs)) == (
            grid.structure_of(cs), grid.size_reference(cs))


def test_configs_are_valid_yaml_with_unique_keys():
    for path in (GRID, GRID_256):
        text = path.read_text()
        keys = [ln.split(":")[0] for ln in text.splitlines() if ln and ln[0].isalpha()]
        assert len(keys) == len(set(keys)), path
        assert yaml.safe_load(io.StringIO(text))


# ---------------------------------------------------------------------- end to end


@pytest.mark.slow
def test_gp_and_a0g_run_end_to_end(tmp_path, counter):
    """A real Snakemake run on two sample papers with A0, G2, G3, GP and A0g and their
    contrasts: GP's and A0g's chunk tables, stats, vectors, runs, scores, contrasts and the
    comparison checks; A0 sized to the induced structure, A0g to gold."""
    from workflow_util import snakemake, write_project

    from structablate.io import read_parquet

    def tweak(cfg):
        cfg["statistics"].update(bootstrap_iters=1000, extra_contrasts={
            "G3-GP": ["G3", "GP"], "G2-A0g": ["G2", "A0g"], "G2-A0": ["G2", "A0"]})

    root = tmp_path / "gold"
    write_project(root, ["A0", "G2", "G3", "GP", "A0g"], n_papers=2, tweak=tweak)
    proc = snakemake(root)
    assert proc.returncode == 0, proc.stderr[-4000:]
    res = root / "results" / "qasper"
    ch = {cs: read_parquet(res / "chunks" / f"{cs}.parquet") for cs in ("A0", "G2", "G3", "GP",
                                                                        "A0g")}
    assert ch["GP"].select(SAME).equals(ch["G3"].select(SAME))
    assert (ch["GP"]["prefix"] != ch["G3"]["prefix"]).mean() > 0.5
    stats = json.loads((res / "chunks" / "GP.json").read_text())
    rep = stats["placebo"]
    assert rep["n_pairs"] > 0 and rep["residual_same_doc"] == rep["min_same_doc"]
    assert "placebo" not in json.loads((res / "chunks" / "G3.json").read_text())
    # sizes: A0g per document to the gold structural chunks (G2), A0 to the induced ones
    docs, paras = (read_parquet(res / f"{t}.parquet") for t in ("documents", "paragraphs"))
    induced = read_parquet(res / "sections_induced.parquet")
    on_induced = build_chunks(condition("A2"), docs, paras, induced, counter,
                              ChunkingSettings(), progress=False)

    def means(df, col):
        return dict(df.group_by("doc_id").agg(pl.col(col).mean()).iter_rows())

    for fixed, ref in (("A0g", ch["G2"]), ("A0", on_induced)):
        target, want = means(ch[fixed], "size_target"), means(ref, "content_tokens")
        assert target.keys() == want.keys()
        assert all(abs(target[d] - want[d]) <= 1.0 for d in want), fixed
    assert means(ch["A0g"], "size_target") != means(ch["A0"], "size_target")
    cell = res / "minilm" / "none"
    for cond in ("GP", "A0g"):
        assert (cell / "scores" / f"{cond}.parquet").exists()
    contrasts = read_parquet(cell / "contrasts.parquet")
    assert set(contrasts["contrast"].to_list()) == {"G3-GP", "G2-A0g", "G2-A0"}  # C1-C4 not run
    checks = read_parquet(root / "results" / "report" / "qasper" / "comparison_checks.parquet")
    gp_checks = checks.filter((pl.col("cond_a") == "G3") & (pl.col("cond_b") == "GP"))
    assert set(gp_checks["check"].to_list()) == {"same_text", "placebo_pairs_identical"}
    assert (root / "results" / "report" / "index.md").exists()
