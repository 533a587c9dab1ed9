"""Markup residue: paragraphs of the flat text that still carry markup no reader rendered.

After flattening, every paragraph of every corpus (QASPER, Wikipedia and a user's own) is
scanned for the markup of known dialects that a reader would have removed had it recognised
the format (:data:`PATTERNS`): MyST fences, roles, targets and substitutions; reStructuredText
directives, roles, inline literals, substitutions, field lines and section adornments;
MDX/JSX imports, exports and component tags; Jinja / Liquid / Hugo ``{{ … }}`` and
``{% … %}``; AsciiDoc block delimiters, attribute lines, block attributes and cross
references; Python-Markdown admonition lines. Code paragraphs (code blocks the reader kept)
are not scanned, and neither are the inline literals of a paragraph (````code```` in
reStructuredText, ```code``` in Markdown and MyST, code roles), which the readers list per
paragraph (``doc.meta["inline_literals"]``): a code sample may show markup, and a page that
documents a syntax shows it in inline code.

:func:`scan_documents` gives the share of paragraphs with residue per document and per corpus
with the worst lines; a user corpus refuses a file above ``max_markup_share`` (or skips it with
``skip_bad_files``), so an unknown dialect is never scored silently. The rule and its default
are argued in ``docs/byo.md``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from structablate.corpus.flatten import FlatDocument

PATTERNS: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (dialect, name, re.compile(rx, flags)) for dialect, name, rx, flags in (
        ("myst", "fence", r"(?:^|\s)(?:`{3,}|:{3,})[ \t]*\{[A-Za-z][\w:.+-]*\}", 0),
        ("myst", "colon fence", r"^:{3,}(?:\s|$)|\s:{3,}$", 0),
        ("myst", "role", r"\{[a-z][\w:+-]*\}`[^`]+`", 0),
        ("myst", "target", r"(?:^|\s)\([\w.:-]+\)=(?:\s|$)", 0),
        ("myst", "comment", r"^% ", 0),
        ("rst", "directive", r"(?:^|\s)\.\. [A-Za-z][\w:-]*::", 0),
        ("rst", "role", r"(?<![\w`]):[A-Za-z][\w:+.-]*:`[^`]+`", 0),
        ("rst", "inline literal", r"``[^`\s][^`]*``", 0),
        ("rst", "substitution", r"(?<![\w|])\|[A-Za-z][A-Za-z0-9-]{2,}\|_{0,2}(?![\w|])", 0),
        ("rst", "field", r"^:[A-Za-z][\w -]*:(?:\s|$)", 0),
        ("rst", "target", r"^\.\. _[^:]+:", 0),
        ("rst", "adornment", r"(?:^|\s)([=\-~^\"'`#*+])\1{5,}(?:\s|$)", 0),
        ("mdx", "import", r"^(?:import|export)\s+(?:\{|\*|default\b|const\b|[\w$]+\s+from\b)",
         0),
        # a component tag as JSX writes it: closing (</Tabs>), self-closing (<Note />) or with
        # attributes (<TabItem value="a">); a bare <PackageName> is a placeholder in prose
        ("mdx", "component", r"</[A-Z][A-Za-z0-9.]*>|<[A-Z][A-Za-z0-9.]*(?:\s[^<>]*)?/>"
         r"|<[A-Z][A-Za-z0-9.]*\s+[A-Za-z][\w-]*=[\"'{]", 0),
        ("jinja", "expression", r"^(?!.*\\[A-Za-z]{2,}).*\{\{[^{}]*\}\}", 0),
        ("jinja", "statement", r"\{%-?\s*\w[^%]*%\}", 0),
        ("asciidoc", "delimiter", r"^(?:-{4}|={4}|\*{4}|\.{4}|\+{4}|_{4}|/{4})$", 0),
        ("asciidoc", "block attribute",
         r"^\[(?:source|NOTE|TIP|WARNING|IMPORTANT|CAUTION|quote|verse|listing)\b[^\]]*\]", 0),
        ("asciidoc", "cross reference", r"<<[\w-]+(?:,[^>]*)?>>|\bxref:[\w./#-]+\[", 0),
        ("asciidoc", "link macro", r"\blink:\S+\[[^\]]*\]", 0),
        ("markdown", "admonition", r"^(?:!!!|\?\?\?\+?) \w+", 0),
    ))
"""``(dialect, construct, pattern)`` searched in each paragraph (whitespace-folded)."""


def residue(paragraph: str) -> list[str]:
    """The ``dialect construct`` names of the markup found in one paragraph."""
    return [f"{d} {n}" for d, n, rx in PATTERNS if rx.search(paragraph)]


def without_literals(paragraph: str, literals: Sequence[str]) -> str:
    """``paragraph`` (whitespace-folded) with one occurrence of each inline literal it shows
    replaced by a space: the text the residue scan reads."""
    for lit in literals:
        folded = " ".join(str(lit).split())
        if folded:
            paragraph = paragraph.replace(folded, " ", 1)
    return paragraph


def scan_document(doc: FlatDocument, skip: Iterable[int] = (),
                  literals: Mapping[int, Sequence[str]] | None = None) -> dict:
    """Residue of one document: ``{"paragraphs", "with_markup", "share", "by_construct",
    "worst"}``, leaving out the paragraphs ``skip`` (code, by para_idx) and the inline
    literals of each paragraph (``literals``: para_idx -> their texts; by default the
    readers' ``doc.meta["inline_literals"]``); ``worst`` quotes up to three paragraphs (cut
    to 160 characters) with their constructs."""
    skipped = set(skip)
    if literals is None:
        literals = doc.meta.get("inline_literals") or {}
    n = 0
    flagged: list[tuple[int, list[str]]] = []
    by: Counter = Counter()
    for p in doc.paragraphs:
        if p.para_idx in skipped:
            continue
        n += 1
        found = residue(without_literals(" ".join(doc.text[p.start:p.end].split()),
                                         literals.get(p.para_idx, ())))
        if found:
            flagged.append((p.para_idx, found))
            by.update(found)
    flagged.sort(key=lambda f: (-len(f[1]), f[0]))
    worst = []
    for idx, found in flagged[:3]:
        text = " ".join(doc.paragraph_text(idx).split())
        worst.append({"para_idx": idx, "markup": found,
                      "text": text if len(text) <= 160 else text[:157] + "..."})
    return {"paragraphs": n, "with_markup": len(flagged),
            "share": (len(flagged) / n) if n else 0.0,
            "by_construct": dict(sorted(by.items())), "worst": worst}


def scan_documents(docs: Sequence[FlatDocument], per_file: int = 20) -> dict:
    """Residue of a corpus: the per-corpus share and counts, and the ``per_file`` documents
    with the highest share (those with any markup only), each as :func:`scan_document`
    gives it plus ``doc_id`` and ``where``."""
    total = flagged = 0
    by: Counter = Counter()
    files = []
    for d in docs:
        r = scan_document(d, d.meta.get("code_paragraphs", ()))
        total += r["paragraphs"]
        flagged += r["with_markup"]
        by.update(r["by_construct"])
        if r["with_markup"]:
            files.append({"doc_id": d.doc_id, "where": d.meta.get("source", d.doc_id), **r})
    files.sort(key=lambda f: (-f["share"], f["doc_id"]))
    return {"paragraphs": total, "with_markup": flagged,
            "share": (flagged / total) if total else 0.0,
            "by_construct": dict(sorted(by.items())),
            "documents_with_markup": len(files), "documents": files[:per_file]}


def refusal(doc: FlatDocument, max_share: float) -> str | None:
    """Why a user document is refused for markup residue (its share above ``max_share`` and
    at least two paragraphs with markup), quoting its worst lines; ``None`` when it passes."""
    r = scan_document(doc, doc.meta.get("code_paragraphs", ()))
    if r["share"] <= max_share or r["with_markup"] < 2:
        return None
    quoted = "; ".join(f"paragraph {w['para_idx']} ({', '.join(w['markup'])}): {w['text']!r}"
                       for w in r["worst"])
    return (f"{r['with_markup']} of {r['paragraphs']} paragraphs ({r['share']:.1%}) carry "
            f"markup no reader rendered, above max_markup_share {max_share:.1%} (an unknown "
            f"dialect, or a construct this reader does not handle; docs/byo.md): {quoted}")
