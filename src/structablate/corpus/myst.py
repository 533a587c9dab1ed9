"""MyST Markdown (the Markdown of Sphinx documentation) to flat documents.

Read under ``type: markdown`` when a corpus uses MyST (:func:`looks_like_myst`; the corpus key
``dialect: myst`` forces it, ``dialect: commonmark`` turns it off). Parsed with the parser stack
MyST itself uses: markdown-it-py with mdit-py-plugins' ``colon_fence``, ``myst_role``,
``myst_blocks`` (targets, ``%`` comments, ``+++`` breaks), ``field_list``, ``substitution``,
``dollarmath``, ``deflist``, ``footnote`` and ``attrs_block``. The rules, beside CommonMark's
(:mod:`~structablate.corpus.markdown`):

* **Directives** (```` ```{name} ```` and ``:::{name}`` fences) render as the built page shows
  them, by the categories of :mod:`~structablate.corpus.render` (admonitions with their title,
  code, tables as rows, figures as captions, includes inside the corpus, ``eval-rst`` through
  :mod:`~structablate.corpus.rst`, navigation and autodoc dropped and counted, unknown ones
  kept and reported). Their options (``:key: value`` lines, a value going on over indented
  lines or as a ``>`` / ``|`` block, or a ``---`` YAML block) go. A box's title renders its
  roles (an ``{octicon}`` icon shows nothing); ``only`` keeps its headings as sections.
* **Roles** (``{name}`text```) render as their text (:func:`~structablate.corpus.render.role_text`);
  ``{doc}`` as the title of the page it names. Intersphinx links (``<inv:python#os.path>``,
  ``[](inv:…)``) show their text, or the target's name.
* ``eval-rst`` bodies (and included ``.rst`` files) whose docutils errors lose or move text
  refuse the file, naming the line in it (:mod:`~structablate.corpus.rst`).
* **Removed**: targets ``(label)=``, ``%`` comments, ``+++`` block breaks, field lists before
  the first other block (``:orphan:``, ``:tocdepth:``), attribute blocks.
* **Substitutions** ``{{ name }}`` take their value from the front matter's ``substitutions``
  (or ``myst: substitutions``), rendered as Markdown; one defined nowhere in the file (in
  ``conf.py``) is dropped and reported.
* **Title**: the first block after targets, comments and front matter, when it is a level-1
  heading (it is not a section when it is the only level-1 heading); else the front matter
  ``title``, else the file stem. A front matter ``title`` always wins.
* **Headings inside directives** (examples, tabs, admonitions) are paragraphs, not sections.
* Field lists after the first block render as ``name: body``; display math (``$$…$$``,
  ``{math}``) as its LaTeX source.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import re
import urllib.parse
from collections.abc import Iterator, Sequence
from pathlib import Path

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.attrs import attrs_block_plugin
from mdit_py_plugins.colon_fence import colon_fence_plugin
from mdit_py_plugins.deflist import deflist_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.field_list import fieldlist_plugin
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.myst_blocks import myst_block_plugin
from mdit_py_plugins.myst_role import myst_role_plugin
from mdit_py_plugins.substitution import substitution_plugin

from structablate.corpus import markdown
from structablate.corpus.files import (
    ByoInputError,
    DocumentFile,
    InputUnit,
    corpus_roots,
    file_units,
    list_files,
    read_text,
)
from structablate.corpus.flatten import FlatDocument
from structablate.corpus.markdown import inline_text, split_front_matter
from structablate.corpus.render import (
    KNOWN_ROLES,
    LITERAL_ROLES,
    Block,
    MarkupReport,
    admonition_title,
    assemble,
    dedent,
    directive_kind,
    doc_role_text,
    refuse_errors,
    register_title_reader,
    resolve_include,
    role_text,
    slice_included,
    snippet_source,
    version_text,
)
from structablate.corpus.rst import rst_blocks
from structablate.settings import UserCorpus

_DIRECTIVE_FENCE = re.compile(r"^ {0,3}(?:`{3,}|~{3,}|:{3,})[ \t]*\{[A-Za-z][\w:.+-]*\}",
                              re.M)
_TARGET_LINE = re.compile(r"^ {0,3}\([\w.:-]+\)=[ \t]*$", re.M)
_ROLE = re.compile(r"\{([a-z][\w:+-]*)\}`")
_OPTION = re.compile(r"^:([\w-]+):(?:[ \t]+(.*))?$")
_BLOCK_SCALAR = re.compile(r"^([|>])[+-]?[0-9]?[+-]?$")
_MAX_INCLUDE_DEPTH = 8


def looks_like_myst(text: str) -> bool:
    """Whether a Markdown file uses MyST: a directive fence (```` ```{note} ````,
    ``:::{note}``), a target line ``(label)=``, or a role Sphinx knows (``{ref}`x```)."""
    if _DIRECTIVE_FENCE.search(text) or _TARGET_LINE.search(text):
        return True
    return any(m.group(1) in KNOWN_ROLES for m in _ROLE.finditer(text))


def parser() -> MarkdownIt:
    """markdown-it-py with the MyST plugins (see the module docstring)."""
    md = (MarkdownIt("commonmark", {"html": True})
          .enable(["table", "strikethrough"])
          .use(colon_fence_plugin)
          .use(myst_role_plugin)
          .use(myst_block_plugin)
          .use(fieldlist_plugin)
          .use(substitution_plugin)
          .use(dollarmath_plugin, allow_digits=False)
          .use(deflist_plugin)
          .use(footnote_plugin)
          .use(attrs_block_plugin))
    md.disable(["footnote_tail", "text_join"])
    return md


_MD = parser()


def split_options(body: str) -> tuple[dict[str, str], str]:
    """A directive's options (``:key: value`` lines, or a ``---`` YAML block, at the top of its
    body) and the rest of the body."""
    lines = body.split("\n")
    opts: dict[str, str] = {}
    if lines and lines[0].strip() == "---":
        for k in range(1, len(lines)):
            if lines[k].strip() == "---":
                try:
                    found = yaml.safe_load("\n".join(lines[1:k])) or {}
                except yaml.YAMLError:
                    found = {}
                if isinstance(found, dict):
                    opts = {str(a): "" if b is None else str(b) for a, b in found.items()}
                return opts, "\n".join(lines[k + 1:])
        return opts, body
    k = 0
    while k < len(lines):
        m = _OPTION.match(lines[k].strip()) if lines[k].strip() else None
        if not m:
            break
        value = (m.group(2) or "").strip()
        k += 1
        # a value going on over indented lines (YAML: a plain scalar, or a block scalar
        # after ``>`` folded or ``|`` literal; blank lines inside one belong to it)
        more: list[str] = []
        while k < len(lines):
            if lines[k][:1] in (" ", "\t") and lines[k].strip():
                more.append(lines[k].strip())
                k += 1
                continue
            if not lines[k].strip() and _BLOCK_SCALAR.match(value):
                nxt = next((ln for ln in lines[k:] if ln.strip()), "")
                if nxt[:1] in (" ", "\t"):
                    more.append("")
                    k += 1
                    continue
            break
        if _BLOCK_SCALAR.match(value):
            value = ("\n" if value[0] == "|" else " ").join(more).strip()
        elif more:
            value = " ".join([value] + more).strip()
        opts[m.group(1)] = value
    return opts, "\n".join(lines[k:])


class MystReader:
    """Turns MyST source into :class:`~structablate.corpus.render.Block` events."""

    def __init__(self, where: str, roots: Sequence[str], report: MarkupReport,
                 subs: dict[str, str]):
        self.where = where
        self.roots = tuple(roots)
        self.report = report
        self.subs = subs
        self._active: list[str] = [where]
        self._literals: list[str] = []  # inline literals read since the last block

    def _take(self) -> tuple[str, ...]:
        out, self._literals = tuple(self._literals), []
        return out

    # ----------------------------------------------------------------------------- inline
    def _extra(self, t: Token) -> str | None:
        if t.type == "myst_role":
            name = t.meta.get("name", "")
            low = name.lower()
            if low not in KNOWN_ROLES:
                self.report.unknown_roles[name] += 1
            if low in ("doc", "std:doc"):
                return doc_role_text(t.content, self._active[-1], self.roots)
            shown = role_text(name, t.content)
            if low in LITERAL_ROLES:
                self._literals.append(shown)
            return shown
        if t.type in ("math_inline", "math_inline_double"):
            return t.content
        if t.type == "substitution_inline":
            return self._substitute(t.content)
        return None

    def _substitute(self, expr: str) -> str:
        name = expr.split("|", 1)[0].strip()
        if name in self.subs:
            tokens = _MD.parseInline(str(self.subs[name]))
            return " ".join(self.inline(tok) for tok in tokens)
        self.report.unresolved_substitutions[name] += 1
        return ""

    def inline(self, t: Token) -> str:
        return inline_text(_inventory_links(t.children), self._extra, self._literals)

    # ----------------------------------------------------------------------------- blocks
    def read(self, text: str, nested: bool, top: bool = False, line0: int = 0) -> list[Block]:
        """Events of MyST ``text``; inside a directive (``nested``) headings are paragraphs;
        at the ``top`` of a file, field lists before the first block are dropped. ``line0``:
        the lines of the file before ``text`` (for the line numbers of errors)."""
        tokens = _MD.parse(text)
        out: list[Block] = []
        lists = markdown.ListItems()
        row: list[str] | None = None
        field_name: str | None = None
        seen_block = not top
        i = 0
        while i < len(tokens):
            t = tokens[i]
            typ = t.type
            if t.level == 0 and typ not in ("myst_target", "myst_line_comment",
                                            "myst_block_break", "field_list_open",
                                            "field_list_close") and not typ.endswith(
                    "_close") and not (typ == "heading_open" and t.tag == "h1"):
                seen_block = True
            if typ == "field_list_open" and not seen_block:
                depth = 0  # a top field list (:orphan:, :tocdepth:): skipped whole
                while i < len(tokens):
                    depth += tokens[i].nesting
                    i += 1
                    if depth == 0:
                        break
                continue
            if typ == "heading_open":
                title = self.inline(tokens[i + 1])
                if nested:
                    out.append(Block(title, literals=self._take()))
                else:
                    self._take()
                    out.append(Block(title, level=int(t.tag[1])))
                i += 3
                continue
            if lists.step(t):
                pass
            elif typ == "fieldlist_name_open":
                field_name = self.inline(tokens[i + 1])
                i += 3
                continue
            elif typ == "tr_open":
                row = []
            elif typ == "tr_close":
                if row is not None and any(c.strip() for c in row):
                    out.append(Block(" | ".join(" ".join(c.split()) for c in row),
                                     literals=self._take()))
                self._take()
                row = None
            elif typ == "inline":
                body = self.inline(t)
                if row is not None:
                    row.append(body)
                else:
                    body = lists.take(body)
                    if field_name is not None:
                        body = f"{field_name}: {body.strip()}"
                        field_name = None
                    out.append(Block(body, literals=self._take()))
            elif typ in ("fence", "colon_fence"):
                out.extend(self.fence(t, nested, line0 + (t.map[0] if t.map else 0)))
            elif typ == "code_block":
                out.append(Block(t.content, code=True))
            elif typ in ("math_block", "math_block_label", "amsmath"):
                out.append(Block(t.content))
            elif typ == "substitution_block":
                name = t.content.split("|", 1)[0].strip()
                if name in self.subs:
                    out.extend(self.read(str(self.subs[name]), nested=True))
                else:
                    self.report.unresolved_substitutions[name] += 1
            elif typ == "fieldlist_body_close" and field_name is not None:
                out.append(Block(f"{field_name}:"))  # a field with no body
                field_name = None
            # html_block, hr, myst_target, myst_line_comment, myst_block_break,
            # paragraph/blockquote/table/deflist open-close: no text of their own
            i += 1
        return out

    def fence(self, t: Token, nested: bool, line0: int = 0) -> list[Block]:
        """A fenced block whose opening line is line ``line0 + 1`` of the file."""
        info = t.info.strip()
        m = re.match(r"^\{([^}\s]+)\}[ \t]*(.*)$", info, re.S)
        if not m:
            if t.type == "colon_fence":  # ::: without {name}: shown as a literal block
                return [Block(t.content, code=True)]
            return [Block(t.content, code=True)]
        return self.directive(m.group(1), m.group(2).strip(), t.content, nested, line0 + 1)

    def directive(self, name: str, arg: str, body: str, nested: bool,
                  line0: int = 0) -> list[Block]:
        """A directive's blocks; its body starts after line ``line0`` of the file."""
        kind = directive_kind(name)
        if kind == "code":
            return self._code(name, arg, body)
        lines_before = body.count("\n")
        opts, body = split_options(body)
        line0 += lines_before - body.count("\n")  # the option lines
        if kind == "admonition":
            title, first = admonition_title(name, arg)
            inner = self.read((first + "\n" + body) if first else body, nested=True,
                              line0=line0 - 1 if first else line0)
            shown = self._inline_str(title) if title else ""  # {octicon} icons: no text
            return ([Block(shown, literals=self._take())] if shown.strip() else []) + inner
        if kind == "version":
            label, rest = version_text(name, arg)
            inner = self.read((rest + "\n\n" + body) if rest else body, nested=True)
            if inner and not inner[0].level and not inner[0].code:
                return [Block(f"{label}: {inner[0].text}")] + inner[1:]
            return [Block(f"{label}.")] + inner
        if name.lower() == "only":  # Sphinx: sections allowed, joining the page's tree
            return self.read(body, nested=nested, line0=line0)
        if kind == "container":
            return ([Block(arg)] if arg and name.lower() == "centered" else []) + (
                self._glossary(body) if name.lower() == "glossary"
                else self.read(body, nested=True, line0=line0))
        if kind == "object":
            return ([Block(arg)] if arg else []) + self.read(body, nested=True, line0=line0)
        if kind == "table":
            return self._table(name, arg, opts, body)
        if kind == "figure":
            return [] if name.lower() == "image" else self.read(body, nested=True,
                                                                  line0=line0)
        if kind == "math":
            return [Block(body)]
        if kind == "include":
            return self._include(arg, opts, nested)
        if kind == "eval-rst":
            return rst_blocks(body, where=self.where, roots=self.roots, report=self.report,
                              nested=True, first_line=line0 + 1)
        if kind == "autodoc":
            self.report.autodoc.append(f"{name} {arg}".strip())
            return []
        if kind == "dropped":
            self.report.dropped[name] += 1
            return []
        self.report.unknown_directives[name] += 1
        return self.read(body, nested=True, line0=line0)

    def _code(self, name: str, arg: str, body: str) -> list[Block]:
        opts, code = split_options(body)
        if name.lower() == "literalinclude":
            path = resolve_include(arg, self.where, self.roots, self.report)
            if path is None:
                return []
            code = slice_included(read_text(path), opts)
        return [Block(code, code=True)]

    def _glossary(self, body: str) -> list[Block]:
        out: list[Block] = []
        definition: list[str] = []

        def flush() -> None:
            if definition:
                out.extend(self.read(dedent("\n".join(definition)), nested=True))
                definition.clear()

        for line in body.split("\n"):
            if line.strip() and not line[:1].isspace():
                flush()
                out.append(Block(self._inline_str(line), literals=self._take()))
            else:
                definition.append(line)
        flush()
        return out

    def _inline_str(self, text: str) -> str:
        return " ".join(self.inline(tok) for tok in _MD.parseInline(text))

    def _table(self, name: str, arg: str, opts: dict[str, str], body: str) -> list[Block]:
        out = [Block(self._inline_str(arg), literals=self._take())] if arg else []
        name = name.lower()
        if name == "csv-table":
            rows: list[list[str]] = []
            delim = opts.get("delim", ",")
            delim = {"tab": "\t", "space": " "}.get(delim, delim[:1] or ",")
            if opts.get("header"):
                rows.extend(csv.reader(io.StringIO(opts["header"]), skipinitialspace=True))
            rows.extend(csv.reader(io.StringIO(body.strip("\n")), delimiter=delim,
                                   skipinitialspace=True))
            for r in rows:
                cells = [self._inline_str(c) for c in r]
                if any(c.strip() for c in cells):
                    out.append(Block(" | ".join(" ".join(c.split()) for c in cells),
                                     literals=self._take()))
            return out
        if name == "list-table":
            tokens = _MD.parse(body)
            row: list[str] | None = None
            cell: list[str] | None = None
            for t in tokens:
                if t.type == "list_item_open" and t.level == 1:
                    row = []
                elif t.type == "list_item_open" and t.level == 3 and row is not None:
                    cell = []
                elif t.type == "list_item_close" and t.level == 3 and row is not None:
                    row.append(" ".join(cell or []))
                    cell = None
                elif t.type == "list_item_close" and t.level == 1:
                    if row and any(c.strip() for c in row):
                        out.append(Block(" | ".join(" ".join(c.split()) for c in row),
                                         literals=self._take()))
                    row = None
                elif t.type in ("inline",) and cell is not None:
                    cell.append(self.inline(t))
                elif t.type in ("fence", "code_block") and cell is not None:
                    cell.append(t.content)
            return out
        return out + self.read(body, nested=True)

    def _include(self, arg: str, opts: dict[str, str], nested: bool) -> list[Block]:
        path = resolve_include(arg, self.where, self.roots, self.report)
        if path is None:
            return []
        if str(path) in self._active or len(self._active) > _MAX_INCLUDE_DEPTH:
            self.report.includes_refused.append(f"{arg} (includes itself)")
            return []
        text = slice_included(read_text(path), opts)
        if "literal" in opts or "code" in opts:
            return [Block(text, code=True)]
        self._active.append(str(path))
        try:
            if str(path).lower().endswith(".rst"):
                blocks = rst_blocks(text, where=str(path), roots=self.roots,
                                    report=self.report, nested=nested)
                # its errors' lines are the included file's (note_message names it then)
            else:
                _, text = split_front_matter(text, str(path))
                blocks = self.read(text, nested=nested)
        finally:
            self._active.pop()
        offset = int(opts.get("heading-offset", "0") or 0) if opts.get(
            "heading-offset", "0").strip().isdigit() else 0
        if offset:
            blocks = [Block(b.text, b.level + offset, b.code) if b.level else b for b in blocks]
        return blocks


def _inventory_links(children: list[Token] | None) -> list[Token] | None:
    """Inline tokens with each intersphinx link (``<inv:python#os.path>``, ``[](inv:…)``)
    showing what MyST shows: its text, or the target's name when it has none (not the raw
    ``inv:`` target)."""
    if not children or not any(t.type == "link_open" and str(t.attrGet("href") or "")
                               .startswith("inv:") for t in children):
        return children
    out: list[Token] = []
    k = 0
    while k < len(children):
        t = children[k]
        href = str(t.attrGet("href") or "") if t.type == "link_open" else ""
        if not href.startswith("inv:"):
            out.append(t)
            k += 1
            continue
        j = k + 1
        while j < len(children) and children[j].type != "link_close":
            j += 1
        inner = children[k + 1:j]
        if t.markup == "autolink" or not "".join(c.content for c in inner).strip():
            target = urllib.parse.unquote(href[len("inv:"):])
            name = target.split("#", 1)[1] if "#" in target else target.rsplit(":", 1)[-1]
            inner = [Token("text", "", 0, content=name)]
        out += [t, *inner, *children[j:j + 1]]
        k = j + 1
    return out


def parse_myst(text: str, file: DocumentFile, *, roots: Sequence[str] = ()) -> FlatDocument:
    """Flatten one MyST document (see the module docstring). ``roots`` are the corpus folders
    an ``include`` may read from (none: the file's own folder)."""
    where = file.where
    meta, text = split_front_matter(text, where)
    for key in ("title", "id", "topic"):
        if key in meta and not isinstance(meta[key], str | int | float):
            raise ByoInputError(f"{where}", f"front matter field {key!r} must be a string")
    subs = meta.get("substitutions")
    if subs is None and isinstance(meta.get("myst"), dict):
        subs = meta["myst"].get("substitutions")
    if subs is not None and not isinstance(subs, dict):
        raise ByoInputError(where, "front matter field 'substitutions' must be a mapping")
    report = MarkupReport()
    reader = MystReader(where, roots or (str(Path(where).parent),), report,
                        {str(k): v for k, v in (subs or {}).items()})
    blocks = reader.read(text, nested=False, top=True)
    refuse_errors(report, where, "reStructuredText (eval-rst, included .rst)")
    title = None if meta.get("title") is None else " ".join(str(meta["title"]).split())
    if not any(b.level for b in blocks):
        raise ByoInputError(
            where, "no heading: a MyST document needs a title ('# …' as its first block) or "
            "section headings to have a gold structure; add headings, or set "
            "skip_bad_files: true to leave the file out")
    if meta.get("id") is not None:
        file = dataclasses.replace(file, doc_id=str(meta["id"]).strip())
        if not file.doc_id:
            raise ByoInputError(where, "front matter field 'id' is empty")
    topic = str(meta["topic"]) if meta.get("topic") is not None else None
    return assemble(blocks, file, title=title, report=report, topic=topic, kind="MyST")


def render_snippet(text: str, *, where: str = "<snippet>", roots: Sequence[str] = ()) -> str:
    """An evidence snippet copied from MyST source, as the rendered page shows it: roles as
    their text, directives by the rules above, indentation and list markers gone. ``where``
    is the file it was copied from and ``roots`` the corpus folders (for ``{doc}`` titles)."""
    reader = MystReader(where, roots, MarkupReport(), {})
    blocks = reader.read(snippet_source(text), nested=True)
    return " ".join(" ".join(b.text for b in blocks).split())


def corpus_dialect(corpus: UserCorpus) -> str:
    """``myst`` or ``commonmark``: the corpus's ``dialect`` key, or with ``auto`` (the
    default) ``myst`` when any of its files uses MyST (:func:`looks_like_myst`), so that every
    file of one documentation set is read by one set of rules."""
    if corpus.dialect != "auto":
        return corpus.dialect
    for sf in list_files(corpus.path, tuple(corpus.extensions or markdown.EXTENSIONS)):
        try:
            if looks_like_myst(read_text(sf.path)):
                return "myst"
        except ByoInputError:
            continue  # reported when the file itself is read
    return "commonmark"


def iter_units(corpus: UserCorpus, name: str) -> Iterator[InputUnit]:
    """One unit per Markdown file of ``corpus.path``, read as MyST or as CommonMark with the
    documentation-site dialects (:mod:`~structablate.corpus.markdown`), by
    :func:`corpus_dialect`: the ``markdown`` corpus type's adapter."""
    if corpus_dialect(corpus) == "commonmark":
        return markdown.iter_units(corpus, name)
    return file_units(corpus, markdown.EXTENSIONS,
                      functools.partial(parse_myst, roots=corpus_roots(corpus)))


# a doc role naming one of this reader's pages shows its title (render.page_title)
register_title_reader(markdown.EXTENSIONS, parse_myst)
