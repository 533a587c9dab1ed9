"""A dry run with the SLURM profile prints what each submission would book.

``snakemake --profile profiles/slurm -n`` runs Snakemake's ``dryrun`` executor, which is a
local one: no job gets its SLURM group (structablate.plan.groups.slurm_group gives none in a
local run), so the dry run lists jobs, not the submissions a real run makes. :func:`install`
makes the dry run of a run whose executor is SLURM print, after its job list, one table with
a row per submission the real run would make for the jobs that need to run: the group job
(or the single job), its members, partition, CPUs, memory, runtime and GPUs
(:func:`structablate.slurm.submissions_table` of :func:`structablate.slurm.submission_units`,
the same units tests/slurm_plan.py writes for a real run stopped before its first submission).

How: when the dry run's executor is created, the DAG is final and no job has run. The jobs
that need to run are then grouped as the Snakemake that submits groups them: Snakemake's own
``DAG.update_groups`` while the workflow counts as non-local (the executor plugin seen with
``non_local_exec``; still a dry run), so every rule's ``group:`` and the profile's
``group-components`` apply, each group job's resources are Snakemake's for a submitted group
(layers summed as for a cluster, not as for a local run) and submit-host jobs are told apart
as in the real run. The units are read, and the jobs and the DAG are put back as the dry run
had them (no groups) before it lists a job. The table is printed when the dry-run executor
shuts down, after the last job listed. A real run never creates the dry-run executor, so
nothing changes there; a local dry run (``--cores N -n``) installs nothing.

:func:`internals_missing` checks, when the workflow is read, every part of Snakemake this
relies on; where one is missing or changed, :func:`install` warns and the dry run prints no
table (``python tests/slurm_plan.py`` and ``python -m structablate.slurm … --submissions`` still
print it).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from structablate.slurm import read_plugin_partitions, submission_units, submissions_table

__all__ = ["HEADING", "TESTED_SNAKEMAKE", "install", "internals_missing", "is_slurm",
           "render"]

TESTED_SNAKEMAKE = "9.27.1"
"""The Snakemake version this was verified against (tests/test_slurm_dry_run.py)."""

HEADING = "SLURM submissions of this run"
"""The line above the table."""

_PLANNED: dict[int, tuple[Any, str | None]] = {}
"""``id(workflow)`` -> (the workflow, its partition file or None), for each workflow
:func:`install` was called for with the SLURM executor (a Workflow is not hashable)."""

_UNITS: dict[int, list[dict[str, Any]]] = {}
"""``id(executor)`` of a dry-run executor -> the submission units read when it was
created."""


def _planned(workflow: Any) -> tuple[bool, str | None]:
    """Whether :func:`install` was called for ``workflow``, and its partition file."""
    found = _PLANNED.get(id(workflow))
    if found is None or found[0] is not workflow:
        return False, None
    return True, found[1]


def is_slurm(executor_settings: Any) -> bool:
    """Whether ``executor_settings`` (those the command line built for the executor it names)
    belong to snakemake-executor-plugin-slurm."""
    module = type(executor_settings).__module__ if executor_settings is not None else ""
    return module.split(".")[0] == "snakemake_executor_plugin_slurm"


def internals_missing(executor_cls: Any = None, dag_cls: Any = None, job_cls: Any = None,
                      workflow_cls: Any = None, settings_cls: Any = None) -> list[str]:
    """Each part of Snakemake :func:`install` relies on that is missing or changed, in words
    (empty when all are there); by default Snakemake's own classes are checked."""
    if executor_cls is None:
        import snakemake.api  # noqa: F401 - snakemake.dag imported first is circular
        from snakemake.dag import DAG
        from snakemake.executors.dryrun import Executor
        from snakemake.jobs import Job
        from snakemake.workflow import Workflow
        from snakemake_interface_executor_plugins.settings import CommonSettings

        executor_cls, dag_cls, job_cls, workflow_cls, settings_cls = (
            Executor, DAG, Job, Workflow, CommonSettings)
    out = []
    try:
        init = list(inspect.signature(executor_cls.__init__).parameters)[1:3]
    except (TypeError, ValueError):
        init = []
    if init != ["workflow", "logger"]:
        out.append(f"the dry-run Executor(workflow, logger) is now Executor({', '.join(init)})")
    if not callable(getattr(executor_cls, "shutdown", None)):
        out.append("the dry-run Executor.shutdown is missing")
    for name in ("update_groups", "needrun_jobs", "get_job_group"):
        if not callable(getattr(dag_cls, name, None)):
            out.append(f"DAG.{name} is missing")
    group = getattr(job_cls, "group", None)
    if not isinstance(group, property) or group.fset is None:
        out.append("Job.group is no settable property")
    for name in ("local_exec", "executor_plugin"):
        if not isinstance(getattr(workflow_cls, name, None), property):
            out.append(f"Workflow.{name} is missing")
    if not (dataclasses.is_dataclass(settings_cls)
            and "non_local_exec" in {f.name for f in dataclasses.fields(settings_cls)}):
        out.append("CommonSettings.non_local_exec is missing")
    return out


class _Submitting:
    """The dry run's executor plugin as the submitting Snakemake sees its own: not local
    (``non_local_exec``), everything else (a dry run included) as it is."""

    def __init__(self, plugin: Any) -> None:
        self._plugin = plugin
        self.common_settings = dataclasses.replace(plugin.common_settings, non_local_exec=True)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._plugin, name)


def submitted_units(workflow: Any, partition_config: str | None) -> list[dict[str, Any]]:
    """The submission units (:func:`structablate.slurm.submission_units`) a SLURM run of
    ``workflow``'s DAG would submit, read in its dry run before any job is listed (the module
    docstring); the jobs and the DAG are left as they were."""
    dag = workflow.dag
    jobs = list(dag.needrun_jobs())
    plugin = workflow._executor_plugin
    workflow._executor_plugin = _Submitting(plugin)
    try:
        for job in jobs:  # each job's group again, as the submitting Snakemake has it
            job.group = None
        dag.update_groups()
        return submission_units(dag, read_plugin_partitions(partition_config))
    finally:
        workflow._executor_plugin = plugin
        for job in jobs:
            job.group = None
        dag.update_groups()


def render(units: list[dict[str, Any]]) -> str:
    """The dry run's table: :data:`HEADING`, what it shows, and
    :func:`structablate.slurm.submissions_table` of ``units``."""
    submitted = [u for u in units if not u["local"]]
    local = sum(len(u["jobs"]) if u["group"] else 1 for u in units if u["local"])
    return (f"{HEADING}: {len(submitted)} sbatch submissions, booked at attempt 1 on the "
            f"profile's partitions ({local} job(s) run on the submit host and book nothing):"
            "\n" + "\n".join(submissions_table(units)) + "\n")


def install(workflow: Any, logger: Any, executor_settings: Any) -> bool:
    """Make the dry run of ``workflow`` print its SLURM submissions after the job list (the
    module docstring), when ``executor_settings`` (the command line's, for the executor it
    names: structablate.plan.resources.planned_executor_settings) are the SLURM plugin's;
    True when installed. Nothing in a job's own Snakemake or for another executor (False).
    Where Snakemake's internals differ from what this relies on (:func:`internals_missing`),
    warns through ``logger`` and installs nothing (False)."""
    if (not is_slurm(executor_settings) or getattr(workflow, "remote_exec", False)
            or getattr(workflow, "subprocess_exec", False)):
        return False
    import snakemake
    from snakemake.executors.dryrun import Executor

    problems = internals_missing()
    if problems:
        logger.warning(
            f"Snakemake {snakemake.__version__} differs from {TESTED_SNAKEMAKE}, which "
            "structablate.slurm_dry_run was verified against: " + "; ".join(problems) + ". The "
            "dry run lists jobs only, not what each SLURM submission books (python "
            "tests/slurm_plan.py plan.json … then python -m structablate.slurm plan.json "
            "--submissions prints that)")
        return False
    _PLANNED[id(workflow)] = (workflow, getattr(executor_settings, "partition_config", None))
    if getattr(Executor.__init__, "_structablate_submissions", False):
        return True
    init, shutdown = Executor.__init__, Executor.shutdown

    def init_reading_submissions(self: Any, workflow: Any, *args: Any, **kwargs: Any) -> None:
        init(self, workflow, *args, **kwargs)
        planned, partition_config = _planned(workflow)
        if not planned:
            return
        try:
            _UNITS[id(self)] = submitted_units(workflow, partition_config)
        except Exception as err:  # noqa: BLE001 - the dry run goes on and lists the jobs
            logger.warning(f"The dry run could not read what each SLURM submission books "
                           f"({type(err).__name__}: {err}); it lists the jobs only")

    def shutdown_with_submissions(self: Any) -> None:
        shutdown(self)
        units = _UNITS.pop(id(self), None)
        if units:
            logger.info("\n" + render(units))

    init_reading_submissions._structablate_submissions = True  # type: ignore[attr-defined]
    Executor.__init__ = init_reading_submissions
    Executor.shutdown = shutdown_with_submissions
    return True

