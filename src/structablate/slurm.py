"""What a SLURM submission would be refused for, found while the run is planned.

``snakemake-executor-plugin-slurm`` checks each job's ``slurm_extra`` resource only when it
submits that job (``validate_slurm_extra``): an option the plugin sets itself (``--qos``,
``--time``, ``--gres``, ``--mem`` …) there fails every submission, after the plan was shown
and accepted. :func:`slurm_extra_problems` applies the plugin's own list of forbidden options
(:func:`forbidden_options`) to the resource strings a profile or the command line gives,
so the workflow refuses them before any job (rules/common.smk), naming the key and the
resource the plugin offers instead.

Which group job each job joins is plan work, not a submission's: :mod:`structablate.plan.groups`.

:func:`choose_status_command` finds, when a SLURM run starts, a status command that works on
this cluster (the plugin polls ``sacct`` whenever the binary exists, and on a cluster without
accounting every poll fails, at debug level only: Snakemake never learns that a job ended);
:func:`loud_status_polls` makes a failing poll a warning. :func:`plain_states` hands the plugin
each job's state as the bare name it compares with (``sacct`` prints ``CANCELLED by 0`` for a
cancelled job and, in a cut column, ``CANCELLED+``; the plugin matches only ``CANCELLED`` and
would wait forever), and reports a job still ``PREEMPTED`` long after SLURM would have
requeued it as ended.

:func:`submission_units` reads what a planned run submits (each job or group job of the jobs
that need to run, with its threads, resources and partition) from Snakemake's DAG;
:func:`submissions_table` prints what each submission books. tests/slurm_plan.py writes the
units of a real run stopped before its first submission, and a dry run with the SLURM profile
prints the table after its job list (:mod:`structablate.slurm_dry_run`).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["PLUGIN_RESOURCE", "StatusChoice", "booked_gpu_hours", "check_status_command",
           "choose_status_command", "forbidden_options", "gpu_hours_table", "job_fields",
           "loud_status_polls", "partition_of", "plain_state", "plain_states",
           "read_plugin_partitions", "slurm_extra_problems", "submission_units",
           "submissions_table"]

PLUGIN_RESOURCE: dict[str, str] = {
    "quality of service": "the `qos` resource (default-resources: {qos: NAME}) or the "
                          "profile's `slurm-qos: NAME`",
    "runtime/time limit": "the `runtime` resource (minutes)",
    "memory": "the `mem_mb` resource",
    "memory per CPU": "the `mem_mb_per_cpu` resource",
    "account": "the `slurm_account` resource",
    "partition": "profiles/slurm/partitions.yaml (or the `slurm_partition` resource)",
    "node constraints": "the `constraint` resource",
    "GPU allocation": "the `gpu` and `gpu_model` resources",
    "generic resources (GRES)": "the `gres` resource",
    "CPUs per task": "the rule's threads (or the `cpus_per_task` resource)",
    "CPUs per GPU": "the `cpus_per_gpu` resource",
    "number of nodes": "the `nodes` resource",
    "cluster specification": "the `clusters` resource",
}
"""What to use instead of each option the plugin refuses in ``slurm_extra`` (by the plugin's
own name for the option)."""


def forbidden_options() -> dict[str, str]:
    """The plugin's patterns of options it refuses in ``slurm_extra`` (regex -> name), or an
    empty mapping when the plugin is not installed (nothing is submitted to SLURM then)."""
    try:
        from snakemake_executor_plugin_slurm.validation import get_forbidden_slurm_options
    except ImportError:
        return {}
    return dict(get_forbidden_slurm_options())


def slurm_extra_problems(extras: Mapping[str, str]) -> list[str]:
    """``key: why`` for each ``slurm_extra`` text (``extras``: where it is set, e.g.
    ``default-resources: slurm_extra`` -> the text as written) holding an option the plugin
    would refuse at submission, with the resource to use instead."""
    patterns = forbidden_options()
    out = []
    for key, text in extras.items():
        for pattern, name in patterns.items():
            if re.search(pattern, str(text)):
                instead = PLUGIN_RESOURCE.get(name, "the plugin's own resource")
                out.append(f"{key}: {text!s} sets the {name}, which "
                           "snakemake-executor-plugin-slurm refuses in slurm_extra on every "
                           f"submission; use {instead}")
    return out


# ------------------------------------------------------------------ job status polling

Runner = Callable[[list[str]], tuple[int, str, str]]
"""Runs a command; returns (exit status, stdout, stderr)."""

PROBE_NAME = "structablate-status-check"
"""The job name the probes ask about (no job has it: an empty answer is a working one)."""


def _run(cmd: list[str]) -> tuple[int, str, str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return 127, "", str(err)
    return proc.returncode, proc.stdout, proc.stderr


def min_job_age(run: Runner = _run) -> int | None:
    """``MinJobAge`` of the cluster in seconds (``scontrol show config``): how long the
    controller keeps an ended job, so how long ``squeue`` can still report how it ended; None
    when it cannot be read."""
    rc, out, _ = run(["scontrol", "show", "config"])
    if rc != 0:
        return None
    m = re.search(r"^\s*MinJobAge\s*=\s*(\d+)\s*([a-zA-Z]*)", out, re.M)
    if not m:
        return None
    return int(m.group(1)) * (3600 if m.group(2).lower() in ("h", "hour", "hours") else 1)


@dataclass(frozen=True)
class StatusChoice:
    """The status command a run uses (``sacct`` or ``squeue``; None: none works, the run must
    not start) and why, in one line for the log (or the refusal)."""

    command: str | None
    why: str
    min_job_age: int | None = None


def _probe(kind: str) -> list[str]:
    """The plugin's own status query for ``kind`` (``sacct``/``squeue``), for a job name no
    job has."""
    from snakemake_executor_plugin_slurm.job_status_query import (
        query_job_status_sacct,
        query_job_status_squeue,
    )

    make = query_job_status_sacct if kind == "sacct" else query_job_status_squeue
    return shlex.split(make(PROBE_NAME))


def choose_status_command(configured: str, threshold_s: int,
                          run: Runner = _run) -> StatusChoice:
    """The status command that works on this cluster, preferring ``configured`` (the plugin's
    ``status_command``: ``sacct`` whenever the binary exists). ``sacct`` works when the
    plugin's own query answers (it fails where SLURM has no accounting storage); ``squeue``
    works when its query answers and ``MinJobAge`` is at least ``threshold_s`` seconds (the
    plugin's own threshold: three times its first status interval; below it an ended job can
    vanish before the next poll, and the plugin itself goes back to ``sacct``)."""
    rc, _, err = run(_probe("sacct"))
    sacct = f"sacct fails here ({err.strip() or f'exit {rc}'})" if rc != 0 else ""
    age = min_job_age(run)
    rc, _, err = run(_probe("squeue"))
    if rc != 0:
        squeue = f"squeue fails here ({err.strip() or f'exit {rc}'})"
    elif age is None or age < threshold_s:
        squeue = (f"squeue would miss jobs that end: MinJobAge is {age} s, below {threshold_s} s "
                  "(scontrol show config)")
    else:
        squeue = ""
    if configured == "squeue" and not squeue:
        return StatusChoice("squeue", f"job status from squeue (MinJobAge {age} s)", age)
    if not sacct:
        why = "job status from sacct" + (f" ({squeue})" if configured == "squeue" else "")
        return StatusChoice("sacct", why)
    if not squeue:
        return StatusChoice("squeue", f"job status from squeue (MinJobAge {age} s): {sacct}",
                            age)
    return StatusChoice(None, "no SLURM status command works on this cluster, so the run would "
                        f"never learn that a job ended: {sacct}; {squeue}. Ask the cluster's "
                        "administrators for accounting (slurmdbd) or a MinJobAge of at least "
                        f"{threshold_s} s (docs/cluster.md, section 2)")


def check_status_command(workflow: Any, logger: Any, run: Runner = _run) -> StatusChoice | None:
    """At the start of a SLURM run (onstart of the Snakemake that submits): set the executor's
    ``status_command`` to one that works (:func:`choose_status_command`), say which at normal
    verbosity, and make failing polls warnings (:func:`loud_status_polls`). Raises
    :class:`~structablate.errors.ConfigError` when none works. Nothing (None) in a run that is
    not submitted to SLURM."""
    from structablate.errors import ConfigError

    settings = workflow.executor_settings
    if (getattr(workflow, "remote_exec", False) or getattr(workflow, "subprocess_exec", False)
            or not hasattr(settings, "status_command")):
        return None
    threshold = 3 * int(getattr(settings, "init_seconds_before_status_checks", None) or 40)
    choice = choose_status_command(settings.status_command or "sacct", threshold, run)
    if choice.command is None:
        raise ConfigError(choice.why)
    settings.status_command = choice.command
    if choice.command == "squeue":
        # the plugin reads MinJobAge again before every poll (`scontrol show config`, 10 s
        # limit) and goes back to sacct when that read fails, as on a busy controller: it
        # gets the value read here instead
        import snakemake_executor_plugin_slurm as plugin

        age = choice.min_job_age
        plugin.get_min_job_age = lambda: age
    logger.info(f"SLURM: {choice.why}")
    loud_status_polls(logger)
    plain_states(logger)
    record_failures()
    return choice


def loud_status_polls(logger: Any, every_s: float = 60.0) -> None:
    """Make a failing status poll of snakemake-executor-plugin-slurm a warning (the plugin logs
    it at debug level only, so a run whose polls all fail waits silently): the plugin's
    ``query_job_status`` gets a logger whose ``debug`` warns, the same message at most once
    every ``every_s`` seconds."""
    import snakemake_executor_plugin_slurm as plugin

    original = plugin.query_job_status
    if getattr(original, "_structablate_loud", False):
        return
    last: dict[str, float] = {}

    class _Loud:
        def __init__(self, command: str) -> None:
            self.command = command

        def debug(self, msg: str) -> None:
            now = time.monotonic()
            if now - last.get(msg, -every_s) >= every_s:
                last[msg] = now
                logger.warning(f"SLURM status poll failed ({self.command.split()[0]}): {msg}")

        def __getattr__(self, name: str) -> Any:
            return getattr(logger, name)

    async def query_job_status(command: str, _logger: Any) -> Any:
        return await original(command, _Loud(command))

    query_job_status._structablate_loud = True  # type: ignore[attr-defined]
    plugin.query_job_status = query_job_status


SLURM_STATES = (
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "COMPLETING", "CONFIGURING", "DEADLINE", "FAILED",
    "NODE_FAIL", "OUT_OF_MEMORY", "PENDING", "PREEMPTED", "REQUEUED", "REQUEUE_FED",
    "REQUEUE_HOLD", "RESIZING", "RESV_DEL_HOLD", "REVOKED", "RUNNING", "SIGNALING",
    "SPECIAL_EXIT", "STAGE_OUT", "STOPPED", "SUSPENDED", "TIMEOUT")
"""Every job state SLURM 22.05 to 24.x prints (``man sacct``, JOB STATE CODES)."""

PREEMPTED_FINAL_S = 300.0
"""How long a job may show ``PREEMPTED`` before it counts as ended: with ``PreemptMode=REQUEUE``
(and the profile's ``--requeue``) SLURM puts a preempted job back in the queue at once
(``PENDING``/``REQUEUED``), with ``PreemptMode=CANCEL`` it stays ``PREEMPTED`` for good."""


def plain_state(text: str) -> str:
    """The bare state name in what ``sacct`` or ``squeue`` print for a job: ``CANCELLED by 0``
    (sacct names who cancelled) -> ``CANCELLED``; a name cut to its column with ``+``
    (``CANCELLED+``, ``OUT_OF_ME+``) -> the one state it starts; anything else unchanged."""
    word = text.strip().split(" ", 1)[0] if text.strip() else ""
    if word.endswith("+"):
        stem = word.rstrip("+")
        if stem in SLURM_STATES:
            return stem
        matches = [s for s in SLURM_STATES if s.startswith(stem)]
        if len(matches) == 1:
            return matches[0]
        return stem
    return word


def plain_states(logger: Any, preempted_final_s: float = PREEMPTED_FINAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
    """Make snakemake-executor-plugin-slurm see each job's state as a bare name
    (:func:`plain_state`): the plugin compares states by equality, so ``CANCELLED by 0`` (how
    ``sacct`` reports any cancelled job) matched none of its failure states and the run
    waited forever. A job that still shows ``PREEMPTED`` ``preempted_final_s`` seconds after it
    was first seen so was not requeued (``PreemptMode=CANCEL``): it is handed on as
    ``CANCELLED``, with a warning, so Snakemake retries it (the plugin would wait on it
    forever)."""
    import snakemake_executor_plugin_slurm as plugin

    original = plugin.query_job_status
    if getattr(original, "_structablate_plain", False):
        return
    preempted: dict[str, float] = {}

    async def query_job_status(command: str, poll_logger: Any) -> Any:
        states, duration = await original(command, poll_logger)
        if states is None:
            return states, duration
        now = clock()
        plain = {}
        for job, state in states.items():
            bare = plain_state(state)
            if bare == "PREEMPTED":
                since = preempted.setdefault(job, now)
                if now - since >= preempted_final_s:
                    logger.warning(f"SLURM job {job} is still PREEMPTED {now - since:.0f} s "
                                   "after it was preempted: SLURM did not requeue it, so it "
                                   "counts as cancelled (and is retried)")
                    bare = "CANCELLED"
            else:
                preempted.pop(job, None)
            plain[job] = bare
        return plain, duration

    query_job_status._structablate_plain = True  # type: ignore[attr-defined]
    plugin.query_job_status = query_job_status


FAILURES: dict[tuple, dict[str, int]] = {}
"""How SLURM ended each failed job of this run: ``(rule, (wildcard, value), …)`` -> SLURM
state -> count (``OUT_OF_MEMORY``, ``TIMEOUT``, ``CANCELLED`` …), filled by
:func:`record_failures`; structablate.plan.resources grows a retry's request from it."""

_STATE = re.compile(r"SLURM status is: '([A-Z_]+)'")


def job_keys(job: Any) -> list[tuple]:
    """``(rule, (wildcard, value), …)`` of a job, of every member of a group job."""
    members = list(job.jobs) if hasattr(job, "jobs") and job.is_group() else [job]
    return [(j.rule.name, *sorted((str(k), str(v)) for k, v in j.wildcards_dict.items()))
            for j in members]


def record_failures() -> None:
    """Record in :data:`FAILURES` the SLURM state of every job the plugin reports failed (its
    message says ``SLURM status is: 'STATE'``), before Snakemake retries it."""
    import snakemake_executor_plugin_slurm as plugin

    original = plugin.Executor.report_job_error
    if getattr(original, "_structablate_records", False):
        return

    def report_job_error(self: Any, job_info: Any, msg: str | None = None,
                         **kwargs: Any) -> Any:
        m = _STATE.search(msg or "")
        if m:
            for key in job_keys(job_info.job):
                counts = FAILURES.setdefault(key, {})
                counts[m.group(1)] = counts.get(m.group(1), 0) + 1
        return original(self, job_info, msg=msg, **kwargs)

    report_job_error._structablate_records = True  # type: ignore[attr-defined]
    plugin.Executor.report_job_error = report_job_error


def booked_gpu_hours(units: list[dict[str, Any]]) -> float:
    """GPU-hours a plan books at attempt 1: for every submitted job or group job
    (tests/slurm_plan.py's units; ``local`` ones run on the submit host), its ``gpu`` count
    times its ``runtime`` (minutes) / 60."""
    return sum(int(u["resources"].get("gpu", 0) or 0) * u["resources"]["runtime"] / 60
               for u in units if not u["local"])


def gpu_hours_by_unit(units: list[dict[str, Any]]) -> dict[str, float]:
    """:func:`booked_gpu_hours` split by rule (a group job by its group's kind, e.g.
    ``embed``)."""
    out: dict[str, float] = {}
    for u in units:
        gpus = int(u["resources"].get("gpu", 0) or 0)
        if u["local"] or not gpus:
            continue
        name = u["group"].split("-")[0] if u["group"] else u["rule"]
        out[name] = out.get(name, 0.0) + gpus * u["resources"]["runtime"] / 60
    return out


def gpu_hours_table(units: list[dict[str, Any]]) -> list[str]:
    """The GPU-hours a plan books at attempt 1 as a Markdown table: one row per group kind
    (``embed group``) or ungrouped rule (:func:`gpu_hours_by_unit`'s keys, named as the plan
    names them, so this module compares no rule name), with its submissions, then the total
    (:func:`booked_gpu_hours`) and the plan's submissions. What docs/cluster.md prints for
    config/paper.yaml (tests/test_profiles.py holds it to the plan)."""
    hours = gpu_hours_by_unit(units)
    count: dict[str, int] = {}
    grouped: set[str] = set()
    for u in units:
        if not u["local"] and int(u["resources"].get("gpu", 0) or 0):
            name = u["group"].split("-")[0] if u["group"] else u["rule"]
            count[name] = count.get(name, 0) + 1
            if u["group"]:
                grouped.add(name)
    rows = ["| GPU work | GPU submissions | GPU-hours booked |", "| --- | ---: | ---: |"]
    for name in sorted(hours, key=lambda n: (n not in grouped, n)):
        label = f"`{name}` group jobs" if name in grouped else f"`{name}`"
        rows.append(f"| {label} | {count[name]} | {hours[name]:.1f} |")
    submitted = sum(1 for u in units if not u["local"])
    rows.append(f"| **total** (of {submitted} submissions) | {sum(count.values())} | "
                f"{booked_gpu_hours(units):.1f} |")
    return rows


def plain_resources(resources: Mapping[str, Any]) -> dict[str, Any]:
    """A job's evaluated resources as JSON values (a number as it is, anything else as its
    text)."""
    return {k: (v if isinstance(v, int | float) else str(v)) for k, v in resources.items()}


def job_fields(job: Any) -> dict[str, Any]:
    """What :func:`submission_units` records of one Snakemake job: its rule, wildcards,
    threads and evaluated resources."""
    return {"rule": job.rule.name, "wildcards": dict(job.wildcards_dict),
            "threads": job.threads, "resources": plain_resources(job.resources)}


class _Quiet:
    """A logger for the plugin's partition choice that says nothing (it logs each choice at
    info level)."""

    def debug(self, *args: Any, **kwargs: Any) -> None:
        pass

    info = warning = error = debug


def read_plugin_partitions(path: str | None) -> list[Any] | None:
    """The partitions of ``path`` (the profile's ``slurm-partition-config``) as
    snakemake-executor-plugin-slurm reads them for its choice (None without a file or without
    the plugin). The file's limits were checked when the workflow was read
    (structablate.plan.resources.read_partitions)."""
    if not path:
        return None
    try:
        from snakemake_executor_plugin_slurm.partitions import read_partition_file
    except ImportError:
        return None
    from pathlib import Path

    return read_partition_file(Path(path))


def partition_of(job: Any, partitions: list[Any] | None) -> str | None:
    """The partition the plugin submits ``job`` (a Snakemake job or group job) to: its
    ``slurm_partition`` resource when set, else the best fit among ``partitions``
    (:func:`read_plugin_partitions`; the plugin's own ``get_best_partition``, which scores each
    partition by the job's memory, runtime, threads and GPUs); None when neither names one,
    so SLURM's default partition takes it (the plugin asks ``sinfo`` which that is)."""
    chosen = job.resources.get("slurm_partition")
    if chosen:
        return str(chosen)
    if not partitions:
        return None
    from snakemake_executor_plugin_slurm.partitions import get_best_partition

    return get_best_partition(partitions, job, _Quiet())


def submission_units(dag: Any, partitions: list[Any] | None = None,
                     describe: Callable[[Any], dict[str, Any]] = job_fields
                     ) -> list[dict[str, Any]]:
    """Every submission of the jobs of ``dag`` (Snakemake's DAG, its groups formed) that need
    to run, in job id order: a group job as ``{"group": id, "local", "partition", "threads"
    (its ``_cores``), "resources" (Snakemake's booking of the group), "jobs": [describe(member)
    …]}``, a single job as ``{"group": None, "local", "partition", **describe(job)}``.
    ``local``: it runs on the submit host (no partition then); ``partition``:
    :func:`partition_of` with ``partitions``."""
    units: list[dict[str, Any]] = []
    seen: set[int] = set()
    for job in sorted(dag.needrun_jobs(), key=lambda j: j.jobid):
        group = dag.get_job_group(job)
        unit = job if group is None else group
        if id(unit) in seen:
            continue
        seen.add(id(unit))
        local = bool(unit.is_local)
        where = {"local": local, "partition": None if local else partition_of(unit, partitions)}
        if group is None:
            units.append({"group": None, **where, **describe(job)})
        else:
            units.append({"group": group.groupid, **where,
                          "threads": group.resources["_cores"],
                          "resources": plain_resources(group.resources),
                          "jobs": [describe(j) for j in sorted(group.jobs,
                                                              key=lambda j: j.jobid)]})
    return units


SUBMISSIONS_HEADER = "| submission | jobs | partition | CPUs | memory MB | runtime min | GPUs |"
"""The first line of :func:`submissions_table`."""


def submissions_table(units: list[dict[str, Any]]) -> list[str]:
    """What each submission of a plan books at attempt 1 on the configured partitions, as a
    Markdown table: the group job (its id, its members' rules and count) or the single job
    (its rule and wildcards), the partition it goes to (``default``: SLURM's default
    partition), its CPUs (the fitted threads), memory (MB), runtime (minutes) and GPUs;
    submit-host jobs are left out (they book nothing)."""
    rows = [SUBMISSIONS_HEADER, "| --- | ---: | --- | ---: | ---: | ---: | ---: |"]
    for u in units:
        if u["local"]:
            continue
        if u["group"]:
            rules = sorted({j["rule"] for j in u["jobs"]})
            name, jobs = f"group {u['group']} ({', '.join(rules)})", len(u["jobs"])
        else:
            wc = ",".join(f"{k}={v}" for k, v in sorted(u["wildcards"].items()))
            name, jobs = f"{u['rule']}({wc})", 1
        r = u["resources"]
        rows.append(f"| {name} | {jobs} | {u.get('partition') or 'default'} | {u['threads']} | "
                    f"{r['mem_mb']} | {r['runtime']} | {int(r.get('gpu', 0) or 0)} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python -m structablate.slurm PLAN.json [--submissions]``: the GPU-hours a plan
    written by tests/slurm_plan.py books at attempt 1 (:func:`gpu_hours_table`), and with
    ``--submissions`` what each submission books (:func:`submissions_table`)."""
    import json
    import sys

    args = sys.argv[1:] if argv is None else argv
    paths = [a for a in args if not a.startswith("--")]
    if len(paths) != 1 or set(args) - {*paths, "--submissions"}:
        print("usage: python -m structablate.slurm PLAN.json [--submissions] (PLAN.json: "
              "written by tests/slurm_plan.py)", file=sys.stderr)
        return 2
    try:
        units = json.loads(open(paths[0], encoding="utf-8").read())["units"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"error: {paths[0]}: not a plan written by tests/slurm_plan.py ({err})",
              file=sys.stderr)
        return 2
    if "--submissions" in args:
        print("\n".join(submissions_table(units)) + "\n")
    print("\n".join(gpu_hours_table(units)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
