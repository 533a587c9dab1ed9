"""Breadcrumb (heading-path) prefixes.

A prefix renders as ``[Title › Section › Subsection] `` followed by the chunk content. The
separator is a config key (the paper's text uses ``" › "``, its Appendix J config ``" > "``).
``depth`` counts heading levels *below* the document title; whether the title is the first
element is the config choice ``include_title`` (default ``True``). So depth 3 with the title
renders up to four elements: title plus three heading levels.
"""

from __future__ import annotations

from collections.abc import Sequence

DEFAULT_SEPARATOR = " › "


def breadcrumb_elements(
    title: str, path: Sequence[str], depth: int, *, include_title: bool = True
) -> list[str]:
    """The elements of a depth-``depth`` breadcrumb: optional title, then ``path[:depth]``.

    Empty or whitespace-only headings are dropped; a heading equal to its parent (or to the
    title, for the first level) is dropped so a path never stutters. ``depth <= 0`` gives [].
    """
    if depth <= 0:
        return []
    elements: list[str] = []
    if include_title and title.strip():
        elements.append(" ".join(title.split()))
    for heading in list(path)[:depth]:
        h = " ".join(str(heading).split())
        if not h or (elements and elements[-1] == h):
            continue
        elements.append(h)
    return elements


def render_breadcrumb(
    title: str,
    path: Sequence[str],
    depth: int,
    *,
    separator: str = DEFAULT_SEPARATOR,
    include_title: bool = True,
) -> str:
    """The prefix string (with its trailing space) or ``""`` when there is nothing to show."""
    elements = breadcrumb_elements(title, path, depth, include_title=include_title)
    if not elements:
        return ""
    return "[" + separator.join(elements) + "] "
