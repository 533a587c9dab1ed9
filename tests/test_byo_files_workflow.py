"""Files that are not ordinary files, and a target taken for a config file, through the real
Snakemake command line (issue 52, items 3 and 6): a document whose name is not UTF-8 is
refused before any job or skipped and listed, never a bare ``UnicodeEncodeError``; a folder
given as the questions file is refused before any job; a target written after
``--configfile`` is named as a target."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from workflow_util import _absolute_caches, snakemake

pytestmark = pytest.mark.slow


def project(root: Path, skip: bool, queries: str = "q.jsonl") -> Path:
    """Three Markdown documents with their questions and a config.yaml that reads them;
    returns the documents' folder."""
    docs = root / "docs"
    shutil.copytree(REPO / "resources/byo/qasper-markdown", docs)
    shutil.copy(REPO / "resources/byo/qasper-markdown-queries.jsonl", root / "q.jsonl")
    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    cfg["corpora"] = {"mine": {"type": "markdown", "path": "docs", "queries": queries,
                               "heading_separator": " ::: ", "skip_bad_files": skip}}
    cfg["conditions"] = ["G2", "G3"]
    cfg["size_match_structure"] = "gold"
    _absolute_caches(cfg)
    (root / "config.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))
    return docs


def latin1_name(docs: Path) -> None:
    """A copy of a document under a Latin-1 name (``café.md`` as a Windows zip stores it)."""
    with open(os.path.join(os.fsencode(docs), b"caf\xe9.md"), "wb") as fh:
        fh.write(b"# Caf\xc3\xa9\n\nA page about coffee.\n")


def test_a_name_that_is_not_utf8_is_skipped_and_listed(tmp_path):
    """Before: ``UnicodeEncodeError: 'utf-8' codec can't encode character '\\udce9' in position
    8: surrogates not allowed`` from Snakemake's input lock, before any job, naming no file,
    with skip_bad_files as without."""
    docs = project(tmp_path, skip=True)
    latin1_name(docs)
    proc = snakemake(tmp_path, "results/mine/corpus_report.json")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "UnicodeEncodeError" not in out
    report = json.loads((tmp_path / "results/mine/corpus_report.json").read_text())
    assert report["documents"] == 3 and report["inputs"] == 4
    [skipped] = report["skipped"]
    assert skipped["where"] == "docs/caf\\xe9.md" and skipped["doc_id"] is None
    assert skipped["reason"].startswith("the file name is not UTF-8 (byte 0xe9, shown as "
                                        "\\xe9)")


def test_a_name_that_is_not_utf8_is_refused_before_any_job(tmp_path):
    """Before: the dry run planned it (exit 0), and the real run died as above."""
    docs = project(tmp_path, skip=False)
    latin1_name(docs)
    proc = snakemake(tmp_path, "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "docs/caf\\xe9.md: the file name is not UTF-8 (byte 0xe9, shown as \\xe9)" in out, \
        out[-3000:]
    assert "or set skip_bad_files: true to leave the file out" in out
    assert "UnicodeEncodeError" not in out and not (tmp_path / "results").exists()


def test_a_folder_as_the_questions_file_is_refused_before_any_job(tmp_path):
    """Before: planned (a folder is a valid Snakemake input), and the mapping job then said
    ``qdir: queries file not found``."""
    project(tmp_path, skip=True, queries="qdir")
    (tmp_path / "qdir").mkdir()
    proc = snakemake(tmp_path, "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "qdir: a folder, not a questions file; name the .jsonl or .tsv file itself in " \
           "queries" in out, out[-3000:]


def test_a_target_after_configfile_is_named_as_a_target(tmp_path):
    """``snakemake --configfile config.yaml results/mine/funnel.json`` hands the target to
    --configfile. Before, once the file existed, it was merged into the configuration:
    ``…/funnel.json: invalid configuration: <top level>: Additional properties are not allowed
    ('corpus', …)``."""
    project(tmp_path, skip=True)
    funnel = tmp_path / "results/mine/funnel.json"
    funnel.parent.mkdir(parents=True)
    funnel.write_text(json.dumps({"corpus": "mine", "inputs": 3, "skipped": []}))
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(tmp_path), "--cores", "1", "-n",
           "--configfile", "config.yaml", "results/mine/funnel.json"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(REPO / "src")))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "results/mine/funnel.json: given to --configfile, but it is an output under the " \
           "results folder (results), not a configuration" in out, out[-3000:]
    assert "snakemake --cores all results/mine/funnel.json --configfile config.yaml" in out
    assert "Additional properties" not in out
