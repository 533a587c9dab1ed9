"""Code fingerprints: which package code computes a rule's outputs, as one short hash.

Snakemake reruns a ``script:`` rule when the script file is newer than its outputs, but it
knows nothing of the package the script calls: an edit to ``chunking/fixed.py`` would leave
every chunk table stale. The plan therefore passes each job a fingerprint of exactly the code
that computes its outputs as a param, so ``--rerun-triggers params`` reruns it when (and only
when) that code changes; the profiles switch Snakemake's own mtime-based code trigger off.

* The modules a glue script needs are found by reading imports statically (``import`` and
  ``from … import`` anywhere in a file, function-local imports included), transitively within
  the ``structablate`` package.
* A module's fingerprint is the hash of its syntax tree with docstrings (any statement that
  is a bare string) and the ``doc=`` texts of settings fields removed, so comments, docs and
  formatting never rerun work, while any change to what runs does.
* Some modules serve only some conditions (fixed windows, the placebo, two-stage routing):
  :data:`CONDITION_MODULES` says which. A job counts such a module only when a condition it
  serves uses it: a job of one condition (its ``condition`` or ``chunkset`` wildcard) serves
  that condition, a corpus-level job (a ``corpus_level`` entry of :mod:`structablate.plan.rules`,
  the question embedding among them) serves none, and any other job without a condition serves the
  grid's. So an edit to the fixed-window code reruns only the fixed-window branch, and never the
  question vectors every run reads.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

from structablate import mechanisms
from structablate.study import Condition

PACKAGE = "structablate"
SRC = Path(__file__).resolve().parents[2]
"""The folder holding the ``structablate`` package (``src/``)."""

CONDITION_MODULES: dict[str, Callable[[Condition], bool]] = mechanisms.condition_modules()
"""Modules used only by conditions for which the predicate holds: the ``own_modules`` of
:data:`structablate.mechanisms.MECHANISMS` (fixed windows, the breadcrumb and placebo
prefixes, two-stage routing)."""

NOT_OUTPUT_CODE = frozenset({
    "structablate.mechanisms",
    "structablate.plan", "structablate.plan.checks", "structablate.plan.code",
    "structablate.plan.groups", "structablate.plan.jobs", "structablate.plan.needs",
    "structablate.plan.resources", "structablate.plan.rules", "structablate.results_paths"})
"""Modules that decide when jobs rerun, where outputs go and what is refused, but never what a
job computes: the plan's package, and the results folder's paths it hands on
(:mod:`structablate.results_paths`, which the report also reads), and the mechanism table
(:mod:`structablate.mechanisms`: which keys a job is given and where a mechanism runs; the
job code reads it only to name the rule of a member it refuses, or a stage in a message,
and a label the report prints reaches the report's jobs through their params). A glue script
reaches the plan only through :func:`structablate.workflow.setup`, whose settings are the
job's params themselves (less the ``runtime`` keys, which change no output), so a change the
plan makes to what a job is given reruns it through its params, and a plan edit that changes
nothing a job receives reruns nothing. The modules the plan imports (settings, study, …) still count
where a glue script reaches them."""


def module_file(module: str) -> Path | None:
    """The source file of a ``structablate`` module (package ``__init__`` or module file)."""
    rel = Path(*module.split("."))
    for cand in (SRC / rel / "__init__.py", SRC / rel.with_suffix(".py")):
        if cand.is_file():
            return cand
    return None


def _imports(tree: ast.AST, module: str | None, is_package: bool) -> set[str]:
    """Absolute ``structablate`` module names imported anywhere in ``tree``."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if module is None:
                    continue
                parts = module.split(".")
                base = parts if is_package else parts[:-1]
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            out.add(prefix)
            out.update(f"{prefix}.{a.name}" for a in node.names)
    return {m for m in out if m == PACKAGE or m.startswith(PACKAGE + ".")}


@cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _direct(path: Path, module: str | None) -> set[str]:
    found = _imports(_parsed(path), module, path.name == "__init__.py")
    return {m for m in found if module_file(m) is not None}


@cache
def closure(path: Path, module: str | None = None) -> frozenset[str]:
    """Every ``structablate`` module the file at ``path`` needs, transitively. Importing a
    submodule runs its parent packages' ``__init__``, so those count too. The imports of a
    module of :data:`NOT_OUTPUT_CODE` are not followed: what only the plan imports (a user
    corpus's file listing, the corpus readers it once reached) computes no job's outputs, so
    it counts only where a job's own code reaches it."""
    seen: set[str] = set()
    todo = list(_direct(path, module))
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        parts = m.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        f = module_file(m)
        if f is not None and m not in NOT_OUTPUT_CODE:
            todo.extend(_direct(f, m) - seen)
    return frozenset(seen)


class _DropStrings(ast.NodeTransformer):
    """Removes statements that are a bare string (docstrings, and strings used as comments)
    and empties the ``doc=`` text of settings fields (``setting(..., doc="…")``): neither
    computes anything."""

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if isinstance(node.func, ast.Name) and node.func.id == "setting":
            for kw in node.keywords:
                if kw.arg == "doc" and isinstance(kw.value, ast.Constant | ast.JoinedStr):
                    kw.value = ast.Constant("")
        return self.generic_visit(node)


def _strip_docstrings(tree: ast.Module) -> ast.Module:
    tree = _DropStrings().visit(tree)
    for node in ast.walk(tree):  # a body left empty is the same code as ``pass``
        if not isinstance(node, ast.Module) and getattr(node, "body", None) == []:
            node.body = [ast.Pass()]
    return tree


@cache
def source_hash(path: Path) -> str:
    """sha256 of a file's syntax tree without docstrings or other bare-string statements
    (comments never reach the tree)."""
    tree = _strip_docstrings(ast.parse(path.read_text(encoding="utf-8")))
    return hashlib.sha256(ast.dump(tree, annotate_fields=True).encode()).hexdigest()


def _serves(conditions: Condition | Iterable[Condition] | None) -> tuple[Condition, ...] | None:
    if conditions is None:
        return None
    if isinstance(conditions, Condition):
        return (conditions,)
    return tuple(conditions)


@cache
def _relevant(script: Path, serves: tuple[Condition, ...] | None) -> list[str]:
    mods = closure(script) - NOT_OUTPUT_CODE
    if serves is not None:
        mods = {m for m in mods if m not in CONDITION_MODULES
                or any(CONDITION_MODULES[m](c) for c in serves)}
    return sorted(mods)


def relevant_modules(script: Path,
                     conditions: Condition | Iterable[Condition] | None = None) -> list[str]:
    """The package modules whose code computes the outputs of a job running ``script``.

    ``conditions``: the condition(s) the job serves; a module of
    :data:`CONDITION_MODULES` counts only when one of them uses it (an empty collection: none
    does). ``None`` keeps every module the script imports.
    """
    return _relevant(script, _serves(conditions))


def fingerprint(script: str | Path,
                conditions: Condition | Iterable[Condition] | None = None,
                extra: Iterable[str] = ()) -> str:
    """A 16-hex-digit fingerprint of ``script`` and the package code it runs for
    ``conditions`` (see :func:`relevant_modules` and the module docstring); ``extra`` names
    further modules that count."""
    script = Path(script).resolve()
    h = hashlib.sha256(source_hash(script).encode())
    for m in sorted(set(relevant_modules(script, conditions)) | set(extra)):
        f = module_file(m)
        if f is not None:
            h.update(f"{m}:{source_hash(f)}".encode())
    return h.hexdigest()[:16]
