"""Generation backends: in-process vLLM, any OpenAI-compatible server, in-process llama.cpp.

A backend turns :class:`Request` objects into :class:`Generation` objects and knows nothing
about caching; :class:`structablate.llm.client.LLMClient` puts the cache in front. Heavy
libraries (``vllm``, ``llama_cpp``) are imported only when a backend is constructed, so the
package imports — and replays recorded generations — without them.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import MISSING, dataclass, field
from typing import Any

from structablate.errors import StructablateError
from structablate.settings import (
    LlamaCppSettings,
    LLMSettings,
    OpenAISettings,
    VllmSettings,
    dump,
    parse,
    served_model,
)
from structablate.store.typed import ReportDict, reported, rounded

log = logging.getLogger(__name__)

Message = dict[str, str]


@dataclass(frozen=True)
class Sampling(ReportDict):
    """Decoding parameters. The defaults decode greedily with a fixed seed (deterministic).
    :meth:`as_dict` gives each as its JSON type (part of every cache key)."""

    temperature: float = reported(0.0, form=float)
    top_p: float = reported(1.0, form=float)
    max_tokens: int = reported(512, form=int)
    seed: int = reported(LLMSettings.seed, form=int)
    stop: tuple[str, ...] = reported((), form=list)


@dataclass(frozen=True)
class Request:
    """One chat request: messages, sampling, and an optional JSON schema the output must obey."""

    messages: tuple[Message, ...]
    sampling: Sampling = field(default_factory=Sampling)
    json_schema: dict[str, Any] | None = None


@dataclass
class Generation(ReportDict):
    """A backend's answer: the text plus token counts and wall time where known
    (:meth:`as_dict`: the seconds to a tenth of a millisecond)."""

    text: str = reported(MISSING)
    prompt_tokens: int | None = reported(None)
    completion_tokens: int | None = reported(None)
    seconds: float = reported(0.0, form=rounded(4))
    finish_reason: str | None = reported(None)


class Backend:
    """Base class: ``generate`` one request, ``generate_batch`` many (default: in order)."""

    name = "base"

    def generate(self, request: Request) -> Generation:  # pragma: no cover - interface
        raise NotImplementedError

    def generate_batch(self, requests: Sequence[Request]) -> list[Generation]:
        return [self.generate(r) for r in requests]

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------------------------
# OpenAI-compatible HTTP server


class BackendError(StructablateError, RuntimeError):
    """A backend failed for good (after retries, or on a non-retryable answer)."""


class ContextOverflowError(BackendError):
    """The prompt does not fit the model's context window (raised before generating)."""


_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class OpenAIBackend(Backend):
    """Chat completions against any OpenAI-compatible server (vLLM serve, llama.cpp server, …).

    The API key is read from the environment variable named ``api_key_env`` (never from the
    config itself) and never logged or shown in ``repr``. Transient failures — connection
    errors, timeouts, broken or undecodable bodies, HTTP 408/409/425/429/5xx, and an HTTP 200
    whose body is not JSON (a proxy's error page) — are retried up to ``max_retries`` times with
    exponential backoff (``backoff_s * 2**attempt``, capped at ``max_backoff_s``, or the
    server's ``Retry-After`` when it sends one). At most ``concurrency`` requests are in flight
    at once, across threads.

    ``response_format`` selects how a JSON schema is passed on: ``json_schema`` (OpenAI
    structured outputs, also understood by vLLM serve), ``json_object`` (plain JSON mode), or
    ``none`` (the schema is only described in the prompt).
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str = OpenAISettings.base_url,
        *,
        api_key_env: str | None = OpenAISettings.api_key_env,
        timeout_s: float = OpenAISettings.timeout_s,
        max_retries: int = OpenAISettings.max_retries,
        backoff_s: float = OpenAISettings.backoff_s,
        max_backoff_s: float = OpenAISettings.max_backoff_s,
        concurrency: int = OpenAISettings.concurrency,
        response_format: str = OpenAISettings.response_format,
        extra_body: dict[str, Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        import requests  # installed with the package's dependencies

        if response_format not in ("json_schema", "json_object", "none"):
            raise ValueError(f"openai.response_format must be json_schema|json_object|none, "
                             f"got {response_format!r}")
        self._requests = requests
        self.model = model
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.concurrency = max(1, int(concurrency))
        self.response_format = response_format
        self.extra_body = dict(extra_body or {})
        self._sleep = sleep
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._session_local = threading.local()
        self._api_key: str | None = None
        if api_key_env:
            key = os.environ.get(api_key_env)
            if key is None:
                raise BackendError(
                    f"openai backend: environment variable {api_key_env} (llm.openai.api_key_env)"
                    " is not set"
                )
            self._api_key = key
        self.api_key_env = api_key_env

    def __repr__(self) -> str:
        return (f"OpenAIBackend(model={self.model!r}, url={self.url!r}, "
                f"api_key_env={self.api_key_env!r})")

    def _session(self):
        s = getattr(self._session_local, "s", None)
        if s is None:
            s = self._session_local.s = self._requests.Session()
        return s

    def payload(self, request: Request) -> dict[str, Any]:
        s = request.sampling
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
            "temperature": s.temperature,
            "top_p": s.top_p,
            "max_tokens": s.max_tokens,
            "seed": s.seed,
        }
        if s.stop:
            body["stop"] = list(s.stop)
        if request.json_schema is not None and self.response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": request.json_schema},
            }
        elif request.json_schema is not None and self.response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        body.update(self.extra_body)
        return body

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), self.max_backoff_s)
            except ValueError:
                pass
        return min(self.backoff_s * (2**attempt), self.max_backoff_s)

    def generate(self, request: Request) -> Generation:
        body = self.payload(request)
        headers = {"Content-Type": "application/json"}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key}"
        last_error = ""
        with self._slots:
            for attempt in range(self.max_retries + 1):
                t0 = time.perf_counter()
                retry_after = None
                exc_types = self._requests.exceptions
                try:
                    resp = self._session().post(
                        self.url, json=body, headers=headers, timeout=self.timeout_s
                    )
                except (exc_types.ConnectionError, exc_types.Timeout,
                        exc_types.ChunkedEncodingError, exc_types.ContentDecodingError) as exc:
                    last_error = f"{type(exc).__name__}: {exc}"
                else:
                    if resp.status_code == 200:
                        try:
                            data = resp.json()
                        except ValueError as exc:
                            # a proxy's or gateway's HTML page, a truncated body: transient
                            last_error = (f"HTTP 200 with a body that is not JSON ({exc}; "
                                          f"Content-Type {resp.headers.get('Content-Type')!r}"
                                          f"): {resp.text[:200]!r}")
                        else:
                            return self._parse(data, time.perf_counter() - t0)
                    else:
                        last_error = f"HTTP {resp.status_code}: {resp.text[:300]}"
                        if resp.status_code not in _RETRY_STATUS:
                            raise BackendError(f"openai backend {self.url}: {last_error}")
                        retry_after = resp.headers.get("Retry-After")
                if attempt < self.max_retries:
                    delay = self._delay(attempt, retry_after)
                    log.warning("openai backend %s: %s; retry %d/%d in %.1fs", self.url,
                                last_error, attempt + 1, self.max_retries, delay)
                    self._sleep(delay)
        raise BackendError(
            f"openai backend {self.url}: gave up after {self.max_retries + 1} attempts "
            f"({last_error})"
        )

    def _parse(self, data: Any, seconds: float) -> Generation:
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendError(
                f"openai backend {self.url}: malformed response (no choices[0].message.content;"
                f" is base_url an OpenAI-compatible /v1 endpoint?): {str(data)[:300]}") from exc
        usage = data.get("usage") or {}
        return Generation(
            text=text,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            seconds=seconds,
            finish_reason=choice.get("finish_reason"),
        )

    def generate_batch(self, requests: Sequence[Request]) -> list[Generation]:
        if len(requests) <= 1 or self.concurrency == 1:
            return [self.generate(r) for r in requests]
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self.generate, requests))


# --------------------------------------------------------------------------------------------
# llama.cpp (in process)


_MODEL_PARAMS_LOCK = threading.Lock()


def load_llama(llama_cpp: Any, model_path: str, model_params: Mapping[str, Any],
               **kwargs: Any) -> Any:
    """``llama_cpp.Llama(model_path, **kwargs)`` with fields of the model parameters set.

    llama-cpp-python 0.3.36's ``Llama`` has no argument for model parameters such as
    ``use_extra_bufts`` (and silently ignores unknown keyword arguments): its constructor
    starts from ``llama_cpp.llama_cpp.llama_model_default_params()`` and sets a few fields. So
    for the duration of the constructor that function is replaced by one that returns the
    defaults with ``model_params`` applied; a module-level lock keeps two loads from racing.
    Afterwards the loaded model's ``model_params`` are checked, so a llama-cpp-python that
    stops reading the defaults there fails loudly instead of ignoring the setting.
    """
    lowlevel = llama_cpp.llama_cpp
    known = {name for name, _ in lowlevel.llama_model_params._fields_}
    missing = sorted(set(model_params) - known)
    if missing:
        raise RuntimeError(
            f"llama-cpp-python {getattr(llama_cpp, '__version__', '?')}: llama_model_params "
            f"has no field {', '.join(missing)} (structablate pins llama-cpp-python==0.3.36)"
        )
    with _MODEL_PARAMS_LOCK:
        original = lowlevel.llama_model_default_params

        def defaults():
            params = original()
            for key, value in model_params.items():
                setattr(params, key, value)
            return params

        lowlevel.llama_model_default_params = defaults
        try:
            llm = llama_cpp.Llama(model_path=model_path, **kwargs)
        finally:
            lowlevel.llama_model_default_params = original
    wrong = {k: getattr(llm.model_params, k) for k, v in model_params.items()
             if getattr(llm.model_params, k) != v}
    if wrong:
        llm.close()
        raise RuntimeError(f"llama.cpp loaded {model_path} with model params {wrong}, not "
                           f"{dict(model_params)}")
    return llm


class LlamaCppBackend(Backend):
    """In-process GGUF inference through llama-cpp-python (extra ``llamacpp``).

    Requests run one at a time in order; llama.cpp keeps the KV cache of the previous prompt
    and re-evaluates only the tokens after the longest common prefix, so consecutive prompts
    that share a document prefix (A1 contexts) reuse it. A JSON schema is enforced by a
    grammar (``response_format={"type": "json_object", "schema": …}``).

    ``settings`` (:class:`LlamaCppSettings`, the ``llm.llamacpp`` block) may be overridden key
    by key with keyword arguments (``LlamaCppBackend(path, n_ctx=2048)``), validated the same
    way. ``model_path`` here is the resolved GGUF file; the settings' ``model_path`` and
    ``model_dir`` only matter to :func:`structablate.llm.client.client_from_config`.
    The model is loaded with ``use_extra_bufts`` as set (default off, see the field).
    """

    name = "llamacpp"

    def __init__(
        self,
        model_path: str,
        settings: LlamaCppSettings | None = None,
        *,
        seed: int = LLMSettings.seed,
        **overrides: Any,
    ):
        if overrides or settings is None:
            base = dump(settings or LlamaCppSettings())
            settings = parse(LlamaCppSettings, {**base, **overrides}, "llm.llamacpp")
        try:
            import llama_cpp
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "the llamacpp backend needs llama-cpp-python (pip install "
                "'structablate[llamacpp]')"
            ) from exc
        self.settings = settings
        self.model_path = str(model_path)
        self.n_ctx = settings.n_ctx
        self._lock = threading.Lock()
        self.llm = load_llama(
            llama_cpp,
            self.model_path,
            {"use_extra_bufts": settings.use_extra_bufts},
            n_ctx=settings.n_ctx,
            n_threads=settings.n_threads or max(1, os.cpu_count() or 1),
            n_batch=settings.n_batch,
            n_gpu_layers=settings.n_gpu_layers,
            seed=seed,
            verbose=settings.verbose,
            chat_format=settings.chat_format,
        )

    def count_tokens(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    min_completion_tokens = 16

    def _fit_max_tokens(self, request: Request) -> int:
        """``max_tokens``, lowered to what the context has room for after the prompt.

        The prompt is estimated as its messages' tokens plus 12 per message for the chat
        template. Raises :class:`ContextOverflowError` when fewer than
        ``min_completion_tokens`` remain.
        """
        n_prompt = sum(self.count_tokens(m["content"]) + 12 for m in request.messages)
        room = self.n_ctx - n_prompt
        if room < self.min_completion_tokens:
            raise ContextOverflowError(
                f"llamacpp: a prompt of about {n_prompt} tokens does not fit n_ctx={self.n_ctx} "
                "(raise llm.llamacpp.n_ctx or lower the prompt budget)"
            )
        return min(request.sampling.max_tokens, room)

    def generate(self, request: Request) -> Generation:
        s = request.sampling
        kwargs: dict[str, Any] = {
            "messages": [dict(m) for m in request.messages],
            "temperature": s.temperature,
            "top_p": s.top_p,
            "max_tokens": self._fit_max_tokens(request),
            "seed": s.seed,
        }
        if s.temperature == 0.0:
            kwargs["top_k"] = 1
        if s.stop:
            kwargs["stop"] = list(s.stop)
        if request.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": request.json_schema}
        with self._lock:
            t0 = time.perf_counter()
            out = self.llm.create_chat_completion(**kwargs)
            seconds = time.perf_counter() - t0
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Generation(
            text=choice["message"]["content"] or "",
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            seconds=seconds,
            finish_reason=choice.get("finish_reason"),
        )

    def close(self) -> None:
        close = getattr(self.llm, "close", None)
        if close is not None:
            close()


# --------------------------------------------------------------------------------------------
# vLLM (in process)


def vllm_sampling_kwargs(request: Request) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for ``request``, schema excluded.

    The installed vLLM takes a JSON schema either as ``structured_outputs``
    (``StructuredOutputsParams``, vLLM >= 0.10.2) or as ``guided_decoding``
    (``GuidedDecodingParams``, older); :class:`VLLMBackend` adds it under the right name.
    """
    s = request.sampling
    kwargs: dict[str, Any] = {
        "temperature": s.temperature,
        "top_p": s.top_p,
        "max_tokens": s.max_tokens,
        "seed": s.seed,
    }
    if s.stop:
        kwargs["stop"] = list(s.stop)
    return kwargs


class VLLMBackend(Backend):
    """In-process vLLM (``vllm.LLM`` + ``SamplingParams``) with structured JSON output.

    ``generate_batch`` hands all requests to one ``LLM.chat`` call so vLLM batches them;
    ``enable_prefix_caching`` (default on) lets the chunks of one document share the KV blocks
    of its document prefix (A1 contexts). Runs only where vLLM and a GPU are installed.
    """

    name = "vllm"
    batched = True

    def __init__(
        self,
        model_path: str,
        *,
        seed: int = LLMSettings.seed,
        max_model_len: int | None = VllmSettings.max_model_len,
        gpu_memory_utilization: float = VllmSettings.gpu_memory_utilization,
        tensor_parallel_size: int = VllmSettings.tensor_parallel_size,
        enable_prefix_caching: bool = VllmSettings.enable_prefix_caching,
        **kwargs: Any,
    ):
        try:
            import vllm
        except ImportError as exc:
            raise ImportError(
                "the vllm backend needs vLLM installed (a GPU environment: envs/gpu.yaml); "
                "use llm.backend: openai against a vLLM server, or llamacpp, elsewhere"
            ) from exc
        self._vllm = vllm
        try:
            from vllm.sampling_params import StructuredOutputsParams as _Schema

            self._schema_api = "structured_outputs"
        except ImportError:
            from vllm.sampling_params import GuidedDecodingParams as _Schema

            self._schema_api = "guided_decoding"
        self._schema_cls = _Schema
        llm_kwargs: dict[str, Any] = {
            "model": model_path,
            "seed": seed,
            "gpu_memory_utilization": gpu_memory_utilization,
            "tensor_parallel_size": tensor_parallel_size,
            "enable_prefix_caching": enable_prefix_caching,
        }
        if max_model_len:
            llm_kwargs["max_model_len"] = int(max_model_len)
        llm_kwargs.update(kwargs)
        self.llm = vllm.LLM(**llm_kwargs)

    def sampling_params(self, request: Request):
        kwargs = vllm_sampling_kwargs(request)
        if request.json_schema is not None:
            kwargs[self._schema_api] = self._schema_cls(json=request.json_schema)
        return self._vllm.SamplingParams(**kwargs)

    def generate(self, request: Request) -> Generation:
        return self.generate_batch([request])[0]

    def generate_batch(self, requests: Sequence[Request]) -> list[Generation]:
        if not requests:
            return []
        t0 = time.perf_counter()
        outs = self.llm.chat(
            [[dict(m) for m in r.messages] for r in requests],
            [self.sampling_params(r) for r in requests],
            use_tqdm=False,
        )
        seconds = (time.perf_counter() - t0) / len(requests)
        gens = []
        for out in outs:
            c = out.outputs[0]
            gens.append(Generation(
                text=c.text,
                prompt_tokens=len(out.prompt_token_ids or []),
                completion_tokens=len(c.token_ids or []),
                seconds=seconds,
                finish_reason=c.finish_reason,
            ))
        return gens


def vllm_serve_command(llm: LLMSettings, *, host: str = "127.0.0.1",
                       port: int = 8000) -> list[str]:
    """The ``vllm serve`` command line for an OpenAI-compatible server with ``llm``'s vLLM
    settings (``llm.vllm``), for ``llm.backend: openai`` against it.

    Automatic prefix caching follows ``enable_prefix_caching`` (default on:
    ``--enable-prefix-caching``; off: ``--no-enable-prefix-caching``), so A1's calls of one
    document reuse the KV blocks of its document prefix on the server as they do in process.
    The server loads ``llm.vllm.model_path`` (default ``llm.model``) and serves it under the
    name ``llm.model``, the id the cache keys carry. ``engine_args`` become
    ``--key-with-dashes value`` (``true``: the bare flag; ``false``: ``--no-key``).
    """
    v = llm.vllm
    cmd = ["vllm", "serve", v.model_path or str(llm.model),
           "--served-model-name", str(llm.model),
           "--host", host, "--port", str(int(port)), "--seed", str(llm.seed),
           "--gpu-memory-utilization", str(v.gpu_memory_utilization),
           "--tensor-parallel-size", str(v.tensor_parallel_size),
           "--enable-prefix-caching" if v.enable_prefix_caching
           else "--no-enable-prefix-caching"]
    if v.max_model_len:
        cmd += ["--max-model-len", str(int(v.max_model_len))]
    for key, value in v.engine_args.items():
        flag = "--" + str(key).replace("_", "-")
        if value is True:
            cmd.append(flag)
        elif value is False:
            cmd.append("--no-" + flag[2:])
        else:
            cmd += [flag, json.dumps(value) if isinstance(value, (dict, list)) else str(value)]
    return cmd


# ------------------------------------------------------------------------------- registry


def _openai(llm: LLMSettings) -> Backend:
    o = llm.openai
    return OpenAIBackend(
        model=served_model(llm), base_url=o.base_url, api_key_env=o.api_key_env,
        timeout_s=o.timeout_s, max_retries=o.max_retries, backoff_s=o.backoff_s,
        max_backoff_s=o.max_backoff_s, concurrency=o.concurrency,
        response_format=o.response_format, extra_body=o.extra_body)


def _llamacpp(llm: LLMSettings) -> Backend:
    from structablate.llm.gguf import resolve_gguf

    path = resolve_gguf(served_model(llm), llm.llamacpp.model_dir)
    return LlamaCppBackend(str(path), llm.llamacpp, seed=llm.seed)


def _vllm(llm: LLMSettings) -> Backend:
    v = llm.vllm
    return VLLMBackend(
        served_model(llm), seed=llm.seed, max_model_len=v.max_model_len,
        gpu_memory_utilization=v.gpu_memory_utilization,
        tensor_parallel_size=v.tensor_parallel_size,
        enable_prefix_caching=v.enable_prefix_caching, **v.engine_args)


FACTORIES: dict[str, Callable[[LLMSettings], Backend] | None] = {
    "llamacpp": _llamacpp,
    "openai": _openai,
    "vllm": _vllm,
    "none": None,
}
"""``llm.backend`` name -> a function building that backend from the (stage's merged) llm
settings; None for a backend that only replays. The names are those of
:data:`structablate.settings.LLM_BACKENDS`, where each backend's facts live."""
