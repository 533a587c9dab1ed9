"""Benchmark: Wikipedia articles normalized per second (wikitext -> verified flat document).

Usage: python bench/bench_wikipedia_normalize.py [EXPORT] [--repeat N]

Reads the main-namespace, non-redirect pages of a MediaWiki XML export (default: the dev export
``$STRUCTABLATE_DATA/wikipedia/enwiki-2016-sample-dev.xml.bz2``; the bundled sample is
``resources/wikipedia/sample.xml``) once, then times ``normalize_wikitext`` + ``verify_document``
over all of them, ``--repeat`` times, and prints pages/s, MB of wikitext/s and words/s of the
best repeat. Reading and decompressing the export is not timed.
"""

from __future__ import annotations

import argparse
import time

from benchdata import default_data_file, require_file

from structablate.corpus.mediawiki_fetch import iter_xml_pages
from structablate.corpus.verify import verify_document
from structablate.corpus.wikitext import normalize_wikitext, word_count

DEV = ("wikipedia", "enwiki-2016-sample-dev.xml.bz2")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("export", nargs="?", default=default_data_file(*DEV),
                    help="MediaWiki XML export (.xml or .xml.bz2)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    export = require_file(args.export, what="bench_wikipedia_normalize", flag="an EXPORT path",
                          parts=DEV)
    pages = [(r.title, r.wikitext) for r in iter_xml_pages(str(export))
             if r.ns == 0 and not r.redirect and r.wikitext.strip()]
    mbytes = sum(len(t.encode("utf-8")) for _, t in pages) / 1e6
    best, words = float("inf"), 0
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        words = 0
        for title, text in pages:
            doc = normalize_wikitext(title, title, text)
            if doc.paragraphs:
                assert not verify_document(doc), title
            words += word_count(doc.text)
        best = min(best, time.perf_counter() - t0)
    print(f"export: {args.export}")
    print(f"{len(pages)} pages, {mbytes:.2f} MB wikitext, {words} words out")
    print(f"normalize+verify: {len(pages) / best:.1f} pages/s, {mbytes / best:.2f} MB/s, "
          f"{words / best:,.0f} words/s (best of {args.repeat}: {best:.3f} s)")


if __name__ == "__main__":
    main()
