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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from structablate.mechanisms import LLM_STAGE_JOBS
from structablate.plan.rules import rule as table_entry
from structablate.settings import is_gpu
from structablate.user_files import ByoInputError, input_files

if TYPE_CHECKING:
    from structablate.plan import Plan

INF = math.inf

Base = int | Callable[[Any], int]
"""A request on the first attempt: a number, or a function of the job's wildcards."""


def scaled(base: Base) -> Callable[[Any, int], int]:
    """A Snakemake resource function: ``base`` (a number, or a function of the wildcards)
    times ``attempt`` (1 on the first try)."""

    def resource(wildcards: Any, attempt: int) -> int:
        value = base(wildcards) if callable(base) else base
        return value * attempt

    return resource


def sized(mem_mb: int, runtime: int, *, gpu: int | None = None) -> dict[str, Any]:
    """The ``resources`` of a job as keyword arguments: ``mem_mb`` megabytes and ``runtime``
    minutes on the first attempt, each :func:`scaled`; with ``gpu`` also that many GPUs (a
    rule that may run on a GPU says ``gpu=0`` when it does not, so SLURM profiles see the
    key either way)."""
    out: dict[str, Any] = {} if gpu is None else {"gpu": int(gpu)}
    out.update(mem_mb=scaled(mem_mb), runtime=scaled(runtime))
    return out


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


def read_partitions(path: str | Path) -> tuple[Partition, ...]:
    """The partitions of a ``partitions.yaml`` (``partitions: {NAME: {max_threads: …}}``);
    a ``max_runtime`` may be minutes or a SLURM time (``2-00:00:00``)."""
    from structablate.errors import ConfigError

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    parts = data.get("partitions") if isinstance(data, dict) else None
    if not isinstance(parts, dict) or not parts:
        raise ConfigError(f"{path}: no `partitions:` mapping of partition names to limits")
    out = []
    for name, lim in parts.items():
        lim = lim or {}
        try:
            out.append(Partition(
                str(name), threads=float(lim.get("max_threads", INF)),
                mem_mb=float(lim.get("max_mem_mb", INF)),
                runtime=_minutes(lim.get("max_runtime", INF)),
                gpus=int(lim.get("max_gpu", 0) or 0),
                cpus_per_gpu=float(lim.get("max_cpus_per_gpu", INF))))
        except (TypeError, ValueError) as err:
            raise ConfigError(f"{path}: partitions.{name}: {err}") from err
    return tuple(out)


def _minutes(value: Any) -> float:
    """Minutes of a ``max_runtime``: a number, or SLURM's ``[D-]HH:MM[:SS]`` / ``MM``."""
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        days = int(d)
    parts = [int(p) for p in text.split(":")]
    if len(parts) == 1:
        minutes = parts[0]
    else:
        minutes = parts[0] * 60 + parts[1] + (1 if len(parts) > 2 and parts[2] else 0)
    return float(days * 1440 + minutes)


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

LLM_ON_GPU: dict[str, Need] = {job.rule: Need(*job.gpu, 1) for job in LLM_STAGE_JOBS.values()}
"""The LLM stages under vLLM on one GPU (not measured: no GPU was lent; the model's weights,
its KV cache and vLLM's host buffers): the bookings the paper grid was planned with, declared
with each stage (:attr:`structablate.mechanisms.StageJob.gpu`)."""

GPU_HOST_MB = 3000
"""Host memory a CUDA context and its libraries add to a job on a GPU."""


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
        if plan.llm_on_gpu(stage, w.corpus if job.per_corpus else None):
            return LLM_ON_GPU[rule]
        # TextTiling (induction without an LLM) embeds every paragraph on 8 threads
        embeds = stage == "induction" and plan.induction_embeds_paragraphs
        return estimate(rule, size, threads=cap(8 if embeds else job.cpu_threads, 0))
    return estimate(rule, size)
