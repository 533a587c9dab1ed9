"""One glue script run by hand on a results folder (structablate.by_hand, the
mock_snakemake of docs/architecture.md): the job's own snakemake object, built from the
workflow, and the same bytes the job writes under Snakemake; a rule, wildcards or inputs that
do not allow it are refused, naming them."""

import shutil

import pytest
from conftest import REPO
from workflow_util import snakemake

from structablate.by_hand import ByHandError, glue_job, mock_snakemake, run_glue

SNAKEFILE = REPO / "Snakefile"
OUTPUTS = ("documents.parquet", "paragraphs.parquet", "sections_gold.parquet",
           "queries.parquet", "qrels.parquet", "funnel.json")


def _folder(root):
    """A working folder with the bundled config and its QASPER sample."""
    root.mkdir()
    shutil.copy2(REPO / "config.yaml", root / "config.yaml")
    shutil.copytree(REPO / "resources" / "qasper", root / "resources" / "qasper")
    return root


def test_by_hand_writes_what_the_job_writes(tmp_path):
    hand, real = _folder(tmp_path / "hand"), _folder(tmp_path / "real")
    job = glue_job("build_qasper", {"corpus": "qasper"}, configfiles=[hand / "config.yaml"],
                   config={"results": "out"}, workdir=hand, snakefile=SNAKEFILE)
    smk = job.snakemake
    assert job.script == REPO / "workflow_scripts" / "build_qasper.py"
    assert smk.rule == "build_qasper" and dict(smk.wildcards.items()) == {"corpus": "qasper"}
    assert smk.output.funnel == str(hand / "out" / "qasper" / "funnel.json")
    assert list(smk.input.sources) == [str(hand / "resources/qasper/qasper-sample-v0.3.json")]
    # the job's settings, the sha256 of the file it reads and its code fingerprint
    assert set(smk.params.settings) == {"corpus", "inputs", "code"}
    assert list(smk.params.settings["inputs"]) == ["resources/qasper/qasper-sample-v0.3.json"]
    run_glue(job)
    assert (hand / "out/.records/build_qasper/corpus=qasper.json").is_file()  # in its folder
    proc = snakemake(real, "out/qasper/funnel.json", "--config", "results=out")
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in OUTPUTS:
        assert (hand / "out/qasper" / name).read_bytes() == \
            (real / "out/qasper" / name).read_bytes(), name


@pytest.mark.parametrize("rule,wildcards,message", [
    ("no_such_rule", {}, "no rule 'no_such_rule'"),
    ("build_qasper", {"corpus": "qasper", "chunkset": "A2"},
     "takes the wildcards corpus; given: chunkset, corpus"),
    ("summarize_cell", {"corpus": "qasper", "embedder": "minilm", "reranker": "none"},
     "input(s) missing"),
])
def test_refusals_name_what_is_wrong(tmp_path, rule, wildcards, message):
    hand = _folder(tmp_path / "hand")
    with pytest.raises(ByHandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        mock_snakemake(rule, wildcards, configfiles=[hand / "config.yaml"], workdir=hand,
                       snakefile=SNAKEFILE)
