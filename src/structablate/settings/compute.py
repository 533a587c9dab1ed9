"""Where and in what precision the embedders and rerankers compute: the device, dtype and
embedding backend vocabulary, answered from the settings alone.

:data:`DTYPES` is the one list of precisions a model's ``dtype`` may name;
:data:`EMBEDDING_BACKENDS` maps each ``embedders.<name>.backend`` to what is known of it
without loading anything (the devices it runs on); :func:`is_gpu` is the one answer to "does
this ``device`` setting name a GPU?"; :func:`planned_dtype` is the precision a ``dtype`` runs
in on a device, with no hardware probe, so the plan can put it in a job's rerun trigger on a
node without the GPU. How each backend runs a model lives with its code
(:data:`structablate.embedding.backends.FACTORIES`, keyed by the same names; a test keeps the
two equal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from structablate.errors import EmbedderConfigError

DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16", "auto")
"""The precisions of a model's transformer layers a ``dtype`` may name; ``auto`` resolves per
device (:func:`planned_dtype`)."""

Dtype = Literal[DTYPES]  # type: ignore[valid-type]
"""The value of an embedder's or reranker's ``dtype``: a name of :data:`DTYPES`."""


@dataclass(frozen=True)
class EmbeddingBackendFacts:
    """What is known of an embedding backend from its name alone: ``cpu_only``, it runs on
    device ``cpu`` and nowhere else; ``doc``, what it is."""

    cpu_only: bool
    doc: str


EMBEDDING_BACKENDS: dict[str, EmbeddingBackendFacts] = {
    "torch": EmbeddingBackendFacts(cpu_only=False, doc="sentence-transformers as loaded, any "
                                                        "device"),
    "openvino": EmbeddingBackendFacts(cpu_only=True, doc="the transformer compiled by OpenVINO "
                                                         "for the CPU (the fast CPU path)"),
}
"""``embedders.<name>.backend`` name -> facts (order: the schema's)."""

EmbeddingBackendName = Literal[tuple(EMBEDDING_BACKENDS)]  # type: ignore[valid-type]
"""The value of an embedder's ``backend``: a name of :data:`EMBEDDING_BACKENDS`."""


def is_gpu(device: str) -> bool:
    """Whether a torch ``device`` setting (``cpu``, ``cuda``, ``cuda:1``, ``mps``) names a CUDA
    GPU: the device kind before any ``:index`` is ``cuda``."""
    return device.split(":", 1)[0] == "cuda"


def planned_dtype(dtype: str, device: str = "cpu") -> str:
    """The precision ``dtype`` runs in on ``device``, from the settings alone (no hardware
    probe, so the workflow can put it in a job's rerun trigger on a node without the GPU):
    ``auto`` is ``bfloat16`` on CUDA devices (:func:`is_gpu`) and ``float32`` on every other
    device; explicit values are returned unchanged.
    :func:`structablate.embedding.resolve_dtype` gives the same answer on the machine that
    runs the job, or refuses. An unknown ``dtype`` raises :class:`EmbedderConfigError`."""
    if dtype not in DTYPES:
        raise EmbedderConfigError(f"embedder dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    if dtype != "auto":
        return dtype
    return "bfloat16" if is_gpu(device) else "float32"


def backend_device_problem(backend: str, device: str) -> str | None:
    """Why embedding ``backend`` cannot run on ``device`` (one sentence naming both), or None
    where it can."""
    if EMBEDDING_BACKENDS[backend].cpu_only and device != "cpu":
        return (f"{backend!r} runs on device 'cpu' only, not {device!r} (use backend 'torch' "
                "on GPUs)")
    return None
