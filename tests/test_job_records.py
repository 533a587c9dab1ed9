"""Job records: every job writes its rerun trigger into the results folder
(structablate.workflow.record_job), so a plan from a working folder without Snakemake's record
of the outputs (a copied results folder, another working folder or clone, a deleted
.snakemake/) compares them with its configuration (stale_outputs) instead of keeping old
numbers under changed settings. tests/test_workflow.py shows it through Snakemake."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from structablate.workflow import (
    forced_rules,
    has_snakemake_record,
    record_job,
    record_path,
    snakemake_record,
    stale_message,
    stale_outputs,
    workdir_id,
)


def _job(tmp_path, params, *, rule="retrieve", condition="G2"):
    run = f"{tmp_path}/results/c/e/none/runs/{condition}.parquet"
    smk = SimpleNamespace(rule=rule, wildcards={"corpus": "c", "condition": condition},
                          output=[run], params=SimpleNamespace(settings=params))
    return smk, run


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return workdir_id(create=True)


def test_a_job_record_holds_its_trigger_outputs_and_working_folder(tmp_path, here):
    smk, run = _job(tmp_path, {"retrieval": {"top_k": 100}, "code": "abc"})
    record_job(smk, f"{tmp_path}/results")
    rec = record_path(f"{tmp_path}/results", "retrieve", smk.wildcards)
    assert rec.is_file() and '"top_k": 100' in rec.read_text()
    assert workdir_id() == here and len(here) == 16


def test_records_from_this_working_folder_are_left_to_snakemake(tmp_path, here):
    smk, run = _job(tmp_path, {"retrieval": {"top_k": 100}})
    results = f"{tmp_path}/results"
    record_job(smk, results)
    os.makedirs(os.path.dirname(run), exist_ok=True)
    open(run, "w").close()
    now = {"retrieval": {"top_k": 1}}
    assert stale_outputs(results, {run}, lambda r, w: now, here, known=lambda o: True) == []
    # another working folder (or a deleted .snakemake/: a new token) compares them
    stale = stale_outputs(results, {run}, lambda r, w: now, "another")
    assert stale == [{"file": run, "rule": "retrieve", "key": "retrieval.top_k", "was": 100,
                      "now": 1}]
    msg = stale_message("my.yaml", results, stale)
    assert f"- {run} (rule retrieve): retrieval.top_k was 100, is 1" in msg
    assert "snakemake --forcerun retrieve" in msg
    # the same settings, an output not planned, an output gone, a job not planned: nothing
    assert stale_outputs(results, {run}, lambda r, w: {"retrieval": {"top_k": 100}},
                         "another") == []
    assert stale_outputs(results, set(), lambda r, w: now, "another") == []
    assert stale_outputs(results, {run}, lambda r, w: None, "another") == []
    os.unlink(run)
    assert stale_outputs(results, {run}, lambda r, w: now, "another") == []


def test_a_code_change_is_named_as_such(tmp_path, here):
    smk, run = _job(tmp_path, {"retrieval": {"top_k": 100}, "code": "abc"})
    results = f"{tmp_path}/results"
    record_job(smk, results)
    os.makedirs(os.path.dirname(run), exist_ok=True)
    open(run, "w").close()
    stale = stale_outputs(results, {run}, lambda r, w: {"retrieval": {"top_k": 100},
                                                        "code": "def"}, "another")
    assert stale[0]["key"] == "code (the package code the job runs)"


@pytest.mark.parametrize("argv, expected", [
    (["snakemake", "-n"], (False, set())),
    (["snakemake", "--forcerun", "retrieve", "score", "-n"], (False, {"retrieve", "score"})),
    (["snakemake", "-R", "retrieve", "--cores", "2"], (False, {"retrieve"})),
    (["snakemake", "--forcerun=retrieve"], (False, {"retrieve"})),
    (["snakemake", "-F"], (True, set())),
])
def test_forced_rules_are_read_from_the_command_line(argv, expected):
    assert forced_rules(argv) == expected


def test_outputs_snakemake_holds_no_record_of_are_compared_even_from_here(tmp_path, here):
    """Before: with only .snakemake/metadata deleted, the working folder's token survived and
    every record written from here was left to Snakemake, which had none: a settings change
    (t_max 350 -> 200) reran nothing."""
    smk, run = _job(tmp_path, {"chunking": {"t_max": 350}}, rule="chunk")
    results = f"{tmp_path}/results"
    record_job(smk, results)
    os.makedirs(os.path.dirname(run), exist_ok=True)
    open(run, "w").close()
    now = {"chunking": {"t_max": 200}}
    assert not has_snakemake_record(run)  # no .snakemake/metadata here
    [stale] = stale_outputs(results, {run}, lambda r, w: now, here)
    assert (stale["key"], stale["was"], stale["now"]) == ("chunking.t_max", 350, 200)
    # where Snakemake holds its record, its own params comparison decides
    record = snakemake_record(run)
    record.parent.mkdir(parents=True)
    record.write_text("{}")
    assert has_snakemake_record(run)
    assert stale_outputs(results, {run}, lambda r, w: now, here) == []


def test_the_record_path_is_snakemakes(tmp_path, monkeypatch):
    from snakemake.persistence.file import FilePersistence

    monkeypatch.chdir(tmp_path)
    os.makedirs(".snakemake/metadata")

    class Probe:
        _max_len = None
        _fetch_max_len = FilePersistence._fetch_max_len

    for output in ("results/qasper/documents.parquet", "results/" + "x" * 600 + ".npy"):
        expected = FilePersistence._record_path(Probe(), ".snakemake/metadata", output)
        assert str(snakemake_record(output)) == expected


def test_a_changed_input_file_is_named_as_such(tmp_path, here):
    smk, run = _job(tmp_path, {"inputs": {"papers.json": "aaa"}, "code": "abc"},
                    rule="build_qasper")
    results = f"{tmp_path}/results"
    record_job(smk, results)
    os.makedirs(os.path.dirname(run), exist_ok=True)
    open(run, "w").close()
    [stale] = stale_outputs(results, {run}, lambda r, w: {"inputs": {"papers.json": "bbb"},
                                                          "code": "abc"}, here)
    assert stale["key"] == "inputs.papers.json (the sha256 of the file's content)"
    assert (stale["was"], stale["now"]) == ("aaa", "bbb")
