"""Raw Wikipedia pages from the MediaWiki API (``mwclient``) or from an XML export.

Both sources yield :class:`PageRecord` objects: the page's current wikitext plus its
categories. They differ in where categories come from:

* **API** (:class:`ApiSource`): the page's *non-hidden* categories as MediaWiki reports them
  (``prop=categories&clshow=!hidden``), so categories added by templates are included and
  maintenance categories are not.
* **XML export** (:func:`iter_xml_pages`): an export carries only the wikitext, so categories
  are the ``[[Category:...]]`` links written in it. Template-added categories are missing and
  there is no hidden flag (maintenance categories written as links are included).

The API source is polite by default: a descriptive ``User-Agent`` (required), ``maxlag`` on
every request (mwclient waits ``Retry-After`` seconds when the servers lag), a minimum interval
between HTTP requests, and mwclient's retries on 5xx / connection errors. Every fetched page is
cached on disk, one JSON file per page, written atomically, so a rerun or a crash never fetches
a page twice; the title list is cached too (delete ``titles.json`` to refresh it).
"""

from __future__ import annotations

import bz2
import hashlib
import json
import os
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import mwclient
import mwclient.client
import mwclient.errors
import mwclient.listing
import requests

from structablate.corpus.wikitext import category_links, is_redirect
from structablate.errors import StructablateError
from structablate.io import write_json
from structablate.settings import WikipediaApiSource, dump


class WikipediaSourceError(StructablateError, RuntimeError):
    """A source cannot be read (unreadable export, bad configuration, failed request)."""


@dataclass
class PageRecord:
    """One page as fetched: current wikitext, categories (without the ``Category:`` prefix)."""

    title: str
    ns: int = 0
    pageid: int | None = None
    revid: int | None = None
    timestamp: str | None = None
    wikitext: str = ""
    categories: list[str] = field(default_factory=list)
    categories_source: str = "api-nonhidden"
    redirect: bool = False
    missing: bool = False

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: dict) -> PageRecord:
        return cls(**{k: obj[k] for k in cls.__dataclass_fields__ if k in obj})


def strip_category_prefix(name: str) -> str:
    """``"Category:Birds of Asia"`` -> ``"Birds of Asia"`` (underscores as spaces)."""
    prefix, sep, rest = name.partition(":")
    if sep and prefix.strip().lower() == "category":
        name = rest
    return " ".join(name.replace("_", " ").split())


# ---------------------------------------------------------------------------------------------
# on-disk cache


class PageCache:
    """One JSON file per page under ``<root>/pages/``; file name = SHA-1 of the title."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)

    def _path(self, title: str) -> Path:
        digest = hashlib.sha1(title.encode("utf-8")).hexdigest()
        return self.root / "pages" / digest[:2] / f"{digest}.json"

    def get(self, title: str) -> PageRecord | None:
        path = self._path(title)
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None  # a damaged entry is refetched (writes are atomic, so this is rare)
        if obj.get("request_title") != title:
            return None
        return PageRecord.from_json(obj["page"])

    def put(self, title: str, record: PageRecord, source: str) -> None:
        write_json(
            {"request_title": title, "source": source, "fetched_at": time.time(),
             "page": record.to_json()},
            self._path(title),
        )

    def __contains__(self, title: str) -> bool:
        return self._path(title).exists()


# ---------------------------------------------------------------------------------------------
# MediaWiki API


class ThrottledSession(requests.Session):
    """A ``requests`` session that keeps at least ``min_interval`` seconds between requests."""

    def __init__(self, min_interval: float):
        super().__init__()
        self.min_interval = max(0.0, float(min_interval))
        self._last = float("-inf")
        self.n_requests = 0

    def request(self, method, url, *args, **kwargs):
        wait = self._last + self.min_interval - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        try:
            return super().request(method, url, *args, **kwargs)
        finally:
            self._last = time.monotonic()
            self.n_requests += 1


class ApiSource:
    """Featured-article titles and pages from a MediaWiki API through ``mwclient``.

    The connection is opened lazily, so a run answered entirely from the cache makes no
    request at all.
    """

    def __init__(self, source: WikipediaApiSource, cache_dir: str | os.PathLike[str] | None):
        if not source.user_agent.strip():
            raise ValueError(
                "source.user_agent is required for the MediaWiki API: a descriptive name with "
                "contact information, e.g. 'structablate/0.1 (https://example.org; "
                "you@example.org)'")
        self.cfg = dump(source)
        if not self.cfg["path"].endswith("/"):
            self.cfg["path"] += "/"
        self.cache = PageCache(cache_dir) if cache_dir else None
        self.cache_root = Path(cache_dir) if cache_dir else None
        self._site: mwclient.Site | None = None
        self.session: ThrottledSession | None = None
        self.n_fetched = 0
        self.n_cached = 0

    @property
    def label(self) -> str:
        c = self.cfg
        return f"{c['scheme']}://{c['host']}{c['path']}api.php"

    @property
    def site(self) -> mwclient.Site:
        if self._site is None:
            c = self.cfg
            self.session = ThrottledSession(c["rate_limit_s"])
            self.session.headers["User-Agent"] = (
                f"{c['user_agent'].strip()} {mwclient.client.USER_AGENT}"
            )
            try:
                self._site = mwclient.Site(
                    c["host"], path=c["path"], scheme=c["scheme"], pool=self.session,
                    max_retries=int(c["max_retries"]), retry_timeout=c["retry_timeout_s"],
                    max_lag=c["maxlag"], connection_options={"timeout": c["timeout_s"]},
                )
            except (requests.RequestException, mwclient.errors.MwClientError) as exc:
                raise WikipediaSourceError(f"cannot connect to {self.label}: {exc}") from exc
        return self._site

    def _query(self, **params) -> dict:
        try:
            return self.site.get("query", maxlag=str(self.cfg["maxlag"]), **params)
        except (requests.RequestException, mwclient.errors.MwClientError) as exc:
            raise WikipediaSourceError(f"{self.label}: query {params} failed: {exc}") from exc

    def titles(self) -> list[str]:
        """Main-namespace members of the featured category (cached in ``titles.json``)."""
        category = strip_category_prefix(self.cfg["featured_category"])
        cache_file = self.cache_root / "titles.json" if self.cache_root else None
        if cache_file is not None and cache_file.exists():
            obj = json.loads(cache_file.read_text(encoding="utf-8"))
            if obj.get("category") == category:
                return list(obj["titles"])
        members = mwclient.listing.List(
            self.site, "categorymembers", "cm",
            api_chunk_size=int(self.cfg["list_chunk_size"]),
            cmtitle=f"Category:{category}", cmnamespace="0", cmtype="page",
            cmprop="ids|title", maxlag=str(self.cfg["maxlag"]),
        )
        try:
            titles = sorted({m["title"] for m in members if int(m.get("ns", 0)) == 0})
        except (requests.RequestException, mwclient.errors.MwClientError) as exc:
            raise WikipediaSourceError(f"{self.label}: listing {category!r} failed: {exc}") from exc
        if cache_file is not None:
            write_json({"category": category, "source": self.label, "fetched_at": time.time(),
                        "titles": titles}, cache_file)
        return titles

    def fetch(self, title: str) -> PageRecord:
        """The page's current wikitext and non-hidden categories (from the cache if there)."""
        if self.cache is not None:
            hit = self.cache.get(title)
            if hit is not None:
                self.n_cached += 1
                return hit
        record = self._fetch(title)
        self.n_fetched += 1
        if self.cache is not None:
            self.cache.put(title, record, self.label)
        return record

    def _fetch(self, title: str) -> PageRecord:
        params = {
            "prop": "info|revisions|categories", "titles": title,
            "rvprop": "ids|timestamp|content", "rvslots": "main",
            "clshow": "!hidden", "cllimit": "max",
        }
        res = self._query(**params)
        pages = list(res.get("query", {}).get("pages", {}).values())
        if len(pages) != 1:
            raise WikipediaSourceError(f"{self.label}: expected one page for {title!r}")
        page = pages[0]
        if "invalid" in page:
            raise WikipediaSourceError(f"{self.label}: invalid title {title!r}")
        record = PageRecord(title=page.get("title", title), ns=int(page.get("ns", 0)),
                            pageid=page.get("pageid"))
        if "missing" in page:
            record.missing = True
            return record
        record.redirect = "redirect" in page
        revs = page.get("revisions") or []
        if revs:
            rev = revs[0]
            slot = rev.get("slots", {}).get("main", rev)
            record.wikitext = slot.get("*", slot.get("content", "")) or ""
            record.revid = rev.get("revid")
            record.timestamp = rev.get("timestamp")
        cats = [c["title"] for c in page.get("categories", [])]
        cont = res.get("continue", {})
        while "clcontinue" in cont:  # a page with more categories than one batch
            more = self._query(prop="categories", titles=title, clshow="!hidden",
                               cllimit="max", clcontinue=cont["clcontinue"])
            for p in more.get("query", {}).get("pages", {}).values():
                cats.extend(c["title"] for c in p.get("categories", []))
            cont = more.get("continue", {})
        record.categories = sorted({strip_category_prefix(c) for c in cats})
        return record


# ---------------------------------------------------------------------------------------------
# XML export


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _child(elem: ET.Element, name: str) -> ET.Element | None:
    for c in elem:
        if _local(c.tag) == name:
            return c
    return None


def _page_record(page: ET.Element) -> PageRecord:
    title = (_child(page, "title").text or "") if _child(page, "title") is not None else ""
    ns_el, id_el = _child(page, "ns"), _child(page, "id")
    revisions = [c for c in page if _local(c.tag) == "revision"]
    rec = PageRecord(
        title=title,
        ns=int(ns_el.text) if ns_el is not None and ns_el.text else 0,
        pageid=int(id_el.text) if id_el is not None and id_el.text else None,
        categories_source="wikitext-links",
        redirect=_child(page, "redirect") is not None,
    )
    if revisions:
        rev = revisions[-1]  # an export lists revisions oldest first: the last is current
        text_el, rid, ts = _child(rev, "text"), _child(rev, "id"), _child(rev, "timestamp")
        rec.wikitext = (text_el.text or "") if text_el is not None else ""
        rec.revid = int(rid.text) if rid is not None and rid.text else None
        rec.timestamp = ts.text if ts is not None else None
    else:
        rec.missing = True
    rec.redirect = rec.redirect or is_redirect(rec.wikitext)
    rec.categories = category_links(rec.wikitext) if rec.ns == 0 and not rec.redirect else []
    return rec


def iter_xml_pages(path: str | os.PathLike[str]) -> Iterator[PageRecord]:
    """Stream the pages of a MediaWiki XML export (``.xml`` or ``.xml.bz2``).

    Uses ``xml.etree.ElementTree.iterparse`` and clears each page after use, so memory stays
    flat. A malformed export (bad XML, bytes that are not UTF-8, a damaged bz2 stream, a root
    that is not ``<mediawiki>``) raises :class:`WikipediaSourceError` naming the file.
    """
    path = Path(path)
    opener = bz2.open if path.suffix == ".bz2" else open
    try:
        fh = opener(path, "rb")
    except OSError as exc:
        raise WikipediaSourceError(f"{path}: cannot open the XML export: {exc}") from exc
    with fh:
        root = None
        try:
            for event, elem in ET.iterparse(fh, events=("start", "end")):
                if root is None:
                    root = elem
                    if _local(root.tag) != "mediawiki":
                        raise WikipediaSourceError(
                            f"{path}: not a MediaWiki XML export (root element "
                            f"<{_local(root.tag)}>, expected <mediawiki>)")
                    continue
                if event == "end" and _local(elem.tag) == "page":
                    record = _page_record(elem)
                    root.clear()
                    yield record
        except ET.ParseError as exc:
            raise WikipediaSourceError(
                f"{path}: malformed XML export ({exc}); an export must be well-formed UTF-8 XML"
            ) from exc
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise WikipediaSourceError(f"{path}: cannot read the XML export: {exc}") from exc
        if root is None:
            raise WikipediaSourceError(f"{path}: empty XML export")
