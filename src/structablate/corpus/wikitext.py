"""The one canonical normalizer from raw MediaWiki wikitext to a flat document.

:func:`normalize_wikitext` parses an article's wikitext with ``mwparserfromhell``, walks the
top-level nodes in reading order, and feeds every body paragraph, with the heading path it sits
under, to :class:`structablate.corpus.flatten.DocumentBuilder`. The builder records the offsets;
nothing here searches text for positions. The rule set (``docs/wikipedia.md`` has the long
version):

Pre-pass
    * Comments, ``<ref>`` elements and bold/italic apostrophe runs are removed before parsing
      (outside ``<nowiki>``); see :func:`prepass` for why.

Structure
    * A heading's level is its ``=`` depth minus one (``== H ==`` is level 1, ``=== H ===``
      level 2, ...; a page-level ``= H =`` is treated as level 1). The heading path is the stack
      of open headings (a heading closes every open heading of the same or deeper level), so a
      skipped level (``==`` then ``====``) gives a path of depth 2, not 3.
    * Text before the first heading goes under the configurable *lead heading*
      (default ``"Introduction"``).
    * A heading whose title (case-folded, whitespace collapsed) is in the *drop list*
      (See also, References, Notes, Further reading, External links, ...) is dropped with
      everything under it, up to the next heading of the same or a shallower level.
    * The document title is never part of the text.

Inline markup
    * Templates go through the template table of :mod:`structablate.corpus.wikitemplates`:
      text-bearing ones (units, numbers, dates, languages, transliterations, chemical
      formulas, ship names, fractions, scientific notation, quotations, ...) render to the text
      a reader sees; the rest are dropped. :class:`TemplateCounts` (``doc.meta["templates"]``)
      counts them by name as rendered, dropped by rule, or unrecognised.
    * ``<ref>`` and ``<references>`` are dropped; so are tables (``{| ... |}``), galleries,
      ``<math>`` (``<chem>`` / ``<ce>`` render their formula), block code, timelines,
      comments, ``[[File:...]]``/``[[Image:...]]`` (captions included; a space stays, so the
      sentences on either side are not glued), ``[[Category:...]]`` links and interlanguage
      links.
    * A template without a rule is reported: in ``unrecognised`` when it sits in running text
      (its text is missing), in ``unrecognised_block`` when it stands alone on its line
      (navigation boxes and sidebars, most of the time).
    * Internal links render as their label (or target, or the pipe-trick label); external links
      as their label (numbered ``[url]`` and bare URLs vanish). Bold/italic and inline HTML tags
      render as their contents; ``<br>`` as a space; HTML entities as their character, a
      no-break space as a space. Behaviour switches (``__NOTOC__``) vanish.

Blocks and paragraphs
    * Blank lines separate paragraphs; consecutive non-blank lines join with a space (as
      MediaWiki renders them). Tables, horizontal rules and block tags end a paragraph.
    * Lists (``*``, ``#``, ``:``, ``;`` lines, and HTML ``<li>``): every item is a paragraph of
      its own.
    * Inside a paragraph every whitespace run becomes one space; spaces left before
      ``. , ; : ! ?`` and inside brackets by removed markup are removed, empty brackets
      ``()`` are removed, and a paragraph with no letter or digit is dropped.

Errors
    * Markup that ``mwparserfromhell`` could not close (an unclosed template or table, a stray
      ``<ref>``) survives as literal ``{{``, ``}}``, ``[[``, ``]]``, ``{|``, ``|}`` or ``<ref``;
      the normalizer detects it and raises :class:`WikitextError` (``broken_markup``) instead of
      letting markup leak into the text. ``<nowiki>`` contents are exempt.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import mwparserfromhell
from mwparserfromhell.nodes import (
    Argument,
    Comment,
    ExternalLink,
    Heading,
    HTMLEntity,
    Tag,
    Template,
    Text,
    Wikilink,
)
from mwparserfromhell.wikicode import Wikicode

from structablate.corpus.flatten import DocumentBuilder, FlatDocument
from structablate.corpus.wikitemplates import (
    ELEMENT_SYMBOLS,
    FRACTION_JOIN,
    group_thousands,
    renderer_for,
    template_rule,
)
from structablate.errors import StructablateError
from structablate.settings import DEFAULT_DROP_SECTIONS, LEAD_HEADING
from structablate.store.typed import ReportDict, reported


class WikitextError(StructablateError, ValueError):
    """The wikitext cannot be normalized; ``code`` is a short reject reason."""

    def __init__(self, code: str, detail: str):
        self.code = code
        self.detail = detail
        super().__init__(f"{code}: {detail}")


# A private-use character marking the start of a list item in the rendered body.
_LIST = "\ue000"
# Characters of <nowiki> contents are shifted into a private-use range so that the
# broken-markup check cannot fire on them; they are shifted back afterwards.
_PROTECT = {ord(c): 0xE100 + i for i, c in enumerate("{}[]|<>'_")}
_UNPROTECT = {v: k for k, v in _PROTECT.items()}

_FILE_NAMESPACES = frozenset({"file", "image", "media"})
_INTERLANGUAGE = re.compile(r"(?:[a-z]{2,3}(?:-[a-z0-9]+){0,2}|simple)")
_BEHAVIOUR_SWITCH = re.compile(r"__[A-Z]+__")
_BROKEN = re.compile(r"\{\{|\}\}|\[\[|\]\]|^[ \t]*\{\||^[ \t]*\|\}|<\s*/?\s*ref\b", re.M | re.I)
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?])(?=\s|$|[)\]\"'])")
_SPACE_AFTER_OPEN = re.compile(r"([(\[])\s+")
_SPACE_BEFORE_CLOSE = re.compile(r"\s+([)\]])")
_EMPTY_BRACKETS = re.compile(r"\(\s*[,;:]?\s*\)|\[\s*\]")
_ALNUM = re.compile(r"\w")

# Tags dropped with their contents.
_DROP_TAGS = frozenset({
    "ref", "references", "gallery", "math", "score", "timeline", "graph",
    "mapframe", "maplink", "imagemap", "syntaxhighlight", "source", "pre", "includeonly",
    "templatedata", "templatestyles", "hiero", "inputbox", "categorytree", "indicator",
    "charinsert", "section", "style", "script", "table",
})
# Tags whose contents form their own paragraph(s).
_BLOCK_TAGS = frozenset({"blockquote", "poem", "div", "p", "center", "ul", "ol", "dl"})

_NOWIKI_SPLIT = re.compile(r"(<nowiki\s*>.*?</nowiki\s*>|<nowiki\s*/>)", re.S | re.I)
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_REF_PAIR = re.compile(r"<ref\b[^>]*(?<!/)>(?:(?!<ref\b).)*?</ref\s*>", re.S | re.I)
_REF_EMPTY = re.compile(r"<ref\b[^>]*/>", re.I)
_QUOTE_RUN = re.compile(r"'{2,}")


# Bold/italic markup becomes this private-use mark (plain text to the parser, so it cannot
# glue brackets together: ``[''[[X]]'']`` must not become ``[[[X]]]``); removed on output.
_FMT = "\ue0ff"


def _apostrophes(m: re.Match) -> str:
    n = len(m.group(0))
    return "'" + _FMT if n == 4 else "'" * (n - 5) + _FMT if n > 5 else _FMT


def prepass(wikitext: str) -> str:
    """Remove comments, ``<ref>`` elements and bold/italic apostrophe markup before parsing.

    MediaWiki tolerates an unbalanced ``''`` inside a ``<ref>`` or a link, but
    ``mwparserfromhell`` then gives up on the whole tag or link and leaves it as text. All
    three are invisible (or rendered as their contents) in the flat text anyway, so removing
    them first changes no visible text and avoids that failure. ``<nowiki>`` spans are left
    alone; an unclosed ``<ref>`` is left in place (and reported as broken markup).
    """
    parts = _NOWIKI_SPLIT.split(wikitext)
    for i in range(0, len(parts), 2):
        part = _COMMENT.sub("", parts[i])
        part = _REF_PAIR.sub("", part)
        part = _REF_EMPTY.sub("", part)
        parts[i] = _QUOTE_RUN.sub(_apostrophes, part)
    return "".join(parts)


def _template_name(tpl: Template) -> str:
    name = str(tpl.name)
    if "<!--" in name:
        name = re.sub(r"<!--.*?-->", "", name, flags=re.S)
    return " ".join(name.replace("_", " ").split()).lower()


def _canonical_title(title: str) -> str:
    """Underscores as spaces, whitespace collapsed, first letter upper-case (MediaWiki style)."""
    t = " ".join(title.replace("_", " ").split())
    return t[:1].upper() + t[1:]


def _by_count(c: Counter) -> dict[str, int]:
    """A counter most frequent first, then by name."""
    return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


def _totals(counts: TemplateCounts) -> dict[str, int]:
    return {k: sum(getattr(counts, k).values()) for k in TemplateCounts.KINDS}


@dataclass
class TemplateCounts(ReportDict):
    """Templates met while rendering, by name: ``rendered`` (a renderer of the template table
    gave their text), ``dropped`` (templates that show no article text: references,
    maintenance tags, hatnotes, boxes, layout) and ``unrecognised`` (no rule: dropped, and
    reported so a user sees what the normaliser could not render). Parser functions are
    counted under ``name:``. :meth:`as_dict` gives each by name (most frequent first, then by
    name), then ``totals``."""

    rendered: Counter = reported(default_factory=Counter, form=_by_count)
    dropped: Counter = reported(default_factory=Counter, form=_by_count)
    unrecognised: Counter = reported(default_factory=Counter, form=_by_count)
    unrecognised_block: Counter = reported(default_factory=Counter, form=_by_count,
                                           then={"totals": _totals})
    """Unrecognised templates standing alone on their line (navigation boxes, sidebars,
    hatnotes and other layout most of the time): dropped, and listed apart from
    ``unrecognised`` (templates inside running text, which are real misses)."""

    KINDS = ("rendered", "dropped", "unrecognised", "unrecognised_block")

    def update(self, other: TemplateCounts) -> None:
        for k in self.KINDS:
            getattr(self, k).update(getattr(other, k))


class _Renderer:
    """Renders mwparserfromhell nodes to plain text with block markers."""

    def __init__(self, counts: TemplateCounts | None = None):
        self.counts = counts if counts is not None else TemplateCounts()

    def render(self, code: Wikicode | None) -> str:
        if code is None:
            return ""
        return "".join(self.node(n) for n in code.nodes)

    def nodes(self, nodes: Iterable) -> str:
        """The text of a section body's top-level nodes (a template alone on its line is
        rendered with ``block=True``)."""
        seq = list(nodes)
        out = []
        for i, n in enumerate(seq):
            if isinstance(n, Template):
                out.append(self.template(n, block=_alone_on_line(seq, i)))
            else:
                out.append(self.node(n))
        return "".join(out)

    def node(self, n) -> str:
        if isinstance(n, Text):
            return n.value
        if isinstance(n, Wikilink):
            return self.wikilink(n)
        if isinstance(n, Template):
            return self.template(n)
        if isinstance(n, Tag):
            return self.tag(n)
        if isinstance(n, HTMLEntity):
            try:
                ch = n.normalize()
            except ValueError:
                return str(n)
            return " " if ch in ("\xa0", "\u2007", "\u202f") else ch
        if isinstance(n, ExternalLink):
            return self.render(n.title) if n.brackets and n.title is not None else ""
        if isinstance(n, Comment):
            return ""
        if isinstance(n, Heading):  # a heading nested in a tag: ends the paragraph only
            return "\n\n"
        if isinstance(n, Argument):
            return self.render(n.default)
        return ""

    # -- links ---------------------------------------------------------------------------
    def wikilink(self, link: Wikilink) -> str:
        raw = str(link.title).replace(_FMT, "").strip()
        colon = raw.startswith(":")
        target = raw.lstrip(":").strip()
        prefix, sep, _ = target.partition(":")
        prefix = prefix.strip().lower()
        if sep and not colon:
            if prefix in _FILE_NAMESPACES:
                return " "  # an inline image between two sentences must not glue them
            if prefix == "category":
                return ""
            if _INTERLANGUAGE.fullmatch(prefix) and link.text is None:
                return ""
        if link.text is not None:
            label = self.render(link.text)
            if label.strip():
                return label
            # pipe trick: [[Foo (bar)|]] shows "Foo", [[Help:Foo|]] shows "Foo"
            shown = target.split(":", 1)[1] if sep else target
            return re.sub(r"\s*\([^)]*\)\s*$", "", shown).split(",")[0].strip()
        return self.render(mwparserfromhell.parse(target))

    # -- templates -----------------------------------------------------------------------
    def template(self, tpl: Template, block: bool = False) -> str:
        """The text of a template; ``block``: it stands alone on its line (an unrecognised
        one is then counted in ``unrecognised_block``, and an element name such as
        ``{{Mercury}}`` is not read as a symbol: on a line of its own it is a box)."""
        name = _template_name(tpl)
        if not name:
            return ""
        if ":" in name:  # a parser function or magic word: {{formatnum:1234}}, {{#if:…}}
            magic = name.partition(":")[0]
            if magic in ("formatnum", "lc", "uc", "lcfirst", "ucfirst"):
                self.counts.rendered[magic + ":"] += 1
                value = self.render(mwparserfromhell.parse(str(tpl.name).split(":", 1)[1]))
                return group_thousands(value) if magic == "formatnum" else value.strip()
            self.counts.dropped[magic + ":"] += 1
            return ""
        render = renderer_for(name)
        if render is not None and not (block and name in ELEMENT_SYMBOLS):
            text = render(self, tpl)
            if text is not None:
                self.counts.rendered[name] += 1
                return text
            self.counts.unrecognised[name] += 1  # a renderer that could not read it
            return ""
        if template_rule(name) == "drop":
            self.counts.dropped[name] += 1
        elif block:
            self.counts.unrecognised_block[name] += 1
        else:
            self.counts.unrecognised[name] += 1
        return ""

    # -- tags ----------------------------------------------------------------------------
    def tag(self, tag: Tag) -> str:
        name = str(tag.tag).strip().lower()
        markup = tag.wiki_markup
        if markup is not None:
            if name in ("li", "dt", "dd"):
                return _LIST
            if name == "hr":
                return "\n\n"
            if name == "table":
                return "\n\n"
            return self.render(tag.contents)
        if name in _DROP_TAGS:
            return "\n\n" if name == "table" else ""
        if name == "br":
            return " "
        if name == "hr":
            return "\n\n"
        if name == "nowiki":
            return str(tag.contents or "").translate(_PROTECT)
        if name in ("li", "dt", "dd"):
            inner = " ".join(self.render(tag.contents).split("\n"))
            return "\n" + _LIST + inner + "\n"
        if name in _BLOCK_TAGS:  # block content: a template alone on its line is a block
            return "\n\n" + self.nodes(tag.contents.nodes if tag.contents else []) + "\n\n"
        return self.render(tag.contents)


def _alone_on_line(nodes: Sequence, i: int) -> bool:
    """Whether ``nodes[i]`` has only whitespace between it and the line's ends (or the ends
    of ``nodes``)."""
    before = nodes[i - 1] if i > 0 else None
    after = nodes[i + 1] if i + 1 < len(nodes) else None
    if before is not None and not (isinstance(before, Text)
                                   and before.value.rstrip(" \t").endswith("\n")):
        return False
    return after is None or (isinstance(after, Text)
                             and after.value.lstrip(" \t")[:1] in ("\n", ""))


_FRACTION_AFTER_DIGIT = re.compile(r"(?<=\d)" + FRACTION_JOIN)


def _clean_paragraph(text: str) -> str:
    text = _FRACTION_AFTER_DIGIT.sub(" ", text).replace(FRACTION_JOIN, "")
    text = text.replace(_LIST, " ").replace(_FMT, "")
    text = " ".join(text.split())
    text = _EMPTY_BRACKETS.sub("", text)
    text = _SPACE_BEFORE_PUNCT.sub(r"\1", text)
    text = _SPACE_AFTER_OPEN.sub(r"\1", text)
    text = _SPACE_BEFORE_CLOSE.sub(r"\1", text)
    text = " ".join(text.split())
    text = text.translate(_UNPROTECT)
    return text if _ALNUM.search(text) else ""


def split_paragraphs(body: str) -> list[str]:
    """Split a rendered section body into cleaned paragraphs: blank lines separate paragraphs,
    consecutive text lines join, and every list item (``*``, ``#``, ``:``, ``;`` line or
    ``<li>``) is a paragraph of its own."""
    out: list[str] = []
    current: list[str] = []
    kind: str | None = None

    def flush() -> None:
        nonlocal current, kind
        if current:
            para = _clean_paragraph(" ".join(current))
            if para:
                out.append(para)
        current = []
        kind = None

    for line in body.split("\n"):
        stripped = line.strip()
        if not stripped.replace(_LIST, "").strip():
            flush()
            continue
        if stripped.startswith(_LIST):
            flush()  # a list item starts a paragraph of its own
            line_kind = "list"
            stripped = stripped.lstrip(_LIST + " \t")
        else:
            line_kind = "text"
        if kind is not None and line_kind != kind:
            flush()
        kind = line_kind
        current.append(stripped)
    flush()
    return out


def _check_rendered(body: str, where: Sequence[str]) -> None:
    m = _BROKEN.search(body)
    if m:
        lo, hi = max(0, m.start() - 40), min(len(body), m.end() + 40)
        context = " ".join(body[lo:hi].replace(_LIST, " ").replace(_FMT, "").split())
        place = " › ".join(where) if where else "(lead)"
        raise WikitextError(
            "broken_markup",
            f"unparsed markup {m.group(0).strip()!r} in section {place!r} near {context!r} "
            "(an unclosed template, table, link or <ref>)",
        )


def heading_title(heading: Heading, renderer: _Renderer | None = None) -> str:
    """The visible text of a heading (markup rendered, whitespace collapsed)."""
    text = (renderer or _Renderer()).render(heading.title)
    text = _FRACTION_AFTER_DIGIT.sub(" ", text).replace(FRACTION_JOIN, "")
    text = text.replace(_LIST, " ").replace(_FMT, "")
    return " ".join(text.translate(_UNPROTECT).split())


def normalize_wikitext(
    doc_id: str,
    title: str,
    wikitext: str,
    *,
    lead_heading: str = LEAD_HEADING,
    drop_sections: Iterable[str] = DEFAULT_DROP_SECTIONS,
    topic: str | None = None,
    **meta,
) -> FlatDocument:
    """Normalize one article's raw wikitext to a :class:`FlatDocument`.

    Raises :class:`WikitextError` (``broken_markup``, ``empty_heading``) when the wikitext cannot
    be rendered faithfully. A document without any paragraph is returned as is (empty text, no
    sections): the caller decides (the corpus builder rejects it as ``no_content``).
    """
    if not lead_heading or not lead_heading.strip():
        raise ValueError("lead_heading must be a non-empty string")
    drop = {" ".join(s.split()).casefold() for s in drop_sections}
    code = mwparserfromhell.parse(prepass(wikitext))
    renderer = _Renderer()
    builder = DocumentBuilder(doc_id, title)

    stack: list[tuple[int, str]] = []  # open headings (level, title)
    dropping_at: int | None = None  # level of the dropped heading whose subtree we skip
    body_nodes: list = []

    def flush() -> None:
        if dropping_at is None and body_nodes:
            path = [t for _, t in stack] or [lead_heading]
            body = _BEHAVIOUR_SWITCH.sub("", renderer.nodes(body_nodes))
            _check_rendered(body, [t for _, t in stack])
            for para in split_paragraphs(body):
                builder.add_paragraph(para, path)
        body_nodes.clear()

    for node in code.nodes:
        if not isinstance(node, Heading):
            body_nodes.append(node)
            continue
        flush()
        level = max(1, node.level - 1)
        text = heading_title(node, renderer)
        if not text:
            raise WikitextError("empty_heading", f"heading {str(node).strip()!r} has no text")
        if dropping_at is not None and level > dropping_at:
            continue
        dropping_at = None
        while stack and stack[-1][0] >= level:
            stack.pop()
        if text.casefold() in drop:
            dropping_at = level
            continue
        stack.append((level, text))
    flush()
    doc = builder.build(topic=topic, **meta)
    doc.meta["templates"] = renderer.counts
    return doc


_CATEGORY_LINK = re.compile(r"\[\[\s*(:?)\s*category\s*:([^\]|\n]*)(?:\|[^\]]*)?\]\]", re.I)


def category_links(wikitext: str) -> list[str]:
    """Categories named by ``[[Category:...]]`` links (sort keys dropped), sorted and unique.

    This is the only category information an XML export carries: categories added by templates
    are missing, and there is no hidden flag (so maintenance categories are included). Links in
    comments and ``<nowiki>`` and colon links (``[[:Category:X]]``, a visible link) are ignored.
    A plain scan, not a parse: a category link cannot contain markup that changes its meaning.
    """
    parts = _NOWIKI_SPLIT.split(wikitext)
    cats: set[str] = set()
    for i in range(0, len(parts), 2):
        for colon, name in _CATEGORY_LINK.findall(_COMMENT.sub("", parts[i])):
            name = _canonical_title(name)
            if name and not colon:
                cats.add(name)
    return sorted(cats)


_REDIRECT = re.compile(r"\s*#\s*redirect\s*:?\s*\[\[", re.I)


def is_redirect(wikitext: str) -> bool:
    """Whether ``wikitext`` is a redirect page (``#REDIRECT [[Target]]``)."""
    return bool(_REDIRECT.match(wikitext))


def transcludes(wikitext: str, template: str) -> bool:
    """Whether ``wikitext`` calls ``{{template}}`` (first letter and ``_``/space insensitive)."""
    name = " ".join(template.replace("_", " ").split())
    if not name:
        return False
    first = re.escape(name[0])
    rest = "[ _]+".join(re.escape(w) for w in name[1:].split(" "))
    pattern = r"\{\{\s*(?i:template\s*:\s*)?(?i:" + first + ")" + rest + r"\s*(?:\||\}\})"
    return re.search(pattern, wikitext) is not None


def word_count(text: str) -> int:
    """Whitespace-separated tokens of ``text`` (the ``min_words`` measure)."""
    return len(text.split())


def heading_depth(doc: FlatDocument) -> int:
    """The deepest heading path of any gold section (the ``min_depth`` measure)."""
    return max((len(s.path) for s in doc.sections), default=0)
