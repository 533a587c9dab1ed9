# structablate: placebo-controlled ablation of document-structure mechanisms in dense retrieval.
# The grid (corpus x condition x embedder x reranker) expands from the plan built from the
# config (src/structablate/plan); every target is a file under `results:`, so a config or code
# edit reruns only the branches it invalidates.

import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from structablate.config import check_configfile_paths, cli_config_values, load_config_file


# The bundled default runs when no --configfile is given; `--configfile my.yaml` runs exactly
# my.yaml (name several to merge them, e.g. `--configfile config.yaml my.yaml`), and
# `--config key=value` overrides keys of whichever configuration runs. Snakemake's YAML loader
# keeps the last of a key given twice and reports a YAML error without file or line, so every
# config file is read here again with the loader that refuses both (file:line:col). A
# --configfile Snakemake cannot read at all (not UTF-8, tabs) stops inside Snakemake before
# this file: `python -m structablate.config my.yaml` names its line.
if not workflow.overwrite_configfiles:
    if Path("config.yaml").exists():
        load_config_file("config.yaml")

    configfile: "config.yaml"
else:
    # `snakemake --configfile my.yaml results/x/funnel.json` hands the target to --configfile
    # too: a path under results/ (or not .yaml/.yml/.json) is named as a target, with the
    # target-first form of the command
    check_configfile_paths(workflow.overwrite_configfiles, config.get("results", "results"))
    for _file in workflow.overwrite_configfiles:
        load_config_file(_file)

# --config values nested in a mapping or list arrive as strings; read them as YAML would
cli_config_values(config, workflow.config_settings.config)


# `snakemake --report`: this page describes the run (what ran, on what, with which models)
report: "resources/report/workflow.rst"


include: "rules/common.smk"
include: "rules/corpus.smk"
include: "rules/chunks.smk"
include: "rules/embedding.smk"
include: "rules/retrieval.smk"
include: "rules/evaluation.smk"
include: "rules/report.smk"


# outputs made with other settings that this working folder's .snakemake/ has no record of
check_records()


rule all:
    default_target: True
    input:
        all_targets(),
