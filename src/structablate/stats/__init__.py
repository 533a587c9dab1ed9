"""Statistics of the study (paper, §5.2 and Appendix D). The report formats these tables; it
computes none of its own.

* :func:`contrast_table` — paired per-query deltas of the pre-registered contrasts per cell and
  metric: document-clustered bootstrap CI, p and standard error, Holm over the family the
  config declares, Cohen's dz, the minimum detectable effect at 80% power (unadjusted and at
  the family's level), MixedLM p-values (document intercept; + nested query; per-document
  slope), primary flag, equivalence (TOST) columns where a margin is set, the decision, and
  per-``qtype`` cuts (``by=["qtype"]``).
* :func:`decide` — the one decision rule (:mod:`.decision`).
* :func:`equivalence_table` — the TOST columns and decision per contrast.
* :func:`dose_response` — exploratory breadcrumb-depth slope with a clustered bootstrap.
* :func:`condition_means`, :func:`condition_mean_cis`, :func:`section_recall_cis` — per-condition
  means, their clustered-bootstrap CIs, stage-1 section recall (:mod:`.means`).
* :func:`resolving_power` and the helpers of :mod:`.power` — minimum detectable effects and the
  sample needed for the paper's effect sizes.
* :func:`size_matching` — realized chunk sizes and truncation per chunkset.
* :func:`ranking_identity` — how often two conditions return the very same ranking.
* :func:`sign_flip` — the document-level sign-flip randomization test a contrast row over
  fewer than :data:`MIN_DOCS` documents takes its p, interval and TOST from
  (:mod:`.smallsample`).
* :func:`cluster_bootstrap`, :func:`holm` — the building blocks.
"""

from .bootstrap import (
    DEFAULT_SEED,
    ZERO_TOL,
    bootstrap_p,
    bootstrap_se,
    cluster_bootstrap,
    draw_blocks,
    per_doc,
    percentile_ci,
    tost,
)
from .columns import CELL, ID_COLUMNS, metric_columns
from .contrasts import (
    EQUIVALENCE_COLUMNS,
    OUTPUT_COLUMNS,
    cohen_dz,
    contrast_table,
    equivalence_table,
    margin_for,
    paired,
    table_schema,
)
from .decision import ALPHA, DECISIONS, MIN_BOOTSTRAP_DOCS, decide, decision_words
from .dose import dose_response, per_query_slopes
from .holm import holm
from .identity import ranking_identity
from .means import condition_mean_cis, condition_means, section_recall_cis
from .mixedlm import mixedlm_pvalues, mixedlm_slope
from .power import (
    MIN_DOCS,
    MIN_QUERIES,
    PAPER_DELTAS,
    PAPER_DZ,
    design_effect,
    mde,
    needed_for_delta,
    needed_for_dz,
    resolving_power,
    sample_warnings,
)
from .sizes import size_gap, size_matching
from .smallsample import EXACT_MAX_DOCS, SignFlip, sign_flip

__all__ = [
    "ALPHA",
    "CELL",
    "DECISIONS",
    "DEFAULT_SEED",
    "EXACT_MAX_DOCS",
    "EQUIVALENCE_COLUMNS",
    "ID_COLUMNS",
    "MIN_BOOTSTRAP_DOCS",
    "MIN_DOCS",
    "MIN_QUERIES",
    "OUTPUT_COLUMNS",
    "PAPER_DELTAS",
    "PAPER_DZ",
    "SignFlip",
    "ZERO_TOL",
    "bootstrap_p",
    "bootstrap_se",
    "cluster_bootstrap",
    "cohen_dz",
    "decide",
    "decision_words",
    "condition_mean_cis",
    "condition_means",
    "contrast_table",
    "design_effect",
    "dose_response",
    "draw_blocks",
    "equivalence_table",
    "holm",
    "margin_for",
    "mde",
    "metric_columns",
    "mixedlm_pvalues",
    "mixedlm_slope",
    "needed_for_delta",
    "needed_for_dz",
    "paired",
    "per_doc",
    "per_query_slopes",
    "percentile_ci",
    "ranking_identity",
    "resolving_power",
    "sample_warnings",
    "section_recall_cis",
    "size_gap",
    "sign_flip",
    "size_matching",
    "table_schema",
    "tost",
]
