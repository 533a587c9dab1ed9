"""The `snakemake --report` start page (resources/report/workflow.rst) in windows lower than
the page: Snakemake centres the page in a window-high flex box, so a taller page lost its top
(the title) above the scroll range. The page carries a style rule that starts a page taller
than the window at the top; this test renders the text as Snakemake does (Jinja, then
docutils' HTML body) and checks that the rule survives and selects the box of the installed
Snakemake's start page."""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import snakemake
import yaml
from conftest import REPO
from docutils.core import publish_parts


def _start_page_box_classes() -> set[str]:
    js = Path(snakemake.__file__).parent / "report/html_reporter/template/components/content.js"
    m = re.search(r'class ContentDisplay.*?className: "([^"]+)"', js.read_text(), re.S)
    assert m, f"no ContentDisplay box in {js}"
    return set(m.group(1).split())


def test_the_start_page_starts_at_the_top_when_taller_than_the_window():
    class Snakemake:
        config = yaml.safe_load((REPO / "config.yaml").read_text())

    text = (REPO / "resources/report/workflow.rst").read_text()
    body = publish_parts(jinja2.Environment().from_string(text).render(snakemake=Snakemake),
                         writer_name="html")["html_body"]
    assert body.index("does document structure help dense retrieval?") < body.index("<style>")
    css = body.split("<style>", 1)[1].split("</style>", 1)[0]
    rule = re.search(r"^\s*(div(?:\.[\w-]+)+)\s*\{([^}]*)\}", css, re.M)
    assert rule, css
    selector, decls = rule.groups()
    assert set(selector.split(".")[1:]) == _start_page_box_classes()
    assert "align-items: safe center;" in decls and "align-items: flex-start;" in decls
    assert "justify-content: safe center;" in decls
