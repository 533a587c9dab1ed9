"""The results page and `snakemake --report` of a real run (the README's corpus run,
tests/readme_run.py), read as a researcher would: in a real headless browser (Debian
``chromium``) the tables and figures render; every table carries its Markdown and LaTeX, every
figure its PNG and SVG; the Snakemake report holds only HTML and images, one category per corpus
plus Overview, and a page describing the run.

The browser tests skip, with the reason, where no Chromium is installed; their screenshots are
written under the run's folder (``browser/*.png``) and their paths printed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from readme_run import shell_env

pytestmark = pytest.mark.slow

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--hide-scrollbars"]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium on this machine (Debian: apt-get install -y chromium); the "
                "browser checks of the report need a real browser")


def browser(*args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run([chromium(), *CHROMIUM_FLAGS, *args], capture_output=True,
                          text=True, timeout=timeout)


PROBE = """<script>
window.addEventListener('load', () => {
  const out = {
    images: [...document.querySelectorAll('img')].map(i => ({src: i.getAttribute('src'),
      width: i.naturalWidth, height: i.naturalHeight})),
    tables: [...document.querySelectorAll('table')].map(t => ({id: t.id, rows: t.rows.length,
      width: Math.round(t.getBoundingClientRect().width)})),
    sources: [...document.querySelectorAll('details.source pre')].map(p => p.id),
  };
  const pre = document.createElement('pre');
  pre.id = 'structablate-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def probe(html_file: Path) -> dict:
    """What the browser rendered: every image's natural size, every table's rows and width,
    the Markdown / LaTeX sources (a copy of the page with a probe script beside it)."""
    probe_file = html_file.with_name(f".probe-{html_file.name}")
    probe_file.write_text(html_file.read_text(encoding="utf-8").replace(
        "</body>", PROBE + "</body>"), encoding="utf-8")
    proc = browser("--virtual-time-budget=15000", "--dump-dom", probe_file.as_uri())
    probe_file.unlink()
    m = re.search(r'<pre id="structablate-probe">(.*?)</pre>', proc.stdout, re.S)
    assert m, proc.stderr[-2000:]
    import html

    return json.loads(html.unescape(m.group(1)))


def screenshot(target: str, out: Path, size: str = "1300,2600") -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    proc = browser(f"--window-size={size}", f"--screenshot={out}", target)
    assert out.is_file() and out.stat().st_size > 10_000, proc.stderr[-2000:]
    print(f"\nscreenshot: {out}")
    return out


@pytest.fixture(scope="module")
def run(readme_run):
    assert readme_run.proc.returncode == 0, readme_run.output[-3000:]
    return readme_run


@pytest.fixture(scope="module")
def report_html(run) -> Path:
    """`snakemake --report` of the run, made with the README's command and config."""
    cfg = re.search(r"--configfile\s+(\S+)", run.proc.args[-1]).group(1)
    proc = subprocess.run(["snakemake", "--configfile", cfg, "--report", "report.html"],
                          cwd=run.root, env=shell_env(run.root), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return run.root / "report.html"


def report_data(path: Path) -> tuple[dict, dict, str]:
    """(results, categories, workflow description HTML) of a Snakemake report."""
    text = path.read_text(encoding="utf-8")

    def js(script_id: str, var: str):
        m = re.search(rf'<script id="{script_id}">\s*var {var} = (.*?);?\s*</script>', text,
                      re.S)
        assert m, script_id
        return json.loads(m.group(1))

    return js("results", "results"), js("categories", "categories"), \
        js("workflow-desc", "workflow_desc")


# ---------------------------------------------------------------- the results page


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables: list[str] = []
        self.sources: list[str] = []
        self.figures: list[dict] = []
        self._fig: dict | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append(a.get("id", ""))
        elif tag == "pre" and a.get("id"):
            self.sources.append(a["id"])
        elif tag == "figure":
            self._fig = {"img": None, "links": {}}
            self.figures.append(self._fig)
        elif tag == "img" and self._fig is not None:
            self._fig["img"] = a["src"]
        elif tag == "a" and self._fig is not None and "download" in a:
            self._fig["links"][Path(a["href"]).suffix] = a["href"]

    def handle_endtag(self, tag):
        if tag == "figure":
            self._fig = None


def test_every_table_has_markdown_and_latex_and_every_figure_png_and_svg(run):
    page_dir = run.root / "results" / "report"
    page = _Page()
    page.feed((page_dir / "index.html").read_text(encoding="utf-8"))
    assert len(page.tables) >= 8
    for key in page.tables:
        assert f"{key}-markdown" in page.sources and f"{key}-latex" in page.sources, key
    assert len(page.figures) == 5  # forest, funnel, bars, dose, section recall
    for fig in page.figures:
        assert set(fig["links"]) == {".png", ".svg"}, fig
        assert (page_dir / fig["links"][".png"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        svg = (page_dir / fig["links"][".svg"]).read_text(encoding="utf-8")
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    html_text = (page_dir / "index.html").read_text(encoding="utf-8")
    latex = re.search(r'<pre id="verdict-mydocs-latex">(.*?)</pre>', html_text, re.S).group(1)
    assert "\\begin{tabular}" in latex and "\\toprule" in latex and "\\bottomrule" in latex
    assert all(ord(c) < 128 for c in latex.replace("…", "")), "non-ASCII left in the LaTeX"


def test_results_page_renders_in_a_browser(run):
    page_dir = run.root / "results" / "report"
    seen = probe(page_dir / "index.html")
    assert len(seen["tables"]) >= 8
    for t in seen["tables"]:
        assert t["rows"] >= 2 and t["width"] > 100, t
    assert len(seen["images"]) == 5
    for img in seen["images"]:
        assert img["width"] > 200 and img["height"] > 100, img  # decoded, not broken
    assert len(seen["sources"]) == 2 * len(seen["tables"])
    screenshot((page_dir / "index.html").as_uri(), run.root / "browser" / "index.png")


# ---------------------------------------------------------------- snakemake --report


def test_snakemake_report_items_are_html_or_images_in_unified_categories(report_html, run):
    results, categories, desc = report_data(report_html)
    mimes = {r["mime_type"] for r in results.values()}
    assert mimes <= {"text/html", "image/png", "image/svg+xml"}, mimes
    assert not any(p.endswith((".parquet", ".json")) for p in results)
    assert set(categories) == {run.corpus, "Overview"}
    assert set(categories[run.corpus]) == {"corpus", "minilm / none"}
    assert f"results/report/{run.corpus}/verdict.html" in categories[run.corpus]["corpus"]
    for words in ("What ran", "How long", run.corpus, "TextTiling", "A0, A2, A3-d1"):
        assert words in desc, words


def test_snakemake_report_renders_in_a_browser(report_html, run, tmp_path):
    import base64

    proc = browser("--virtual-time-budget=15000", "--dump-dom", report_html.as_uri())
    dom = proc.stdout
    assert "What ran" in dom and run.corpus in dom and "Overview" in dom, proc.stderr[-2000:]
    screenshot(report_html.as_uri(), run.root / "browser" / "report.png", "1400,1800")
    # every HTML item, as the report embeds it, renders its tables
    results, _, _ = report_data(report_html)
    for path, r in results.items():
        if r["mime_type"] != "text/html":
            continue
        uri = r["data_uri"]
        assert uri.startswith("data:text/html"), path
        item = tmp_path / Path(path).name.replace(".html", f"-{len(path)}.html")
        item.write_bytes(base64.b64decode(uri.split(",", 1)[1]))
        seen = probe(item)
        assert seen["tables"] and all(t["rows"] >= 2 for t in seen["tables"]), path
    verdict = next(p for p in results if p.endswith("verdict.html"))
    item = tmp_path / "verdict-item.html"
    item.write_bytes(base64.b64decode(results[verdict]["data_uri"].split(",", 1)[1]))
    screenshot(item.as_uri(), run.root / "browser" / "verdict-item.png")
