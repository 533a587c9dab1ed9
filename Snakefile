# structablate: placebo-controlled ablation of document-structure mechanisms in dense retrieval.
# The grid (corpus x condition x embedder x reranker) expands from the plan built from the
# config (src/structablate/plan); every target is a file under `results:`, so a config or code
# edit reruns only the branches it invalidates.

from snakemake.utils import min_version

min_version("9.0")


# The bundled default runs when no --configfile is given; `--configfile my.yaml` runs exactly
# my.yaml (name several to merge them, e.g. `--configfile config.yaml my.yaml`), and
# `--config key=value` overrides keys of whichever configuration runs.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


# `snakemake --report`: this page describes the run (what ran, on what, with which models)
report: "resources/report/workflow.rst"


include: "rules/common.smk"
include: "rules/corpus.smk"
include: "rules/chunks.smk"
include: "rules/embedding.smk"
include: "rules/retrieval.smk"
include: "rules/evaluation.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        all_targets(),
