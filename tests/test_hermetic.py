"""The suite hides optional extras and starts from an empty model folder (tests/hermetic.py), so
a test that silently needs something installed by hand fails here as on a fresh machine."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import hermetic
import pytest
from conftest import HIDDEN_EXTRAS, REPO


def _pyproject(tmp_path: Path, base: list[str], extras: dict[str, list[str]]) -> Path:
    def arr(xs):
        return "[" + ", ".join(f'"{x}"' for x in xs) + "]"

    text = f'[project]\nname = "x"\ndependencies = {arr(base)}\n[project.optional-dependencies]\n'
    text += "".join(f"{k} = {arr(v)}\n" for k, v in extras.items())
    p = tmp_path / "pyproject.toml"
    p.write_text(text)
    return p


def test_an_extras_only_distribution_is_found_and_a_shared_one_is_not(tmp_path):
    # pyyaml and its closure come only through the extra 'demo'; numpy is also in dev
    p = _pyproject(tmp_path, [], {"dev": ["numpy==2.4.6"], "demo": ["PyYAML>=6", "numpy"]})
    assert hermetic.extras_only_distributions(p) == {"pyyaml": "demo"}
    assert "yaml" in hermetic.top_level_modules("pyyaml")
    # a distribution the base needs transitively is kept (jsonschema needs referencing)
    p = _pyproject(tmp_path, ["jsonschema"], {"dev": [], "demo": ["referencing"]})
    assert hermetic.extras_only_distributions(p) == {}
    # a distribution that is not installed is nothing to hide
    p = _pyproject(tmp_path, [], {"dev": [], "demo": ["surely-not-installed-xyz==1"]})
    assert hermetic.extras_only_distributions(p) == {}


def test_the_tested_extra_and_the_base_are_never_hidden():
    hidden = hermetic.hidden_modules()
    for mod in ("torch", "numpy", "snakemake", "structablate", "pytest", "llama_cpp",
                "openvino", "test"):  # test: the standard library's
        assert mod not in hidden
    assert not any("/" in m for m in hidden)


@pytest.mark.skipif(not hermetic.active(), reason="STRUCTABLATE_TEST_EXTRAS=installed")
def test_hidden_extras_cannot_be_imported_here_or_in_a_child():
    assert sorted(filter(None, os.environ[hermetic.HIDDEN_ENV].split(","))) == \
        sorted(HIDDEN_EXTRAS)
    # the model folder and the hub cache are the session's own, not ~/.cache
    model_dir = Path(os.environ["STRUCTABLATE_MODEL_DIR"])
    assert model_dir.parent.name.startswith("structablate-fresh-")
    assert Path(os.environ["HF_HOME"]).parent == model_dir.parent
    assert "HF_HUB_CACHE" not in os.environ
    assert not hermetic.IMPORTED_EARLY, (
        f"{hermetic.IMPORTED_EARLY} belong to an optional extra but were imported before "
        "tests/conftest.py could hide them (a pytest plugin?)")
    if not HIDDEN_EXTRAS:
        pytest.skip("no optional extra is installed on this machine: nothing to hide")
    mod = sorted(HIDDEN_EXTRAS)[0]
    assert importlib.util.find_spec(mod) is None  # as on a machine without it
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(mod)
    dist = sorted(filter(None, os.environ[hermetic.HIDDEN_DISTS_ENV].split(",")))[0]
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.distribution(dist)
    code = (f"import importlib.util, importlib.metadata\n"
            f"print(importlib.util.find_spec({mod!r}) is None)\n"
            f"try:\n    importlib.metadata.distribution({dist!r})\n"
            "except importlib.metadata.PackageNotFoundError:\n    print(True)\n"
            "else:\n    print(False)")
    env = dict(os.environ, PYTHONPATH=hermetic.pythonpath(REPO / "src"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["True", "True"]


def test_the_mpnet_model_check_names_its_extra_when_its_wheels_are_absent():
    from test_docs_snippets import optional_extra_missing

    from structablate.errors import ConfigError
    from structablate.model_paths import check_model, split_model_parts, unpacked_split_model

    if None not in split_model_parts("all_mpnet_base_v2") or \
            unpacked_split_model("all_mpnet_base_v2") is not None:
        pytest.skip("the mpnet extra is visible (STRUCTABLATE_TEST_EXTRAS=installed)")
    with pytest.raises(ConfigError) as exc:
        check_model("pkg:all_mpnet_base_v2", "embedders.mpnet.model")
    assert optional_extra_missing(str(exc.value)) == "mpnet"
    assert optional_extra_missing("embedders.x.model: no model folder /nope") is None
