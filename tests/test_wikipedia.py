"""The Wikipedia-FA corpus builder on a real export: XML mode, and API mode with the real
mwclient over loopback against tests/mediawiki_server.py serving the same pages."""

from __future__ import annotations

import bz2
import dataclasses
import json
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from conftest import shared_file, wiki_corpus, wiki_selection, wiki_source
from workflow_util import glue_config, run_glue

from structablate.corpus.mediawiki_fetch import ApiSource, WikipediaSourceError, iter_xml_pages
from structablate.corpus.verify import verify_document
from structablate.corpus.wikipedia import (
    TopicClassifier,
    classifier_of,
    select_documents,
    walk_order,
)
from structablate.corpus.wikitext import category_links
from structablate.errors import ConfigError
from structablate.tables import check_table

sys.path.insert(0, str(Path(__file__).parent))
from mediawiki_server import MediaWikiTestServer, read_export  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "resources" / "wikipedia" / "sample.xml"
UA = "structablate-tests/0.1 (https://example.org/structablate; tests@example.org)"

# Every article of the dev export that passes the paper's filters (3000 / 3 / 12), with
# words, depth, sections and topic (categories from [[Category:]] links).
PAPER_PASS = {
    'Abortion': (6388, 3, 23, 'other'),
    'Abraham Lincoln': (14906, 3, 28, 'history_war'),
    'Agriculture': (7258, 3, 23, 'other'),
    'Alaska': (9806, 3, 45, 'other'),
    'Albert Einstein': (9311, 3, 50, 'biography'),
    'Alberta': (8268, 3, 24, 'other'),
    'Algeria': (9056, 3, 37, 'other'),
    'Algorithm': (8859, 3, 33, 'other'),
    'Altruism': (6293, 3, 18, 'other'),
    'American Revolutionary War': (14691, 3, 38, 'history_war'),
    'Analysis of variance': (5658, 3, 36, 'other'),
    'Anarchism': (9473, 4, 24, 'other'),
    'Anatomy': (6170, 3, 20, 'other'),
    'Andorra': (4972, 3, 28, 'other'),  # +7 words: four RailGauge widths
    'Animation': (4200, 4, 13, 'other'),
    'Anthropology': (6734, 3, 47, 'other'),
    'Apollo': (11724, 4, 39, 'other'),
    'Apollo 8': (7480, 3, 18, 'other'),
    'Aristotle': (10600, 4, 38, 'history_war'),
    'Arthur Schopenhauer': (8296, 3, 23, 'biography'),
    'Asia': (5836, 3, 21, 'other'),
    'Astronaut': (3261, 3, 21, 'other'),
    'Atlantic Ocean': (4042, 3, 20, 'history_war'),
    'List of Atlas Shrugged characters': (4545, 3, 14, 'other'),
}


def check_offsets(doc):
    assert verify_document(doc) == [], doc.doc_id
    pieces = [doc.text[p.start:p.end] for p in doc.paragraphs]
    assert doc.text == "\n\n".join(pieces)
    assert all(p and p == p.strip() for p in pieces)
    for s in doc.sections:
        assert doc.text[s.start:s.end] == "\n\n".join(pieces[s.para_start:s.para_end])


@pytest.fixture(scope="module")
def dev_export():
    """The 2016 English Wikipedia dev export (optional real data; skips when absent)."""
    return shared_file("wikipedia", "enwiki-2016-sample-dev.xml.bz2")


@pytest.fixture(scope="module")
def dev_pages(dev_export):
    return read_export(dev_export)


@pytest.fixture(scope="module")
def xml_build(dev_export):
    return wiki_corpus({"mode": "xml", "path": str(dev_export)}, {})


@pytest.fixture(scope="module")
def server(dev_pages):
    articles = [p["title"] for p in dev_pages if p["ns"] == 0]
    with MediaWikiTestServer(dev_pages, category_members={"Featured articles": articles},
                             max_limit=40) as srv:
        yield srv


def api_cfg(srv, **over):
    return {"mode": "api", "host": srv.host, "path": srv.path, "scheme": "http",
            "user_agent": UA, "rate_limit_s": 0, "retry_timeout_s": 0.01, "max_retries": 3,
            "list_chunk_size": 25, **over}


# -- XML mode ----------------------------------------------------------------------------------

def test_xml_mode_paper_filters(xml_build):
    docs, report = xml_build
    got = {d.doc_id: (d.meta["words"], d.meta["depth"], len(d.sections), d.topic) for d in docs}
    assert got == PAPER_PASS
    for d in docs:
        check_offsets(d)
        assert d.title == d.doc_id and d.sections[0].path == ("Introduction",)
    assert report["n_candidates"] == 168 and report["n_accepted"] == 24
    assert report["stopped"] == "title list exhausted"
    assert report["distribution"] == {"history_war": 4, "biography": 2, "science_nature": 0,
                                      "arts_media": 0, "geo_places": 0, "other": 18}
    assert report["reject_counts"] == {"redirect": 99, "too_few_words": 27, "too_shallow": 18}
    assert len(report["rejects"]) == 144 and all(r["reason"] and r["detail"]
                                                 for r in report["rejects"])
    assert report["source"]["skipped"]["non_article_namespace"] == 1
    json.dumps(report)  # JSON-able


def test_walk_order_is_seeded_shuffle_of_sorted_titles(xml_build):
    docs, report = xml_build
    titles = ["b", "a", "c", "a", "d"]
    perm = np.random.default_rng(7).permutation(4)
    assert walk_order(titles, 7) == [["a", "b", "c", "d"][i] for i in perm]
    assert walk_order(titles, 7) == walk_order(list(reversed(titles)), 7)
    ranks = [r["rank"] for r in report["documents"]]
    assert ranks == sorted(ranks) and [d.doc_id for d in docs] == [
        r["doc_id"] for r in report["documents"]]


def test_cap_and_n_docs(xml_build):
    docs, _ = xml_build
    by_title = {d.doc_id: d for d in docs}
    from structablate.corpus.wikipedia import Outcome

    def outcome(title):
        return Outcome(title, doc=by_title[title], stats={"topic": by_title[title].topic})

    sel = wiki_selection({"max_per_bucket": 2, "n_docs": 5, "seed": 1})
    clf = classifier_of(sel)
    picked, report = select_documents(by_title, outcome, sel, clf)
    assert len(picked) == 5 and report["stopped"] == "n_docs reached"
    assert all(v <= 2 for v in report["distribution"].values())
    assert report["distribution"]["other"] == 2
    full = [r for r in report["rejects"] if r["reason"] == "bucket_full"]
    assert full and report["n_examined"] == 5 + len(full)
    again, _ = select_documents(by_title, outcome, sel, clf)
    assert [d.doc_id for d in again] == [d.doc_id for d in picked]
    other, _ = select_documents(by_title, outcome, dataclasses.replace(sel, seed=2), clf)
    assert [d.doc_id for d in other] != [d.doc_id for d in picked]


def test_topic_classifier_rules():
    clf = classifier_of(wiki_selection())
    assert clf.classify(["Academy Award winners", "Edward VII", "Free software"])[0] == "other"
    assert clf.classify(["Wars involving France"]) == ("history_war", "Wars involving France",
                                                       "war")
    # table order wins over category order
    assert clf.classify(["1879 births", "History of physics"])[0] == "history_war"
    assert clf.classify(["Astronomers from Germany"])[0] == "science_nature"
    assert clf.classify(["American films", "Rivers of Spain"])[0] == "arts_media"
    assert clf.classify(["Hurricanes in Texas"])[0] == "geo_places"
    assert clf.classify([]) == ("other", None, None)
    custom = TopicClassifier([("space", ["apollo"])], fallback="rest")
    assert custom.classify(["Apollo program"])[0] == "space"
    assert custom.all_buckets == ["space", "rest"]


def test_config_validation(tmp_path):
    with pytest.raises(ConfigError, match=r"Additional properties are not allowed \('min_word'"):
        wiki_selection({"min_word": 3})
    with pytest.raises(ConfigError, match="'user_agent' is a required property"):
        wiki_source({"mode": "api", "host": "x"})
    with pytest.raises(ValueError, match="user_agent is required"):
        ApiSource(wiki_source({"mode": "api", "host": "x", "user_agent": " "}), None)
    with pytest.raises(ConfigError, match="mode: 'ftp' is not one of"):
        wiki_corpus({"mode": "ftp"}, {})
    with pytest.raises(ConfigError, match=r"Additional properties are not allowed \('host'"):
        wiki_corpus({"mode": "xml", "path": str(SAMPLE), "host": "x"}, {})


# -- API mode against the loopback server --------------------------------------------------------

def test_api_mode_equals_xml_mode(server, xml_build):
    server.requests.clear()
    docs, report = wiki_corpus(api_cfg(server), {}, None)
    xdocs, xreport = xml_build
    assert [d.doc_id for d in docs] == [d.doc_id for d in xdocs]
    for a, b in zip(docs, xdocs, strict=True):
        assert (a.text, a.paragraphs, a.sections, a.topic) == (b.text, b.paragraphs,
                                                                b.sections, b.topic)
        assert a.meta["page_id"] == b.meta["page_id"] and a.meta["rev_id"] == b.meta["rev_id"]
        check_offsets(a)
    assert report["documents"] == xreport["documents"]
    assert report["rejects"] == xreport["rejects"]
    assert report["source"]["pages_fetched"] == 168
    reqs = server.requests
    assert all(r["user_agent"].startswith(UA) for r in reqs)
    lists = [r for r in reqs if r["params"].get("list") == "categorymembers"]
    assert len(lists) == 7 and all(r["params"]["cmlimit"] == "25" for r in lists)  # 168 / 25
    pages = [r for r in reqs if "titles" in r["params"]]
    assert len([r for r in pages if "rvprop" in r["params"]]) == 168
    assert [r["params"]["titles"] for r in pages if "clcontinue" in r["params"]] == [
        "Albert Einstein"]  # 73 categories, 40 per batch on this server
    assert all(r["params"]["maxlag"] == "5" for r in pages + lists)
    assert all(r["params"]["clshow"] == "!hidden" for r in pages)


def test_api_cache_makes_rerun_offline(dev_pages, tmp_path):
    articles = [p["title"] for p in dev_pages if p["ns"] == 0]
    sel = {"n_docs": 3}
    with MediaWikiTestServer(dev_pages, category_members={"Featured articles": articles}) as srv:
        cfg = api_cfg(srv)
        docs, report = wiki_corpus(cfg, sel, tmp_path)
        n_requests = len(srv.requests)
    examined = report["n_examined"]
    assert report["source"]["pages_fetched"] == examined and len(docs) == 3
    assert len(list((tmp_path / "pages").rglob("*.json"))) == examined
    assert json.loads((tmp_path / "titles.json").read_text())["titles"] == sorted(articles)
    # the server is gone: the rerun must come entirely from the cache, with no connection
    docs2, report2 = wiki_corpus(cfg, sel, tmp_path)
    assert [d.text for d in docs2] == [d.text for d in docs]
    assert report2["source"]["pages_fetched"] == 0
    assert report2["source"]["pages_from_cache"] == examined
    assert n_requests == 1 + 7 + examined  # siteinfo, 168 / 25 list batches, one per page


def test_hidden_categories_retries_and_rate_limit(dev_pages):
    articles = [p["title"] for p in dev_pages if p["ns"] == 0]
    hidden = ["History of the Atlantic Ocean"]
    with MediaWikiTestServer(dev_pages, category_members={"Featured articles": articles},
                             hidden_categories=hidden, max_limit=3) as srv:
        src = ApiSource(wiki_source(api_cfg(srv, rate_limit_s=0.05)), None)
        site = src.site  # connect first: siteinfo is not retried by mwclient
        assert site.version[:2] == (1, 43)
        srv.faults[:] = ["maxlag", "http503"]
        t0 = time.monotonic()
        rec = src.fetch("Atlantic Ocean")
        assert srv.fault_log == ["maxlag", "http503"]
        assert "History of the Atlantic Ocean" not in rec.categories  # clshow=!hidden
        assert rec.categories and rec.categories_source == "api-nonhidden"
        assert len(rec.categories) > 3  # more than one clcontinue batch
        want = next(p for p in dev_pages if p["title"] == "Atlantic Ocean")
        assert set(rec.categories) == set(category_links(want["text"])) - set(hidden)
        assert rec.wikitext == want["text"] and rec.revid == want["revid"]
        n = src.session.n_requests
        assert time.monotonic() - t0 >= 0.05 * (n - 2)
        # a page that keeps failing ends in a clear error once retries are spent
        srv.faults[:] = ["http503"] * 10
        with pytest.raises(WikipediaSourceError, match="Apollo 8"):
            src.fetch("Apollo 8")
        srv.faults.clear()
        missing = src.fetch("No such page")
        assert missing.missing


def test_real_mwclient_page_calls_against_server(server, dev_pages):
    import mwclient

    site = mwclient.Site(server.host, path=server.path, scheme="http", clients_useragent=UA)
    page = site.pages["Apollo 8"]
    want = next(p for p in dev_pages if p["title"] == "Apollo 8")
    assert page.exists and page.pageid == want["pageid"]
    assert page.text() == want["text"]
    cats = list(page.categories(generator=False, show="!hidden"))
    assert "Category:Apollo program" in cats
    members = list(site.categories["Featured articles"].members(namespace=0, generator=False))
    assert len(members) == 168


# -- bad input -------------------------------------------------------------------------------------

def _export(pages: list[tuple[str, str, bool]]) -> bytes:
    ns = "http://www.mediawiki.org/xml/export-0.10/"
    root = ET.Element(f"{{{ns}}}mediawiki", {"version": "0.10", "xml:lang": "en"})
    for i, (title, text, redirect) in enumerate(pages, start=1):
        page = ET.SubElement(root, f"{{{ns}}}page")
        ET.SubElement(page, f"{{{ns}}}title").text = title
        ET.SubElement(page, f"{{{ns}}}ns").text = "0"
        ET.SubElement(page, f"{{{ns}}}id").text = str(1000 + i)
        if redirect:
            ET.SubElement(page, f"{{{ns}}}redirect", {"title": "Target"})
        rev = ET.SubElement(page, f"{{{ns}}}revision")
        ET.SubElement(rev, f"{{{ns}}}id").text = str(5000 + i)
        ET.SubElement(rev, f"{{{ns}}}timestamp").text = "2016-04-01T00:00:00Z"
        ET.SubElement(rev, f"{{{ns}}}text").text = text
    ET.register_namespace("", ns)
    return ET.tostring(root, encoding="utf-8", xml_declaration=False)


@pytest.fixture(scope="module")
def bad_pages(dev_pages):
    by_title = {p["title"]: p for p in dev_pages}
    aikido = by_title["Aikido"]["text"]
    actrius = by_title["Actrius"]["text"]
    cut = actrius.index("\n==")
    apollo_headings = "\n".join(line for line in by_title["Apollo 8"]["text"].splitlines()
                                if line.startswith("=="))
    return [
        ("Aikido", aikido, False),
        ("Empty page", "", False),
        ("AccessibleComputing", by_title["AccessibleComputing"]["text"], True),
        ("Redirect without element", by_title["AccessibleComputing"]["text"], False),
        ("Unclosed template", "{{Infobox martial art\n| name = Aikido\n" + aikido, False),
        ("Unclosed table", actrius[:cut] + '\n{| class="wikitable"\n|-\n| 1997 || x\n'
         + actrius[cut:], False),
        ("Heading only", apollo_headings, False),
    ]


EXPECTED_BAD = {
    "Empty page": "empty_page",
    "AccessibleComputing": "redirect",
    "Redirect without element": "redirect",
    "Unclosed template": "broken_markup",
    "Unclosed table": "broken_markup",
    "Heading only": "no_content",
}
RELAXED = {"min_words": 100, "min_depth": 1, "min_sections": 1}


def test_bad_input_xml_mode(bad_pages, tmp_path):
    path = tmp_path / "bad.xml.bz2"
    path.write_bytes(bz2.compress(_export(bad_pages)))
    docs, report = wiki_corpus({"mode": "xml", "path": str(path)}, RELAXED)
    assert [d.doc_id for d in docs] == ["Aikido"]
    assert {r["title"]: r["reason"] for r in report["rejects"]} == EXPECTED_BAD
    detail = {r["title"]: r["detail"] for r in report["rejects"]}
    assert "'{{'" in detail["Unclosed template"] and "'{|'" in detail["Unclosed table"]


def test_bad_input_api_mode(bad_pages, tmp_path):
    pages = [{"title": t, "ns": 0, "pageid": 1000 + i, "revid": 5000 + i,
              "timestamp": "2016-04-01T00:00:00Z", "text": text, "redirect": red}
             for i, (t, text, red) in enumerate(bad_pages, start=1)]
    # a cached title list naming a page deleted since: fetched as missing
    titles = sorted([t for t, _, _ in bad_pages] + ["Deleted meanwhile"])
    (tmp_path / "titles.json").write_text(
        json.dumps({"category": "Featured articles", "titles": titles}))
    with MediaWikiTestServer(pages) as srv:
        docs, report = wiki_corpus(api_cfg(srv), RELAXED, tmp_path)
        assert not any(r["params"].get("list") for r in srv.requests)  # list came from cache
    assert [d.doc_id for d in docs] == ["Aikido"]
    reasons = {r["title"]: r["reason"] for r in report["rejects"]}
    assert reasons == {**EXPECTED_BAD, "Deleted meanwhile": "missing"}


def test_bad_export_files(tmp_path):
    raw = SAMPLE.read_bytes()
    i = raw.index(b"Apollo 8 took three days")
    bad = tmp_path / "latin1.xml"
    bad.write_bytes(raw[:i] + b"Caf\xe9 \xff\xfe " + raw[i:])
    with pytest.raises(WikipediaSourceError, match="latin1.xml: malformed XML export"):
        wiki_corpus({"mode": "xml", "path": str(bad)}, {})
    truncated = tmp_path / "cut.xml.bz2"
    truncated.write_bytes(bz2.compress(raw)[:20000])
    with pytest.raises(WikipediaSourceError, match="cut.xml.bz2"):
        list(iter_xml_pages(truncated))
    notwiki = tmp_path / "other.xml"
    notwiki.write_text("<html><body/></html>")
    with pytest.raises(WikipediaSourceError, match="not a MediaWiki XML export"):
        list(iter_xml_pages(notwiki))
    with pytest.raises(WikipediaSourceError, match="cannot open"):
        list(iter_xml_pages(tmp_path / "absent.xml"))


# -- bundled sample and workflow glue ------------------------------------------------------------

def test_bundled_sample_passes_paper_filters():
    assert SAMPLE.stat().st_size < 1_000_000
    assert (SAMPLE.parent / "README.md").exists()
    docs, report = wiki_corpus({"mode": "xml", "path": str(SAMPLE)}, {})
    assert sorted(d.doc_id for d in docs) == ["Animation", "Apollo 8", "Arthur Schopenhauer",
                                              "Astronaut", "Atlantic Ocean"]
    assert report["rejects"] == []
    for d in docs:
        check_offsets(d)
        assert d.meta["words"] >= 3000 and d.meta["depth"] >= 3 and len(d.sections) >= 12


def test_bundled_sample_is_a_verbatim_copy_of_dev_export_pages(dev_pages):
    dev = {p["title"]: p for p in dev_pages}
    for page in read_export(SAMPLE):
        assert page == dev[page["title"]]


def test_workflow_glue_writes_contract_tables(tmp_path, monkeypatch):
    import sys

    monkeypatch.setattr(sys, "stderr", sys.stderr)  # the glue sends stderr to its log file
    out = SimpleNamespace(**{k: str(tmp_path / f"{k}.{'json' if k == 'report' else 'parquet'}")
                             for k in ("documents", "paragraphs", "sections", "report")})
    config = glue_config({"wikipedia": {
        "type": "wikipedia", "source": {"mode": "xml", "path": str(SAMPLE)},
        "selection": {"n_docs": 4}, "queries": {"llm": {"model": "any"}}}})
    run_glue("build_wikipedia", tmp_path, config=config, wildcards={"corpus": "wikipedia"},
             input={}, output=vars(out), params={"cache_dir": None})
    docs = check_table(pl.read_parquet(out.documents), "documents")
    paras = check_table(pl.read_parquet(out.paragraphs), "paragraphs")
    secs = check_table(pl.read_parquet(out.sections), "sections")
    assert docs.height == 4 and set(docs["corpus"]) == {"wikipedia"}
    assert set(paras["doc_id"]) == set(docs["doc_id"]) == set(secs["doc_id"])
    text = dict(zip(docs["doc_id"], docs["text"], strict=True))
    for r in paras.iter_rows(named=True):
        assert text[r["doc_id"]][r["start"]:r["end"]].strip()
    report = json.loads(Path(out.report).read_text())
    assert report["corpus"] == "wikipedia" and report["n_accepted"] == 4
