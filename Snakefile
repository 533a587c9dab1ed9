# structablate: placebo-controlled ablation of document-structure mechanisms in dense retrieval.
# The grid (corpus x condition x embedder x reranker) expands from the plan built from the
# config (src/structablate/plan); every target is a file under `results:`, so a config or code
# edit reruns only the branches it invalidates.

import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from structablate.config import load_config_file


# The bundled default runs when no --configfile is given; `--configfile my.yaml` runs exactly
# my.yaml (name several to merge them, e.g. `--configfile config.yaml my.yaml`), and
# `--config key=value` overrides keys of whichever configuration runs. Snakemake reports a
# YAML error without file or line, so the file is read here first (file:line:col); a
# --configfile is read by Snakemake before this file: `python -m structablate.config my.yaml`
# names its line.
if not workflow.overwrite_configfiles:
    if Path("config.yaml").exists():
        load_config_file("config.yaml")

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
