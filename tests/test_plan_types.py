"""Every parameter named ``plan`` in the package is typed: ``Plan`` for the run's plan
(imported under ``TYPE_CHECKING`` where an import at run time would make a cycle), never
``Any`` or nothing, which hide which layer a function reads from a reader and from the layer
test alike (an embedding's batch plan keeps its own type)."""

from __future__ import annotations

import ast

from conftest import REPO

SRC = REPO / "src" / "structablate"


def plan_parameters() -> dict[str, str]:
    """``file:line name`` -> the annotation of every parameter named ``plan``."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
            for a in args:
                if a.arg == "plan":
                    where = f"{path.relative_to(SRC)}:{a.lineno} {fn.name}"
                    out[where] = ast.unparse(a.annotation) if a.annotation else ""
    return out


def test_every_plan_parameter_is_typed_plan():
    found = plan_parameters()
    assert sum(v == "Plan" for v in found.values()) > 20
    assert {k: v for k, v in found.items() if v in ("Any", "")} == {}
