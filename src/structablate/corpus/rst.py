"""reStructuredText adapter: ``.rst`` files to flat documents, parsed by docutils.

docutils (the reference implementation) parses the file; Sphinx's directives and roles, which
docutils alone does not know, are registered for the parse so they render what the built page
shows instead of becoming error messages (the categories of
:mod:`~structablate.corpus.render`). The doctree is then flattened by :func:`doctree_blocks`,
which MyST's ``eval-rst`` directive goes through too. Rules (``docs/byo.md`` has the table):

* **Sections** nest by adornment order within each file, as docutils decides. **Title**: a
  lone top-level section with nothing before it (comments, targets, substitution definitions
  and a top field list do not count) is the document title and its subsections are level 1,
  as docutils' ``doctitle_xform`` decides; with several top-level sections the first one's
  title is the page title (Sphinx's rule) and they all stay sections; else the file stem.
* **Paragraphs**: paragraphs, list items (an enumerated item keeps its number, ``3.``),
  definition-list terms and definitions, field lists (``name: body``; a field list before any
  text — ``:orphan:``, ``:tocdepth:`` — is dropped), option lists, line blocks (one paragraph),
  block quotes (transparent, with the attribution), footnotes where written (the reference
  marks dropped); every table row (grid, simple, ``list-table``, ``csv-table``) one paragraph,
  cells joined by `` | ``; ``::`` literal blocks, ``code-block`` and doctest blocks as code
  (``code_blocks``); admonitions with their title; figures as caption and legend; math as
  its LaTeX source.
* **Substitutions** are applied by docutils; one defined nowhere in the file (in
  ``conf.py``'s ``rst_prolog``) is dropped and reported. **Comments and targets** are dropped.
* **include** reads a file inside the corpus only (outside, or missing: reported, not read);
  ``csv-table`` with ``:file:`` or ``:url:`` likewise; ``raw`` is dropped and counted.
* autodoc directives (``automodule``, ``autoclass``, …: no source here) are dropped, counted
  and listed; navigation (``toctree``, ``contents``, ``index``) dropped and counted; an
  unknown directive keeps its body and is reported by name, an unknown role renders its text
  and is reported by name. ``only`` is read as if its body were written where it stands
  (Sphinx allows sections there). A ``doc`` role shows the title of the page it names
  (:func:`~structablate.corpus.render.doc_role_text`); icon roles show nothing.
* **Errors**: docutils system messages that lose or move text (level ≥ 3, and a heading read
  as ordinary text: :func:`~structablate.corpus.render.note_message`) refuse the file naming
  each line and message (skipped and listed with ``skip_bad_files``); reference errors whose
  text is intact (a target or substitution defined elsewhere) do not.
* Inline literals (and code roles) are listed per paragraph (``meta["inline_literals"]``)
  so the markup-residue scan leaves them out.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import docutils.core
from docutils import nodes, utils
from docutils.parsers.rst import Directive, directives, roles
from docutils.parsers.rst.directives.misc import Include
from docutils.parsers.rst.directives.tables import CSVTable
from docutils.readers.standalone import Reader as StandaloneReader
from docutils.statemachine import StringList

from structablate.corpus.files import (
    DocumentFile,
    InputUnit,
    corpus_roots,
    file_units,
    read_text,
)
from structablate.corpus.flatten import FlatDocument
from structablate.corpus.render import (
    KNOWN_ROLES,
    LITERAL_ROLES,
    LOST_HEADING,
    Block,
    MarkupReport,
    admonition_title,
    assemble,
    directive_kind,
    doc_role_text,
    note_message,
    refuse_errors,
    register_title_reader,
    resolve_include,
    role_text,
    slice_included,
    snippet_source,
    version_text,
)
from structablate.settings import UserCorpus
from structablate.user_files import USER_EXTENSIONS

EXTENSIONS = USER_EXTENSIONS["rst"]

# docutils directives this reader replaces: file access limited to the corpus, raw dropped,
# code and math with Sphinx's options, class as Sphinx's Python class description
_OVERRIDDEN = frozenset({"include", "csv-table", "raw", "contents", "target-notes",
                         "literalinclude", "code", "code-block", "sourcecode", "math",
                         "class"})
_LENIENT: dict[type, type] = {}  # a docutils directive class -> it, accepting any option


def _lenient(cls: type) -> type:
    """``cls`` accepting every option: an option Sphinx adds (``:linenos:``, ``:label:``,
    ``:collapsible:``) would make docutils reject the whole directive."""
    if cls not in _LENIENT:
        spec = _AnyOptions(cls.option_spec or {})
        spec.setdefault("class", directives.class_option)
        _LENIENT[cls] = type(cls.__name__, (cls,), {"option_spec": spec})
    return _LENIENT[cls]


class _AnyOptions(dict):
    """An option spec accepting every option (its value kept as written)."""

    def __missing__(self, key):
        return directives.unchanged


def _report(directive: Directive) -> MarkupReport:
    return directive.state.document.settings.structablate_report


def _roots(directive: Directive) -> tuple[str, ...]:
    return directive.state.document.settings.structablate_roots


def _current(directive: Directive) -> str:
    src, _ = directive.state_machine.get_source_and_line(directive.lineno)
    return src or directive.state.document.settings._source or "."


class _Sphinx(Directive):
    """A directive docutils does not know, rendered by its category (module docstring)."""

    required_arguments = 0
    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions({"class": directives.unchanged})

    def _parse(self, lines: list[str], into: nodes.Element) -> nodes.Element:
        self.state.nested_parse(StringList(lines, _current(self)), self.content_offset, into)
        return into

    def run(self):
        name = self.name
        if name.lower() == "only":
            # Sphinx parses an ``only`` body with section titles allowed, the sections
            # joining the page's tree where the directive stands: read it as if written there
            self.state_machine.insert_input(self.content, _current(self))
            return []
        kind = directive_kind(name)
        report = _report(self)
        arg = self.arguments[0] if self.arguments else ""
        content = list(self.content)
        if kind == "autodoc":
            report.autodoc.append(f"{name} {arg}".strip())
            return []
        if kind == "dropped":
            report.dropped[name] += 1
            return []
        if kind == "code":
            if name.lower() == "literalinclude":
                path = resolve_include(arg, _current(self), _roots(self), report)
                if path is None:
                    return []
                text = slice_included(read_text(path),
                                      {k: str(v) for k, v in self.options.items()})
            else:
                text = "\n".join(content)
            return [nodes.literal_block(text, text)]
        box = nodes.container()
        if kind == "admonition":
            title, first = admonition_title(name, arg)
            if title:  # the title's roles rendered ({octicon} icons show no text)
                shown, _ = self.state.inline_text(title, self.lineno)
                box += nodes.paragraph(title, "", *shown)
            return [self._parse(([first] if first else []) + content, box)]
        if kind == "version":
            label, rest = version_text(name, arg)
            self._parse(([rest, ""] if rest else []) + content, box)
            if len(box) and isinstance(box[0], nodes.paragraph):
                box[0].insert(0, nodes.Text(f"{label}: "))
            else:
                box.insert(0, nodes.paragraph(f"{label}.", f"{label}."))
            return [box]
        if kind == "object":
            for line in arg.split("\n"):
                if line.strip():
                    box += nodes.paragraph(line.strip(), line.strip())
            return [self._parse(content, box)]
        if kind == "math":
            text = "\n".join([arg] + content).strip()
            return [nodes.math_block(text, text)]
        if kind == "unknown":
            report.unknown_directives[name] += 1
        return [self._parse(content, box)]


class _Include(Include):
    """docutils' ``include``, for files inside the corpus only."""

    def run(self):
        path = resolve_include(self.arguments[0], _current(self), _roots(self), _report(self))
        if path is None:
            return []
        self.arguments[0] = str(path)
        return super().run()


class _CsvTable(CSVTable):
    """docutils' ``csv-table``; a ``:file:`` outside the corpus, or a ``:url:``, is refused."""

    def run(self):
        report = _report(self)
        if "url" in self.options:
            report.includes_refused.append(f"{self.options['url']} (a URL)")
            return []
        if "file" in self.options:
            path = resolve_include(self.options["file"], _current(self), _roots(self), report)
            if path is None:
                return []
            self.options["file"] = str(path)
        return super().run()


class _Dropped(Directive):
    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions({"class": directives.unchanged})

    def run(self):
        _report(self).dropped[self.name] += 1
        return []


def _generic_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    settings = inliner.document.settings
    report = settings.structablate_report
    low = name.lower()
    if low not in KNOWN_ROLES:
        report.unknown_roles[name] += 1
    raw = utils.unescape(text, restore_backslashes=True)
    if low in ("doc", "std:doc"):
        src, _ = inliner.reporter.get_source_and_line(lineno)
        shown = doc_role_text(raw, src or settings._source or ".", settings.structablate_roots)
    else:
        shown = role_text(name, raw)
    if low in LITERAL_ROLES:  # shown as code: left out of the markup-residue scan
        return [nodes.literal(shown, shown)], []
    return [nodes.Text(shown)], []


@contextlib.contextmanager
def _sphinx_registry() -> Iterator[None]:
    """docutils' directive and role look-ups, with Sphinx's (and this reader's) names added
    for the duration of a parse; restored after."""
    orig_directive, orig_role = directives.directive, roles.role

    def directive(name, language_module, document):
        low = name.lower()
        if low == "include":
            return _Include, []
        if low == "csv-table":
            return _CsvTable, []
        if low in _OVERRIDDEN:
            return (_Dropped if directive_kind(low) == "dropped" else _Sphinx), []
        cls, messages = orig_directive(name, language_module, document)
        if cls is not None:
            return _lenient(cls), messages
        return _Sphinx, []

    def role(name, language_module, lineno, reporter):
        fn, messages = orig_role(name, language_module, lineno, reporter)
        if fn is not None and name.lower() not in ("pep", "rfc"):
            return fn, messages
        return _generic_role, []

    directives.directive, roles.role = directive, role
    try:
        yield
    finally:
        directives.directive, roles.role = orig_directive, orig_role


class _Reader(StandaloneReader):
    """docutils' standalone reader, whose document hands every system message to the
    parse's report (:func:`~structablate.corpus.render.note_message`)."""

    def new_document(self) -> nodes.document:
        document = super().new_document()
        settings = document.settings
        lines = str(self.input or "").split("\n")

        def observe(msg: nodes.system_message) -> None:
            first = msg.children[0].astext() if msg.children else msg.astext()
            line, source = msg.get("line"), msg.get("source")
            if (first.startswith(LOST_HEADING) and isinstance(line, int)
                    and source == settings._source and 0 < line <= len(lines)
                    and set(lines[line - 1].strip()) == {":"}):
                return  # ``text\n::``: a paragraph ending in a literal-block marker
            note_message(settings.structablate_report, int(msg.get("level", 0)), first,
                         line, source, settings._source or "")

        document.reporter.attach_observer(observe)
        return document


def parse_doctree(text: str, where: str, roots: Sequence[str],
                  report: MarkupReport) -> nodes.document:
    """The docutils doctree of ``text`` (errors never halt; no system messages written: the
    ones that lose or move text are recorded in ``report.errors``)."""
    overrides = {
        "report_level": 5, "halt_level": 5, "warning_stream": io.StringIO(),
        "file_insertion_enabled": True, "raw_enabled": False, "doctitle_xform": False,
        "sectsubtitle_xform": False, "docinfo_xform": False, "syntax_highlight": "none",
        "smart_quotes": False, "input_encoding": "utf-8", "exit_status_level": 5,
        "structablate_report": report, "structablate_roots": tuple(roots),
        "_disable_config": True, "embed_stylesheet": False,
    }
    with _sphinx_registry():
        return docutils.core.publish_doctree(text, source_path=where, reader=_Reader(),
                                             settings_overrides=overrides)


# ------------------------------------------------------------------------------- flattening

_DROP = (nodes.comment, nodes.target, nodes.substitution_definition, nodes.system_message,
         nodes.raw, nodes.pending, nodes.decoration, nodes.docinfo, nodes.label,
         nodes.transition, nodes.image, nodes.meta if hasattr(nodes, "meta") else nodes.raw)
_INLINE_DROP = (nodes.footnote_reference, nodes.raw, nodes.system_message)
_ADMONITION_LABELS = {cls: cls.__name__.capitalize() for cls in (
    nodes.attention, nodes.caution, nodes.danger, nodes.error, nodes.hint, nodes.important,
    nodes.note, nodes.tip, nodes.warning)}
_SUBSTITUTION = re.compile(r"^\|[^|]+\|_{0,2}$")
_REFERENCE = re.compile(r"^`([^`<]*?)\s*(?:<[^`]*>)?`__?$|^([\w.-]+)__?$")


def _roman(n: int) -> str:
    out = ""
    for value, numeral in ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"),
                           (90, "xc"), (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"),
                           (4, "iv"), (1, "i")):
        while n >= value:
            out += numeral
            n -= value
    return out


def _enumerator(node: nodes.enumerated_list, k: int) -> str:
    n = int(node.get("start", 1)) + k
    kind = node.get("enumtype", "arabic")
    if kind == "loweralpha":
        mark = chr(ord("a") + (n - 1) % 26)
    elif kind == "upperalpha":
        mark = chr(ord("A") + (n - 1) % 26)
    elif kind == "lowerroman":
        mark = _roman(n)
    elif kind == "upperroman":
        mark = _roman(n).upper()
    else:
        mark = str(n)
    return f"{node.get('prefix', '')}{mark}{node.get('suffix', '.')}"


class _Flattener:
    def __init__(self, report: MarkupReport, nested: bool):
        self.report = report
        self.nested = nested
        self.out: list[Block] = []
        self.prefix: str | None = None
        self.seen_text = False
        self.literals: list[str] = []  # inline literals read since the last block

    def take(self) -> tuple[str, ...]:
        out, self.literals = tuple(self.literals), []
        return out

    def text(self, node: nodes.Node) -> str:
        if isinstance(node, nodes.Text):
            return str(node)
        if isinstance(node, _INLINE_DROP):
            return ""
        if isinstance(node, nodes.literal):
            shown = node.astext()
            self.literals.append(shown)
            return shown
        if isinstance(node, nodes.problematic):
            raw = (node.rawsource or node.astext()).strip()
            if _SUBSTITUTION.match(raw):
                self.report.unresolved_substitutions[raw.strip("|_")] += 1
                return ""
            ref = _REFERENCE.match(raw)  # a reference whose target is defined elsewhere
            if ref:
                return ref.group(1) or ref.group(2)
            return node.astext()
        return "".join(self.text(c) for c in node.children)

    def para(self, text: str, code: bool = False) -> None:
        literals = self.take()
        if not text.strip():
            return
        if self.prefix is not None:
            text = f"{self.prefix} {text.strip()}"
            self.prefix = None
        self.out.append(Block(text, code=code, literals=() if code else literals))
        self.seen_text = True

    def walk(self, node: nodes.Node, depth: int) -> None:
        if isinstance(node, _DROP):
            return
        if isinstance(node, nodes.section):
            title = node[0] if len(node) and isinstance(node[0], nodes.title) else None
            name = self.text(title) if title is not None else ""
            if self.nested:
                self.para(name)
            else:
                self.take()
                self.out.append(Block(name, level=depth + 1))
            for child in node.children:
                if child is not title:
                    self.walk(child, depth + 1)
            return
        if isinstance(node, (nodes.literal_block, nodes.doctest_block)):
            self.para(node.astext(), code=True)
            return
        if isinstance(node, nodes.math_block):
            self.para(node.astext())
            return
        if isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
            for k, item in enumerate(node.children):
                if isinstance(node, nodes.enumerated_list):
                    self.prefix = _enumerator(node, k)
                for child in item.children:
                    self.walk(child, depth)
                self.prefix = None
            return
        if isinstance(node, nodes.definition_list_item):
            for child in node.children:
                if isinstance(node, nodes.term) or isinstance(child, nodes.term):
                    extra = [self.text(c) for c in node.children
                             if isinstance(c, nodes.classifier)]
                    self.para(" : ".join([self.text(child)] + extra))
                elif isinstance(child, nodes.definition):
                    for sub in child.children:
                        self.walk(sub, depth)
            return
        if isinstance(node, nodes.field_list):
            if not self.seen_text and not self.nested:
                return  # a top field list (:orphan:, :tocdepth:): file metadata
            for field in node.children:
                name = self.text(field[0])
                self.prefix = f"{name}:"
                for child in field[1].children:
                    self.walk(child, depth)
                if self.prefix is not None:
                    self.para(name + ":")
                self.prefix = None
            return
        if isinstance(node, nodes.option_list_item):
            self.para(", ".join(self.text(o) for o in node[0].children))
            for child in node[1].children:
                self.walk(child, depth)
            return
        if isinstance(node, nodes.table):
            for child in node.children:
                if isinstance(child, nodes.title):
                    self.para(self.text(child))
            for row in node.findall(nodes.row):
                cells = [" ".join(self.cell(e).split()) for e in row.children]
                if any(cells):
                    self.para(" | ".join(cells))
            return
        if isinstance(node, nodes.line_block):
            self.para(" ".join(self.text(line) for line in node.findall(nodes.line)))
            return
        if isinstance(node, nodes.Admonition):
            label = _ADMONITION_LABELS.get(type(node))
            if label:
                self.para(label)
            for child in node.children:
                self.walk(child, depth)
            return
        if isinstance(node, nodes.TextElement):  # paragraph, title, caption, rubric, term …
            self.para(self.text(node))
            return
        for child in node.children:
            self.walk(child, depth)

    def cell(self, entry: nodes.Node) -> str:
        parts: list[str] = []
        for n in entry.findall(nodes.TextElement):
            if not any(isinstance(a, nodes.TextElement) for a in _ancestors(n, entry)):
                parts.append(self.text(n))
        return " ".join(parts)


def _ancestors(node: nodes.Node, stop: nodes.Node) -> Iterator[nodes.Node]:
    p = node.parent
    while p is not None and p is not stop:
        yield p
        p = p.parent


def doctree_blocks(tree: nodes.Node, report: MarkupReport, nested: bool) -> list[Block]:
    """Block events of a docutils doctree (the rules of the module docstring); ``nested``
    (inside a MyST directive) makes section titles paragraphs."""
    flat = _Flattener(report, nested)
    flat.walk(tree, 0)
    return flat.out


def rst_blocks(text: str, *, where: str, roots: Sequence[str], report: MarkupReport,
               nested: bool, first_line: int = 1) -> list[Block]:
    """Block events of reStructuredText ``text`` (MyST's ``eval-rst`` and ``include``);
    ``first_line`` is the 1-based line of ``where`` that ``text`` starts on (the line numbers
    of ``report.errors``)."""
    text = "\n" * max(first_line - 1, 0) + text  # blank lines: nothing in rst
    return doctree_blocks(parse_doctree(text, where, roots, report), report, nested)


def render_snippet(text: str, *, where: str = "<snippet>", roots: Sequence[str] = ()) -> str:
    """An evidence snippet copied from reStructuredText source, as the rendered page shows it
    (roles as their text, inline literals and emphasis unmarked, indentation gone); a snippet
    that is not whole rst (a cut-off role) is read as far as docutils reads it. ``where`` is
    the file it was copied from and ``roots`` the corpus folders (for ``:doc:`` titles)."""
    blocks = rst_blocks(snippet_source(text), where=where, roots=roots,
                        report=MarkupReport(), nested=True)
    return " ".join(" ".join(b.text for b in blocks).split())


def parse_rst(text: str, file: DocumentFile, *, roots: Sequence[str] = ()) -> FlatDocument:
    """Flatten one reStructuredText document (see the module docstring)."""
    report = MarkupReport()
    blocks = rst_blocks(text, where=file.where, roots=roots or (str(Path(file.where).parent),),
                        report=report, nested=False)
    refuse_errors(report, file.where, "reStructuredText")
    return assemble(blocks, file, title=None, report=report, kind="reStructuredText")


def iter_units(corpus: UserCorpus, name: str) -> Iterator[InputUnit]:
    """One unit per reStructuredText file of ``corpus.path``."""
    import functools

    return file_units(corpus, EXTENSIONS,
                      functools.partial(parse_rst, roots=corpus_roots(corpus)))


# a doc role naming one of this reader's pages shows its title (render.page_title)
register_title_reader(EXTENSIONS, parse_rst)
