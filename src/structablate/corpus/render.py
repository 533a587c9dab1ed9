"""What a built Sphinx page shows: the directive and role rules that MyST
(:mod:`~structablate.corpus.myst`) and reStructuredText (:mod:`~structablate.corpus.rst`) share,
the block events both readers emit, and the per-file markup report.

Both readers turn a file into a list of :class:`Block` events (headings and paragraphs in
reading order); :func:`assemble` turns the events into a
:class:`~structablate.corpus.flatten.FlatDocument`. Rules (``docs/byo.md`` has the tables):

* **Directives** fall into one category each (:func:`directive_kind`):
  ``admonition`` (a title paragraph, then the body's blocks), ``version`` (``Added in version
  X: `` before the body's first paragraph), ``container`` (the body's blocks only),
  ``object`` (a domain description such as ``py:function``: the signature, then the body),
  ``code`` (one code paragraph, per ``code_blocks``), ``table`` (one paragraph per row),
  ``figure`` (the caption and legend), ``include`` (the included file's blocks, when it lies
  inside the corpus), ``dropped`` (nothing; counted per file: ``toctree``, ``contents``,
  ``raw``, autodoc, …) and ``unknown`` (the body kept, the name reported).
* **Roles** render as their text (:func:`role_text`): an explicit title if given
  (``Title <target>``), else the target with the leading ``~`` (last component) and ``!``
  handled; ``func``/``meth`` roles get ``()`` as Sphinx adds them; ``pep``/``rfc`` read
  ``PEP 8`` / ``RFC 2324``; ``menuselection`` ``A --> B`` reads ``A ‣ B``; ``guilabel`` drops
  its ``&`` accelerator; ``abbr`` keeps the abbreviation; ``samp``/``file`` drop the braces of
  their variable parts; icon roles (``octicon``, …) show nothing; ``doc`` shows the title of
  the page it names when that page is in the corpus (:func:`doc_role_text`). An unknown role
  renders the same way and its name is reported.
* **Errors** of the parser that lose or move text are collected per file
  (:func:`note_message`) and refuse it (:func:`refuse_errors`).
"""

from __future__ import annotations

import contextvars
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from structablate.corpus.files import ByoInputError, DocumentFile, HeadingStack, read_text
from structablate.corpus.flatten import DocumentBuilder, FlatDocument

# ------------------------------------------------------------------------------ directives

ADMONITION_TITLES: dict[str, str] = {
    "note": "Note", "warning": "Warning", "tip": "Tip", "hint": "Hint",
    "important": "Important", "caution": "Caution", "attention": "Attention",
    "danger": "Danger", "error": "Error", "seealso": "See also", "todo": "Todo",
}
"""Admonitions whose box shows a fixed title (Sphinx's English labels)."""

TITLED_BY_ARGUMENT = frozenset({
    "admonition", "dropdown", "tab-item", "tab", "card", "grid-item-card", "topic", "sidebar",
    "rubric", "details", "exercise", "solution", "prf:definition", "prf:theorem",
    "prf:example", "example", "margin", "glossary-item"})
"""Directives whose argument is a title paragraph, followed by the body's blocks."""

VERSION_LABELS: dict[str, str] = {
    "versionadded": "Added in version", "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version", "versionremoved": "Removed in version",
}
"""Version notes: ``Added in version 2.1: `` before the first paragraph of the body."""

CONTAINERS = frozenset({
    "container", "div", "tab-set", "tabs", "grid", "grid-item", "only", "ifconfig",
    "hlist", "compound", "epigraph", "pull-quote", "highlights", "cssclass", "rst-class",
    "card-carousel", "tab-set-code", "parsed-literal", "line-block", "centered",
    "glossary"})
"""Directives shown as their body (and argument, for ``centered``) without a title."""

CODE = frozenset({
    "code-block", "code", "sourcecode", "code-cell", "literalinclude", "productionlist",
    "doctest", "testcode", "testoutput", "jupyter-execute", "ipython", "prompt",
    "highlight-block", "console"})
"""Directives shown as a code block (one paragraph; ``code_blocks: drop`` removes it)."""

TABLES = frozenset({"list-table", "csv-table", "table", "flat-table"})
"""Directives shown as a table: one paragraph per row, cells joined by `` | ``."""

FIGURES = frozenset({"figure", "image", "figure-md"})
"""Directives shown as an image: a figure's caption and legend stay, an image goes."""

MATH = frozenset({"math"})
"""Display math: its LaTeX source is the paragraph (the page shows it typeset)."""

DROPPED = frozenset({
    "toctree", "contents", "raw", "tableofcontents", "index", "meta", "highlight",
    "default-role", "default-domain", "currentmodule", "module", "py:module",
    "py:currentmodule", "c:namespace", "cpp:namespace", "tabularcolumns", "sectionauthor",
    "moduleauthor", "codeauthor", "bibliography", "mermaid", "graphviz", "graph", "digraph",
    "plantuml", "inheritance-diagram", "image-sg", "title", "sectnum", "header", "footer",
    "target-notes", "role", "program", "click", "argparse", "jinja", "tags", "post",
    "youtube", "video",
    "iframe", "glue:any", "glue:figure", "glue:math", "glue:text", "glue", "unicode",
    "date", "replace", "todolist", "only-html", "tab-set-code-include", "needtable",
    "needflow", "needlist"})
"""Directives whose output is navigation, layout, generated or external content: dropped,
counted per file."""

AUTODOC = re.compile(r"^(?:auto\w+|\w+:auto\w+|autodoc\w*)$")
"""autodoc-style directives (``automodule``, ``autoclass``, ``autofunction``, ``autoapi…``):
their text comes from imported source that is not here; dropped, counted and listed."""

OBJECT_TYPES = frozenset({
    "function", "class", "method", "classmethod", "staticmethod", "attribute", "property",
    "data", "exception", "decorator", "decoratormethod", "type", "member",
    "macro", "struct", "union", "enum", "enumerator", "var", "namespace", "concept",
    "directive", "rst:role", "option", "describe", "object", "envvar", "confval", "cmdoption",
    "event", "setting", "opcode", "pdbcommand", "2to3fixer", "monitoring-event",
    "c:function", "c:macro", "c:member", "c:type", "c:var", "c:struct"})
"""Object descriptions (with or without a domain: ``py:function``, ``function``): the
signature line(s), then the body."""

INCLUDE = frozenset({"include"})


def directive_kind(name: str) -> str:
    """The rendering category of a directive (see the module docstring)."""
    name = name.lower()
    bare = name.split(":", 1)[1] if ":" in name and not name.startswith("glue") else name
    if name in INCLUDE:
        return "include"
    if name == "eval-rst":
        return "eval-rst"
    if name in ADMONITION_TITLES or name in TITLED_BY_ARGUMENT:
        return "admonition"
    if name in VERSION_LABELS:
        return "version"
    if name in CODE:
        return "code"
    if name in TABLES:
        return "table"
    if name in FIGURES:
        return "figure"
    if name in MATH:
        return "math"
    if AUTODOC.match(name):
        return "autodoc"
    if name in DROPPED:
        return "dropped"
    if name in CONTAINERS:
        return "container"
    if bare in OBJECT_TYPES or name in OBJECT_TYPES:
        return "object"
    return "unknown"


def admonition_title(name: str, argument: str) -> tuple[str, str]:
    """``(title, first body line)`` of a box: the fixed label of a titled admonition
    (``note`` → ``Note``; its argument is the first line of its body, as docutils reads it),
    else the argument (``admonition``, ``dropdown``, ``tab-item``, …)."""
    name = name.lower()
    if name in ADMONITION_TITLES:
        return ADMONITION_TITLES[name], argument
    return " ".join(argument.split()), ""


def version_text(name: str, argument: str) -> tuple[str, str]:
    """``(label, rest)`` of a version note: ``versionadded 2.1 Some text`` gives
    ``("Added in version 2.1", "Some text")``."""
    parts = argument.strip().split(None, 1)
    version = parts[0] if parts else ""
    label = f"{VERSION_LABELS[name.lower()]} {version}".strip()
    return label, parts[1] if len(parts) > 1 else ""


# ------------------------------------------------------------------------------------ roles

_TITLED_TARGET = re.compile(r"^(.*?)\s*(?<!\\)<([^<>]*)>$", re.S)
_SAMP_VAR = re.compile(r"(?<!\\)\{([^{}]*)\}")
_FUNC_ROLES = frozenset({"func", "meth", "py:func", "py:meth", "c:func", "cpp:func",
                         "js:func", "js:meth", "c:macro"})

KNOWN_ROLES = frozenset({
    "ref", "doc", "term", "any", "numref", "keyword", "option", "envvar", "token",
    "download", "abbr", "command", "dfn", "file", "guilabel", "kbd", "mailheader", "makevar",
    "manpage", "menuselection", "mimetype", "newsgroup", "program", "regexp", "samp", "eq",
    "math", "pep", "rfc", "sub", "sup", "subscript", "superscript", "code", "literal",
    "emphasis", "strong", "title-reference", "title", "t", "pep-reference", "rfc-reference",
    "mod", "func", "data", "const", "class", "meth", "attr", "exc", "obj", "type", "member",
    "macro", "struct", "union", "enum", "enumerator", "var", "expr", "texpr", "confval",
    "cite", "footcite", "cite:p", "cite:t", "ps", "octicon", "fa", "bdg", "bdg-primary",
    "bdg-secondary", "bdg-success", "bdg-info", "bdg-warning", "bdg-danger", "bdg-light",
    "bdg-dark", "bdg-link-primary", "iconify", "raw", "py:mod", "py:func", "py:data",
    "py:const", "py:class", "py:meth", "py:attr", "py:exc", "py:obj", "py:type",
    "c:func", "c:member", "c:macro", "c:type", "c:data", "c:var", "c:struct", "c:enum",
    "c:expr", "cpp:any", "cpp:class", "cpp:struct", "cpp:func", "cpp:member", "cpp:var",
    "cpp:type", "cpp:concept", "cpp:enum", "cpp:enumerator", "cpp:expr", "cpp:texpr",
    "js:mod", "js:func", "js:meth", "js:class", "js:data", "js:attr", "rst:dir",
    "rst:role", "rst:directive", "std:ref", "std:doc", "std:term", "std:option",
    "std:envvar", "std:token", "std:numref", "std:keyword", "external", "event", "setting",
    "opcode", "gh", "issue", "pr", "user", "commit", "source", "pypi", "wikipedia"})
"""Roles read as Sphinx (and its common extensions) render them; any other role renders the
same way and is reported by name."""


ICON_ROLES = frozenset({"octicon", "fa", "fab", "fas", "far", "iconify",
                        "material-regular", "material-outlined", "material-round",
                        "material-sharp", "material-twotone"})
"""Roles that show an icon (sphinx-design's ``octicon``, Font Awesome, Material): an image
with no text, so they render as nothing, in a directive's title as in running text."""

LITERAL_ROLES = frozenset({"code", "literal", "samp", "file", "kbd", "command", "program",
                           "envvar", "option", "regexp", "makevar", "mimetype"})
"""Roles the page shows as code: their text is left out of the markup-residue scan, as an
inline literal is (it may show syntax on purpose)."""


def role_text(name: str, content: str) -> str:
    """What a role shows on the page (see the module docstring); ``content`` is the raw text
    between the backquotes, backslash escapes not yet resolved."""
    name = name.lower()
    text = content
    if name in ICON_ROLES:
        return ""
    if name in ("math", "code", "literal", "eq", "kbd", "sub", "sup", "subscript",
                "superscript", "raw"):
        return text
    if name in ("pep", "pep-reference"):
        return f"PEP {text.strip()}" if text.strip()[:1].isdigit() else text
    if name in ("rfc", "rfc-reference"):
        return f"RFC {text.strip()}" if text.strip()[:1].isdigit() else text
    if name == "abbr":
        m = re.match(r"^(.*?)\s*\((.*)\)\s*$", text, re.S)
        return _unescape(m.group(1) if m else text)
    if name == "menuselection":
        return _unescape(text.replace("-->", "\u2023").replace("&&", "\0")
                         .replace("&", "").replace("\0", "&"))
    if name == "guilabel":
        return _unescape(text.replace("&&", "\0").replace("&", "").replace("\0", "&"))
    if name in ("samp", "file"):
        return _unescape(_SAMP_VAR.sub(r"\1", text))
    m = _TITLED_TARGET.match(text)
    if m and m.group(1).strip():
        return _unescape(m.group(1))
    target = (m.group(2) if m else text).strip()
    if target.startswith("!"):
        target = target[1:]
    if target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    if name in _FUNC_ROLES and target and not target.endswith(")"):
        target += "()"
    return _unescape(target)


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


DOC_SUFFIXES = (".rst", ".rest", ".md", ".markdown")
"""The source suffixes a ``doc`` role's document name is completed with (Sphinx's
``source_suffix`` for reStructuredText and MyST)."""


def find_document(name: str, current: str, roots: Sequence[str]) -> Path | None:
    """The file a ``doc`` role names, by Sphinx's rule: relative to the folder of ``current``,
    or to a corpus folder (``roots``) when it starts with ``/``; completed with a suffix of
    :data:`DOC_SUFFIXES` unless it has one. ``None`` when no such file lies inside a corpus
    folder."""
    name = name.strip()
    if not name or not roots:
        return None
    bases = [Path(r) for r in roots] if name.startswith("/") else [Path(current).parent]
    rel = name.lstrip("/")
    tails = [rel] if Path(rel).suffix.lower() in DOC_SUFFIXES else [
        rel + suffix for suffix in DOC_SUFFIXES]
    inside = [Path(r).resolve() for r in roots]
    for base in bases:
        for tail in tails:
            real = (base / tail).resolve()
            if real.is_file() and any(r == real or r in real.parents for r in inside):
                return real
    return None


TITLE_READERS: dict[str, Callable[[str, DocumentFile], FlatDocument]] = {}
"""Source suffix -> the parser of its pages (``parse_rst``, ``parse_myst``), each reader
registering its own when imported (:func:`register_title_reader`): what :func:`page_title`
reads a page named by a ``doc`` role with, without this module importing the readers."""


def register_title_reader(suffixes: Sequence[str],
                          parse: Callable[[str, DocumentFile], FlatDocument]) -> None:
    """Read pages with these suffixes by ``parse`` (a reader's document parser) for their
    title."""
    for suffix in suffixes:
        TITLE_READERS[suffix] = parse


_TITLES: dict[str, tuple[str, str | None]] = {}  # path -> (sha256 of its text, its title)
_READING_TITLE: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "structablate_reading_title", default=False)


def page_title(path: Path) -> str | None:
    """The title a page is built with (:func:`assemble`'s rule, read by the reader of its
    suffix), ``None`` when it has none or cannot be read. ``doc`` roles inside the page read
    while finding it show their path's last part (no title lookup within a lookup: two pages
    naming each other end). Cached by the text's digest."""
    parse = TITLE_READERS.get(path.suffix.lower())
    if _READING_TITLE.get() or parse is None:
        return None
    try:
        text = read_text(path)
    except ByoInputError:
        return None
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    hit = _TITLES.get(str(path))
    if hit is not None and hit[0] == digest:
        return hit[1]
    token = _READING_TITLE.set(True)
    try:
        try:
            title: str | None = parse(text, DocumentFile("title", "", str(path))).title or None
        except ByoInputError:
            title = None
    finally:
        _READING_TITLE.reset(token)
    _TITLES[str(path)] = (digest, title)
    return title


def doc_role_text(content: str, current: str, roots: Sequence[str]) -> str:
    """What Sphinx's ``doc`` role shows: its explicit title (``Title <path>``), else the title
    of the page it names when that page is in the corpus (:func:`find_document`,
    :func:`page_title`), else the name's last part (``guide/install`` → ``install``).
    ``current`` is the file the role is in, ``roots`` the corpus folders."""
    m = _TITLED_TARGET.match(content)
    if m and m.group(1).strip():
        return _unescape(m.group(1))
    name = _unescape((m.group(2) if m else content).strip())
    path = find_document(name, current, roots)
    title = page_title(path) if path is not None else None
    if title:
        return title
    last = name.rstrip("/").rsplit("/", 1)[-1]
    stem, dot, suffix = last.rpartition(".")
    return stem if dot and f".{suffix.lower()}" in DOC_SUFFIXES else last


# ------------------------------------------------------------------------------- reporting


@dataclass
class MarkupReport:
    """What a reader left out or could not render in one file (JSON-able via
    :meth:`as_dict`): dropped directives by name, autodoc directives with their arguments,
    unknown directives and roles by name, includes refused (outside the corpus, missing),
    substitutions left unresolved."""

    dropped: Counter = field(default_factory=Counter)
    autodoc: list[str] = field(default_factory=list)
    unknown_directives: Counter = field(default_factory=Counter)
    unknown_roles: Counter = field(default_factory=Counter)
    includes_refused: list[str] = field(default_factory=list)
    includes: list[str] = field(default_factory=list)
    unresolved_substitutions: Counter = field(default_factory=Counter)
    code_paragraphs: list[int] = field(default_factory=list)
    inline_literals: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """para_idx -> the inline literals (``code``) its text shows, left out of the markup-residue
    scan (:mod:`~structablate.corpus.residue`): a literal may show syntax on purpose."""
    errors: list[str] = field(default_factory=list)
    """The parser's errors that lose or move text (docutils system messages of level ≥ 3
    and the lost headings of :data:`LOST_HEADING`), each ``"line N: LEVEL: message"``: the
    file is refused (:func:`refuse_errors`); never part of :meth:`as_dict`."""

    def as_dict(self) -> dict:
        out: dict = {}
        if self.dropped:
            out["dropped_directives"] = dict(sorted(self.dropped.items()))
        if self.autodoc:
            out["autodoc"] = list(self.autodoc)
        if self.unknown_directives:
            out["unknown_directives"] = dict(sorted(self.unknown_directives.items()))
        if self.unknown_roles:
            out["unknown_roles"] = dict(sorted(self.unknown_roles.items()))
        if self.includes:
            out["includes"] = list(self.includes)
        if self.includes_refused:
            out["includes_refused"] = list(self.includes_refused)
        if self.unresolved_substitutions:
            out["unresolved_substitutions"] = dict(sorted(
                self.unresolved_substitutions.items()))
        return out


LOST_HEADING = ("Possible title underline, too short for the title",
                "Possible incomplete section title")
"""docutils INFO messages (level 1) that mean a heading was read as ordinary text (an
underline or overline under four characters and shorter than the title): reported like
errors, since the section and its text would silently move under the previous heading."""

TOLERATED = ("Undefined substitution referenced", "Unknown target name",
             "Duplicate target name, cannot be used as a unique reference",
             "Anonymous hyperlink mismatch", "Indirect hyperlink target",
             "Too many autonumbered footnote references", "Too many symbol footnote references")
"""docutils errors this reader renders on purpose, the page text intact: a substitution
defined in ``conf.py`` (dropped and reported), a reference whose target is defined in another
file or by Sphinx (its text shown), footnote numbering; not refusals."""

LEVEL_NAMES = {1: "INFO", 2: "WARNING", 3: "ERROR", 4: "SEVERE"}


def note_message(report: MarkupReport, level: int, message: str, line: int | None,
                 source: str | None, where: str) -> None:
    """Record one parser message in ``report.errors`` when it loses or moves text: level ≥ 3
    (ERROR, SEVERE) other than :data:`TOLERATED`, or a :data:`LOST_HEADING` message.
    ``line`` is 1-based in ``source`` (the file, or an included file), ``where`` the file
    being read."""
    message = " ".join(message.split())
    if level < 3 and not message.startswith(LOST_HEADING):
        return
    if level >= 3 and message.startswith(TOLERATED):
        return
    at = f"line {line}" if line else "line unknown"
    if source and where and Path(source) != Path(where) and not source.startswith("<"):
        at += f" of included {source}"
    label = LEVEL_NAMES.get(level, str(level))
    if level < 3:
        label += " (a heading read as ordinary text)"
    report.errors.append(f"{at}: {label}: {message}")


def refuse_errors(report: MarkupReport, where: str, kind: str) -> None:
    """Raise :class:`ByoInputError` naming every error of ``report.errors`` (file, line,
    message) when there is any: a section title the parser could not read, a heading where
    none may stand (inside a note), a directive or table it rejected. The page such markup
    builds has headings missing and text under the wrong section, so the file is never
    scored as read (skipped and listed with ``skip_bad_files``)."""
    if not report.errors:
        return
    shown = "; ".join(report.errors[:5]) + (
        f"; and {len(report.errors) - 5} more" if len(report.errors) > 5 else "")
    raise ByoInputError(
        where, f"the {kind} parser reports {len(report.errors)} error(s) that lose or move "
        f"text (headings missing, text under the wrong section): {shown}; fix the markup at "
        "these lines, or set skip_bad_files: true to leave the file "
        "out")


def resolve_include(
    name: str, current: str, roots: Sequence[str], report: MarkupReport
) -> Path | None:
    """The file an ``include`` (or ``literalinclude``) names, when it lies inside one of the
    corpus folders ``roots``; else ``None``, and the refusal is recorded in ``report``.
    A path starting with ``/`` is read from the corpus folder (Sphinx's source folder)."""
    name = name.strip()
    base = Path(current).parent
    candidates = []
    if name.startswith("/"):
        candidates = [Path(r) / name.lstrip("/") for r in roots]
    else:
        candidates = [base / name]
    for cand in candidates:
        real = cand.resolve()
        inside = any(real == Path(r).resolve() or Path(r).resolve() in real.parents
                     for r in roots)
        if not inside:
            report.includes_refused.append(f"{name} (outside the corpus folder)")
            return None
        if real.is_file():
            report.includes.append(name)
            return real
    report.includes_refused.append(f"{name} (no such file)")
    return None


_SNIPPET_REF = re.compile(r"(?<![\w\]\\!])\[([^\[\]]+)\]\[[^\[\]]*\]")
_SNIPPET_SHORTCUT = re.compile(r"(?<![\w\]\\!])\[([^\[\]^][^\[\]]*)\](?![\[(:])")
_SNIPPET_FOOTNOTE = re.compile(r"\[\^[^\]\s]+\]")
_CUT_ROLE = re.compile(r"(?::[A-Za-z][\w:+.-]*:|\{[A-Za-z][\w:+.-]*\})`([^`]*)$")


def snippet_source(text: str) -> str:
    """An evidence snippet cut out of a source file, made whole before it is rendered: its
    shared indentation removed, reference links whose definitions lie outside it
    (``[text][label]``, ``[text]``) and footnote marks (``[^1]``) read as the page shows them,
    and a role cut off at its end (``:ref:`Archi``) reduced to its text."""
    text = dedent(text.strip("\n"))
    if "[" in text:
        text = _SNIPPET_FOOTNOTE.sub("", text)
        text = _SNIPPET_REF.sub(r"\1", text)
        text = _SNIPPET_SHORTCUT.sub(r"\1", text)
    return _CUT_ROLE.sub(r"\1", text)


def dedent(text: str) -> str:
    """``text`` with the indentation its non-blank lines share removed."""
    lines = text.split("\n")
    widths = [len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()]
    cut = min(widths) if widths else 0
    return "\n".join(ln[cut:] for ln in lines)


def slice_included(text: str, opts: dict[str, str]) -> str:
    """An included file's text cut by ``start-after`` / ``end-before`` / ``start-line`` /
    ``end-line`` (as docutils and MyST read them)."""
    if opts.get("start-line", "").strip().lstrip("-").isdigit() or opts.get(
            "end-line", "").strip().lstrip("-").isdigit():
        lines = text.split("\n")
        a = int(opts["start-line"]) if opts.get("start-line", "").strip() else 0
        b = int(opts["end-line"]) if opts.get("end-line", "").strip() else len(lines)
        text = "\n".join(lines[a:b])
    after, before = opts.get("start-after"), opts.get("end-before")
    if after and after in text:
        text = text.split(after, 1)[1]
    if before and before in text:
        text = text.split(before, 1)[0]
    return text


# ---------------------------------------------------------------------------------- events


@dataclass(frozen=True)
class Block:
    """One event of a reader: a heading (``level`` ≥ 1, ``text`` its title) or a paragraph
    (``level`` 0; ``code`` for a code block)."""

    text: str
    level: int = 0
    code: bool = False
    literals: tuple[str, ...] = ()
    """The inline literals (``code``) of a paragraph's text, as they read in it."""


def assemble(
    blocks: Sequence[Block],
    file: DocumentFile,
    *,
    title: str | None,
    report: MarkupReport,
    topic: str | None = None,
    kind: str = "MyST",
    decide_title: bool = True,
) -> FlatDocument:
    """A :class:`FlatDocument` from reader events.

    With ``decide_title``, the first level-1 heading is the title, as Sphinx names the built
    page by its first section title even when a note or a paragraph precedes it; when it is
    the only level-1 heading it is no section (every level shifts up by one, and the text
    before and right after it is the lead). Without a level-1 heading the title is the file
    stem ``default_title``. A given ``title`` (front matter) wins. A file with no heading at
    all (title heading included) is bad input.
    """
    headings = [b for b in blocks if b.level]
    shift = 0
    skip: int | None = None  # the index of the title heading when it is no section
    decided = file.default_title
    tops = [k for k, b in enumerate(blocks) if b.level == 1]
    if decide_title and tops:
        decided = " ".join(blocks[tops[0]].text.split()) or file.default_title
        if len(tops) == 1:
            shift, skip = 1, tops[0]
    if not headings and title is None:
        raise ByoInputError(
            file.where, f"no heading: a {kind} document needs a title or section headings to have "
            "a gold structure; add headings, or set skip_bad_files: true to leave the file out")
    builder = DocumentBuilder(file.doc_id, title if title is not None else decided)
    stack = HeadingStack(file.heading_separator)
    for k, b in enumerate(blocks):
        if b.level:
            if k == skip:
                continue
            stack.push(max(b.level - shift, 1), b.text)
            continue
        if b.code and file.code_blocks != "keep":
            continue
        text = b.text if b.code else " ".join(b.text.split())
        idx = builder.add_paragraph(text, stack.path or (file.lead_heading,))
        if idx is not None and b.code:
            report.code_paragraphs.append(idx)
        elif idx is not None and b.literals:
            report.inline_literals[idx] = report.inline_literals.get(idx, ()) + b.literals
    return builder.build(topic=topic, source=file.where, markup=report.as_dict(),
                         code_paragraphs=tuple(report.code_paragraphs),
                         inline_literals=dict(report.inline_literals))
