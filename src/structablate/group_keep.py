"""A SLURM group job that stops keeps the outputs of its members that had finished.

A group job (several rules run by one ``sbatch``: :mod:`structablate.slurm`'s groups) runs
its members under a Snakemake of its own on the node. When the group job fails (cancelled,
out of time or memory, a member's error), the Snakemake that submitted it postprocesses
every member as failed and deletes all their outputs ("Removing output files of failed
job"), also those of members that had finished inside the group; a retry then runs every
member again. :func:`install` changes that in the submitting Snakemake:

* when a group job fails, a member counts as finished (:func:`not_finished_because` says why
  not) when every output is a plain file that exists, none still carries Snakemake's
  incomplete marker (the submitting Snakemake marks every output when it submits the group;
  the Snakemake on the node removes a member's markers once it has checked that member's
  outputs), each output was written after the group job was submitted and is not older
  than the member's newest input, and every member of the group it reads from counts as
  finished too (:func:`members_to_keep`). Such members are recorded as finished (Snakemake's
  metadata, as for a success; their files are left as they are, mtimes included); only the
  others are postprocessed as failed, which removes their outputs;
* a retry of that group job submits only the other members (the node's Snakemake is given
  only them as targets, and only their outputs are marked incomplete), and its
  postprocessing leaves the kept members alone;
* when every member had finished, the last one (in the order the group runs them) is redone
  all the same, so that the retry has something to run.

The Snakemake on the node does not write metadata (only the submitting one does, for
Snakemake 9.27.1's ``--mode remote``); the incomplete markers are what it leaves.
:func:`internals_missing` checks, when the run starts, every part of Snakemake this relies
on; where one is missing or changed, :func:`install` warns and leaves Snakemake's own
behaviour (all outputs of a failed group job removed) in place.
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["KEPT", "SKEW_S", "TESTED_SNAKEMAKE", "Outputs", "install", "internals_missing",
           "members_to_keep", "not_finished_because"]

TESTED_SNAKEMAKE = "9.27.1"
"""The Snakemake version this was verified against (tests/test_group_keep*.py)."""

SKEW_S = 60.0
"""How much earlier than the group job's submission (submitting host's clock) an output's
mtime (the file server's or node's clock) may be and still count as written by that job."""

KEPT: dict[Any, frozenset[Any]] = {}
"""Group job -> its members kept after a failed attempt (the submitting Snakemake's jobs)."""

_SUBMITTED: dict[Any, float] = {}
"""Group job -> when it was last submitted (``time.time()``, seconds)."""

_FLAGS_NOT_KEPT = ("pipe", "service", "nodelocal", "temp")
"""Output flags whose files a member may not leave behind when it finished."""

M = TypeVar("M", bound=Hashable)


@dataclass(frozen=True)
class Outputs:
    """What the submitting host sees of one member's files once its group job stopped.

    ``plain``: False when an output is not a plain local file (storage, directory, pipe,
    service, node-local or temporary). ``missing``: outputs that do not exist. ``marked``:
    outputs still marked incomplete. ``oldest_output_s``/``newest_input_s``: the oldest
    output's and the newest existing input's mtime (seconds since the epoch; None when
    there are none)."""

    plain: bool
    missing: tuple[str, ...]
    marked: tuple[str, ...]
    oldest_output_s: float | None
    newest_input_s: float | None


def not_finished_because(o: Outputs, submitted_s: float, skew_s: float = SKEW_S) -> str | None:
    """Why a member whose outputs are ``o`` does not count as finished by the group job
    submitted at ``submitted_s`` (seconds since the epoch); None when it does."""
    if not o.plain:
        return "an output is not a plain local file"
    if o.missing:
        return f"{o.missing[0]} is missing"
    if o.marked:
        return f"{o.marked[0]} is still marked incomplete"
    if o.oldest_output_s is None:
        return "it has no output"
    if o.oldest_output_s < submitted_s - skew_s:
        return "an output is older than the group job"
    if o.newest_input_s is not None and o.oldest_output_s < o.newest_input_s:
        return "an output is older than an input"
    return None


def members_to_keep(levels: Sequence[Sequence[M]], upstream: Mapping[M, Iterable[M]],
                    reasons: Mapping[M, str | None],
                    fixed: Iterable[M] = ()) -> tuple[set[M], dict[M, str]]:
    """The members of a failed group job to keep, and why each other one is redone.

    ``levels``: the members in the order the group runs them (each level after the one it
    reads from); ``upstream``: each member's members of the same group it reads from;
    ``reasons``: :func:`not_finished_because` of each member (missing: not finished). A
    member is kept when it finished and every member it reads from is kept. When all are
    kept, the last member (in ``levels``' order) not in ``fixed`` (members kept after an
    earlier attempt) is redone: the retry of the group job must run something."""
    keep: set[M] = set()
    redo: dict[M, str] = {}
    for level in levels:
        for m in level:
            why = reasons.get(m, "not known")
            if why is None:
                lost = [u for u in upstream.get(m, ()) if u not in keep]
                why = "a member it reads from is redone" if lost else None
            if why is None:
                keep.add(m)
            else:
                redo[m] = why
    fixed = set(fixed)
    last = [m for level in levels for m in level if m not in fixed]
    if not redo and last:
        keep.discard(last[-1])
        redo[last[-1]] = "every member had finished; the retry of the group job redoes this one"
    return keep, redo


# ------------------------------------------------------------------ Snakemake's side


def _is_coroutine(obj: Any, name: str) -> bool:
    return inspect.iscoroutinefunction(getattr(obj, name, None))


def internals_missing(group_cls: Any = None, job_cls: Any = None, dag_cls: Any = None,
                      persistence_cls: Any = None) -> list[str]:
    """Each part of Snakemake :func:`install` relies on that is missing or changed, in words
    (empty when all are there); by default Snakemake's own classes are checked."""
    if group_cls is None:
        import snakemake.api  # noqa: F401 - snakemake.dag imported first is circular
        from snakemake.dag import DAG
        from snakemake.jobs import GroupJob, Job
        from snakemake.persistence import PersistenceBase

        group_cls, job_cls, dag_cls, persistence_cls = GroupJob, Job, DAG, PersistenceBase
    out = []
    if not _is_coroutine(group_cls, "postprocess"):
        out.append("GroupJob.postprocess is not a coroutine function")
    else:
        params = inspect.signature(group_cls.postprocess).parameters
        if "error" not in params or not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            out.append("GroupJob.postprocess(self, error=False, **kwargs) changed its signature")
    try:
        init = list(inspect.signature(group_cls.__init__).parameters)[1:4]
    except (TypeError, ValueError):
        init = []
    if init != ["id", "jobs", "global_resources"]:
        out.append(f"GroupJob(id, jobs, global_resources) is now GroupJob({', '.join(init)})")
    for name in ("register", "get_target_spec"):
        if not callable(getattr(group_cls, name, None)):
            out.append(f"GroupJob.{name} is missing")
    topo = getattr(group_cls, "toposorted", None)
    if not isinstance(topo, property) or topo.fset is None:
        out.append("GroupJob.toposorted is no settable property")
    for name in ("jobs", "dag"):
        if not isinstance(getattr(group_cls, name, None), property):
            out.append(f"GroupJob.{name} is missing")
    for name in ("register", "get_target_spec"):
        if not callable(getattr(job_cls, name, None)):
            out.append(f"Job.{name} is missing")
    for name in ("input", "output"):
        if not hasattr(job_cls, name):
            out.append(f"Job.{name} is missing")
    if not callable(getattr(dag_cls, "handle_protected", None)):
        out.append("DAG.handle_protected is missing")
    if not isinstance(getattr(dag_cls, "dependencies", None), property):
        out.append("DAG.dependencies is missing")
    for name in ("incomplete", "finished"):
        if not _is_coroutine(persistence_cls, name):
            out.append(f"Persistence.{name} is not a coroutine function")
    if not callable(getattr(persistence_cls, "deactivate_cache", None)):
        out.append("Persistence.deactivate_cache is missing")
    return out


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


async def _outputs(job: Any, marked: Iterable[Any]) -> Outputs:
    """:class:`Outputs` of a Snakemake job, ``marked`` its outputs still marked incomplete."""
    from snakemake.io import is_flagged

    plain, missing, mtimes = True, [], []
    for f in job.output:
        if getattr(f, "is_storage", False) or any(is_flagged(f, x) for x in _FLAGS_NOT_KEPT):
            plain = False
        if os.path.isdir(f):
            plain = False
        t = _mtime(f) if os.path.isfile(f) else None
        if t is None:
            missing.append(str(f))
        else:
            mtimes.append(t)
    inputs = [t for t in (_mtime(f) for f in job.input) if t is not None]
    return Outputs(plain=plain, missing=tuple(missing), marked=tuple(str(f) for f in marked),
                   oldest_output_s=min(mtimes) if mtimes else None,
                   newest_input_s=max(inputs) if inputs else None)


def _name(job: Any) -> str:
    wc = ", ".join(f"{k}={v}" for k, v in sorted(job.wildcards_dict.items()))
    return f"{job.rule.name}({wc})"


def _subgroup(group: Any, leave_out: Iterable[Any]) -> Any:
    """A group job of the same id with ``group``'s members but ``leave_out``, in the same
    order (postprocessed by Snakemake's own code; it is submitted and scheduled nowhere)."""
    from snakemake.jobs import GroupJob

    out = set(leave_out)
    rest = frozenset(j for j in group.jobs if j not in out)
    sub = GroupJob(group.groupid, rest, group.global_resources)
    sub.toposorted = [[j for j in level if j in rest] for level in group.toposorted
                      if any(j in rest for j in level)]
    return sub


def install(logger: Any) -> bool:
    """Make the submitting Snakemake keep the finished members of a failed group job (the
    module's docstring); True when installed. Where Snakemake's internals differ from what
    this relies on (:func:`internals_missing`), warns through ``logger`` and leaves
    Snakemake's behaviour as it is (False)."""
    import snakemake
    from snakemake.jobs import GroupJob

    if getattr(GroupJob.postprocess, "_structablate_keeps", False):
        return True
    problems = internals_missing()
    if problems:
        logger.warning(
            f"Snakemake {snakemake.__version__} differs from {TESTED_SNAKEMAKE}, which "
            "structablate.group_keep was verified against: " + "; ".join(problems) + ". A "
            "group job that fails will have all its members' outputs removed, also those "
            "that had finished (Snakemake's own behaviour)")
        return False
    postprocess, register = GroupJob.postprocess, GroupJob.register

    def register_kept(self: Any, external_jobid: str | None = None) -> None:
        _SUBMITTED[self] = time.time()
        kept = KEPT.get(self)
        if not kept:
            return register(self, external_jobid=external_jobid)
        for job in self.jobs:
            if job not in kept:
                job.register(external_jobid=external_jobid)
        return None

    def get_target_spec(self: Any) -> list[Any]:
        kept = KEPT.get(self, frozenset())
        return [spec for job in self.jobs if job not in kept for spec in job.get_target_spec()]

    async def finished_now(self: Any, kept: frozenset[Any]) -> tuple[set[Any], dict[Any, str]]:
        submitted = _SUBMITTED.get(self)
        if submitted is None:
            return set(), {}
        persistence = self.dag.workflow.persistence
        persistence.deactivate_cache()  # the node's Snakemake removed markers since
        reasons: dict[Any, str | None] = {}
        for job in self.jobs:
            if job in kept:
                reasons[job] = None
                continue
            marked = await persistence.incomplete(job)
            reasons[job] = not_finished_because(await _outputs(job, marked), submitted)
        deps = self.dag.dependencies
        upstream = {j: [u for u in deps[j] if u in self.jobs] for j in self.jobs}
        keep, redo = members_to_keep(self.toposorted, upstream, reasons, kept)
        return keep - kept, redo

    async def postprocess_kept(self: Any, error: bool = False, **kwargs: Any) -> Any:
        kept = KEPT.get(self, frozenset())
        if error and not self.dag.workflow.execution_settings.keep_incomplete:
            try:
                newly, redo = await finished_now(self, kept)
            except Exception as err:  # noqa: BLE001 - fall back to Snakemake's own cleanup
                logger.warning(f"Could not tell which members of failed group job {self.jobid} "
                               f"had finished ({type(err).__name__}: {err}); Snakemake removes "
                               "the outputs of all that were not kept before")
                newly, redo = set(), {}
            if newly:
                persistence = self.dag.workflow.persistence
                for level in self.toposorted:
                    for job in level:
                        if job in newly:
                            await persistence.finished(job)
                            self.dag.handle_protected(job)
                kept = KEPT[self] = frozenset(kept | newly)
                logger.warning(
                    f"Group job {self.groupid} ({self.jobid}) failed: keeping the outputs of "
                    f"its {len(newly)} member(s) that had finished: "
                    + ", ".join(sorted(_name(j) for j in newly))
                    + f"; {len(redo)} redone: "
                    + "; ".join(sorted(f"{_name(j)}: {why}" for j, why in redo.items())))
        if not kept:
            return await postprocess(self, error=error, **kwargs)
        return await postprocess(_subgroup(self, kept), error=error, **kwargs)

    postprocess_kept._structablate_keeps = True  # type: ignore[attr-defined]
    GroupJob.postprocess = postprocess_kept
    GroupJob.register = register_kept
    GroupJob.get_target_spec = get_target_spec
    return True
