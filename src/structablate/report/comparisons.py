"""Results-page blocks that hold this cell against something else: the paper (``paper``:
each contrast on its own interval, in units and as a share of the control's mean), its
controls (a contrast minus its control, paired per question), and a second embedder's cell of
the same folder (``sensitivity``, ``embedders``: the embedder axis with its interaction
test)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from structablate.paper import (
    PAPER_CONTRASTS,
    PAPER_MEANS,
    PAPER_METRIC,
    difference_of_estimates,
    paper_contrast,
    paper_contrast_ci,
)
from structablate.stats.bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED
from structablate.stats.contrasts import contrast_difference
from structablate.stats.decision import row_words
from structablate.stats.design import design_table
from structablate.stats.embedders import embedder_contrasts, embedder_levels
from structablate.stats.power import ALPHA, POWER
from structablate.study import CONTROLS

from .answers import answer, contrast_row, role_line, row_key
from .folder import ResultsError
from .ledger import Ledger
from .render import table_lines
from .run import Run


@dataclass(frozen=True)
class Estimate:
    """An estimate and its 95% interval (``ci_low`` … ``ci_high``; None where the bootstrap
    was withheld): a contrast row's Δ, or the same as a share of its control's mean."""

    delta: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None

    @classmethod
    def of(cls, row: Estimate | Mapping) -> Estimate:
        """The estimate of a contrasts-table row (its ``delta``, ``ci_low``, ``ci_high``)."""
        if isinstance(row, Estimate):
            return row
        return cls(row.get("delta"), row.get("ci_low"), row.get("ci_high"))

    @property
    def has_interval(self) -> bool:
        return self.ci_low is not None and not math.isnan(self.ci_low)


def against_paper(paper_value: float, here: Estimate | Mapping | None,
                  paper_ci: tuple[float, float] | None = None) -> str:
    """The paper's value against this run's estimate of the same quantity: ``"not run"`` (no
    row), ``"no interval"`` (the bootstrap was withheld), ``"consistent"`` or ``"differs"``.

    With ``paper_ci`` (the paper printed a 95% interval) the two are compared as two
    estimates: ``here − paper`` with the 95% interval of
    :func:`structablate.paper.difference_of_estimates` (both standard errors combined);
    consistent when it holds 0. Without one the paper's value is taken as exact: consistent
    when it lies in this run's 95% interval (both ends included). No other row's interval is
    consulted: whether a control accounts for a gap is a test of its own
    (:func:`structablate.stats.contrasts.contrast_difference`)."""
    if here is None:
        return "not run"
    e = Estimate.of(here)
    if not e.has_interval or e.ci_high is None:
        return "no interval"
    if paper_ci is None:
        return "consistent" if e.ci_low <= paper_value <= e.ci_high else "differs"
    _, lo, hi = difference_of_estimates(e.delta, (e.ci_low, e.ci_high), paper_value, paper_ci)
    return "consistent" if lo <= 0 <= hi else "differs"


def _difference_cell(led: Ledger, paper_value: float, here: Estimate | Mapping | None,
                     paper_ci: tuple[float, float] | None) -> str:
    """``here − paper`` and its 95% interval (:func:`structablate.paper.difference_of_estimates`),
    or ``—`` without an interval here."""
    if here is None or not Estimate.of(here).has_interval:
        return "—"
    e = Estimate.of(here)
    d, lo, hi = difference_of_estimates(e.delta, (e.ci_low, e.ci_high), paper_value, paper_ci)
    return f"{led.derived(d, '+4')} [{led.derived(lo, '+4')}, {led.derived(hi, '+4')}]"


def relative_row(row: Estimate | Mapping | None, level: float | None) -> Estimate | None:
    """``row``'s Δ and 95% interval as shares of ``level`` (the control's mean; treated as
    fixed), for comparing with the paper across levels."""
    if row is None or level is None or not level or math.isnan(level):
        return None
    e = Estimate.of(row)
    if not e.has_interval:
        return Estimate(e.delta / level)
    return Estimate(e.delta / level, e.ci_low / level, e.ci_high / level)


def _control_mean(r: Mapping, summary: pl.DataFrame) -> float | None:
    if r.get("mean_b") is not None:
        return float(r["mean_b"])
    v = summary.filter((pl.col("condition") == r["cond_b"])
                       & (pl.col("measure") == r["metric"]))
    return float(v["mean"][0]) if v.height else None


def block_paper(run: Run, led: Ledger, kind: str = "qasper", control_embedder: str = "",
                **_) -> list[str]:
    """The paper's means and contrasts beside this cell's, each contrast compared with the
    paper on its own 95% interval (:func:`against_paper`), in the measure's units and as a
    share of the control's mean (levels differ between embedders); then each contrast against
    its control (:data:`structablate.study.CONTROLS`, and the same contrast under
    ``control_embedder``) as a paired difference with its own interval."""
    s, src = run.table("summary"), run.source("summary")
    other = run.sibling(control_embedder) if control_embedder else None
    if other is not None and not other.has("summary"):
        other = None
    paper = PAPER_MEANS[kind]
    conds = run.conditions()
    row_p = [led.num(paper[c], "3", "paper:means", {"corpus": kind, "condition": c}, "mean")
             if c in paper else "— (beyond the paper)" for c in conds]
    here = []
    for c in conds:
        v = s.filter((pl.col("condition") == c) & (pl.col("measure") == PAPER_METRIC))
        here.append(led.num(v["mean"][0], "3", src, {"condition": c, "measure": PAPER_METRIC},
                            "mean") if v.height else "—")
    out = table_lines(["", *conds], [["paper", *row_p], ["here", *here]], "l" + "r" * len(conds))
    out += ["", "Levels are not compared: they depend on the embedder. The contrasts below are "
            "compared in the measure's units and as a share of their control's mean."]
    df, csrc = run.table("contrasts"), run.source("contrasts")
    df = df.filter(pl.col("metric") == PAPER_METRIC)
    pairs = [(r["cond_a"], r["cond_b"]) for r in df.iter_rows(named=True)
             if paper_contrast(kind, r["cond_a"], r["cond_b"]) is not None]
    pairs += [p for p in PAPER_CONTRASTS.get(kind, {}) if p not in pairs]
    pairs = list(dict.fromkeys(pairs))  # a pair declared in both families: one row
    rows, ran = [], {}
    for a, b in pairs:
        pd = paper_contrast(kind, a, b)
        pci = paper_contrast_ci(kind, a, b)
        r = contrast_row(df, a, b, PAPER_METRIC)
        published = (a, b) in PAPER_CONTRASTS.get(kind, {})
        ptxt = led.derived(pd, "+4", source="paper:contrasts")
        if pci is not None:
            ptxt += f" [{led.derived(pci[0], '+4')}, {led.derived(pci[1], '+4')}]"
        elif not published:
            ptxt += " (from the means)"
        pshare = pd / paper[b] if b in paper else None
        pshare_ci = (pci[0] / paper[b], pci[1] / paper[b]) if pci and b in paper else None
        pstxt = led.derived(pshare, "+pct") if pshare is not None else "—"
        exact = pci is None
        if r is None:
            rows.append([f"{a} − {b}", ptxt, pstxt, "—", "—", "—", "—", "—", "not run",
                         "not run"])
            continue
        ran[(a, b)] = r
        key = row_key(r, PAPER_METRIC)
        rel = relative_row(r, _control_mean(r, s))
        share = "—" if rel is None else led.derived(rel.delta, "+pct")
        if rel is not None and rel.ci_low is not None:
            share += f" [{led.derived(rel.ci_low, '+pct')}, {led.derived(rel.ci_high, '+pct')}]"
        tag = " (paper exact)" if exact else ""
        rows.append([f"{r['contrast']}: {a} − {b}", ptxt, pstxt,
                     led.num(r["delta"], "+4", csrc, key, "delta"), led.ci(r, "+4", csrc, key),
                     share, answer(run, led, r), _difference_cell(led, pd, r, pci),
                     against_paper(pd, r, pci) + tag,
                     (against_paper(pshare, rel, pshare_ci) + tag)
                     if pshare is not None else "—"])
    out += ["", *table_lines(["contrast", "paper Δ [95% CI]", "paper Δ / control", "here Δ",
                              "here 95% CI", "here Δ / control [95% CI]", "here: answer",
                              "here − paper [95% CI]", "against the paper (Δ)",
                              "against the paper (share of control)"], rows, "lrrrrrlrll")]
    out += ["", "Against the paper: where the paper prints a 95% interval (the "
            "pre-registered contrasts, in its first table), this run's Δ and the paper's "
            "are compared as two independent estimates: here − paper with the 95% interval "
            "of the difference, "
            "each standard error read off its own interval (its half-width over the normal "
            "quantile of the interval's level) and the two combined as the square root of "
            "the sum of their squares; consistent when that interval holds zero, "
            "differs when it does not. Where the paper prints no interval (every contrast "
            "from the means, marked paper exact), the comparison treats the paper's value as "
            "exact: consistent when it lies in this run's 95% interval, and the difference's "
            "interval is this run's shifted by it. Not run when the contrast has no row here "
            "(no interval of another contrast is consulted). The share of control treats "
            "each control's mean as fixed. A lettered answer is about what its flag says, "
            "and so is its comparison with the paper.", *led.flag_lines()]
    out += _control_differences(run, led, ran, other, control_embedder)
    if control_embedder and other is None:
        out += ["", f"The control cell `{run.corpus}/{control_embedder}/{run.reranker}` is not "
                "in this results folder, so no contrast is compared with it."]
    return out


def _control_differences(run: Run, led: Ledger, ran: Mapping[tuple[str, str], Mapping],
                         other: Run | None, control_embedder: str) -> list[str]:
    """Each contrast of the paper minus its control (a contrast asking the same question with
    one known difference removed, :data:`structablate.study.CONTROLS`; the same contrast under
    a second embedder), paired per question with its own document-clustered bootstrap."""
    tests, conds = [], set(run.conditions())
    for a, b in ran:
        for c, d in CONTROLS.get((a, b), ()):
            if {c, d} <= conds:
                tests.append(((a, b), (c, d), None))
        if other is not None:
            tests.append(((a, b), (a, b), other))
    if not tests:
        return []
    try:
        scores = run.scores()
        oscores = other.scores() if other is not None else {}
    except ResultsError as e:
        return ["", f"Contrast against its control: not computed, the per-question score "
                f"tables are missing ({e})."]
    rows = []
    for first, second, cell in tests:
        if cell is None:
            table, label = scores, f"({first[0]} − {first[1]}) − ({second[0]} − {second[1]})"
        else:
            table = {"x_a": scores[first[0]], "x_b": scores[first[1]],
                     "y_a": oscores.get(second[0]), "y_b": oscores.get(second[1])}
            if table["y_a"] is None or table["y_b"] is None:
                continue
            label = (f"({first[0]} − {first[1]}) in `{run.embedder}` − the same in "
                     f"`{cell.embedder}`")
            first, second = ("x_a", "x_b"), ("y_a", "y_b")
        res = contrast_difference(table, first, second, PAPER_METRIC,
                                  n_boot=DEFAULT_N_BOOT, seed=DEFAULT_SEED)
        ci = ("—" if math.isnan(res["ci_low"]) else
              f"[{led.derived(res['ci_low'], '+4')}, {led.derived(res['ci_high'], '+4')}]")
        word = ("withheld (too few documents)" if math.isnan(res["ci_low"]) else
                "differs from its control" if res["ci_low"] > 0 or res["ci_high"] < 0 else
                "no difference from its control shown; one smaller than the MDE would go "
                "unseen")
        mde_txt = ("—" if math.isnan(res["ci_low"]) else
                   "±" + led.derived(res["mde80"], "4"))
        rows.append([label, led.derived(res["n_queries"], "int"),
                     led.derived(res["delta"], "+4"), ci, led.derived(res["p"], "p"),
                     mde_txt, word])
    return ["", *table_lines(["contrast − control (paired per question)", "questions", "Δ − Δ",
                              "95% CI", "p", "MDE", "reading"], rows, "lrrrrrl"),
            "", f"Document-clustered bootstrap of the per-question difference of the two "
            f"contrasts ({led.derived(DEFAULT_N_BOOT, 'int')} replicates, seed "
            f"{led.derived(DEFAULT_SEED, 's')}), unadjusted; a "
            "contrast that differs from its control differs because of what the control "
            "removes (induced against gold structure, the embedder). MDE: the difference "
            f"detected with power {led.derived(POWER, '1')} at two-sided α "
            f"{led.derived(ALPHA, '2')} from the document-clustered standard error "
            "(docs/statistics.md, \"Designing a run\"); python -m structablate.stats.design "
            "gives the questions a stated one needs."]


def block_sensitivity(run: Run, led: Ledger, embedder: str, metric: str = PAPER_METRIC,
                      absent: str = "", **_) -> list[str]:
    """The cell's levels and contrasts beside a second cell of the same results folder that
    differs only by its embedder entry (e.g. the same model at another ``max_seq_length``).
    A second cell the folder lacks is an error, unless ``absent=say``: then the block says
    which cell is missing from which folder, and prints nothing of it."""
    other = run.sibling(embedder)
    if absent == "say" and not other.has("summary"):
        return [f"The cell `{run.corpus}/{embedder}/{run.reranker}` is not in these tables "
                f"(`{run.results}`): none of its numbers can be printed or re-derived here."]
    cells = (run, other)
    sums = [c.table("summary") for c in cells]
    conds = [c for c in run.conditions() if c in set(sums[1]["condition"].to_list())]
    rows = []
    for c in conds:
        row = [c]
        for cell, s in zip(cells, sums, strict=True):
            v = s.filter((pl.col("condition") == c) & (pl.col("measure") == metric))
            row.append(led.num(v["mean"][0], "4", cell.source("summary"),
                               {"condition": c, "measure": metric}, "mean")
                       if v.height else "—")
        rows.append(row)
    out = table_lines(["condition", f"`{run.embedder}`", f"`{embedder}`"], rows, "lrr")
    dfs = [c.table("contrasts").filter(pl.col("metric") == metric) for c in cells]
    rows = []
    for r in dfs[0].iter_rows(named=True):
        o = contrast_row(dfs[1], r["cond_a"], r["cond_b"], metric)
        if o is None:
            continue
        row = [f"{r['contrast']}: {r['cond_a']} − {r['cond_b']}"]
        for cell, x in zip(cells, (r, o), strict=True):
            key = row_key(x, metric)
            src = cell.source("contrasts")
            row += [led.num(x["delta"], "+4", src, key, "delta"), led.ci(x, "+4", src, key),
                    answer(cell, led, x)]
        row.append("same" if row_words(r) == row_words(o) else "differs")
        rows.append(row)
    out += ["", *table_lines(["contrast", f"Δ `{run.embedder}`", "95% CI", "answer",
                         f"Δ `{embedder}`", "95% CI", "answer", "answers"], rows,
                        "lrrlrrll")]
    return [*out, "", role_line(run) + " The second cell is a sensitivity check: exploratory.",
            *led.flag_lines()]


def block_embedders(run: Run, led: Ledger, weak: str, kind: str = "qasper",
                    metric: str = PAPER_METRIC, **_) -> list[str]:
    """The embedder axis: the page's cell (the stronger embedder) beside cell ``weak`` of the
    same folder. Levels: each condition's mean under both, the change, and the paper's
    (bge-large) level. Contrasts: each contrast's Δ under both with its answer, and the
    interaction (Δ under the page's embedder − Δ under ``weak``, per question) with its own
    document-clustered bootstrap interval and Holm p over the contrasts
    (:func:`structablate.stats.embedders.embedder_contrasts`)."""

    other = run.sibling(weak)
    sums = {c.embedder: c.table("summary") for c in (run, other)}
    paper = PAPER_MEANS.get(kind, {})

    def mean(cell: Run, cond: str) -> tuple[str, float | None]:
        v = sums[cell.embedder].filter((pl.col("condition") == cond)
                                       & (pl.col("measure") == metric))
        if not v.height:
            return "—", None
        return (led.num(v["mean"][0], "4", cell.source("summary"),
                        {"condition": cond, "measure": metric}, "mean"), float(v["mean"][0]))

    try:
        scores = {weak: other.scores(), run.embedder: run.scores()}
    except ResultsError as e:
        return [f"The embedder axis: not computed, the per-question score tables are missing "
                f"({e})."]
    levels = {r["condition"]: r for r in embedder_levels(
        scores, weak, run.embedder, run.conditions(), [metric], n_boot=DEFAULT_N_BOOT,
        seed=DEFAULT_SEED).iter_rows(named=True)}
    rows = []
    for c in run.conditions():
        (tw, w), (ts, _) = mean(other, c), mean(run, c)
        lv = levels.get(c)
        if lv is None:
            change, ci, ph = "—", "—", "—"
        else:
            change = led.derived(lv["difference"], "+4")
            if w:
                change += f" ({led.derived(lv['difference'] / w, '+pct')})"
            ci = f"[{led.derived(lv['ci_lo'], '+4')}, {led.derived(lv['ci_hi'], '+4')}]"
            ph = led.derived(lv["p_holm"], "p")
        pv = (led.num(paper[c], "3", "paper:means", {"corpus": kind, "condition": c}, "mean")
              if c in paper else "—")
        rows.append([c, tw, ts, change, ci, ph, pv])
    out = table_lines(["condition", f"`{weak}`", f"`{run.embedder}`",
                  f"`{run.embedder}` − `{weak}`", "95% CI", "Holm p", "paper (bge-large)"],
                 rows, "lrrrrrr")

    dfs = {c.embedder: c.table("contrasts").filter(pl.col("metric") == metric)
           for c in (run, other)}
    pairs: dict[str, tuple[str, str]] = {}
    for r in dfs[run.embedder].iter_rows(named=True):
        if contrast_row(dfs[weak], r["cond_a"], r["cond_b"], metric) is not None:
            pairs.setdefault(r["contrast"], (r["cond_a"], r["cond_b"]))
    inter = embedder_contrasts(scores, weak, run.embedder, pairs, [metric],
                               n_boot=DEFAULT_N_BOOT, seed=DEFAULT_SEED)
    design = design_table({weak: scores[weak], run.embedder: scores[run.embedder]},
                          {k: (a, b, "") for k, (a, b) in pairs.items()}, [metric])
    mdes = {r["contrast"]: r["mde"] for r in design.iter_rows(named=True)
            if r["kind"] == "interaction"}
    rows = []
    for r in inter.iter_rows(named=True):
        a, b = r["cond_a"], r["cond_b"]
        cells_ = [f"{r['contrast']}: {a} − {b}"]
        answers = []
        for cell in (other, run):
            x = contrast_row(dfs[cell.embedder], a, b, metric)
            src = cell.source("contrasts")
            key = row_key(x, metric)
            answers.append(row_words(x))
            cells_ += [led.num(x["delta"], "+4", src, key, "delta"),
                       led.derived(r["rel_weak" if cell is other else "rel_strong"], "+pct"),
                       answer(cell, led, x)]
        ci = f"[{led.derived(r['ci_lo'], '+4')}, {led.derived(r['ci_hi'], '+4')}]"
        moved = ("moves" if r["p_holm"] < 0.05 else "no change shown")
        cells_ += [led.derived(r["interaction"], "+4"), ci, led.derived(r["p_holm"], "p"),
                   "±" + led.derived(mdes.get(r["contrast"]), "4"),
                   "same" if answers[0] == answers[1] else "differ", moved]
        rows.append(cells_)
    out += ["", *table_lines(["contrast", f"Δ `{weak}`", "share", "answer", f"Δ `{run.embedder}`",
                              "share", "answer", "interaction Δ − Δ", "95% CI", "Holm p",
                              "interaction MDE", "answers", "with capacity"], rows,
                             "lrrlrrlrrrrll")]
    return [*out, "", f"Levels: the paired per-question difference of each condition between "
            f"the embedders, with its own bootstrap interval and Holm p over the conditions. "
            f"Share: Δ as a share of the control condition's mean under the same "
            f"embedder. Interaction: the per-question Δ under `{run.embedder}` minus the same "
            f"under `{weak}`, document-clustered bootstrap "
            f"({led.derived(DEFAULT_N_BOOT, 'int')} replicates, seed "
            f"{led.derived(DEFAULT_SEED, 's')}) with both deltas on the same draws, Holm over "
            "the contrasts of the table; \"moves\" where the Holm p is below the level; "
            "\"no change shown\" says only that no change as large as the interaction MDE "
            f"beside it happened (power {led.derived(POWER, '1')}, two-sided α "
            f"{led.derived(ALPHA, '2')} before Holm, from the "
            "document-clustered standard error of the per-question interaction; "
            "docs/statistics.md, \"Designing a run\"): a smaller one would go unseen. "
            f"{role_line(run)} The embedder comparison is exploratory (the paper "
            "pre-registers no interaction).", *led.flag_lines()]
