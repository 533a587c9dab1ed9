"""The layer table of docs/architecture.md, as a test: every module of ``src/structablate``
belongs to the row whose ``modules`` cell holds it (the longest path wins), and imports only
its own layer and the layers its row names, at the top of a module or inside a function (an
import moved into a function hides an arrow from a reader, not from this test).

``LAYERS_SRC`` names the ``src`` folder read (default: this checkout's); the table is always
this checkout's, so ``LAYERS_SRC=OTHER/src pytest tests/test_layers.py`` holds another tree to
it.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO

DOC = REPO / "docs" / "architecture.md"
SECTION = "## Layers and what each may import"

KNOWN_SLIPS: dict[tuple[str, str], str] = {}
"""Imports that cross the table today, each named in docs/architecture.md under the table;
an entry that no longer happens fails, so the list only shrinks."""


@dataclass(frozen=True)
class Layer:
    name: str
    modules: tuple[str, ...]
    """Paths relative to ``src/structablate/``: a file, or a folder ending in ``/``."""
    may_import: frozenset[str]


@dataclass(frozen=True)
class Arrow:
    source: str
    target: str
    line: int
    in_function: bool

    def __str__(self) -> str:
        where = " inside a function" if self.in_function else ""
        return f"{self.source} -> {self.target} (line {self.line}{where})"


def read_table(text: str) -> list[Layer]:
    """The layer rows, bottom up: ``| layer | modules | what they hold | may import |``;
    ``may import`` names layers, ``nothing``, or ``every layer below``."""
    rows = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    layers: list[Layer] = []
    for line in rows.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("layer", "---"):
            continue
        name, modules, _, may = cells
        if may == "every layer below":
            allowed = frozenset(layer.name for layer in layers)
        elif may == "nothing":
            allowed = frozenset()
        else:
            allowed = frozenset(m.strip() for m in may.split(","))
        layers.append(Layer(name, tuple(re.findall(r"`([^`]+)`", modules)), allowed))
    return layers


def module_name(src: Path, path: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_file(src: Path, module: str) -> Path | None:
    rel = Path(*module.split("."))
    for cand in (src / rel / "__init__.py", src / rel.with_suffix(".py")):
        if cand.is_file():
            return cand
    return None


def arrows(src: Path, path: Path) -> list[Arrow]:
    """The ``structablate`` modules ``path`` imports, each resolved to the module file it
    runs (``from structablate import study`` is ``structablate.study``; a name that is no
    module is its package's), function-local imports marked."""
    me = module_name(src, path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_function = {id(n) for fn in ast.walk(tree)
                   if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
                   for n in ast.walk(fn)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names = [f"{prefix}.{a.name}" if module_file(src, f"{prefix}.{a.name}") else prefix
                     for a in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] != "structablate":
                continue
            while module_file(src, name) is None and "." in name:
                name = name.rsplit(".", 1)[0]
            out.append(Arrow(me, name, node.lineno, id(node) in in_function))
    return out


def dotted(entry: str) -> str:
    """The module a table entry names: ``study.py`` is ``structablate.study``, ``settings/``
    the package ``structablate.settings``, ``__init__.py`` the package itself."""
    parts = [p for p in entry.removesuffix(".py").split("/") if p and p != "__init__"]
    return ".".join(["structablate", *parts])


def layer_of(layers: list[Layer], module: str) -> Layer | None:
    """The row holding ``module`` (or the package above it; the longest entry wins), so a
    row's ``embedding/`` holds ``structablate.embedding`` whether it is a package or a file."""
    best: tuple[int, Layer] | None = None
    for layer in layers:
        for entry in layer.modules:
            name = dotted(entry)
            holds = module == name or (name != "structablate" and module.startswith(name + "."))
            if holds and (best is None or len(name) > best[0]):
                best = (len(name), layer)
    return best[1] if best else None


@pytest.fixture(scope="module")
def layers() -> list[Layer]:
    return read_table(DOC.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def src() -> Path:
    return Path(os.environ.get("LAYERS_SRC") or REPO / "src").resolve()


def crossings(src: Path, layers: list[Layer]) -> list[tuple[Arrow, str, str]]:
    """Every import of a layer its importer's row does not name: ``(arrow, from, to)``."""
    found = []
    for path in sorted((src / "structablate").rglob("*.py")):
        mine = layer_of(layers, module_name(src, path))
        for arrow in arrows(src, path):
            theirs = layer_of(layers, arrow.target)
            if mine and theirs and theirs.name != mine.name and (
                    theirs.name not in mine.may_import):
                found.append((arrow, mine.name, theirs.name))
    return found


def test_the_table_is_read_bottom_up_and_names_only_layers_below(layers):
    names = [layer.name for layer in layers]
    assert names[:3] == ["study", "paper", "settings"] and names[-1] == "workflow"
    assert len(set(names)) == len(names)
    for i, layer in enumerate(layers):
        above = layer.may_import - set(names[:i])
        assert not above, f"row {layer.name} names {sorted(above)}, not below it"


def test_every_module_has_a_row_and_every_row_a_module(layers, src):
    pkg = src / "structablate"
    modules = [module_name(src, p) for p in sorted(pkg.rglob("*.py"))]
    assert [m for m in modules if layer_of(layers, m) is None] == []
    for layer in layers:
        for m in layer.modules:
            assert (pkg / m).exists(), f"row {layer.name}: {m} is no module of {pkg}"


def test_no_module_imports_a_layer_its_row_does_not_name(layers, src):
    found = crossings(src, layers)
    slips = [f"{a} crosses {mine} -> {theirs}" for a, mine, theirs in found
             if (a.source, a.target) not in KNOWN_SLIPS]
    assert slips == []
    seen = {(a.source, a.target) for a, _, _ in found}
    assert [k for k in KNOWN_SLIPS if k not in seen] == [], "a known slip is gone: strike it"


def test_the_reader_sees_function_local_and_package_imports(tmp_path):
    pkg = tmp_path / "structablate"
    (pkg / "plan").mkdir(parents=True)
    for f in ("__init__.py", "study.py", "plan/__init__.py", "plan/jobs.py"):
        (pkg / f).write_text("")
    (pkg / "plan" / "jobs.py").write_text(
        "from structablate import study\nfrom . import jobs\n"
        "def f():\n    from structablate.embedding import planned_dtype\n")
    (pkg / "embedding.py").write_text("")
    got = [(a.target, a.in_function) for a in arrows(tmp_path, pkg / "plan" / "jobs.py")]
    assert got == [("structablate.study", False), ("structablate.plan.jobs", False),
                   ("structablate.embedding", True)]
