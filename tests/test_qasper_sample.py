"""Slices drawn for their question (issue 50 item 4): ``papers: N`` is a seeded sample
stratified by structure depth, split and year, and the report compares the slice with the
whole of its sources."""

import json
import random

import pytest
from conftest import SAMPLE, shared_file

from structablate.corpus.qasper import (
    QasperFormatError,
    build_qasper,
    read_sources,
    read_sources_sampled,
)
from structablate.corpus.qasper_sample import (
    allocate,
    draw,
    paper_depth,
    paper_year,
    source_split,
)
from structablate.report.blocks import sample_block
from structablate.report.render import table_markdown


def _paper(nested: bool, sections: int = 3) -> dict:
    names = [f"S{i}" for i in range(sections)]
    if nested:
        names[-1] = "S0 ::: Sub"
    return {"title": "t", "abstract": "a", "qas": [],
            "full_text": [{"section_name": n, "paragraphs": ["p"]} for n in names]}


def _corpus() -> dict[str, dict]:
    """60 papers: 2016 ids all flat (20), 2019 ids 20 flat + 20 nested."""
    out = {f"1601.{i:05d}": _paper(False) for i in range(20)}
    out |= {f"1905.{i:05d}": _paper(i % 2 == 0) for i in range(40)}
    return out


def test_allocation_is_proportional_with_largest_remainders():
    # quotas 2.5, 1.5, 1.0: floors 2, 1, 1; the one left goes to the tied remainders' larger
    # stratum (a)
    assert allocate({"a": 5, "b": 3, "c": 2}, 5) == {"a": 3, "b": 1, "c": 1}
    # quotas 0.6, 0.3, 0.1 of 1: the largest remainder wins
    assert allocate({"x": 6, "y": 3, "z": 1}, 1) == {"x": 1, "y": 0, "z": 0}
    rng = random.Random(7)
    for _ in range(300):
        sizes = {k: rng.randint(0, 40) for k in "abcdef"}
        n = rng.randint(0, sum(sizes.values()))
        got = allocate(sizes, n)
        assert sum(got.values()) == n
        total = sum(sizes.values())
        for k, v in sizes.items():  # within one of the exact quota, never over the stratum
            assert v >= got[k] and abs(got[k] - n * v / total) < 1 if total else True
    with pytest.raises(ValueError, match="7 papers asked for from 6"):
        allocate({"a": 6}, 7)


def test_strata_read_depth_from_the_nesting_separator_and_year_from_the_id():
    assert paper_depth(_paper(True)) == "nested" and paper_depth(_paper(False)) == "flat"
    assert paper_year("1909.00001") == "2019" and paper_year("1601.0123") == "2016"
    assert paper_year("1913.00001") == "unknown" and paper_year("P19-1001") == "unknown"
    assert source_split({"path": "data/qasper-test-v0.3.json"}) == "test"
    assert source_split({"path": "x/qasper-train-v0.3-reconstructed.json"}) == "train"
    assert source_split({"path": "allenai/qasper", "split": "validation"}) == "validation"


def test_a_stratified_draw_keeps_each_stratum_share_and_is_seeded():
    papers = _corpus()
    kept = draw(papers, 15, seed=20260710, split="test")
    assert len(kept) == 15 and kept == sorted(kept)
    # 20/60 of each stratum -> exactly 5 of each: 2016-flat, 2019-flat, 2019-nested
    assert sum(k.startswith("1601") for k in kept) == 5
    assert sum(paper_depth(papers[k]) == "nested" for k in kept) == 5
    # the same seed gives the same slice; another seed another one, of the same make-up
    assert draw(papers, 15, seed=20260710, split="test") == kept
    other = draw(papers, 15, seed=1, split="test")
    assert other != kept and sum(paper_depth(papers[k]) == "nested" for k in other) == 5
    # first N: the oldest ids, none nested
    first = draw(papers, 15, method="first")
    assert first == sorted(papers)[:15]
    assert not any(paper_depth(papers[k]) == "nested" for k in first)
    with pytest.raises(ValueError, match="needs the run's seed"):
        draw(papers, 15)


def test_papers_n_draws_a_stratified_sample_by_default_and_reports_slice_and_whole(tmp_path):
    """On today's main ``papers: N`` kept the N smallest ids; now it is the stratified sample
    unless ``sample: first`` says otherwise, and the build's report holds the slice beside its
    sources."""
    src = tmp_path / "qasper-test-v0.3.json"
    src.write_text(json.dumps(_corpus()))
    with pytest.raises(QasperFormatError, match=r"qasper-test-v0.3.json: sample: stratified "
                                                r"needs the run's seed"):
        read_sources([{"path": str(src), "papers": 15}])
    papers, report = read_sources_sampled([{"path": str(src), "papers": 15}], seed=3)
    assert sorted(papers) == draw(_corpus(), 15, seed=3, split="test")
    assert sorted(papers) != sorted(_corpus())[:15]
    assert report["method"] == "stratified" and report["seed"] == 3
    assert report["slice"]["papers"] == 15 and report["whole"]["papers"] == 60
    assert report["slice"]["nested_share"] == pytest.approx(1 / 3)
    assert report["whole"]["nested_share"] == pytest.approx(1 / 3)
    assert report["slice"]["year"] == pytest.approx({"2016": 1 / 3, "2019": 2 / 3})
    assert report["slice"]["split"] == {"test": 1.0}
    first, rep_first = read_sources_sampled(
        [{"path": str(src), "papers": 15, "sample": "first"}], seed=3)
    assert sorted(first) == sorted(_corpus())[:15] and "seed" not in rep_first
    # a year the slice misses is a share of 0 beside the whole's
    assert rep_first["slice"]["nested_share"] == 0.0
    assert rep_first["slice"]["year"] == {"2016": 1.0, "2019": 0.0}
    # no slice, no sample block
    assert read_sources_sampled([{"path": str(src)}], seed=3)[1] is None
    build = build_qasper(papers, sample=report)
    assert build.report["sample"] == report
    table = table_markdown(sample_block(build.report))
    assert "| papers with a nested section | 33.3 % | 33.3 % |" in table
    assert "| year 2019 | 66.7 % | 66.7 % |" in table
    assert "stratified sample" in table
    assert sample_block({"kept": 1}) is None


def test_the_sample_file_keeps_the_first_slice_only_when_asked():
    ids = sorted(json.loads(SAMPLE.read_text()))
    assert list(read_sources([{"path": str(SAMPLE), "papers": 2, "sample": "first"}])) == ids[:2]
    got = read_sources([{"path": str(SAMPLE), "papers": 2}], seed=20260710)
    assert len(got) == 2 and set(got) <= set(ids)


def test_a_stratified_slice_of_the_test_split_carries_its_nested_structure():
    """The v0.3 test split: the first 100 ids hold no nested paper (163 of 416 papers are
    nested); the stratified 100 hold 39, and every year's share within a point of the
    split's."""
    path = shared_file("qasper", "qasper-test-v0.3.json")
    _, first = read_sources_sampled([{"path": str(path), "papers": 100, "sample": "first"}])
    assert first["slice"]["nested_share"] == 0.0
    assert first["whole"]["nested_share"] == pytest.approx(163 / 416)
    papers, rep = read_sources_sampled([{"path": str(path), "papers": 100}], seed=20260710)
    assert len(papers) == 100
    assert rep["slice"]["nested_share"] == pytest.approx(0.39)
    for year, share in rep["whole"]["year"].items():
        assert abs(rep["slice"]["year"][year] - share) <= 0.01, year
