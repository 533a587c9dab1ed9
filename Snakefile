# structablate: placebo-controlled ablation of document-structure mechanisms in dense retrieval.
# The grid (corpus x condition x embedder x reranker) expands from config.yaml; every target is a
# Parquet file, so a config edit reruns only the branches it invalidates.

from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


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
