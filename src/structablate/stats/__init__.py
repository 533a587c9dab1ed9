"""Statistics of the study (paper, §5.2 and Appendix D).

* :func:`contrast_table` — paired per-query deltas of the pre-registered contrasts per cell and
  metric: document-clustered bootstrap CI and p, Holm within the cell's family, Cohen's dz,
  MixedLM p-values (document intercept; document + nested query), primary flag; optional
  equivalence (TOST) columns and per-``qtype`` cuts (``by=["qtype"]``).
* :func:`equivalence_table` — bootstrap TOST verdicts per contrast.
* :func:`dose_response` — exploratory breadcrumb-depth slope with a clustered bootstrap.
* :func:`cluster_bootstrap`, :func:`holm` — the building blocks.
"""

from .bootstrap import (
    DEFAULT_SEED,
    bootstrap_p,
    cluster_bootstrap,
    draw_blocks,
    equivalence_verdict,
    per_doc,
    percentile_ci,
    tost,
)
from .contrasts import (
    CELL,
    DEFAULT_CONTRASTS,
    DEFAULT_PRIMARY,
    OUTPUT_COLUMNS,
    cohen_dz,
    contrast_table,
    equivalence_table,
    paired,
)
from .dose import DEFAULT_DEPTHS, dose_response, per_query_slopes
from .holm import holm
from .mixedlm import mixedlm_pvalues

__all__ = [
    "CELL",
    "DEFAULT_CONTRASTS",
    "DEFAULT_DEPTHS",
    "DEFAULT_PRIMARY",
    "DEFAULT_SEED",
    "OUTPUT_COLUMNS",
    "bootstrap_p",
    "cluster_bootstrap",
    "cohen_dz",
    "contrast_table",
    "dose_response",
    "draw_blocks",
    "equivalence_table",
    "equivalence_verdict",
    "holm",
    "mixedlm_pvalues",
    "paired",
    "per_doc",
    "per_query_slopes",
    "percentile_ci",
    "tost",
]
