"""The README's "Run it on your corpus" snippet, run exactly as written in a fresh copy of the
repository, on a documentation set no other test uses: 14 pages and two snippet stubs of the
pymdown-extensions 13.1.2 docs with 14 hand-written questions (resources/byo/README.md).

The config block is written to the file the README's command names, the corpus is placed where
that config expects the user's documents and questions, and the command block runs in bash with
the environment active. ``conftest.readme_run`` runs it once per session for every test that
reads its results (README, report pages, documentation snippets).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from conftest import REPO
from doc_blocks import section_blocks
from hermetic import pythonpath
from workflow_util import copy_workflow

SECTION = "Run it on your corpus"
CORPUS = REPO / "resources" / "byo" / "pymdown-extensions-docs"
QUESTIONS = REPO / "resources" / "byo" / "pymdown-extensions-queries.jsonl"


def readme_snippet() -> dict:
    """The section's blocks: ``config`` (the YAML), ``commands`` (the bash), ``example``
    (the question line shown), each as written."""
    found = section_blocks("README.md", SECTION)
    by_lang: dict[str, list[str]] = {}
    for b in found:
        by_lang.setdefault(b.lang, []).append(b.text)
    assert len(by_lang.get("yaml", [])) == 1 and len(by_lang.get("bash", [])) == 1, \
        f"README {SECTION!r}: expected one yaml and one bash block, got {sorted(by_lang)}"
    return {"config": by_lang["yaml"][0], "commands": by_lang["bash"][0],
            "example": by_lang.get("json", [None])[0]}


def shell_env(root: Path) -> dict[str, str]:
    """The environment the README's `. .venv/bin/activate` gives: this interpreter's scripts
    first on PATH, and the copy's package importable (as `make run`'s editable install makes
    the clone's)."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = sys.prefix
    env["PYTHONPATH"] = pythonpath(root / "src")
    env["HF_HUB_OFFLINE"] = "1"
    env["TOKENIZERS_PARALLELISM"] = "false"
    return env


def place_corpus(root: Path, config: dict) -> str:
    """Put the test corpus where the README's config expects the user's files; returns the
    corpus name."""
    (name, corpus), = config["corpora"].items()
    docs = corpus["path"]
    assert isinstance(docs, str) and not any(c in docs for c in "*?["), \
        f"the README's corpus path {docs!r} should be a folder the user fills"
    shutil.copytree(CORPUS, root / docs)
    shutil.copy2(QUESTIONS, root / corpus["queries"])
    return name


@dataclass
class UserRun:
    """The README's snippet run in a fresh copy of the repository."""

    root: Path
    corpus: str
    proc: subprocess.CompletedProcess
    seconds: float

    @property
    def output(self) -> str:
        return self.proc.stdout + self.proc.stderr


def run_readme_snippet(root: Path) -> UserRun:
    """A fresh copy of the repository in ``root`` (the workflow, README.md, docs/ and the
    bundled resources), the test corpus placed where the README's config expects the user's
    files, and the README's command run there in bash."""
    copy_workflow(root)
    for extra in ("README.md", "docs", "resources", "Makefile", "pyproject.toml"):
        src, dst = REPO / extra, root / extra
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dst)
    snippet = readme_snippet()
    command = snippet["commands"]
    m = re.search(r"--configfile\s+(\S+)", command)
    assert m, f"the README's command names no --configfile: {command!r}"
    (root / m.group(1)).write_text(snippet["config"], encoding="utf-8")
    name = place_corpus(root, yaml.safe_load(snippet["config"]))
    t0 = time.monotonic()
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=root,
                          env=shell_env(root), capture_output=True, text=True, timeout=3600)
    seconds = time.monotonic() - t0
    (root / "snippet-run.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    return UserRun(root, name, proc, seconds)
