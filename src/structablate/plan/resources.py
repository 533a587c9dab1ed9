"""What each rule's job asks a scheduler for: threads, memory and runtime from the work it is
given, capped by the partitions it can run in.

A job's request starts from :func:`need`: named functions of what the job is given (the
corpus's size, the embedding or reranking model's size, the device) and the rates measured on
the bundled default (docs/cluster.md, "Sizes", gives the measurements and the commands). A
:class:`Sizer` then fits it to the partitions of the SLURM profile (``partitions.yaml``:
threads ≤ CPUs per node, memory ≤ node memory, runtime ≤ MaxTime): threads are capped (a job
wanting 8 threads gets 2 on 2-CPU nodes), while memory and runtime below what the job needs
are refused at plan time, naming the rule, its request and the partitions. A retry grows
only what the failure showed: a job SLURM ended ``OUT_OF_MEMORY`` asks twice the memory, one
ended ``TIMEOUT`` twice the runtime; any other failure (a cancelled job, an error) asks the
same again (:data:`structablate.slurm.FAILURES`, handed to :meth:`Sizer.for_workflow`, holds
what SLURM reported).

Units are Snakemake's: ``mem_mb`` in megabytes (10^6 bytes), ``runtime`` in minutes, ``gpu`` a
count of GPUs. A local run has no partitions: only its ``--cores`` caps the threads.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from structablate.mechanisms import LLM_STAGE_JOBS
from structablate.plan.rules import rule as table_entry
from structablate.settings import context_tokens, is_gpu, served_model
from structablate.user_files import ByoInputError, input_files

if TYPE_CHECKING:
    from structablate.plan import Plan

INF = math.inf

# ------------------------------------------------------------------ partitions


@dataclass(frozen=True)
class Partition:
    """One SLURM partition's limits as ``partitions.yaml`` states them (the layout of
    snakemake-executor-plugin-slurm's partition file): CPUs per node (``max_threads``),
    memory per node in MB (``max_mem_mb``), MaxTime in minutes (``max_runtime``), GPUs per
    node (``max_gpu``) and CPUs per GPU (``max_cpus_per_gpu``); INF where it states none."""

    name: str
    threads: float = INF
    mem_mb: float = INF
    runtime: float = INF
    gpus: int = 0
    cpus_per_gpu: float = INF

    def describe(self) -> str:
        def f(v: float, unit: str) -> str:
            return "any" if v == INF else f"{int(v)}{unit}"
        return (f"{self.name} ({f(self.threads, '')} CPUs, {f(self.mem_mb, ' MB')}, "
                f"{f(self.runtime, ' min')}, {self.gpus} GPUs)")


PARTITION_KEYS: dict[str, str] = {
    "max_runtime": "runtime",
    "max_mem_mb": "megabytes",
    "max_mem_mb_per_cpu": "megabytes",
    "max_cpus_per_task": "count",
    "max_threads": "count",
    "max_nodes": "count",
    "max_tasks": "count",
    "max_tasks_per_node": "count",
    "max_gpu": "count0",
    "available_gpu_models": "names",
    "max_cpus_per_gpu": "count",
    "supports_mpi": "bool",
    "max_mpi_tasks": "count",
    "available_constraints": "names",
    "slurm_cluster": "name",
    "cluster": "name",
    "clusters": "name",
}
"""Every key a partition of ``partitions.yaml`` may hold (snakemake-executor-plugin-slurm
2.8's ``PartitionLimits`` and its cluster keys) -> the kind of value it takes
(:data:`ACCEPTED`)."""

ACCEPTED: dict[str, str] = {
    "runtime": "minutes as a number (2880), or a SLURM time (2-00:00:00, 48:00:00, 2-0) or "
               "Snakemake's (2d, 48h, 90m)",
    "megabytes": "a whole number of megabytes (256000 for 256 GB; no unit)",
    "count": "a whole number, 1 or more",
    "count0": "a whole number, 0 or more",
    "names": "a list of names ([h200])",
    "name": "a name",
    "bool": "true or false",
}
"""What each kind of :data:`PARTITION_KEYS` value accepts, as the refusal says it."""

_SNAKEMAKE_TIME = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_SLURM_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def _value_problem(kind: str, value: Any) -> str | None:
    """Why ``value`` is not a value of ``kind`` (:data:`ACCEPTED`), or None."""
    if kind == "runtime":
        try:
            minutes = _minutes(value)
        except (TypeError, ValueError):
            return "not a runtime"
        return None if minutes > 0 else "not above 0"
    if kind in ("megabytes", "count", "count0"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "not a number"
        if value != int(value):
            return "not a whole number"
        least = 0 if kind == "count0" else 1
        return None if value >= least else f"below {least}"
    if kind == "names":
        ok = isinstance(value, list) and all(isinstance(v, str) and v for v in value)
        return None if ok else "not a list of names"
    if kind == "bool":
        return None if isinstance(value, bool) else "not true or false"
    return None if isinstance(value, str) and value.strip() else "not a name"


def partition_problems(data: Any, path: str | Path) -> list[str]:
    """Every way the parsed ``partitions.yaml`` ``data`` is not what the SLURM plugin and the
    sizing read, each naming the file and the key path: no ``partitions:`` mapping of names to
    mappings, a key that is not a partition limit (with the closest known key), a value that
    is not of its key's kind (:data:`ACCEPTED`: memory as ``lots``, threads as ``-1``)."""
    import difflib

    if not isinstance(data, dict) or not isinstance(data.get("partitions"), dict) \
            or not data["partitions"]:
        return [f"{path}: no `partitions:` mapping of partition names to limits (e.g. "
                "`partitions: {cpu: {max_threads: 64, max_mem_mb: 256000, max_runtime: "
                "2880}}`)"]
    out = [f"{path}: {key}: not a key of partitions.yaml (the file holds only `partitions:`)"
           for key in data if key != "partitions"]
    for name, limits in data["partitions"].items():
        where = f"{path}: partitions.{name}"
        if not isinstance(name, str) or not name.strip():
            out.append(f"{path}: partitions: a partition needs a name, not {name!r}")
            continue
        if limits is None:
            continue
        if not isinstance(limits, dict):
            out.append(f"{where}: not a mapping of limits (max_threads: …, max_mem_mb: …)")
            continue
        for key, value in limits.items():
            kind = PARTITION_KEYS.get(str(key))
            if kind is None:
                near = difflib.get_close_matches(str(key), PARTITION_KEYS, n=1)
                out.append(f"{where}.{key}: not a partition limit"
                           + (f"; did you mean `{near[0]}`?" if near else
                              f"; the limits are {', '.join(PARTITION_KEYS)}"))
                continue
            why = _value_problem(kind, value)
            if why:
                out.append(f"{where}.{key}: {value!r} is {why}; give {ACCEPTED[kind]}")
    return out


def read_partitions(path: str | Path) -> tuple[Partition, ...]:
    """The partitions of a ``partitions.yaml`` (``partitions: {NAME: {max_threads: …}}``),
    checked first (:func:`partition_problems`; YAML that does not parse is refused naming its
    line): :class:`~structablate.errors.ConfigError` listing every problem."""
    from structablate.errors import ConfigError

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot be read ({err}); the SLURM profile's "
                          "slurm-partition-config names it") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        why = getattr(err, "problem", None) or str(err)
        raise ConfigError(f"{path}{at}: not valid YAML ({why}); fix the file (the layout: "
                          "profiles/slurm/partitions.yaml)") from None
    problems = partition_problems(data, path)
    if problems:
        raise ConfigError("\n".join(problems))
    out = []
    for name, lim in data["partitions"].items():
        lim = lim or {}
        out.append(Partition(
            str(name), threads=float(lim.get("max_threads", INF)),
            mem_mb=float(lim.get("max_mem_mb", INF)),
            runtime=_minutes(lim.get("max_runtime", INF)),
            gpus=int(lim.get("max_gpu", 0) or 0),
            cpus_per_gpu=float(lim.get("max_cpus_per_gpu", INF))))
    return tuple(out)


def _minutes(value: Any) -> float:
    """Minutes of a ``max_runtime``: a number, SLURM's ``MM``, ``D-HH``, ``[D-]HH:MM[:SS]``
    (seconds round up to a minute), or Snakemake's ``2d``, ``12h``, ``90m`` (combinable);
    ValueError for anything else."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a time")
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    m = _SNAKEMAKE_TIME.match(text)
    if text and m and any(m.groups()):
        d, h, mi, sec = (int(g or 0) for g in m.groups())
        return float(d * 1440 + h * 60 + mi + (1 if sec else 0))
    m = _SLURM_TIME.match(text)
    if not m:
        raise ValueError(f"{value!r} is not a time")
    days, first, second, third = m.groups()
    if days is not None and second is None:  # D-HH
        return float(int(days) * 1440 + int(first) * 60)
    if second is None:  # MM
        minutes = int(first)
    else:  # HH:MM[:SS]
        minutes = int(first) * 60 + int(second) + (1 if third and int(third) else 0)
    return float(int(days or 0) * 1440 + minutes)


# ------------------------------------------------------------------ what a job needs


@dataclass(frozen=True)
class Need:
    """What a job needs on its first attempt, before any partition: the threads it can use,
    the memory it needs (MB: a measured peak times a margin; less fails) and the runtime it
    needs (minutes), and GPUs."""

    threads: int
    mem_mb: int
    runtime: int
    gpu: int = 0


MODEL_MB: dict[str, float] = {
    "all-minilm-l6-v2": 91, "minilm": 91,
    "bge-small-en-v1.5": 134, "bge-base-en-v1.5": 438, "bge-large-en-v1.5": 1340,
    "bge-reranker-v2-m3": 2271, "bge-reranker-base": 1112, "bge-reranker-large": 2240,
    "ms-marco-minilm-l-6-v2": 91,
}
"""Weights of the models the shipped configurations name (MB of their safetensors files on
the hub); :func:`model_mb` looks a model up here by its name's last part first."""

UNKNOWN_MODEL_MB = 2300.0
"""A model neither :data:`MODEL_MB` nor the local disk sizes: taken as large as the
reranker (2.3 GB), so that it is not under-booked."""


def model_mb(model: str) -> float:
    """MB of a model's weights: :data:`MODEL_MB` by name, else the ``*.safetensors``/``*.bin``
    files of its local folder or hub snapshot, else :data:`UNKNOWN_MODEL_MB`."""
    key = model.split("/")[-1].split(":")[-1].lower().replace("_", "-")
    for name, mb in MODEL_MB.items():
        if name in key:
            return mb
    folder: Path | None = None
    try:
        from structablate.model_paths import PKG_PREFIX, cached_hub_model, resolve_model_path

        if model.startswith(PKG_PREFIX) or Path(model).expanduser().is_dir():
            folder = Path(resolve_model_path(model))
        elif "/" in model:
            folder = cached_hub_model(model)
    except Exception:  # noqa: BLE001 - a size guess never fails a plan
        folder = None
    if folder is not None and folder.is_dir():
        size = sum(p.stat().st_size for pat in ("*.safetensors", "*.bin")
                   for p in folder.rglob(pat) if p.is_file())
        if size:
            return size / 1e6
    return UNKNOWN_MODEL_MB


QASPER_PAPER_MB = 0.038
"""Source MB of one QASPER paper with its questions (the bundled sample: 567,552 bytes of
v0.3 JSON for 15 papers); a hub split is sized by its paper count."""
QASPER_SPLIT_PAPERS = {"train": 888, "validation": 281, "test": 416}
WIKIPEDIA_ARTICLE_MB = 0.069
"""Source MB of one Featured Article (the bundled export: 345,419 bytes for 5 articles)."""


def corpus_mb(plan: Plan, corpus: str) -> float:
    """The size of a corpus's source in MB, the measure every per-corpus rate below is given
    in: its files' sizes where it is read from files (a v0.3 JSON, an XML export, a user's
    documents), else its paper or article count times :data:`QASPER_PAPER_MB` or
    :data:`WIKIPEDIA_ARTICLE_MB` (:data:`SOURCE_MB`, by the corpus's kind)."""
    return SOURCE_MB[plan.corpus_kind(corpus)](plan, corpus)


def _qasper_mb(plan: Plan, corpus: str) -> float:
    total = 0.0
    for s in plan.qasper_sources(corpus):
        if s.format == "v0.3":
            total += _file_mb(s.path, 1585 * QASPER_PAPER_MB)
        else:
            papers = (QASPER_SPLIT_PAPERS.get(s.split, 1585) if s.split
                      else sum(QASPER_SPLIT_PAPERS.values()))
            total += papers * QASPER_PAPER_MB
    return total


def _wikipedia_mb(plan: Plan, corpus: str) -> float:
    c = plan.settings.corpora[corpus]
    if c.source.mode == "xml":
        return _file_mb(c.source.path, c.selection.n_docs * WIKIPEDIA_ARTICLE_MB)
    return c.selection.n_docs * WIKIPEDIA_ARTICLE_MB


def _user_mb(plan: Plan, corpus: str) -> float:
    try:
        return sum(_file_mb(f, 0.0) for f in input_files(plan.settings.corpora[corpus]))
    except ByoInputError:  # missing files are refused elsewhere
        return 0.0


SOURCE_MB: dict[str, Callable[[Any, str], float]] = {
    "qasper": _qasper_mb,
    "wikipedia": _wikipedia_mb,
    "user": _user_mb,
}
"""Corpus kind (:data:`~structablate.settings.CORPUS_SOURCES`) -> the size in MB of a
corpus's source (:func:`corpus_mb`). Every kind has an entry (``tests/test_registries.py``)."""


def _file_mb(path: str, default: float) -> float:
    try:
        return os.path.getsize(path) / 1e6
    except OSError:
        return default


GPU_SPEEDUP = 1000.0
"""How many CPU threads one GPU stands for in the per-MB work of an embedder or reranker (an
assumption, stated: no GPU was lent to measure it; an H200 in half precision does some
thousand times the matrix work of a CPU core)."""

MEM_MARGIN = 1.25
"""Memory booked over the estimated peak RSS (allocator and page-cache slack), at least
:data:`MEM_SLACK_MB` over it."""
MEM_SLACK_MB = 256
"""The least memory booked over the estimated peak RSS (a small job's slack)."""
DRIVER_MB = 300
"""Memory of the job's own Snakemake, which runs the rule's script as a child and shares its
allocation (217 MB peak RSS measured for ``snakemake -n`` of the bundled default); a
benchmark's ``max_rss`` counts the script only."""
TIME_MARGIN = 3.0
"""Runtime booked over the estimated wall time (a busy or slower node)."""
MIN_MEM_MB = 1000
MIN_RUNTIME = 10


def estimate(rule: str, corpus_size_mb: float, model_size_mb: float = 0.0, *,
             threads: int = 1, gpu: int = 0) -> Need:
    """The :class:`Need` of one ``rule`` job on ``threads`` threads over ``corpus_size_mb`` of
    corpus (and a model of ``model_size_mb``): the rule's rate (its entry of the rule table,
    :class:`structablate.plan.rules.Rate`) times the margins, at least
    :data:`MIN_MEM_MB` and :data:`MIN_RUNTIME`. Memory: the estimated peak RSS times
    :data:`MEM_MARGIN` (at least :data:`MEM_SLACK_MB` over it) plus :data:`DRIVER_MB` (the
    job's Snakemake); the model's weights count in the peak twice (loaded and converted), and
    per corpus MB it grows by the rate's ``mb_per_mb`` whatever the model (vectors and texts,
    not weights, grow with the corpus). The
    per-MB CPU seconds are spread over the threads, or over :data:`GPU_SPEEDUP` on a GPU
    (``gpu``)."""
    r = table_entry(rule).rate
    if r is None:
        raise KeyError(f"rule {rule!r} runs on the submit host: its entry of "
                       "structablate.plan.rules.RULES has no rate to size it by")
    scale = corpus_size_mb * (model_size_mb / 100.0 if r.per_model else 1.0)
    peak = r.base_mb + 2 * model_size_mb + r.mb_per_mb * corpus_size_mb
    mem = max(peak * MEM_MARGIN, peak + MEM_SLACK_MB) + DRIVER_MB
    secs = r.base_s + r.s_per_mb * scale / (GPU_SPEEDUP if gpu else max(1, threads))
    return Need(threads=threads, mem_mb=_round_up(max(mem, MIN_MEM_MB), 100),
                runtime=_round_up(max(secs * TIME_MARGIN / 60, MIN_RUNTIME), 5), gpu=gpu)


def _round_up(x: float, step: int) -> int:
    return int(math.ceil(x / step) * step)


# ------------------------------------------------------------------ fitting to partitions


def growth(failures: Mapping[str, int] | None) -> tuple[int, int]:
    """How many times memory and runtime double for a job whose earlier attempts SLURM ended
    as ``failures`` (state -> count): ``OUT_OF_MEMORY`` doubles memory, ``TIMEOUT`` and
    ``DEADLINE`` runtime; nothing else grows anything."""
    f = failures or {}
    return (int(f.get("OUT_OF_MEMORY", 0)),
            int(f.get("TIMEOUT", 0)) + int(f.get("DEADLINE", 0)))


class Sizer:
    """Fits each job's :class:`Need` to the partitions (none: a local run, nothing capped but
    the threads by ``--cores``). Inside a SLURM job the threads are capped by the CPUs SLURM
    gave it (``SLURM_CPUS_ON_NODE``), so the job's own Snakemake runs the same threads that
    were booked."""

    def __init__(self, partitions: tuple[Partition, ...] | None = (),
                 failures: Mapping[tuple, Mapping[str, int]] | None = None,
                 environ: Mapping[str, str] | None = None, workflow: Any = None) -> None:
        self._partitions = None if partitions is None else tuple(partitions)
        self.failures = failures if failures is not None else {}
        self.workflow = workflow
        env = os.environ if environ is None else environ
        self.cpus_here = int(env["SLURM_CPUS_ON_NODE"]) if env.get("SLURM_CPUS_ON_NODE",
                                                                     "").isdigit() else None

    @classmethod
    def for_workflow(cls, workflow: Any, failures: Mapping[tuple, Mapping[str, int]]
                     ) -> Sizer:
        """The sizer of a run: the partitions of its ``slurm-partition-config`` (the SLURM
        profile's partitions.yaml), read when the first job is sized (Snakemake knows its
        executor settings only then); none in a local run or in a job's own Snakemake, whose
        threads follow the CPUs SLURM gave the job. ``failures``: how SLURM ended this run's
        failed jobs (:data:`structablate.slurm.FAILURES`, filled as they fail), from which a
        retry's request grows."""
        sizer = cls(None, failures, workflow=workflow)
        if sizer.cpus_here is not None and (getattr(workflow, "remote_exec", False)
                                            or getattr(workflow, "subprocess_exec", False)):
            mem = os.environ.get("SLURM_MEM_PER_NODE", "")
            limit_group_jobs(workflow, sizer.cpus_here, float(mem) if mem.isdigit() else INF)
        return sizer

    @property
    def partitions(self) -> tuple[Partition, ...]:
        if self._partitions is None:
            settings = getattr(self.workflow, "executor_settings", None)
            if settings is None and getattr(self.workflow, "dryrun", False):
                # a dry run's executor ('dryrun') has no settings: the SLURM profile's are
                # those the command line built for the executor it names
                settings = planned_executor_settings()
                if settings is None:
                    self._partitions = ()
                    return self._partitions
            if settings is None:  # not known yet (the Snakefile is still being read)
                return ()
            path = getattr(settings, "partition_config", None)
            remote = getattr(self.workflow, "remote_exec", False) or getattr(
                self.workflow, "subprocess_exec", False)
            self._partitions = read_partitions(path) if path and not remote else ()
            cpu = [p for p in self._partitions if p.gpus == 0]
            if cpu:
                limit_group_jobs(self.workflow, max(p.threads for p in cpu),
                                 max(p.mem_mb for p in cpu))
        return self._partitions

    def check_profile(self) -> tuple[Partition, ...]:
        """Read the SLURM profile's ``partitions.yaml`` while the Snakefile is read, dry runs
        included (:func:`planned_executor_settings`), so that a broken one is refused before
        any job is planned or listed (:func:`read_partitions`: the file, the key path, the
        accepted forms). Nothing (an empty tuple) without a partition file, and in a job's
        own Snakemake."""
        if getattr(self.workflow, "remote_exec", False) or getattr(
                self.workflow, "subprocess_exec", False):
            return ()
        path = getattr(planned_executor_settings(), "partition_config", None)
        return read_partitions(path) if path else ()

    def candidates(self, gpu: int) -> tuple[Partition, ...]:
        """The partitions a job may go to: with GPUs for a GPU job; for a CPU job the CPU
        partitions (all of them if there are none), as the plugin prefers them."""
        if gpu:
            return tuple(p for p in self.partitions if p.gpus >= gpu)
        cpu = tuple(p for p in self.partitions if p.gpus == 0)
        return cpu or self.partitions

    def threads(self, want: int, gpu: int = 0) -> int:
        """``want`` threads capped by the CPUs the job can get: inside a SLURM job the CPUs it
        was given; when planning, the largest node (CPUs per GPU for a GPU job) of its
        partitions."""
        if self.cpus_here is not None:
            return max(1, min(want, self.cpus_here))
        parts = self.candidates(gpu)
        if not parts:
            return want
        cap = max(p.cpus_per_gpu if gpu else p.threads for p in parts)
        return max(1, int(min(want, cap)))

    def fit(self, rule: str, need: Need, key: tuple = ()) -> Need:
        """``need`` grown by the failures of the job ``key`` (:func:`growth`) and checked
        against the partitions: refused (ConfigError naming the rule, its request and the
        partitions) when no partition has the GPUs, memory and runtime it needs; a grown
        request is capped at the largest partition that fits it."""
        from structablate.errors import ConfigError

        mem_x, time_x = growth(self.failures.get((rule, *key)))
        mem, runtime = need.mem_mb * 2 ** mem_x, need.runtime * 2 ** time_x
        if not self.partitions:
            return Need(need.threads, mem, runtime, need.gpu)
        parts = self.candidates(need.gpu)
        fits = [p for p in parts if p.mem_mb >= need.mem_mb and p.runtime >= need.runtime]
        if not fits:
            named = "; ".join(p.describe() for p in self.partitions)
            raise ConfigError(
                f"rule {rule}: a job needs {need.mem_mb} MB, {need.runtime} min"
                f"{f', {need.gpu} GPU' if need.gpu else ''} and fits no partition of "
                f"partitions.yaml ({named}); add a partition that holds it to "
                "profiles/slurm/partitions.yaml, or run that rule on a machine that does")
        mem = int(min(mem, max(p.mem_mb for p in fits)))
        runtime = int(min(runtime, max(p.runtime for p in fits)))
        return Need(need.threads, mem, runtime, need.gpu)

    def threads_of(self, plan: Plan, rule: str) -> Callable[[Any], int]:
        """A rule's ``threads``: :func:`job_need`'s threads capped by :meth:`threads`."""

        def threads(wildcards: Any) -> int:
            n = job_need(plan, rule, wildcards, self.threads)
            return self.threads(n.threads, n.gpu)

        return threads

    def resources_of(self, plan: Plan, rule: str) -> dict[str, Any]:
        """A rule's ``resources``: :meth:`resources` of :func:`job_need`."""
        return self.resources(rule, lambda w: job_need(plan, rule, w, self.threads))

    def resources(self, rule: str, need: Callable[[Any], Need]) -> dict[str, Any]:
        """A rule's ``resources`` keyword arguments: ``gpu``, ``mem_mb`` and ``runtime`` of
        ``need(wildcards)`` fitted by :meth:`fit` (keyed by the job's wildcards)."""

        def key(w: Any) -> tuple:
            items = w.items() if hasattr(w, "items") else vars(w).items()
            return tuple(sorted((str(k), str(v)) for k, v in items))

        return {
            "gpu": lambda w: need(w).gpu,
            "mem_mb": lambda w: self.fit(rule, need(w), key(w)).mem_mb,
            "runtime": lambda w: self.fit(rule, need(w), key(w)).runtime,
        }


def planned_executor_settings() -> Any:
    """The executor settings Snakemake's command line built for the executor the run names
    (``executor: slurm`` of the SLURM profile, with its ``slurm-partition-config``), read in a
    dry run, whose own executor (``dryrun``) gets none: Snakemake 9 builds them in
    ``snakemake.cli.args_to_api`` and hands them to the workflow only when it executes for
    real, so they are taken from that function's frame on the call stack. None when Snakemake
    was not started from its command line (the API), or the executor has no settings."""
    import sys

    frame = sys._getframe()
    while frame is not None:
        if (frame.f_code.co_name == "args_to_api"
                and frame.f_globals.get("__name__") == "snakemake.cli"):
            return frame.f_locals.get("executor_settings")
        frame = frame.f_back
    return None


def limit_group_jobs(workflow: Any, cores: float, mem_mb: float) -> None:
    """Make a group job fit a node: Snakemake runs a group's members side by side up to its
    global limits (``_cores`` from ``--cores``, the SLURM profile's 8; ``mem_mb`` from
    ``--resources``) and books their sum, so those limits become ``cores`` CPUs and ``mem_mb``
    MB (INF: left as they are). Memory is local-scoped: it limits each group job, not the
    cluster; ``_cores`` does not limit a cluster run's total either. Called with the largest
    CPU node of the partitions by the Snakemake that submits, and with the CPUs and memory
    SLURM gave the job by a group job's own Snakemake."""
    from snakemake.resources import Resource

    limits = getattr(workflow, "global_resources", None)
    if limits is None:
        return
    current = limits.get("_cores")
    value = getattr(current, "value", current)
    if cores != INF and (not isinstance(value, int) or value > cores):
        limits["_cores"] = Resource("_cores", int(cores))
    current = limits.get("mem_mb")
    value = getattr(current, "value", current)
    if mem_mb != INF and (not isinstance(value, int) or value > mem_mb):
        limits["mem_mb"] = Resource("mem_mb", int(mem_mb))


# ------------------------------------------------------------------ each rule's need

LLM_ON_GPU: dict[str, tuple[int, int]] = {job.rule: job.gpu for job in LLM_STAGE_JOBS.values()}
"""The LLM stages under vLLM on one GPU: threads and runtime (minutes) of one job, declared
with each stage (:attr:`structablate.mechanisms.StageJob.gpu`; not measured: no GPU was
lent); its host memory is :func:`vllm_host_mb` of the stage's model."""

GPU_HOST_MB = 3000
"""Host memory a CUDA context and its libraries add to a job on a GPU."""


VLLM_BASE_MB = 4000
"""Host memory of vLLM's own processes beside the weights: the engine and its worker, the
tokenizer, the Python and torch libraries (the CUDA context is :data:`GPU_HOST_MB`)."""

VLLM_SWAP_MB = 4295
"""vLLM's CPU swap space for preempted sequences' KV cache: its default ``swap_space`` of
4 GiB per GPU."""

HOST_BYTES_PER_TOKEN = 64
"""Host bytes per token of a request in flight (its token ids, the prompt and output text,
the sampler's bookkeeping)."""

BYTES_PER_PARAMETER = 2
"""Bytes per weight of an LLM whose files are not on this disk (bf16/fp16)."""

UNKNOWN_LLM_MB = 60000.0
"""An LLM neither the disk nor its name sizes: taken as a model of 30 billion parameters
in bf16."""

_PARAMETERS = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)b(?![a-z0-9])")


def llm_weights_mb(model: str) -> float:
    """MB of an LLM's weights: its ``*.safetensors``/``*.bin`` files where it is a local
    folder or in the hub cache (:func:`model_mb` reads them), else its parameter count as its
    name states it (``gemma-4-26b-a4b-it``: 26 billion, the first ``<N>b``) times
    :data:`BYTES_PER_PARAMETER`, else :data:`UNKNOWN_LLM_MB`."""
    size = model_mb(model)
    if size != UNKNOWN_MODEL_MB:
        return size
    m = _PARAMETERS.search(model.split("/")[-1].lower())
    if m:
        return float(m.group(1)) * 1e9 * BYTES_PER_PARAMETER / 1e6
    return UNKNOWN_LLM_MB


VLLM_MARGIN = 1.5
"""The margin on the vLLM stages' host memory: larger than :data:`MEM_MARGIN`, which covers
measured peaks, because these terms are estimates that no run here has measured."""


def vllm_host_mb(weights_mb: float, context_tokens: int | None, batch_size: int) -> int:
    """Host memory (MB) of one LLM stage's job under vLLM on one GPU:

    ``(GPU_HOST_MB + VLLM_BASE_MB + weights_mb + VLLM_SWAP_MB
    + batch_size * context_tokens * HOST_BYTES_PER_TOKEN / 1e6) * VLLM_MARGIN``,

    rounded up to 100 MB: the CUDA context (3,000 MB), vLLM's processes (4,000 MB), the
    weights once (``weights_mb``: read from disk through the page cache, which the job's
    cgroup is charged for, before they move to the GPU), the KV swap space (4 GiB), and the
    requests of one batch at the full context (``context_tokens``; 32,768 when the config
    leaves it to the model) — times :data:`VLLM_MARGIN` (1.5). The KV cache itself
    lives on the GPU. Not measured (no GPU was lent): each term is stated so a measurement
    can replace it. Gemma-4-26B-A4B (52,000 MB in bf16) at 32,768 tokens and batches of 64
    books 95,200 MB, so a node of 128 GB holds it."""
    tokens = context_tokens if context_tokens is not None else 32768
    mb = (GPU_HOST_MB + VLLM_BASE_MB + weights_mb + VLLM_SWAP_MB
          + batch_size * tokens * HOST_BYTES_PER_TOKEN / 1e6)
    return _round_up(mb * VLLM_MARGIN, 100)


def job_need(plan: Plan, rule: str, w: Any,
             cap: Callable[[int, int], int] = lambda want, gpu: want) -> Need:
    """The :class:`Need` of one job of ``rule`` with wildcards ``w``, from what it is given:
    its corpus's size (:func:`corpus_mb`), the size and device of the model it loads (its
    entry's ``model``: :func:`model_mb`), and for an LLM stage's rule where the stage runs.
    Threads: 8 for a model on a GPU (its CPUs per GPU) or TextTiling's paragraph embedding, 2
    for a replayed or remote LLM stage, 1 for everything else, each capped by
    ``cap(threads, gpu)`` (:meth:`Sizer.threads`) before the runtime is reckoned over them."""
    entry = table_entry(rule)
    size = corpus_mb(plan, w.corpus)
    s = plan.settings
    if entry.model is not None:  # an embedder or a reranker, named by its wildcard
        models = s.rerankers if entry.model == "reranker" else s.embedders
        model = models[getattr(w, entry.model)]
        gpu = int(is_gpu(model.device))
        need = estimate(rule, size, model_mb(model.model), threads=cap(8, gpu), gpu=gpu)
        if gpu:
            need = Need(need.threads, need.mem_mb + GPU_HOST_MB, need.runtime, gpu)
        return need
    stage = entry.stage
    if stage is not None:  # an LLM stage: on a GPU under vLLM, else on CPUs
        job = LLM_STAGE_JOBS[stage]
        corpus = w.corpus if job.per_corpus else None
        if plan.llm_on_gpu(stage, corpus):
            llm = plan.stage_llm(stage, corpus)
            threads, runtime = LLM_ON_GPU[rule]
            host = vllm_host_mb(llm_weights_mb(served_model(llm) or ""),
                                context_tokens(llm), llm.batch_size)
            return Need(threads, host, runtime, 1)
        # TextTiling (induction without an LLM) embeds every paragraph on 8 threads
        embeds = stage == "induction" and plan.induction_embeds_paragraphs
        return estimate(rule, size, threads=cap(8 if embeds else job.cpu_threads, 0))
    return estimate(rule, size)
