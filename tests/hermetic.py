"""The suite as a fresh machine runs it: optional extras hidden, an empty model folder.

CI runs on a machine where earlier work may have installed packages by hand (the ``mpnet``
wheels, ``ranx``) or unpacked models into ``~/.cache``; a test that silently needs them passes
there and fails on a fresh clone. So, unless ``STRUCTABLATE_TEST_EXTRAS=installed`` is set
(``make test-extras``), the suite hides them:

* every distribution that an optional extra of ``pyproject.toml`` other than ``dev`` brings,
  and that the base dependencies and the ``dev`` extra do not (transitively), is hidden as if
  it were not installed (tests/hide_extras_site.py: ``import`` fails, ``find_spec`` returns
  None, ``importlib.metadata`` finds no such distribution) — in the pytest process and,
  through a ``sitecustomize`` on ``PYTHONPATH``, in every Python child that keeps
  :func:`pythonpath`'s entries (Snakemake runs, isolated tests);
* ``STRUCTABLATE_MODEL_DIR`` and ``HF_HOME`` (so the hub cache) point at empty folders of the
  session.

A test that needs a hidden extra must skip naming it (``pytest.skip(... 'pip install -e
".[mpnet]"')``); ``tests/test_hermetic.py`` checks the hiding itself.
"""

from __future__ import annotations

import atexit
import importlib.metadata as md
import os
import re
import shutil
import sys
import sysconfig
import tempfile
import tomllib
from pathlib import Path

import hide_extras_site

REPO = Path(__file__).resolve().parents[1]
MODE_ENV = "STRUCTABLATE_TEST_EXTRAS"
"""``installed``: use whatever is installed (no hiding). Unset or ``hidden``: hide the extras."""
HIDDEN_ENV = hide_extras_site.MODULES_ENV
"""Comma-separated top-level module names hidden (read by the children's ``sitecustomize``)."""
HIDDEN_DISTS_ENV = hide_extras_site.DISTS_ENV
"""Comma-separated distribution names whose metadata is hidden."""
TESTED_EXTRA = "dev"
"""The extra ``make test`` installs."""

def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _req_name(req: str) -> tuple[str, str | None]:
    """(normalised distribution name, extra marker or None) of one requirement string."""
    head = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?", req)
    assert head, req
    marker = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", req)
    return _norm(head.group(1)), marker.group(1) if marker else None


def _closure(roots: set[str]) -> set[str]:
    """Installed distributions reached from ``roots`` through their requirements (extras of
    dependencies ignored, as pip installs them only when asked)."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            reqs = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        for r in reqs:
            dep, extra = _req_name(r)
            if extra is None:
                todo.append(dep)
    return seen


def extras_only_distributions(pyproject: Path = REPO / "pyproject.toml") -> dict[str, str]:
    """Installed distribution -> the extra that brings it, for every distribution reached only
    through an optional extra other than :data:`TESTED_EXTRA`."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    base = {_req_name(r)[0] for r in project["dependencies"]}
    extras = project.get("optional-dependencies", {})
    kept = _closure(base | {_req_name(r)[0] for r in extras.get(TESTED_EXTRA, [])})
    out: dict[str, str] = {}
    for extra, reqs in extras.items():
        if extra == TESTED_EXTRA:
            continue
        for name in sorted(_closure({_req_name(r)[0] for r in reqs}) - kept):
            try:
                md.distribution(name)
            except md.PackageNotFoundError:
                continue
            out.setdefault(name, extra)
    return out


def top_level_modules(dist: str) -> set[str]:
    """The importable top-level names an installed distribution provides."""
    d = md.distribution(dist)
    top = d.read_text("top_level.txt")
    if top:
        return {t.strip() for t in top.splitlines() if t.strip()}
    names: set[str] = set()
    for f in d.files or ():
        parts = f.parts
        if not parts or parts[0].endswith((".dist-info", ".data")) or parts[0] == "..":
            continue
        first = parts[0]
        if len(parts) == 1:
            if first.endswith(".py"):
                names.add(first[:-3])
            elif first.endswith((".so", ".pyd")):
                names.add(first.split(".")[0])
        elif first != "__pycache__":
            names.add(first)
    return names


def _kept_modules(hidden_dists: set[str]) -> set[str]:
    """Top-level names some installed distribution outside ``hidden_dists`` also provides
    (namespace packages such as ``google``), and the standard library's."""
    kept = set(sys.stdlib_module_names)
    for key in ("stdlib", "platstdlib"):  # also what stdlib_module_names leaves out (test)
        folder = Path(sysconfig.get_paths()[key])
        if folder.is_dir():
            kept |= {p.stem for p in folder.iterdir() if p.suffix in ("", ".py")}
    for d in md.distributions():
        name = _norm(d.metadata["Name"] or "")
        if name and name not in hidden_dists:
            try:
                kept |= top_level_modules(name)
            except md.PackageNotFoundError:
                continue
    return kept


def hidden_modules() -> dict[str, str]:
    """Top-level module -> the extra it belongs to, for every module to hide: the importable
    names of :func:`extras_only_distributions`, less those a kept distribution or the
    standard library also provides (a shared namespace package stays visible)."""
    dists = extras_only_distributions()
    kept = _kept_modules(set(dists))
    return {mod: extra for dist, extra in dists.items() for mod in top_level_modules(dist)
            if "/" not in mod and mod not in kept}


_SITE_DIR: Path | None = None
IMPORTED_EARLY: list[str] = []
"""Modules of a hidden extra that were imported before :func:`install` ran (so they could not
be hidden): tests/test_hermetic.py fails naming them."""


def active() -> bool:
    return os.environ.get(MODE_ENV, "hidden") != "installed"


def pythonpath(*first: str | Path) -> str:
    """A ``PYTHONPATH`` for a child process: ``first``, then the hiding ``sitecustomize``'s
    folder when the suite hides extras (so the child sees what the pytest process sees)."""
    parts = [str(p) for p in first]
    if _SITE_DIR is not None:
        parts.append(str(_SITE_DIR))
    return os.pathsep.join(parts)


def install() -> dict[str, str]:
    """Hide the extras in this process and its children and point the model folder and the
    hub cache at empty folders; returns the hidden modules (empty when not :func:`active`)."""
    global _SITE_DIR
    if not active() or _SITE_DIR is not None:
        return {}
    hidden = hidden_modules()
    for name, mod in list(sys.modules.items()):
        top = name.partition(".")[0]
        if top in hidden and name == top:
            if getattr(mod, "__file__", None) is None:  # a namespace package a .pth made
                hidden.pop(top)
            else:  # e.g. a pytest plugin of the extra: tests/test_hermetic.py fails on it
                IMPORTED_EARLY.append(name)
    dists = extras_only_distributions()
    os.environ[HIDDEN_ENV] = ",".join(sorted(hidden))
    os.environ[HIDDEN_DISTS_ENV] = ",".join(sorted(dists))
    hide_extras_site.install()
    root = Path(tempfile.mkdtemp(prefix="structablate-fresh-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    _SITE_DIR = root / "site"
    _SITE_DIR.mkdir()
    shutil.copyfile(Path(hide_extras_site.__file__), _SITE_DIR / "sitecustomize.py")
    os.environ["PYTHONPATH"] = pythonpath(*filter(None, [os.environ.get("PYTHONPATH")]))
    for var, sub in (("STRUCTABLATE_MODEL_DIR", "models"), ("HF_HOME", "hf")):
        (root / sub).mkdir(parents=True, exist_ok=True)
        os.environ[var] = str(root / sub)
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "SENTENCE_TRANSFORMERS_HOME"):
        os.environ.pop(var, None)  # the hub cache is $HF_HOME/hub, empty
    return hidden
