"""How an embedder's transformer layers run, one class per ``embedders.<name>.backend``, in
:data:`FACTORIES` under the names of :data:`structablate.settings.EMBEDDING_BACKENDS` (where
each backend's facts live; a test keeps the two equal).

A backend is built once per :class:`~structablate.embedding.Embedder` from the loaded
sentence-transformers model's transformer module, its tokenizer, the precision ``dtype``
resolved on this machine (:func:`~structablate.embedding.device.resolve_dtype`) and the
embedder's settings. It is then called, inside ``torch.inference_mode()``, on the int64 input
arrays of each fixed-shape batch (:class:`~structablate.embedding.batches.BatchBuilder`) and
gives the features the model's later modules (pooling, any dense layer, normalisation) read:
a dict of torch tensors holding ``token_embeddings`` of shape ``(rows, padded_length, dim)``.

A new backend: its facts in :data:`~structablate.settings.EMBEDDING_BACKENDS`, and its class
here with a :data:`FACTORIES` entry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from structablate.errors import EmbedderConfigError
from structablate.settings import EmbedderSettings

from .device import autocast_dtype, on_device

_OV_PRECISION = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


class TransformerBackend(Protocol):
    """A transformer module made runnable: int64 batch arrays in, features out."""

    def __call__(self, arrays: dict[str, np.ndarray]) -> dict: ...


class TorchTransformer:
    """The transformer module as loaded, run by torch on the embedder's device (any device):
    a precision below float32 through autocast on the CPU, by converting the module on other
    devices (:func:`~structablate.embedding.device.autocast_dtype`)."""

    rows_independent = False
    """Whether a row's output may be taken as independent of how many rows its batch has
    (then checked on this machine by :meth:`structablate.embedding.Embedder.rows_invariant`):
    not claimed for torch (MKL and cuBLAS pick kernels by the matrix shape)."""

    def __init__(self, module, tokenizer, dtype: str, cfg: EmbedderSettings):
        import torch

        self._torch = torch
        self.module = module
        self.device = cfg.device
        self.autocast = autocast_dtype(module, dtype, cfg.device, f"embedder {cfg.model!r}")

    def __call__(self, arrays: dict[str, np.ndarray]) -> dict:
        feats = on_device(arrays, self.device)
        if self.autocast is not None:
            with self._torch.autocast("cpu", dtype=self.autocast):
                return self.module(feats)
        return self.module(feats)


class OpenVinoTransformer:
    """The transformer module converted once per process with ``openvino.convert_model`` and
    compiled for the CPU with ``dtype`` as OpenVINO's inference precision, over torch's
    thread count (CPU only; needs the ``openvino`` package). A precision this CPU does not
    compute natively is refused, naming the fix."""

    rows_independent = True
    """OpenVINO's CPU kernels gave every row bit-identical outputs in float32: MiniLM at 1 to
    16 rows and padded lengths 16 to 64, MiniLM and mpnet at 1 to 4 rows on real QASPER chunks
    (docs/embedding.md, "Rows per batch"); the embedder still checks it on this machine before
    it runs batches without filler rows."""

    def __init__(self, module, tokenizer, dtype: str, cfg: EmbedderSettings):
        try:
            import openvino as ov
        except ImportError as exc:
            raise EmbedderConfigError(
                "embedder backend 'openvino' needs the openvino package "
                "(pip install 'structablate[openvino]')") from exc
        import torch

        self._torch = torch
        self.input_names = list(tokenizer(["a"], return_tensors="np").keys())
        threads = torch.get_num_threads()
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

    def __call__(self, arrays: dict[str, np.ndarray]) -> dict:
        torch = self._torch
        feats = {k: torch.from_numpy(v) for k, v in arrays.items()}
        feats["token_embeddings"] = torch.from_numpy(self._token_embeddings(arrays))
        return feats

    def _token_embeddings(self, feats: dict[str, np.ndarray]) -> np.ndarray:
        inputs = {n: np.ascontiguousarray(feats[n], dtype=np.int64) for n in self.input_names}
        result = self.request.infer(inputs)
        return np.array(result[self.compiled.output(0)], dtype=np.float32, copy=True)


FACTORIES: dict[str, Callable[[Any, Any, str, EmbedderSettings], TransformerBackend]] = {
    "torch": TorchTransformer,
    "openvino": OpenVinoTransformer,
}
"""``embedders.<name>.backend`` name -> the class that runs the transformer module (called
with the module, the tokenizer, the resolved ``dtype`` and the embedder's settings). The names
are those of :data:`structablate.settings.EMBEDDING_BACKENDS`, where each backend's facts
live."""
