"""A small MediaWiki API server on 127.0.0.1 for tests.

It serves pages (normally the real pages of a MediaWiki XML export) through the subset of
``api.php`` that ``mwclient`` and the corpus builder use:

* ``action=query&meta=siteinfo|userinfo`` (what ``mwclient.Site`` asks at connect);
* ``list=categorymembers`` (``cmtitle``, ``cmnamespace``, ``cmtype``, ``cmlimit``, continuation);
* ``titles=...`` / ``pageids=...`` with ``prop=info|revisions|categories`` (``rvprop=content``,
  ``rvslots``, ``clshow=hidden|!hidden``, ``cllimit``, continuation), including missing pages,
  redirects and ``normalized`` titles.

Responses use ``format=json`` (format version 1: content under ``"*"``). A page's categories are
its ``[[Category:...]]`` links, parsed here with a regular expression independent of the
builder's parser; ``hidden_categories`` marks some hidden, and ``category_members`` can replace
the membership of a category (e.g. make every article a member of "Featured articles").
``faults`` injects real failure modes, consumed one per request: ``"maxlag"`` (the API's lag
error with ``Retry-After`` / ``X-Database-Lag`` headers, only for requests that send ``maxlag``)
and ``"http503"``. Every request is logged in ``requests`` (method, params, User-Agent).
"""

from __future__ import annotations

import bz2
import json
import re
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

NAMESPACES = {
    -2: "Media", -1: "Special", 0: "", 1: "Talk", 2: "User", 3: "User talk", 4: "Wikipedia",
    5: "Wikipedia talk", 6: "File", 7: "File talk", 8: "MediaWiki", 9: "MediaWiki talk",
    10: "Template", 11: "Template talk", 12: "Help", 13: "Help talk", 14: "Category",
    15: "Category talk", 100: "Portal", 101: "Portal talk",
}
_CAT = re.compile(r"\[\[\s*[Cc][Aa][Tt][Ee][Gg][Oo][Rr][Yy]\s*:([^\]|]+)(?:\|[^\]]*)?\]\]")
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)


def canonical(title: str) -> str:
    t = " ".join(title.replace("_", " ").split())
    return t[:1].upper() + t[1:]


def read_export(path: str | Path) -> list[dict]:
    """Pages of an export as dicts (title, ns, pageid, revid, timestamp, text, redirect)."""
    path = Path(path)
    opener = bz2.open if path.suffix == ".bz2" else open
    with opener(path, "rb") as fh:
        root = ET.parse(fh).getroot()
    out = []
    for page in root:
        if not page.tag.endswith("page"):
            continue
        f = {c.tag.rsplit("}", 1)[-1]: c for c in page}
        rev = [c for c in page if c.tag.endswith("revision")][-1]
        r = {c.tag.rsplit("}", 1)[-1]: c for c in rev}
        out.append({
            "title": f["title"].text, "ns": int(f["ns"].text), "pageid": int(f["id"].text),
            "revid": int(r["id"].text), "timestamp": r["timestamp"].text,
            "text": r["text"].text or "", "redirect": "redirect" in f,
        })
    return out


class MediaWikiTestServer:
    def __init__(
        self,
        pages: Iterable[dict],
        *,
        category_members: dict[str, list[str]] | None = None,
        hidden_categories: Iterable[str] = (),
        max_limit: int = 500,
        generator: str = "MediaWiki 1.43.0-wmf.1",
    ):
        self.pages = {canonical(p["title"]): dict(p) for p in pages}
        self.by_id = {p["pageid"]: p for p in self.pages.values()}
        self.hidden = {canonical(c) for c in hidden_categories}
        self.max_limit = max_limit
        self.generator = generator
        self.faults: list[str] = []
        self.requests: list[dict] = []
        self.fault_log: list[str] = []
        self._lock = threading.Lock()
        for p in self.pages.values():
            text = _COMMENT.sub("", p["text"])
            p["categories"] = sorted({canonical(m) for m in _CAT.findall(text)} - {""})
        members: dict[str, list[str]] = {}
        for p in self.pages.values():
            for c in p["categories"]:
                members.setdefault(c, []).append(p["title"])
        for cat, titles in (category_members or {}).items():
            members[canonical(cat)] = list(titles)
        self.members = {c: sorted(t) for c, t in members.items()}
        self._httpd: ThreadingHTTPServer | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> MediaWikiTestServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                parts = urlsplit(self.path)
                self._answer(parts.path, parse_qs(parts.query, keep_blank_values=True))

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n).decode("utf-8")
                self._answer(urlsplit(self.path).path, parse_qs(body, keep_blank_values=True))

            def _answer(self, path, qs):
                params = {k: v[0] for k, v in qs.items()}
                status, headers, obj = server.handle(path, params, self.command,
                                                     self.headers.get("User-Agent", ""))
                data = json.dumps(obj).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> MediaWikiTestServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def host(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"127.0.0.1:{self._httpd.server_address[1]}"

    path = "/w/"

    # -- API -------------------------------------------------------------------------------
    def handle(self, path: str, params: dict, method: str, user_agent: str):
        with self._lock:
            self.requests.append({"method": method, "params": params, "user_agent": user_agent})
            fault = self.faults[0] if self.faults else None
            if fault == "http503" or (fault == "maxlag" and "maxlag" in params):
                self.faults.pop(0)
                self.fault_log.append(fault)
        if path != self.path + "api.php":
            return 404, {}, {"error": {"code": "notfound", "info": path}}
        if fault == "http503":
            return 503, {}, {"error": {"code": "unavailable", "info": "Service Unavailable"}}
        if fault == "maxlag" and "maxlag" in params:
            lag = "7"
            return 200, {"Retry-After": "0", "X-Database-Lag": lag}, {
                "error": {"code": "maxlag", "info": f"Waiting for db: {lag} seconds lagged.",
                          "host": "db", "lag": int(lag), "type": "db"}}
        if params.get("format") != "json":
            return 400, {}, {"error": {"code": "badformat", "info": "tests speak JSON only"}}
        if params.get("action") != "query":
            return 200, {}, {"error": {"code": "unknown_action",
                                       "info": f"Unrecognized action {params.get('action')!r}"}}
        return 200, {}, self.query(params)

    def _limit(self, value: str | None) -> int:
        if value in (None, "", "max"):
            return self.max_limit
        return max(1, min(int(value), self.max_limit))

    def query(self, params: dict) -> dict:
        out: dict = {"batchcomplete": ""}
        q: dict = {}
        meta = set(filter(None, params.get("meta", "").split("|")))
        if "siteinfo" in meta:
            q["general"] = {"mainpage": "Main Page", "base": "http://localhost/wiki/Main_Page",
                            "sitename": "Wikipedia", "generator": self.generator,
                            "case": "first-letter", "lang": "en", "articlepath": "/wiki/$1",
                            "scriptpath": self.path.rstrip("/")}
            q["namespaces"] = {str(i): {"id": i, "case": "first-letter", "*": n}
                               for i, n in NAMESPACES.items()}
        if "userinfo" in meta:
            q["userinfo"] = {"id": 0, "name": "127.0.0.1", "anon": ""}
            uiprop = set(params.get("uiprop", "").split("|"))
            if "groups" in uiprop:
                q["userinfo"]["groups"] = ["*"]
            if "rights" in uiprop:
                q["userinfo"]["rights"] = ["read", "createaccount", "writeapi"]
        cont: dict = {}
        if params.get("list") == "categorymembers":
            cat = canonical(params.get("cmtitle", "").partition(":")[2])
            titles = self.members.get(cat, [])
            entries = [self.pages[canonical(t)] for t in titles if canonical(t) in self.pages]
            if params.get("cmnamespace"):
                allowed = {int(x) for x in params["cmnamespace"].split("|")}
                entries = [p for p in entries if p["ns"] in allowed]
            if params.get("cmtype") == "page":
                entries = [p for p in entries if p["ns"] not in (6, 14)]
            start = int(params.get("cmcontinue") or 0)
            limit = self._limit(params.get("cmlimit"))
            q["categorymembers"] = [{"pageid": p["pageid"], "ns": p["ns"], "title": p["title"]}
                                    for p in entries[start:start + limit]]
            if start + limit < len(entries):
                cont = {"cmcontinue": str(start + limit), "continue": "-||"}
        if "titles" in params or "pageids" in params:
            q.update(self._pages(params, cont))
        out["query"] = q
        if cont:
            out["continue"] = cont
            out.pop("batchcomplete")
        return out

    def _pages(self, params: dict, cont: dict) -> dict:
        props = set(filter(None, params.get("prop", "").split("|")))
        if "pageids" in params:
            wanted = [self.by_id.get(int(i)) for i in params["pageids"].split("|")]
            requested = [(None, p["title"] if p else None) for p in wanted]
        else:
            requested = [(t, canonical(t)) for t in params["titles"].split("|")]
        normalized = [{"from": a, "to": b} for a, b in requested if a is not None and a != b]
        pages: dict[str, dict] = {}
        missing_key = -1
        for _, title in requested:
            page = self.pages.get(title) if title else None
            if page is None:
                pages[str(missing_key)] = {"ns": 0, "title": title, "missing": ""}
                missing_key -= 1
                continue
            entry: dict = {"pageid": page["pageid"], "ns": page["ns"], "title": page["title"]}
            if "info" in props:
                entry.update(contentmodel="wikitext", pagelanguage="en",
                             touched=page["timestamp"], lastrevid=page["revid"],
                             length=len(page["text"].encode("utf-8")))
                if page["redirect"]:
                    entry["redirect"] = ""
                if "protection" in params.get("inprop", ""):
                    entry["protection"] = []
            if "revisions" in props:
                rvprop = set(params.get("rvprop", "ids|timestamp|flags|comment|user").split("|"))
                rev: dict = {}
                if "ids" in rvprop:
                    rev.update(revid=page["revid"], parentid=0)
                if "timestamp" in rvprop:
                    rev["timestamp"] = page["timestamp"]
                if "content" in rvprop:
                    body = {"contentformat": "text/x-wiki", "contentmodel": "wikitext",
                            "*": page["text"]}
                    if params.get("rvslots"):
                        rev["slots"] = {"main": body}
                    else:
                        rev.update(body)
                entry["revisions"] = [rev]
            if "categories" in props:
                cats = page["categories"]
                show = params.get("clshow", "")
                if show == "!hidden":
                    cats = [c for c in cats if c not in self.hidden]
                elif show == "hidden":
                    cats = [c for c in cats if c in self.hidden]
                start = 0
                if params.get("clcontinue"):
                    pid, _, idx = params["clcontinue"].partition("|")
                    start = int(idx) if int(pid) == page["pageid"] else len(cats)
                limit = self._limit(params.get("cllimit"))
                if cats[start:start + limit]:
                    entry["categories"] = [{"ns": 14, "title": f"Category:{c}"}
                                           for c in cats[start:start + limit]]
                if start + limit < len(cats):
                    cont.update(clcontinue=f"{page['pageid']}|{start + limit}", continue_="||")
            pages[str(page["pageid"])] = entry
        if "continue_" in cont:
            cont["continue"] = cont.pop("continue_")
        out: dict = {"pages": pages}
        if normalized:
            out["normalized"] = normalized
        return out
