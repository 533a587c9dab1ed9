"""One LLM client for every generative stage (structure induction, A1 contexts, queries).

* :mod:`~structablate.llm.client` — :class:`LLMClient` (cache in front, deterministic decoding,
  ``cached`` / ``replay`` modes) and :func:`client_from_config` (the ``llm`` config block);
* :mod:`~structablate.llm.backends` — ``vllm`` (in process), ``openai`` (any compatible server),
  ``llamacpp`` (in-process GGUF);
* :mod:`~structablate.llm.cache` — the persistent content-addressed generation cache;
* :mod:`~structablate.llm.gguf` — offline GGUF models shipped inside PyPI wheels;
* :mod:`~structablate.llm.contextualize` — A1 situating contexts.
"""

from structablate.llm.backends import (
    Backend,
    BackendError,
    Generation,
    LlamaCppBackend,
    OpenAIBackend,
    Request,
    Sampling,
    VLLMBackend,
)
from structablate.llm.cache import CacheMiss, JsonlCache, StoreCache, cache_key, open_cache
from structablate.llm.client import LLMClient, client_from_config
from structablate.llm.contextualize import contextualize, contextualize_chunks, truncate_to_tokens

__all__ = [
    "Backend",
    "BackendError",
    "CacheMiss",
    "Generation",
    "JsonlCache",
    "LLMClient",
    "LlamaCppBackend",
    "OpenAIBackend",
    "Request",
    "Sampling",
    "StoreCache",
    "VLLMBackend",
    "cache_key",
    "client_from_config",
    "contextualize",
    "contextualize_chunks",
    "open_cache",
    "truncate_to_tokens",
]
