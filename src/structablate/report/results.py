"""Results pages generated from a results folder: every number on the page comes from the run.

A results page (e.g. ``docs/results/qasper-full-cpu.md``) is Markdown prose with generated
blocks between markers::

    <!-- results: contrasts metric=covNDCG@10 -->
    …generated table…
    <!-- /results -->

``python -m structablate.report.results RESULTS --page PAGE [--corpus C --embedder E
--reranker R]`` reads the run's own tables under ``RESULTS`` and rewrites every block of
``PAGE`` in place (``--out`` writes elsewhere; ``--check`` re-derives every statistics table
from the per-question scores with the run's shipped config, :mod:`.rederive`, and fails,
saying where, when a table does not re-derive bit for bit or the page is stale). The
prose between blocks is written by hand and must hold no number of its own
(:func:`prose_numbers`: digits with their qualifiers, ``4x``, ``<0.05``, ``80%``, ``.005``,
and number words); a claim names the table row it rests on, which the ``claims`` block
prints. The paper's numbers come from :mod:`structablate.paper`. A results folder with several
cells (e.g. two embedders) needs ``--embedder`` (and ``--corpus``/``--reranker``) to name the
page's cell.

**Pages anyone can re-check.** ``--export-tables DIR [--config FILE --command CMD
--code-version V]`` copies the small tables a page reads (:func:`table_files`: per-question
scores, contrasts, summaries, funnel, BM25, structure quality, embedding counts, timing; no
vectors or runs) into ``DIR`` with a ``run.json`` describing the run, and renders the page
from that copy. The page names the folder in a line ``<!-- results-tables: DIR [--embedder
E …] -->`` (or ``<!-- results-tables: not shipped: REASON -->``), and ``--check`` without a
results folder reads it from there: the test suite checks every committed page so.

Every number a block prints is recorded in a :class:`Ledger` with the file, row and column it
came from; :func:`verify_ledger` reads each source again and checks the printed text is that
value formatted, which is how the tests hold the generator to the rule.

Blocks (``NAME key=value …``): ``run``, ``describe`` (every cell with its conditions, and the
run's config, command and code version from ``run.json``), ``means``, ``contrasts``
(``metric``, ``family``; with the tied count, the margin the row was tested with, the
smallest margin at which equivalence holds and each row's role, confirmatory or
exploratory), ``contrast`` (``name``: one contrast over every measure), ``qtype``
(``metric``), ``dose`` (the breadcrumb-depth slope), ``section_recall``, ``funnel`` (like for
like with the paper's QASPER funnel, then every field), ``bm25``, ``structure``, ``paper``
(``kind``: the paper's corpus, ``qasper`` or ``wikipedia``; each contrast against the
paper's on its own interval, in units and as a share of the control's mean, and against its
controls as a paired difference, :func:`against_paper`; ``control_embedder``: a second
embedder cell as one more control), ``sensitivity`` (``embedder``: the same conditions and
contrasts in a second embedder cell; ``absent=say``: a cell the tables lack is said, not an
error), ``embedders`` (``weak``: the embedder axis, levels
and each contrast under both embedders with its interaction test), ``claims``
(``metric``), ``timing``, ``embedding``, ``hashes``.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

from structablate.paper import (
    PAPER_BM25_GOLD_TOP1,
    PAPER_CHUNK_SPAN_IDENTITY,
    PAPER_CORPORA,
    PAPER_METRIC,
    PAPER_SECTION_RECALL,
)
from structablate.study import DOSE_LADDER

from .answers import CONTRAST_ALIGN, answer, monte_carlo_line, role_line, row_cells, row_key
from .benchmarks import block_embedding, block_hashes, block_timing
from .blocks import (
    CONTRAST_CELLS,
    condition_means_block,
    dose_blocks,
    qasper_funnel_block,
    qtype_block,
    report_fields_block,
    sample_block,
    section_recall_block,
    structure_quality_block,
)
from .comparisons import (
    against_paper,
    block_embedders,
    block_paper,
    block_sensitivity,
    relative_row,
)
from .folder import ResultsError
from .ledger import END, MARK, SOURCE, Ledger, page_numbers, prose_numbers, verify_ledger
from .rederive import rederive, run_settings, settings_from
from .render import table_lines, table_markdown
from .run import Run, RunDescription, export_tables, table_files
from .testable import dose_flags

__all__ = ["BLOCKS", "Ledger", "ResultsError", "Run", "against_paper", "export_tables", "main",
           "page_numbers", "page_source", "prose_numbers", "relative_row", "render_page",
           "table_files", "verify_ledger"]
"""The command line and the page's assembly live here; the names the tests and tools import
from here stand in their own modules (:mod:`.ledger`, :mod:`.run`, :mod:`.benchmarks`,
:mod:`.comparisons`)."""


# ---------------------------------------------------------------- blocks


def _first_key(summary: pl.DataFrame) -> dict[str, object]:
    """The ledger's selector of a summary table's first row (its condition and measure):
    where a cell's question and document counts are read from."""
    first = summary.row(0, named=True) if summary.height else {}
    return {"condition": first.get("condition"), "measure": first.get("measure")}


def block_run(run: Run, led: Ledger, **_) -> list[str]:
    """The cell, its questions, documents and conditions, in one line."""
    s, src = run.table("summary"), run.source("summary")
    key = _first_key(s)
    n_q = led.num(s["n_queries"].max(), "int", src, key, "n_queries") if s.height else "—"
    n_d = led.num(s["n_docs"].max(), "int", src, key, "n_docs") if s.height else "—"
    return [f"Cell `{run.corpus} / {run.embedder} / {run.reranker}`: {n_q} questions over "
            f"{n_d} documents; conditions {', '.join(run.conditions())}."]


def block_describe(run: Run, led: Ledger, **_) -> list[str]:
    """What ran: every cell of the folder with its conditions, questions and documents, and
    the run's description (config, command, code version) where the tables carry one
    (:func:`export_tables`)."""
    rows = []
    for cell in Run.cells(run.results):
        other = Run(run.results, *cell)
        s, src = other.table("summary"), other.source("summary")
        key = _first_key(s)
        mark = " (this page's cell)" if cell == (run.corpus, run.embedder, run.reranker) else ""
        rows.append([f"`{'/'.join(cell)}`{mark}", ", ".join(other.conditions()),
                     led.num(s["n_queries"].max(), "int", src, key, "n_queries"),
                     led.num(s["n_docs"].max(), "int", src, key, "n_docs")])
    out = table_lines(["cell", "conditions", "questions", "documents"], rows, "llrr")
    d = RunDescription.read(run.results)
    if d is None:
        return [*out, "", "No run description is recorded with these tables (the config, the "
                "command and the code version are written by `--export-tables DIR --config "
                "FILE --command CMD`)."]
    sha = (f" (sha256 `{d.config_sha256}`, shipped as `config.yaml` beside the tables)"
           if d.config_sha256 else "")
    return [*out, "", f"- config: `{d.config or 'not recorded'}`{sha}",
            f"- command: `{d.command or 'not recorded'}`",
            f"- code version: `{d.code_version or 'not recorded'}`"]


def block_means(run: Run, led: Ledger, **_) -> list[str]:
    """The cell's per-condition means as the report page shows them
    (:func:`structablate.report.blocks.condition_means_block`), with the first measure's
    95% CI where the run wrote them, and which measure is confirmatory."""
    s, src = run.table("summary"), run.source("summary")
    cis = run.optional("cis")
    csrc = run.source("cis") if cis is not None else ""
    block = condition_means_block(s, run.conditions(), title="", cite=led.cite(src), cis=cis,
                                  cite_cis=led.cite(csrc))
    return [table_markdown(block), "", role_line(run)]


ROLE_NOTE = ("Role: confirmatory is the pre-registered family on the primary measure in the "
             "primary cell (`statistics.primary`); every other row, measure and cell is "
             "exploratory. Tied: questions scored the same under both conditions (shown, never "
             "a reason to withhold a significant answer). Equivalence holds above: the smallest "
             "margin at which the equivalence test passes at the family's level, for a reader "
             "who prefers another margin.")


def block_contrasts(run: Run, led: Ledger, metric: str = PAPER_METRIC,
                    family: str | None = None, **_) -> list[str]:
    df, src = run.table("contrasts"), run.source("contrasts")
    df = df.filter(pl.col("metric") == metric)
    if family:
        df = df.filter(pl.col("family") == family)
    rows = []
    for r in df.iter_rows(named=True):
        rows.append([f"{r['contrast']}: {r['cond_a']} − {r['cond_b']}", r.get("family", ""),
                     *row_cells(r, led, src, run)])
    out = table_lines(["contrast", "family", *CONTRAST_CELLS], rows, "ll" + CONTRAST_ALIGN)
    notes = [ROLE_NOTE, *monte_carlo_line(run, led)]
    for fam in dict.fromkeys(df["family"].to_list() if "family" in df.columns else []):
        sub = df.filter(pl.col("family") == fam)
        missing = sorted({m for v in sub["family_missing"].to_list() if v for m in v.split(",")})
        if missing:
            notes.append(f"The {fam} family as configured also holds {', '.join(missing)}, "
                         "which did not run: Holm counts them with p set to one.")
    return out + [""] + notes + led.flag_lines()


def block_contrast(run: Run, led: Ledger, name: str, **_) -> list[str]:
    df, src = run.table("contrasts"), run.source("contrasts")
    df = df.filter(pl.col("contrast") == name)
    if not df.height:
        return [f"No row of `{src}` is named {name}: it did not run in this cell (a condition "
                "of it is not in the run's conditions)."]
    rows = [[r["metric"], *row_cells(r, led, src, run)] for r in df.iter_rows(named=True)]
    out = table_lines(["measure", *CONTRAST_CELLS], rows, "l" + CONTRAST_ALIGN)
    return [*out, "", ROLE_NOTE, *led.flag_lines()]


def block_qtype(run: Run, led: Ledger, metric: str = PAPER_METRIC, **_) -> list[str]:
    """Each contrast cut by question type (:func:`structablate.report.blocks.qtype_block`)."""
    block = qtype_block(run.table("qtype"), metric, cite=led.cite(run.source("qtype")))
    return [table_markdown(block), "",
            "Role: every row is exploratory (cut by question type, Holm within each type)."]


def block_dose(run: Run, led: Ledger, **_) -> list[str]:
    """The breadcrumb-depth dose-response (:func:`structablate.report.blocks.dose_blocks`):
    each rung's mean per measure (the ladder :data:`structablate.study.DOSE_LADDER`, depth in
    levels), then the slope per level with its interval (exploratory: the paper reports it as
    such)."""
    df, src = run.table("dose"), run.source("dose")
    if not df.height:
        return [f"The depth ladder ({', '.join(DOSE_LADDER)}) did not run in this cell."]
    means, slope = dose_blocks(
        df, run.table("summary"), cite=led.cite(src),
        cite_summary=led.cite(run.source("summary")),
        cite_depth=lambda value, kind, column, key: led.derived(value, kind))
    out = [table_markdown(means), "", table_markdown(slope)]
    reasons = dose_flags(list(DOSE_LADDER), quality=run.optional("structure"),
                         ranking=run.optional_file(run.paths.ranking_identity(
                             run.corpus, run.embedder, run.reranker)))
    if reasons:
        out += ["", "The slope rests on the ladder's structure, and the guard qualifies it: "
                "it is " + "; ".join(led.flags.reason(x) for x in reasons) + ".",
                *led.flag_lines()]
    return out


def block_section_recall(run: Run, led: Ledger, kind: str = "qasper", **_) -> list[str]:
    """Stage-1 section recall as the report page shows it
    (:func:`structablate.report.blocks.section_recall_block`), with the paper's range."""
    df, src = run.table("section_recall"), run.source("section_recall")
    if not df.height:
        return ["No two-stage condition ran in this cell."]
    lo, hi = PAPER_SECTION_RECALL.get(kind, (None, None))
    block = section_recall_block(
        df, title="", cite=led.cite(src), paper=None if lo is None else (kind, lo, hi),
        cite_paper=led.cite("paper:section_recall"))
    block.note = ""
    return [table_markdown(block)]


def block_funnel(run: Run, led: Ledger, kind: str = "qasper", **_) -> list[str]:
    """The corpus's funnel: for QASPER like for like with the paper's
    (:func:`structablate.report.blocks.qasper_funnel_block`), then every field of
    ``funnel.json`` (:func:`structablate.report.blocks.report_fields_block`)."""
    funnel, src = run.json("funnel"), run.file("funnel")
    out = []
    paper = PAPER_CORPORA.get(kind)
    if paper is not None and paper.funnel is not None:
        s, ssrc = run.table("summary"), run.source("summary")
        block = qasper_funnel_block(
            funnel, (s["n_docs"].max(), _first_key(s)), cite=led.cite(src),
            cite_documents=led.cite(ssrc), cite_paper=led.cite("paper:funnel"))
        out += [table_markdown(block), ""]
        sample = sample_block(funnel, cite=led.cite(src))
        if sample is not None:
            out += [table_markdown(sample), ""]
    return out + [table_markdown(report_fields_block(funnel, "funnel field (funnel.json)",
                                                     cite=led.cite(src)))]


def block_bm25(run: Run, led: Ledger, kind: str = "qasper", **_) -> list[str]:
    """Every field of ``bm25.json`` and the paper's gold-top-1 of the same corpus kind
    (:func:`structablate.report.blocks.report_fields_block`)."""
    paper = (kind, PAPER_BM25_GOLD_TOP1[kind]) if kind in PAPER_BM25_GOLD_TOP1 else None
    return [table_markdown(report_fields_block(
        run.json("bm25"), "BM25 (bm25.json)", cite=led.cite(run.file("bm25")), paper=paper,
        cite_paper=led.cite("paper:bm25")))]


def block_structure(run: Run, led: Ledger, kind: str = "qasper", **_) -> list[str]:
    """Structure quality as the report page shows it
    (:func:`structablate.report.blocks.structure_quality_block`), with the paper's chunk-span
    identity of its LLM inducer."""
    df, src = run.table("structure"), run.source("structure")
    block = structure_quality_block(df, title="", cite=led.cite(src), detail=True)
    block.note = ""
    out = [table_markdown(block)]
    if kind in PAPER_CHUNK_SPAN_IDENTITY:
        out += ["", f"Paper's LLM inducer, chunk spans identical to gold ({kind}): "
                    f"{led.num(PAPER_CHUNK_SPAN_IDENTITY[kind], '3', 'paper:chunk_span_identity', {'corpus': kind}, 'identity')}."]  # noqa: E501
    return out


def block_claims(run: Run, led: Ledger, metric: str = PAPER_METRIC, **_) -> list[str]:
    df, src = run.table("contrasts"), run.source("contrasts")
    out = []
    for r in df.filter(pl.col("metric") == metric).iter_rows(named=True):
        key = row_key(r, metric)
        where = f"`{src}` row family={r.get('family')}, contrast={r['contrast']}, metric={metric}"
        ph = led.num(r.get("p_holm"), "p", src, key, "p_holm")
        fs = led.num(r.get("family_size"), "int", src, key, "family_size")
        out.append(f"- {r['contrast']} ({r['cond_a']} − {r['cond_b']}, {r.get('family')}): "
                   f"**{answer(run, led, r)}** — Δ "
                   f"{led.num(r['delta'], '+4', src, key, 'delta')}, "
                   f"Holm p {ph} over a family of {fs} ({where}).")
    return out + ([""] + led.flag_lines() if led.flags.items() else [])


BLOCKS: dict[str, Callable[..., list[str]]] = {
    "run": block_run, "describe": block_describe, "means": block_means,
    "contrasts": block_contrasts,
    "contrast": block_contrast, "qtype": block_qtype, "dose": block_dose,
    "section_recall": block_section_recall, "funnel": block_funnel, "bm25": block_bm25,
    "structure": block_structure, "paper": block_paper, "claims": block_claims,
    "timing": block_timing, "embedding": block_embedding, "hashes": block_hashes,
    "sensitivity": block_sensitivity, "embedders": block_embedders,
}


def _spec(text: str, where: str) -> tuple[str, dict[str, str]]:
    name, *args = text.split()
    if name not in BLOCKS:
        raise ResultsError(f"{where}: unknown block {name!r}; known: {', '.join(BLOCKS)}")
    kw = {}
    for a in args:
        k, sep, v = a.partition("=")
        if not sep:
            raise ResultsError(f"{where}: block argument {a!r} is not key=value")
        kw[k] = v
    return name, kw


def render_page(page: str, run: Run, ledger: Ledger | None = None, where: str = "page") -> str:
    """``page`` with every generated block rewritten from ``run`` (module docstring)."""
    led = ledger if ledger is not None else Ledger()
    out: list[str] = []
    lines = page.splitlines()
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        j = next((k for k in range(i + 1, len(lines)) if lines[k].strip() == END), None)
        if j is None:
            raise ResultsError(f"{where}:{i + 1}: block {m['spec']!r} has no {END}")
        name, kw = _spec(m["spec"], f"{where}:{i + 1}")
        try:
            body = BLOCKS[name](run, led, **kw)
        except TypeError as e:
            raise ResultsError(f"{where}:{i + 1}: block {name}: {e}") from None
        out += [lines[i], *body, END]
        i = j + 1
    return "\n".join(out) + "\n"


def page_source(page: str, where: str = "page") -> tuple[str | None, list[str], str | None]:
    """The page's ``<!-- results-tables: … -->`` line (:data:`SOURCE`): ``(folder, cell
    arguments, None)`` for shipped tables (the folder relative to the repository root),
    ``(None, [], reason)`` for ``not shipped: REASON``, ``(None, [], None)`` without one."""
    for line in page.splitlines():
        m = SOURCE.match(line)
        if not m:
            continue
        spec = m["spec"].strip()
        if spec.startswith("not shipped:"):
            reason = spec.removeprefix("not shipped:").strip()
            if not reason:
                raise ResultsError(f"{where}: 'not shipped' needs a reason")
            return None, [], reason
        folder, *args = spec.split()
        return folder, args, None
    return None, [], None


def page_differences(old: str, new: str, where: str, limit: int = 5) -> list[str]:
    """Where the committed page ``old`` differs from what its tables give (``new``): the
    line number and both lines, the first ``limit`` of them (empty when equal)."""
    if old == new:
        return []
    a, b = old.splitlines(), new.splitlines()
    out = []
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else "(no line)"
        y = b[i] if i < len(b) else "(no line)"
        if x != y:
            out.append(f"{where}:{i + 1}: the page has {x!r}, its tables give {y!r}")
            if len(out) == limit:
                out.append(f"{where}: … (regenerate the page to see every difference)")
                break
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m structablate.report.results",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="?",
                    help="the results folder of a run, or a page's shipped tables (default: "
                         "the folder the page's results-tables line names)")
    ap.add_argument("--page", required=True, help="the Markdown page whose blocks to rewrite")
    ap.add_argument("--out", help="write here instead of rewriting --page")
    ap.add_argument("--corpus")
    ap.add_argument("--embedder")
    ap.add_argument("--reranker")
    ap.add_argument("--check", action="store_true",
                    help="re-derive every statistics table from the per-question scores (the "
                         "run's config.yaml beside the tables, or --config) and exit 1, "
                         "saying where, when a table or the page differs from what the run "
                         "gives")
    ap.add_argument("--export-tables", metavar="DIR",
                    help="also copy the run's small tables (what --check reads) into DIR")
    ap.add_argument("--config", help="with --export-tables: the config file of the run; with "
                                     "--check: the config to re-derive the tables with when "
                                     "none is shipped beside them")
    ap.add_argument("--command", help="with --export-tables: the command that made the run")
    ap.add_argument("--code-version",
                    help="with --export-tables: the code version that made the run (default: "
                         "this checkout's, marked 'at export')")
    a = ap.parse_args(argv)
    try:
        page_path = Path(a.page)
        if not page_path.exists():
            raise ResultsError(f"{page_path}: no such page")
        text = page_path.read_text(encoding="utf-8")
        results, cell = a.results, {"corpus": a.corpus, "embedder": a.embedder,
                                    "reranker": a.reranker}
        if results is None:
            folder, args, reason = page_source(text, str(page_path))
            if folder is None:
                raise ResultsError(f"{page_path}: no results folder given and the page ships "
                                   f"no tables ({reason or 'no results-tables line'})")
            results = Path(folder)
            sub = argparse.ArgumentParser(add_help=False)
            for k in cell:
                sub.add_argument(f"--{k}")
            named = vars(sub.parse_args(args))
            cell = {k: v if v is not None else named[k] for k, v in cell.items()}
        run = Run.find(results, cell["corpus"], cell["embedder"], cell["reranker"])
        stated = prose_numbers(text)
        if stated:
            raise ResultsError(f"{page_path}: the prose states numbers of its own "
                               f"({', '.join(stated[:10])}); put them in generated blocks")
        if a.export_tables:
            export_tables(run.results, a.export_tables, config=a.config, command=a.command,
                          code=a.code_version)
            run = Run(Path(a.export_tables), run.corpus, run.embedder, run.reranker)
        if a.check:
            settings = (settings_from(a.config) if a.config and not a.export_tables
                        else run_settings(run.results))
            derived, notes = rederive(run, settings)
        led = Ledger()
        new = render_page(text, run, led, str(page_path))
        problems = verify_ledger(led, run.results)
        if problems:
            raise ResultsError("numbers that do not match their source:\n  "
                               + "\n  ".join(problems[:20]))
    except ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.check:
        stale = page_differences(text, new, str(page_path))
        for line in [*derived[:50], *stale]:
            print(f"check failed: {line}", file=sys.stderr)
        if len(derived) > 50:
            per_file: dict[str, int] = defaultdict(int)
            for line in derived:
                per_file[line.split(" (", 1)[0]] += 1
            print(f"check failed: … and {len(derived) - 50} more differences of the tables; "
                  "all of them by file: " + ", ".join(f"{f} {n}" for f, n in per_file.items()),
                  file=sys.stderr)
        if derived or stale:
            return 1
        print(f"check passed: {page_path} is what its tables give, and every statistics table "
              f"re-derives bit for bit from the per-question scores of {run.results} ("
              + "; ".join(notes) + ")", file=sys.stderr)
        return 0
    Path(a.out or a.page).write_text(new, encoding="utf-8")
    print(f"wrote {a.out or a.page}: {len(led.entries)} numbers from {run.results}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
