"""One cell's statistics, as the workflow computes them.

A cell is one (corpus, embedder, reranker); its per-query score tables (one per condition)
go in, three tables come out:

* ``contrasts`` — the pre-registered family (Holm within the family, per metric) and, as a
  separate Holm family labelled ``exploratory``, any extra contrasts from the config. The
  ``primary`` flag marks the pre-registered family's rows in the primary cell and metric;
  every other row is exploratory (with ``mixedlm: primary`` the exploratory rows of the
  primary cell and metric get the MixedLM check too). ``equivalence`` (TOST from the
  bootstrap) is added when a margin is configured.
* ``contrasts_qtype`` — the same contrasts cut by query type (exploratory).
* ``dose_response`` — breadcrumb-depth slope over A2 → A3-d1 → A3-d2 → A3 when all four ran.

:func:`describe_cell` computes the cell's descriptive statistics from its scores and runs:
per-condition means with clustered-bootstrap CIs, stage-1 section recall of the two-stage
conditions, and how often two conditions return the very same ranking.

Each family is the one the config declares: a contrast whose conditions did not run in this
cell has no row, but it stays in its family's Holm adjustment with p = 1 (the rows' ``family_size``
and ``family_missing`` say so), so a partial run never reports a smaller adjusted p than the
complete run would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from structablate.settings import StatisticsSettings, dump
from structablate.study import DOSE_LADDER

from .contrasts import contrast_table, resolve_margins, table_schema
from .dose import dose_response
from .identity import ranking_identity
from .means import condition_mean_cis, section_recall_cis


def long_scores(
    scores: Mapping[str, pl.DataFrame], corpus: str, embedder: str, reranker: str
) -> pl.DataFrame:
    """Stack per-condition score tables with the cell and condition columns added."""
    frames = [
        df.with_columns(
            pl.lit(corpus).alias("corpus"), pl.lit(embedder).alias("embedder"),
            pl.lit(reranker).alias("reranker"), pl.lit(cond).alias("condition"),
        )
        for cond, df in scores.items()
    ]
    return pl.concat(frames, how="vertical") if frames else pl.DataFrame()


def _empty_contrasts() -> pl.DataFrame:
    return pl.DataFrame(schema=table_schema() | {"family": pl.String})


def analyze_cell(
    scores: Mapping[str, pl.DataFrame],
    corpus: str,
    embedder: str,
    reranker: str,
    stats: StatisticsSettings,
    seed: int,
) -> dict[str, pl.DataFrame]:
    """The three tables of one cell (see module docstring); ``stats`` with its primary cell
    resolved (:meth:`structablate.plan.Plan.rule_settings` fills in the embedder)."""
    long = long_scores(scores, corpus, embedder, reranker)
    conds = set(scores)
    kw = dict(
        n_boot=stats.bootstrap_iters, seed=seed, primary=dump(stats.primary),
        mixedlm=stats.mixedlm,
        equivalence_margin=resolve_margins(stats.equivalence_margin, stats.primary.metric),
    )
    families = [
        ("pre-registered", dict(stats.contrasts)),
        ("exploratory", dict(stats.extra_contrasts)),
    ]
    out, by_type = [], []
    for family, contrasts in families:
        if not contrasts:
            continue
        fam_kw = {**kw, "primary_family": family == "pre-registered"}
        out.append(contrast_table(long, contrasts, **fam_kw)
                   .with_columns(pl.lit(family).alias("family")))
        by_type.append(contrast_table(long, contrasts, **{**fam_kw, "mixedlm": "none",
                                                          "primary": None}, by=["qtype"])
                       .with_columns(pl.lit(family).alias("family")))
    contrasts = pl.concat(out, how="diagonal") if out else _empty_contrasts()
    qtype = pl.concat(by_type, how="diagonal") if by_type else _empty_contrasts()
    if set(DOSE_LADDER) <= conds:
        dose = dose_response(long, DOSE_LADDER, n_boot=kw["n_boot"], seed=seed)
    else:
        dose = pl.DataFrame(schema={"corpus": pl.String, "embedder": pl.String,
                                    "reranker": pl.String, "metric": pl.String,
                                    "n_queries": pl.Int64, "n_docs": pl.Int64,
                                    "slope": pl.Float64, "ci_low": pl.Float64,
                                    "ci_high": pl.Float64, "p": pl.Float64})
    return {"contrasts": contrasts, "contrasts_qtype": qtype, "dose_response": dose}


def describe_cell(
    scores: Mapping[str, pl.DataFrame],
    runs: Mapping[str, pl.DataFrame],
    chunks: Mapping[str, pl.DataFrame],
    queries: pl.DataFrame,
    two_stage: Sequence[str],
    *,
    n_boot: int,
    seed: int,
) -> dict[str, pl.DataFrame]:
    """The descriptive tables of one cell, each a bootstrap or count over its queries.

    ``scores``, ``runs`` and ``chunks``: condition -> per-query score table, run table and the
    chunk table the run ranked (conditions in grid order, the same keys in each); ``queries``:
    the corpus's questions; ``two_stage``: the conditions routed through sections, whose runs
    carry stage-1 section recall. ``n_boot`` bootstrap replicates (count), drawn from
    ``seed``. Returns ``condition_cis`` (:func:`~structablate.stats.means.condition_mean_cis`),
    ``section_recall`` (:func:`~structablate.stats.means.section_recall_cis`) and
    ``ranking_identity`` (:func:`~structablate.stats.identity.ranking_identity`, results
    compared by span)."""
    cis = condition_mean_cis(scores, n_boot=n_boot, seed=seed)
    sr = section_recall_cis({c: runs[c] for c in two_stage}, queries, n_boot=n_boot, seed=seed)
    return {"condition_cis": cis, "section_recall": sr,
            "ranking_identity": ranking_identity(runs, chunks)}
