"""What a run reads: every model and dataset a plan needs, and which of them an offline job
would miss.

Compute nodes usually have no network, and every job runs with ``HF_HUB_OFFLINE=1``, so a
plan is checked before its first job (:meth:`structablate.plan.Plan.model_problems`) and the
missing names are fetched on a login node with ``python -m structablate.prefetch`` (the
command that builds on this module and downloads).

:func:`required` lists what a :class:`~structablate.plan.Plan` reads, from the plan alone (no
hand-kept list, no filesystem): the QASPER hub dataset, the chunking tokenizer, the embedders,
the rerankers that rerank some cell, the TextTiling model when it induces structure, and the
model of every LLM stage that generates (a replaying stage loads none). The same name used in
several places (bge-small as an embedder and as the chunking tokenizer) is one :class:`Need`
with every use listed. :func:`offline_problems` looks on the local disk only (never the
network, never importing the hub libraries) for the LLM models and datasets among them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from structablate.mechanisms import LLM_STAGE_JOBS
from structablate.settings import LLM_BACKENDS, served_model

if TYPE_CHECKING:
    from structablate.plan import Plan

__all__ = ["KINDS", "Need", "Use", "cached_hub_dataset", "datasets_cache_dir",
           "offline_problems", "prefetch_command", "required"]

Kind = Literal["sentence-transformers", "cross-encoder", "tokenizer", "llm", "gguf", "server",
               "dataset"]
KINDS: tuple[str, ...] = ("sentence-transformers", "cross-encoder", "tokenizer", "llm", "gguf",
                          "server", "dataset")
"""How a name is loaded: a sentence-transformers bi-encoder, a cross-encoder, a tokenizer, a
vLLM model, a llama.cpp GGUF file, a model served by an OpenAI-compatible server (nothing to
fetch), or a hub dataset."""


@dataclass(frozen=True)
class Use:
    """One place a configuration names a model: the config key and how it is loaded."""

    key: str
    kind: Kind


@dataclass(frozen=True)
class Need:
    """A model or dataset the run reads, as the configuration names it (hub id, local path,
    ``pkg:<module>``, a packaged GGUF name, or a server's model name), with every use."""

    name: str
    uses: tuple[Use, ...]

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(u.kind for u in self.uses))

    @property
    def is_dataset(self) -> bool:
        return "dataset" in self.kinds



def required(plan: Plan) -> list[Need]:
    """Every model and dataset ``plan`` (a :class:`~structablate.plan.Plan`) reads, in the order
    a run first needs them: corpus sources, the tokenizer, embedders, rerankers, the structure
    inducer, then the LLM of each stage that generates. Pure: reads the plan only."""
    s = plan.settings
    uses: list[tuple[str, Use]] = []

    for corpus in plan.corpora:
        for key, dataset in plan.source_facts(corpus).datasets(s.corpora[corpus]):
            uses.append((dataset, Use(f"corpora.{corpus}.{key}", "dataset")))

    tok_key = ("chunking.tokenizer" if s.chunking.tokenizer
               else f"chunking.tokenizer (null: embedders.{plan.embedders[0]}.model)")
    uses.append((plan.tokenizer, Use(tok_key, "tokenizer")))
    for name in plan.embedders:
        uses.append((s.embedders[name].model,
                     Use(f"embedders.{name}.model", "sentence-transformers")))
    reranking = {r for cell in plan.cells() for r in [cell.reranker] if r != "none"}
    for name in plan.rerankers:
        if name in reranking:
            uses.append((s.rerankers[name].model,
                         Use(f"rerankers.{name}.model", "cross-encoder")))
    if plan.induction_embeds_paragraphs and plan.needs_induced_structure:
        uses.append((s.induction.texttiling.model,
                     Use("induction.texttiling.model", "sentence-transformers")))

    for stage, corpus in plan.running_stages():
        key = LLM_STAGE_JOBS[stage].key(corpus)
        llm = plan.stage_llm(stage, corpus)
        kind = LLM_BACKENDS[llm.backend].model_kind
        if llm.mode == "replay" or kind is None:
            continue  # replays recorded generations: no model is loaded
        name = served_model(llm)  # a server's model ("server") is checked at the server
        # the stage's llm block laid over the llm block (Plan.stage_llm)
        uses.append((name, Use(f"{key} over llm ({llm.backend})", kind)))

    merged: dict[str, list[Use]] = {}
    for name, use in uses:
        merged.setdefault(name, [])
        if use not in merged[name]:
            merged[name].append(use)
    return [Need(name, tuple(u)) for name, u in merged.items()]


def datasets_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The folder ``datasets`` keeps prepared datasets in (``HF_DATASETS_CACHE``, else
    ``$HF_HOME/datasets``, else ``$XDG_CACHE_HOME/huggingface/datasets``), as ``datasets``
    resolves it, without importing ``datasets``."""
    env = os.environ if environ is None else environ
    if env.get("HF_DATASETS_CACHE"):
        return Path(os.path.expanduser(env["HF_DATASETS_CACHE"]))
    home = env.get("HF_HOME") or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "huggingface")
    return Path(os.path.expanduser(home)) / "datasets"


def cached_hub_dataset(repo_id: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """Where ``datasets.load_dataset(repo_id)`` would find ``repo_id`` (``org/name``) offline:
    its prepared copy ``{datasets cache}/org___name`` (what a download by
    :func:`structablate.prefetch.fetch` leaves), or a hub-cache snapshot
    ``datasets--org--name`` with files. None when neither is there. Reads the disk only."""
    from structablate.model_paths import hub_cache_dirs

    prepared = datasets_cache_dir(environ) / repo_id.replace("/", "___")
    if prepared.is_dir() and any(prepared.iterdir()):
        return prepared
    folder = "datasets--" + repo_id.replace("/", "--")
    for cache in hub_cache_dirs(environ):
        snapshots = cache / folder / "snapshots"
        if snapshots.is_dir() and any(s.is_dir() and any(s.iterdir())
                                      for s in snapshots.iterdir()):
            return snapshots
    return None


def offline_problems(needs: Iterable[Need], environ: Mapping[str, str] | None = None
                     ) -> list[str]:
    """``key: why`` for every LLM model and hub dataset of ``needs`` that an offline job could
    not load, without the network and without importing the hub libraries (fast enough for
    every plan): a vLLM model is a local folder or a hub snapshot in the local cache
    (:func:`structablate.model_paths.check_model`); a GGUF file named by path (with a ``/``
    or ending ``.gguf``) exists (a packaged GGUF is unpacked by the job from its installed
    packages; any other name is left to the job); a hub dataset is
    prepared in the datasets cache or snapshotted in the hub cache. When jobs may use the hub
    (``HF_HUB_OFFLINE=0``) hub names pass unchecked, as for embedders. Embedders, rerankers
    and tokenizers are :meth:`structablate.plan.Plan._check_models`' own."""
    from structablate.errors import ConfigError
    from structablate.model_paths import check_model, hub_offline

    out: list[str] = []
    for need in needs:
        key = "; ".join(dict.fromkeys(u.key for u in need.uses))
        if need.is_dataset:
            if Path(need.name).expanduser().exists() or not hub_offline(environ):
                continue
            if cached_hub_dataset(need.name, environ) is None:
                out.append(f"{key}: hub dataset {need.name!r} is not in the local datasets "
                           f"cache {datasets_cache_dir(environ)} nor the hub cache, and jobs "
                           "run offline")
        elif "llm" in need.kinds:
            try:
                check_model(need.name, key, environ=environ)
            except ConfigError as exc:
                out.append(str(exc))
        elif "gguf" in need.kinds and is_gguf_path(need.name):
            if not Path(need.name).expanduser().is_file():
                out.append(f"{key}: no GGUF file {need.name}")
    return out


def is_gguf_path(name: str) -> bool:
    """``name`` (a llama.cpp model) names a GGUF file by its path: it holds a ``/`` or ends in
    ``.gguf``. Any other name is a packaged model (:data:`structablate.llm.gguf.KNOWN_MODELS`,
    whose names never look like a path) or is left to the job to resolve."""
    return "/" in name or name.endswith(".gguf")


def prefetch_command(configfiles: Sequence[str], *, check: bool = False) -> str:
    """The shell command that fetches (or, ``check``, looks offline for) what the run of
    ``configfiles`` (as given to ``snakemake --configfile``; none: config.yaml) reads."""
    files = " ".join(str(f) for f in configfiles)
    return ("python -m structablate.prefetch" + (" --check" if check else "")
            + (f" --configfile {files}" if files else ""))
