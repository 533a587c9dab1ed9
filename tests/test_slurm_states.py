"""How a job that SLURM ended is recognised, in every form ``sacct`` and ``squeue`` print its
state (structablate.slurm.plain_states), run through the executor plugin's own status check
(snakemake-executor-plugin-slurm 2.8.0, ``Executor.check_active_jobs``): a cancelled, timed-out,
node-failed, OOM-killed or (for good) preempted job is reported failed, so Snakemake retries it,
where the plugin alone kept waiting on ``CANCELLED by 0`` and ``CANCELLED+``."""

import asyncio
import types

import pytest

plugin = pytest.importorskip("snakemake_executor_plugin_slurm",
                             reason="the slurm extra (snakemake-executor-plugin-slurm) is missing")

from structablate import slurm  # noqa: E402


@pytest.mark.parametrize(("printed", "state"), [
    ("CANCELLED by 0", "CANCELLED"),        # sacct: cancelled by uid 0 (an admin, or root)
    ("CANCELLED by 1234", "CANCELLED"),     # sacct: cancelled by its user
    ("CANCELLED+", "CANCELLED"),            # sacct, column cut to its width
    ("CANCELLED", "CANCELLED"),             # squeue
    ("OUT_OF_ME+", "OUT_OF_MEMORY"),
    ("OUT_OF_MEMORY", "OUT_OF_MEMORY"),
    ("TIMEOUT", "TIMEOUT"),
    ("NODE_FAIL", "NODE_FAIL"),
    ("PREEMPTED", "PREEMPTED"),
    ("COMPLETED", "COMPLETED"),
    ("RUNNING", "RUNNING"),
    (" PENDING ", "PENDING"),
    ("RESV_DEL_+", "RESV_DEL_HOLD"),
    ("REQUEUE_+", "REQUEUE_"),               # ambiguous cut: left as it is, never a failure
])
def test_a_state_is_its_bare_name(printed, state):
    assert slurm.plain_state(printed) == state


class _Logger:
    def __init__(self):
        self.warnings: list[str] = []

    def warning(self, msg):
        self.warnings.append(msg)

    def debug(self, msg):
        pass

    info = debug


class _Limiter:
    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False


def _executor(command: str, requeue: bool = True):
    """Just what the plugin's check_active_jobs reads of an Executor."""
    reported: dict[str, tuple[str, str]] = {}
    settings = types.SimpleNamespace(init_seconds_before_status_checks=40, status_attempts=1,
                                     requeue=requeue, keep_successful_logs=True)
    ex = types.SimpleNamespace(
        workflow=types.SimpleNamespace(executor_settings=settings), logger=_Logger(),
        run_uuid="run", status_rate_limiter=_Limiter(), get_status_command=lambda: command,
        next_seconds_between_status_checks=40, _status_query_failures=0,
        _status_query_calls=0, _status_query_total_seconds=0.0, _status_query_min_seconds=None,
        _status_query_max_seconds=0.0, _status_query_cycle_rows=[], _preemption_warning=False,
        _failed_nodes=set(),
        report_job_success=lambda j: reported.__setitem__(j.external_jobid, ("ok", "")),
        report_job_error=lambda j, msg=None, **k: reported.__setitem__(j.external_jobid,
                                                                       ("error", msg)))
    return ex, reported


def _check(monkeypatch, printed: dict[str, str]) -> None:
    """Make the plugin's status query answer ``printed`` (job id -> what sacct/squeue print;
    the dict may change between checks), with sacct and squeue present."""
    async def query(cmd, logger):
        return dict(printed), 0.01


    monkeypatch.setattr(plugin, "query_job_status", query)
    monkeypatch.setattr(plugin, "is_query_tool_available", lambda tool: True)
    monkeypatch.setattr(plugin, "get_min_job_age", lambda: 300)
    monkeypatch.setattr(plugin.subprocess, "check_output", lambda *a, **k: "")


def _run_check(ex, ids):
    """One status check of the plugin over jobs ``ids``: the ids it keeps waiting on (what it
    reports lands in the dict of _executor)."""
    jobs = [types.SimpleNamespace(external_jobid=i, aux={}) for i in ids]

    async def go():
        return [j.external_jobid async for j in plugin.Executor.check_active_jobs(ex, jobs)]

    return asyncio.run(go())


FAILED_FORMS = {"1": "CANCELLED by 0", "2": "CANCELLED+", "3": "TIMEOUT", "4": "OUT_OF_ME+",
                "5": "OUT_OF_MEMORY", "6": "CANCELLED by 1234", "7": "NODE_FAIL"}


def test_without_plain_states_the_plugin_waits_on_cancelled_by_0(monkeypatch):
    """The fault itself (issue 53): the plugin alone keeps waiting on what sacct prints for a
    cancelled job, and on a cut OUT_OF_MEMORY."""
    _check(monkeypatch, FAILED_FORMS)
    ex, reported = _executor("sacct")
    waiting = _run_check(ex, list(FAILED_FORMS))
    assert {"1", "2", "4", "6"} <= set(waiting)
    assert reported["3"][0] == "error"


def test_every_form_of_an_ended_job_is_reported_failed(monkeypatch):
    _check(monkeypatch, FAILED_FORMS)
    slurm.plain_states(_Logger())
    ex, reported = _executor("sacct", requeue=False)
    waiting = _run_check(ex, list(FAILED_FORMS))
    assert waiting == []
    for job, printed in FAILED_FORMS.items():
        status, msg = reported[job]
        assert status == "error", (printed, msg)
        assert f"'{slurm.plain_state(printed)}'" in msg
    # and the retry's sizing sees the bare state (structablate.plan.resources)
    assert slurm._STATE.search(reported["4"][1]).group(1) == "OUT_OF_MEMORY"


def test_a_node_failure_is_left_to_slurm_where_the_profile_requeues(monkeypatch):
    """profiles/slurm sets slurm-requeue: SLURM puts a NODE_FAIL job back in its queue."""
    _check(monkeypatch, {"7": "NODE_FAIL"})
    slurm.plain_states(_Logger())
    ex, reported = _executor("sacct", requeue=True)
    assert _run_check(ex, ["7"]) == ["7"]
    assert not reported


def test_a_job_preempted_for_good_is_cancelled_a_requeued_one_waits(monkeypatch):
    now = [0.0]
    printed = {"8": "PREEMPTED", "9": "PREEMPTED"}
    _check(monkeypatch, printed)
    log = _Logger()
    slurm.plain_states(log, preempted_final_s=300, clock=lambda: now[0])
    ex, reported = _executor("squeue")
    assert _run_check(ex, ["8", "9"]) == ["8", "9"]  # just preempted: SLURM's to requeue
    now[0] = 120.0
    printed["9"] = "PENDING"  # requeued by SLURM
    assert _run_check(ex, ["8", "9"]) == ["8", "9"]
    now[0] = 301.0
    printed["9"] = "RUNNING"
    assert _run_check(ex, ["8", "9"]) == ["9"]
    assert reported["8"][0] == "error" and "'CANCELLED'" in reported["8"][1]
    assert any("SLURM job 8 is still PREEMPTED 301 s" in w for w in log.warnings)


def test_plain_states_wraps_once(monkeypatch):
    _check(monkeypatch, {})
    slurm.plain_states(_Logger())
    wrapped = plugin.query_job_status
    slurm.plain_states(_Logger())
    assert plugin.query_job_status is wrapped
