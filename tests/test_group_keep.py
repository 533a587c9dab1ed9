"""Which members of a failed group job count as finished (structablate.group_keep), and the
check of the Snakemake internals it relies on. The same on a real SLURM controller, with a
cancelled group job: tests/test_slurm_group_keep.py."""

import logging

import pytest
import snakemake
from snakemake.jobs import GroupJob

from structablate import group_keep
from structablate.group_keep import (
    TESTED_SNAKEMAKE,
    Outputs,
    internals_missing,
    members_to_keep,
    not_finished_because,
)

SUBMITTED = 1_000_000.0
DONE = Outputs(plain=True, missing=(), marked=(), oldest_output_s=SUBMITTED + 30,
               newest_input_s=SUBMITTED - 600)


@pytest.mark.parametrize(("outputs", "why"), [
    (DONE, None),
    (Outputs(True, ("a.npy",), (), SUBMITTED + 30, None), "a.npy is missing"),
    (Outputs(True, (), ("a.npy",), SUBMITTED + 30, None), "a.npy is still marked incomplete"),
    (Outputs(False, (), (), SUBMITTED + 30, None), "an output is not a plain local file"),
    (Outputs(True, (), (), SUBMITTED - 61, None), "an output is older than the group job"),
    (Outputs(True, (), (), SUBMITTED - 59, None), None),  # within SKEW_S
    (Outputs(True, (), (), SUBMITTED + 30, SUBMITTED + 31), "an output is older than an input"),
    (Outputs(True, (), (), None, None), "it has no output"),
])
def test_a_member_counts_as_finished_only_with_every_output_written_and_unmarked(outputs, why):
    assert not_finished_because(outputs, SUBMITTED) == why


def test_a_member_is_kept_only_with_every_member_it_reads_from():
    # a -> b -> c, and d alone; b's outputs are fine but a did not finish
    levels = [["a", "d"], ["b"], ["c"]]
    upstream = {"b": ["a"], "c": ["b"]}
    keep, redo = members_to_keep(levels, upstream, {"a": "x is missing", "b": None,
                                                   "c": None, "d": None})
    assert keep == {"d"}
    assert redo == {"a": "x is missing", "b": "a member it reads from is redone",
                    "c": "a member it reads from is redone"}


def test_when_every_member_finished_the_last_is_redone_so_the_retry_runs_something():
    levels = [["a", "d"], ["b"]]
    keep, redo = members_to_keep(levels, {"b": ["a"]}, dict.fromkeys("abd"))
    assert keep == {"a", "d"} and list(redo) == ["b"]
    # b was kept after an earlier attempt: the last member not kept before is redone
    keep, redo = members_to_keep(levels, {"b": ["a"]}, dict.fromkeys("abd"), fixed={"b"})
    assert keep == {"a", "b"} and list(redo) == ["d"]


def test_snakemake_has_every_internal_it_relies_on():
    assert internals_missing() == [], snakemake.__version__
    assert snakemake.__version__ == TESTED_SNAKEMAKE  # the pin (pyproject.toml) it was verified on


def test_a_changed_internal_is_named():
    class Changed(GroupJob):
        def postprocess(self, error=False, **kwargs):  # no longer a coroutine
            return None

        def __init__(self, groupid, members, resources):
            pass

    from snakemake.dag import DAG
    from snakemake.jobs import Job
    from snakemake.persistence import PersistenceBase

    problems = internals_missing(Changed, Job, DAG, PersistenceBase)
    assert problems == ["GroupJob.postprocess is not a coroutine function",
                        "GroupJob(id, jobs, global_resources) is now "
                        "GroupJob(groupid, members, resources)"]
    problems = internals_missing(GroupJob, object, object, object)
    assert "Job.get_target_spec is missing" in problems
    assert "DAG.dependencies is missing" in problems
    assert "Persistence.incomplete is not a coroutine function" in problems


def test_with_a_changed_internal_nothing_is_patched_and_the_run_is_warned(caplog, monkeypatch):
    monkeypatch.setattr(group_keep, "internals_missing", lambda: ["GroupJob.register is missing"])
    before = GroupJob.postprocess
    if getattr(before, "_structablate_keeps", False):
        pytest.skip("already installed in this process")
    with caplog.at_level(logging.WARNING):
        assert group_keep.install(logging.getLogger("t")) is False
    assert GroupJob.postprocess is before
    assert "GroupJob.register is missing" in caplog.text
    assert "all its members' outputs removed" in caplog.text
