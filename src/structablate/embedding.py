"""Embedding with sentence-transformers, batch-invariant, behind a content-addressed cache.

Batch invariance: a transformer's output for one text can change in its last bits with the
other texts of its batch (padding length and matrix shapes pick different kernels). To make a
text's vector a function of the text alone, every batch has a fixed shape: texts are bucketed
by token length rounded up to a multiple of ``length_bucket`` (capped at the model's maximum
sequence length), padded to that length, and each batch is filled to ``batch_size`` rows with
empty texts. So the same text gives byte-identical vectors whichever condition, order or cache
state it is embedded in, and the measured half stays deterministic.

Precision and backend (per embedder, part of the cache signature because vectors differ):

* ``dtype`` sets the precision of the transformer layers: ``float32``, ``float16``,
  ``bfloat16`` or ``auto``. Pooling, any dense layer and the L2 normalisation always run in
  float32, and vectors are stored as float32. ``auto`` resolves (see :func:`resolve_dtype`) to
  ``bfloat16`` on CUDA GPUs that support it and to ``float32`` everywhere else, CPUs included
  (bf16 fails the ranking half of the fidelity gate there); it never picks ``float16``.
* ``backend`` is ``torch`` (sentence-transformers as loaded; bf16/fp16 through autocast on the
  CPU, through ``.to(dtype)`` of the transformer on GPUs) or ``openvino`` (CPU only: the
  transformer module converted once per process with ``openvino.convert_model`` and compiled
  for the CPU with the dtype as OpenVINO's inference precision; needs the ``openvino`` package).

The cache is a folder of immutable shards (:mod:`structablate.store`) keyed by
``sha256(model signature, text)``; a text shared by several conditions (or by a rerun) is
embedded once. Every job commits its own shards (temp file, fsync, atomic rename), so any number
of jobs on any number of nodes share one cache over NFS, and a killed job loses only the batch
it had not committed.
"""

from __future__ import annotations

import functools
import hashlib
import queue
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from structablate.errors import EmbedderConfigError
from structablate.model_paths import resolve_model_path
from structablate.settings import (
    EmbedderSettings,
    backend_device_problem,
    is_gpu,
    planned_dtype,
)
from structablate.store.files import StoreError
from structablate.store.folder import StoreSettings
from structablate.store.lock import LockSettings, StageLock
from structablate.store.typed import VectorStore, fill_found

_OV_PRECISION = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def cpu_has_native_bf16() -> bool:
    """Whether this CPU has bf16 dot-product instructions (x86 AVX512-BF16 or AMX-BF16).

    Without them PyTorch emulates bf16 (slower than float32) and OpenVINO falls back to
    float32; an explicit ``bfloat16`` on such a CPU warns (torch) or is refused (openvino).
    """
    import torch

    cpu = getattr(torch, "cpu", None)
    for probe in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        fn = getattr(cpu, probe, None)
        if fn is not None:
            try:
                if fn():
                    return True
            except RuntimeError:  # pragma: no cover - torch built without cpuinfo
                pass
    return False


@functools.cache
def resolve_dtype(dtype: str, device: str = "cpu") -> str:
    """The precision that ``dtype`` means on ``device``: never ``auto``; always
    :func:`planned_dtype`'s answer (so what a job's trigger recorded is what it ran).

    ``auto`` is ``bfloat16`` on a CUDA device, which must compute bf16 natively
    (``torch.cuda.is_bf16_supported(including_emulation=False)``, Ampere and later; an older
    GPU is refused with the fix: set ``dtype`` explicitly), and ``float32`` everywhere else:
    Apple MPS and every CPU. On the CPU, bf16 is explicit opt-in only: it passes the cosine
    part of the fidelity check of ``bench/bench_embedding.py`` (>= 0.9999 against float32 for
    every QASPER text) but not the exact-top-10 part (~70 % of QASPER questions identical to
    float32's), and without AVX512-BF16/AMX it is emulated and slower than float32.
    Explicit values are returned unchanged.
    """
    planned = planned_dtype(dtype, device)
    if dtype != "auto" or not is_gpu(device):
        return planned
    import torch

    if not torch.cuda.is_available():
        raise EmbedderConfigError(f"embedder device {device!r}: CUDA is not available here")
    index = torch.device(device).index
    with torch.cuda.device(index if index is not None else torch.cuda.current_device()):
        try:
            ok = torch.cuda.is_bf16_supported(including_emulation=False)
        except TypeError:  # pragma: no cover - older torch without the keyword
            ok = torch.cuda.is_bf16_supported()
        name = torch.cuda.get_device_name()
    if not ok:
        raise EmbedderConfigError(
            f"dtype 'auto' on device {device!r} means bfloat16, which this GPU ({name}) does not "
            "compute natively: set dtype: float16 or float32 for this embedder/reranker")
    return planned


def check_embedder(cfg: EmbedderSettings, where: str = "embedder") -> None:
    """What the schema cannot say about an embedder's settings: OpenVINO runs on the CPU only.
    Raises :class:`EmbedderConfigError` naming the key."""
    if why := backend_device_problem(cfg.backend, cfg.device):
        raise EmbedderConfigError(f"{where}.backend: {why}")


def embedder_signature(cfg: EmbedderSettings) -> str:
    """What a cached vector depends on besides the text (``dtype: auto`` resolved on this
    machine): model, truncation length, batch shape, precision and runtime."""
    return (
        f"{cfg.model}|len={cfg.max_seq_length}|bucket={cfg.length_bucket}|"
        f"batch={cfg.batch_size}|norm=1|"
        f"dtype={resolve_dtype(cfg.dtype, cfg.device)}|backend={cfg.backend}"
    )


def plan_batches(lengths: Sequence[int], length_bucket: int, batch_size: int,
                 max_seq_length: int) -> list[tuple[int, list[int]]]:
    """Fixed-shape batches: ``(padded_length, rows)`` with ``len(rows) <= batch_size``.

    ``lengths[i]`` is text ``i``'s token count with special tokens. A text goes to the bucket
    ``min(max_seq_length, ceil(length / length_bucket) * length_bucket)``; buckets in ascending
    order, rows in input order within a bucket, ``batch_size`` rows per batch (the last batch
    of a bucket is filled with empty texts when run). Every batch runs at shape
    ``(batch_size, padded_length)`` whatever the rows are.
    """
    buckets: dict[int, list[int]] = {}
    for i, length in enumerate(lengths):
        padded = min(max_seq_length, -(-length // length_bucket) * length_bucket)
        buckets.setdefault(padded, []).append(i)
    return [(padded, idx[k : k + batch_size])
            for padded in sorted(buckets) for idx in [buckets[padded]]
            for k in range(0, len(idx), batch_size)]


def padded_tokens(plan: Sequence[tuple[int, list[int]]], batch_size: int) -> int:
    """Tokens a plan computes, empty filler rows included (``batch_size * padded`` each)."""
    return sum(batch_size * padded for padded, _ in plan)


@dataclass
class Tokenized:
    """Texts (or text pairs) tokenized once, for planning and for the batches.

    ``ids[i]``: token ids of item ``i`` with the model's special tokens, truncated to the
    truncation length; ``type_ids[i]``: its segment ids (None for a model without
    ``token_type_ids``); ``lengths[i]``: its token count *before* truncation (so
    ``lengths[i] > max_length`` means item ``i`` was cut).
    """

    ids: list[list[int]]
    type_ids: list[list[int]] | None
    lengths: list[int]
    seconds: float = 0.0
    """Wall seconds the tokenizer took."""

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, rows: Sequence[int]) -> Tokenized:
        """The items ``rows`` (in that order)."""
        return Tokenized([self.ids[i] for i in rows],
                         None if self.type_ids is None else [self.type_ids[i] for i in rows],
                         [self.lengths[i] for i in rows])


def tokenize_once(tokenizer, first: Sequence[str], second: Sequence[str] | None,
                  max_length: int, truncation: str | bool = True) -> Tokenized:
    """One batch call of a (fast) tokenizer over all items, giving the ids the fixed-shape
    batches are built from and the untruncated lengths the plan and statistics use.

    Items longer than ``max_length`` are tokenized a second time with ``truncation`` at
    ``max_length`` (only those), so every item's ids equal what the tokenizer gives with
    truncation at the model's length, as the batches of earlier versions (tokenized per batch
    at the bucket length, which is the truncation length for every cut item) did.
    """
    t0 = time.perf_counter()
    want_tt = "token_type_ids" in getattr(tokenizer, "model_input_names", ())
    kw = {"add_special_tokens": True, "return_attention_mask": False,
          "return_token_type_ids": want_tt, "verbose": False}
    args = (list(first),) if second is None else (list(first), list(second))
    if not args[0]:
        return Tokenized([], [] if want_tt else None, [], 0.0)
    enc = tokenizer(*args, truncation=False, **kw)
    ids = list(enc["input_ids"])
    tt = list(enc["token_type_ids"]) if want_tt else None
    lengths = [len(x) for x in ids]
    cut = [i for i, n in enumerate(lengths) if n > max_length]
    if cut:
        sub = tokenizer(*([a[i] for i in cut] for a in args), truncation=truncation,
                        max_length=max_length, **kw)
        for j, i in enumerate(cut):
            ids[i] = sub["input_ids"][j]
            if tt is not None:
                tt[i] = sub["token_type_ids"][j]
    return Tokenized(ids, tt, lengths, time.perf_counter() - t0)


class BatchBuilder:
    """Fixed-shape int64 input arrays from :class:`Tokenized` items, as the tokenizer would pad
    them (``input_ids`` padded with the pad token, ``attention_mask`` 0 on padding,
    ``token_type_ids`` with the pad segment id; left or right as the tokenizer pads). Rows
    beyond the items are filled with ``filler`` (the tokenized empty text or pair)."""

    def __init__(self, tokenizer, filler: Tokenized):
        self.pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)
        self.pad_type = int(getattr(tokenizer, "pad_token_type_id", 0) or 0)
        self.left = getattr(tokenizer, "padding_side", "right") == "left"
        self.names = [n for n in ("input_ids", "token_type_ids", "attention_mask")
                      if n in getattr(tokenizer, "model_input_names", ())
                      or n != "token_type_ids"]
        if filler.type_ids is None and "token_type_ids" in self.names:
            self.names.remove("token_type_ids")
        self.filler = filler

    def build(self, tok: Tokenized, rows: Sequence[int], padded: int, n_rows: int
              ) -> dict[str, np.ndarray]:
        """Arrays of shape ``(n_rows, padded)``: row ``j`` is item ``rows[j]``, the rest filler."""
        ids = np.full((n_rows, padded), self.pad_id, dtype=np.int64)
        mask = np.zeros((n_rows, padded), dtype=np.int64)
        tt = (np.full((n_rows, padded), self.pad_type, dtype=np.int64)
              if "token_type_ids" in self.names else None)
        items = [(tok, i) for i in rows] + [(self.filler, 0)] * (n_rows - len(rows))
        for r, (src, i) in enumerate(items):
            seq = src.ids[i]
            n = len(seq)
            sl = slice(padded - n, padded) if self.left else slice(0, n)
            ids[r, sl] = seq
            mask[r, sl] = 1
            if tt is not None:
                tt[r, sl] = src.type_ids[i]
        out = {"input_ids": ids}
        if tt is not None:
            out["token_type_ids"] = tt
        out["attention_mask"] = mask
        return out


def on_device(arrays: dict[str, np.ndarray], device: str) -> dict:
    """torch tensors of ``arrays`` on ``device``: on CUDA copied from pinned host memory without
    blocking the host (the copy is ordered on the current stream before the forward pass); on
    the CPU the arrays are wrapped without a copy."""
    import torch

    tensors = {k: torch.from_numpy(v) for k, v in arrays.items()}
    if torch.device(device).type == "cuda":
        return {k: t.pin_memory().to(device, non_blocking=True) for k, t in tensors.items()}
    return tensors


def in_background(items: Iterator, depth: int = 2) -> Iterator:
    """Iterate ``items`` in a producer thread, ``depth`` ahead of the consumer (host work such
    as batch assembly and pinning overlaps the device's compute). Exceptions of the producer
    are raised in the consumer; closing the consumer stops the producer."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    end = object()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        q.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put((end, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            q.put((end, exc))

    thread = threading.Thread(target=produce, name="batch-producer", daemon=True)
    thread.start()
    try:
        while True:
            item, exc = q.get()
            if item is end:
                if exc is not None:
                    raise exc
                return
            yield item
    finally:
        stop.set()
        while thread.is_alive():
            try:
                q.get_nowait()
            except queue.Empty:
                thread.join(0.05)


def use_sdpa(hf_model) -> str:
    """Ask a transformers model to run attention with PyTorch's fused SDPA kernels where it
    supports them (flash / memory-efficient kernels on GPUs in half precision); return the
    attention implementation the model now uses (``eager`` where SDPA is not supported)."""
    config = getattr(hf_model, "config", None)
    current = getattr(config, "_attn_implementation", None)
    if current == "sdpa" or config is None:
        return str(current)
    setter = getattr(hf_model, "set_attn_implementation", None)
    try:
        if setter is not None:
            setter("sdpa")
        else:  # pragma: no cover - older transformers
            config._attn_implementation = "sdpa"
    except (ValueError, ImportError, AttributeError):
        return str(current)
    return str(getattr(config, "_attn_implementation", current))


class _OpenVinoTransformer:
    """A sentence-transformers transformer module compiled by OpenVINO for the CPU."""

    def __init__(self, module, input_names: Sequence[str], dtype: str, threads: int):
        try:
            import openvino as ov
        except ImportError as exc:
            raise EmbedderConfigError(
                "embedder backend 'openvino' needs the openvino package "
                "(pip install 'structablate[openvino]')") from exc
        import torch

        self.input_names = list(input_names)
        names = self.input_names

        class _Tokens(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, *tensors):
                return self.inner(dict(zip(names, tensors, strict=True)))["token_embeddings"]

        example = tuple(torch.ones((2, 16), dtype=torch.long) for _ in names)
        with torch.inference_mode(False), torch.no_grad():
            converted = ov.convert_model(_Tokens(module).eval(), example_input=example)
        for port, name in zip(converted.inputs, names, strict=True):
            port.get_tensor().set_names({name})
        precision = _OV_PRECISION[dtype]
        self.compiled = ov.Core().compile_model(converted, "CPU", {
            "INFERENCE_PRECISION_HINT": precision,
            "INFERENCE_NUM_THREADS": int(threads),
            "NUM_STREAMS": 1,
            "PERFORMANCE_HINT": "LATENCY",
            "ENABLE_CPU_PINNING": False,
        })
        got = self.compiled.get_property("INFERENCE_PRECISION_HINT")
        got = getattr(got, "get_type_name", lambda: str(got))()
        if got != precision:
            raise EmbedderConfigError(
                f"embedder dtype {dtype!r}: OpenVINO runs this model in {got} on this CPU "
                f"(no native {dtype} support); set dtype 'float32' or 'auto'")
        self.request = self.compiled.create_infer_request()

    def __call__(self, feats: dict[str, np.ndarray]) -> np.ndarray:
        inputs = {n: np.ascontiguousarray(feats[n], dtype=np.int64) for n in self.input_names}
        result = self.request.infer(inputs)
        return np.array(result[self.compiled.output(0)], dtype=np.float32, copy=True)


class Embedder:
    """A sentence-transformers model run with fixed batch shapes (see module docstring)."""

    def __init__(self, cfg: EmbedderSettings):
        import torch
        from sentence_transformers import SentenceTransformer

        self.cfg = cfg
        self._torch = torch
        check_embedder(cfg)
        self.dtype = resolve_dtype(cfg.dtype, cfg.device)
        self.model = SentenceTransformer(resolve_model_path(cfg.model), device=cfg.device)
        if cfg.max_seq_length is not None:
            self.model.max_seq_length = cfg.max_seq_length
        self.model.eval()
        self.max_seq_length = int(self.model.max_seq_length)
        self.dim = int(self.model.get_embedding_dimension())
        self.tokenizer = self.model.tokenizer
        self._transformer = self.model[0]
        self._rest = list(self.model)[1:]
        self._autocast = None
        self._ov: _OpenVinoTransformer | None = None
        if cfg.backend == "openvino":
            names = list(self.tokenizer(["a"], return_tensors="np").keys())
            self._ov = _OpenVinoTransformer(self._transformer, names, self.dtype,
                                            torch.get_num_threads())
        elif self.dtype != "float32":
            tdtype = getattr(torch, self.dtype)
            if torch.device(cfg.device).type == "cpu":
                if self.dtype == "bfloat16" and not cpu_has_native_bf16():
                    warnings.warn(
                        f"embedder {cfg.model!r}: dtype bfloat16 on a CPU without AVX512-BF16/"
                        "AMX is emulated and slower than float32",
                        stacklevel=2)
                # weights stay float32; matmuls run in dtype, norms and softmax in float32
                self._autocast = tdtype
            else:
                self._transformer.to(tdtype)
        self._cuda = torch.device(cfg.device).type == "cuda"
        self.attention = str(getattr(getattr(self._transformer.auto_model, "config", None),
                                     "_attn_implementation", "unknown"))
        if self._cuda:
            self.attention = use_sdpa(self._transformer.auto_model)
        self._builder = BatchBuilder(self.tokenizer, self.tokenize([""]))
        self.padded_tokens = 0
        """Tokens of the batches :meth:`encode_tokens` ran so far, filler rows included."""
        self.real_tokens = 0
        """Tokens of the texts those batches held (after truncation)."""

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Token counts including the model's special tokens, without truncation."""
        enc = self.tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False,
                             return_attention_mask=False, return_token_type_ids=False)
        return [len(ids) for ids in enc["input_ids"]]

    def tokenize(self, texts: Sequence[str]) -> Tokenized:
        """``texts`` tokenized once (one batch call), truncated to ``max_seq_length``."""
        return tokenize_once(self.tokenizer, texts, None, self.max_seq_length)

    def plan(self, texts: Sequence[str] | Tokenized) -> list[tuple[int, list[int]]]:
        """The fixed-shape batches that :meth:`encode` runs for ``texts``."""
        lengths = texts.lengths if isinstance(texts, Tokenized) else self.token_lengths(texts)
        return plan_batches(lengths, self.cfg.length_bucket, self.cfg.batch_size,
                            self.max_seq_length)

    def _forward(self, arrays: dict[str, np.ndarray]):
        """L2-normalised float32 vectors of one fixed-shape batch, as a tensor on the device."""
        torch = self._torch
        with torch.inference_mode():
            if self._ov is not None:
                feats = {k: torch.from_numpy(v) for k, v in arrays.items()}
                feats["token_embeddings"] = torch.from_numpy(self._ov(arrays))
            else:
                feats = on_device(arrays, self.cfg.device)
                if self._autocast is not None:
                    with torch.autocast("cpu", dtype=self._autocast):
                        feats = self._transformer(feats)
                else:
                    feats = self._transformer(feats)
            feats["token_embeddings"] = feats["token_embeddings"].float()
            for module in self._rest:
                feats = module(feats)
            emb = feats["sentence_embedding"].float()
            # vectors are L2-normalised: the inner product of retrieval is the cosine
            return torch.nn.functional.normalize(emb, p=2, dim=-1)

    def _batches(self, tok: Tokenized, plan: list[tuple[int, list[int]]]
                 ) -> Iterator[tuple[list[int], dict[str, np.ndarray]]]:
        bs = self.cfg.batch_size
        for padded, rows in plan:
            yield rows, self._builder.build(tok, rows, padded, bs)

    def encode_tokens(self, tok: Tokenized, progress: bool = False, desc: str = "embed"
                      ) -> np.ndarray:
        """float32 vectors of tokenized texts, row ``i`` for item ``i``.

        Batches are assembled from the token ids (on a GPU in a producer thread, pinned and
        copied without blocking); vectors stay on the device until all batches ran and come
        back in one copy.
        """
        out = np.zeros((len(tok), self.dim), dtype=np.float32)
        if not len(tok):
            return out
        plan = self.plan(tok)
        batches = self._batches(tok, plan)
        if self._cuda:
            batches = in_background(batches)
        rows_done: list[int] = []
        parts = []
        bar = tqdm(total=len(plan), desc=desc, disable=not progress, unit="batch")
        try:
            for rows, arrays in batches:
                parts.append(self._forward(arrays)[: len(rows)])
                rows_done.extend(rows)
                bar.update(1)
        finally:
            bar.close()
            if hasattr(batches, "close"):
                batches.close()
        out[rows_done] = self._torch.cat(parts).cpu().numpy()
        self.padded_tokens += padded_tokens(plan, self.cfg.batch_size)
        self.real_tokens += sum(min(n, self.max_seq_length) for n in tok.lengths)
        return out

    def encode_batches(self, texts: Sequence[str], progress: bool = False,
                       desc: str = "embed") -> Iterator[tuple[list[int], np.ndarray]]:
        """Yield ``(rows, vectors)`` batch by batch: ``vectors[j]`` is ``texts[rows[j]]``'s."""
        tok = self.tokenize(texts)
        plan = self.plan(tok)
        bar = tqdm(total=len(plan), desc=desc, disable=not progress, unit="batch")
        try:
            for rows, arrays in self._batches(tok, plan):
                yield rows, self._forward(arrays)[: len(rows)].cpu().numpy()
                bar.update(1)
        finally:
            bar.close()

    def encode(self, texts: Sequence[str], progress: bool = False, desc: str = "embed"
               ) -> np.ndarray:
        """float32 vectors (L2-normalised), row ``i`` for ``texts[i]``."""
        return self.encode_tokens(self.tokenize(texts), progress=progress, desc=desc)


@dataclass
class EmbeddingStats:
    """Bookkeeping of one :func:`embed_texts` call."""

    texts: int = 0
    unique_texts: int = 0
    cache_hits: int = 0
    computed: int = 0
    truncated: int = 0
    seconds_computing: float = 0.0
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        d = {
            "texts": self.texts,
            "unique_texts": self.unique_texts,
            "cache_hits": self.cache_hits,
            "computed": self.computed,
            "truncated": self.truncated,
            "truncation_rate": self.truncated / self.texts if self.texts else 0.0,
            "seconds_computing": round(self.seconds_computing, 3),
            "texts_per_second": (
                round(self.computed / self.seconds_computing, 2) if self.seconds_computing else None
            ),
        }
        d.update(self.extra)
        return d


class EmbeddingCache:
    """Content-addressed float32 vectors in a store folder shared by many jobs.

    ``path`` is a folder (created if missing). Each :meth:`put_many` commits one shard at once,
    so a killed job loses at most the batch it was computing. An unwritable folder raises
    :class:`~structablate.store.files.StoreUnwritable` naming it; corrupt shards are moved to
    ``<path>/quarantine/`` with a warning and their vectors recomputed.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False,
                 settings: StoreSettings | None = None):
        self.path = Path(path)
        self.store = VectorStore(self.path, readonly=readonly, settings=settings,
                                 label="embedding cache", setting="`results:`")

    @staticmethod
    def key(signature: str, text: str) -> bytes:
        return hashlib.sha256(signature.encode() + b"\x00" + text.encode()).digest()

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Cached vectors (read-only float32 arrays) of the keys that have one."""
        return self.store.get_vectors(keys)

    def put_many(self, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        """Store vectors and commit them (one shard) before returning."""
        self.store.put_vectors(items)
        self.store.flush()

    def refresh(self) -> int:
        """Pick up vectors other jobs committed since; return the number of new shards."""
        return self.store.refresh(force=True)

    @property
    def quarantined(self) -> list[str]:
        """Corrupt shards met so far (moved aside; their vectors were recomputed)."""
        return self.store.quarantined

    def stage_lock(self, stage: str, settings: LockSettings | None = None) -> StageLock:
        """A lock that keeps a second job of ``stage`` off this cache (not yet acquired)."""
        return self.store.stage_lock(stage, settings=settings)

    def __len__(self) -> int:
        return len(self.store)

    def close(self) -> None:
        self.store.close()


def embed_texts(
    texts: Sequence[str],
    embedder: Embedder,
    cache: EmbeddingCache | None = None,
    *,
    progress: bool = True,
    desc: str = "embed",
    commit_every: int = 2048,
) -> tuple[np.ndarray, EmbeddingStats]:
    """Vectors for ``texts`` (row per text), computing only what the cache lacks.

    Each distinct text is tokenized once. The texts to compute go in parts of ``commit_every``
    (each part's vectors are committed to the cache before the next); the next part is
    tokenized in a worker thread while the current one runs through the model.
    """
    stats = EmbeddingStats(texts=len(texts))
    sig = embedder_signature(embedder.cfg)
    order: dict[str, int] = {}
    for t in texts:
        order.setdefault(t, len(order))
    unique = list(order)
    stats.unique_texts = len(unique)
    keys = [EmbeddingCache.key(sig, t) for t in unique]
    vecs = np.zeros((len(unique), embedder.dim), dtype=np.float32)
    lengths = np.zeros(len(unique), dtype=np.int64)
    missing = list(range(len(unique)))
    if cache is not None:
        missing = _fill_from_cache(cache, keys, missing, vecs, stats)
    parts = [missing[c: c + commit_every] for c in range(0, len(missing), commit_every)]
    padded0, real0 = embedder.padded_tokens, embedder.real_tokens
    tokenize_s = 0.0
    t0 = time.perf_counter()
    done = 0
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize") as pool:
        ahead = pool.submit(embedder.tokenize, [unique[i] for i in parts[0]]) if parts else None
        have = set(missing)
        cached = [i for i in range(len(unique)) if i not in have]
        if cached:  # lengths only, for the truncation count
            lengths[cached] = embedder.token_lengths([unique[i] for i in cached])
        for k, part in enumerate(parts):
            tok = ahead.result()
            tokenize_s += tok.seconds
            lengths[part] = tok.lengths
            if k + 1 < len(parts):
                ahead = pool.submit(embedder.tokenize, [unique[i] for i in parts[k + 1]])
            if cache is not None and k > 0:
                # jobs running at the same time may have committed some of these meanwhile
                cache.refresh()
                still = set(_fill_from_cache(cache, keys, part, vecs, stats))
                keep = [j for j, i in enumerate(part) if i in still]
                part, tok = [part[j] for j in keep], tok.take(keep)
            done += len(part)
            if not part:
                continue
            got = embedder.encode_tokens(
                tok, progress=progress, desc=f"{desc} [{sum(map(len, parts[:k + 1]))}/"
                f"{len(missing)}]")
            vecs[part] = got
            if cache is not None:
                cache.put_many([(keys[i], got[j]) for j, i in enumerate(part)])
    stats.seconds_computing = time.perf_counter() - t0
    stats.computed = done
    counts = np.bincount([order[t] for t in texts], minlength=len(unique)) if texts else []
    stats.truncated = int(np.sum(counts * (lengths > embedder.max_seq_length))) if texts else 0
    stats.extra.update({
        "seconds_tokenizing": round(tokenize_s, 3),
        "padded_tokens": embedder.padded_tokens - padded0,
        "real_tokens": embedder.real_tokens - real0,
        "attention": embedder.attention,
    })
    if cache is not None and cache.quarantined:
        stats.extra["cache_quarantined"] = list(cache.quarantined)
    return vecs[[order[t] for t in texts]], stats


def _fill_from_cache(cache: EmbeddingCache, keys: Sequence[bytes], rows: list[int],
                     vecs: np.ndarray, stats: EmbeddingStats) -> list[int]:
    """Copy cached vectors of ``rows`` into ``vecs``; return the rows still missing."""

    def place(i: int, v: np.ndarray) -> None:
        if v.shape != (vecs.shape[1],):
            raise StoreError(
                f"embedding cache {cache.path}: a cached vector has {v.shape[0]} dimensions, "
                f"the embedder gives {vecs.shape[1]}; the cache is inconsistent: delete "
                f"{cache.path} (it only saves recomputation)")
        vecs[i] = v

    still = fill_found(cache.get_many([keys[i] for i in rows]), keys, rows, place)
    stats.cache_hits += len(rows) - len(still)
    return still
