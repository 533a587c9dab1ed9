"""The study's vocabulary lives in ``structablate.study`` only.

* No module of the package, glue script or rule compares against a condition name or a
  mechanism string (``cond.prefix == "placebo"``, ``c != "A1"``): they ask a predicate of
  ``structablate.study`` or compare its enum members. Glue and rules do not name a condition
  at all. The scanner is checked on the comparisons it must catch and the ones it must leave.
* The conditions table agrees with the paper's Table 4 (and with PROTOCOL.md's copy of it when
  the shared folder is there); the dose ladder follows from the breadcrumb depths; the
  settings' enumerations and defaults come from the study.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from conftest import data_dir

from structablate import study
from structablate.study import Boundaries, Prefix, Retrieval, Structure

REPO = Path(__file__).resolve().parents[1]
STUDY = REPO / "src" / "structablate" / "study.py"

NAMES = frozenset(study.CONDITION_NAMES)
"""The reserved words: a condition's name is compared nowhere but in the study."""
MECHANISMS = frozenset(m.value for e in (Boundaries, Structure, Prefix, Retrieval) for m in e)
"""A mechanism's string value is no reserved word: most are ordinary words with other
meanings (``none`` is also the no-reranker and an LLM backend, ``structural`` a question
type, ``flat`` or a future prefix ``title`` anything at all). A comparison against one counts
only where it also names a mechanism field (:data:`FIELDS`)."""
FIELDS = frozenset({"boundaries", "structure", "prefix", "retrieval", "size_match",
                    "size_match_structure", "source"})
"""The names of the fields that hold a mechanism's value: a condition's, the settings', and
the structure-quality table's ``source`` (a :class:`~structablate.study.Structure`)."""


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _mentions_field(node: ast.AST) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr in FIELDS:
            return True
        if isinstance(n, ast.Name) and n.id in FIELDS:
            return True
        if isinstance(n, ast.Constant) and n.value in FIELDS:  # row["prefix"], pl.col("prefix")
            return True
    return False


def _flagged(values: list[str], node: ast.AST, mechanisms: frozenset[str]) -> list[str]:
    """The condition names among ``values``, and their mechanism values where ``node`` names
    a mechanism field."""
    field = None
    out = []
    for v in values:
        if v in NAMES:
            out.append(v)
        elif v in mechanisms:
            field = _mentions_field(node) if field is None else field
            if field:
                out.append(v)
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the bare-string statements (docstrings and string comments)."""
    return {id(n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, str)}


def python_findings(source: str, where: str, *, any_name: bool = False,
                    mechanisms: frozenset[str] = MECHANISMS) -> list[str]:
    """``where:line: code`` for every comparison (``==``, ``!=``, ``in``, ``is``, a
    ``match`` case) against a condition name or mechanism string; with ``any_name`` also
    every other string constant that is a condition name (glue names no condition).
    ``mechanisms``: the mechanism values (the study's; a test adds one to see what a new
    value would flag)."""
    tree = ast.parse(source)
    out = []
    seen: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            hits = _flagged(_strings(node), node, mechanisms)
        elif isinstance(node, ast.Match):  # the subject names the field, a case the value
            hits = _flagged([v for case in node.cases for v in _strings(case.pattern)],
                            node.subject, mechanisms)
        else:
            continue
        seen.update(id(n) for n in ast.walk(node.subject if isinstance(node, ast.Match)
                                            else node))
        if isinstance(node, ast.Match):
            seen.update(id(n) for case in node.cases for n in ast.walk(case.pattern))
        if hits:
            out.append(f"{where}:{node.lineno}: {ast.unparse(node)[:100]}")
    if any_name:
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and node.value in NAMES and id(node) not in seen
                    and id(node) not in docs):
                out.append(f"{where}:{node.lineno}: the condition name {node.value!r}")
    return out


_QUOTED = r"[\"']({})[\"']"
_OPS = r"(?:==|!=|\bin\b|\bnot in\b|\bis\b)"


def rule_findings(source: str, where: str, *,
                  mechanisms: frozenset[str] = MECHANISMS) -> list[str]:
    """``where:line: text`` for every quoted condition name in a rule file (rules ask the
    plan), and every quoted mechanism value next to a comparison operator on a line that
    names a mechanism field."""
    names = _QUOTED.format("|".join(map(re.escape, sorted(NAMES, key=len, reverse=True))))
    mech = _QUOTED.format("|".join(map(re.escape, sorted(mechanisms))))
    compared = re.compile(rf"{_OPS}\s*\(?\s*{mech}|{mech}\s*\)?\s*{_OPS}")
    field = re.compile(r"\b({})\b".format("|".join(sorted(FIELDS))))
    out = []
    for i, line in enumerate(source.splitlines(), 1):
        code = line.split("#", 1)[0]
        if re.search(names, code) or (compared.search(code) and field.search(code)):
            out.append(f"{where}:{i}: {line.strip()}")
    return out


def scan(root: Path) -> list[str]:
    """Every finding under ``root``'s src/structablate (but study.py), workflow_scripts/
    and rules/."""
    out = []
    for f in sorted((root / "src" / "structablate").rglob("*.py")):
        if f.name == "study.py" and f.parent.name == "structablate":
            continue
        out += python_findings(f.read_text(encoding="utf-8"), str(f.relative_to(root)))
    for f in sorted((root / "workflow_scripts").glob("*.py")):
        out += python_findings(f.read_text(encoding="utf-8"), str(f.relative_to(root)),
                               any_name=True)
    for f in sorted([*(root / "rules").glob("*.smk"), root / "Snakefile"]):
        out += rule_findings(f.read_text(encoding="utf-8"), str(f.relative_to(root)))
    return out


def test_no_condition_name_or_mechanism_string_is_compared_outside_the_study():
    findings = scan(REPO)
    assert not findings, ("compare through structablate.study (a predicate or an enum "
                          "member), not a condition name or mechanism string:\n"
                          + "\n".join(findings))


@pytest.mark.parametrize("code", [
    'if cond.prefix == "placebo": pass',
    'x = cond.boundaries != "fixed"',
    'x = [c for c in cs if c != "A1"]',
    'x = "placebo" in (a.prefix, b.prefix)',
    'x = a.prefix == b.prefix == "breadcrumb"',
    'x = c.prefix in ("breadcrumb", "placebo")',
    'x = "two_stage" == c.retrieval',
    'x = pl.col("boundaries") == "structural"',
    'x = cond.prefix == "none"',
    'x = s.size_match_structure == "induced"',
    'x = "A1" in plan.conditions',
    'x = quality.filter(pl.col("source") == "gold")',
    'match c.prefix:\n    case "context":\n        pass',
])
def test_the_scan_catches_the_comparisons_it_must(code):
    assert python_findings(code, "x.py")


@pytest.mark.parametrize("code", [
    'x = reranker == "none"',
    'x = llm.backend == "none"',
    'x = qtype == "structural"',
    'x = study.uses_placebo(c)',
    'x = c.structure is Structure.GOLD',
    'x = pl.col("source") == Structure.GOLD.value',
    'def f():\n    """Compares A1 with A0."""',
])
def test_the_scan_leaves_what_is_not_the_study_vocabulary(code):
    assert not python_findings(code, "x.py", any_name=True)


@pytest.mark.parametrize("code", [
    'x = layout == "flat"',
    'x = kind in ("fixed", "gold")',
    'x = node.kind == "title"',
])
def test_a_mechanism_value_is_no_reserved_word(code):
    """A mechanism's value compared with something that is no mechanism field is left alone,
    a new value too (a prefix ``title`` would not flag a heading's kind)."""
    title = MECHANISMS | {"title"}
    assert not python_findings(code, "x.py", mechanisms=title)
    assert not rule_findings(f"    {code}", "x.smk", mechanisms=title)
    assert python_findings('x = cond.prefix == "title"', "x.py", mechanisms=title)
    assert rule_findings('    if PLAN.condition(c).prefix == "title"', "x.smk", mechanisms=title)


def test_glue_and_rules_name_no_condition():
    assert python_findings('CHUNKSET = "G2"', "glue.py", any_name=True)
    assert python_findings('d = {"chunkset": "A1"}', "glue.py", any_name=True)
    assert not python_findings('CHUNKSET = "G2"', "module.py")
    assert rule_findings('        chunks=P.chunks(W["corpus"], "G2"),', "corpus.smk")
    assert rule_findings('    x=[...] if "A1" in PLAN.conditions else [],', "report.smk")
    assert rule_findings('    if PLAN.condition(c).prefix == "placebo"', "chunks.smk")
    assert not rule_findings('    reranker=_alternatives([r for r in R if r != "none"]),',
                             "retrieval.smk")
    assert not rule_findings('# A1 contexts: see docs', "chunks.smk")


# ---------------------------------------------------------------------- Table 4

TABLE_4 = {
    # name: (boundaries, structure, prefix, depth, retrieval), the paper's Table 4
    "A0": ("fixed", None, "none", 0, "flat"),
    "A1": ("fixed", None, "context", 0, "flat"),
    "A2": ("structural", "induced", "none", 0, "flat"),
    "A3-d1": ("structural", "induced", "breadcrumb", 1, "flat"),
    "A3-d2": ("structural", "induced", "breadcrumb", 2, "flat"),
    "A3": ("structural", "induced", "breadcrumb", 3, "flat"),
    "P": ("structural", "induced", "placebo", 3, "flat"),
    "A4": ("structural", "induced", "breadcrumb", 3, "two_stage"),
    "G2": ("structural", "gold", "none", 0, "flat"),
    "G3": ("structural", "gold", "breadcrumb", 3, "flat"),
    "G4": ("structural", "gold", "breadcrumb", 3, "two_stage"),
}


def _fields(name: str) -> tuple:
    c = study.condition(name)
    return (c.boundaries.value, c.structure and c.structure.value, c.prefix.value, c.depth,
            c.retrieval.value)


def test_the_paper_conditions_are_table_4_in_its_order():
    assert study.PAPER_CONDITIONS == tuple(TABLE_4)
    assert {n: _fields(n) for n in study.PAPER_CONDITIONS} == TABLE_4
    assert study.BEYOND_PAPER == ("GP", "A0g")
    assert study.CONDITION_NAMES == study.PAPER_CONDITIONS + study.BEYOND_PAPER
    # GP is G3 under the placebo; A0g is A0 sized to gold
    assert _fields("GP") == ("structural", "gold", "placebo", 3, "flat")
    assert _fields("A0g") == _fields("A0") and study.condition("A0g").size_match is Structure.GOLD


def _protocol_row(cells: list[str]) -> tuple:
    name, bounds, prefix, retrieval, structure = cells
    depth = re.search(r"depth (\d)", prefix)
    kind = ("none" if prefix == "none" else "context" if "context" in prefix
            else "placebo" if "placebo" in prefix else "breadcrumb")
    return name, ("fixed" if bounds.startswith("fixed") else "structural",
                  None if structure == "—" else structure, kind,
                  int(depth.group(1)) if depth else 0,
                  "two_stage" if retrieval == "two-stage" else retrieval)


def test_the_conditions_agree_with_the_protocol_table():
    protocol = data_dir().parent / "PROTOCOL.md"
    if not protocol.exists():
        pytest.skip(f"PROTOCOL.md not available next to {data_dir()}")
    rows = {}
    for line in protocol.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] in NAMES:
            name, fields = _protocol_row(cells)
            rows[name] = fields
    assert tuple(rows) == study.PAPER_CONDITIONS
    assert rows == {n: _fields(n) for n in study.PAPER_CONDITIONS}


# ---------------------------------------------------------------------- predicates


def test_predicates():
    fixed = {n for n in NAMES if study.is_fixed_window(n)}
    assert fixed == {"A0", "A1", "A0g"}
    assert {n for n in NAMES if study.is_structural(n)} == NAMES - fixed
    assert {n for n in NAMES if study.uses_placebo(n)} == {"P", "GP"}
    assert {n for n in NAMES if study.uses_breadcrumb(n)} == {
        "A3-d1", "A3-d2", "A3", "P", "A4", "G3", "G4", "GP"}
    assert {n for n in NAMES if study.uses_real_breadcrumb(n)} == {
        "A3-d1", "A3-d2", "A3", "A4", "G3", "G4"}
    assert {n for n in NAMES if study.needs_llm_contexts(n)} == {"A1"}
    assert {n: study.llm_stage(n) for n in NAMES if study.llm_stage(n)} == {"A1": "contexts"}
    assert {n for n in NAMES if study.is_two_stage(n)} == {"A4", "G4"}
    assert {n for n in NAMES if study.on_gold(n)} == {"G2", "G3", "G4", "GP"}
    assert {n for n in NAMES if study.on_induced(n)} == {"A2", "A3-d1", "A3-d2", "A3", "P", "A4"}
    assert {n: study.derived_from(n) for n in NAMES if study.derived_from(n)} == {
        "A4": "A3", "G4": "G3", "A1": "A0"}
    assert {n for n in NAMES if not study.is_cut(n)} == {"A1"}
    assert study.BM25_CHUNKSET == "G2"
    assert study.chunksets_for(["A4", "A3", "G4", "A1"]) == ["A3", "G3", "A1"]
    assert study.sections_of("A0") is Structure.GOLD
    assert study.sections_of("A2") is Structure.INDUCED
    with pytest.raises(KeyError, match="unknown condition 'A5'"):
        study.condition("A5")


@pytest.mark.parametrize("setting,induced", [
    ("induced", {"A0", "A1", "A2", "A3-d1", "A3-d2", "A3", "P", "A4"}),
    ("gold", {"A2", "A3-d1", "A3-d2", "A3", "P", "A4"}),
])
def test_what_reads_induced_structure_follows_size_matching(setting, induced):
    """A0 and A1 follow size_match_structure; A0g is sized to gold whatever it says."""
    assert {n for n in NAMES if study.reads_induced_structure(n, setting)} == induced
    assert study.size_reference("A0g", setting) is Structure.GOLD
    assert study.size_reference("A0", setting) is Structure(setting)
    assert study.size_reference("G3", setting) is None


def test_the_dose_ladder_follows_the_breadcrumb_depths():
    """The paper's ladder A2 = 0, A3-d1 = 1, A3-d2 = 2, A3 = 3 (§6.6), from the table."""
    assert dict(study.DOSE_LADDER) == {"A2": 0, "A3-d1": 1, "A3-d2": 2, "A3": 3}
    assert list(study.DOSE_LADDER) == ["A2", "A3-d1", "A3-d2", "A3"]
    assert study.breadcrumb_rungs() == ["A3-d1", "A3-d2", "A3"]
    # on gold structure the table holds two rungs: G2 and G3 (GP is a placebo, G4 two-stage)
    assert dict(study.dose_ladder("gold")) == {"G2": 0, "G3": 3}


def test_the_paper_contrasts_and_questions():
    assert dict(study.PAPER_CONTRASTS) == {"C1": ("A3", "A1"), "C2": ("A3", "P"),
                                           "C3": ("G3", "A3"), "C4": ("A4", "A3")}
    assert study.paper_contrast_name(("A3", "P")) == "C2"
    assert study.paper_contrast_name(("P", "A3")) is None
    for pairs in study.QUESTION_PAIRS.values():
        assert all(a in NAMES and b in NAMES for a, b in pairs)
    # every paper contrast but C3 (gold against induced) answers one mechanism question
    answered = {p for pairs in study.QUESTION_PAIRS.values() for p in pairs}
    assert {n for n, p in study.PAPER_CONTRASTS.items() if p in answered} == {"C1", "C2", "C4"}


def test_the_settings_derive_their_enumerations_from_the_study():
    from structablate import settings as st

    assert st.CONDITION_NAMES == study.CONDITION_NAMES
    schema = st.schema()
    cond_enum = schema["properties"]["conditions"]["items"]["enum"]
    assert tuple(cond_enum) == study.CONDITION_NAMES
    assert schema["properties"]["size_match_structure"]["enum"] == ["gold", "induced"]
    assert st.StatisticsSettings().contrasts == dict(study.PAPER_CONTRASTS)
    assert st.StatisticsSettings().primary.metric == study.PRIMARY_METRIC
    assert st.Settings.size_match_structure == study.PAPER_SIZE_MATCH.value


def test_the_study_imports_nothing_of_the_package():
    tree = ast.parse(STUDY.read_text(encoding="utf-8"))
    mods = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in mods if m.startswith("structablate") or m.startswith(".")}
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
