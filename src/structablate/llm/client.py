"""One LLM client for every generative stage, with a persistent cache in front of the backend.

:class:`LLMClient` builds requests (deterministic decoding by default: temperature 0, a fixed
seed), looks each one up in the :mod:`~structablate.llm.cache` under a backend-independent key,
and only on a miss asks the backend — which it constructs lazily, so a run whose generations
are all on disk never loads a model. Each answer is written to the cache as soon as it exists,
so a killed run loses at most the calls in flight and a rerun replays from disk.

Modes:

* ``cached`` (default): hit → replay; miss → generate and record.
* ``replay``: cache only; a miss raises :class:`~structablate.llm.cache.CacheMiss` naming the
  key. The bundled default runs this way from the recorded caches in ``resources/llm/``.

Stage lock: a client given a ``stage`` name takes that stage's
:class:`~structablate.store.lock.StageLock` on its cache before its first generation (never for
hits, so replays and fully cached reruns take no lock) and releases it on :meth:`close`. A
second generator of the same stage on the same cache — e.g. a rerun while the orphan of a
killed Snakemake still runs — stops with an error naming the holder's pid and host. Before
each generation (each batch, for vLLM) the holder checks that the lock is still its own
(:meth:`~structablate.store.lock.StageLock.ensure_held`): a holder whose lock another process
broke (its heartbeat stalled past ``stale_after_s``) stops with
:class:`~structablate.store.lock.StageLockLost` instead of generating beside the new holder;
what it committed stays in the cache.
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from structablate.llm.backends import (
    FACTORIES,
    Backend,
    Generation,
    Message,
    Request,
    Sampling,
)
from structablate.llm.cache import CacheMiss, GenerationCache, cache_key, open_cache
from structablate.settings import LLMSettings, parse
from structablate.store.folder import StoreSettings
from structablate.store.lock import LockSettings, StageLock
from structablate.store.typed import ReportDict, reported, rounded

log = logging.getLogger(__name__)

MODES = ("cached", "replay")


def _tokens_per_second(stats: ClientStats) -> float | None:
    """Completion tokens per second of generation, to two decimals; None without either."""
    if stats.generation_seconds <= 0 or not stats.completion_tokens:
        return None
    return round(stats.completion_tokens / stats.generation_seconds, 2)


@dataclass
class ClientStats(ReportDict):
    """Counters of one client's life: cache hits, generated calls, tokens and seconds
    (:meth:`as_dict`: ``hits`` as ``cache_hits``, seconds to the millisecond, then
    ``completion_tokens_per_s``; ``keys`` is not reported)."""

    hits: int = reported(key="cache_hits")
    generated: int = reported()
    prompt_tokens: int = reported()
    completion_tokens: int = reported()
    generation_seconds: float = reported(
        0.0, form=rounded(3), then={"completion_tokens_per_s": _tokens_per_second})
    keys: list[str] = field(default_factory=list)


class LLMClient:
    """Cached chat generation. See the module docstring."""

    def __init__(
        self,
        model: str,
        cache: GenerationCache | None,
        *,
        mode: str = "cached",
        backend: Backend | None = None,
        backend_factory: Callable[[], Backend] | None = None,
        sampling: Sampling | None = None,
        batch_size: int = 64,
        backend_name: str | None = None,
        stage: str | None = None,
        lock_settings: LockSettings | None = None,
        processes: int = 1,
    ):
        if mode not in MODES:
            raise ValueError(f"llm.mode must be one of {MODES}, got {mode!r}")
        if mode == "replay" and cache is None:
            raise ValueError("replay mode needs a cache")
        self.model = model
        self.cache = cache
        self.mode = mode
        self._backend = backend
        self._backend_factory = backend_factory
        self.backend_name = backend_name or (backend.name if backend is not None else None)
        """The configured backend's name, known without loading it (callers use it to choose
        request order: llama.cpp prefers related prompts back to back)."""
        self._backend_lock = threading.Lock()
        self.sampling = sampling or Sampling()
        self.batch_size = max(1, int(batch_size))
        self.stats = ClientStats()
        self._stats_lock = threading.Lock()
        self.stage = stage
        """The stage this client generates for (names its lock); None: no lock."""
        self.lock_settings = lock_settings or LockSettings()
        self.stage_lock: StageLock | None = None
        self.processes = max(1, int(processes))
        """Worker processes of :meth:`generate_documents` (1: the backend runs in process)."""
        self._pool: Any = None

    # -- requests and keys ------------------------------------------------------------------

    def request(
        self,
        messages: Sequence[Message],
        *,
        json_schema: dict[str, Any] | None = None,
        **sampling: Any,
    ) -> Request:
        """A :class:`Request` with the client's default sampling, overridden by ``sampling``."""
        s = replace(self.sampling, **sampling) if sampling else self.sampling
        if isinstance(s.stop, list):
            s = replace(s, stop=tuple(s.stop))
        msgs = tuple({"role": str(m["role"]), "content": str(m["content"])} for m in messages)
        return Request(messages=msgs, sampling=s, json_schema=json_schema)

    def request_record(self, request: Request) -> dict[str, Any]:
        """What a cache key hashes: model id, messages, sampling, schema — never the backend."""
        return {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
            "sampling": request.sampling.as_dict(),
            "json_schema": request.json_schema,
        }

    def key(self, request: Request) -> str:
        return cache_key(self.request_record(request))

    # -- backend ----------------------------------------------------------------------------

    @property
    def backend(self) -> Backend:
        with self._backend_lock:
            if self._backend is None:
                if self._backend_factory is None:
                    raise RuntimeError(f"LLM client for {self.model!r} has no backend")
                t0 = time.perf_counter()
                self._backend = self._backend_factory()
                log.info("loaded %s backend for %s in %.1fs", self._backend.name, self.model,
                         time.perf_counter() - t0)
            return self._backend

    @property
    def backend_loaded(self) -> bool:
        return self._backend is not None

    def _ensure_stage_lock(self) -> bool:
        """Take the stage lock before the first generation (see the module docstring); True
        when this call took it: another generator of the stage may have committed records
        while this one waited for the lock, so the caller looks its misses up again."""
        if self.stage is None or self.cache is None:
            return False
        with self._backend_lock:
            if self.stage_lock is None:
                lock = StageLock(self.cache.lock_path(self.stage), settings=self.lock_settings,
                                 label=f"LLM stage {self.stage!r} on {self.cache.path}")
                lock.acquire()
                self.stage_lock = lock
                self.cache.refresh()
                return True
        return False

    def _still_held(self) -> None:
        """Raise :class:`~structablate.store.lock.StageLockLost` when this client took its
        stage lock and another process has since broken it (one small file read)."""
        if self.stage_lock is not None:
            self.stage_lock.ensure_held()

    def close(self) -> None:
        """Close the worker processes and the backend, commit and close the cache, release
        the stage lock."""
        try:
            if self._pool is not None:
                self._pool.close()
                self._pool.join()
                self._pool = None
            if self._backend is not None:
                self._backend.close()
            if self.cache is not None:
                self.cache.close()
        finally:
            if self.stage_lock is not None:
                self.stage_lock.release()
                self.stage_lock = None

    # -- generation -------------------------------------------------------------------------

    def _lookup(self, key: str, record: dict[str, Any]) -> str | None:
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                with self._stats_lock:
                    self.stats.hits += 1
                    self.stats.keys.append(key)
                return hit["response"]["text"]
        if self.mode == "replay":
            raise CacheMiss(key, record, str(self.cache.path) if self.cache else "",
                            stage=self.stage)
        return None

    def _record(self, key: str, record: dict[str, Any], gen: Generation,
                commit: bool = True) -> None:
        """Cache a generation; ``commit`` writes it to disk at once (a generation costs
        seconds, a commit milliseconds), so a killed job loses no completed call."""
        if self.cache is not None:
            resp = gen.as_dict()
            # the backend's name, without loading one in this process when workers generate
            resp["backend"] = (self._backend.name if self._backend is not None
                               else self.backend_name)
            resp["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            self.cache.put(key, record, resp)
            if commit:
                self.cache.flush()
        with self._stats_lock:
            self.stats.generated += 1
            self.stats.prompt_tokens += gen.prompt_tokens or 0
            self.stats.completion_tokens += gen.completion_tokens or 0
            self.stats.generation_seconds += gen.seconds
            self.stats.keys.append(key)

    def generate(self, request: Request) -> str:
        """The text for ``request``: from the cache, or generated and recorded."""
        record = self.request_record(request)
        key = cache_key(record)
        text = self._lookup(key, record)
        if text is not None:
            return text
        if self._ensure_stage_lock():
            text = self._lookup(key, record)  # what the lock's previous holder committed
            if text is not None:
                return text
        self._still_held()
        gen = self.backend.generate(request)
        self._record(key, record, gen)
        return gen.text

    def chat(
        self,
        messages: Sequence[Message],
        *,
        json_schema: dict[str, Any] | None = None,
        **sampling: Any,
    ) -> str:
        """Generate one reply to ``messages`` (see :meth:`request` for the arguments)."""
        return self.generate(self.request(messages, json_schema=json_schema, **sampling))

    def _misses(self, keys: Sequence[str], records: Sequence[Mapping[str, Any]]
                ) -> tuple[dict[str, str], dict[str, int]]:
        """The cached texts of ``keys`` by key, and each key still to generate with the index
        of its first request (a duplicate is generated once). When any is missing the stage
        lock is taken, and what the lock's previous holder committed meanwhile is looked up
        again: never generate twice."""
        texts: dict[str, str] = {}
        todo: dict[str, int] = {}
        for i, (k, rec) in enumerate(zip(keys, records, strict=True)):
            if k in texts or k in todo:
                continue
            t = self._lookup(k, rec)
            if t is None:
                todo[k] = i
            else:
                texts[k] = t
        if todo and self._ensure_stage_lock():
            # a generator of the same stage (e.g. the orphan of a killed Snakemake) may have
            # committed some of them while this one waited for its lock
            for k, i in list(todo.items()):
                t = self._lookup(k, records[i])
                if t is not None:
                    texts[k] = t
                    del todo[k]
        return texts, todo

    def generate_many(self, requests: Sequence[Request]) -> list[str]:
        """Texts for ``requests`` in order; misses go to the backend in its preferred way.

        vLLM gets the misses in batches of ``batch_size`` (one ``LLM.chat`` call each, committed
        to the cache after each batch: a killed job loses at most the batch in flight); an
        OpenAI server gets up to its ``concurrency`` requests at once and llama.cpp runs them
        one by one in order (prompts that share a prefix follow each other), each committed as
        it returns, so a killed job loses no completed call. Duplicate requests are generated
        once.
        """
        records = [self.request_record(r) for r in requests]
        keys = [cache_key(rec) for rec in records]
        texts, todo = self._misses(keys, records)
        if todo:
            backend = self.backend
            idx = list(todo.values())
            if getattr(backend, "batched", False):
                for b in range(0, len(idx), self.batch_size):
                    part = idx[b : b + self.batch_size]
                    self._still_held()
                    gens = backend.generate_batch([requests[i] for i in part])
                    for i, g in zip(part, gens, strict=True):
                        self._record(keys[i], records[i], g, commit=False)
                        texts[keys[i]] = g.text
                    if self.cache is not None:
                        self.cache.flush()  # a batch is committed as soon as it exists
            else:
                workers = int(getattr(backend, "concurrency", 1) or 1)

                def run(i: int) -> None:
                    self._still_held()
                    g = backend.generate(requests[i])
                    self._record(keys[i], records[i], g)
                    texts[keys[i]] = g.text

                if workers > 1 and len(idx) > 1:
                    with ThreadPoolExecutor(max_workers=workers) as pool:
                        list(pool.map(run, idx))
                else:
                    for i in idx:
                        run(i)
            if self.cache is not None:
                self.cache.flush()
        return [texts[k] for k in keys]

    def _worker_pool(self) -> Any:
        """The client's pool of :attr:`processes` worker processes, started on first use (by
        fork: the workflow's glue scripts cannot be re-imported by a spawned child), each
        building its own backend once from the client's factory."""
        if self._pool is None:
            if self._backend_factory is None:
                raise RuntimeError(f"LLM client for {self.model!r} has no backend factory for "
                                   f"its {self.processes} worker processes")
            ctx = multiprocessing.get_context("fork")
            self._pool = ctx.Pool(self.processes, initializer=_worker_init,
                                  initargs=(self._backend_factory,))
        return self._pool

    def generate_documents(self, groups: Sequence[Sequence[Request]]) -> list[list[str]]:
        """Texts for each group's requests, group by group, in order.

        A group is one document's requests in the order that lets consecutive prompts share
        their prefix (A1: the document, then the chunk). With ``processes == 1`` this is
        :meth:`generate_many` over the groups one after another. With more, the misses go to
        a pool of worker processes (:meth:`_worker_pool`): a worker takes a whole group at a
        time and runs its misses in order on its own backend, so a document's calls follow
        each other on one model and reuse its KV cache (llama.cpp keeps the longest common
        prefix with the previous prompt); this process records each generation (committed at
        once) as its group returns. Cache keys, the stage lock and duplicates (generated once)
        are as in :meth:`generate_many`: the order of generation changes no key.
        """
        flat = (self.generate_many([r for g in groups for r in g]) if self.processes <= 1
                else self._generate_in_workers(groups))
        out, k = [], 0
        for g in groups:
            out.append(flat[k : k + len(g)])
            k += len(g)
        return out

    def _generate_in_workers(self, groups: Sequence[Sequence[Request]]) -> list[str]:
        """The texts of every group's requests, flattened in order, the misses generated by
        the worker processes a group at a time (:meth:`generate_documents`)."""
        where = [(gi, j) for gi, g in enumerate(groups) for j in range(len(g))]
        records = [self.request_record(groups[gi][j]) for gi, j in where]
        keys = [cache_key(rec) for rec in records]
        texts, todo = self._misses(keys, records)
        if todo:
            work: dict[int, list[int]] = {}  # group -> the flat indices it generates, in order
            for i in todo.values():
                work.setdefault(where[i][0], []).append(i)
            tasks = [(gi, [groups[gi][where[i][1]] for i in idx]) for gi, idx in work.items()]
            pool = self._worker_pool()
            for gi, gens in pool.imap_unordered(_worker_generate, tasks):
                self._still_held()
                for i, gen in zip(work[gi], gens, strict=True):
                    self._record(keys[i], records[i], gen)
                    texts[keys[i]] = gen.text
            if self.cache is not None:
                self.cache.flush()
        return [texts[k] for k in keys]

_WORKER_BACKEND: Backend | None = None
"""The backend of a worker process of :meth:`LLMClient.generate_documents`."""


def _worker_init(factory: Callable[[], Backend]) -> None:
    global _WORKER_BACKEND
    _WORKER_BACKEND = factory()


def _worker_generate(task: tuple[int, list[Request]]) -> tuple[int, list[Generation]]:
    """One group's generations, in order, on this worker's backend."""
    gi, requests = task
    assert _WORKER_BACKEND is not None
    return gi, [_WORKER_BACKEND.generate(r) for r in requests]


def _backend_factory(llm: LLMSettings, model: str) -> Callable[[], Backend]:
    """A function building ``llm``'s backend (:data:`~structablate.llm.backends.FACTORIES`)
    on first use (never called in replay mode)."""

    def make() -> Backend:
        factory = FACTORIES[llm.backend]
        if factory is None:
            raise RuntimeError(f"llm.backend is {llm.backend!r}: the client can only replay, "
                               f"and {model!r} missed the cache")
        return factory(llm)

    return make


def client_from_config(
    cfg: LLMSettings | Mapping[str, Any],
    *,
    base_dir: str | Path | None = None,
    stage: str | None = None,
    lock_settings: LockSettings | None = None,
    store_settings: StoreSettings | None = None,
) -> LLMClient:
    """Build a client from an :class:`~structablate.settings.LLMSettings` (a stage's merged
    settings, :meth:`structablate.plan.Plan.stage_llm`) or an ``llm`` mapping, validated like
    the config (``docs/llm.md`` has the keys).

    ``base_dir`` resolves a relative ``cache`` path (the workflow passes its working folder).
    ``stage`` (e.g. ``"induction"``, ``"contexts"``, ``"queries/wikipedia"``) names the stage
    lock taken on the cache before the first generation; None takes no lock.
    """
    llm = cfg if isinstance(cfg, LLMSettings) else parse(LLMSettings, cfg, "llm")
    model = llm.model
    if not model:
        raise ValueError("llm.model (the model id every cache key carries) is required")
    mode, seed = llm.mode, llm.seed
    sampling = Sampling(temperature=llm.temperature, top_p=llm.top_p, seed=seed)
    if llm.max_tokens is not None:
        sampling = replace(sampling, max_tokens=llm.max_tokens)
    cache = None
    if llm.cache:
        path = Path(llm.cache)
        if base_dir is not None and not path.is_absolute():
            path = Path(base_dir) / path
        if mode == "replay" and not path.exists():
            raise FileNotFoundError(f"llm.cache {path} does not exist and llm.mode is replay")
        cache = open_cache(path, readonly=(mode == "replay"), settings=store_settings)
    elif mode == "replay":
        raise ValueError("llm.mode replay needs llm.cache")
    factory = None if mode == "replay" else _backend_factory(llm, model)
    # worker processes: the backend block's ``processes`` where it has one (llamacpp)
    processes = getattr(getattr(llm, llm.backend, None), "processes", None) or 1
    return LLMClient(model, cache, mode=mode, backend_factory=factory, sampling=sampling,
                     batch_size=llm.batch_size, backend_name=llm.backend, stage=stage,
                     lock_settings=lock_settings, processes=processes)
