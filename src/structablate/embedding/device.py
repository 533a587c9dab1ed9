"""The device side of running a transformer: the precision a ``dtype`` means on this machine
(refused where the hardware cannot compute it), native bf16 on the CPU, PyTorch's fused
attention, and the host-to-device copy of a batch overlapped with the device's compute.

The precision from the settings alone (:func:`structablate.settings.planned_dtype`) is what a
job's rerun trigger records; :func:`resolve_dtype` answers the same on the machine that runs
the job, or refuses.
"""

from __future__ import annotations

import functools
import queue
import threading
import warnings
from collections.abc import Iterator

import numpy as np

from structablate.errors import EmbedderConfigError
from structablate.settings import is_gpu, planned_dtype


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


def autocast_dtype(module, dtype: str, device: str, who: str):
    """Make torch ``module`` compute in ``dtype`` (resolved, :func:`resolve_dtype`) on
    ``device``; return the torch dtype its calls must autocast to, or None.

    ``float32``: nothing changes (None). On the CPU the weights stay float32 and the calls
    autocast to ``dtype`` (matmuls in ``dtype``, norms and softmax in float32); bf16 on a CPU
    without AVX512-BF16/AMX warns, naming ``who`` (it is emulated and slower than float32).
    On other devices the module is converted to ``dtype`` (None)."""
    if dtype == "float32":
        return None
    import torch

    tdtype = getattr(torch, dtype)
    if torch.device(device).type != "cpu":
        module.to(tdtype)
        return None
    if dtype == "bfloat16" and not cpu_has_native_bf16():
        warnings.warn(f"{who}: dtype bfloat16 on a CPU without AVX512-BF16/AMX is emulated and "
                      "slower than float32", stacklevel=3)
    return tdtype


def on_device(arrays: dict[str, np.ndarray], device: str) -> dict:
    """torch tensors of ``arrays`` on ``device``: on CUDA copied from pinned host memory without
    blocking the host (the copy is ordered on the current stream before the forward pass); on
    the CPU the arrays are wrapped without a copy."""
    import torch

    tensors = {k: torch.from_numpy(v) for k, v in arrays.items()}
    if is_gpu(device):
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

