"""Deprecated names, kept only so the current workflow glue (``workflow_scripts/report_*.py``)
keeps running until it is rewired; nothing in the package or the tests uses them. Remove this
module once the glue calls the new names:

=========================  =======================================================
old (``report.tables``)    new
=========================  =======================================================
``condition_cis``          :func:`structablate.stats.condition_mean_cis`
``section_recall``         :func:`structablate.stats.section_recall_cis`
``size_matching``          :func:`structablate.stats.size_matching`
``size_gap``               :func:`structablate.stats.size_gap`
``chunk_span_identity``    :func:`structablate.structure.quality.span_identity`
``contrast_table``         :func:`structablate.report.blocks.contrasts_block`
``condition_means_table``  :func:`structablate.report.blocks.condition_means_block`
``cross_cell_means_table`` :func:`structablate.report.blocks.cross_cell_means_block`
``condition_ci_table``     :func:`structablate.report.blocks.condition_cis_block`
``section_recall_table``   :func:`structablate.report.blocks.section_recall_block`
``size_matching_table``    :func:`structablate.report.blocks.size_matching_block`
``funnel_table``           :func:`structablate.report.blocks.funnel_block`
=========================  =======================================================

``cell_label``, ``fmt``, ``fmt_p``, ``fmt_ci``, ``funnel_steps`` and ``two_stage_conditions``
live in :mod:`structablate.report.blocks` under the same names.
"""

from structablate.stats.means import condition_mean_cis as condition_cis
from structablate.stats.means import section_recall_cis as section_recall
from structablate.stats.sizes import size_gap, size_matching
from structablate.structure.quality import span_identity as chunk_span_identity

from .blocks import cell_label, fmt, fmt_ci, fmt_p, funnel_steps, two_stage_conditions
from .blocks import condition_cis_block as condition_ci_table
from .blocks import condition_means_block as condition_means_table
from .blocks import contrasts_block as contrast_table
from .blocks import cross_cell_means_block as cross_cell_means_table
from .blocks import funnel_block as funnel_table
from .blocks import section_recall_block as section_recall_table
from .blocks import size_matching_block as size_matching_table

__all__ = [
    "cell_label", "chunk_span_identity", "condition_ci_table", "condition_cis",
    "condition_means_table", "contrast_table", "cross_cell_means_table", "fmt", "fmt_ci",
    "fmt_p", "funnel_steps", "funnel_table", "section_recall", "section_recall_table",
    "size_gap", "size_matching", "size_matching_table", "two_stage_conditions",
]
