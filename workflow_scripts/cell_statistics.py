"""Glue: one cell's scores, runs and chunks -> its descriptive statistics (CIs, section recall,
ranking identity)."""

from structablate.io import read_parquet, write_parquet
from structablate.plan.jobs import CellStatisticsJob
from structablate.report.blocks import two_stage_conditions
from structablate.stats.cell import describe_cell
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, CellStatisticsJob)
    conds = list(settings.conditions)

    def by_condition(paths):
        return {c: read_parquet(p) for c, p in zip(conds, paths, strict=True)}

    runs = by_condition(smk.input.runs)
    tables = describe_cell(by_condition(smk.input.scores), runs, by_condition(smk.input.chunks),
                           read_parquet(smk.input.queries), two_stage_conditions(conds),
                           n_boot=settings.n_boot, seed=settings.seed)
    for name, df in tables.items():
        write_parquet(df, smk.output[name])
    log.info("per-condition CIs: %d rows (%d replicates)", tables["condition_cis"].height,
             settings.n_boot)


main(snakemake)  # noqa: F821
