"""Report blocks (tables, figures, notes) and their Markdown / HTML rendering.

A page is a list of :class:`PageSection`; each holds blocks (:class:`TableBlock`,
:class:`FigureBlock`, :class:`Note`). The same blocks render to Markdown
(``index.md``) and to a self-contained HTML page (``index.html``; figures are relative links),
and a single table renders to a standalone HTML document for ``snakemake --report``.

On the HTML page every table carries its Markdown and LaTeX (booktabs) source in a fold with a
copy button, and every figure links its PNG and SVG files, so a table or figure goes into a
paper without retyping.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class TableBlock:
    """A table of already formatted strings on the page. ``key`` becomes the HTML ``id``."""

    key: str
    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""
    align: list[str] | None = None  # "l" / "r" per column; default: first left, rest right

    def alignments(self) -> list[str]:
        if self.align is not None:
            return self.align
        return ["l"] + ["r"] * (len(self.columns) - 1)


@dataclass
class FigureBlock:
    """A figure file on the page, linked relative to it; ``formats`` are the other files of
    the same figure linked under it (e.g. ``{"SVG": "forest.svg"}``; the ``src`` is linked as
    its own format)."""

    key: str
    src: str
    caption: str
    formats: dict[str, str] = field(default_factory=dict)

    def links(self) -> dict[str, str]:
        """Format name -> file: ``src`` first, then ``formats``."""
        own = self.src.rsplit(".", 1)[-1].upper() if "." in self.src else "file"
        return {own: self.src, **{k: v for k, v in self.formats.items() if v != self.src}}


@dataclass
class Note:
    """A paragraph; ``kind`` is ``"info"``, ``"warning"`` (flagged) or ``"not-run"``."""

    text: str
    kind: str = "info"


@dataclass
class PageSection:
    """A titled part of the page (``level`` 2 = a top-level heading)."""

    title: str
    blocks: list = field(default_factory=list)
    level: int = 2
    key: str = ""


def slug(text: str) -> str:
    """An HTML id from free text."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


# ---------------------------------------------------------------- Markdown


def _md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def table_markdown(t: TableBlock) -> str:
    lines = [f"**{t.title}**", ""] if t.title else []
    lines.append("| " + " | ".join(_md_cell(c) for c in t.columns) + " |")
    lines.append("| " + " | ".join("---:" if a == "r" else "---" for a in t.alignments()) + " |")
    for row in t.rows:
        lines.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
    if t.note:
        lines += ["", f"*{t.note}*"]
    return "\n".join(lines)


def block_markdown(b) -> str:
    if isinstance(b, TableBlock):
        return table_markdown(b)
    if isinstance(b, FigureBlock):
        links = " · ".join(f"[{k}]({v})" for k, v in b.links().items())
        return f"![{b.caption}]({b.src})\n\n*{b.caption}* ({links})"
    if isinstance(b, Note):
        prefix = {"warning": "**⚠ Flag:** ", "not-run": "**Not run:** "}.get(b.kind, "")
        return prefix + b.text
    if isinstance(b, str):
        return b
    raise TypeError(f"unknown block {type(b).__name__}")


def page_markdown(title: str, sections: Sequence[PageSection], intro: Sequence = ()) -> str:
    parts = [f"# {title}"]
    parts += [block_markdown(b) for b in intro]
    for s in sections:
        parts.append("#" * s.level + " " + s.title)
        parts += [block_markdown(b) for b in s.blocks]
    return "\n\n".join(parts) + "\n"


# ---------------------------------------------------------------- LaTeX

_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}"}
_LATEX_UNICODE = {"−": "$-$", "–": "--", "—": "---", "Δ": r"$\Delta$", "±": r"$\pm$",
                  "×": r"$\times$", "≥": r"$\geq$", "≤": r"$\leq$", "√": r"$\surd$",
                  "›": r"$\rangle$", "⚠": "(!)", "α": r"$\alpha$", "≈": r"$\approx$",
                  "→": r"$\rightarrow$", "…": r"\ldots{}", "·": r"$\cdot$"}


def latex_escape(s: str) -> str:
    """Text safe inside a LaTeX tabular cell (pdfLaTeX, no extra package): special characters
    escaped, the report's Unicode symbols (minus sign, Δ, ±, dashes) as LaTeX commands."""
    out = []
    for ch in str(s):
        out.append(_LATEX_SPECIAL.get(ch) or _LATEX_UNICODE.get(ch) or ch)
    return "".join(out).replace("\n", " ")


def table_latex(t: TableBlock) -> str:
    """A booktabs ``table`` environment: caption from the title, label ``tab:<key>``, the note
    as a footnote-sized paragraph under the tabular (needs ``\\usepackage{booktabs}``)."""
    spec = "".join("r" if a == "r" else "l" for a in t.alignments())
    lines = [r"\begin{table}[t]", r"\centering", r"\small"]
    if t.title:
        lines.append(rf"\caption{{{latex_escape(t.title)}}}")
    lines.append(rf"\label{{tab:{slug(t.key)}}}")
    lines.append(rf"\begin{{tabular}}{{{spec}}}")
    lines.append(r"\toprule")
    lines.append(" & ".join(latex_escape(c) for c in t.columns) + r" \\")
    lines.append(r"\midrule")
    for row in t.rows:
        lines.append(" & ".join(latex_escape(c) for c in row) + r" \\")
    lines.append(r"\bottomrule")
    lines.append(r"\end{tabular}")
    if t.note:
        lines.append(rf"\par\footnotesize {latex_escape(t.note)}")
    lines.append(r"\end{table}")
    return "\n".join(lines)


# ---------------------------------------------------------------- HTML

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1180px;
margin:2em auto;padding:0 1em;color:#1d1d1f;line-height:1.45}
h1{border-bottom:2px solid #333;padding-bottom:.2em}
h2{margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.88em}
caption{caption-side:top;text-align:left;font-weight:600;padding:.3em 0}
th,td{border:1px solid #ccc;padding:.25em .55em}
th{background:#f0f0f3}
td.r{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.primary td{background:#fff8d6}
figure{margin:1em 0}
figure img{max-width:100%;border:1px solid #ddd}
figcaption{font-size:.88em;color:#444}
.note{font-size:.9em;color:#333}
.tnote{font-size:.85em;color:#555;margin-top:-.8em}
.warning{background:#fde8e8;border-left:5px solid #c0392b;padding:.5em .8em;margin:.5em 0}
.not-run{background:#eef2f7;border-left:5px solid #7f8c8d;padding:.5em .8em;margin:.5em 0}
nav ul{columns:2}
details.source{margin:-.6em 0 1.2em;font-size:.82em}
details.source summary{cursor:pointer;color:#1f5fa8}
details.source pre{background:#f6f6f8;border:1px solid #ddd;padding:.5em;overflow-x:auto;
max-height:22em;white-space:pre}
details.source button{font-size:.9em;margin:.2em 0}
.formats{font-size:.85em}
"""

COPY_JS = """
function copySource(id){const t=document.getElementById(id).textContent;
navigator.clipboard.writeText(t).then(()=>{const b=document.getElementById(id+'-btn');
b.textContent='copied';setTimeout(()=>{b.textContent='copy'},1500)});}
"""


def _esc(s) -> str:
    return html.escape(str(s), quote=True)


def table_html(t: TableBlock, highlight: Sequence[int] = (), sources: bool = True) -> str:
    """An HTML table; rows whose index is in ``highlight`` get class ``primary``; with
    ``sources`` its Markdown and LaTeX follow (:func:`sources_html`)."""
    aligns = t.alignments()
    out = [f'<table id="{_esc(t.key)}">']
    if t.title:
        out.append(f"<caption>{_esc(t.title)}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{_esc(c)}</th>" for c in t.columns)
               + "</tr></thead><tbody>")
    hl = set(highlight)
    for i, row in enumerate(t.rows):
        cls = ' class="primary"' if i in hl else ""
        cells = "".join(
            f'<td class="{a}">{_esc(c)}</td>' for c, a in zip(row, aligns, strict=True))
        out.append(f"<tr{cls}>{cells}</tr>")
    out.append("</tbody></table>")
    if t.note:
        out.append(f'<p class="tnote">{_esc(t.note)}</p>')
    if sources:
        out.append(sources_html(t))
    return "\n".join(out)


def sources_html(t: TableBlock) -> str:
    """The table's Markdown and LaTeX source, each in a fold with a copy button."""
    parts = []
    for fmt, text in (("Markdown", table_markdown(t)), ("LaTeX", table_latex(t))):
        sid = f"{t.key}-{fmt.lower()}"
        parts.append(
            f'<details class="source"><summary>{fmt}</summary>'
            f'<button type="button" id="{_esc(sid)}-btn" '
            f'onclick="copySource(\'{_esc(sid)}\')">copy</button>'
            f'<pre id="{_esc(sid)}">{_esc(text)}</pre></details>')
    return "\n".join(parts)


def block_html(b) -> str:
    if isinstance(b, TableBlock):
        hl = [i for i, r in enumerate(b.rows) if r and r[-1] == "confirmatory"] \
            if b.columns and b.columns[-1] == "role" else []
        return table_html(b, hl)
    if isinstance(b, FigureBlock):
        links = " · ".join(f'<a href="{_esc(v)}" download>{_esc(k)}</a>'
                           for k, v in b.links().items())
        return (f'<figure id="{_esc(b.key)}"><img src="{_esc(b.src)}" alt="{_esc(b.caption)}">'
                f'<figcaption>{_esc(b.caption)} <span class="formats">({links})</span>'
                "</figcaption></figure>")
    if isinstance(b, Note):
        label = {"warning": "<strong>⚠ Flag:</strong> ",
                 "not-run": "<strong>Not run:</strong> "}.get(b.kind, "")
        cls = b.kind if b.kind in ("warning", "not-run") else "note"
        return f'<p class="{cls}">{label}{_esc(b.text)}</p>'
    if isinstance(b, str):
        return f'<p class="note">{_esc(b)}</p>'
    raise TypeError(f"unknown block {type(b).__name__}")


def page_html(title: str, sections: Sequence[PageSection], intro: Sequence = ()) -> str:
    """A complete HTML document with a table of contents."""
    body = [f"<h1>{_esc(title)}</h1>"]
    body += [block_html(b) for b in intro]
    toc = [f'<li><a href="#{_esc(s.key or slug(s.title))}">{_esc(s.title)}</a></li>'
           for s in sections if s.level == 2]
    if toc:
        body.append("<nav><strong>Contents</strong><ul>" + "".join(toc) + "</ul></nav>")
    for s in sections:
        body.append(f'<h{s.level} id="{_esc(s.key or slug(s.title))}">{_esc(s.title)}</h{s.level}>')
        body += [block_html(b) for b in s.blocks]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_esc(title)}</title><style>{CSS}</style><script>{COPY_JS}</script>"
            "</head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def standalone_html(title: str, blocks: Sequence) -> str:
    """One or more blocks as their own HTML document (for ``snakemake --report``)."""
    return page_html(title, [], intro=list(blocks))


def table_lines(columns: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> list[str]:
    """A table without title or note, as the lines of its Markdown (:func:`table_markdown`);
    ``align`` one letter a column (``l`` or ``r``)."""
    return table_markdown(TableBlock("", "", list(columns), [list(r) for r in rows],
                                     align=list(align))).splitlines()
