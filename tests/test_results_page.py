"""Results pages generated from a results folder (structablate.report.results): every number a
block prints is its source's value, the prose states none of its own, and the committed results
pages keep that rule."""

import json
from pathlib import Path

import polars as pl
import pytest
from conftest import REPO
from test_stats_contrasts import make_scores

from structablate.io import write_parquet
from structablate.plan.paths import Paths
from structablate.report.results import (
    BLOCKS,
    Ledger,
    ResultsError,
    Run,
    against_paper,
    main,
    page_numbers,
    prose_numbers,
    render_page,
    verify_ledger,
)
from structablate.report.testable import mark_contrasts
from structablate.settings import StatisticsSettings, parse
from structablate.stats import condition_mean_cis
from structablate.stats.cell import analyze_cell
from structablate.stats.means import condition_means

CELL = ("qasper", "strong", "none")
CONDS = ["A3", "P", "A1", "A4", "G3"]


def write_cell(root: Path, cell: tuple[str, str, str], seed: int) -> None:
    """One cell's tables as a real run writes them, from per-query scores of five conditions
    over 40 documents, computed by the package's own statistics."""
    p = Paths(str(root))
    long = make_scores(n_docs=40, seed=seed).filter(pl.col("embedder") == "strong")
    scores = {c: long.filter(pl.col("condition") == c)
              .select("qid", "doc_id", "qtype", "covNDCG@10", "R@50") for c in CONDS}
    stats = parse(StatisticsSettings, {"bootstrap_iters": 300,
                                       "extra_contrasts": {"G3-A3": ["G3", "A3"],
                                                           "G3-A2": ["G3", "A2"]},
                                       "primary": {"embedder": cell[1]}})
    tables = analyze_cell(scores, *cell, stats, seed=3)
    write_parquet(condition_means(scores), p.cell_table(*cell, "summary"))
    for name, df in tables.items():
        write_parquet(df, p.cell_table(*cell, name))
    write_parquet(mark_contrasts(tables["contrasts"]),
                  p.report_cell(*cell, "contrasts_marked.parquet"))
    write_parquet(condition_mean_cis(scores, n_boot=200, seed=3),
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
    recorded = {e.text.lstrip("±") for e in led.entries}
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
    assert main([str(results), "--page", str(page), "--check"]) == 0
    page.write_text(page.read_text().replace("covNDCG@10 |", "covNDCG@10 | 9 |", 1))
    assert main([str(results), "--page", str(page), "--check"]) == 1


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


def test_against_paper_follows_one_rule():
    here = {"ci_low": -0.01, "ci_high": 0.01}
    control = {"ci_low": 0.005, "ci_high": 0.03}
    # inside this run's own interval (bounds included): consistent, whatever the controls say
    assert against_paper(0.01, here, [("GX", control)]).startswith("consistent")
    # outside it, inside the first control holding it: explained by that control
    assert against_paper(0.02, here, [("G0", {"ci_low": 0.1, "ci_high": 0.2}),
                                      ("GX", control)]).startswith("explained by GX")
    # no interval holds it, or the contrast did not run and no control did: unexplained
    assert against_paper(0.05, here, [("GX", control)]).startswith("unexplained")
    assert against_paper(0.02, None, [("GX", None)]).startswith("unexplained")


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
    assert printed <= {e.text.lstrip("±") for e in led.entries}, printed
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
    assert all(any(w in ln for w in ("consistent", "explained by", "unexplained"))
               for ln in lines)
    # a control cell the page names but the run lacks is said, not silently dropped
    alone = render_page("<!-- results: paper kind=qasper control_embedder=nosuch -->\n"
                        "<!-- /results -->\n", run, Ledger())
    assert "control cell `qasper/nosuch/none` is not in this results folder" in alone
    assert "is not in this results folder" not in page
    # a missing second cell is named, not skipped
    with pytest.raises(ResultsError, match="nosuch"):
        render_page("<!-- results: sensitivity embedder=nosuch -->\n<!-- /results -->\n",
                    run, Ledger())
